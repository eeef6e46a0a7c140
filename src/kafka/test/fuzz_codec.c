/*-------------------------------------------------------------------------
 *
 * fuzz_codec.c
 *	  A deterministic mutation fuzzer for the Kafka gateway's decoders:
 *	  k_records_decode (alone and inside Produce request bodies parsed
 *	  with wire.c, classic and flexible) and k_decompress.
 *
 *	  fuzz_codec [-n iterations] [-s seed] [-i iteration] [-m max_rss_mb]
 *
 * Seeds are valid inputs: the fixtures of real clients, batches from the
 * builder with every codec, Produce bodies wrapping them, compressed
 * streams.  Each iteration copies one seed and applies one to four
 * mutations (bit flips, interesting bytes and integers, length fields of
 * the batch header set to extreme values, truncation, insertion, deletion,
 * duplication, splices with another seed, runs of 0xff), then, three times
 * in four, recomputes the batches' CRCs so that mutations get past the CRC
 * check into the records and the decompressors.  Each iteration's random
 * stream depends only on the seed and its number, so "-i N" replays one.
 *
 * Checks: no crash and no sanitizer report (the _asan build); every
 * accepted input is consistent (slices inside the request or the
 * decompressed buffer, counts) and survives re-encoding by the builder;
 * every rejected one has a message and no batches; peak RSS under -m.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <snappy-c.h>

#include "compress.h"
#include "crc32c.h"
#include "records.h"
#include "wire.h"

typedef enum SeedKind
{
	SEED_RECORDS,
	SEED_PRODUCE,				/* Produce v3-v8 body */
	SEED_PRODUCE_FLEX,			/* Produce v9+ body */
	SEED_GZIP,					/* compressed streams: kind - SEED_GZIP + 1 */
	SEED_SNAPPY,
	SEED_LZ4,
	SEED_ZSTD,
	NKINDS
} SeedKind;

static const char *kind_names[] = {
	"records", "produce", "produce-flex", "gzip", "snappy", "lz4", "zstd"
};

typedef struct Seed
{
	uint8_t    *buf;
	size_t		len;
	SeedKind	kind;
} Seed;

static Seed seeds[256];
static int	nseeds;

static uint64_t runs[NKINDS];
static uint64_t accepted[NKINDS];
static uint64_t errors[KREC_NOMEM + 1];
static uint64_t failures;

#define MAX_INPUT (256 * 1024)

static KRecLimits limits = {1 << 20, 4 << 20, 100000, 100000};

/* ------------------------------------------------------------------------
 * Randomness: splitmix64, one stream per iteration
 * ------------------------------------------------------------------------ */

