/*-------------------------------------------------------------------------
 *
 * fuzz_gateway.c
 *	  A network fuzzer for pg_eventlog_kafka: mutated Kafka requests over
 *	  many pipelined connections, each response checked.
 *
 *	  fuzz_gateway -p PORT [-h HOST] [-n FRAMES] [-s SEED] [-c CONNS]
 *	               [-S SLOW] [-t STALL_S] [-m SESSION_PCT] [-r CONN [-w FILE]]
 *	               [-V] [-q]
 *
 * It builds a corpus of valid requests for every version of every API the
 * gateway implements (encoded here from Kafka's published protocol, with
 * RecordBatch v2 in every codec for Produce), then opens connections, -c at
 * a time, until the gateway has handled -n requests (answered them, or
 * closed the connection on them).  -m percent of the connections are
 * "sessions": long pipelines of valid requests and of value mutations that
 * keep a request's structure (an integer field or a string's bytes
 * replaced), so that they reach the handlers and the SQL, with a byte-level
 * mutation now and then.  The others send byte-level mutations only: bit
 * flips, interesting bytes, int16/int32/varint values (0, -1, 0x7fff,
 * 0x7fffffff, 0x80000000, over-long varints) at any offset, truncation,
 * random bytes, duplicated and spliced segments, unknown API keys and
 * versions, odd client ids.  A Produce request's batch CRC is recomputed
 * after most mutations so that they reach the records and the
 * decompressors.  Each connection sends a window of 1 to 64 requests ahead
 * of the answers.  The last frame of some connections breaks the framing
 * itself: an absurd size, a frame cut short and closed, half-closed
 * (shutdown) or held open, random bytes.  Beside them, -S slow connections
 * trickle their requests a byte at a time (slowloris).  Every connection's
 * plan comes from the seed, -m and its number alone: "-r N" replays
 * connection N alone (at full speed), "-w FILE" writes its bytes.
 *
 * Checks, per response: a sane size (4 bytes to 256 MiB), the correlation
 * id of the oldest request not answered yet (only a Produce may go
 * unanswered: acks=0), never an answer before its request was complete,
 * never a stream ending within a response.  A connection that stops
 * answering for -t seconds is abandoned; that is a finding unless the
 * request it waits on may wait (Fetch, JoinGroup, SyncGroup).  Closing a
 * connection is always an allowed answer.  Findings are printed with the
 * connection's number to replay it; the exit status is 1 if there was one.
 * SIGINT and SIGTERM stop it early, with its summary.
 *
 * -V checks the corpus instead: that the gateway advertises (ApiVersions)
 * exactly the versions the corpus has, and that each request of the corpus
 * alone gets an answer.
 *
 *-------------------------------------------------------------------------
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

/* ---- randomness: splitmix64, deterministic from a seed ---- */

typedef struct Rng
{
	uint64_t	s;
} Rng;

static uint64_t
rng_next(Rng *r)
{
	uint64_t	z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t
rnd(Rng *r, uint32_t n)
{
	return n ? (uint32_t) (rng_next(r) % n) : 0;
}

/* ---- a growable byte buffer and Kafka's encodings ---- */

typedef struct Buf
{
	uint8_t    *p;
	size_t		len;
	size_t		cap;
} Buf;

static void
die(const char *msg)
{
	fprintf(stderr, "fuzz_gateway: %s\n", msg);
	exit(2);
}

static void
b_reserve(Buf *b, size_t n)
{
	if (b->len + n <= b->cap)
		return;
	while (b->len + n > b->cap)
		b->cap = b->cap ? b->cap * 2 : 256;
	b->p = realloc(b->p, b->cap);
	if (b->p == NULL)
		die("out of memory");
}

static void
b_raw(Buf *b, const void *d, size_t n)
{
	b_reserve(b, n);
	if (n)
		memcpy(b->p + b->len, d, n);
	b->len += n;
}

/*
 * The corpus records where each integer field and each string's bytes are
 * in a request body, so that a mutation can change a value and keep the
 * request's structure (it then gets past decoding into the handler and
 * the SQL).  Lengths and counts are not recorded: changing them breaks
 * the structure, which the byte-level mutations do.
 */
typedef struct Field
{
	uint32_t	at;
	uint16_t	len;
	char		kind;			/* 'i': a big-endian integer; 's': string bytes */
} Field;

static Buf *rec_buf;			/* the body being recorded, or NULL */
static Field *rec_fields;
static int	rec_nfields;
static int	rec_suspended;

static void
record(Buf *b, size_t at, size_t len, char kind)
{
	if (b != rec_buf || rec_suspended || len == 0 || len > 0xffff)
		return;
	rec_fields = realloc(rec_fields, sizeof(Field) * (size_t) (rec_nfields + 1));
	if (rec_fields == NULL)
		die("out of memory");
	rec_fields[rec_nfields].at = (uint32_t) at;
	rec_fields[rec_nfields].len = (uint16_t) len;
	rec_fields[rec_nfields].kind = kind;
	rec_nfields++;
}

static void
b_i8(Buf *b, int v)
{
	uint8_t		c = (uint8_t) v;

	record(b, b->len, 1, 'i');
	b_raw(b, &c, 1);
}

static void
b_i16(Buf *b, int v)
{
	uint8_t		c[2] = {(uint8_t) (v >> 8), (uint8_t) v};

	record(b, b->len, 2, 'i');
	b_raw(b, c, 2);
}

static void
b_i32(Buf *b, int64_t v)
{
	uint32_t	u = (uint32_t) v;
	uint8_t		c[4] = {u >> 24, u >> 16, u >> 8, u};

	record(b, b->len, 4, 'i');
	b_raw(b, c, 4);
}

static void
b_i64(Buf *b, int64_t v)
{
	record(b, b->len, 8, 'i');
	rec_suspended++;
	b_i32(b, (int64_t) ((uint64_t) v >> 32));
	b_i32(b, (int64_t) ((uint64_t) v & 0xffffffffu));
	rec_suspended--;
}

static void
b_uvar(Buf *b, uint64_t v)
{
	while (v >= 0x80)
	{
		b_i8(b, (int) ((v & 0x7f) | 0x80));
		v >>= 7;
	}
	b_i8(b, (int) v);
}

static void
b_var(Buf *b, int64_t v)
{
	b_uvar(b, ((uint64_t) v << 1) ^ (uint64_t) (v >> 63));
}

static void
put32_at(uint8_t *p, uint32_t u)
{
	p[0] = u >> 24;
	p[1] = u >> 16;
	p[2] = u >> 8;
	p[3] = u;
}

static uint32_t
get32(const uint8_t *p)
{
	return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) | ((uint32_t) p[2] << 8) | p[3];
}

/* A string, nullable (NULL), classic (int16 length) or compact. */
static void
b_str(Buf *b, bool flex, const char *s)
{
	size_t		n = s ? strlen(s) : 0;

	rec_suspended++;
	if (flex)
		b_uvar(b, s ? n + 1 : 0);
	else
		b_i16(b, s ? (int) n : -1);
	rec_suspended--;
	record(b, b->len, n, 's');
	b_raw(b, s, n);
}

static void
b_bytes(Buf *b, bool flex, const void *d, int n)
{
	rec_suspended++;
	if (flex)
		b_uvar(b, n < 0 ? 0 : (uint64_t) n + 1);
	else
		b_i32(b, n);
	rec_suspended--;
	if (n > 0)
	{
		record(b, b->len, (size_t) n, 's');
		b_raw(b, d, (size_t) n);
	}
}

static void
b_arr(Buf *b, bool flex, int n)
{
	rec_suspended++;
	if (flex)
		b_uvar(b, n < 0 ? 0 : (uint64_t) n + 1);
	else
		b_i32(b, n);
	rec_suspended--;
}

static void
b_tags(Buf *b, bool flex)
{
	rec_suspended++;
	if (flex)
		b_i8(b, 0);
	rec_suspended--;
}

/* ---- RecordBatch v2 ---- */

static uint32_t crc_table[256];

