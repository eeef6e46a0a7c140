/*-------------------------------------------------------------------------
 *
 * test_json.c
 *	  Unit tests of json_check.c: the UTF-8 and JSON checks the gateway
 *	  runs on what producers send to JSON topics, and JSON quoting.  The
 *	  accepted and refused values are those of PostgreSQL's jsonb input.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "json_check.h"
#include "test_util.h"

static bool
json_ok(const char *s)
{
	char		msg[128];

	return k_json_valid((const uint8_t *) s, strlen(s), msg, sizeof(msg));
}

static bool
utf8_ok(const char *s, size_t len)
{
	char		msg[128];

	return k_utf8_valid((const uint8_t *) s, len, msg, sizeof(msg));
}

void
test_json(void)
{
	static const char *const good[] = {
		"1", "-0", "0.5", "1e10", "-1.25E-3", "true", "false", "null", "\"\"",
		"\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", "\"\\u00e9\\ud83d\\ude00\"", "\"\xc3\xa9\"",
		"[]", "{}", " [ 1 , { \"a\" : [ ] } , \"x\" ] ", "{\"a\":1,\"b\":{\"c\":[true,null]}}",
		"\t\r\n 7 \n",
	};
	static const char *const bad[] = {
		"", " ", "01", "1.", ".5", "1e", "+1", "-", "tru", "nul", "True", "'a'",
		"\"abc", "\"a\\x\"", "\"\\u12\"", "\"\\u0000\"", "\"\\udc00\"", "\"\\ud800\"",
		"\"\\ud800\\u0041\"", "\"tab\there\"", "[1,]", "[1 2]", "{\"a\"}", "{\"a\":}",
		"{a:1}", "{\"a\":1,}", "[", "]", "{", "1 2", "[1]]", "{}x", "\"\xff\"",
		"\"\xc0\xaf\"", "\"\xed\xa0\x80\"",
	};
	char	   *deep;
	char		buf[64];
	size_t		n;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		OK(json_ok(good[i]), "json: valid: %s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		OK(!json_ok(bad[i]), "json: invalid: %s", bad[i]);

	/* Nesting: up to the limit, and one more. */
	deep = malloc(2 * K_JSON_MAX_DEPTH + 4);
	memset(deep, '[', K_JSON_MAX_DEPTH);
	memset(deep + K_JSON_MAX_DEPTH, ']', K_JSON_MAX_DEPTH);
	deep[2 * K_JSON_MAX_DEPTH] = '\0';
	OK(json_ok(deep), "json: %d levels of nesting", K_JSON_MAX_DEPTH);
	memset(deep, '[', K_JSON_MAX_DEPTH + 1);
	memset(deep + K_JSON_MAX_DEPTH + 1, ']', K_JSON_MAX_DEPTH + 1);
	deep[2 * K_JSON_MAX_DEPTH + 2] = '\0';
	OK(!json_ok(deep), "json: one level more is refused");
	free(deep);

	/* A NUL byte inside the bytes (not a C string). */
	OK(!k_json_valid((const uint8_t *) "\"a\0b\"", 5, buf, sizeof(buf)), "json: a NUL byte");

	OK(utf8_ok("", 0), "utf8: empty");
	OK(utf8_ok("\xf0\x9f\x98\x80", 4), "utf8: a 4-byte character");
	OK(!utf8_ok("\xf4\x90\x80\x80", 4), "utf8: past U+10FFFF");
	OK(!utf8_ok("\xe0\x80\x80", 3), "utf8: overlong");
	OK(!utf8_ok("\xc3", 1), "utf8: cut short");
	OK(!utf8_ok("a\0", 2), "utf8: NUL");

	n = k_json_quote((const uint8_t *) "a\"\\\x01\xc3\xa9", 6, (uint8_t *) buf);
	OK(n == 15 && memcmp(buf, "\"a\\\"\\\\\\u0001\xc3\xa9\"", 15) == 0, "json: quoting");
}
