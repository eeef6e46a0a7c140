/*-------------------------------------------------------------------------
 *
 * records.c
 *	  RecordBatch (magic 2) decoding with full validation, and a builder
 *	  that writes batches for Fetch responses (see records.h).
 *
 *-------------------------------------------------------------------------
 */
#include "records.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"

/*
 * The fewest bytes a record takes: its length varint, then attributes,
 * timestampDelta, offsetDelta, key length, value length and header count,
 * one byte each at least.  A header takes two (its two lengths).
 */
#define MIN_RECORD_BODY		6
#define MIN_RECORD_BYTES	(1 + MIN_RECORD_BODY)
#define MIN_HEADER_BYTES	2

/* Offset of the CRC field and of the bytes it covers. */
#define CRC_FIELD_AT		17
#define CRC_COVERS_FROM		21

/* Where the magic byte is in any message format (v0, v1 and v2). */
#define MAGIC_AT			16

int16_t
k_rec_error_code(KRecError e)
{
	switch (e)
	{
		case KREC_OK:
			return 0;
		case KREC_CORRUPT:
		case KREC_CRC:
			return K_ERR_CORRUPT_MESSAGE;
		case KREC_OLD_MAGIC:
			return K_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT;
		case KREC_UNSUPPORTED_COMPRESSION:
			return K_ERR_UNSUPPORTED_COMPRESSION_TYPE;
		case KREC_INVALID_RECORD:
			return K_ERR_INVALID_RECORD;
		case KREC_TOO_LARGE:
			return K_ERR_MESSAGE_TOO_LARGE;
		case KREC_NOMEM:
			break;
	}
	return K_ERR_UNKNOWN_SERVER_ERROR;
}

/* ------------------------------------------------------------------------
 * Decoding
 * ------------------------------------------------------------------------ */

typedef struct DecodeState
{
	KRecordSet *set;
	KRecLimits	lim;
	size_t		header_cap;		/* of the current batch's headers array */
} DecodeState;

static KRecError
fail(DecodeState *st, KRecError e, const char *fmt,...)
	__attribute__((format(printf, 3, 4)));

static KRecError
fail(DecodeState *st, KRecError e, const char *fmt,...)
{
	va_list		ap;

	st->set->error = e;
	va_start(ap, fmt);
	vsnprintf(st->set->errmsg, sizeof(st->set->errmsg), fmt, ap);
	va_end(ap);
	return e;
}

static void
free_batch(KRecordBatch *b)
{
	free(b->records);
	free(b->headers);
	free(b->decompressed);
	b->records = NULL;
	b->headers = NULL;
	b->decompressed = NULL;
}

/* Room for one more header in the batch's array (doubling). */
static bool
add_header_slot(DecodeState *st, KRecordBatch *b)
{
	if ((size_t) b->nheaders == st->header_cap)
	{
		size_t		ncap = st->header_cap ? st->header_cap * 2 : 16;
		KRecordHeader *nh = realloc(b->headers, ncap * sizeof(KRecordHeader));

		if (nh == NULL)
			return false;
		b->headers = nh;
		st->header_cap = ncap;
	}
	return true;
}

/* A varint length of -1 (null, if allowed) or 0..remaining bytes. */
static KSlice
record_bytes(KReader *r, bool nullable, bool *bad)
{
	int32_t		n = kr_varint(r);
	KSlice		s = {NULL, -1};

	if (r->error)
		return s;
	if (n < 0)
	{
		if (n != -1 || !nullable)
			*bad = true;
		return s;
	}
	s.ptr = kr_take(r, (size_t) n);
	s.len = s.ptr ? n : -1;
	return s;
}

/*
 * One record of the batch's records section.  The record's length varint
 * bounds a sub-reader, which must end exactly where the record does.
 */
