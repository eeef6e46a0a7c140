/* ------------------------------------------------------------------------
 * Window processors, continued (docs/streams.md): aggregates beyond count,
 * sum, min, max and avg of numbers, sliding windows, and the view of a
 * processor's open windows.
 *
 * Aggregates.  A window row keeps, per aggregate, a state that a step
 * combines with the state of the batch's records: count, sum, min, max and
 * avg of numbers keep a numeric and a count (streams.sql).  Any other
 * aggregate of one argument with a combine function
 * (pg_aggregate.aggcombinefn) and a state of an SQL type keeps its own
 * state (a polymorphic aggregate's state and arguments of the types they
 * resolve to from the arguments', kept in agg_types: see
 * _processor_poly_resolve): agg_funcs holds the aggregate as a
 * regprocedure ("bit_or(integer)"; the "(" tells it apart), and the
 * processor has aggregates of its own, made at creation from the
 * aggregate's functions: processor_<id>_partial_<i> (the transition
 * function, no final function: a batch's state),
 * processor_<id>_combine_<i> (the combine function as transition
 * function: states combined) and, if the aggregate has a final function,
 * processor_<id>_final_<i> (a state finished when a window is written).
 * They hold the functions' OIDs, so that nothing later resolves the
 * functions by name (_processor_create_state checks that creating them
 * did not either).
 *
 * An aggregate whose state is internal (stddev and variance of numeric,
 * sum and avg of bigint as pg_catalog.sum(x::bigint)) keeps its state as
 * bytes: it needs serial and deserial functions (pg_aggregate.aggserialfn,
 * aggdeserialfn) as well, which only C can call, inside an aggregate.  Its
 * partial and combine aggregates end in _agg_state_seal (the serial
 * function's bytes, sealed with an HMAC under the database's key in
 * processor_state_key), and its combine and final aggregates take a sealed
 * state with _agg_state_merge (the seal checked, then the deserial and
 * combine functions); the window table's column is a bytea.  The seal
 * exists because the window table is its owner's to write, and deserial
 * functions trust their bytes (src/agg_state.c).  A final function with
 * extra arguments (FINALFUNC_EXTRA: array_agg on PostgreSQL 16 and later,
 * whose final function finds its result type from them) is refused.
 *
 * Aggregates of several arguments (corr(y, x), regr_slope(y, x), a user's
 * aggregate of two or more arguments) take the same path.  agg_args keeps
 * one text per aggregate, the arguments as the user wrote them ("y, x"),
 * split again at top-level commas (_processor_split_args) wherever they
 * are used: only for an aggregate whose regprocedure has two or more
 * arguments, so that the text of a processor made before (one expression,
 * never split) means what it meant.  Each argument gets a column of its
 * own, x_<i>_<j>, in a step's records, the sliding windows' record buffer
 * and a session's per-record partials (one-argument aggregates keep
 * x_<i>, which buffers made before hold): plain typed columns, which a
 * composite would only wrap and unwrap at every record.
 *
 * Sliding windows (Kafka Streams' SlidingWindows, left windows only): a
 * record at t makes the window [t - size, t] of its key, which holds the
 * records of the key with times in it.  Windows are computed from a buffer
 * of the records (processor_<id>_records: group key, time, the watermark
 * the record came under, the aggregates' arguments), kept while a window
 * that holds them may still change; a step recomputes the windows its
 * records change.
 * ------------------------------------------------------------------------ */

/*
 * The arguments of an aggregate's argument list "a" (what is inside its
 * parentheses), split at the commas outside parentheses, brackets, quoted
 * strings ('' and, in E'', backslash escapes), quoted identifiers,
 * dollar-quoted strings and comments, and trimmed; NULL when any of those
 * is not closed (or a parenthesis not opened), so that each argument is a
 * balanced piece that stays inside the parentheses a step puts around it.
 */
CREATE FUNCTION @extschema@._processor_split_args(a text)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer := length(a);
    i integer := 1;
    depth integer := 0;
    start integer := 1;
    c text;
    d text[];
    j integer;
    nest integer;
    esc boolean;
    args text[] := '{}';
BEGIN
    WHILE i <= n LOOP
        c := substr(a, i, 1);
        IF c IN ('(', '[') THEN
            depth := depth + 1;
        ELSIF c IN (')', ']') THEN
            depth := depth - 1;
            IF depth < 0 THEN
                RETURN NULL;
            END IF;
        ELSIF c = ',' AND depth = 0 THEN
            args := args || btrim(substr(a, start, i - start), E' \t\r\n');
            start := i + 1;
        ELSIF c = '''' THEN
            -- E'...' (e not ending an identifier) takes backslash escapes
            esc := i > 1 AND lower(substr(a, i - 1, 1)) = 'e'
                   AND (i = 2 OR substr(a, i - 2, 1) !~ '[A-Za-z0-9_$\u0080-\U0010FFFF]');
            i := i + 1;
            LOOP
                IF i > n THEN
                    RETURN NULL;
                END IF;
                c := substr(a, i, 1);
                IF esc AND c = E'\\' THEN
                    i := i + 2;
                ELSIF c = '''' AND substr(a, i + 1, 1) = '''' THEN
                    i := i + 2;
                ELSIF c = '''' THEN
                    EXIT;
                ELSE
                    i := i + 1;
                END IF;
            END LOOP;
        ELSIF c = '"' THEN
            -- "a""b" is two quoted pieces back to back: the same here
            j := strpos(substr(a, i + 1), '"');
            IF j = 0 THEN
                RETURN NULL;
            END IF;
            i := i + j;
        ELSIF c = '$' AND (i = 1 OR substr(a, i - 1, 1) !~ '[A-Za-z0-9_$\u0080-\U0010FFFF]') THEN
            -- $tag$...$tag$ ($1 is a parameter, a$b an identifier; as in
            -- PostgreSQL's lexer, letters beyond ASCII are letters)
            d := regexp_match(substr(a, i), '^\$([A-Za-z_\u0080-\U0010FFFF][A-Za-z0-9_\u0080-\U0010FFFF]*)?\$');
            IF d IS NOT NULL THEN
                d[1] := '$' || coalesce(d[1], '') || '$';
                j := strpos(substr(a, i + length(d[1])), d[1]);
                IF j = 0 THEN
                    RETURN NULL;
                END IF;
                i := i + length(d[1]) + j - 1 + length(d[1]) - 1;
            END IF;
        ELSIF c = '-' AND substr(a, i + 1, 1) = '-' THEN
            -- to the end of the line: \n or \r, as in PostgreSQL's lexer
            i := i + length((regexp_match(substr(a, i), '^[^\r\n]*'))[1]) - 1;
        ELSIF c = '/' AND substr(a, i + 1, 1) = '*' THEN
            -- block comments nest
            nest := 1;
            i := i + 2;
            WHILE nest > 0 LOOP
                IF i > n THEN
                    RETURN NULL;
                END IF;
                IF substr(a, i, 2) = '/*' THEN
                    nest := nest + 1;
                    i := i + 2;
                ELSIF substr(a, i, 2) = '*/' THEN
                    nest := nest - 1;
                    i := i + 2;
                ELSE
                    i := i + 1;
                END IF;
            END LOOP;
            i := i - 1;
        END IF;
        i := i + 1;
    END LOOP;
    IF depth <> 0 THEN
        RETURN NULL;
    END IF;
    RETURN args || btrim(substr(a, start), E' \t\r\n');
END
$$;
COMMENT ON FUNCTION @extschema@._processor_split_args(text) IS
'internal: the arguments of a window processor''s aggregate, split at top-level commas; NULL when a parenthesis, bracket, quote or comment is not balanced';

/*
 * The pg_aggregate row of a function a window processor is to use as an
 * aggregate: it must be one, a plain aggregate with a combine function
 * (a window combines its state with each batch's).
 */
CREATE FUNCTION @extschema@._processor_combinable_aggregate(proc regprocedure)
RETURNS pg_catalog.pg_aggregate
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ag pg_aggregate;
BEGIN
    SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = proc;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'function % is not an aggregate', proc USING ERRCODE = 'wrong_object_type';
    END IF;
    IF ag.aggkind <> 'n' OR ag.aggcombinefn = 0 THEN
        RAISE EXCEPTION 'aggregate % cannot be combined', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = 'A window keeps a state per aggregate and combines it with the states of new records: the aggregate needs a combine function.';
    END IF;
    RETURN ag;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_combinable_aggregate(regprocedure) IS
'internal: the pg_aggregate row of an aggregate a window processor may use: a plain aggregate with a combine function';

/*
 * Aggregates whose state is internal (src/agg_state.c).  The state is
 * kept in a window row as the bytes of the aggregate's serial function,
 * sealed with an HMAC-SHA256 under this database's key: the window table
 * is writable by the processor's owner, and the deserial function that
 * reads the bytes back trusts them.  The key is made by
 * _processor_create_state when the first processor with such an aggregate
 * is created, not by CREATE EXTENSION: a restore runs CREATE EXTENSION and
 * then loads the dumped row (pg_extension_config_dump), which a key made
 * by the install script would collide with.  PUBLIC has no privileges on
 * it; src/agg_state.c reads it as the extension.
 */
CREATE TABLE @extschema@.processor_state_key (
    id  boolean PRIMARY KEY DEFAULT true CHECK (id),
    key bytea NOT NULL CHECK (pg_catalog.octet_length(key) OPERATOR(pg_catalog.=) 32)
);
COMMENT ON TABLE @extschema@.processor_state_key IS
'pg_eventlog: the secret key sealing the window states of aggregates whose state is internal (one row, made with the first such processor)';
REVOKE ALL ON @extschema@.processor_state_key FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.processor_state_key', '');

/*
 * The support functions of a processor's aggregates of an internal state.
 * They take internal, so SQL can call them only through an aggregate (and
 * only a superuser can create one whose state is internal); they refuse
 * any other caller.  PUBLIC may execute them: the processor's owner owns
 * the aggregates, and PostgreSQL checks that the owner may run their
 * functions.
 */
CREATE FUNCTION @extschema@._agg_state_seal(internal)
RETURNS bytea
AS 'MODULE_PATHNAME', 'el_agg_state_seal'
LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@._agg_state_seal(internal) IS
'internal: the final function of a window processor''s partial and combine aggregates of an internal state: the state through the aggregate''s serial function, sealed';

CREATE FUNCTION @extschema@._agg_state_merge(internal, bytea)
RETURNS internal
AS 'MODULE_PATHNAME', 'el_agg_state_merge'
LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@._agg_state_merge(internal, bytea) IS
'internal: the transition function of a window processor''s combine and final aggregates of an internal state: a sealed state checked, deserialized and combined';

/* Whether aggregate ag's state, internal, can be kept sealed. */
CREATE FUNCTION @extschema@._processor_sealable_state(ag pg_catalog.pg_aggregate)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ag.aggtranstype = 'internal'::regtype AND ag.aggserialfn <> 0 AND ag.aggdeserialfn <> 0
           AND ag.aggcombinefn <> 0 AND ag.aggfinalfn <> 0
$$;
COMMENT ON FUNCTION @extschema@._processor_sealable_state(pg_catalog.pg_aggregate) IS
'internal: whether a window processor can keep the internal state of an aggregate: it has combine, serial, deserial and final functions';

/* Why aggregate ag's state cannot be kept in a window (a DETAIL). */
CREATE FUNCTION @extschema@._processor_state_refusal(ag pg_catalog.pg_aggregate)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN ag.aggfinalextra
                THEN 'A window keeps an aggregate''s state in a column and finishes it with the final function alone; this aggregate''s final function takes extra arguments (as array_agg''s does on PostgreSQL 16 and later, to find its result type).'
                WHEN ag.aggtranstype = 'internal'::regtype AND NOT @extschema@._processor_sealable_state(ag)
                THEN 'A window keeps an internal state in a column as the bytes of the aggregate''s serial function, read back with its deserial function and finished with its final function; this aggregate lacks one of them.'
                ELSE format('A window keeps an aggregate''s state in a column of its type, which cannot be a pseudo-type; the state of this aggregate is of type %s.',
                            format_type(ag.aggtranstype, NULL)) END
$$;
COMMENT ON FUNCTION @extschema@._processor_state_refusal(pg_catalog.pg_aggregate) IS
'internal: why a window processor cannot keep the state of an aggregate, as the DETAIL of its 0A000';

/*
 * The checks an aggregate with a combine function passes before a window
 * processor uses it, whatever its arguments, as the caller.  The
 * processor's aggregates are made by the extension's owner, and CREATE
 * AGGREGATE reads INITCOND with the state type's input function: for a type
 * of the user's (a domain's CHECK, a composite's columns), user code would
 * run as that owner.  Built-in state types only, then, when there is an
 * initial value.  And the caller, who will own the processor, must be
 * able to run the aggregate and its transition, combine and final
 * functions, and the serial and deserial functions of an internal state.
 */
CREATE FUNCTION @extschema@._processor_check_aggregate_use(proc regprocedure, ag pg_catalog.pg_aggregate)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF ag.agginitval IS NOT NULL AND ag.aggtranstype::oid >= 16384 THEN
        RAISE EXCEPTION 'the initial state of aggregate % cannot be set up in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('Its state type %s is not a built-in type, and the processor would read its initial value %L with that type''s input function as the extension''s owner.',
                            format_type(ag.aggtranstype, NULL), ag.agginitval),
            HINT = 'Use an aggregate whose state is of a built-in type, or one without an initial value.';
    END IF;
    IF NOT (has_function_privilege(proc, 'EXECUTE') AND has_function_privilege(ag.aggtransfn, 'EXECUTE')
            AND has_function_privilege(ag.aggcombinefn, 'EXECUTE')
            AND (ag.aggfinalfn = 0 OR has_function_privilege(ag.aggfinalfn, 'EXECUTE'))
            AND (ag.aggserialfn = 0 OR has_function_privilege(ag.aggserialfn, 'EXECUTE'))
            AND (ag.aggdeserialfn = 0 OR has_function_privilege(ag.aggdeserialfn, 'EXECUTE'))) THEN
        RAISE EXCEPTION 'permission denied for aggregate %', proc USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A window processor calls the aggregate''s transition, combine, serial, deserial and final functions as its owner.';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_check_aggregate_use(regprocedure, pg_catalog.pg_aggregate) IS