static uint64_t
next(uint64_t *s)
{
	uint64_t	z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static size_t
below(uint64_t *s, size_t n)
{
	return n ? (size_t) (next(s) % n) : 0;
}

/* ------------------------------------------------------------------------
 * Seeds
 * ------------------------------------------------------------------------ */

static void
add_seed(const uint8_t *buf, size_t len, SeedKind kind)
{
	if (nseeds == (int) (sizeof(seeds) / sizeof(seeds[0])))
		return;
	seeds[nseeds].buf = malloc(len ? len : 1);
	memcpy(seeds[nseeds].buf, buf, len);
	seeds[nseeds].len = len;
	seeds[nseeds].kind = kind;
	nseeds++;
}

static void
add_fixture(const char *name)
{
	char		path[1024];
	FILE	   *f;
	uint8_t		buf[8192];
	size_t		n = 0;
	int			c,
				hi = -1;

	snprintf(path, sizeof(path), "%s/%s", FIXTURE_DIR, name);
	f = fopen(path, "r");
	if (f == NULL)
	{
		fprintf(stderr, "fuzz_codec: cannot open %s\n", path);
		exit(2);
	}
	while ((c = fgetc(f)) != EOF && n < sizeof(buf))
	{
		int			v = c >= 'a' ? c - 'a' + 10 : c - '0';

		if (c == '\n')
			continue;
		if (hi < 0)
			hi = v;
		else
		{
			buf[n++] = (uint8_t) (hi << 4 | v);
			hi = -1;
		}
	}
	fclose(f);
	add_seed(buf, n, SEED_RECORDS);
}

/* A Produce request body around one partition's records. */
static void
add_produce(const uint8_t *rec, size_t len, bool flex)
{
	KWriter		w;

	kw_init(&w, MAX_INPUT);
	kw_string_v(&w, flex, NULL, -1);	/* transactional id */
	kw_int16(&w, -1);			/* acks */
	kw_int32(&w, 30000);		/* timeout */
	kw_array_len_v(&w, flex, 1);
	kw_string_v(&w, flex, "topic", 5);
	kw_array_len_v(&w, flex, 1);
	kw_int32(&w, 0);
	kw_bytes_v(&w, flex, rec, (int32_t) len);
	kw_tags_v(&w, flex);
	kw_tags_v(&w, flex);
	kw_tags_v(&w, flex);
	if (!w.error)
		add_seed(w.buf, w.len, flex ? SEED_PRODUCE_FLEX : SEED_PRODUCE);
	kw_free(&w);
}

static void
make_seeds(void)
{
	static const char *codecs[] = {"none", "gzip", "snappy", "lz4", "zstd"};
	char		name[64];
	int			first_built;

	for (int c = 0; c <= 4; c++)
	{
		snprintf(name, sizeof(name), "kp-%s.hex", codecs[c]);
		add_fixture(name);
		snprintf(name, sizeof(name), "rd-%s.hex", codecs[c]);
		add_fixture(name);
	}
	add_fixture("rd-v1.hex");

	first_built = nseeds;
	for (int c = 0; c <= 4; c++)
		for (int shape = 0; shape < 3; shape++)
		{
			KWriter		w;
			KBatchBuilder b;
			int			n = shape == 0 ? 1 : shape == 1 ? 4 : 40;

			kw_init(&w, MAX_INPUT);
			for (int batch = 0; batch < (shape == 1 ? 2 : 1); batch++)
			{
				k_batch_begin(&b, &w, batch * 100, 1700000000000LL, c, 0);
				for (int i = 0; i < n; i++)
				{
					char		key[16],
								val[64];
					KRecordHeader h[2] = {
						{{(const uint8_t *) "h", 1}, {(const uint8_t *) "hv", 2}},
						{{(const uint8_t *) "n", 1}, {NULL, -1}},
					};
					KSlice		k = {(const uint8_t *) key, 0};
					KSlice		v = {(const uint8_t *) val, 0};

					k.len = snprintf(key, sizeof(key), "key-%d", i);
					v.len = snprintf(val, sizeof(val), "value %d value %d value", i, i * 7);
					if (i % 5 == 3)
						k.len = -1;
					if (i % 7 == 6)
						v.len = -1;
					k_batch_add(&b, batch * 100 + i, 1700000000000LL + i * 3 - (i % 2),
								k, v, h, i % 3);
				}
				k_batch_end(&b);
			}
			add_seed(w.buf, w.len, SEED_RECORDS);
			kw_free(&w);
		}
	for (int i = 0; i < first_built + 15; i += 3)
	{
		add_produce(seeds[i].buf, seeds[i].len, false);
		add_produce(seeds[i].buf, seeds[i].len, true);
	}
	for (int c = 1; c <= 4; c++)
	{
		KWriter		w;
		const char *msg;
		char		text[3000];

		for (size_t i = 0; i < sizeof(text); i++)
			text[i] = "Kafka records in Postgres "[i % 26] ^ (char) (i % 97 == 0);
		for (size_t len = 0; len <= sizeof(text); len += 1500)
		{
			kw_init(&w, MAX_INPUT);
			k_compress(c, 0, text, len, &w, &msg);
			add_seed(w.buf, w.len, SEED_GZIP + c - 1);
			kw_free(&w);
		}
		if (c == K_CODEC_SNAPPY)
		{
			char		raw[4000];
			size_t		rl = sizeof(raw);

			snappy_compress(text, sizeof(text), raw, &rl);
			add_seed((uint8_t *) raw, rl, SEED_SNAPPY);
		}
	}
}

/* ------------------------------------------------------------------------
 * Mutation
 * ------------------------------------------------------------------------ */

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t) (v >> 24);
	p[1] = (uint8_t) (v >> 16);
	p[2] = (uint8_t) (v >> 8);
	p[3] = (uint8_t) v;
}

