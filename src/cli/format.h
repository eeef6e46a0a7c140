/*-------------------------------------------------------------------------
 *
 * format.h
 *	  consume's output formats (format.c): kcat's -f tokens and -J.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FORMAT_H
#define FORMAT_H

#include "cli.h"

/* The columns of consume's queries, in this order (format_columns). */
#define COL_PARTITION 0
#define COL_OFFSET 1
#define COL_KEY 2
#define COL_VALUE 3
#define COL_HEADERS 4
#define COL_TS 5

#define NEED_KEY 1
#define NEED_VALUE 2
#define NEED_HEADERS_KCAT 4
#define NEED_HEADERS_JSON 8
#define NEED_TS 16

typedef struct FormatPart
{
	char		token;			/* 0: literal */
	const char *lit;
	size_t		len;
} FormatPart;

typedef struct Format
{
	bool		json;
	int			needs;
	FormatPart *parts;
	int			nparts;
} Format;

extern void format_parse(Format *f, const char *spec, bool json);
extern const char *format_columns(Format *f);
extern void format_record(Format *f, const char *topic, PGresult *res, int row);

#endif							/* FORMAT_H */