'internal: refuses an aggregate a window processor cannot set up safely (an initial value of a state type of the user''s) or that the caller may not run';

/*
 * The element type of an array type (of a domain's base type): what
 * PostgreSQL's get_element_type finds, a true array (not a fixed-length
 * one such as point, nor a type with another subscript handler); NULL for
 * any other type.
 */
CREATE FUNCTION @extschema@._processor_array_elem(t oid)
RETURNS oid
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE b(o, d) AS (SELECT t, 0
                               UNION ALL
                               SELECT ty.typbasetype, b.d + 1 FROM b JOIN pg_type ty ON ty.oid = b.o
                                WHERE ty.typtype = 'd')
    SELECT ty.typelem FROM pg_type ty
     WHERE ty.oid = (SELECT b.o FROM b ORDER BY b.d DESC LIMIT 1)
       AND ty.typelem <> 0 AND ty.typlen = -1
       AND ty.typsubscript = 'pg_catalog.array_subscript_handler'::regproc
$$;
COMMENT ON FUNCTION @extschema@._processor_array_elem(oid) IS
'internal: the element type of an array type (or of a domain over one), else NULL';

/*
 * Polymorphic aggregates (max and min of arrays and enums, a user's
 * aggregate of anyelement or anycompatible).  A window keeps an
 * aggregate's arguments and state in columns, which need real types: the
 * processor's own aggregates are made with the types PostgreSQL would
 * resolve for a call with the arguments as typed (parse_agg.c's
 * resolve_aggregate_transtype: enforce_generic_type_consistency with the
 * transition type as the result).  This follows those rules: the
 * anyelement family takes one element type from every argument (an
 * anyarray's element, an anyrange's subtype, an anymultirange's range;
 * domains over arrays and ranges as their base types; anynonarray no
 * array, anyenum an enum), the anycompatible family the common type of
 * its arguments, as a UNION or COALESCE of them would choose it.  Given
 * the declared argument types of an aggregate, the actual ones, and the
 * types to resolve (declared types, or the transition type), it returns
 * those resolved, or fails with PostgreSQL's SQLSTATE (42804, 42704).
 * The common type is found by PostgreSQL itself (a COALESCE of typed
 * NULLs, in a subquery that never runs, so that no domain's CHECK is
 * evaluated), unless all the types are the same one: with "probe" false
 * (the extension owner checking a specification, which never runs a
 * query of types the user named) they must be.
 */
CREATE FUNCTION @extschema@._processor_poly_resolve(declared oid[], actual oid[], targets oid[], probe boolean)
RETURNS oid[]
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    elem oid;
    arr oid;
    rng oid;
    mrng oid;
    ctypes oid[] := '{}';
    crng oid;
    crng_elem oid;
    cmrng oid;
    cmrng_rng oid;
    common oid;
    carr oid;
    t oid;
    e oid;
    d oid;
    j integer;
    fam1 boolean := false;
    fam2 boolean := false;
    want oid[];
    res oid[] := '{}';
