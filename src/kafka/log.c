/*-------------------------------------------------------------------------
 *
 * log.c
 *	  Log lines on stderr: "2026-12-01 15:04:05.123 UTC LEVEL: message".
 *
 * Every thread logs; a line is formatted whole into a buffer and written
 * with one call, so lines of different connections never interleave.
 *
 *-------------------------------------------------------------------------
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

KLogLevel	klog_level = KLOG_INFO;

static const char *const level_names[] = {"ERROR", "WARNING", "INFO", "DEBUG"};

void
klog(KLogLevel level, const char *fmt,...)
{
	char		line[2048];
	struct timeval tv;
	struct tm	tm;
	size_t		n;
	va_list		ap;
	int			m;

	if (!klog_enabled(level))
		return;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%d %H:%M:%S", &tm);
	m = snprintf(line + n, sizeof(line) - n, ".%03d UTC %s: ",
				 (int) (tv.tv_usec / 1000), level_names[level]);
	if (m > 0)
		n += (size_t) m;
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	/* A line too long for the buffer is cut, never split. */
	if (m < 0 || (size_t) m >= sizeof(line) - n - 1)
		n = sizeof(line) - 2;
	else
		n += (size_t) m;
	line[n++] = '\n';
	(void) !write(STDERR_FILENO, line, n);
}

bool
klog_parse_level(const char *name, KLogLevel *level)
{
	static const char *const names[] = {"error", "warning", "info", "debug"};

	for (int i = 0; i < 4; i++)
	{
		if (strcasecmp(name, names[i]) == 0)
		{
			*level = (KLogLevel) i;
			return true;
		}
	}
	return false;
}

const char *
klog_printable(const void *bytes, int len, char *buf, size_t bufsize)
{
	const unsigned char *b = bytes;
	size_t		n = 0;

	if (len < 0)
		return "(null)";
	for (int i = 0; i < len && n + 1 < bufsize; i++)
		buf[n++] = (b[i] >= 0x20 && b[i] < 0x7f) ? (char) b[i] : '?';
	buf[n] = '\0';
	return buf;
}