static size_t
mutate(uint8_t *buf, size_t len, uint64_t *rng)
{
	static const uint8_t i8[] = {0, 1, 0x7f, 0x80, 0xff, 0xfe, 0x40, 0x3f};
	static const uint32_t i32[] = {
		0, 1, 0xffffffff, 0x7fffffff, 0x80000000, 0xfffffffe, 48, 49, 61, 0x10000, 0x7ffffff0,
	};
	/* batch header fields: batchLength, magic, attributes, lastOffsetDelta, count */
	static const size_t fields[] = {8, 16, 21, 23, 57};
	int			n = 1 + (int) below(rng, 4);

	for (int m = 0; m < n; m++)
	{
		size_t		pos = below(rng, len);

		switch (below(rng, 12))
		{
			case 0:
				if (len)
					buf[pos] ^= (uint8_t) (1 << below(rng, 8));
				break;
			case 1:
				if (len)
					buf[pos] = i8[below(rng, sizeof(i8))];
				break;
			case 2:
				if (len >= 4)
					put32(buf + below(rng, len - 3), i32[below(rng, sizeof(i32) / 4)]);
				break;
			case 3:
				{
					size_t		f = fields[below(rng, 5)];

					if (f + 4 <= len)
					{
						if (f == 16 || f == 21)
							buf[f + (f == 21)] = i8[below(rng, sizeof(i8))] & (f == 21 ? 0x3f : 0xff);
						else
							put32(buf + f, i32[below(rng, sizeof(i32) / 4)]);
					}
					break;
				}
			case 4:
				len = below(rng, len + 1);
				break;
			case 5:
				{
					Seed	   *o = &seeds[below(rng, nseeds)];
					size_t		from = below(rng, o->len + 1);
					size_t		take = o->len - from;

					if (pos + take > MAX_INPUT)
						take = MAX_INPUT - pos;
					memcpy(buf + pos, o->buf + from, take);
					len = pos + take;
					break;
				}
			case 6:
				{
					size_t		k = 1 + below(rng, 16);

					if (len + k <= MAX_INPUT)
					{
						memmove(buf + pos + k, buf + pos, len - pos);
						for (size_t i = 0; i < k; i++)
							buf[pos + i] = (uint8_t) next(rng);
						len += k;
					}
					break;
				}
			case 7:
				{
					size_t		k = below(rng, len - pos + 1);

					memmove(buf + pos, buf + pos + k, len - pos - k);
					len -= k;
					break;
				}
			case 8:
				{
					size_t		from = below(rng, len);
					size_t		k = below(rng, len - from + 1);

					if (k > 0 && len + k <= MAX_INPUT)
					{
						memmove(buf + pos + k, buf + pos, len - pos);
						memmove(buf + pos, buf + (from < pos ? from : from + k), k);
						len += k;
					}
					break;
				}
			case 9:
				{
					size_t		k = 1 + below(rng, 11);

					for (size_t i = 0; i < k && pos + i < len; i++)
						buf[pos + i] = 0xff;
					break;
				}
			case 10:
				if (len)
					buf[pos] = (uint8_t) next(rng);
				break;
			default:
				/* A small varint where a record's length might be. */
				if (len)
					buf[pos] = (uint8_t) (below(rng, 64) << 1) | (uint8_t) below(rng, 2);
				break;
		}
	}
	return len;
}

/* Recompute the CRC of every batch that can be walked to. */
static void
fix_crcs(uint8_t *buf, size_t len)
{
	size_t		pos = 0;

	while (len - pos >= K_BATCH_HEADER_LEN)
	{
		uint8_t    *b = buf + pos;
		uint32_t	bl = ((uint32_t) b[8] << 24) | (b[9] << 16) | (b[10] << 8) | b[11];

		if (bl < 9 || bl > len - pos - 12)
			return;
		put32(b + 17, k_crc32c(0, b + 21, bl + 12 - 21));
		pos += bl + 12;
	}
}

/* ------------------------------------------------------------------------
 * Running the decoders
 * ------------------------------------------------------------------------ */

static void
check(bool cond, const char *what, uint64_t iter)
{
	if (!cond)
	{
		fprintf(stderr, "fuzz_codec: iteration %llu: %s\n", (unsigned long long) iter, what);
		failures++;
	}
}

static bool
inside(KSlice s, const uint8_t *lo, size_t n)
{
	return s.len < 0 || (s.ptr >= lo && s.ptr + s.len <= lo + n);
}

static bool
same(KSlice a, KSlice b)
{
	return a.len == b.len && (a.len <= 0 || memcmp(a.ptr, b.ptr, (size_t) a.len) == 0);
}