BEGIN
    -- subscripts from 1 (an oidvector cast to oid[] starts at 0)
    declared := ARRAY(SELECT unnest(declared));
    actual := ARRAY(SELECT unnest(actual));
    targets := ARRAY(SELECT unnest(targets));
    want := declared || targets;
    IF cardinality(declared) <> cardinality(actual) THEN
        RAISE EXCEPTION 'an aggregate of % arguments given % types', cardinality(declared), cardinality(actual)
            USING ERRCODE = 'datatype_mismatch';
    END IF;
    FOR j IN 1 .. cardinality(declared) LOOP
        d := declared[j];
        t := actual[j];
        IF d IN ('anyelement'::regtype, 'anynonarray'::regtype, 'anyenum'::regtype) THEN
            fam1 := true;
            IF elem IS NOT NULL AND t <> elem THEN
                RAISE EXCEPTION 'arguments declared "anyelement" are not all alike' USING ERRCODE = 'datatype_mismatch',
                    DETAIL = format('%s versus %s', format_type(elem, NULL), format_type(t, NULL));
            END IF;
            elem := t;
            CONTINUE;
        ELSIF d NOT IN ('anyarray'::regtype, 'anyrange'::regtype, 'anymultirange'::regtype,
                        'anycompatible'::regtype, 'anycompatiblenonarray'::regtype, 'anycompatiblearray'::regtype,
                        'anycompatiblerange'::regtype, 'anycompatiblemultirange'::regtype) THEN
            CONTINUE;
        END IF;
        -- the others take a domain over an array or range as its base type
        IF d NOT IN ('anycompatible'::regtype, 'anycompatiblenonarray'::regtype) THEN
            WHILE (SELECT ty.typtype FROM pg_type ty WHERE ty.oid = t) = 'd' LOOP
                t := (SELECT ty.typbasetype FROM pg_type ty WHERE ty.oid = t);
            END LOOP;
        END IF;
        IF d = 'anyarray'::regtype THEN
            fam1 := true;
            IF arr IS NOT NULL AND t <> arr THEN
                RAISE EXCEPTION 'arguments declared "anyarray" are not all alike' USING ERRCODE = 'datatype_mismatch',
                    DETAIL = format('%s versus %s', format_type(arr, NULL), format_type(t, NULL));
            END IF;
            arr := t;
        ELSIF d = 'anyrange'::regtype THEN
            fam1 := true;
            IF rng IS NOT NULL AND t <> rng THEN
                RAISE EXCEPTION 'arguments declared "anyrange" are not all alike' USING ERRCODE = 'datatype_mismatch',
                    DETAIL = format('%s versus %s', format_type(rng, NULL), format_type(t, NULL));
            END IF;
            rng := t;
        ELSIF d = 'anymultirange'::regtype THEN
            fam1 := true;
            IF mrng IS NOT NULL AND t <> mrng THEN
                RAISE EXCEPTION 'arguments declared "anymultirange" are not all alike' USING ERRCODE = 'datatype_mismatch',
                    DETAIL = format('%s versus %s', format_type(mrng, NULL), format_type(t, NULL));
            END IF;
            mrng := t;
        ELSIF d IN ('anycompatible'::regtype, 'anycompatiblenonarray'::regtype) THEN
            fam2 := true;
            ctypes := ctypes || t;
        ELSIF d = 'anycompatiblearray'::regtype THEN
            fam2 := true;
            e := @extschema@._processor_array_elem(t);
            IF e IS NULL THEN
                RAISE EXCEPTION 'argument declared anycompatiblearray is not an array but type %', format_type(t, NULL)
                    USING ERRCODE = 'datatype_mismatch';
            END IF;
            ctypes := ctypes || e;
        ELSIF d = 'anycompatiblerange'::regtype THEN
            fam2 := true;
            IF crng IS NOT NULL AND t <> crng THEN
                RAISE EXCEPTION 'arguments declared "anycompatiblerange" are not all alike' USING ERRCODE = 'datatype_mismatch',
                    DETAIL = format('%s versus %s', format_type(crng, NULL), format_type(t, NULL));
            ELSIF crng IS NULL THEN
                crng := t;
                crng_elem := (SELECT r.rngsubtype FROM pg_range r WHERE r.rngtypid = t);
                IF crng_elem IS NULL THEN
                    RAISE EXCEPTION 'argument declared anycompatiblerange is not a range type but type %', format_type(t, NULL)
                        USING ERRCODE = 'datatype_mismatch';
                END IF;
                ctypes := ctypes || crng_elem;
            END IF;
        ELSE
            fam2 := true;
            IF cmrng IS NOT NULL AND t <> cmrng THEN
                RAISE EXCEPTION 'arguments declared "anycompatiblemultirange" are not all alike' USING ERRCODE = 'datatype_mismatch',
                    DETAIL = format('%s versus %s', format_type(cmrng, NULL), format_type(t, NULL));
            END IF;
            cmrng := t;
            cmrng_rng := (SELECT r.rngtypid FROM pg_range r WHERE r.rngmultitypid = t);
            IF cmrng_rng IS NULL THEN
                RAISE EXCEPTION 'argument declared anycompatiblemultirange is not a multirange type but type %', format_type(t, NULL)
                    USING ERRCODE = 'datatype_mismatch';
            END IF;
        END IF;
    END LOOP;

    -- The anyelement family: one element type that every argument agrees on.
    IF fam1 THEN
        IF arr IS NOT NULL THEN
            e := @extschema@._processor_array_elem(arr);
            IF e IS NULL THEN
                RAISE EXCEPTION 'argument declared anyarray is not an array but type %', format_type(arr, NULL)
                    USING ERRCODE = 'datatype_mismatch';
            ELSIF elem IS NULL THEN
                elem := e;
            ELSIF e <> elem THEN
                RAISE EXCEPTION 'argument declared anyarray is not consistent with argument declared anyelement'
                    USING ERRCODE = 'datatype_mismatch',
                          DETAIL = format('%s versus %s', format_type(arr, NULL), format_type(elem, NULL));
            END IF;
        END IF;
        IF mrng IS NOT NULL THEN
            e := (SELECT r.rngtypid FROM pg_range r WHERE r.rngmultitypid = mrng);
            IF e IS NULL THEN
                RAISE EXCEPTION 'argument declared anymultirange is not a multirange type but type %', format_type(mrng, NULL)
                    USING ERRCODE = 'datatype_mismatch';
            ELSIF rng IS NULL THEN
                rng := e;
            ELSIF e <> rng THEN
                RAISE EXCEPTION 'argument declared anymultirange is not consistent with argument declared anyrange'
                    USING ERRCODE = 'datatype_mismatch',
                          DETAIL = format('%s versus %s', format_type(mrng, NULL), format_type(rng, NULL));
            END IF;
        ELSIF rng IS NOT NULL THEN
            mrng := (SELECT r.rngmultitypid FROM pg_range r WHERE r.rngtypid = rng);
        END IF;
        IF rng IS NOT NULL THEN
            e := (SELECT r.rngsubtype FROM pg_range r WHERE r.rngtypid = rng);
            IF e IS NULL THEN
                RAISE EXCEPTION 'argument declared anyrange is not a range type but type %', format_type(rng, NULL)
                    USING ERRCODE = 'datatype_mismatch';
            ELSIF elem IS NULL THEN
                elem := e;
            ELSIF e <> elem THEN
                RAISE EXCEPTION 'argument declared anyrange is not consistent with argument declared anyelement'
                    USING ERRCODE = 'datatype_mismatch',
                          DETAIL = format('%s versus %s', format_type(rng, NULL), format_type(elem, NULL));
            END IF;
        END IF;
        IF 'anynonarray'::regtype = ANY (want) AND @extschema@._processor_array_elem(elem) IS NOT NULL THEN
            RAISE EXCEPTION 'type matched to anynonarray is an array type: %', format_type(elem, NULL)
                USING ERRCODE = 'datatype_mismatch';
        END IF;
        IF 'anyenum'::regtype = ANY (want) AND (SELECT ty.typtype FROM pg_type ty WHERE ty.oid = elem) <> 'e' THEN
            RAISE EXCEPTION 'type matched to anyenum is not an enum type: %', format_type(elem, NULL)
                USING ERRCODE = 'datatype_mismatch';
        END IF;
    END IF;

    -- The anycompatible family: the common type of its arguments.
    IF fam2 THEN
        IF cmrng IS NOT NULL THEN
            IF crng IS NOT NULL AND cmrng_rng <> crng THEN
                RAISE EXCEPTION 'argument declared anycompatiblemultirange is not consistent with argument declared anycompatiblerange'
                    USING ERRCODE = 'datatype_mismatch',
                          DETAIL = format('%s versus %s', format_type(cmrng, NULL), format_type(crng, NULL));
            ELSIF crng IS NULL THEN
                crng := cmrng_rng;
                crng_elem := (SELECT r.rngsubtype FROM pg_range r WHERE r.rngtypid = crng);
                ctypes := ctypes || crng_elem;
            END IF;
        ELSIF crng IS NOT NULL THEN
            cmrng := (SELECT r.rngmultitypid FROM pg_range r WHERE r.rngtypid = crng);
        END IF;
        IF (SELECT count(DISTINCT u) FROM unnest(ctypes) u) = 1 THEN
            common := ctypes[1];
        ELSIF NOT probe THEN
            RAISE EXCEPTION 'arguments of anycompatible family are not of one type' USING ERRCODE = 'datatype_mismatch',
                DETAIL = format('The types are %s.', (SELECT string_agg(format_type(u, NULL), ', ') FROM unnest(ctypes) u));
        ELSE
            BEGIN
                EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_)::oid FROM (SELECT 1) AS d_ LEFT JOIN '
                               '(SELECT COALESCE(%s) AS x_ WHERE false) AS s_ ON true',
                               (SELECT string_agg(format('NULL::%s', format_type(u, NULL)), ', ' ORDER BY o)
                                  FROM unnest(ctypes) WITH ORDINALITY AS x(u, o))) INTO common;
            EXCEPTION WHEN datatype_mismatch OR cannot_coerce THEN
                RAISE EXCEPTION 'arguments of anycompatible family cannot be cast to a common type' USING ERRCODE = 'datatype_mismatch',
                    DETAIL = format('The types are %s.', (SELECT string_agg(format_type(u, NULL), ', ') FROM unnest(ctypes) u));
            END;
        END IF;
        IF 'anycompatiblearray'::regtype = ANY (want) THEN
            carr := (SELECT nullif(ty.typarray, 0) FROM pg_type ty WHERE ty.oid = common);
            IF carr IS NULL THEN
                RAISE EXCEPTION 'could not find array type for data type %', format_type(common, NULL)
                    USING ERRCODE = 'undefined_object';
            END IF;
        END IF;
        IF ('anycompatiblerange'::regtype = ANY (want) OR 'anycompatiblemultirange'::regtype = ANY (want))
           AND crng_elem IS DISTINCT FROM common THEN
            RAISE EXCEPTION 'anycompatiblerange type % does not match anycompatible type %',
                            format_type(crng, NULL), format_type(common, NULL)
                USING ERRCODE = 'datatype_mismatch';
        END IF;
        IF 'anycompatiblenonarray'::regtype = ANY (want) AND @extschema@._processor_array_elem(common) IS NOT NULL THEN
            RAISE EXCEPTION 'type matched to anycompatiblenonarray is an array type: %', format_type(common, NULL)
                USING ERRCODE = 'datatype_mismatch';
        END IF;
    END IF;

    FOREACH d IN ARRAY targets LOOP
        t := CASE WHEN d IN ('anyelement'::regtype, 'anynonarray'::regtype, 'anyenum'::regtype) THEN elem
                  WHEN d = 'anyarray'::regtype THEN coalesce(arr, (SELECT nullif(ty.typarray, 0) FROM pg_type ty WHERE ty.oid = elem))
                  WHEN d = 'anyrange'::regtype THEN rng
                  WHEN d = 'anymultirange'::regtype THEN mrng
                  WHEN d IN ('anycompatible'::regtype, 'anycompatiblenonarray'::regtype) THEN common
                  WHEN d = 'anycompatiblearray'::regtype THEN carr
                  WHEN d = 'anycompatiblerange'::regtype THEN crng
                  WHEN d = 'anycompatiblemultirange'::regtype THEN cmrng
                  ELSE d END;
        IF t IS NULL THEN
            RAISE EXCEPTION 'could not determine polymorphic type % from the arguments'' types', format_type(d, NULL)
                USING ERRCODE = CASE WHEN d = 'anyarray'::regtype AND elem IS NOT NULL THEN 'undefined_object' ELSE 'datatype_mismatch' END,
                      DETAIL = format('The arguments are of types %s.',
                                      (SELECT string_agg(format_type(u, NULL), ', ' ORDER BY o) FROM unnest(actual) WITH ORDINALITY AS x(u, o)));
        END IF;
        res := res || t;
    END LOOP;
    RETURN res;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_poly_resolve(oid[], oid[], oid[], boolean) IS
'internal: the types polymorphic types resolve to for an aggregate''s declared and actual argument types, by PostgreSQL''s rules';

/*
 * Whether a value of type "src" is taken where type "dst" is by implicit
 * coercion, as far as choosing among aggregates needs: the same type, a
 * domain over it, an implicit cast, or arrays of such elements.
 */