static KRecError
decode_record(DecodeState *st, KRecordBatch *b, KReader *sec, int32_t i,
			  size_t *header_index)
{
	KRecord    *rec = &b->records[i];
	int32_t		len = kr_varint(sec);
	const uint8_t *body;
	KReader		r;
	int64_t		ts_delta;
	int32_t		nh;
	bool		bad = false;

	if (sec->error)
		return fail(st, KREC_CORRUPT, "record %d: truncated or malformed length", i);
	if (len < MIN_RECORD_BODY || (size_t) len > kr_remaining(sec))
		return fail(st, KREC_CORRUPT, "record %d: invalid length %d", i, len);
	body = kr_take(sec, (size_t) len);
	kr_init(&r, body, (size_t) len);

	rec->attributes = kr_int8(&r);
	ts_delta = kr_varlong(&r);
	rec->offset_delta = kr_varint(&r);
	rec->key = record_bytes(&r, true, &bad);
	rec->value = record_bytes(&r, true, &bad);
	nh = kr_varint(&r);
	if (r.error || bad)
		return fail(st, KREC_CORRUPT, "record %d: malformed key or value", i);
	if (rec->offset_delta != i)
		return fail(st, KREC_INVALID_RECORD,
					"record %d: offset delta %lld, expected %d",
					i, (long long) rec->offset_delta, i);
	/* Unsigned, so that a hostile delta wraps instead of overflowing. */
	rec->timestamp = (int64_t) ((uint64_t) b->base_timestamp + (uint64_t) ts_delta);
	if (nh < 0 || (size_t) nh > kr_remaining(&r) / MIN_HEADER_BYTES)
		return fail(st, KREC_CORRUPT, "record %d: invalid header count %d", i, nh);
	rec->nheaders = nh;
	rec->headers = NULL;
	*header_index = (size_t) b->nheaders;
	for (int32_t h = 0; h < nh; h++)
	{
		KRecordHeader hdr;

		/* Kafka rejects a negative header key length as an invalid record. */
		hdr.key = record_bytes(&r, false, &bad);
		if (bad)
			return fail(st, KREC_INVALID_RECORD,
						"record %d: header %d has a negative key length", i, h);
		hdr.value = record_bytes(&r, true, &bad);
		if (r.error || bad)
			return fail(st, KREC_CORRUPT, "record %d: header %d is truncated or malformed", i, h);
		/* Each header costs 32 bytes here: 2-byte headers must not add up. */
		if (st->set->nheaders >= st->lim.max_headers)
			return fail(st, KREC_TOO_LARGE, "more than %lld headers",
						(long long) st->lim.max_headers);
		if (!add_header_slot(st, b))
			return fail(st, KREC_NOMEM, "out of memory");
		st->set->nheaders++;
		b->headers[b->nheaders++] = hdr;
	}
	if (kr_remaining(&r) != 0)
		return fail(st, KREC_CORRUPT,
					"record %d: length %d does not match its content (%zu bytes left)",
					i, len, kr_remaining(&r));
	return KREC_OK;
}

/* The records section (decompressed if need be) of a checked header. */
static KRecError
decode_records(DecodeState *st, KRecordBatch *b, const uint8_t *sec, size_t seclen)
{
	KReader		r;
	size_t	   *hidx;
	KRecError	e = KREC_OK;

	if (b->codec != K_CODEC_NONE)
	{
		size_t		budget = st->lim.max_decompressed - st->set->decompressed_total;
		const char *msg;
		KCompStatus cs;

		if ((uint64_t) b->record_count * MIN_RECORD_BYTES > budget)
			return fail(st, KREC_TOO_LARGE,
						"%d records cannot fit in the %zu bytes left for decompression",
						b->record_count, budget);
		cs = k_decompress(b->codec, sec, seclen, budget,
						  &b->decompressed, &b->decompressed_len, &msg);
		switch (cs)
		{
			case K_COMP_OK:
				break;
			case K_COMP_TOO_LARGE:
				return fail(st, KREC_TOO_LARGE, "%s: %s", k_codec_name(b->codec), msg);
			case K_COMP_NOMEM:
				return fail(st, KREC_NOMEM, "%s: %s", k_codec_name(b->codec), msg);
			default:
				return fail(st, KREC_CORRUPT, "%s: %s", k_codec_name(b->codec), msg);
		}
		st->set->decompressed_total += b->decompressed_len;
		sec = b->decompressed;
		seclen = b->decompressed_len;
	}
	if ((uint64_t) b->record_count * MIN_RECORD_BYTES > seclen)
		return fail(st, KREC_CORRUPT, "record count %d does not fit in %zu bytes",
					b->record_count, seclen);

	b->records = calloc((size_t) b->record_count, sizeof(KRecord));
	hidx = malloc((size_t) b->record_count * sizeof(size_t));
	if (b->records == NULL || hidx == NULL)
	{
		free(hidx);
		return fail(st, KREC_NOMEM, "out of memory");
	}
	st->header_cap = 0;
	kr_init(&r, sec, seclen);
	for (int32_t i = 0; i < b->record_count && e == KREC_OK; i++)
		e = decode_record(st, b, &r, i, &hidx[i]);
	if (e == KREC_OK && kr_remaining(&r) != 0)
		e = fail(st, KREC_CORRUPT, "%zu bytes follow the last of %d records",
				 kr_remaining(&r), b->record_count);
	/* The headers array has stopped moving: point the records into it. */
	if (e == KREC_OK)
		for (int32_t i = 0; i < b->record_count; i++)
			b->records[i].headers = b->records[i].nheaders ? &b->headers[hidx[i]] : NULL;
	free(hidx);
	return e;
}