/* A decoded batch built again, uncompressed, must decode to the same. */
static bool
reencodes(const KRecordBatch *b)
{
	KWriter		w;
	KBatchBuilder bb;
	KRecordSet	set;
	bool		good;

	/* Base offset 0: the request's may be anything, up to INT64_MAX. */
	memset(&set, 0, sizeof(set));
	kw_init(&w, 16 << 20);
	k_batch_begin(&bb, &w, 0, b->base_timestamp, K_CODEC_NONE, 0);
	for (int32_t i = 0; i < b->record_count; i++)
	{
		const KRecord *r = &b->records[i];

		k_batch_add(&bb, r->offset_delta, r->timestamp,
					r->key, r->value, r->headers, r->nheaders);
	}
	good = k_batch_end(&bb) && k_records_decode(w.buf, w.len, NULL, &set) == KREC_OK &&
		set.nbatches == 1 && set.batches[0].record_count == b->record_count;
	for (int32_t i = 0; good && i < b->record_count; i++)
	{
		const KRecord *x = &b->records[i];
		const KRecord *y = &set.batches[0].records[i];

		good = same(x->key, y->key) && same(x->value, y->value) &&
			x->timestamp == y->timestamp && x->nheaders == y->nheaders;
		for (int32_t h = 0; good && h < x->nheaders; h++)
			good = same(x->headers[h].key, y->headers[h].key) &&
				same(x->headers[h].value, y->headers[h].value);
	}
	k_records_free(&set);
	kw_free(&w);
	return good;
}

static void
run_records(const uint8_t *in, size_t len, bool fix, SeedKind kind, uint64_t iter)
{
	uint8_t    *buf = malloc(len ? len : 1);	/* exactly len: ASan sees over-reads */
	KRecordSet	set;
	KRecError	e;

	memcpy(buf, in, len);
	if (fix)
		fix_crcs(buf, len);
	runs[kind]++;
	e = k_records_decode(buf, len, &limits, &set);
	errors[e]++;
	if (e == KREC_OK)
	{
		int64_t		total = 0;

		accepted[kind]++;
		for (int32_t i = 0; i < set.nbatches; i++)
		{
			KRecordBatch *b = &set.batches[i];
			const uint8_t *lo = b->codec ? b->decompressed : b->raw;
			size_t		n = b->codec ? b->decompressed_len : b->raw_len;
			bool		in_bounds = b->raw >= buf && b->raw + b->raw_len <= buf + len;

			total += b->record_count;
			for (int32_t r = 0; r < b->record_count; r++)
			{
				KRecord    *rec = &b->records[r];

				in_bounds &= inside(rec->key, lo, n) && inside(rec->value, lo, n) &&
					rec->offset_delta == r;
				for (int32_t h = 0; h < rec->nheaders; h++)
					in_bounds &= rec->headers[h].key.len >= 0 &&
						inside(rec->headers[h].key, lo, n) && inside(rec->headers[h].value, lo, n);
			}
			check(in_bounds, "a slice outside its buffer", iter);
			check(reencodes(b), "an accepted batch does not survive re-encoding", iter);
		}
		check(total == set.nrecords && set.nrecords <= limits.max_records &&
			  set.nheaders <= limits.max_headers &&
			  set.decompressed_total <= limits.max_decompressed, "counts or limits", iter);
	}
	else
		check(set.nbatches == 0 && set.batches == NULL && set.errmsg[0] != 0,
			  "an error without a message, or with batches left", iter);
	k_records_free(&set);
	free(buf);
}

/* A Produce request body, as the gateway will parse one. */
static void
run_produce(const uint8_t *buf, size_t len, bool flex, bool fix, uint64_t iter)
{
	KReader		r;
	int32_t		nt;

	kr_init(&r, buf, len);
	(void) kr_nullable_string_v(&r, flex);
	(void) kr_int16(&r);
	(void) kr_int32(&r);
	nt = kr_array_len_v(&r, flex, flex ? 3 : 6);
	for (int32_t t = 0; t < nt && !r.error; t++)
	{
		int32_t		np;

		(void) kr_string_v(&r, flex);
		np = kr_array_len_v(&r, flex, 5);
		for (int32_t p = 0; p < np && !r.error; p++)
		{
			KSlice		rec;

			(void) kr_int32(&r);
			rec = kr_nullable_bytes_v(&r, flex);
			kr_tags_v(&r, flex);
			if (!r.error && rec.len >= 0)
				run_records(rec.ptr, (size_t) rec.len, fix,
							flex ? SEED_PRODUCE_FLEX : SEED_PRODUCE, iter);
		}
		kr_tags_v(&r, flex);
	}
	kr_tags_v(&r, flex);
}

