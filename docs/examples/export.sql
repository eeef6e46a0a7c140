-- Export a topic to JSON-lines files for a warehouse, one batch per run
-- (docs/capture.md, "Feeding a warehouse").
--
--   psql -X -v topic=shop.changes -v group=warehouse -v dir=/srv/export \
--        -f docs/examples/export.sql
--
-- Each run polls the group's next batch from one partition (up to BATCH
-- records, -v batch=N, default 10,000), writes it to DIR/TOPIC/PARTITION-FIRST.jsonl.tmp, renames
-- that to DIR/TOPIC/PARTITION-FIRST-LAST.jsonl, and only then commits the
-- group's position.  A run that dies before its commit leaves the position
-- where it was, so the next run starts at the same FIRST offset of that
-- partition and replaces the file (any DIR/TOPIC/PARTITION-FIRST-*.jsonl,
-- whatever LAST it had): files never overlap, and every record ends up in
-- exactly one.  It prints "exported FILE", "busy" (the partitions that
-- have records are held by another run, or by one that is still ending)
-- or "nothing to export" (the group has no lag); run it until the last.
-- (A directory per topic, because topic names may contain "-".)
\set ON_ERROR_STOP 1
\set QUIET 1
\if :{?batch}
\else
    \set batch 10000
\endif
\pset format unaligned
\pset tuples_only on
\pset footer off
BEGIN;
CREATE TEMP TABLE export_batch ON COMMIT DROP AS
    SELECT * FROM eventlog.poll(:'topic', :'group', :batch);
SELECT count(*) > 0 AS found, min(partition) AS partition,
       min(offset_id) AS first, max(offset_id) AS last
  FROM export_batch \gset
\if :found
    \set tdir :dir '/' :topic
    \set name :partition '-' :first
    \set tmp :tdir '/' :name '.jsonl.tmp'
    \set file :tdir '/' :name '-' :last '.jsonl'
    \setenv EXPORT_DIR :tdir
    \setenv EXPORT_NAME :name
    \setenv EXPORT_TMP :tmp
    \setenv EXPORT_FILE :file
    \! mkdir -p "$EXPORT_DIR"
    SELECT row_to_json(b) FROM export_batch b ORDER BY offset_id \g :tmp
    \! rm -f "$EXPORT_DIR/$EXPORT_NAME"-*.jsonl && mv "$EXPORT_TMP" "$EXPORT_FILE"
    \if :{?crash_before_commit}
        \echo 'simulated crash: exiting before COMMIT'
        \q
    \endif
    COMMIT;
    \echo exported :file
\else
    ROLLBACK;
    -- An empty poll may only mean that the partitions with records are held.
    SELECT coalesce(sum(lag), 0) = 0 AS caught_up FROM eventlog.consumer_groups
     WHERE topic = :'topic' AND group_name = :'group' \gset
    \if :caught_up
        \echo nothing to export
    \else
        \echo busy
    \endif
\endif