static void
crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++)
	{
		uint32_t	c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t
crc32c(const uint8_t *p, size_t n)
{
	uint32_t	c = 0xffffffffu;

	while (n--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

enum
{
	CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD, NCODECS
};

static void
compress_into(Buf *out, int codec, const Buf *in)
{
	size_t		bound;

	switch (codec)
	{
		case CODEC_GZIP:
			{
				z_stream	z;

				memset(&z, 0, sizeof(z));
				if (deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
					die("deflateInit2 failed");
				bound = deflateBound(&z, in->len) + 32;
				b_reserve(out, bound);
				z.next_in = in->p;
				z.avail_in = (uInt) in->len;
				z.next_out = out->p + out->len;
				z.avail_out = (uInt) bound;
				if (deflate(&z, Z_FINISH) != Z_STREAM_END)
					die("deflate failed");
				out->len += bound - z.avail_out;
				deflateEnd(&z);
				break;
			}
		case CODEC_SNAPPY:
			{
				size_t		n = snappy_max_compressed_length(in->len);

				b_reserve(out, n);
				if (snappy_compress((const char *) in->p, in->len, (char *) out->p + out->len, &n) != SNAPPY_OK)
					die("snappy_compress failed");
				out->len += n;
				break;
			}
		case CODEC_LZ4:
			{
				size_t		n;

				bound = LZ4F_compressFrameBound(in->len, NULL);
				b_reserve(out, bound);
				n = LZ4F_compressFrame(out->p + out->len, bound, in->p, in->len, NULL);
				if (LZ4F_isError(n))
					die("LZ4F_compressFrame failed");
				out->len += n;
				break;
			}
		case CODEC_ZSTD:
			{
				size_t		n;

				bound = ZSTD_compressBound(in->len);
				b_reserve(out, bound);
				n = ZSTD_compress(out->p + out->len, bound, in->p, in->len, 3);
				if (ZSTD_isError(n))
					die("ZSTD_compress failed");
				out->len += n;
				break;
			}
		default:
			b_raw(out, in->p, in->len);
	}
}

/*
 * Appends a RecordBatch v2 of nrec records (keys, NULL keys, a tombstone,
 * headers with duplicate names and a NULL value) in that codec; json makes
 * the values JSON (for a JSON topic).
 */
static void
b_batch(Buf *b, int codec, int nrec, bool json)
{
	Buf			recs = {0};
	size_t		start = b->len;
	int64_t		ts = 1700000000000LL;

	for (int i = 0; i < nrec; i++)
	{
		Buf			one = {0};
		char		key[16],
					val[48];

		snprintf(key, sizeof(key), "k%d", i);
		snprintf(val, sizeof(val), json ? "{\"n\": %d, \"s\": \"fuzz\"}" : "v%d\001\377bytes", i);
		b_i8(&one, 0);			/* attributes */
		b_var(&one, i);			/* timestamp delta */
		b_var(&one, i);			/* offset delta */
		if (i % 3 == 2)
			b_var(&one, -1);
		else
		{
			b_var(&one, (int64_t) strlen(key));
			b_raw(&one, key, strlen(key));
		}
		if (i == 4 && !json)
			b_var(&one, -1);	/* a tombstone */
		else
		{
			b_var(&one, (int64_t) strlen(val));
			b_raw(&one, val, strlen(val));
		}
		b_var(&one, i % 2 ? 2 : 0);
		if (i % 2)
		{
			b_var(&one, 1);
			b_raw(&one, "h", 1);
			b_var(&one, 2);
			b_raw(&one, "\000\001", 2);
			b_var(&one, 1);
			b_raw(&one, "h", 1);
			b_var(&one, -1);
		}
		b_var(&recs, (int64_t) one.len);
		b_raw(&recs, one.p, one.len);
		free(one.p);
	}
	b_i64(b, 0);				/* base offset */
	b_i32(b, 0);				/* batch length, patched */
	b_i32(b, -1);				/* partition leader epoch */
	b_i8(b, 2);					/* magic */
	b_i32(b, 0);				/* crc, patched */
	b_i16(b, codec);			/* attributes */
	b_i32(b, nrec - 1);			/* last offset delta */
	b_i64(b, ts);
	b_i64(b, ts + nrec - 1);
	b_i64(b, -1);				/* producer id */
	b_i16(b, -1);				/* producer epoch */
	b_i32(b, -1);				/* base sequence */
	b_i32(b, nrec);
	compress_into(b, codec, &recs);
	free(recs.p);
	put32_at(b->p + start + 8, (uint32_t) (b->len - start - 12));
	put32_at(b->p + start + 17, crc32c(b->p + start + 21, b->len - start - 21));
}

/* ---- the corpus: valid requests of every API and version ---- */

#define API_PRODUCE 0
#define API_FETCH 1
#define API_JOIN_GROUP 11
#define API_SYNC_GROUP 14
#define API_SASL_HANDSHAKE 17
#define API_API_VERSIONS 18

/* The gateway's table (src/kafka/api_table.c), checked by -V. */
typedef struct ApiDef
{
	int			key;
	const char *name;
	int			min;
	int			max;
	int			flex;			/* first flexible version; 99: none */
} ApiDef;

static const ApiDef apis[] = {
	{0, "Produce", 0, 9, 9},
	{1, "Fetch", 4, 12, 12},
	{2, "ListOffsets", 0, 6, 6},
	{3, "Metadata", 0, 12, 9},
	{8, "OffsetCommit", 0, 8, 8},
	{9, "OffsetFetch", 0, 8, 6},
	{10, "FindCoordinator", 0, 4, 3},
	{11, "JoinGroup", 0, 9, 6},
	{12, "Heartbeat", 0, 4, 4},
	{13, "LeaveGroup", 0, 5, 4},
	{14, "SyncGroup", 0, 5, 4},
	{15, "DescribeGroups", 0, 5, 5},
	{16, "ListGroups", 0, 4, 3},
	{17, "SaslHandshake", 0, 1, 99},
	{18, "ApiVersions", 0, 3, 3},
	{19, "CreateTopics", 0, 7, 5},
	{20, "DeleteTopics", 0, 6, 4},
	{22, "InitProducerId", 0, 4, 2},
	{24, "AddPartitionsToTxn", 0, 3, 3},
	{25, "AddOffsetsToTxn", 0, 3, 3},
	{26, "EndTxn", 0, 3, 3},
	{28, "TxnOffsetCommit", 0, 3, 3},
	{32, "DescribeConfigs", 0, 4, 4},
	{36, "SaslAuthenticate", 0, 2, 2},
	{37, "CreatePartitions", 0, 3, 2},
	{42, "DeleteGroups", 0, 2, 2},
	{47, "OffsetDelete", 0, 0, 99},
	{60, "DescribeCluster", 0, 1, 0},
};
#define NAPIS ((int) (sizeof(apis) / sizeof(apis[0])))

static const ApiDef *
api_def(int key)
{
	for (int i = 0; i < NAPIS; i++)
		if (apis[i].key == key)
			return &apis[i];
	return NULL;
}

typedef struct Entry
{
	int			api;
	int			version;
	bool		flex;
	Buf			body;
	long		batch_at;		/* offset of a RecordBatch in body, or -1 */
	bool		no_answer;		/* a Produce with acks=0 */
	const char *what;
	Field	   *fields;			/* its values (record()) */
	int			nfields;
} Entry;

static Entry *corpus;
static int ncorpus;

/* The fields recorded go to the last entry (rec_buf is its body). */
static void
end_recording(void)
{
	if (ncorpus > 0 && rec_buf == &corpus[ncorpus - 1].body)
	{
		corpus[ncorpus - 1].fields = rec_fields;
		corpus[ncorpus - 1].nfields = rec_nfields;
	}
	rec_buf = NULL;
	rec_fields = NULL;
	rec_nfields = 0;
}

static Entry *
new_entry(int api, int v, const char *what)
{
	Entry	   *e;

	end_recording();
	corpus = realloc(corpus, sizeof(Entry) * (size_t) (ncorpus + 1));
	if (corpus == NULL)
		die("out of memory");
	e = &corpus[ncorpus++];
	memset(e, 0, sizeof(*e));
	e->api = api;
	e->version = v;
	e->flex = v >= api_def(api)->flex;
	e->batch_at = -1;
	e->what = what;
	rec_buf = &e->body;
	return e;
}

static const char *topic = "fz";		/* binary, 3 partitions */
static const char *jtopic = "fzj";		/* JSON, 1 partition */

static void
corpus_produce(int v, int codec, int acks, bool json)
{
	Entry	   *e = new_entry(API_PRODUCE, v, json ? "json" : "binary");
	Buf		   *b = &e->body;
	bool		f = e->flex;
	Buf			batch = {0};

	e->no_answer = acks == 0;

	if (v >= 3)
		b_str(b, f, NULL);		/* transactional id */
	b_i16(b, acks);
	b_i32(b, 5000);
	b_arr(b, f, 1);
	b_str(b, f, json ? jtopic : topic);
	b_arr(b, f, 1);
	b_i32(b, json ? 0 : (v + codec) % 3);
	b_batch(&batch, codec, 1 + (v + codec) % 6, json);
	rec_suspended++;
	if (f)
		b_uvar(b, batch.len + 1);
	else
		b_i32(b, (int64_t) batch.len);
	rec_suspended--;
	e->batch_at = (long) b->len;
	b_raw(b, batch.p, batch.len);
	free(batch.p);
	b_tags(b, f);				/* partition */
	b_tags(b, f);				/* topic */
	b_tags(b, f);
}

static void
corpus_fetch(int v)
{
	Entry	   *e = new_entry(API_FETCH, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_i32(b, -1);				/* replica id */
	b_i32(b, 10);				/* max wait ms */
	b_i32(b, v % 2);			/* min bytes */
	b_i32(b, 1 << 20);			/* max bytes */
	b_i8(b, v % 2);				/* isolation level */
	if (v >= 7)
	{
		b_i32(b, 0);			/* session id */
		b_i32(b, -1);			/* session epoch */
	}
	b_arr(b, f, 1);
	b_str(b, f, topic);
	b_arr(b, f, 2);
	for (int p = 0; p < 2; p++)
	{
		b_i32(b, p);
		if (v >= 9)
			b_i32(b, -1);		/* current leader epoch */
		b_i64(b, p);			/* fetch offset */
		if (v >= 12)
			b_i32(b, -1);		/* last fetched epoch */
		if (v >= 5)
			b_i64(b, -1);		/* log start offset */
		b_i32(b, 65536);
		b_tags(b, f);
	}
	b_tags(b, f);
	if (v >= 7)
	{
		b_arr(b, f, 1);			/* forgotten topics */
		b_str(b, f, "gone");
		b_arr(b, f, 1);
		b_i32(b, 0);
		b_tags(b, f);
	}
	if (v >= 11)
		b_str(b, f, "");		/* rack */
	b_tags(b, f);
}

static void
corpus_list_offsets(int v)
{
	Entry	   *e = new_entry(2, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;
	int64_t		ts[3] = {-1, -2, 1700000000000LL};

	b_i32(b, -1);
	if (v >= 2)
		b_i8(b, 1);
	b_arr(b, f, 1);
	b_str(b, f, topic);
	b_arr(b, f, 3);
	for (int p = 0; p < 3; p++)
	{
		b_i32(b, p);
		if (v >= 4)
			b_i32(b, -1);
		b_i64(b, ts[p]);
		if (v == 0)
			b_i32(b, 1);
		b_tags(b, f);
	}
	b_tags(b, f);
	b_tags(b, f);
}

static void
corpus_metadata(int v, bool all)
{
	Entry	   *e = new_entry(3, v, all ? "all" : "named");
	Buf		   *b = &e->body;
	bool		f = e->flex;
	const char *names[3] = {topic, jtopic, "nosuch"};

	if (all && v >= 1)
		b_arr(b, f, -1);
	else if (all)
		b_arr(b, f, 0);
	else
	{
		b_arr(b, f, 3);
		for (int i = 0; i < 3; i++)
		{
			if (v >= 10)
				b_raw(b, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16);
			b_str(b, f, names[i]);
			b_tags(b, f);
		}
	}
	if (v >= 4)
		b_i8(b, 0);				/* allow auto topic creation */
	if (v >= 8 && v <= 10)
		b_i8(b, 1);				/* include cluster authorized operations */
	if (v >= 8)
		b_i8(b, 1);				/* include topic authorized operations */
	b_tags(b, f);
}

static void
corpus_offset_commit(int v)
{
	Entry	   *e = new_entry(8, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_str(b, f, "fzg@@");
	if (v >= 1)
	{
		b_i32(b, -1);			/* generation */
		b_str(b, f, "");		/* member id */
	}
	if (v >= 7)
		b_str(b, f, NULL);		/* group instance id */
	if (v >= 2 && v <= 4)
		b_i64(b, -1);			/* retention */
	b_arr(b, f, 1);
	b_str(b, f, topic);
	b_arr(b, f, 2);
	for (int p = 0; p < 2; p++)
	{
		b_i32(b, p);
		b_i64(b, p);
		if (v >= 6)
			b_i32(b, -1);
		if (v == 1)
			b_i64(b, -1);		/* commit timestamp */
		b_str(b, f, p ? NULL : "meta");
		b_tags(b, f);
	}
	b_tags(b, f);
	b_tags(b, f);
}

static void
corpus_offset_fetch(int v)
{
	Entry	   *e = new_entry(9, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;
	int			groups = v >= 8 ? 2 : 1;

	if (v >= 8)
		b_arr(b, f, groups);
	for (int g = 0; g < groups; g++)
	{
		b_str(b, f, g ? "fzh@@" : "fzg@@");
		if (v >= 2 && g == 1)
			b_arr(b, f, -1);	/* all topics */
		else
		{
			b_arr(b, f, 1);
			b_str(b, f, topic);
			b_arr(b, f, 2);
			b_i32(b, 0);
			b_i32(b, 1);
			b_tags(b, f);
		}
		if (v >= 8)
			b_tags(b, f);
	}
	if (v >= 7)
		b_i8(b, 1);				/* require stable */
	b_tags(b, f);
}

static void
corpus_find_coordinator(int v)
{
	Entry	   *e = new_entry(10, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	if (v <= 3)
		b_str(b, f, "fzg@@");
	if (v >= 1)
		b_i8(b, 0);
	if (v >= 4)
	{
		b_arr(b, f, 2);
		b_str(b, f, "fzg@@");
		b_str(b, f, "fzh@@");
	}
	b_tags(b, f);
}

static void
corpus_join_group(int v)
{
	Entry	   *e = new_entry(API_JOIN_GROUP, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_str(b, f, "fzj@@");
	b_i32(b, 6000);				/* session timeout */
	if (v >= 1)
		b_i32(b, 200);			/* rebalance timeout */
	b_str(b, f, "");			/* member id */
	if (v >= 5)
		b_str(b, f, NULL);
	b_str(b, f, "consumer");
	b_arr(b, f, 2);
	b_str(b, f, "range");
	b_bytes(b, f, "\0\1\0\0\0\1\0\2fz\xff\xff\xff\xff", 14);
	b_tags(b, f);
	b_str(b, f, "roundrobin");
	b_bytes(b, f, "", 0);
	b_tags(b, f);
	if (v >= 8)
		b_str(b, f, "fuzz");	/* reason */
	b_tags(b, f);
}

static void
corpus_heartbeat(int v)
{
	Entry	   *e = new_entry(12, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_str(b, f, "fzj@@");
	b_i32(b, 1);
	b_str(b, f, "member-x");
	if (v >= 3)
		b_str(b, f, NULL);
	b_tags(b, f);
}

static void
corpus_leave_group(int v)
{
	Entry	   *e = new_entry(13, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_str(b, f, "fzj@@");
	if (v <= 2)
		b_str(b, f, "member-x");
	else
	{
		b_arr(b, f, 2);
		for (int i = 0; i < 2; i++)
		{
			b_str(b, f, i ? "member-y" : "member-x");
			b_str(b, f, i ? "static-1" : NULL);
			if (v >= 5)
				b_str(b, f, i ? NULL : "bye");
			b_tags(b, f);
		}
	}
	b_tags(b, f);
}

static void
corpus_sync_group(int v)
{
	Entry	   *e = new_entry(API_SYNC_GROUP, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_str(b, f, "fzj@@");
	b_i32(b, 1);
	b_str(b, f, "member-x");
	if (v >= 3)
		b_str(b, f, NULL);
	if (v >= 5)
	{
		b_str(b, f, "consumer");
		b_str(b, f, "range");
	}
	b_arr(b, f, 1);
	b_str(b, f, "member-x");
	b_bytes(b, f, "\0\0\0\0\0\1\0\2fz\0\0\0\1\0\0\0\0\0\0\0\0", 22);
	b_tags(b, f);
	b_tags(b, f);
}

static void
corpus_describe_groups(int v)
{
	Entry	   *e = new_entry(15, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_arr(b, f, 3);
	b_str(b, f, "fzg@@");
	b_str(b, f, "fzj@@");
	b_str(b, f, "nosuch");
	if (v >= 3)
		b_i8(b, 1);
	b_tags(b, f);
}

static void
corpus_list_groups(int v)
{
	Entry	   *e = new_entry(16, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	if (v >= 4)
	{
		b_arr(b, f, 2);
		b_str(b, f, "Stable");
		b_str(b, f, "Empty");
	}
	b_tags(b, f);
}

static void
corpus_sasl(int api, int v)
{
	Entry	   *e = new_entry(api, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	if (api == API_SASL_HANDSHAKE)
		b_str(b, f, "PLAIN");
	else
	{
		b_bytes(b, f, "\0fuzz\0secret", 12);
		b_tags(b, f);
	}
}

static void
corpus_api_versions(int v)
{
	Entry	   *e = new_entry(API_API_VERSIONS, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	if (v >= 3)
	{
		b_str(b, f, "fuzz-gateway");
		b_str(b, f, "1.0");
		b_tags(b, f);
	}
}

static void
corpus_create_topics(int v)
{
	Entry	   *e = new_entry(19, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_arr(b, f, 2);
	/* One with a partition count, one with assignments and configs. */
	b_str(b, f, "fzc");
	b_i32(b, 2);
	b_i16(b, 1);
	b_arr(b, f, 0);
	b_arr(b, f, 1);
	b_str(b, f, "retention.ms");
	b_str(b, f, "60000");
	b_tags(b, f);
	b_tags(b, f);
	b_str(b, f, "fzc2");
	b_i32(b, -1);
	b_i16(b, -1);
	b_arr(b, f, 1);
	b_i32(b, 0);
	b_arr(b, f, 1);
	b_i32(b, 0);
	b_tags(b, f);
	b_arr(b, f, 1);
	b_str(b, f, "cleanup.policy");
	b_str(b, f, NULL);
	b_tags(b, f);
	b_tags(b, f);
	b_i32(b, 1000);
	if (v >= 1)
		b_i8(b, 1);				/* validate only */
	b_tags(b, f);
}

static void
corpus_delete_topics(int v)
{
	Entry	   *e = new_entry(20, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_arr(b, f, 2);
	for (int i = 0; i < 2; i++)
	{
		if (v >= 6)
		{
			b_str(b, f, i ? NULL : "fz-gone");
			b_raw(b, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\7", 16);
			b_tags(b, f);
		}
		else
			b_str(b, f, i ? "fz-gone2" : "fz-gone");
	}
	b_i32(b, 1000);
	b_tags(b, f);
}

static void
corpus_init_producer_id(int v)
{
	Entry	   *e = new_entry(22, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_str(b, f, NULL);			/* transactional_id */
	b_i32(b, 60000);
	if (v >= 3)
	{
		b_i64(b, -1);
		b_i16(b, -1);
	}
	b_tags(b, f);
}

/*
 * The transaction APIs: a transactional id no InitProducerId made (the
 * gateway answers with an error, and nothing is opened).
 */
static void
corpus_add_partitions_to_txn(int v)
{
	Entry	   *e = new_entry(24, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_str(b, f, "fz-txn");
	b_i64(b, 1);				/* producer id */
	b_i16(b, 0);				/* epoch */
	b_arr(b, f, 1);
	b_str(b, f, topic);
	b_arr(b, f, 2);
	b_i32(b, 0);
	b_i32(b, 1);
	b_tags(b, f);
	b_tags(b, f);
}

static void
corpus_add_offsets_to_txn(int v)
{
	Entry	   *e = new_entry(25, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_str(b, f, "fz-txn");
	b_i64(b, 1);
	b_i16(b, 0);
	b_str(b, f, "fzg@@");
	b_tags(b, f);
}

static void
corpus_end_txn(int v)
{
	Entry	   *e = new_entry(26, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_str(b, f, "fz-txn");
	b_i64(b, 1);
	b_i16(b, 0);
	b_i8(b, 1);					/* committed */
	b_tags(b, f);
}

static void
corpus_txn_offset_commit(int v)
{
	Entry	   *e = new_entry(28, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_str(b, f, "fz-txn");
	b_str(b, f, "fzg@@");
	b_i64(b, 1);
	b_i16(b, 0);
	if (v >= 3)
	{
		b_i32(b, -1);			/* generation */
		b_str(b, f, "");		/* member id */
		b_str(b, f, NULL);		/* group instance id */
	}
	b_arr(b, f, 1);
	b_str(b, f, topic);
	b_arr(b, f, 2);
	for (int p = 0; p < 2; p++)
	{
		b_i32(b, p);
		b_i64(b, p);
		if (v >= 2)
			b_i32(b, -1);		/* leader epoch */
		b_str(b, f, p ? NULL : "meta");
		b_tags(b, f);
	}
	b_tags(b, f);
	b_tags(b, f);
}

static void
corpus_describe_configs(int v)
{
	Entry	   *e = new_entry(32, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_arr(b, f, 2);
	b_i8(b, 2);					/* topic */
	b_str(b, f, topic);
	b_arr(b, f, 2);
	b_str(b, f, "retention.ms");
	b_str(b, f, "cleanup.policy");
	b_tags(b, f);
	b_i8(b, 4);					/* broker */
	b_str(b, f, "0");
	b_arr(b, f, -1);
	b_tags(b, f);
	if (v >= 1)
		b_i8(b, 1);
	if (v >= 3)
		b_i8(b, 1);
	b_tags(b, f);
}

static void
corpus_create_partitions(int v)
{
	Entry	   *e = new_entry(37, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_arr(b, f, 1);
	b_str(b, f, topic);
	b_i32(b, 4);
	b_arr(b, f, 1);
	b_arr(b, f, 1);
	b_i32(b, 0);
	b_tags(b, f);
	b_tags(b, f);
	b_i32(b, 1000);
	b_i8(b, 1);					/* validate only */
	b_tags(b, f);
}

static void
corpus_delete_groups(int v)
{
	Entry	   *e = new_entry(42, v, "");
	Buf		   *b = &e->body;
	bool		f = e->flex;

	b_arr(b, f, 2);
	b_str(b, f, "fzg-gone");
	b_str(b, f, "nosuch");
	b_tags(b, f);
}

static void
corpus_offset_delete(int v)
{
	Entry	   *e = new_entry(47, v, "");
	Buf		   *b = &e->body;

	b_str(b, false, "fzg-gone");
	b_arr(b, false, 1);
	b_str(b, false, topic);
	b_arr(b, false, 2);
	b_i32(b, 0);
	b_i32(b, 2);
}

static void
corpus_describe_cluster(int v)
{
	Entry	   *e = new_entry(60, v, "");
	Buf		   *b = &e->body;

	b_i8(b, 1);
	if (v >= 1)
		b_i8(b, 1);				/* endpoint type: brokers */
	b_tags(b, true);
}

static void
build_corpus(void)
{
	for (int v = 0; v <= 9; v++)
	{
		for (int c = 0; c < NCODECS; c++)
			corpus_produce(v, c, v % 2 ? -1 : 1, false);
		corpus_produce(v, CODEC_NONE, 1, true);
	}
	corpus_produce(3, CODEC_NONE, 0, false);	/* acks=0: no answer */
	for (int v = 4; v <= 12; v++)
		corpus_fetch(v);
	for (int v = 0; v <= 6; v++)
		corpus_list_offsets(v);
	for (int v = 0; v <= 12; v++)
	{
		corpus_metadata(v, true);
		corpus_metadata(v, false);
	}
	for (int v = 0; v <= 8; v++)
	{
		corpus_offset_commit(v);
		corpus_offset_fetch(v);
	}
	for (int v = 0; v <= 4; v++)
		corpus_find_coordinator(v);
	for (int v = 0; v <= 9; v++)
		corpus_join_group(v);
	for (int v = 0; v <= 4; v++)
		corpus_heartbeat(v);
	for (int v = 0; v <= 5; v++)
	{
		corpus_leave_group(v);
		corpus_sync_group(v);
		corpus_describe_groups(v);
	}
	for (int v = 0; v <= 4; v++)
		corpus_list_groups(v);
	for (int v = 0; v <= 1; v++)
		corpus_sasl(API_SASL_HANDSHAKE, v);
	for (int v = 0; v <= 2; v++)
		corpus_sasl(36, v);
	for (int v = 0; v <= 3; v++)
		corpus_api_versions(v);
	for (int v = 0; v <= 7; v++)
		corpus_create_topics(v);
	for (int v = 0; v <= 6; v++)
		corpus_delete_topics(v);
	for (int v = 0; v <= 4; v++)
		corpus_init_producer_id(v);
	for (int v = 0; v <= 3; v++)
		corpus_add_partitions_to_txn(v);
	for (int v = 0; v <= 3; v++)
		corpus_add_offsets_to_txn(v);
	for (int v = 0; v <= 3; v++)
		corpus_end_txn(v);
	for (int v = 0; v <= 3; v++)
		corpus_txn_offset_commit(v);
	for (int v = 0; v <= 4; v++)
		corpus_describe_configs(v);
	for (int v = 0; v <= 3; v++)
		corpus_create_partitions(v);
	for (int v = 0; v <= 2; v++)
		corpus_delete_groups(v);
	corpus_offset_delete(0);
	for (int v = 0; v <= 1; v++)
		corpus_describe_cluster(v);
	end_recording();
}

/* A request frame: size, header (v1, or v2 when flexible), body. */
static void
frame_of(Buf *out, int api, int version, bool flex, int32_t corr, const char *client_id,
		 const uint8_t *body, size_t blen)
{
	size_t		at = out->len;

	b_i32(out, 0);
	b_i16(out, api);
	b_i16(out, version);
	b_i32(out, corr);
	b_str(out, false, client_id);
	if (flex)
		b_i8(out, 0);
	b_raw(out, body, blen);
	put32_at(out->p + at, (uint32_t) (out->len - at - 4));
}

/* ---- mutations ---- */

static const int32_t interesting32[] = {
	0, -1, 1, 2, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x10000,
	0x7fffffff, (int32_t) 0x80000000, (int32_t) 0x7ffffffe, 1 << 20, -2
};
#define NINT32 ((int) (sizeof(interesting32) / sizeof(interesting32[0])))

/* Varints: zero, one, the largest, over-long, a cut continuation. */
static const uint8_t *const interesting_varints[] = {
	(const uint8_t *) "\x01\x00",
	(const uint8_t *) "\x01\x01",
	(const uint8_t *) "\x01\x7f",
	(const uint8_t *) "\x02\xff\x01",
	(const uint8_t *) "\x05\xff\xff\xff\xff\x0f",
	(const uint8_t *) "\x05\xfe\xff\xff\xff\x0f",
	(const uint8_t *) "\x06\xff\xff\xff\xff\xff\x01",
	(const uint8_t *) "\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
	(const uint8_t *) "\x0b\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
	(const uint8_t *) "\x01\x80",
	(const uint8_t *) "\x05\x80\x80\x80\x80\x08",
};
#define NVARINTS ((int) (sizeof(interesting_varints) / sizeof(interesting_varints[0])))

static void
insert_at(Buf *b, size_t at, const uint8_t *d, size_t n)
{
	b_reserve(b, n);
	memmove(b->p + at + n, b->p + at, b->len - at);
	memcpy(b->p + at, d, n);
	b->len += n;
}

static void
delete_at(Buf *b, size_t at, size_t n)
{
	if (at + n > b->len)
		n = b->len - at;
	memmove(b->p + at, b->p + at + n, b->len - at - n);
	b->len -= n;
}

/* One mutation of a request body (b, a copy). */
static void
mutate_body(Rng *r, Buf *b)
{
	size_t		at = b->len ? rnd(r, (uint32_t) b->len) : 0;

	switch (rnd(r, 12))
	{
		case 0:					/* bit flips */
			for (int i = 1 + (int) rnd(r, 3); i > 0 && b->len; i--)
				b->p[rnd(r, (uint32_t) b->len)] ^= (uint8_t) (1u << rnd(r, 8));
			break;
		case 1:					/* an interesting byte */
			if (b->len)
			{
				static const uint8_t ib[] = {0, 0xff, 0x7f, 0x80, 1, 0xfe};

				b->p[at] = ib[rnd(r, sizeof(ib))];
			}
			break;
		case 2:					/* an interesting int16 */
			if (b->len >= 2)
			{
				int32_t		v = interesting32[rnd(r, NINT32)];

				at = rnd(r, (uint32_t) b->len - 1);
				b->p[at] = (uint8_t) (v >> 8);
				b->p[at + 1] = (uint8_t) v;
			}
			break;
		case 3:					/* an interesting int32 */
			if (b->len >= 4)
				put32_at(b->p + rnd(r, (uint32_t) b->len - 3), (uint32_t) interesting32[rnd(r, NINT32)]);
			break;
		case 4:					/* an interesting varint, over 1-2 bytes */
			{
				const uint8_t *v = interesting_varints[rnd(r, NVARINTS)];

				delete_at(b, at, rnd(r, 3));
				insert_at(b, at, v + 1, v[0]);
				break;
			}
		case 5:					/* truncation */
			b->len = at;
			break;
		case 6:					/* random bytes appended or inserted */
			{
				uint8_t		rb[64];
				size_t		n = 1 + rnd(r, sizeof(rb));

				for (size_t i = 0; i < n; i++)
					rb[i] = (uint8_t) rnd(r, 256);
				insert_at(b, rnd(r, 2) ? b->len : at, rb, n);
				break;
			}
		case 7:					/* a segment deleted */
			delete_at(b, at, 1 + rnd(r, 16));
			break;
		case 8:					/* a segment duplicated */
			if (b->len)
			{
				size_t		n = 1 + rnd(r, (uint32_t) (b->len - at < 64 ? b->len - at : 64));
				uint8_t		seg[64];

				memcpy(seg, b->p + at, n);
				insert_at(b, rnd(r, (uint32_t) b->len + 1), seg, n);
			}
			break;
		case 9:					/* spliced with another request's body */
			{
				const Entry *o = &corpus[rnd(r, (uint32_t) ncorpus)];
				size_t		from = o->body.len ? rnd(r, (uint32_t) o->body.len) : 0;

				b->len = at;
				b_raw(b, o->body.p + from, o->body.len - from);
				break;
			}
		case 10:				/* a run of 0xff or 0x00 */
			{
				uint8_t		run[32];
				size_t		n = 1 + rnd(r, sizeof(run));

				memset(run, rnd(r, 2) ? 0xff : 0, n);
				if (at + n > b->len)
					n = b->len - at;
				memcpy(b->p + at, run, n);
				break;
			}
		default:				/* all random */
			b->len = 0;
			for (int n = (int) rnd(r, 200); n > 0; n--)
				b_i8(b, (int) rnd(r, 256));
			break;
	}
}

/*
 * One mutation of a value (an integer or a string's bytes) that keeps the
 * request's structure.
 */
static void
mutate_value(Rng *r, const Entry *e, Buf *b)
{
	const Field *f;
	uint8_t    *p;

	if (e->nfields == 0)
		return;
	f = &e->fields[rnd(r, (uint32_t) e->nfields)];
	p = b->p + f->at;
	if (f->kind == 'i')
	{
		int64_t		v;

		switch (rnd(r, 4))
		{
			case 0:
				v = -1;
				break;
			case 1:
				v = rnd(r, 2) ? 0 : 1;
				break;
			case 2:				/* the largest and smallest of the width */
				v = rnd(r, 2) ? -1 : 0;
				for (int i = 0; i < f->len; i++)
					p[i] = (uint8_t) (i == 0 ? (v ? 0x80 : 0x7f) : (v ? 0 : 0xff));
				return;
			default:
				v = interesting32[rnd(r, NINT32)] + (int64_t) rnd(r, 3) - 1;
				break;
		}
		for (int i = f->len - 1; i >= 0; i--, v >>= 8)
			p[i] = (uint8_t) v;
	}
	else
	{
		static const char special[] = "\0'\"\\%.\xff\x80 ,{}[]()";

		switch (rnd(r, 3))
		{
			case 0:
				for (int i = 0; i < f->len; i++)
					p[i] = (uint8_t) rnd(r, 256);
				break;
			case 1:
				memset(p, special[rnd(r, sizeof(special) - 1)], f->len);
				break;
			default:
				p[rnd(r, f->len)] = (uint8_t) special[rnd(r, sizeof(special) - 1)];
				break;
		}
	}
}

/*
 * A Produce body's batch CRC, recomputed after a mutation so that the
 * records behind it are reached (when the batch header still makes sense).
 */
static void
fix_crc(Buf *b, long at)
{
	uint32_t	blen;

	if (at < 0 || (size_t) at + 61 > b->len || b->p[at + 16] != 2)
		return;
	blen = get32(b->p + at + 8);
	if (blen < 49 || (size_t) at + 12 + blen > b->len)
		return;
	put32_at(b->p + at + 17, crc32c(b->p + at + 21, blen - 9));
}

/* ---- a connection's plan ---- */

typedef enum Ending
{
	END_CLEAN,					/* every frame whole, close when answered */
	END_ABSURD_SIZE,			/* the last frame's size absurd */
	END_CUT_CLOSE,				/* the last frame cut short, then close */
	END_CUT_SHUTDOWN,			/* cut short, then shutdown(SHUT_WR) */
	END_CUT_HOLD,				/* cut short, then held open a while */
	END_RANDOM,					/* random bytes after the frames */
	NENDINGS
} Ending;

typedef struct Expect
{
	size_t		end;			/* offset in out just past the frame */
	int32_t		corr;
	int			api;			/* -1: no header (too short) */
	bool		may_skip;		/* may get no answer */
	bool		flex_resp;		/* a response header v1 (tagged fields) */
} Expect;

typedef struct Plan
{
	Buf			out;
	Expect	   *exp;
	int			nexp;
	Ending		ending;
	int			hold_ms;
	int			window;			/* requests sent ahead of the answers */
	bool		slow;			/* trickled a byte at a time */
} Plan;

static uint64_t seed;
static int	session_pct = 50;	/* -m */

static Rng
conn_rng(uint64_t conn)
{
	Rng			r = {seed ^ (conn * 0xd1b54a32d192ed03ULL)};

	rng_next(&r);
	return r;
}

static void
add_expect(Plan *p, size_t end, const uint8_t *frame, size_t flen, bool may_skip)
{
	Expect	   *e;

	p->exp = realloc(p->exp, sizeof(Expect) * (size_t) (p->nexp + 1));
	if (p->exp == NULL)
		die("out of memory");
	e = &p->exp[p->nexp++];
	e->end = end;
	e->may_skip = may_skip;
	e->flex_resp = false;
	if (flen >= 12)
	{
		const ApiDef *d;
		int16_t		ver = (int16_t) ((frame[6] << 8) | frame[7]);

		e->api = (int16_t) ((frame[4] << 8) | frame[5]);
		e->corr = (int32_t) get32(frame + 8);
		d = api_def(e->api);
		e->flex_resp = d && e->api != API_API_VERSIONS && ver >= d->flex && ver <= d->max;
		if (e->api == API_PRODUCE)
			e->may_skip = true;
	}
	else
	{
		e->api = -1;
		e->corr = 0;
		e->may_skip = true;
	}
}

/*
 * The corpus's group names end in "@@": each connection's get two letters
 * of its own, so that connections seldom share (and wait on) a group.
 */
static void
name_groups(Buf *b, uint64_t conn)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyz0123456789";

	for (size_t i = 0; i + 2 <= b->len; i++)
		if (b->p[i] == '@' && b->p[i + 1] == '@')
		{
			b->p[i] = (uint8_t) letters[conn % 36];
			b->p[i + 1] = (uint8_t) letters[conn / 36 % 36];
		}
}

static void
make_plan(uint64_t conn, Plan *p, int max_frames)
{
	Rng			r = conn_rng(conn);
	int			n;
	bool		session;

	memset(p, 0, sizeof(*p));

	/*
	 * Two kinds of connections: "session" ones send long pipelines of
	 * valid requests and value mutations (each connection's PostgreSQL
	 * session serves many), with a byte-level mutation now and then;
	 * "garbage" ones send byte-level mutations only, which the gateway
	 * mostly rejects before PostgreSQL.
	 */
	session = (int) rnd(&r, 100) < session_pct;
	n = session ? 10 + (int) rnd(&r, 300) : 1 + (int) rnd(&r, 12);
	if (n > max_frames)
		n = max_frames;
	/* How many requests it sends ahead of the answers. */
	p->window = rnd(&r, 2) ? 1 + (int) rnd(&r, 4) : 1 + (int) rnd(&r, 64);
	p->ending = rnd(&r, 5) ? END_CLEAN : (Ending) (1 + rnd(&r, NENDINGS - 1));
	p->hold_ms = (int) rnd(&r, 1500);
	for (int i = 0; i < n; i++)
	{
		const Entry *e = &corpus[rnd(&r, (uint32_t) ncorpus)];
		Buf			body = {0};
		int			api,
					version;
		bool		flex;
		size_t		at = p->out.len;
		int32_t		corr = (int32_t) (conn * 1000 + (uint64_t) i);
		uint32_t	how = session ? rnd(&r, 20) : 19;
		const char *client_id = "fuzz";
		char		cid[300];

		/*
		 * A valid JoinGroup of v0-3 (v4+ without a member id is answered
		 * at once) waits for the group's rebalance, seconds: rare in
		 * sessions, so that they do not spend their time waiting.
		 */
		while (session && e->api == API_JOIN_GROUP && e->version < 4 && rnd(&r, 10))
			e = &corpus[rnd(&r, (uint32_t) ncorpus)];
		api = e->api;
		version = e->version;
		flex = e->flex;

		b_raw(&body, e->body.p, e->body.len);
		name_groups(&body, conn);
		if (how >= 8 && how < 19)
		{
			for (int m = 1 + (int) rnd(&r, 3); m > 0; m--)
				mutate_value(&r, e, &body);
			if (e->batch_at >= 0)
				fix_crc(&body, e->batch_at);
		}
		else if (how == 19)
		{
			for (int m = 1 + (int) rnd(&r, 3); m > 0; m--)
				mutate_body(&r, &body);
			if (e->batch_at >= 0 && rnd(&r, 4))
				fix_crc(&body, e->batch_at);
			/* The header too, now and then. */
			switch (rnd(&r, 16))
			{
				case 0:
					{
						static const int keys[] = {-1, 0x7fff, -32768, 4, 21, 22, 24, 50, 61, 68, 1000};

						api = rnd(&r, 2) ? keys[rnd(&r, sizeof(keys) / sizeof(keys[0]))] : (int) rnd(&r, 80);
						break;
					}
				case 1:
					{
						static const int vers[] = {-1, 0x7fff, -32768, 13, 100};

						version = rnd(&r, 2) ? vers[rnd(&r, 5)] : api_def(api)->max + 1 + (int) rnd(&r, 3);
						break;
					}
				case 2:
					flex = !flex;
					break;
				case 3:
					client_id = NULL;
					break;
				case 4:
					{
						size_t		len = rnd(&r, sizeof(cid));

						for (size_t k = 0; k < len; k++)
							cid[k] = (char) (1 + rnd(&r, 255));
						cid[len] = '\0';
						client_id = cid;
						break;
					}
				default:
					break;
			}
		}
		frame_of(&p->out, api, version, flex, corr, client_id, body.p, body.len);
		/* A header cut inside: a frame of 0 to 11 bytes. */
		if (rnd(&r, 200) == 0)
		{
			size_t		keep = rnd(&r, 12);

			p->out.len = at + 4 + keep;
			put32_at(p->out.p + at, (uint32_t) keep);
		}
		add_expect(p, p->out.len, p->out.p + at, p->out.len - at, false);
		free(body.p);
	}
	/* The ending, whose frame is never answered. */
	if (p->ending == END_ABSURD_SIZE)
	{
		static const uint32_t sizes[] = {0xffffffffu, 0x7fffffffu, 0x80000000u, 0x7ffffff0u, 104857601u, 0xfffffffbu};
		const Entry *e = &corpus[rnd(&r, (uint32_t) ncorpus)];
		size_t		at = p->out.len;

		frame_of(&p->out, e->api, e->version, e->flex, 1, "fuzz", e->body.p, e->body.len);
		put32_at(p->out.p + at, sizes[rnd(&r, sizeof(sizes) / sizeof(sizes[0]))]);
		add_expect(p, p->out.len, p->out.p + at, 0, true);
	}
	else if (p->ending >= END_CUT_CLOSE && p->ending <= END_CUT_HOLD)
	{
		const Entry *e = &corpus[rnd(&r, (uint32_t) ncorpus)];
		size_t		at = p->out.len;

		frame_of(&p->out, e->api, e->version, e->flex, 1, "fuzz", e->body.p, e->body.len);
		/* Cut anywhere, even inside the size; or a size larger than sent. */
		if (rnd(&r, 2))
			p->out.len = at + rnd(&r, (uint32_t) (p->out.len - at));
		else
			put32_at(p->out.p + at, get32(p->out.p + at) + 1 + rnd(&r, 100000));
		add_expect(p, p->out.len, p->out.p + at, 0, true);
	}
	else if (p->ending == END_RANDOM)
	{
		size_t		at = p->out.len;

		/* Its first byte not 0: no size small enough to be a request. */
		b_i8(&p->out, 1 + (int) rnd(&r, 255));
		for (int k = (int) rnd(&r, 300); k > 0; k--)
			b_i8(&p->out, (int) rnd(&r, 256));
		add_expect(p, p->out.len, p->out.p + at, 0, true);
	}
}

static void
free_plan(Plan *p)
{
	free(p->out.p);
	free(p->exp);
	memset(p, 0, sizeof(*p));
}

/* ---- connections ---- */

static const char *host = "127.0.0.1";
static int	port;
static int	stall_s = 20;
static bool quiet;
static volatile sig_atomic_t stop_requested;	/* SIGINT, SIGTERM */

static void
on_stop_signal(int sig)
{
	(void) sig;
	stop_requested = 1;
}

typedef struct Conn
{
	int			fd;
	uint64_t	id;
	Plan		plan;
	size_t		sent;
	int			head;			/* the oldest request not answered */
	int			frames_sent;	/* whole frames written */
	Buf			in;
	long long	last_progress_ms;
	long long	done_sending_ms;
	long long	next_byte_ms;	/* slow connections */
	bool		write_closed;
} Conn;

static long long findings,
			frames_total,
			handled,
			answered,
			closed_by_gateway,
			abandoned,
			waited_out,
			connections;

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
finding(Conn *c, const char *fmt, int a, int b)
{
	char		msg[256];

	snprintf(msg, sizeof(msg), fmt, a, b);
	findings++;
	fprintf(stdout, "FINDING: connection %llu: %s (replay: fuzz_gateway -p PORT -s %llu -m %d -r %llu)\n",
			(unsigned long long) c->id, msg, (unsigned long long) seed, session_pct, (unsigned long long) c->id);
	fflush(stdout);
}

static int
connect_to(void)
{
	struct sockaddr_in sa;
	int			fd = socket(AF_INET, SOCK_STREAM, 0);
	int			one = 1;

	if (fd < 0)
		die("socket failed");
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t) port);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		die("-h must be an IPv4 address");
	if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0)
	{
		fprintf(stderr, "fuzz_gateway: cannot connect to %s:%d: %s\n", host, port, strerror(errno));
		exit(2);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

static void
conn_open(Conn *c, uint64_t id, bool slow, int max_frames)
{
	memset(c, 0, sizeof(*c));
	c->id = id;
	make_plan(id, &c->plan, max_frames);
	c->plan.slow = slow;
	c->fd = connect_to();
	c->last_progress_ms = c->next_byte_ms = now_ms();
	connections++;
}

static void
conn_close(Conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	frames_total += c->frames_sent;
	free_plan(&c->plan);
	free(c->in.p);
	c->in.p = NULL;
	c->in.len = c->in.cap = 0;
}

/* Parses whole responses in c->in; false if the connection is done. */
static bool
conn_responses(Conn *c)
{
	size_t		pos = 0;

	while (c->in.len - pos >= 4)
	{
		int32_t		size = (int32_t) get32(c->in.p + pos);
		int32_t		corr;

		if (size < 4 || size > 256 * 1024 * 1024)
		{
			finding(c, "a response of size %d (a broken length)", size, 0);
			return false;
		}
		if (c->in.len - pos < 4 + (size_t) size)
			break;
		corr = (int32_t) get32(c->in.p + pos + 4);
		/* Requests with no answer (only a Produce may have none). */
		while (c->plan.exp && c->head < c->plan.nexp && c->plan.exp[c->head].corr != corr &&
			   c->plan.exp[c->head].may_skip && c->plan.exp[c->head].api == API_PRODUCE)
			c->head++;
		if (c->head >= c->plan.nexp)
		{
			finding(c, "a response (correlation id %d) to no request", corr, 0);
			return false;
		}
		if (c->plan.exp[c->head].corr != corr || c->plan.exp[c->head].api < 0)
		{
			finding(c, "a response with correlation id %d, expected %d",
					corr, c->plan.exp[c->head].corr);
			return false;
		}
		if (c->plan.exp[c->head].end > c->sent)
		{
			finding(c, "an answer (correlation id %d) to a request not yet complete (%d)", corr, c->head);
			return false;
		}
		if (c->plan.exp[c->head].flex_resp && size < 5)
		{
			finding(c, "a flexible response (correlation id %d) without tagged fields, size %d", corr, size);
			return false;
		}
		c->head++;
		answered++;
		handled++;
		pos += 4 + (size_t) size;
	}
	delete_at(&c->in, 0, pos);
	return true;
}

/*
 * Whether every request not answered yet may go unanswered (acks=0 Produce,
 * the broken last frame).
 */
static bool
rest_may_skip(Conn *c)
{
	for (int i = c->head; i < c->plan.nexp; i++)
		if (!c->plan.exp[i].may_skip)
			return false;
	return true;
}

/* Whether a request of this API may legitimately wait long for an answer. */
static bool
may_wait(int api)
{
	return api == API_FETCH || api == API_JOIN_GROUP || api == API_SYNC_GROUP;
}

/* How far the connection may have sent: its window ahead of the answers. */
static size_t
send_limit(const Conn *c)
{
	int			k = c->head,
				w = 0;

	/* A Produce may go unanswered (acks=0): it does not hold the window. */
	for (; k < c->plan.nexp; k++)
		if (c->plan.exp[k].api != API_PRODUCE && ++w == c->plan.window)
			return c->plan.exp[k].end;
	return c->plan.out.len;
}

/* One step: write, read, check. False once the connection is finished. */
static bool
conn_step(Conn *c, short revents, long long now)
{
	Plan	   *p = &c->plan;

	size_t		limit = send_limit(c);

	if (c->sent < limit && (revents & POLLOUT) && (!p->slow || now >= c->next_byte_ms))
	{
		size_t		n = p->slow ? 1 : limit - c->sent;
		ssize_t		w = send(c->fd, p->out.p + c->sent, n, MSG_NOSIGNAL);

		if (w > 0)
		{
			c->sent += (size_t) w;
			c->last_progress_ms = now;
			c->next_byte_ms = now + 20 + (long long) (c->id % 80);
			while (c->frames_sent < p->nexp && p->exp[c->frames_sent].end <= c->sent)
				c->frames_sent++;
			if (c->sent == p->out.len)
				c->done_sending_ms = now;
		}
		else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
		{
			if (c->head < c->frames_sent)
				handled++;		/* the request it closed on */
			closed_by_gateway++;
			return false;
		}
	}
	if (c->sent == p->out.len && !c->write_closed)
	{
		if (p->ending == END_CUT_CLOSE)
			return false;
		if (p->ending == END_CUT_SHUTDOWN)
		{
			shutdown(c->fd, SHUT_WR);
			c->write_closed = true;
		}
	}
	if (revents & (POLLIN | POLLHUP | POLLERR))
	{
		uint8_t		tmp[65536];
		ssize_t		got = recv(c->fd, tmp, sizeof(tmp), 0);

		if (got > 0)
		{
			b_raw(&c->in, tmp, (size_t) got);
			c->last_progress_ms = now;
			if (!conn_responses(c))
				return false;
		}
		else if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
		{
			if (c->in.len > 0)
				finding(c, "the stream ended within a response (%d bytes of it)", (int) c->in.len, 0);
			if (c->head < c->frames_sent)
				handled++;		/* the request it closed on */
			closed_by_gateway++;
			return false;
		}
	}
	if (c->sent == p->out.len)
	{
		if (c->head >= p->nexp)
			return p->ending == END_CUT_HOLD && now < c->done_sending_ms + p->hold_ms;
		if (rest_may_skip(c) && now >= c->done_sending_ms + (p->ending == END_CUT_HOLD ? p->hold_ms : 300))
			return false;
	}
	if (now - c->last_progress_ms > (long long) stall_s * 1000)
	{
		int			k = c->head;

		/* The first request sent whole that must be answered, and was not. */
		while (k < c->frames_sent && p->exp[k].may_skip)
			k++;
		if (k < c->frames_sent)
		{
			if (may_wait(p->exp[k].api))
				waited_out++;
			else
				finding(c, "no answer to API %d within -t seconds (request %d)", p->exp[k].api, k);
		}
		abandoned++;
		return false;
	}
	return true;
}

/* ---- the run ---- */

static void
run(long long nframes, int nconns, int nslow)
{
	int			total = nconns + nslow;
	Conn	   *cs = calloc((size_t) total, sizeof(Conn));
	struct pollfd *pfds = calloc((size_t) total, sizeof(struct pollfd));
	uint64_t	next_id = 1;
	long long	start = now_ms(),
				last_report = start;

	for (int i = 0; i < total; i++)
		cs[i].fd = -1;
	for (;;)
	{
		int			live = 0;
		long long	now = now_ms();

		for (int i = 0; i < total; i++)
		{
			if (cs[i].fd < 0 && handled < nframes && !stop_requested)
			{
				conn_open(&cs[i], next_id++, i >= nconns, i >= nconns ? 2 : 1000);
			}
			pfds[i].fd = cs[i].fd;
			pfds[i].events = cs[i].fd >= 0 ? (short) (POLLIN | (cs[i].sent < send_limit(&cs[i]) ? POLLOUT : 0)) : 0;
			pfds[i].revents = 0;
			if (cs[i].fd >= 0)
				live++;
		}
		if (live == 0)
			break;
		/* Slow connections end with the others. */
		if (stop_requested)
		{
			for (int i = 0; i < total; i++)
				if (cs[i].fd >= 0)
					conn_close(&cs[i]);
			break;
		}
		if (handled >= nframes)
		{
			bool		fast_live = false;

			for (int i = 0; i < nconns; i++)
				fast_live |= cs[i].fd >= 0;
			if (!fast_live)
			{
				for (int i = nconns; i < total; i++)
					if (cs[i].fd >= 0)
						conn_close(&cs[i]);
				break;
			}
		}
		if (poll(pfds, (nfds_t) total, 20) < 0 && errno != EINTR)
			die("poll failed");
		now = now_ms();
		for (int i = 0; i < total; i++)
			if (cs[i].fd >= 0 && !conn_step(&cs[i], pfds[i].revents, now))
				conn_close(&cs[i]);
		if (!quiet && now - last_report >= 5000)
		{
			last_report = now;
			printf("fuzz_gateway: %lld frames handled, %lld connections, %lld answers, %.0f s\n",
				   handled, connections, answered, (now - start) / 1000.0);
			fflush(stdout);
		}
	}
	{
		double		secs = (now_ms() - start) / 1000.0;

		printf("fuzz_gateway: seed %llu: %lld frames handled (%lld sent) on %lld connections in %.1f s (%.0f frames/s): "
			   "%lld answered, %lld connections closed by the gateway, %lld abandoned (%lld waiting in Fetch/JoinGroup/SyncGroup), %lld findings\n",
			   (unsigned long long) seed, handled, frames_total, connections, secs,
			   secs > 0 ? handled / secs : 0.0, answered, closed_by_gateway, abandoned,
			   waited_out, findings);
	}
	free(cs);
	free(pfds);
}

/* -V: the gateway's ApiVersions against the corpus, then each entry alone. */
static int
check_corpus(void)
{
	int			bad = 0;
	Conn		c;

	/* ApiVersions v0, answered with every API's versions. */
	{
		Buf			req = {0};
		uint8_t		resp[8192];
		size_t		got = 0;
		int			fd = connect_to();
		int			n;

		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		frame_of(&req, API_API_VERSIONS, 0, false, 7, "fuzz", NULL, 0);
		if (send(fd, req.p, req.len, MSG_NOSIGNAL) != (ssize_t) req.len)
			die("cannot send ApiVersions");
		while (got < 4 || got < 4 + get32(resp))
		{
			ssize_t		r = recv(fd, resp + got, sizeof(resp) - got, 0);

			if (r <= 0)
				die("no answer to ApiVersions");
			got += (size_t) r;
		}
		close(fd);
		free(req.p);
		n = (int) get32(resp + 10);
		if (n != NAPIS)
		{
			printf("corpus: the gateway advertises %d APIs, the corpus has %d\n", n, NAPIS);
			bad++;
		}
		for (int i = 0; i < n && 14 + 6 * (size_t) i + 6 <= got; i++)
		{
			const uint8_t *a = resp + 14 + 6 * i;
			int			key = (int16_t) ((a[0] << 8) | a[1]),
						min = (int16_t) ((a[2] << 8) | a[3]),
						max = (int16_t) ((a[4] << 8) | a[5]);
			const ApiDef *d = api_def(key);
			bool		have[64] = {0};

			for (int j = 0; j < ncorpus; j++)
				if (corpus[j].api == key && corpus[j].version < 64)
					have[corpus[j].version] = true;
			if (d == NULL || d->min != min || d->max != max)
			{
				printf("corpus: API %d versions %d to %d advertised, not in the fuzzer's table\n", key, min, max);
				bad++;
				continue;
			}
			for (int v = min; v <= max; v++)
				if (!have[v])
				{
					printf("corpus: API %d v%d advertised, no request of it in the corpus\n", key, v);
					bad++;
				}
		}
	}
	/* Each entry alone, on its own connection: an answer. */
	for (int i = 0; i < ncorpus; i++)
	{
		Entry	   *e = &corpus[i];
		long long	start = now_ms();
		bool		ok = false;

		memset(&c, 0, sizeof(c));
		c.id = 0;
		frame_of(&c.plan.out, e->api, e->version, e->flex, 4242, "fuzz", e->body.p, e->body.len);
		add_expect(&c.plan, c.plan.out.len, c.plan.out.p, c.plan.out.len, false);
		c.plan.exp[0].may_skip = e->no_answer;
		c.plan.window = 1;
		c.fd = connect_to();
		c.last_progress_ms = start;
		while (now_ms() - start < (long long) stall_s * 1000)
		{
			struct pollfd pf = {c.fd, (short) (POLLIN | (c.sent < c.plan.out.len ? POLLOUT : 0)), 0};

			poll(&pf, 1, 50);
			if (!conn_step(&c, pf.revents, now_ms()))
				break;
		}
		ok = c.head == 1;
		/* Produce acks=0: no answer is right. */
		if (e->no_answer)
			ok = c.head == 0;
		if (!quiet || !ok)
			printf("corpus: %s v%d %s: %s\n", api_def(e->api)->name, e->version, e->what,
				   ok ? "answered" : "NOT ANSWERED");
		if (!ok)
			bad++;
		conn_close(&c);
	}
	printf("corpus: %d requests, %d bad\n", ncorpus, bad);
	return bad ? 1 : 0;
}

int
main(int argc, char **argv)
{
	long long	nframes = 100000;
	int			nconns = 16,
				nslow = 4,
				opt;
	long long	replay = -1;
	const char *write_to = NULL;
	bool		verify = false;

	seed = (uint64_t) time(NULL);
	while ((opt = getopt(argc, argv, "h:p:n:s:c:S:t:r:w:m:Vq")) != -1)
	{
		switch (opt)
		{
			case 'h':
				host = optarg;
				break;
			case 'p':
				port = atoi(optarg);
				break;
			case 'n':
				nframes = atoll(optarg);
				break;
			case 's':
				seed = strtoull(optarg, NULL, 10);
				break;
			case 'c':
				nconns = atoi(optarg);
				break;
			case 'S':
				nslow = atoi(optarg);
				break;
			case 't':
				stall_s = atoi(optarg);
				break;
			case 'r':
				replay = atoll(optarg);
				break;
			case 'w':
				write_to = optarg;
				break;
			case 'm':
				session_pct = atoi(optarg);
				break;
			case 'V':
				verify = true;
				break;
			case 'q':
				quiet = true;
				break;
			default:
				fprintf(stderr, "usage: fuzz_gateway -p PORT [-h HOST] [-n FRAMES] [-s SEED] [-c CONNS] [-S SLOW] [-t STALL_S] [-r CONN [-w FILE]] [-m SESSION_PCT] [-V] [-q]\n");
				return 2;
		}
	}
	if (port <= 0 || nconns < 1 || nslow < 0 || stall_s < 1)
		die("give -p PORT (and -c >= 1, -S >= 0, -t >= 1)");
	signal(SIGPIPE, SIG_IGN);
	/* Stopped early, it still prints its summary. */
	signal(SIGINT, on_stop_signal);
	signal(SIGTERM, on_stop_signal);
	crc_init();
	build_corpus();
	if (verify)
		return check_corpus();
	if (replay >= 0)
	{
		Conn		c;

		conn_open(&c, (uint64_t) replay, false, 1000);
		printf("fuzz_gateway: seed %llu: replaying connection %lld: %d frames, %zu bytes\n",
			   (unsigned long long) seed, replay, c.plan.nexp, c.plan.out.len);
		if (write_to)
		{
			FILE	   *f = fopen(write_to, "wb");

			if (f == NULL || fwrite(c.plan.out.p, 1, c.plan.out.len, f) != c.plan.out.len || fclose(f) != 0)
				die("cannot write -w's file");
		}
		for (;;)
		{
			struct pollfd pf = {c.fd, (short) (POLLIN | (c.sent < c.plan.out.len ? POLLOUT : 0)), 0};

			poll(&pf, 1, 50);
			if (!conn_step(&c, pf.revents, now_ms()))
				break;
		}
		printf("fuzz_gateway: %d of %d requests answered, %lld findings\n", c.head, c.plan.nexp, findings);
		conn_close(&c);
		return findings ? 1 : 0;
	}
	printf("fuzz_gateway: seed %llu, %lld frames, %d connections at a time and %d slow ones, %s:%d\n",
		   (unsigned long long) seed, nframes, nconns, nslow, host, port);
	fflush(stdout);
	run(nframes, nconns, nslow);
	return findings ? 1 : 0;
}