static void
run_decompress(const uint8_t *in, size_t len, int codec, SeedKind kind,
			   size_t limit, uint64_t iter)
{
	uint8_t    *buf = malloc(len ? len : 1);
	uint8_t    *out;
	size_t		outlen;
	const char *msg;
	KCompStatus st;

	memcpy(buf, in, len);
	runs[kind]++;
	st = k_decompress(codec, buf, len, limit, &out, &outlen, &msg);
	if (st == K_COMP_OK)
	{
		accepted[kind]++;
		check(out != NULL && outlen <= limit, "decompressed past the limit", iter);
	}
	else
		check(out == NULL && msg != NULL, "a decompression error without a message", iter);
	free(out);
	free(buf);
}

static void
iteration(uint64_t seed, uint64_t iter, uint8_t *work)
{
	uint64_t	rng = seed * 0x100000001B3ull ^ (iter + 1) * 0x9E3779B97F4A7C15ull;
	Seed	   *s = &seeds[below(&rng, nseeds)];
	size_t		len;
	size_t		limit;
	bool		fix;

	memcpy(work, s->buf, s->len);
	len = mutate(work, s->len, &rng);
	fix = below(&rng, 4) != 0;
	/* Half the time, a small limit, so that its edges get crossed. */
	limit = below(&rng, 2) ? (size_t) 1 << 20 : below(&rng, 8192);
	limits.max_decompressed = below(&rng, 2) ? (size_t) 4 << 20 : below(&rng, 8192);
	switch (s->kind)
	{
		case SEED_RECORDS:
			run_records(work, len, fix, s->kind, iter);
			break;
		case SEED_PRODUCE:
		case SEED_PRODUCE_FLEX:
			run_produce(work, len, s->kind == SEED_PRODUCE_FLEX, fix, iter);
			break;
		default:
			run_decompress(work, len, s->kind - SEED_GZIP + 1, s->kind, limit, iter);
			break;
	}
}

int
main(int argc, char **argv)
{
	uint64_t	n = 1000000,
				seed = 1,
				only = UINT64_MAX;
	long		max_rss_mb = 1024;
	uint8_t    *work = malloc(MAX_INPUT);
	struct timespec t0,
				t1;
	double		secs;
	struct rusage ru;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			n = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "-i") == 0 && i + 1 < argc)
			only = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "-m") == 0 && i + 1 < argc)
			max_rss_mb = strtol(argv[++i], NULL, 10);
		else
		{
			fprintf(stderr, "usage: fuzz_codec [-n iterations] [-s seed] [-i iteration] [-m max_rss_mb]\n");
			return 2;
		}
	}
	make_seeds();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (only != UINT64_MAX)
		iteration(seed, only, work);
	else
		for (uint64_t i = 0; i < n; i++)
			iteration(seed, i, work);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double) (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	getrusage(RUSAGE_SELF, &ru);

	printf("fuzz_codec: %llu iterations, seed %llu, %d seeds, %.1f s, %.0f/s, peak RSS %ld MB\n",
		   (unsigned long long) (only != UINT64_MAX ? 1 : n), (unsigned long long) seed,
		   nseeds, secs, (only != UINT64_MAX ? 1 : n) / (secs > 0 ? secs : 1e-9),
		   ru.ru_maxrss / 1024);
	for (int k = 0; k < NKINDS; k++)
		printf("  %-13s %9llu decoded, %8llu accepted\n", kind_names[k],
			   (unsigned long long) runs[k], (unsigned long long) accepted[k]);
	printf("  record errors: ok %llu, corrupt %llu, crc %llu, old magic %llu, "
		   "codec %llu, invalid %llu, too large %llu, no memory %llu\n",
		   (unsigned long long) errors[0], (unsigned long long) errors[1],
		   (unsigned long long) errors[2], (unsigned long long) errors[3],
		   (unsigned long long) errors[4], (unsigned long long) errors[5],
		   (unsigned long long) errors[6], (unsigned long long) errors[7]);
	if (ru.ru_maxrss / 1024 > max_rss_mb)
	{
		printf("fuzz_codec: peak RSS over %ld MB\n", max_rss_mb);
		failures++;
	}
	printf("fuzz_codec: %s (%llu failed checks)\n", failures ? "FAILED" : "passed",
		   (unsigned long long) failures);
	for (int i = 0; i < nseeds; i++)
		free(seeds[i].buf);
	free(work);
	return failures ? 1 : 0;
}
