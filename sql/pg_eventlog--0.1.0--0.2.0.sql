-- pg_eventlog 0.1.0 -> 0.2.0
\echo Use "ALTER EXTENSION pg_eventlog UPDATE TO '0.2.0'" to load this file. \quit
