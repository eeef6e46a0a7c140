/*-------------------------------------------------------------------------
 *
 * options.c
 *	  Errors and the values of options: one-line messages with the exit
 *	  status they mean, numbers, sizes ("512MB"), durations ("7d") and the
 *	  backslash escapes of delimiters and formats ("\n", "\t").
 *
 * A value is checked here, before anything is sent to the server, when
 * the check is simple; otherwise it travels to the server as a parameter
 * and the server's message says what is wrong.
 *
 *-------------------------------------------------------------------------
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void
cli_error(const char *fmt,...)
{
	va_list		ap;

	fflush(stdout);
	fputs("pg_eventlog: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_FAILURE);
}

/* A wrong command line: what is wrong, and where the help is. */
void
cli_usage(const char *cmd, const char *fmt,...)
{
	va_list		ap;

	fputs("pg_eventlog: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try \"pg_eventlog%s%s --help\")\n", cmd ? " " : "", cmd ? cmd : "");
	exit(EXIT_USAGE);
}

int64_t
cli_int_arg(const char *cmd, const char *opt, const char *arg,
			int64_t min, int64_t max)
{
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || v < min || v > max)
	{
		if (max == INT64_MAX)
			cli_usage(cmd, "invalid value \"%s\" for %s: an integer of at least %lld expected",
					  arg, opt, (long long) min);
		cli_usage(cmd, "invalid value \"%s\" for %s: an integer from %lld to %lld expected",
				  arg, opt, (long long) min, (long long) max);
	}
	return v;
}

/* Bytes: an integer with an optional unit, kB MB GB TB (1024, as PostgreSQL). */
int64_t
cli_bytes_arg(const char *cmd, const char *opt, const char *arg)
{
	static const struct
	{
		const char *unit;
		int			shift;
	}			units[] = {
		{"", 0}, {"B", 0}, {"k", 10}, {"kB", 10}, {"K", 10}, {"KB", 10},
		{"M", 20}, {"MB", 20}, {"G", 30}, {"GB", 30}, {"T", 40}, {"TB", 40}
	};
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno == 0 && end != arg && v >= 0)
	{
		while (*end == ' ')
			end++;
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		{
			if (strcmp(end, units[i].unit) == 0)
			{
				if (v > (INT64_MAX >> units[i].shift))
					break;
				return (int64_t) v << units[i].shift;
			}
		}
	}
	cli_usage(cmd, "invalid size \"%s\" for %s: bytes expected, e.g. 1073741824, 512MB or 1GB", arg, opt);
}

/*
 * A duration: "7d", "12h", "30m", "45s", "500ms", "2w", or anything
 * PostgreSQL's interval input takes ("1 day 12 hours"), checked by the
 * server.  Returns the text of an interval.
 */
const char *
cli_interval_arg(const char *cmd, const char *opt, const char *arg)
{
	static const struct
	{
		const char *suffix;
		const char *unit;
	}			units[] = {
		{"ms", "milliseconds"}, {"s", "seconds"}, {"m", "minutes"}, {"min", "minutes"},
		{"h", "hours"}, {"d", "days"}, {"w", "weeks"}
	};
	const char *p = arg;
	char	   *buf;

	(void) cmd;
	(void) opt;
	while (isdigit((unsigned char) *p))
		p++;
	if (p == arg || p - arg > 15)
		return arg;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
	{
		if (strcmp(p, units[i].suffix) == 0)
		{
			buf = cli_malloc(64);
			snprintf(buf, 64, "%.*s %s", (int) (p - arg), arg, units[i].unit);
			return buf;
		}
	}
	return arg;
}

/* Backslash escapes of a delimiter or format: \n \r \t \0 \\. */
char *
cli_unescape(const char *s, size_t *len)
{
	char	   *out = cli_malloc(strlen(s) + 1);
	size_t		n = 0;

	for (; *s; s++)
	{
		if (*s == '\\' && s[1] != '\0')
		{
			s++;
			switch (*s)
			{
				case 'n':
					out[n++] = '\n';
					break;
				case 'r':
					out[n++] = '\r';
					break;
				case 't':
					out[n++] = '\t';
					break;
				case '0':
					out[n++] = '\0';
					break;
				case '\\':
					out[n++] = '\\';
					break;
				default:
					out[n++] = '\\';
					out[n++] = *s;
			}
		}
		else
			out[n++] = *s;
	}
	out[n] = '\0';
	if (len)
		*len = n;
	return out;
}

/* Whether the command line asks for help (before any other check). */
bool
cli_is_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-?") == 0)
			return true;
	}
	return false;
}

/* getopt's '?' or ':' as one line (opterr is off). */
void
cli_bad_option(const char *cmd, int c, char **argv)
{
	extern int	optind,
				optopt;

	if (c == ':')
		cli_usage(cmd, "option %s needs a value", argv[optind - 1]);
	if (optopt != 0)
		cli_usage(cmd, "unknown option \"-%c\"", optopt);
	cli_usage(cmd, "unknown option \"%s\"", argv[optind - 1]);
}

/* The one topic name left after the options. */
const char *
cli_require_topic(const char *cmd, int argc, char **argv)
{
	extern int	optind;

	if (optind >= argc)
		cli_usage(cmd, "a topic name is required");
	if (optind + 1 < argc)
		cli_usage(cmd, "unexpected argument \"%s\"", argv[optind + 1]);
	return argv[optind];
}