CREATE FUNCTION @extschema@._processor_implicit_coercion(src oid, dst oid)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE b(o) AS (SELECT src
                            UNION ALL
                            SELECT ty.typbasetype FROM b JOIN pg_type ty ON ty.oid = b.o WHERE ty.typbasetype <> 0),
    t AS (SELECT s.oid AS s,
                 CASE WHEN s.typcategory = 'A' THEN s.typelem END AS se,
                 CASE WHEN d.typcategory = 'A' THEN d.typelem END AS de
            FROM pg_type s, pg_type d WHERE s.oid = src AND d.oid = dst)
    -- (a domain over a domain: every base type down, b)
    SELECT coalesce((SELECT dst IN (SELECT b.o FROM b)
                            OR EXISTS (SELECT FROM pg_cast c WHERE c.castsource IN (SELECT b.o FROM b) AND c.casttarget = dst AND c.castcontext = 'i')
                            OR (t.se <> 0 AND t.de <> 0
                                AND (t.se = t.de OR EXISTS (SELECT FROM pg_cast c WHERE c.castsource = t.se AND c.casttarget = t.de
                                                                                   AND c.castcontext = 'i')))
                       FROM t), false)
$$;
COMMENT ON FUNCTION @extschema@._processor_implicit_coercion(oid, oid) IS
'internal: whether a value of one type is taken where another is by implicit coercion, as choosing an aggregate needs';

/*
 * The polymorphic aggregate "fn" (a name, schema-qualified or in
 * pg_catalog) that takes arguments of the types "typs", when no aggregate
 * of exactly those types exists: among the aggregates of that name and
 * number of arguments with an argument of a polymorphic type, the one
 * whose polymorphic types resolve from the arguments'
 * (_processor_poly_resolve).  When there is only one, why it does not
 * resolve is the error (42804); several that resolve are 42725, as
 * PostgreSQL calls an ambiguous function; none is NULL.  An aggregate of
 * that name of no polymorphic type that takes the arguments by implicit
 * coercion, which PostgreSQL would call instead, is 42725 too.
 */
CREATE FUNCTION @extschema@._processor_poly_aggregate(fn text, typs oid[])
RETURNS regprocedure
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    names text[] := parse_ident(fn);
    cands oid[];
    fits oid[] := '{}';
    c oid;
BEGIN
    SELECT array_agg(pr.oid ORDER BY pr.oid) INTO cands FROM pg_proc pr
     WHERE pr.proname = names[cardinality(names)] AND pr.prokind = 'a' AND pr.pronargs = cardinality(typs)
       AND CASE WHEN cardinality(names) = 2 THEN pr.pronamespace = to_regnamespace(names[1])
                ELSE pg_function_is_visible(pr.oid) END
       AND EXISTS (SELECT FROM unnest(pr.proargtypes) AS u(t)
                    WHERE u.t IN ('anyelement'::regtype, 'anynonarray'::regtype, 'anyenum'::regtype,
                                  'anyarray'::regtype, 'anyrange'::regtype, 'anymultirange'::regtype,
                                  'anycompatible'::regtype, 'anycompatiblenonarray'::regtype,
                                  'anycompatiblearray'::regtype, 'anycompatiblerange'::regtype,
                                  'anycompatiblemultirange'::regtype));
    /*
     * PostgreSQL prefers an aggregate of that name that takes the
     * arguments by implicit coercion (pick(text) for a varchar) to a
     * polymorphic one: rather than call another aggregate than a query
     * would, refuse and have the caller cast to the exact type.
     */
    IF cardinality(cands) > 0 THEN
        SELECT pr.oid INTO c FROM pg_proc pr
         WHERE pr.proname = names[cardinality(names)] AND pr.prokind = 'a' AND pr.pronargs = cardinality(typs)
           AND CASE WHEN cardinality(names) = 2 THEN pr.pronamespace = to_regnamespace(names[1])
                    ELSE pg_function_is_visible(pr.oid) END
           AND NOT EXISTS (SELECT FROM unnest(pr.proargtypes) AS u(t) JOIN pg_type ty ON ty.oid = u.t WHERE ty.typtype = 'p')
           AND NOT EXISTS (SELECT FROM unnest(pr.proargtypes::oid[], typs) AS u(d, s)
                            WHERE NOT @extschema@._processor_implicit_coercion(u.s, u.d))
         ORDER BY pr.oid LIMIT 1;
        IF c IS NOT NULL THEN
            RAISE EXCEPTION 'aggregate %(%) is not unique', fn,
                            (SELECT string_agg(format_type(u, NULL), ', ' ORDER BY o) FROM unnest(typs) WITH ORDINALITY AS x(u, o))
                USING ERRCODE = 'ambiguous_function',
                      DETAIL = format('PostgreSQL would call %s, which takes these types by implicit coercion, rather than the polymorphic %s.',
                                      c::regprocedure, (SELECT string_agg(u::regprocedure::text, ', ' ORDER BY u) FROM unnest(cands) u)),
                      HINT = 'Cast the arguments to the exact types the aggregate you want takes.';
        END IF;
    END IF;
    IF cardinality(cands) = 1 THEN
        PERFORM @extschema@._processor_poly_resolve(ARRAY(SELECT pg_catalog.unnest(pr.proargtypes)), typs, ARRAY(SELECT pg_catalog.unnest(pr.proargtypes)), true)
           FROM pg_proc pr WHERE pr.oid = cands[1];
        RETURN cands[1];
    END IF;
    FOREACH c IN ARRAY coalesce(cands, '{}') LOOP
        BEGIN
            PERFORM @extschema@._processor_poly_resolve(ARRAY(SELECT pg_catalog.unnest(pr.proargtypes)), typs, ARRAY(SELECT pg_catalog.unnest(pr.proargtypes)), true)
               FROM pg_proc pr WHERE pr.oid = c;
            fits := fits || c;
        EXCEPTION WHEN datatype_mismatch OR undefined_object THEN
            NULL;
        END;
    END LOOP;
    IF cardinality(fits) > 1 THEN
        RAISE EXCEPTION 'aggregate %(%) is not unique', fn,
                        (SELECT string_agg(format_type(u, NULL), ', ' ORDER BY o) FROM unnest(typs) WITH ORDINALITY AS x(u, o))
            USING ERRCODE = 'ambiguous_function',
                  DETAIL = format('The aggregates %s all take these types.',
                                  (SELECT string_agg(u::regprocedure::text, ', ' ORDER BY u) FROM unnest(fits) u)),
                  HINT = 'Cast the arguments to types only one of them takes.';
    END IF;
    RETURN fits[1];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_poly_aggregate(text, oid[]) IS
'internal: the polymorphic aggregate of a name whose polymorphic types resolve from given argument types (42725 if several do), else NULL';

/*
 * The argument types a window processor's aggregate "proc" (its
 * pg_aggregate row "ag") takes for arguments of the types "actual", and
 * its state type after them: for a polymorphic aggregate, resolved
 * (_processor_poly_resolve; an anycompatible argument takes the common
 * type, so that a step casts each argument to it, as a call would); else
 * its own.  Refuses (0A000) what a window cannot keep: a final function
 * with extra arguments, an internal state that cannot be sealed, an
 * argument or state of a pseudo-type (record, from a ROW() given to an
 * anyelement) or of a temporary schema; and, when checking as the caller
 * ("probe"), a type the caller has no USAGE on (42501).
 */
CREATE FUNCTION @extschema@._processor_agg_types(proc regprocedure, ag pg_catalog.pg_aggregate, actual oid[], probe boolean)
RETURNS oid[]
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    declared oid[] := (SELECT ARRAY(SELECT pg_catalog.unnest(pr.proargtypes)) FROM pg_proc pr WHERE pr.oid = proc);
    r oid[];
    bad oid;
    poly boolean;
BEGIN
    IF ag.aggfinalextra THEN
        RAISE EXCEPTION 'the state of aggregate % cannot be kept in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = @extschema@._processor_state_refusal(ag);
    END IF;
    r := @extschema@._processor_poly_resolve(declared, actual, declared || ag.aggtranstype::oid, probe);
    poly := r[cardinality(r)] <> ag.aggtranstype;
    ag.aggtranstype := r[cardinality(r)];
    IF (SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p'
       AND NOT @extschema@._processor_sealable_state(ag) THEN
        RAISE EXCEPTION 'the state of aggregate % cannot be kept in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = @extschema@._processor_state_refusal(ag),
            HINT = CASE WHEN poly THEN 'Cast the argument to a type of its own (a composite type rather than a ROW()).'
                        ELSE 'Count, sum, min, max and avg of numbers have a state of their own; cast the argument to a type for which the aggregate has a state a window can keep.' END;
    END IF;
    SELECT u INTO bad FROM unnest(r[1:cardinality(declared)]) u JOIN pg_type t ON t.oid = u WHERE t.typtype = 'p' LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'the arguments of aggregate % cannot be kept in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('A window keeps an aggregate''s arguments in columns of their types, which cannot be pseudo-types; an argument of this aggregate is of type %s.',
                            format_type(bad, NULL)),
            HINT = 'Cast the argument to a type of its own (a composite type rather than a ROW()).';
    END IF;
    -- The window table, record buffer and aggregates are made of these
    -- types by the extension's owner: the caller must be allowed to use
    -- them, as for a column or function of their own (not checked again
    -- in _processor_create_state, which runs as the extension's owner).
    IF probe THEN
        SELECT u INTO bad FROM unnest(r) u WHERE NOT has_type_privilege(u, 'USAGE') LIMIT 1;
        IF bad IS NOT NULL THEN
            RAISE EXCEPTION 'permission denied for type %', format_type(bad, NULL) USING ERRCODE = 'insufficient_privilege',
                DETAIL = format('A window keeps the arguments and state of aggregate %s in columns and aggregates of their types, which need USAGE on them.', proc),
                HINT = 'Ask the type''s owner to grant USAGE on it, or cast the argument to another type.';
        END IF;
    END IF;
    -- A processor outlives the session: no type of a temporary schema, nor
    -- one built on such a type (a domain over it, an array, a range or a
    -- composite of it), which goes with it.
    WITH RECURSIVE dep(o) AS (
        SELECT u FROM unnest(r) u
        UNION
        SELECT x.o FROM dep JOIN pg_type t ON t.oid = dep.o
               CROSS JOIN LATERAL (SELECT nullif(t.typbasetype, 0) UNION ALL SELECT nullif(t.typelem, 0)
                                   UNION ALL SELECT g.rngsubtype FROM pg_range g WHERE g.rngtypid = t.oid
                                   UNION ALL SELECT a.atttypid FROM pg_attribute a
                                              WHERE a.attrelid = t.typrelid AND t.typrelid <> 0 AND a.attnum > 0 AND NOT a.attisdropped) AS x(o)
         WHERE x.o IS NOT NULL)
    SELECT dep.o INTO bad FROM dep JOIN pg_type t ON t.oid = dep.o
     WHERE t.typnamespace = pg_my_temp_schema() OR pg_is_other_temp_schema(t.typnamespace) LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'the arguments of aggregate % cannot be kept in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('An argument or the state of this aggregate is of type %s, of a temporary schema, which goes with the session; a processor outlives it.',
                            format_type(bad, NULL)),
            HINT = 'Cast the argument to a type of a schema that is not temporary.';
    END IF;
    RETURN r;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_agg_types(regprocedure, pg_catalog.pg_aggregate, oid[], boolean) IS
