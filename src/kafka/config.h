/*-------------------------------------------------------------------------
 *
 * config.h
 *	  The gateway's settings (from the command line) and what follows
 *	  from them: the brokers it presents to clients, which of them it is,
 *	  and which one leads each partition.
 *
 * Settings are written once by main() before any connection thread starts
 * and only read afterwards, so threads read them without a lock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_CONFIG_H
#define KAFKA_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "log.h"

/* A host and port as the user wrote them ("[::1]:9092" gives "::1", 9092). */
typedef struct KHostPort
{
	char	   *host;
	int			port;
} KHostPort;

typedef struct KConfig
{
	KHostPort	listen;
	KHostPort	advertise;		/* --advertise, else --listen */
	char	   *dsn;
	char	   *read_dsn;		/* --read-dsn: Fetch and ListOffsets there */
	int			max_connections;
	int64_t		max_request_bytes;
	int64_t		max_request_memory; /* all frames at once (reqmem.c) */
	int64_t		idle_timeout_ms;	/* 0: never (conn.c) */
	int			idle_await_ms;	/* an idle Fetch's await, each (pg.c) */
	int			authentication_timeout_s;	/* with --sasl (main.c, conn.c) */
	int			max_transactional_ids;	/* the registry's bound (txn.c) */
	int			txn_idle_timeout_s; /* a transactional id's idle session
									 * closes, and it may be evicted (txn.c) */
	KHostPort  *brokers;		/* --brokers, else just advertise */
	int			nbrokers;
	int32_t		node_id;		/* this gateway's index in brokers */
	/* --sasl: the mechanisms clients must authenticate with (none: off) */
	bool		sasl_plain;
	bool		sasl_scram;
	/* --tls-cert, --tls-key, --tls-ca: NULL without TLS */
	char	   *tls_cert;
	char	   *tls_key;
	char	   *tls_ca;
} KConfig;

#define ksasl_enabled()	(kconf.sasl_plain || kconf.sasl_scram)

extern KConfig kconf;

#define K_DEFAULT_MAX_CONNECTIONS	1000
/* Kafka's socket.request.max.bytes default. */
#define K_DEFAULT_MAX_REQUEST_BYTES	(100 * 1024 * 1024)
/* Kafka's queued.max.request.bytes is unbounded by default; 256 MiB here. */
#define K_DEFAULT_MAX_REQUEST_MEMORY	(256 * 1024 * 1024)
/* Kafka's connections.max.idle.ms default: 10 minutes. */
#define K_DEFAULT_IDLE_TIMEOUT_MS	600000
/* An idle consumer's await runs this long before it is sent again (pg.c). */
#define K_DEFAULT_IDLE_AWAIT_MS	30000
/* PostgreSQL's authentication_timeout default: 1 minute. */
#define K_DEFAULT_AUTHENTICATION_TIMEOUT_S	60
/* Transactional ids coordinated at once: ~1.5 KB each when idle. */
#define K_DEFAULT_MAX_TRANSACTIONAL_IDS	100000
/* A transactional id's session idle this long is closed (txn.c). */
#define K_DEFAULT_TXN_IDLE_TIMEOUT_S	60

/*
 * Parse argv into kconf.  Returns -1 to go on, or the exit status: 0 after
 * --help or --version, 2 after a usage error (already reported).
 */
extern int	kconfig_parse(int argc, char **argv);

/* "host:port" (IPv6 in brackets) into hp; false if malformed. */
extern bool kparse_host_port(const char *s, KHostPort *hp);

/*
 * The node that leads a partition: the same answer on every gateway given
 * the same --brokers list (a stable hash of the topic's name, plus the
 * partition, modulo the number of brokers).
 */
extern int32_t kpartition_leader(const char *topic, int topic_len, int32_t partition);

#endif							/* KAFKA_CONFIG_H */
