/*-------------------------------------------------------------------------
 *
 * format.c
 *	  How consume prints a record: kcat's -f tokens (%t topic, %p
 *	  partition, %o offset, %k key, %s value, %h headers as name=value
 *	  pairs, %T timestamp in milliseconds, %K and %S key and value lengths,
 *	  -1 when NULL, %% a percent sign; \n \t \r \0 \\ escapes), or -J, one
 *	  JSON object per record.  The default is kcat's: the value and a
 *	  newline.
 *
 * The format says which columns the query must fetch (cli.h's needs), so
 * that the default reads the values only.
 *
 *-------------------------------------------------------------------------
 */
#include "format.h"

#include <stdlib.h>
#include <string.h>

void
format_parse(Format *f, const char *spec, bool json)
{
	size_t		len;
	char	   *s;
	size_t		lit = 0;

	memset(f, 0, sizeof(*f));
	f->json = json;
	if (json)
	{
		f->needs = NEED_KEY | NEED_VALUE | NEED_HEADERS_JSON | NEED_TS;
		return;
	}
	s = cli_unescape(spec ? spec : "%s\\n", &len);
	f->parts = cli_malloc(sizeof(FormatPart) * (len + 1));
	for (size_t i = 0; i < len; i++)
	{
		FormatPart *p;

		if (s[i] == '%' && i + 1 < len && strchr("tpokshTKS%", s[i + 1]))
		{
			char		tok = s[i + 1];

			if (lit < i)
			{
				p = &f->parts[f->nparts++];
				p->token = 0;
				p->lit = s + lit;
				p->len = i - lit;
			}
			i++;
			lit = i + 1;
			if (tok == '%')
			{
				/* the '%' itself is a literal of one byte */
				lit = i;
				continue;
			}
			p = &f->parts[f->nparts++];
			p->token = tok;
			if (tok == 'k' || tok == 'K')
				f->needs |= NEED_KEY;
			else if (tok == 's' || tok == 'S')
				f->needs |= NEED_VALUE;
			else if (tok == 'h')
				f->needs |= NEED_HEADERS_KCAT;
			else if (tok == 'T')
				f->needs |= NEED_TS;
		}
	}
	if (lit < len)
	{
		FormatPart *p = &f->parts[f->nparts++];

		p->token = 0;
		p->lit = s + lit;
		p->len = len - lit;
	}
}

static void
write_num(const char *s)
{
	cli_puts(s);
}

static void
write_len(PGresult *res, int row, int col)
{
	char		buf[24];

	if (PQgetisnull(res, row, col))
		cli_write("-1", 2);
	else
	{
		snprintf(buf, sizeof(buf), "%d", PQgetlength(res, row, col));
		cli_puts(buf);
	}
}

/* A JSON string on standard output. */
static void
write_json_string(const char *s, size_t len)
{
	size_t		start = 0;
	char		esc[8];

	cli_write("\"", 1);
	for (size_t i = 0; i < len; i++)
	{
		unsigned char ch = (unsigned char) s[i];

		if (ch >= 0x20 && ch != '"' && ch != '\\')
			continue;
		cli_write(s + start, i - start);
		start = i + 1;
		if (ch == '"' || ch == '\\')
			snprintf(esc, sizeof(esc), "\\%c", ch);
		else if (ch == '\n')
			strcpy(esc, "\\n");
		else if (ch == '\t')
			strcpy(esc, "\\t");
		else if (ch == '\r')
			strcpy(esc, "\\r");
		else
			snprintf(esc, sizeof(esc), "\\u%04x", ch);
		cli_puts(esc);
	}
	cli_write(s + start, len - start);
	cli_write("\"", 1);
}

/*
 * One record: row of a result whose columns are COL_PARTITION, COL_OFFSET,
 * COL_KEY, COL_VALUE, COL_HEADERS, COL_TS (format.h).
 */
void
format_record(Format *f, const char *topic, PGresult *res, int row)
{
	if (f->json)
	{
		cli_puts("{\"topic\":");
		write_json_string(topic, strlen(topic));
		cli_puts(",\"partition\":");
		write_num(PQgetvalue(res, row, COL_PARTITION));
		cli_puts(",\"offset\":");
		write_num(PQgetvalue(res, row, COL_OFFSET));
		cli_puts(",\"ts\":");
		write_num(PQgetisnull(res, row, COL_TS) ? "-1" : PQgetvalue(res, row, COL_TS));
		cli_puts(",\"key\":");
		if (PQgetisnull(res, row, COL_KEY))
			cli_puts("null");
		else
			write_json_string(PQgetvalue(res, row, COL_KEY), PQgetlength(res, row, COL_KEY));
		cli_puts(",\"headers\":");
		cli_puts(PQgetisnull(res, row, COL_HEADERS) ? "null" : PQgetvalue(res, row, COL_HEADERS));
		cli_puts(",\"payload\":");
		cli_puts(PQgetisnull(res, row, COL_VALUE) ? "null" : PQgetvalue(res, row, COL_VALUE));
		cli_write("}\n", 2);
		return;
	}
	for (int i = 0; i < f->nparts; i++)
	{
		FormatPart *p = &f->parts[i];

		switch (p->token)
		{
			case 0:
				cli_write(p->lit, p->len);
				break;
			case 't':
				cli_puts(topic);
				break;
			case 'p':
				write_num(PQgetvalue(res, row, COL_PARTITION));
				break;
			case 'o':
				write_num(PQgetvalue(res, row, COL_OFFSET));
				break;
			case 'k':
				cli_write(PQgetvalue(res, row, COL_KEY), PQgetlength(res, row, COL_KEY));
				break;
			case 's':
				cli_write(PQgetvalue(res, row, COL_VALUE), PQgetlength(res, row, COL_VALUE));
				break;
			case 'h':
				cli_write(PQgetvalue(res, row, COL_HEADERS), PQgetlength(res, row, COL_HEADERS));
				break;
			case 'T':
				write_num(PQgetisnull(res, row, COL_TS) ? "-1" : PQgetvalue(res, row, COL_TS));
				break;
			case 'K':
				write_len(res, row, COL_KEY);
				break;
			case 'S':
				write_len(res, row, COL_VALUE);
				break;
		}
	}
}

/* The select list of the columns the format needs (others NULL). */
const char *
format_columns(Format *f)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf),
			 "r.partition, r.offset_id, %s, %s, %s, %s",
			 (f->needs & NEED_KEY) ? "r.key" : "NULL::text",
			 (f->needs & NEED_VALUE) ? "r.value::text" : "NULL::text",
			 (f->needs & NEED_HEADERS_JSON) ? "r.headers::text"
			 : (f->needs & NEED_HEADERS_KCAT)
			 ? "(SELECT pg_catalog.string_agg(h.name || '=' || (r.headers ->> h.name), ',')"
			 " FROM pg_catalog.jsonb_object_keys(r.headers) AS h(name))"
			 : "NULL::text",
			 (f->needs & NEED_TS)
			 ? "pg_catalog.floor(EXTRACT(epoch FROM r.event_time) * 1000)::bigint"
			 : "NULL::bigint");
	return buf;
}