/* One batch at the start of r; on success r is past it. */
static KRecError
decode_batch(DecodeState *st, KRecordBatch *b, KReader *in)
{
	const uint8_t *start = in->p;
	size_t		avail = kr_remaining(in);
	KReader		r;
	int32_t		len;
	uint32_t	crc;

	if (avail < K_BATCH_LOG_OVERHEAD)
		return fail(st, KREC_CORRUPT, "truncated batch: %zu bytes left", avail);
	kr_init(&r, start, avail);
	b->base_offset = kr_int64(&r);
	len = kr_int32(&r);
	b->batch_length = len;
	/* The magic byte sits at the same place in every message format. */
	if (len < MAGIC_AT + 1 - K_BATCH_LOG_OVERHEAD || avail < MAGIC_AT + 1)
		return fail(st, KREC_CORRUPT, "invalid or truncated batch: length %d", len);
	b->magic = (int8_t) start[MAGIC_AT];
	if (b->magic == 0 || b->magic == 1)
		return fail(st, KREC_OLD_MAGIC,
					"message format v%d is not supported, only record batches (v2)",
					b->magic);
	if (b->magic != 2)
		return fail(st, KREC_CORRUPT, "unknown magic byte %d", b->magic);
	if (len < K_BATCH_HEADER_LEN - K_BATCH_LOG_OVERHEAD)
		return fail(st, KREC_CORRUPT, "batch length %d is shorter than a batch header", len);
	if ((size_t) len > avail - K_BATCH_LOG_OVERHEAD)
		return fail(st, KREC_CORRUPT, "truncated batch: length %d, %zu bytes left",
					len, avail - K_BATCH_LOG_OVERHEAD);
	if ((size_t) len + K_BATCH_LOG_OVERHEAD > st->lim.max_batch_bytes)
		return fail(st, KREC_TOO_LARGE, "batch of %lld bytes exceeds the limit of %zu",
					(long long) len + K_BATCH_LOG_OVERHEAD, st->lim.max_batch_bytes);
	b->raw = start;
	b->raw_len = (size_t) len + K_BATCH_LOG_OVERHEAD;
	kr_init(&r, start + K_BATCH_LOG_OVERHEAD, (size_t) len);
	b->partition_leader_epoch = kr_int32(&r);
	(void) kr_int8(&r);			/* the magic, already read */
	b->crc = kr_uint32(&r);
	crc = k_crc32c(0, start + CRC_COVERS_FROM, b->raw_len - CRC_COVERS_FROM);
	if (crc != b->crc)
		return fail(st, KREC_CRC, "crc mismatch: batch says %08x, content has %08x",
					b->crc, crc);
	b->attributes = kr_int16(&r);
	b->codec = b->attributes & K_ATTR_CODEC_MASK;
	b->last_offset_delta = kr_int32(&r);
	b->base_timestamp = kr_int64(&r);
	b->max_timestamp = kr_int64(&r);
	b->producer_id = kr_int64(&r);
	b->producer_epoch = kr_int16(&r);
	b->base_sequence = kr_int32(&r);
	b->record_count = kr_int32(&r);
	if (r.error)
		return fail(st, KREC_CORRUPT, "truncated batch header");	/* unreachable */
	if (b->codec > K_CODEC_ZSTD)
		return fail(st, KREC_UNSUPPORTED_COMPRESSION,
					"compression codec %d is not supported", b->codec);
	if (b->record_count < 0)
		return fail(st, KREC_CORRUPT, "negative record count %d", b->record_count);
	if (b->record_count == 0)
		return fail(st, KREC_INVALID_RECORD, "batch has no records");
	if (b->last_offset_delta != b->record_count - 1)
		return fail(st, KREC_INVALID_RECORD,
					"last offset delta %d does not match %d records",
					b->last_offset_delta, b->record_count);
	if (b->record_count > st->lim.max_records - st->set->nrecords)
		return fail(st, KREC_TOO_LARGE, "more than %lld records",
					(long long) st->lim.max_records);
	{
		KRecError	e = decode_records(st, b, r.p, kr_remaining(&r));

		if (e != KREC_OK)
			return e;
	}
	st->set->nrecords += b->record_count;
	(void) kr_take(in, b->raw_len);
	return KREC_OK;
}

