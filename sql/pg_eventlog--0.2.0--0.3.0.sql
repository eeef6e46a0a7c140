-- pg_eventlog 0.2.0 -> 0.3.0
\echo Use "ALTER EXTENSION pg_eventlog UPDATE TO '0.3.0'" to load this file. \quit

-- Every change to sql/pg_eventlog.sql since 0.2.0 is repeated here, in the
-- order it was made (test/t/012_upgrade.pl compares the result with a
-- fresh install).

-- Issue 13, item 5: eventlog.max_partitions is checked under a lock on
-- topic_catalog, counting what is committed now.
CREATE FUNCTION @extschema@._partitions_in_use(except_topic integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'el_partitions_in_use'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._partitions_in_use(integer) IS
'internal: the partitions of every other topic of this database, as committed now (a fresh snapshot, not the caller''s)';
REVOKE ALL ON FUNCTION @extschema@._partitions_in_use(integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@._add_partitions(topic_id integer, first integer, last integer)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    total bigint;
    max_partitions integer := current_setting('eventlog.max_partitions')::integer;
BEGIN
    -- Serialise the check with every other creation or growth of a topic
    -- in this database (create_topic takes the same lock first; alter_topic
    -- holds only its topic's row lock, which this lock does not conflict
    -- with): two sessions must not each find room and together exceed the
    -- limit.  The count reads what is committed now, not the caller's
    -- snapshot, which in REPEATABLE READ predates the wait for the lock.
    LOCK TABLE @extschema@.topic_catalog IN SHARE ROW EXCLUSIVE MODE;
    total := @extschema@._partitions_in_use(_add_partitions.topic_id);
    IF total + last + 1 > max_partitions THEN
        RAISE EXCEPTION 'too many partitions'
            USING ERRCODE = '53400',
                  DETAIL = format('This database would have %s partitions; eventlog.max_partitions is %s.',
                                  total + last + 1, max_partitions),
                  HINT = 'Raise eventlog.max_partitions and restart the server, or use fewer partitions.';
    END IF;
    FOR p IN first .. last LOOP
        INSERT INTO @extschema@.partition_catalog (topic_id, partition)
        VALUES (_add_partitions.topic_id, p);
        PERFORM @extschema@._create_segment(_add_partitions.topic_id, p, 0, 0);
    END LOOP;
END
$$;
