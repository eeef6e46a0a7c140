-- eventlog._processor_exec (src/processor_step.c): a processor step's
-- statements run through plans the session keeps, keyed by the statement's
-- text, its arguments' types and the role.  What a keyed plan must never
-- change: what each role may see and do, the result's type, and the answer
-- once more statements come than the session keeps plans of (128).

CREATE ROLE exec_a;
CREATE ROLE exec_b;
CREATE TABLE exec_rows (owner name, v int);
INSERT INTO exec_rows VALUES ('exec_a', 1), ('exec_a', 2), ('exec_b', 10), ('exec_b', 20), ('exec_b', 30);
ALTER TABLE exec_rows ENABLE ROW LEVEL SECURITY;
CREATE POLICY exec_own ON exec_rows USING (owner = current_user);
GRANT SELECT ON exec_rows TO exec_a, exec_b;

-- Row security: the same text, each role its own rows.
SET ROLE exec_a;
SELECT eventlog._processor_exec('SELECT sum(v) FROM public.exec_rows WHERE v > $1', NULL::bigint, 0);
SET ROLE exec_b;
SELECT eventlog._processor_exec('SELECT sum(v) FROM public.exec_rows WHERE v > $1', NULL::bigint, 0);
SET ROLE exec_a;
SELECT eventlog._processor_exec('SELECT sum(v) FROM public.exec_rows WHERE v > $1', NULL::bigint, 0);
RESET ROLE;

-- A privilege revoked after a role's plan was kept: checked at execution.
REVOKE SELECT ON exec_rows FROM exec_b;
SET ROLE exec_b;
SELECT eventlog._processor_exec('SELECT sum(v) FROM public.exec_rows WHERE v > $1', NULL::bigint, 0);
RESET ROLE;

-- A function a role may not execute, inlined into a plan another role
-- made: the plan is the other role's, so the call is refused.
CREATE FUNCTION exec_secret() RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT 42';
REVOKE EXECUTE ON FUNCTION exec_secret() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION exec_secret() TO exec_a;
SET ROLE exec_a;
SELECT eventlog._processor_exec('SELECT public.exec_secret() + $1', NULL::int, 0);
SET ROLE exec_b;
SELECT eventlog._processor_exec('SELECT public.exec_secret() + $1', NULL::int, 0);
RESET ROLE;

-- The result's type is checked at each execution, also when a change of
-- the table makes the kept plan's result another type.
CREATE TABLE exec_t (c int);
INSERT INTO exec_t VALUES (7);
SELECT eventlog._processor_exec('SELECT c FROM public.exec_t WHERE c > $1', NULL::int, 0);
SELECT eventlog._processor_exec('SELECT c FROM public.exec_t WHERE c > $1', NULL::text, 0);
ALTER TABLE exec_t ALTER COLUMN c TYPE bigint;
SELECT eventlog._processor_exec('SELECT c FROM public.exec_t WHERE c > $1', NULL::int, 0);
SELECT eventlog._processor_exec('SELECT c FROM public.exec_t WHERE c > $1', NULL::bigint, 0);
-- No row (a DELETE returns none): NULL.  A NULL statement, or the
-- arguments passed as one array: errors.
SELECT eventlog._processor_exec('SELECT c FROM public.exec_t WHERE c > $1', NULL::bigint, 100) IS NULL AS no_row;
SELECT eventlog._processor_exec('DELETE FROM public.exec_t WHERE c > $1', NULL::bigint, 100);
SELECT eventlog._processor_exec(NULL, NULL::bigint, 1);
SELECT eventlog._processor_exec('SELECT $1', NULL::bigint, VARIADIC ARRAY[1]);

-- More statements than the session keeps plans of: those past it run
-- unkept, with the same answers.
SELECT sum(eventlog._processor_exec(format('SELECT %s::bigint + $1', i), NULL::bigint, 1)) = sum(i + 1) AS same_answers,
       count(*) AS statements
  FROM generate_series(1, 300) i;
SELECT sum(eventlog._processor_exec(format('SELECT %s::bigint + $1', i), NULL::bigint, 1)) = sum(i + 1) AS same_again
  FROM generate_series(1, 300) i;

DROP TABLE exec_t;
DROP TABLE exec_rows;
DROP FUNCTION exec_secret();
DROP ROLE exec_a;
DROP ROLE exec_b;
