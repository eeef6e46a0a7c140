/*-------------------------------------------------------------------------
 *
 * output.c
 *	  Writing: aligned tables for people (topic list, group describe, ...),
 *	  JSON strings and CSV fields for files, and standard output's writes,
 *	  which end the program quietly once the reader has gone (a consumer
 *	  piped into head): nothing more is printed, and nothing it could not
 *	  print is committed for a group.
 *
 *-------------------------------------------------------------------------
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void *
cli_malloc(size_t n)
{
	void	   *p = malloc(n ? n : 1);

	if (p == NULL)
		cli_error("out of memory");
	return p;
}

void *
cli_realloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		cli_error("out of memory");
	return p;
}

char *
cli_strdup(const char *s)
{
	size_t		n = strlen(s) + 1;

	return memcpy(cli_malloc(n), s, n);
}

/* Run before a quiet exit once the reader has gone (consume -g leaves). */
void		(*cli_reader_gone_hook) (void) = NULL;

static void
stdout_failed(void)
{
	/* The reader went away (EPIPE, SIGPIPE being ignored): stop quietly. */
	if (errno == EPIPE)
	{
		if (cli_reader_gone_hook)
			cli_reader_gone_hook();
		exit(EXIT_SUCCESS);
	}
	cli_error("could not write to standard output: %s", strerror(errno));
}

void
cli_write(const void *buf, size_t len)
{
	if (len > 0 && fwrite(buf, 1, len, stdout) != len)
		stdout_failed();
}

void
cli_puts(const char *s)
{
	cli_write(s, strlen(s));
}

void
cli_flush(void)
{
	if (fflush(stdout) != 0)
		stdout_failed();
}

void
cli_table_init(CliTable *t, int ncols, const char *const *header)
{
	t->ncols = ncols;
	t->nrows = 0;
	t->cap = 16;
	t->cells = cli_malloc(sizeof(char *) * ncols * t->cap);
	cli_table_add(t, header);
}

void
cli_table_add(CliTable *t, const char *const *row)
{
	if (t->nrows == t->cap)
	{
		t->cap *= 2;
		t->cells = cli_realloc(t->cells, sizeof(char *) * t->ncols * t->cap);
	}
	for (int c = 0; c < t->ncols; c++)
		t->cells[t->nrows * t->ncols + c] = cli_strdup(row[c] ? row[c] : "");
	t->nrows++;
}

/* Every row of a query's result, its columns in order (NULL as empty). */
void
cli_table_add_result(CliTable *t, PGresult *res)
{
	const char **row = cli_malloc(sizeof(char *) * t->ncols);

	for (int r = 0; r < PQntuples(res); r++)
	{
		for (int c = 0; c < t->ncols; c++)
			row[c] = PQgetisnull(res, r, c) ? "" : PQgetvalue(res, r, c);
		cli_table_add(t, (const char *const *) row);
	}
	free(row);
}

/* Columns padded to their widest cell, two spaces apart; header first. */
void
cli_table_print(CliTable *t)
{
	int		   *width = calloc(t->ncols, sizeof(int));

	if (width == NULL)
		cli_error("out of memory");
	for (int r = 0; r < t->nrows; r++)
		for (int c = 0; c < t->ncols; c++)
		{
			int			w = (int) strlen(t->cells[r * t->ncols + c]);

			if (w > width[c])
				width[c] = w;
		}
	for (int r = 0; r < t->nrows; r++)
	{
		for (int c = 0; c < t->ncols; c++)
		{
			const char *cell = t->cells[r * t->ncols + c];

			if (c == t->ncols - 1)
				cli_puts(cell);
			else if (fprintf(stdout, "%-*s  ", width[c], cell) < 0)
				stdout_failed();
		}
		cli_write("\n", 1);
	}
	for (int i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(width);
	cli_flush();
}

/* A JSON string: quotes, backslashes and control characters escaped. */
void
cli_json_string(FILE *f, const char *s, size_t len)
{
	size_t		start = 0;

	putc('"', f);
	for (size_t i = 0; i < len; i++)
	{
		unsigned char ch = (unsigned char) s[i];

		if (ch >= 0x20 && ch != '"' && ch != '\\')
			continue;
		fwrite(s + start, 1, i - start, f);
		start = i + 1;
		switch (ch)
		{
			case '"':
				fputs("\\\"", f);
				break;
			case '\\':
				fputs("\\\\", f);
				break;
			case '\n':
				fputs("\\n", f);
				break;
			case '\r':
				fputs("\\r", f);
				break;
			case '\t':
				fputs("\\t", f);
				break;
			default:
				fprintf(f, "\\u%04x", ch);
		}
	}
	fwrite(s + start, 1, len - start, f);
	putc('"', f);
}

/* A CSV field (RFC 4180): quoted when it holds a comma, quote or line break. */
void
cli_csv_field(FILE *f, const char *s, size_t len)
{
	if (memchr(s, ',', len) == NULL && memchr(s, '"', len) == NULL &&
		memchr(s, '\n', len) == NULL && memchr(s, '\r', len) == NULL)
	{
		fwrite(s, 1, len, f);
		return;
	}
	putc('"', f);
	for (size_t i = 0; i < len; i++)
	{
		if (s[i] == '"')
			putc('"', f);
		putc(s[i], f);
	}
	putc('"', f);
}