'internal: the argument and state types of a window processor''s aggregate for arguments of given types (polymorphic types resolved), or 0A000 when a window cannot keep them';

/*
 * Refuses (0A000) an argument "x" (of type "typ") of aggregate "a" whose
 * collation is neither none nor the database's: a window keeps states in
 * columns of the database's collation and combines them there, so the
 * argument's collation would be lost when states are combined, and the
 * result would depend on how records were cut into steps.  Probed as the
 * type is (pg_collation_for refuses a type without collations).
 */
CREATE FUNCTION @extschema@._processor_check_collation(a text, x text, typ oid)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    coll text;
BEGIN
    IF typ = 'unknown'::regtype OR (SELECT t.typcollation FROM pg_type t WHERE t.oid = typ) = 0 THEN
        RETURN;
    END IF;
    EXECUTE format('SELECT pg_catalog.pg_collation_for(s_.x_) FROM (SELECT 1) AS d_ LEFT JOIN '
                   '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                   x) INTO coll;
    IF coll IS NOT NULL AND coll <> '"default"' THEN
        RAISE EXCEPTION 'the collation of the argument of aggregate "%" cannot be kept in a window', a
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = format('A window combines states kept in the database''s collation, so the argument''s collation %s would be lost and the result would depend on how records were cut into steps.', coll),
                  HINT = 'Compare in the database''s collation (leave out COLLATE), or aggregate a value whose order does not depend on a collation.';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_check_collation(text, text, oid) IS
'internal: refuses an aggregate argument of a window processor whose collation is not the database''s';

/*
 * An aggregate of create_window_processor's "aggregates", checked as the
 * caller: {agg_funcs entry, argument, name given with AS, function name,
 * and for a polymorphic aggregate the types its arguments resolve to
 * (agg_types entry, else NULL)}.
 * The argument of an aggregate of several arguments is their list as
 * written ("y, x"), which _processor_agg_argv splits again.
 */
CREATE FUNCTION @extschema@._processor_parse_aggregate(a text)
RETURNS text[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m text[] := regexp_match(a, '^\s*([A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)?)\s*\((.*)\)\s*(?:as\s+([A-Za-z_][A-Za-z0-9_]*))?\s*$', 'i');
    fname text;
    arg text;
    typ oid;
    castable boolean;
    proc regprocedure;
    ag pg_aggregate;
    names text[];
    args text[];
    r oid[];
BEGIN
    IF m IS NULL OR btrim(m[2]) = '' OR (btrim(m[2]) = '*' AND lower(m[1]) <> 'count') THEN
        RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An aggregate is count(*), or an aggregate function of one expression over the record, optionally followed by AS and a name.';
    END IF;
    args := @extschema@._processor_split_args(m[2]);
    IF args IS NULL THEN
        RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A parenthesis, bracket, quote or comment in its arguments is not closed, or a parenthesis not opened.';
    END IF;
    IF cardinality(args) > 1 THEN
        IF '' = ANY (args) OR '*' = ANY (args) THEN
            RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'An aggregate of several arguments takes an expression over the record for each, separated by commas.';
        END IF;
        RETURN @extschema@._processor_parse_aggregate_n(a, m, args);
    END IF;
    fname := lower(regexp_replace(m[1], '\s', '', 'g'));
    arg := btrim(m[2]);
    IF fname = 'count' THEN
        RETURN ARRAY['count', arg, m[3], 'count'];
    END IF;
    -- The argument's type, without evaluating it (an outer join's NULL).
    EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_)::oid FROM (SELECT 1) AS d_ LEFT JOIN '
                   '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                   arg) INTO typ;
    IF typ = 'unknown'::regtype THEN
        typ := 'text'::regtype;
    END IF;
    IF fname IN ('sum', 'min', 'max', 'avg') THEN
        -- Numbers, and whatever casts to numeric, as before: a numeric state.
        BEGIN
            EXECUTE format('SELECT NULL::%s::numeric', format_type(typ, NULL));
            castable := true;
        EXCEPTION WHEN cannot_coerce THEN
            castable := false;
        END;
        IF castable THEN
            RETURN ARRAY[fname, arg, m[3], fname];
        END IF;
    END IF;
    PERFORM @extschema@._processor_check_collation(a, arg, typ);
    proc := to_regprocedure(format('%s(%s)', regexp_replace(m[1], '\s', '', 'g'), format_type(typ, NULL)));
    IF proc IS NULL THEN
        -- a polymorphic aggregate whose types resolve from the argument's
        proc := @extschema@._processor_poly_aggregate(regexp_replace(m[1], '\s', '', 'g'), ARRAY[typ]);
    END IF;
    IF proc IS NULL THEN
        -- An aggregate of another pseudo-type ("any") of that name (refused
        -- below, with why).
        names := parse_ident(regexp_replace(m[1], '\s', '', 'g'));
        SELECT pr.oid INTO proc FROM pg_proc pr
         WHERE pr.proname = names[cardinality(names)] AND pr.prokind = 'a' AND pr.pronargs = 1
           AND CASE WHEN cardinality(names) = 2 THEN pr.pronamespace = to_regnamespace(names[1])
                    ELSE pg_function_is_visible(pr.oid) END
           AND (SELECT t.typtype FROM pg_type t WHERE t.oid = pr.proargtypes[0]) = 'p'
           AND pr.proargtypes[0] NOT IN ('anyelement'::regtype, 'anynonarray'::regtype, 'anyenum'::regtype,
                                         'anyarray'::regtype, 'anyrange'::regtype, 'anymultirange'::regtype,
                                         'anycompatible'::regtype, 'anycompatiblenonarray'::regtype,
                                         'anycompatiblearray'::regtype, 'anycompatiblerange'::regtype,
                                         'anycompatiblemultirange'::regtype)
         ORDER BY pr.oid LIMIT 1;
    END IF;
    IF proc IS NULL THEN
        RAISE EXCEPTION 'aggregate %(%) does not exist', m[1], format_type(typ, NULL)
            USING ERRCODE = 'undefined_function',
                  HINT = 'An aggregate of a window processor takes one argument of a type it takes (cast it), and is named with its schema unless it is in pg_catalog.';
    END IF;
    ag := @extschema@._processor_combinable_aggregate(proc);
    -- the argument and state types, a polymorphic aggregate's resolved
    r := @extschema@._processor_agg_types(proc, ag, ARRAY[typ], true);
    ag.aggtranstype := r[2];
    PERFORM @extschema@._processor_check_aggregate_use(proc, ag);
    RETURN ARRAY[proc::text, arg, m[3], (SELECT pr.proname::text FROM pg_proc pr WHERE pr.oid = proc),
                 CASE WHEN r[1:1] <> (SELECT ARRAY(SELECT pg_catalog.unnest(pr.proargtypes)) FROM pg_proc pr WHERE pr.oid = proc)
                      THEN r[1:1]::regtype[]::text END];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_parse_aggregate(text) IS
'internal: an aggregate of a window processor, checked as the caller: the entry of agg_funcs (count, sum, min, max, avg, or an aggregate with a combine function as a regprocedure), its argument, its name, its function''s name, a polymorphic aggregate''s resolved argument types';

/*
 * _processor_parse_aggregate for an aggregate of several arguments "args"
 * (a the aggregate as given, m its parts): found by its name and the
 * arguments' types, with the checks the one-argument path makes (a
 * combine function, a state of an SQL type, a built-in state type when
 * there is an initial value, EXECUTE on its functions).  count, sum, min,
 * max and avg of several arguments are no numeric aggregates: they are
 * looked up as any other, and do not exist.
 */
CREATE FUNCTION @extschema@._processor_parse_aggregate_n(a text, m text[], args text[])
RETURNS text[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fn text := regexp_replace(m[1], '\s', '', 'g');
    typs oid[] := '{}';
    typ oid;
    x text;
    tnames text;
    proc regprocedure;
    ag pg_aggregate;
    names text[];
    r oid[];
BEGIN
    FOREACH x IN ARRAY args LOOP
        -- The argument's type, without evaluating it (an outer join's NULL).
        EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_)::oid FROM (SELECT 1) AS d_ LEFT JOIN '
                       '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                       x) INTO typ;
        PERFORM @extschema@._processor_check_collation(a, x, typ);
        typs := typs || CASE WHEN typ = 'unknown'::regtype THEN 'text'::regtype::oid ELSE typ END;
    END LOOP;
    tnames := (SELECT string_agg(format_type(u.t, NULL), ', ' ORDER BY u.o) FROM unnest(typs) WITH ORDINALITY AS u(t, o));
    proc := to_regprocedure(format('%s(%s)', fn, tnames));
    IF proc IS NULL THEN
        -- a polymorphic aggregate whose types resolve from the arguments'
        proc := @extschema@._processor_poly_aggregate(fn, typs);
    END IF;
    IF proc IS NULL THEN
        -- An aggregate of another pseudo-type ("any") of that name (refused
        -- below, with why).
        names := parse_ident(fn);
        SELECT pr.oid INTO proc FROM pg_proc pr
         WHERE pr.proname = names[cardinality(names)] AND pr.prokind = 'a' AND pr.pronargs = cardinality(args)
           AND CASE WHEN cardinality(names) = 2 THEN pr.pronamespace = to_regnamespace(names[1])
                    ELSE pg_function_is_visible(pr.oid) END
           AND EXISTS (SELECT FROM unnest(pr.proargtypes) AS u(t) JOIN pg_type ty ON ty.oid = u.t WHERE ty.typtype = 'p')
           AND NOT EXISTS (SELECT FROM unnest(pr.proargtypes) AS u(t)
                            WHERE u.t IN ('anyelement'::regtype, 'anynonarray'::regtype, 'anyenum'::regtype,
                                          'anyarray'::regtype, 'anyrange'::regtype, 'anymultirange'::regtype,
                                          'anycompatible'::regtype, 'anycompatiblenonarray'::regtype,
                                          'anycompatiblearray'::regtype, 'anycompatiblerange'::regtype,
                                          'anycompatiblemultirange'::regtype))
         ORDER BY pr.oid LIMIT 1;
    END IF;
    IF proc IS NULL THEN
        RAISE EXCEPTION 'aggregate %(%) does not exist', m[1], tnames
            USING ERRCODE = 'undefined_function',
                  HINT = 'An aggregate of a window processor takes arguments of the types it takes (cast them), and is named with its schema unless it is in pg_catalog.';
    END IF;
    ag := @extschema@._processor_combinable_aggregate(proc);
    -- the argument and state types, a polymorphic aggregate's resolved
    -- (internal is a pseudo-type too: kept sealed if it can be serialized)
    r := @extschema@._processor_agg_types(proc, ag, typs, true);
    ag.aggtranstype := r[cardinality(r)];
    PERFORM @extschema@._processor_check_aggregate_use(proc, ag);
    RETURN ARRAY[proc::text, btrim(m[2], E' \t\r\n'), m[3], (SELECT pr.proname::text FROM pg_proc pr WHERE pr.oid = proc),
                 CASE WHEN r[1:cardinality(typs)] <> (SELECT ARRAY(SELECT pg_catalog.unnest(pr.proargtypes)) FROM pg_proc pr WHERE pr.oid = proc)
                      THEN r[1:cardinality(typs)]::regtype[]::text END];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_parse_aggregate_n(text, text[], text[]) IS