KRecError
k_records_decode(const uint8_t *buf, size_t len, const KRecLimits *limits,
				 KRecordSet *set)
{
	DecodeState st;
	KReader		in;
	int32_t		cap = 0;

	memset(set, 0, sizeof(*set));
	set->error_batch = -1;
	st.set = set;
	if (limits)
		st.lim = *limits;
	else
	{
		st.lim.max_batch_bytes = K_REC_DEFAULT_MAX_BATCH_BYTES;
		st.lim.max_decompressed = K_REC_DEFAULT_MAX_DECOMPRESSED;
		st.lim.max_records = K_REC_DEFAULT_MAX_RECORDS;
		st.lim.max_headers = K_REC_DEFAULT_MAX_HEADERS;
	}
	kr_init(&in, buf, len);
	while (kr_remaining(&in) > 0)
	{
		KRecError	e;

		if (set->nbatches == cap)
		{
			int32_t		ncap = cap ? cap * 2 : 4;
			KRecordBatch *nb = realloc(set->batches, (size_t) ncap * sizeof(KRecordBatch));

			if (nb == NULL)
			{
				fail(&st, KREC_NOMEM, "out of memory");
				break;
			}
			set->batches = nb;
			cap = ncap;
		}
		memset(&set->batches[set->nbatches], 0, sizeof(KRecordBatch));
		set->nbatches++;
		e = decode_batch(&st, &set->batches[set->nbatches - 1], &in);
		if (e != KREC_OK)
		{
			set->error_batch = set->nbatches - 1;
			break;
		}
	}
	/* Nothing half-decoded survives an error (k_records_free keeps it). */
	if (set->error != KREC_OK)
		k_records_free(set);
	return set->error;
}

/* Frees the batches; the error fields stay for the caller to report. */
void
k_records_free(KRecordSet *set)
{
	for (int32_t i = 0; i < set->nbatches; i++)
		free_batch(&set->batches[i]);
	free(set->batches);
	set->batches = NULL;
	set->nbatches = 0;
	set->nrecords = 0;
	set->nheaders = 0;
	set->decompressed_total = 0;
}

/* ------------------------------------------------------------------------
 * Building
 * ------------------------------------------------------------------------ */

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t) (v >> 8);
	p[1] = (uint8_t) v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t) (v >> 24);
	p[1] = (uint8_t) (v >> 16);
	p[2] = (uint8_t) (v >> 8);
	p[3] = (uint8_t) v;
}

static void
put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t) (v >> 32));
	put32(p + 4, (uint32_t) v);
}

/* Bytes of a zigzag varint/varlong. */
static size_t
zz_size(int64_t v)
{
	return k_uvarint_size(((uint64_t) v << 1) ^ (uint64_t) (v >> 63));
}

/* Bytes of a record's key, value or header value: length and content. */
static size_t
slice_size(KSlice s)
{
	return s.len < 0 ? 1 : zz_size(s.len) + (size_t) s.len;
}

static bool
build_fail(KBatchBuilder *b, const char *msg)
{
	if (!b->failed)
		snprintf(b->errmsg, sizeof(b->errmsg), "%s", msg);
	b->failed = true;
	return false;
}

void
k_batch_begin(KBatchBuilder *b, KWriter *out, int64_t base_offset,
			  int64_t base_timestamp, int codec, int level)
{
	memset(b, 0, sizeof(*b));
	b->out = out;
	b->start = out->len;
	b->codec = codec;
	b->level = level;
	b->base_offset = base_offset;
	b->base_timestamp = base_timestamp;
	b->max_timestamp = base_timestamp;
	b->last_delta = -1;
	b->partition_leader_epoch = -1;
	b->producer_id = -1;
	b->producer_epoch = -1;
	b->base_sequence = -1;
	kw_init(&b->recs, out->limit);
	b->out_failed_before = out->error;
	if (out->error)
		build_fail(b, "the writer had already failed");
	else if (codec < K_CODEC_NONE || codec > K_CODEC_ZSTD)
		build_fail(b, "unknown compression codec");
	/* The header is written by k_batch_end; hold its place. */
	if (b->failed)
		return;
	if (!kw_reserve(out, K_BATCH_HEADER_LEN))
		build_fail(b, "batch exceeds the writer's limit");
	else
		out->len += K_BATCH_HEADER_LEN;
}

