/*-------------------------------------------------------------------------
 *
 * json_check.c
 *	  UTF-8 and JSON checks of what Kafka clients send to JSON topics, and
 *	  quoting a string as JSON.
 *
 * The JSON check is iterative (an explicit stack of open containers, at
 * most K_JSON_MAX_DEPTH deep), so a hostile value cannot exhaust the
 * connection thread's stack, and it is linear in the value's length.  It
 * accepts what PostgreSQL's jsonb input accepts: RFC 8259 JSON in UTF-8,
 * minus the \u0000 escape (text cannot hold it) and unpaired surrogate
 * escapes (they are no character).
 *
 *-------------------------------------------------------------------------
 */
#include "json_check.h"

#include <stdio.h>
#include <string.h>

bool
k_utf8_valid(const uint8_t *s, size_t len, char *errmsg, size_t errlen)
{
	size_t		i = 0;

	while (i < len)
	{
		uint8_t		c = s[i];
		int			n;
		uint32_t	cp;
		uint32_t	min;

		if (c == 0)
		{
			snprintf(errmsg, errlen, "a NUL byte at byte %zu", i);
			return false;
		}
		if (c < 0x80)
		{
			i++;
			continue;
		}
		if ((c & 0xE0) == 0xC0)
		{
			n = 1;
			cp = c & 0x1F;
			min = 0x80;
		}
		else if ((c & 0xF0) == 0xE0)
		{
			n = 2;
			cp = c & 0x0F;
			min = 0x800;
		}
		else if ((c & 0xF8) == 0xF0)
		{
			n = 3;
			cp = c & 0x07;
			min = 0x10000;
		}
		else
			goto bad;
		if (len - i <= (size_t) n)
			goto bad;
		for (int k = 1; k <= n; k++)
		{
			if ((s[i + k] & 0xC0) != 0x80)
				goto bad;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		/* Overlong forms, surrogates and code points past U+10FFFF. */
		if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
			goto bad;
		i += (size_t) n + 1;
	}
	return true;

bad:
	snprintf(errmsg, errlen, "invalid UTF-8 at byte %zu", i);
	return false;
}

static void
skip_ws(const uint8_t *s, size_t len, size_t *pos)
{
	while (*pos < len && (s[*pos] == ' ' || s[*pos] == '\t' ||
						  s[*pos] == '\n' || s[*pos] == '\r'))
		(*pos)++;
}

static int
hex4(const uint8_t *s, size_t len, size_t pos)
{
	int			v = 0;

	if (len - pos < 4)
		return -1;
	for (int i = 0; i < 4; i++)
	{
		uint8_t		c = s[pos + i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* A string from its opening quote; NULL, or what is wrong with it. */
static const char *
check_string(const uint8_t *s, size_t len, size_t *pos)
{
	(*pos)++;					/* the opening quote */
	while (*pos < len)
	{
		uint8_t		c = s[*pos];

		if (c == '"')
		{
			(*pos)++;
			return NULL;
		}
		if (c < 0x20)
			return "a control character in a string";
		if (c != '\\')
		{
			(*pos)++;
			continue;
		}
		if (len - *pos < 2)
			return "an unfinished escape";
		c = s[*pos + 1];
		if (c == 'u')
		{
			int			u = hex4(s, len, *pos + 2);

			if (u < 0)
				return "a \\u escape without four hex digits";
			if (u == 0)
				return "\\u0000, which text cannot hold";
			*pos += 6;
			if (u >= 0xDC00 && u <= 0xDFFF)
				return "a low surrogate escape without a high one";
			if (u >= 0xD800 && u <= 0xDBFF)
			{
				int			lo;

				if (len - *pos < 2 || s[*pos] != '\\' || s[*pos + 1] != 'u' ||
					(lo = hex4(s, len, *pos + 2)) < 0xDC00 || lo > 0xDFFF)
					return "a high surrogate escape without a low one";
				*pos += 6;
			}
			continue;
		}
		if (strchr("\"\\/bfnrt", c) == NULL || c == '\0')
			return "an unknown escape";
		*pos += 2;
	}
	return "an unterminated string";
}

static const char *
check_number(const uint8_t *s, size_t len, size_t *pos)
{
	size_t		p = *pos;

	if (p < len && s[p] == '-')
		p++;
	if (p < len && s[p] == '0')
		p++;
	else if (p < len && s[p] >= '1' && s[p] <= '9')
		while (p < len && s[p] >= '0' && s[p] <= '9')
			p++;
	else
		return "an unexpected character";
	if (p < len && s[p] == '.')
	{
		p++;
		if (p >= len || s[p] < '0' || s[p] > '9')
			return "a number without digits after its point";
		while (p < len && s[p] >= '0' && s[p] <= '9')
			p++;
	}
	if (p < len && (s[p] == 'e' || s[p] == 'E'))
	{
		p++;
		if (p < len && (s[p] == '+' || s[p] == '-'))
			p++;
		if (p >= len || s[p] < '0' || s[p] > '9')
			return "a number without digits in its exponent";
		while (p < len && s[p] >= '0' && s[p] <= '9')
			p++;
	}
	*pos = p;
	return NULL;
}

static bool
literal(const uint8_t *s, size_t len, size_t *pos, const char *word)
{
	size_t		n = strlen(word);

	if (len - *pos < n || memcmp(s + *pos, word, n) != 0)
		return false;
	*pos += n;
	return true;
}

bool
k_json_valid(const uint8_t *s, size_t len, char *errmsg, size_t errlen)
{
	char		stack[K_JSON_MAX_DEPTH];
	int			depth = 0;
	size_t		pos = 0;
	const char *why = NULL;

	if (!k_utf8_valid(s, len, errmsg, errlen))
		return false;

	skip_ws(s, len, &pos);
value:
	if (pos >= len)
	{
		why = "the end of the value where a value was expected";
		goto bad;
	}
	switch (s[pos])
	{
		case '{':
		case '[':
			if (depth == K_JSON_MAX_DEPTH)
			{
				why = "nesting deeper than the gateway accepts";
				goto bad;
			}
			stack[depth++] = (char) s[pos++];
			skip_ws(s, len, &pos);
			if (pos < len && s[pos] == (stack[depth - 1] == '{' ? '}' : ']'))
			{
				pos++;
				depth--;
				goto after;
			}
			if (stack[depth - 1] == '{')
				goto member;
			goto value;
		case '"':
			why = check_string(s, len, &pos);
			break;
		case 't':
			why = literal(s, len, &pos, "true") ? NULL : "an unexpected character";
			break;
		case 'f':
			why = literal(s, len, &pos, "false") ? NULL : "an unexpected character";
			break;
		case 'n':
			why = literal(s, len, &pos, "null") ? NULL : "an unexpected character";
			break;
		default:
			why = check_number(s, len, &pos);
			break;
	}
	if (why)
		goto bad;

after:
	skip_ws(s, len, &pos);
	if (depth == 0)
	{
		if (pos == len)
			return true;
		why = "bytes after the value";
		goto bad;
	}
	if (pos < len && s[pos] == ',')
	{
		pos++;
		skip_ws(s, len, &pos);
		if (stack[depth - 1] == '{')
			goto member;
		goto value;
	}
	if (pos < len && s[pos] == (stack[depth - 1] == '{' ? '}' : ']'))
	{
		pos++;
		depth--;
		goto after;
	}
	why = pos < len ? "an unexpected character" : "the end of the value inside an object or array";
	goto bad;

member:
	/* An object's member: a string, a colon, then its value. */
	if (pos >= len || s[pos] != '"')
	{
		why = "an object key that is not a string";
		goto bad;
	}
	why = check_string(s, len, &pos);
	if (why)
		goto bad;
	skip_ws(s, len, &pos);
	if (pos >= len || s[pos] != ':')
	{
		why = "an object key without a colon";
		goto bad;
	}
	pos++;
	skip_ws(s, len, &pos);
	goto value;

bad:
	snprintf(errmsg, errlen, "invalid JSON at byte %zu: %s", pos, why);
	return false;
}

size_t
k_json_quote(const uint8_t *s, size_t len, uint8_t *out)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t    *o = out;

	*o++ = '"';
	for (size_t i = 0; i < len; i++)
	{
		uint8_t		c = s[i];

		if (c == '"' || c == '\\')
		{
			*o++ = '\\';
			*o++ = c;
		}
		else if (c < 0x20)
		{
			*o++ = '\\';
			*o++ = 'u';
			*o++ = '0';
			*o++ = '0';
			*o++ = (uint8_t) hex[c >> 4];
			*o++ = (uint8_t) hex[c & 15];
		}
		else
			*o++ = c;
	}
	*o++ = '"';
	return (size_t) (o - out);
}