'internal: an aggregate of several arguments of a window processor, checked as the caller, as _processor_parse_aggregate returns it';

/*
 * Aggregate i's arguments: the expressions (agg_args[i] split again for an
 * aggregate of several arguments, else agg_args[i] itself), their types
 * (the aggregate's argument types, or for a polymorphic aggregate the
 * types they resolved to, agg_types[i]; numeric for count, sum, min, max,
 * avg of numbers), and the columns a step keeps them in (x_<i>, or
 * x_<i>_<j> for several).
 */
CREATE FUNCTION @extschema@._processor_agg_argv(p @extschema@.processor_catalog, i integer,
                                                OUT exprs text[], OUT types text[], OUT cols text[])
RETURNS record
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    argtypes oid[];
BEGIN
    IF strpos(p.agg_funcs[i], '(') = 0 THEN
        exprs := ARRAY[p.agg_args[i]];
        types := ARRAY['numeric'];
        cols := ARRAY['x_' || i];
        RETURN;
    END IF;
    SELECT pr.proargtypes::oid[] INTO argtypes FROM pg_proc pr WHERE pr.oid = p.agg_funcs[i]::regprocedure;
    -- a polymorphic aggregate: the types its arguments resolved to
    IF p.agg_types[i] IS NOT NULL THEN
        IF cardinality(p.agg_types[i]::regtype[]) <> cardinality(argtypes) THEN
            RAISE EXCEPTION 'aggregate % of processor "%" has argument types "%" that are not %',
                            p.agg_funcs[i], p.name, p.agg_types[i], cardinality(argtypes)
                USING ERRCODE = 'data_corrupted';
        END IF;
        argtypes := p.agg_types[i]::regtype[]::oid[];
    END IF;
    types := (SELECT array_agg(format_type(u.t, -1) ORDER BY u.o) FROM unnest(argtypes) WITH ORDINALITY AS u(t, o));
    IF cardinality(argtypes) = 1 THEN
        exprs := ARRAY[p.agg_args[i]];
        cols := ARRAY['x_' || i];
        RETURN;
    END IF;
    exprs := @extschema@._processor_split_args(p.agg_args[i]);
    IF exprs IS NULL OR cardinality(exprs) <> cardinality(argtypes) THEN
        RAISE EXCEPTION 'aggregate % of processor "%" has arguments "%" that do not split into %',
                        p.agg_funcs[i], p.name, p.agg_args[i], cardinality(argtypes)
            USING ERRCODE = 'data_corrupted';
    END IF;
    cols := (SELECT array_agg(format('x_%s_%s', i, j) ORDER BY j) FROM generate_series(1, cardinality(argtypes)) j);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_agg_argv(@extschema@.processor_catalog, integer) IS
'internal: the argument expressions of a window processor''s aggregate, their types, and the columns a step keeps them in';

/*
 * The type of aggregate i's state ('state') or first argument
 * ('argument'); a polymorphic aggregate's resolved from the types of its
 * arguments (agg_types[i]).
 */
CREATE FUNCTION @extschema@._processor_agg_type(p @extschema@.processor_catalog, i integer, what text)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN strpos(p.agg_funcs[i], '(') = 0 THEN 'numeric'
                -- an internal state is kept as sealed bytes (src/agg_state.c)
                WHEN what = 'state' THEN (SELECT CASE WHEN g.aggtranstype = 'internal'::regtype THEN 'bytea'
                                                      WHEN p.agg_types[i] IS NULL THEN format_type(g.aggtranstype, -1)
                                                      ELSE format_type((@extschema@._processor_poly_resolve(
                                                                            ARRAY(SELECT pg_catalog.unnest(pr.proargtypes)), p.agg_types[i]::regtype[]::oid[],
                                                                            ARRAY[g.aggtranstype::oid], false))[1], -1) END
                                            FROM pg_aggregate g JOIN pg_proc pr ON pr.oid = g.aggfnoid
                                           WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure)
                WHEN p.agg_types[i] IS NOT NULL THEN format_type((p.agg_types[i]::regtype[])[1], -1)
                ELSE (SELECT format_type(pr.proargtypes[0], -1) FROM pg_proc pr
                       WHERE pr.oid = p.agg_funcs[i]::regprocedure) END
$$;
COMMENT ON FUNCTION @extschema@._processor_agg_type(@extschema@.processor_catalog, integer, text) IS
'internal: the type of the state or the argument of a window processor''s aggregate';

/*
 * The step's pieces for aggregate i, one with a combine function (see
 * _processor_step_sql): {the arguments, the batch's partials, the merge
 * into a window row, a record as a partial (sessions), partials combined,
 * a window closed in the step (its row and the batch's partial)}.
 */
CREATE FUNCTION @extschema@._processor_agg_sql(p @extschema@.processor_catalog, i integer)
RETURNS text[]
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part text := format('@extschema@.%I', 'processor_' || p.processor_id || '_partial_' || i);
    comb text := format('@extschema@.%I', 'processor_' || p.processor_id || '_combine_' || i);
    av record := @extschema@._processor_agg_argv(p, i);
    isstrict boolean;
    xs text;
    xl text := array_to_string(av.cols, ', ');
    nn text;
BEGIN
    xs := (SELECT string_agg(format(', CASE WHEN t_.in_ THEN (%s)::%s END AS %s', u.x, u.t, u.c), '' ORDER BY u.o)
             FROM unnest(av.exprs, av.types, av.cols) WITH ORDINALITY AS u(x, t, c, o));
    IF cardinality(av.cols) > 1 THEN
        /*
         * Several arguments: n_<i> counts the records the transition
         * function takes, as the aggregate does: with a strict one, those
         * whose arguments are all non-NULL (PostgreSQL skips the others);
         * else every record.  (One argument keeps count(x_<i>), as before.)
         */
        isstrict := (SELECT pr.proisstrict FROM pg_aggregate g JOIN pg_proc pr ON pr.oid = g.aggtransfn
                    WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure);
        nn := (SELECT string_agg(format('%s IS NOT NULL', c), ' AND ') FROM unnest(av.cols) c);
        RETURN ARRAY[
            xs,
            format(', %s(%s), count(*)%s', part, xl, CASE WHEN isstrict THEN format(' FILTER (WHERE %s)', nn) ELSE '' END),
            format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = (SELECT %2$s(c_.s_) FROM (VALUES (t.v_%1$s), (excluded.v_%1$s)) AS c_(s_))',
                   i, comb),
            format(', (SELECT %2$s(%3$s) FROM (VALUES (%4$s)) AS c_(%5$s)) AS v_%1$s, %6$s::bigint AS n_%1$s',
                   i, part, (SELECT string_agg('c_.' || c, ', ') FROM unnest(av.cols) c),
                   (SELECT string_agg('e.' || c, ', ') FROM unnest(av.cols) c), xl,
                   CASE WHEN isstrict THEN format('CASE WHEN %s THEN 1 ELSE 0 END',
                                                (SELECT string_agg(format('e.%s IS NOT NULL', c), ' AND ') FROM unnest(av.cols) c))
                        ELSE '1' END),
            format(', %s(v_%s), sum(n_%s)::bigint', comb, i, i),
            format(', (SELECT %2$s(c_.s_) FROM (VALUES (dc.v_%1$s), (cl.v_%1$s)) AS c_(s_)), coalesce(dc.n_%1$s, 0) + coalesce(cl.n_%1$s, 0)',
                   i, comb)];
    END IF;
    RETURN ARRAY[
        xs,
        format(', %s(x_%s), count(x_%s)', part, i, i),
        format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = (SELECT %2$s(c_.s_) FROM (VALUES (t.v_%1$s), (excluded.v_%1$s)) AS c_(s_))',
               i, comb),
        format(', (SELECT %2$s(c_.x_) FROM (VALUES (e.x_%1$s)) AS c_(x_)) AS v_%1$s, CASE WHEN e.x_%1$s IS NULL THEN 0 ELSE 1 END::bigint AS n_%1$s',
               i, part),
        format(', %s(v_%s), sum(n_%s)::bigint', comb, i, i),
        -- a window closed in the step (the step's "fmerge"): its row and
        -- the batch's partial, either of which may be missing
        format(', (SELECT %2$s(c_.s_) FROM (VALUES (dc.v_%1$s), (cl.v_%1$s)) AS c_(s_)), coalesce(dc.n_%1$s, 0) + coalesce(cl.n_%1$s, 0)',
               i, comb)];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_agg_sql(@extschema@.processor_catalog, integer) IS
'internal: the SQL a step of a window processor uses for one of its aggregates that has a combine function';

/*
 * Aggregate i's value in a window row "rel" (as written to the sink).  An
 * aggregate with a combine function and a final function is finished by
 * the processor's final aggregate, bound to the final function's OID when
 * it was made (a call of the function by name could reach another
 * function of that name put in the way since).  Whether there is one is
 * the processor's own: the original aggregate may have been replaced
 * (CREATE OR REPLACE AGGREGATE) with or without a final function since.
 */