bool
k_batch_add(KBatchBuilder *b, int64_t offset, int64_t timestamp,
			KSlice key, KSlice value, const KRecordHeader *headers,
			int32_t nheaders)
{
	KWriter    *w = b->codec == K_CODEC_NONE ? b->out : &b->recs;
	int64_t		delta;
	int64_t		ts_delta;
	size_t		body;

	if (b->failed)
		return false;
	if (offset < b->base_offset || offset - b->base_offset > INT32_MAX ||
		offset - b->base_offset <= b->last_delta)
		return build_fail(b, "record offsets must increase from the base offset");
	if (nheaders < 0 || (nheaders > 0 && headers == NULL))
		return build_fail(b, "invalid headers");
	delta = offset - b->base_offset;
	ts_delta = (int64_t) ((uint64_t) timestamp - (uint64_t) b->base_timestamp);

	body = 1 + zz_size(ts_delta) + zz_size(delta) +
		slice_size(key) + slice_size(value) + zz_size(nheaders);
	for (int32_t h = 0; h < nheaders; h++)
	{
		if (headers[h].key.len < 0)
			return build_fail(b, "a header key cannot be null");
		body += slice_size(headers[h].key) + slice_size(headers[h].value);
	}
	if (body > INT32_MAX)
		return build_fail(b, "record too large");

	kw_varint(w, (int32_t) body);
	kw_int8(w, 0);
	kw_varlong(w, ts_delta);
	kw_varint(w, (int32_t) delta);
	kw_varint(w, key.len < 0 ? -1 : key.len);
	if (key.len > 0)
		kw_raw(w, key.ptr, (size_t) key.len);
	kw_varint(w, value.len < 0 ? -1 : value.len);
	if (value.len > 0)
		kw_raw(w, value.ptr, (size_t) value.len);
	kw_varint(w, nheaders);
	for (int32_t h = 0; h < nheaders; h++)
	{
		kw_varint(w, headers[h].key.len);
		kw_raw(w, headers[h].key.ptr, (size_t) headers[h].key.len);
		kw_varint(w, headers[h].value.len < 0 ? -1 : headers[h].value.len);
		if (headers[h].value.len > 0)
			kw_raw(w, headers[h].value.ptr, (size_t) headers[h].value.len);
	}
	if (w->error)
		return build_fail(b, "batch exceeds the writer's limit");
	if (b->count == 0 || timestamp > b->max_timestamp)
		b->max_timestamp = timestamp;
	b->last_delta = delta;
	b->count++;
	return true;
}

void
k_batch_abort(KBatchBuilder *b)
{
	/* The writer may have failed past the batch's start: cut it back. */
	if (b->out->len > b->start)
		b->out->len = b->start;
	b->out->error = b->out_failed_before;
	kw_free(&b->recs);
}

bool
k_batch_end(KBatchBuilder *b)
{
	KWriter    *out = b->out;
	uint8_t    *h;
	size_t		total;

	if (!b->failed && b->count == 0)
	{
		k_batch_abort(b);		/* no records: no batch */
		return true;
	}
	if (!b->failed && b->codec != K_CODEC_NONE)
	{
		const char *msg;

		if (k_compress(b->codec, b->level, b->recs.buf, b->recs.len, out, &msg) != K_COMP_OK)
			build_fail(b, msg);
	}
	if (!b->failed && (out->error || out->len - b->start - K_BATCH_LOG_OVERHEAD > INT32_MAX))
		build_fail(b, "batch exceeds the writer's limit");
	if (b->failed)
	{
		k_batch_abort(b);
		return false;
	}
	kw_free(&b->recs);

	total = out->len - b->start;
	h = out->buf + b->start;
	put64(h, (uint64_t) b->base_offset);
	put32(h + 8, (uint32_t) (total - K_BATCH_LOG_OVERHEAD));
	put32(h + 12, (uint32_t) b->partition_leader_epoch);
	h[16] = 2;					/* magic */
	put16(h + 21, (uint16_t) ((b->attributes & ~K_ATTR_CODEC_MASK) | b->codec));
	put32(h + 23, (uint32_t) b->last_delta);
	put64(h + 27, (uint64_t) b->base_timestamp);
	put64(h + 35, (uint64_t) b->max_timestamp);
	put64(h + 43, (uint64_t) b->producer_id);
	put16(h + 51, (uint16_t) b->producer_epoch);
	put32(h + 53, (uint32_t) b->base_sequence);
	put32(h + 57, (uint32_t) b->count);
	put32(h + CRC_FIELD_AT, k_crc32c(0, h + CRC_COVERS_FROM, total - CRC_COVERS_FROM));
	return true;
}
