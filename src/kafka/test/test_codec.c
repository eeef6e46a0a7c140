/*-------------------------------------------------------------------------
 *
 * test_codec.c
 *	  Unit tests of the Kafka gateway's codec layer, printed as TAP:
 *	  wire primitives, CRC-32C, the four codecs, RecordBatch decoding and
 *	  building (with fixtures from kafka-python and librdkafka).  Exit
 *	  status 1 if any test failed.
 *
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

int			t_failed = 0;
static int	t_count = 0;

bool
t_ok(bool cond, const char *file, int line, const char *fmt,...)
{
	va_list		ap;

	t_count++;
	printf("%sok %d - ", cond ? "" : "not ", t_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (!cond)
	{
		printf(" (%s:%d)", file, line);
		t_failed++;
	}
	printf("\n");
	return cond;
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

uint8_t *
t_fixture(const char *name, size_t *len)
{
	char		path[1024];
	FILE	   *f;
	uint8_t    *buf = NULL;
	size_t		n = 0,
				cap = 0;
	int			c,
				hi = -1;

	snprintf(path, sizeof(path), "%s/%s", FIXTURE_DIR, name);
	f = fopen(path, "r");
	if (f == NULL)
	{
		printf("Bail out! cannot open fixture %s\n", path);
		exit(1);
	}
	while ((c = fgetc(f)) != EOF)
	{
		int			v = hexval(c);

		if (v < 0)
			continue;
		if (hi < 0)
		{
			hi = v;
			continue;
		}
		if (n == cap)
		{
			cap = cap ? cap * 2 : 256;
			buf = realloc(buf, cap);
			if (buf == NULL)
				abort();
		}
		buf[n++] = (uint8_t) (hi << 4 | v);
		hi = -1;
	}
	fclose(f);
	*len = n;
	return buf;
}

bool
t_slice_is(KSlice s, const char *str)
{
	size_t		n = strlen(str);

	return s.len >= 0 && (size_t) s.len == n && (n == 0 || memcmp(s.ptr, str, n) == 0);
}

uint64_t
t_rand(uint64_t *state)
{
	/* xorshift64* */
	uint64_t	x = *state ? *state : 0x9E3779B97F4A7C15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

void
t_fill_random(uint8_t *buf, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t) (t_rand(&seed) >> 56);
}

int
main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_wire();
	test_crc32c();
	test_compress();
	test_records();
	test_json();
	printf("1..%d\n", t_count);
	if (t_failed)
		printf("# %d of %d tests failed\n", t_failed, t_count);
	return t_failed ? 1 : 0;
}