CREATE FUNCTION @extschema@._processor_agg_out(p @extschema@.processor_catalog, i integer, rel text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fin text := format('@extschema@.%I', 'processor_' || p.processor_id || '_final_' || i);
BEGIN
    IF strpos(p.agg_funcs[i], '(') > 0 THEN
        -- Whether there is a final function: whether the processor's final
        -- aggregate was made (_processor_create_state), not the live
        -- original's.  A sealed state always has one (a sealed state must
        -- never be written as if it were the value).
        IF NOT EXISTS (SELECT FROM pg_proc pr
                        WHERE pr.pronamespace = '@extschema@'::regnamespace
                          AND pr.proname = 'processor_' || p.processor_id || '_final_' || i)
           AND NOT EXISTS (SELECT FROM pg_proc pr JOIN pg_aggregate g ON g.aggfnoid = pr.oid
                            WHERE pr.pronamespace = '@extschema@'::regnamespace
                              AND pr.proname = 'processor_' || p.processor_id || '_combine_' || i
                              AND g.aggfinalfn = '@extschema@._agg_state_seal(internal)'::regprocedure) THEN
            RETURN format('%s.v_%s', rel, i);
        END IF;
        RETURN format('(SELECT %s(c_.s_) FROM (VALUES (%s.v_%s)) AS c_(s_))', fin, rel, i);
    END IF;
    RETURN CASE p.agg_funcs[i] WHEN 'count' THEN format('%s.n_%s', rel, i)
                               WHEN 'avg' THEN format('%1$s.v_%2$s / NULLIF(%1$s.n_%2$s, 0)', rel, i)
                               ELSE format('%s.v_%s', rel, i) END;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_agg_out(@extschema@.processor_catalog, integer, text) IS
'internal: the value of a window processor''s aggregate in a window row';

/*
 * The state a window processor has besides its windows, made by
 * __register_processor as the extension owner and given to the processor's
 * owner: the partial, combine and final aggregates of its aggregates
 * with a combine function (for an internal state, aggregates that seal
 * and check it, with the database's key made if this is the first), and
 * a sliding window's record buffer.  The aggregates' functions are
 * checked again here (the spec may not come from
 * create_window_processor); the owner needs EXECUTE on them to run them.
 */
CREATE FUNCTION @extschema@._processor_create_state(p @extschema@.processor_catalog, caller regrole)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ag pg_aggregate;
    i integer;
    argt text;
    st text;
    part text;
    comb text;
    fin text;
    sup text;
    sealed boolean;
    declared oid[];
    actual oid[];
    r oid[];
    bad oid;
    records text := format('@extschema@.%I', 'processor_' || p.processor_id || '_records');
BEGIN
    FOR i IN 1 .. cardinality(p.agg_funcs) LOOP
        CONTINUE WHEN strpos(p.agg_funcs[i], '(') = 0;
        SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure;
        IF NOT FOUND OR ag.aggkind <> 'n' OR ag.aggcombinefn = 0 THEN
            RAISE EXCEPTION 'aggregate % cannot be combined', p.agg_funcs[i] USING ERRCODE = 'feature_not_supported';
        END IF;
        /*
         * The argument and state types, a polymorphic aggregate's resolved
         * from the argument types the specification gives (agg_types[i]),
         * which must be what they resolve to (the types of a resolved
         * signature resolve to themselves) and of one type where the
         * anycompatible family takes a common one: this runs no query
         * over the user's types.  A final function with extra arguments,
         * a state that cannot be sealed or a pseudo-type are refused.
         */
        declared := (SELECT ARRAY(SELECT pg_catalog.unnest(pr.proargtypes)) FROM pg_proc pr WHERE pr.oid = p.agg_funcs[i]::regprocedure);
        actual := coalesce(p.agg_types[i]::regtype[]::oid[], declared);
        r := @extschema@._processor_agg_types(p.agg_funcs[i]::regprocedure, ag, actual, false);
        IF r[1:cardinality(declared)] <> actual THEN
            RAISE EXCEPTION 'aggregate % cannot take arguments of types %', p.agg_funcs[i], p.agg_types[i]
                USING ERRCODE = 'datatype_mismatch';
        END IF;
        -- USAGE on the types, the caller's (as _processor_agg_types checks
        -- it when parsing; this runs as the extension's owner).
        SELECT u INTO bad FROM unnest(r) u WHERE NOT has_type_privilege(caller, u, 'USAGE') LIMIT 1;
        IF bad IS NOT NULL THEN
            RAISE EXCEPTION 'permission denied for type %', format_type(bad, NULL) USING ERRCODE = 'insufficient_privilege',
                DETAIL = format('A window keeps the arguments and state of aggregate %s in columns and aggregates of their types, which need USAGE on them.', p.agg_funcs[i]),
                HINT = 'Ask the type''s owner to grant USAGE on it, or cast the argument to another type.';
        END IF;
        ag.aggtranstype := r[cardinality(r)];
        -- This runs as the extension's owner: no input function of a type
        -- of the user's may read an INITCOND here (_processor_parse_aggregate).
        IF ag.agginitval IS NOT NULL AND ag.aggtranstype::oid >= 16384 THEN
            RAISE EXCEPTION 'the initial state of aggregate % cannot be set up in a window', p.agg_funcs[i]
                USING ERRCODE = 'feature_not_supported';
        END IF;
        argt := array_to_string((@extschema@._processor_agg_argv(p, i)).types, ', ');
        part := 'processor_' || p.processor_id || '_partial_' || i;
        comb := 'processor_' || p.processor_id || '_combine_' || i;
        fin := 'processor_' || p.processor_id || '_final_' || i;
        sealed := ag.aggtranstype = 'internal'::regtype;
        IF sealed THEN
            /*
             * An internal state, kept sealed (src/agg_state.c): the
             * partial and combine aggregates end in _agg_state_seal, the
             * combine and final ones take sealed states with
             * _agg_state_merge; each carries the aggregate's combine,
             * serial and deserial functions, which those two call.  The
             * database's key first, if this is the first; but not a new key
             * beside processors whose states the lost one sealed, which it
             * would leave unreadable (the key is restored from a dump).
             */
            IF NOT EXISTS (SELECT FROM @extschema@.processor_state_key) THEN
                IF EXISTS (SELECT FROM pg_aggregate g
                            WHERE g.aggfinalfn = '@extschema@._agg_state_seal(internal)'::regprocedure) THEN
                    RAISE EXCEPTION 'the key sealing window states is missing'
                        USING ERRCODE = 'object_not_in_prerequisite_state',
                              DETAIL = 'Processors made before keep states sealed with that key; a new key would leave them unreadable.',
                              HINT = 'Restore the row of eventlog.processor_state_key from a dump of this database, or drop the processors whose aggregates have an internal state.';
                END IF;
                INSERT INTO @extschema@.processor_state_key (key)
                VALUES (pg_catalog.sha256(pg_catalog.uuid_send(pg_catalog.gen_random_uuid())
                                          || pg_catalog.uuid_send(pg_catalog.gen_random_uuid())
                                          || pg_catalog.uuid_send(pg_catalog.gen_random_uuid())))
                ON CONFLICT (id) DO NOTHING;
            END IF;
            st := 'bytea';
            sup := format(', COMBINEFUNC = %s, SERIALFUNC = %s, DESERIALFUNC = %s',
                          ag.aggcombinefn::text, ag.aggserialfn::text, ag.aggdeserialfn::text);
            EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = internal, FINALFUNC = @extschema@._agg_state_seal%s)',
                           part, argt, ag.aggtransfn::text, sup);
            EXECUTE format('CREATE AGGREGATE @extschema@.%I (bytea) (SFUNC = @extschema@._agg_state_merge, STYPE = internal, FINALFUNC = @extschema@._agg_state_seal%s)',
                           comb, sup);
            EXECUTE format('CREATE AGGREGATE @extschema@.%I (bytea) (SFUNC = @extschema@._agg_state_merge, STYPE = internal, FINALFUNC = %s, FINALFUNC_MODIFY = %s%s)',
                           fin, ag.aggfinalfn::text,
                           CASE ag.aggfinalmodify WHEN 'r' THEN 'READ_ONLY' WHEN 's' THEN 'SHAREABLE' ELSE 'READ_WRITE' END, sup);
        ELSE
            st := format_type(ag.aggtranstype, -1);
            EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s%s)',
                           part, argt, ag.aggtransfn::text, st,
                           CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
            -- Combining starts from the aggregate's initial value, as
            -- PostgreSQL's own combine phase does.
            EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s%s)',
                           comb, st, ag.aggcombinefn::text, st,
                           CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
            IF ag.aggfinalfn <> 0 THEN
                EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s, FINALFUNC = %s%s)',
                               fin, st, ag.aggcombinefn::text, st, ag.aggfinalfn::text,
                               CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
            END IF;
        END IF;
        -- CREATE AGGREGATE finds its functions by name and argument types:
        -- a function of that name with closer argument types, put in the
        -- way by a role with CREATE on the schema, would be called instead
        -- of the aggregate's own.  Refuse unless each is the same function.
        IF EXISTS (SELECT FROM pg_aggregate g JOIN pg_proc pr ON pr.oid = g.aggfnoid
                    WHERE pr.pronamespace = '@extschema@'::regnamespace
                      AND pr.proname IN (part, comb, fin)
                      AND (g.aggtransfn::oid <> CASE WHEN pr.proname = part THEN ag.aggtransfn::oid
                                                     WHEN sealed THEN '@extschema@._agg_state_merge(internal, bytea)'::regprocedure::oid
                                                     ELSE ag.aggcombinefn::oid END
                           OR g.aggfinalfn::oid <> CASE WHEN pr.proname = fin THEN ag.aggfinalfn::oid
                                                        WHEN sealed THEN '@extschema@._agg_state_seal(internal)'::regprocedure::oid
                                                        ELSE 0 END
                           OR (sealed AND (g.aggcombinefn <> ag.aggcombinefn OR g.aggserialfn <> ag.aggserialfn
                                           OR g.aggdeserialfn <> ag.aggdeserialfn)))) THEN
            RAISE EXCEPTION 'the functions of aggregate % are not found by their names', p.agg_funcs[i]
                USING ERRCODE = 'ambiguous_function',
                      DETAIL = 'Another function of the same name as the aggregate''s transition, combine, serial, deserial or final function takes closer argument types.',
                      HINT = 'Drop the other function, or keep the aggregate''s functions in a schema where only trusted roles have CREATE.';
        END IF;
        -- The owner's, and only the owner's (steps run as the owner): no
        -- other role has a use for them, nor should seal states in their
        -- slot (src/agg_state.c).
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s', part, argt, caller);
        EXECUTE format('REVOKE ALL ON FUNCTION @extschema@.%I (%s) FROM PUBLIC', part, argt);
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s', comb, st, caller);
        EXECUTE format('REVOKE ALL ON FUNCTION @extschema@.%I (%s) FROM PUBLIC', comb, st);
        IF ag.aggfinalfn <> 0 THEN
            EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s', fin, st, caller);
            EXECUTE format('REVOKE ALL ON FUNCTION @extschema@.%I (%s) FROM PUBLIC', fin, st);
        END IF;
    END LOOP;
    IF p.window_type = 'sliding' THEN
        EXECUTE format('CREATE TABLE %s (group_key jsonb NOT NULL, ts timestamptz NOT NULL, lim timestamptz NOT NULL%s)',
                       records,
                       (SELECT string_agg(format(', %s %s', u.c, u.t), '' ORDER BY j, u.o)
                          FROM generate_series(1, cardinality(p.agg_funcs)) j,
                               LATERAL @extschema@._processor_agg_argv(p, j) AS av,
                               LATERAL unnest(av.cols, av.types) WITH ORDINALITY AS u(c, t, o)));
        EXECUTE format('CREATE INDEX ON %s (group_key, ts)', records);
        EXECUTE format('COMMENT ON TABLE %s IS %L', records,
                       format('pg_eventlog processor %s: the records its sliding windows may still need (group key, event time, the watermark it came under, the aggregates'' arguments)', p.name));
        EXECUTE format('ALTER TABLE %s OWNER TO %s', records, caller);
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_create_state(@extschema@.processor_catalog, regrole) IS
'internal: makes a window processor''s partial, combine and final aggregates and a sliding window''s record buffer, owned by the processor''s owner';
REVOKE ALL ON FUNCTION @extschema@._processor_create_state(@extschema@.processor_catalog, regrole) FROM PUBLIC;

