--
-- Aggregates with a combine function whose argument or state type has a
-- default length when named without one: "bit" is bit(1) and "character"
-- is character(1).  A processor casts each argument to, and keeps each
-- state in, the aggregate's type: that must not truncate the values
-- (bit_or of bit(8); an aggregate of two bpchar arguments).
--
SET timezone = 'UTC';
SELECT eventlog.create_topic('tm', 1);
SELECT eventlog.produce('tm', 'ab', '{"b": "00001111"}', event_time => '2026-01-01 10:00:00+00') IS NOT NULL AS produced;
SELECT eventlog.produce('tm', 'ab', '{"b": "01110000"}', event_time => '2026-01-01 10:00:01+00') IS NOT NULL AS produced;

CREATE TABLE tm_bits (window_start timestamptz, window_end timestamptz, k text, v varbit);
SELECT eventlog.create_window_processor('tm_bits', 'tm', 'tm_bits', size => '1 hour', emit => 'changes',
                                        aggregates => ARRAY[$$bit_or((value->>'b')::bit(8))$$]);
SELECT eventlog.run_processor('tm_bits');
SELECT k, v FROM tm_bits;
SELECT bit_or((value->>'b')::bit(8)) AS expected FROM eventlog.read('tm', 0, 0);

CREATE FUNCTION tm_step(text, bpchar, bpchar) RETURNS text LANGUAGE sql IMMUTABLE
    AS $$SELECT coalesce($1, '') || $2::text || '+' || $3::text || ';'$$;
CREATE FUNCTION tm_comb(text, text) RETURNS text LANGUAGE sql IMMUTABLE
    AS $$SELECT coalesce($1, '') || coalesce($2, '')$$;
CREATE AGGREGATE tm_cat(bpchar, bpchar) (SFUNC = tm_step, STYPE = text, COMBINEFUNC = tm_comb);
CREATE TABLE tm_cat (window_start timestamptz, window_end timestamptz, k text, v text);
SELECT eventlog.create_window_processor('tm_cat', 'tm', 'tm_cat', size => '1 hour', emit => 'changes',
                                        aggregates => ARRAY[$$public.tm_cat((value->>'b')::bpchar, key::bpchar)$$]);
SELECT eventlog.run_processor('tm_cat');
SELECT k, v FROM tm_cat;
SELECT public.tm_cat((value->>'b')::bpchar, key::bpchar) AS expected FROM eventlog.read('tm', 0, 0);

SELECT eventlog.drop_processor(name) FROM eventlog.processors ORDER BY name;
SELECT eventlog.drop_topic('tm');
DROP TABLE tm_bits, tm_cat;
DROP AGGREGATE tm_cat(bpchar, bpchar);
DROP FUNCTION tm_step(text, bpchar, bpchar), tm_comb(text, text);

-- Splitting arguments as PostgreSQL's lexer reads them: a -- comment ends
-- at a carriage return too, and a dollar quote's tag may have letters
-- beyond ASCII.
SELECT eventlog._processor_split_args(E'(value->>''y'')::float8 --note\r, (value->>''x'')::float8') AS cr_comment;
SELECT eventlog._processor_split_args('length(value->>$é$(x,$é$)::float8, 1') AS dollar_tag;
SELECT eventlog._processor_split_args('é$a, b$é') AS identifier_dollar;
-- An interval whose days do not fit in hours: refused, nothing left behind.
SELECT eventlog.create_topic('tm_l', 1);
CREATE TABLE tm_l (window_start timestamptz, window_end timestamptz, k text, n bigint);
SELECT eventlog.create_window_processor('tm_long', 'tm_l', 'tm_l', size => '200000000 days');
SELECT eventlog.create_window_processor('tm_long', 'tm_l', 'tm_l', size => '1 hour', retention => '200000000 days');
SELECT count(*) AS processors FROM eventlog.processors;
SELECT eventlog.drop_topic('tm_l');
DROP TABLE tm_l;
