/*-------------------------------------------------------------------------
 *
 * bench_codec.c
 *	  Throughput of k_crc32c (SSE4.2 when present) against the portable
 *	  slice-by-8 loop and a one-table bytewise loop, over buffers of a
 *	  typical batch's sizes; then the time to decode and to build a batch
 *	  of 1000 records of 100 bytes with each codec.
 *	  make -C src/kafka/test bench
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crc32c.h"
#include "records.h"

static uint32_t table[256];

static uint32_t
bytewise(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	crc = ~crc;
	while (len-- > 0)
		crc = (crc >> 8) ^ table[(crc ^ *p++) & 0xff];
	return ~crc;
}

static double now(void);

/* Build and decode a batch of 1000 records of 100 bytes, n times each. */
static void
bench_batches(void)
{
	static const char *names[] = {"none", "gzip", "snappy", "lz4", "zstd"};
	char		value[100];

	for (int i = 0; i < 100; i++)
		value[i] = "some JSON-ish text, {\"id\": 12345, \"name\": \"x\"} "[i % 48];
	printf("batch of 1000 x 100 B records (us per batch):\n");
	for (int c = 0; c <= 4; c++)
	{
		KWriter		w;
		KBatchBuilder b;
		double		t0,
					tb,
					td;
		int			n = 200;

		kw_init(&w, 64 << 20);
		t0 = now();
		for (int rep = 0; rep < n; rep++)
		{
			kw_reset(&w);
			k_batch_begin(&b, &w, 0, 1700000000000LL, c, 0);
			for (int i = 0; i < 1000; i++)
			{
				KSlice		k = {(const uint8_t *) value, 8};
				KSlice		v = {(const uint8_t *) value, 100};

				value[0] = (char) ('a' + i % 26);
				k_batch_add(&b, i, 1700000000000LL + i, k, v, NULL, 0);
			}
			k_batch_end(&b);
		}
		tb = (now() - t0) / n;
		t0 = now();
		for (int rep = 0; rep < n; rep++)
		{
			KRecordSet	set;

			if (k_records_decode(w.buf, w.len, NULL, &set) != KREC_OK)
				printf("decode failed: %s\n", set.errmsg);
			k_records_free(&set);
		}
		td = (now() - t0) / n;
		printf("  %-6s %7zu bytes  build %6.0f us  decode %6.0f us\n",
			   names[c], w.len, tb * 1e6, td * 1e6);
		kw_free(&w);
	}
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(void)
{
	static const size_t sizes[] = {64, 1024, 16384, 1 << 20};
	uint32_t	(*fns[3]) (uint32_t, const void *, size_t) = {k_crc32c, k_crc32c_sw, bytewise};
	const char *names[3] = {k_crc32c_impl(), "slice-by-8", "bytewise"};
	uint8_t    *buf = malloc(1 << 20);
	volatile uint32_t sink = 0;

	for (uint32_t n = 0; n < 256; n++)
	{
		uint32_t	c = n;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		table[n] = c;
	}
	for (size_t i = 0; i < (1 << 20); i++)
		buf[i] = (uint8_t) (i * 131 + 7);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
	{
		printf("%8zu bytes:", sizes[s]);
		for (int f = 0; f < 3; f++)
		{
			size_t		total = 256u << 20;	/* 256 MB per measurement */
			double		best = 1e9;

			for (int rep = 0; rep < 3; rep++)
			{
				double		t0 = now();

				for (size_t done = 0; done < total; done += sizes[s])
					sink += fns[f](0, buf, sizes[s]);
				if (now() - t0 < best)
					best = now() - t0;
			}
			printf("  %s %.2f GB/s", names[f], total / best / 1e9);
		}
		printf("\n");
	}
	free(buf);
	bench_batches();
	return sink == 42;
}