CREATE FUNCTION @extschema@._processor_drop_aggregates(p @extschema@.processor_catalog)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT pr.oid FROM pg_proc pr
              WHERE pr.pronamespace = '@extschema@'::regnamespace
                AND pr.proname ~ ('^processor_' || p.processor_id || '_(partial|combine|final)_[0-9]+$') LOOP
        EXECUTE format('DROP AGGREGATE %s', f);
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_drop_aggregates(@extschema@.processor_catalog) IS
'internal: drops a window processor''s partial, combine and final aggregates';
REVOKE ALL ON FUNCTION @extschema@._processor_drop_aggregates(@extschema@.processor_catalog) FROM PUBLIC;

/*
 * The body of a sliding window's step (after the CTE "e" of
 * _processor_step_sql; $8 the size, $9 how late a record may be, $12
 * allowed_lateness): Kafka Streams' SlidingWindows, with PostgreSQL's clock
 * tick (one microsecond, timestamptz's: "tick") for Kafka's millisecond, so
 * that a right window starts at the first time after its record that a
 * record can have, as in Kafka Streams (docs/streams.md).  A group's
 * windows are [t - size, t] (left) and [t + tick, t + tick + size] (right)
 * for each record time t, both ends in; the two are the same window when
 * their starts are (a window is its start and group: all have the length
 * size).  A record at t counts in the window of its key ending at e
 * (start <= t <= e) unless the watermark it came under (lim_) is past
 * e + $9: a window with both ends in is closed when the watermark passes
 * its end (Kafka Streams: stream time > end + grace), so that a record at
 * the watermark counts in its own window (with processing time, every
 * record).  A left window exists when a record at its end counts in it; a
 * right window when a record at its start - tick is in the buffer (a
 * record is, unless late: its right window is open) and some record counts
 * in it (Kafka Streams makes no empty right window).  The records that are
 * not late go to the buffer ("nr"); the windows the batch changes ("c":
 * from each pair of a new record and a record of its key within size after
 * it, the left window of the later, which may hold the new one; within
 * size + tick before it, the right window of the earlier, which may; and
 * each new record's own right window when a record comes after it in it,
 * unless that window's row exists, as the record does not change it) are
 * recomputed from the buffer and the batch ("ar", only the keys and times
 * the batch can reach), and replace their rows.  One pass over the pairs
 * makes both kinds of windows (a pair makes one), and a semi-join the
 * right windows of the new records, so that records with no other within
 * size (sparse keys) cost about what they did with left windows only.
 */
CREATE FUNCTION @extschema@._processor_sliding_sql(p @extschema@.processor_catalog, partials text, cols text, sets text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    records text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_records');
    windows text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_windows');
    -- every aggregate's argument columns, as _processor_create_state made them
    ecols text := (SELECT string_agg(', e.' || u.c, '' ORDER BY i, u.o)
                     FROM generate_series(1, cardinality(p.agg_funcs)) i,
                          LATERAL @extschema@._processor_agg_argv(p, i) AS av,
                          LATERAL unnest(av.cols) WITH ORDINALITY AS u(c, o));
BEGIN
    RETURN format($f$
nr AS (SELECT e.gk_ AS group_key, e.ts_ AS ts, e.lim_ AS lim %1$s FROM e WHERE e.in_ AND NOT e.late_),
ins AS (INSERT INTO %2$s SELECT * FROM nr),
ar AS (SELECT r.* FROM %2$s AS r
        WHERE r.group_key IN (SELECT nr.group_key FROM nr)
          AND r.ts >= (SELECT min(nr.ts) FROM nr) - $8 - %8$L::interval
          AND r.ts <= (SELECT max(nr.ts) FROM nr) + $8 + %8$L::interval
       UNION ALL SELECT * FROM nr),
c AS (SELECT v.gk_, v.we_, bool_or(v.r_) AS r_
        FROM (SELECT a.group_key AS gk_,
                     CASE WHEN a.ts >= nr.ts THEN a.ts ELSE a.ts + %8$L::interval + $8 END AS we_,
                     a.ts < nr.ts AS r_
                FROM nr JOIN ar AS a ON a.group_key = nr.group_key
                                    AND a.ts >= nr.ts - $8 - %8$L::interval AND a.ts <= nr.ts + $8
               WHERE CASE WHEN a.ts >= nr.ts THEN a.ts ELSE a.ts + %8$L::interval + $8 END + $9 >= nr.lim
              UNION ALL
              SELECT nr.group_key, nr.ts + %8$L::interval + $8, true FROM nr
               WHERE EXISTS (SELECT FROM ar AS a WHERE a.group_key = nr.group_key
                                                   AND a.ts > nr.ts AND a.ts <= nr.ts + $8 + %8$L::interval)
                 AND NOT EXISTS (SELECT FROM %4$s AS w WHERE w.window_start = nr.ts + %8$L::interval
                                                          AND w.group_key = nr.group_key)) AS v
       GROUP BY v.gk_, v.we_),
agg AS (SELECT c.we_ - $8, c.we_, c.gk_ %3$s, c.we_ + $12 < (SELECT ct.c_ FROM ct)
          FROM c JOIN ar AS a ON a.group_key = c.gk_ AND a.ts >= c.we_ - $8 AND a.ts <= c.we_ AND c.we_ + $9 >= a.lim
         GROUP BY c.we_, c.gk_, c.r_ HAVING c.r_ OR bool_or(a.ts = c.we_)),
u AS (INSERT INTO %4$s AS t (window_start, window_end, group_key %5$s, closed)
      SELECT * FROM agg
      ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %6$s,
                  closed = t.closed OR excluded.closed
      RETURNING t.*),
%7$s,$f$,
        ecols, records, partials, windows, cols, sets,
        @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL),
        -- the tick (_processor_step_sql and _processor_close_sql use it too)
        '1 microsecond');
END
$$;
COMMENT ON FUNCTION @extschema@._processor_sliding_sql(@extschema@.processor_catalog, text, text, text) IS
'internal: the part of a sliding window processor''s step that buffers its records and recomputes the windows they change';

/*
 * A window processor's windows: the open ones, and the closed ones kept for
 * the retention (closed).  They hold what the processor read, so only
 * roles with the privileges of its owner see them, as its state tables.
 * The body of eventlog.processor_windows, which checks that and runs it as
 * the owner in a security-restricted operation (src/processor_owner.c):
 * the aggregates' final functions, and the casts to json of their
 * results, are the owner's code.
 */
CREATE FUNCTION @extschema@._processor_windows(name text)
RETURNS TABLE (window_start timestamptz, window_end timestamptz, group_key jsonb, closed boolean, aggregates jsonb)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
    jv text := '';
    i integer;
BEGIN
    PERFORM @extschema@._processor_owner_step(p.processor_id);
    IF p.kind <> 'window' THEN
        RAISE EXCEPTION 'processor "%" has no windows', p.name USING ERRCODE = 'wrong_object_type',
            DETAIL = 'Only window processors (eventlog.create_window_processor) keep windows.';
    END IF;
    FOR i IN 1 .. cardinality(p.agg_funcs) LOOP
        jv := jv || format(' || pg_catalog.jsonb_build_object(%L, %s)', p.agg_names[i], @extschema@._processor_agg_out(p, i, 'u'));
    END LOOP;
    RETURN QUERY EXECUTE format(
        'SELECT u.window_start, u.window_end, u.group_key, u.closed, ''{}''::jsonb %s '
        '  FROM @extschema@.%I AS u ORDER BY u.window_start, u.group_key', jv, 'processor_' || p.processor_id || '_windows');
END
$$;
COMMENT ON FUNCTION @extschema@._processor_windows(text) IS
'internal: the body of eventlog.processor_windows, run by its gate as the processor''s owner (src/processor_owner.c)';
REVOKE ALL ON FUNCTION @extschema@._processor_windows(text) FROM PUBLIC;

CREATE FUNCTION @extschema@.processor_windows(name text)
RETURNS TABLE (window_start timestamptz, window_end timestamptz, group_key jsonb, closed boolean, aggregates jsonb)
AS 'MODULE_PATHNAME', 'el_processor_owner_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.processor_windows(text) IS
'a window processor''s windows and their aggregates by name: the open ones, and the closed ones kept for the retention (closed); for roles with the privileges of its owner; the final functions run as its owner in a security-restricted operation';
