-- pg_eventlog 0.2.0 -> 0.3.0
\echo Use "ALTER EXTENSION pg_eventlog UPDATE TO '0.3.0'" to load this file. \quit

-- Every change to sql/pg_eventlog.sql since 0.2.0 is repeated here, in the
-- order it was made (test/t/012_upgrade.pl compares the result with a
-- fresh install).
