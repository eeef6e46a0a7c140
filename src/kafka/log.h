/*-------------------------------------------------------------------------
 *
 * log.h
 *	  The gateway's log: one line per event on stderr, with a UTC timestamp
 *	  and a level, filtered by --log-level.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LOG_H
#define KAFKA_LOG_H

#include <stdbool.h>
#include <stddef.h>

typedef enum KLogLevel
{
	KLOG_ERROR = 0,
	KLOG_WARNING,
	KLOG_INFO,
	KLOG_DEBUG
} KLogLevel;

extern KLogLevel klog_level;

#define klog_enabled(level)	((level) <= klog_level)

extern void klog(KLogLevel level, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));

/* Level by name ("error", "warning", "info", "debug"); false if unknown. */
extern bool klog_parse_level(const char *name, KLogLevel *level);

/*
 * Bytes that came from a client (a client id, a topic name), made safe to
 * log: at most bufsize - 1 characters, anything but printable ASCII as '?',
 * "(null)" for a null string (len < 0).
 */
extern const char *klog_printable(const void *bytes, int len, char *buf, size_t bufsize);

#endif							/* KAFKA_LOG_H */
