--
-- Stream processors in the background: pause_processor, resume_processor,
-- what eventlog.processors shows of the processor worker, and the check by
-- which run_processor knows the worker runs it.  The worker itself does
-- not run here (eventlog.processors_enabled is off in test/pg_eventlog.conf);
-- test/t/091_processor_worker.pl runs it.
--
\set SHOW_CONTEXT never
SET timezone = 'UTC';
SELECT eventlog.create_topic('bg', 1);
CREATE TABLE bg_rows (k text);
SELECT eventlog.create_processor('bg', 'bg', sink_table => 'bg_rows', select_list => 'key');

-- A new processor is enabled and healthy, without a runtime row.
SELECT name, enabled, failures, last_error, last_error_at FROM eventlog.processors WHERE name = 'bg';
SELECT count(*) FROM eventlog.processor_runtime;

-- Paused and resumed by a member of its owner.
SELECT eventlog.pause_processor('bg');
SELECT name, enabled, failures FROM eventlog.processors WHERE name = 'bg';
SELECT eventlog.pause_processor('bg');
-- A paused processor still runs on demand.
SELECT count(*) FROM eventlog.produce('bg', 'a', '{}');
SELECT eventlog.run_processor('bg');
SELECT * FROM bg_rows;
SELECT eventlog.resume_processor('bg');
SELECT name, enabled, failures FROM eventlog.processors WHERE name = 'bg';

-- Resuming forgets the failures the worker recorded (as it would).
UPDATE eventlog.processor_runtime SET failures = 3, last_error = 'boom', last_error_at = now();
SELECT name, enabled, failures, last_error FROM eventlog.processors WHERE name = 'bg';
SELECT eventlog.resume_processor('bg');
SELECT name, enabled, failures, last_error FROM eventlog.processors WHERE name = 'bg';

-- Others may not pause, resume, or write the runtime table.
CREATE ROLE bg_other;
SET ROLE bg_other;
SELECT eventlog.pause_processor('bg');
SELECT eventlog.resume_processor('bg');
UPDATE eventlog.processor_runtime SET enabled = false;
INSERT INTO eventlog.processor_runtime (processor_id, enabled) SELECT processor_id, false FROM eventlog.processor_catalog;
SELECT eventlog._set_processor_enabled('bg', false);
SELECT eventlog._pause_processor('bg');
-- Outside run_processor's gate, its body's check fails for everyone: the
-- owner's SQL runs only as the owner, in a security-restricted operation.
SELECT eventlog._processor_owner_step(processor_id) FROM eventlog.processor_catalog WHERE name = 'bg';
RESET ROLE;
SELECT eventlog._processor_owner_step(processor_id) FROM eventlog.processor_catalog WHERE name = 'bg';
SELECT eventlog._processor_owner_step(NULL);
SELECT eventlog._processors_changed();
SELECT name, enabled FROM eventlog.processors WHERE name = 'bg';

-- Bad input.
SELECT eventlog.pause_processor(NULL);
SELECT eventlog.resume_processor(NULL);
SELECT eventlog.pause_processor('nope');
SELECT eventlog.resume_processor('nope');

-- The setting exists (off in these tests) and cannot be changed in a session.
SHOW eventlog.processors_enabled;
SET eventlog.processors_enabled = on;
SHOW eventlog.processor_max_records;
SHOW eventlog.processor_idle_interval;
SHOW eventlog.processor_step_timeout;

-- Dropping a processor drops its runtime row.
SELECT eventlog.pause_processor('bg');
SELECT eventlog.drop_processor('bg');
SELECT count(*) FROM eventlog.processor_runtime;
DROP TABLE bg_rows;
SELECT eventlog.drop_topic('bg');
DROP ROLE bg_other;
