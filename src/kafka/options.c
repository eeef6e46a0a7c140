/*-------------------------------------------------------------------------
 *
 * options.c
 *	  The command line: options into kconf, --help, --version, and the
 *	  checks that make a bad command line fail at start rather than when a
 *	  client connects (exit status 2 with a usage line).
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifndef K_VERSION
#define K_VERSION "unknown"
#endif

KConfig		kconf;

static const char *progname = "pg_eventlog_kafka";

#define USAGE_LINE \
	"usage: pg_eventlog_kafka --listen HOST:PORT --dsn CONNINFO [OPTION]...\n"

static void usage_error(const char *fmt,...) __attribute__((format(printf, 1, 2)));

static void
usage_error(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n" USAGE_LINE
			"Try \"%s --help\" for more information.\n", progname);
}

static void
help(void)
{
	printf("pg_eventlog_kafka speaks Kafka's wire protocol to Kafka clients and serves\n"
		   "pg_eventlog's topics from PostgreSQL, through libpq.\n\n"
		   USAGE_LINE "\n"
		   "Options:\n"
		   "  --listen HOST:PORT         address to accept Kafka clients on (required);\n"
		   "                             [::1]:9092 for IPv6, 0.0.0.0 or [::] for all\n"
		   "  --dsn CONNINFO             libpq connection string of the database whose\n"
		   "                             topics to serve (required)\n"
		   "  --read-dsn CONNINFO        serve Fetch and ListOffsets from this server\n"
		   "                             instead, a hot standby of --dsn's (default: --dsn)\n"
		   "  --advertise HOST:PORT      address clients are told to connect to\n"
		   "                             (default: the --listen address)\n"
		   "  --brokers H:P,H:P,...      every gateway serving this database, this one\n"
		   "                             included (as its --advertise address); partition\n"
		   "                             leadership is spread over them\n"
		   "  --max-connections N        client connections served at once (default %d)\n"
		   "  --max-request-bytes N      largest request accepted (default %d)\n"
		   "  --max-request-memory N     bytes of requests over 64 KiB read or handled at\n"
		   "                             once, over all connections; a request that does\n"
		   "                             not fit waits (default %d; at least\n"
		   "                             --max-request-bytes)\n"
		   "  --idle-timeout MS          close a connection that sent no request for this\n"
		   "                             long after its last response (default %d;\n"
		   "                             0: never)\n"
		   "  --idle-await-ms MS         how long the wait an idle consumer's Fetch leaves\n"
		   "                             in its session runs before it is renewed, checking\n"
		   "                             the consume privilege again (default %d)\n"
		   "  --authentication-timeout S  with --sasl, close a client that has not\n"
		   "                             authenticated this many seconds after it\n"
		   "                             connected (default %d)\n"
		   "  --max-transactional-ids N  transactional ids coordinated at once; a new one\n"
		   "                             evicts the least recently used idle one, or is\n"
		   "                             refused if none is idle (default %d)\n"
		   "  --transaction-idle-timeout S  close the PostgreSQL session of a transactional\n"
		   "                             id with no transaction open after S seconds;\n"
		   "                             unused that long, the id may be evicted\n"
		   "                             (default %d)\n"
		   "  --sasl MECHANISMS          require SASL authentication with these mechanisms\n"
		   "                             (plain, scram-sha-256, comma-separated); each\n"
		   "                             client then works as the role it logged in as\n"
		   "                             (default: none, every client is the --dsn role)\n"
		   "  --tls-cert FILE            serve TLS with this certificate (PEM, with its chain)\n"
		   "  --tls-key FILE             and this private key (PEM)\n"
		   "  --tls-ca FILE              require client certificates signed by these CAs\n"
		   "  --log-level LEVEL          error, warning, info (default) or debug\n"
		   "  --help                     show this help and exit\n"
		   "  --version                  show the version and exit\n\n"
		   "It runs in the foreground, logs to stderr and stops on SIGTERM or SIGINT.\n"
		   "See docs/kafka.md.\n",
		   K_DEFAULT_MAX_CONNECTIONS, K_DEFAULT_MAX_REQUEST_BYTES,
		   K_DEFAULT_MAX_REQUEST_MEMORY, K_DEFAULT_IDLE_TIMEOUT_MS,
		   K_DEFAULT_IDLE_AWAIT_MS, K_DEFAULT_AUTHENTICATION_TIMEOUT_S,
		   K_DEFAULT_MAX_TRANSACTIONAL_IDS, K_DEFAULT_TXN_IDLE_TIMEOUT_S);
}

bool
kparse_host_port(const char *s, KHostPort *hp)
{
	const char *colon;
	const char *host;
	size_t		hostlen;
	char	   *end;
	long		port;

	if (s[0] == '[')
	{
		const char *close = strchr(s, ']');

		if (close == NULL || close[1] != ':')
			return false;
		host = s + 1;
		hostlen = (size_t) (close - host);
		colon = close + 1;
	}
	else
	{
		colon = strrchr(s, ':');
		if (colon == NULL)
			return false;
		host = s;
		hostlen = (size_t) (colon - s);
		/* An IPv6 address must be in brackets: "::1:9092" is ambiguous. */
		if (memchr(host, ':', hostlen) != NULL)
			return false;
	}
	if (hostlen == 0 || hostlen > 255)
		return false;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno != 0 || end == colon + 1 || *end != '\0' || port < 1 || port > 65535)
		return false;
	hp->host = strndup(host, hostlen);
	if (hp->host == NULL)
		return false;
	hp->port = (int) port;
	return true;
}

static bool
parse_int64(const char *s, int64_t min, int64_t max, int64_t *v)
{
	char	   *end;
	long long	n;

	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || n < min || n > max)
		return false;
	*v = n;
	return true;
}

static bool
same_address(const KHostPort *a, const KHostPort *b)
{
	return a->port == b->port && strcasecmp(a->host, b->host) == 0;
}

static bool
is_wildcard(const char *host)
{
	return strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 ||
		strcmp(host, "*") == 0;
}

static bool
parse_brokers(const char *list)
{
	char	   *copy = strdup(list);
	char	   *save = NULL;
	int			n = 1;

	if (copy == NULL)
		return false;
	for (const char *c = list; *c; c++)
		if (*c == ',')
			n++;
	kconf.brokers = calloc((size_t) n, sizeof(KHostPort));
	if (kconf.brokers == NULL)
	{
		free(copy);
		return false;
	}
	kconf.nbrokers = 0;
	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save))
	{
		KHostPort	hp;

		if (!kparse_host_port(item, &hp))
		{
			usage_error("invalid broker address \"%s\" in --brokers: use HOST:PORT", item);
			free(copy);
			return false;
		}
		for (int i = 0; i < kconf.nbrokers; i++)
		{
			if (same_address(&kconf.brokers[i], &hp))
			{
				usage_error("broker \"%s\" is listed twice in --brokers", item);
				free(copy);
				return false;
			}
		}
		kconf.brokers[kconf.nbrokers++] = hp;
	}
	free(copy);
	if (kconf.nbrokers == 0)
	{
		usage_error("--brokers lists no broker");
		return false;
	}
	return true;
}

/* --sasl: "plain", "scram-sha-256" or both, comma-separated; or "none". */
static bool
parse_sasl(const char *list)
{
	char	   *copy = strdup(list);
	char	   *save = NULL;
	bool		none = false;

	if (copy == NULL)
		return false;
	kconf.sasl_plain = kconf.sasl_scram = false;
	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save))
	{
		if (strcasecmp(item, "plain") == 0)
			kconf.sasl_plain = true;
		else if (strcasecmp(item, "scram-sha-256") == 0)
			kconf.sasl_scram = true;
		else if (strcasecmp(item, "none") == 0)
			none = true;
		else
		{
			usage_error("invalid --sasl mechanism \"%s\": use plain, scram-sha-256 or both, comma-separated, or none", item);
			free(copy);
			return false;
		}
	}
	free(copy);
	if (none == ksasl_enabled())
	{
		usage_error("invalid --sasl \"%s\": use plain, scram-sha-256 or both, comma-separated, or none", list);
		return false;
	}
	return true;
}

int
kconfig_parse(int argc, char **argv)
{
	enum
	{
		OPT_LISTEN = 1000, OPT_DSN, OPT_READ_DSN, OPT_ADVERTISE, OPT_BROKERS, OPT_MAX_CONN,
		OPT_MAX_REQ, OPT_LOG_LEVEL, OPT_HELP, OPT_VERSION, OPT_SASL, OPT_TLS_CERT,
		OPT_TLS_KEY, OPT_TLS_CA, OPT_MAX_REQ_MEM, OPT_IDLE_TIMEOUT,
		OPT_AUTH_TIMEOUT, OPT_IDLE_AWAIT, OPT_MAX_TXN_IDS, OPT_TXN_IDLE_TIMEOUT
	};
	static const struct option options[] = {
		{"listen", required_argument, NULL, OPT_LISTEN},
		{"dsn", required_argument, NULL, OPT_DSN},
		{"read-dsn", required_argument, NULL, OPT_READ_DSN},
		{"advertise", required_argument, NULL, OPT_ADVERTISE},
		{"brokers", required_argument, NULL, OPT_BROKERS},
		{"max-connections", required_argument, NULL, OPT_MAX_CONN},
		{"max-request-bytes", required_argument, NULL, OPT_MAX_REQ},
		{"max-request-memory", required_argument, NULL, OPT_MAX_REQ_MEM},
		{"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
		{"authentication-timeout", required_argument, NULL, OPT_AUTH_TIMEOUT},
		{"idle-await-ms", required_argument, NULL, OPT_IDLE_AWAIT},
		{"max-transactional-ids", required_argument, NULL, OPT_MAX_TXN_IDS},
		{"transaction-idle-timeout", required_argument, NULL, OPT_TXN_IDLE_TIMEOUT},
		{"log-level", required_argument, NULL, OPT_LOG_LEVEL},
		{"sasl", required_argument, NULL, OPT_SASL},
		{"tls-cert", required_argument, NULL, OPT_TLS_CERT},
		{"tls-key", required_argument, NULL, OPT_TLS_KEY},
		{"tls-ca", required_argument, NULL, OPT_TLS_CA},
		{"help", no_argument, NULL, OPT_HELP},
		{"version", no_argument, NULL, OPT_VERSION},
		{NULL, 0, NULL, 0}
	};
	const char *listen_arg = NULL;
	const char *advertise_arg = NULL;
	const char *brokers_arg = NULL;
	int			c;
	int64_t		v;

	memset(&kconf, 0, sizeof(kconf));
	kconf.max_connections = K_DEFAULT_MAX_CONNECTIONS;
	kconf.max_request_bytes = K_DEFAULT_MAX_REQUEST_BYTES;
	kconf.max_request_memory = K_DEFAULT_MAX_REQUEST_MEMORY;
	kconf.idle_timeout_ms = K_DEFAULT_IDLE_TIMEOUT_MS;
	kconf.idle_await_ms = K_DEFAULT_IDLE_AWAIT_MS;
	kconf.authentication_timeout_s = K_DEFAULT_AUTHENTICATION_TIMEOUT_S;
	kconf.max_transactional_ids = K_DEFAULT_MAX_TRANSACTIONAL_IDS;
	kconf.txn_idle_timeout_s = K_DEFAULT_TXN_IDLE_TIMEOUT_S;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1)
	{
		switch (c)
		{
			case OPT_LISTEN:
				listen_arg = optarg;
				break;
			case OPT_DSN:
				kconf.dsn = optarg;
				break;
			case OPT_READ_DSN:
				kconf.read_dsn = optarg;
				break;
			case OPT_ADVERTISE:
				advertise_arg = optarg;
				break;
			case OPT_BROKERS:
				brokers_arg = optarg;
				break;
			case OPT_MAX_CONN:
				if (!parse_int64(optarg, 1, 1000000, &v))
				{
					usage_error("invalid --max-connections \"%s\": give a number from 1 to 1000000", optarg);
					return 2;
				}
				kconf.max_connections = (int) v;
				break;
			case OPT_MAX_REQ:
				/* A frame's size is an int32; a request header takes 10. */
				if (!parse_int64(optarg, 1024, INT32_MAX, &v))
				{
					usage_error("invalid --max-request-bytes \"%s\": give a number of bytes from 1024 to 2147483647", optarg);
					return 2;
				}
				kconf.max_request_bytes = v;
				break;
			case OPT_MAX_REQ_MEM:
				if (!parse_int64(optarg, 1024, INT64_MAX / 2, &v))
				{
					usage_error("invalid --max-request-memory \"%s\": give a number of bytes of at least 1024", optarg);
					return 2;
				}
				kconf.max_request_memory = v;
				break;
			case OPT_IDLE_TIMEOUT:
				/* SO_RCVTIMEO takes it as a struct timeval: any int32 fits. */
				if (!parse_int64(optarg, 0, INT32_MAX, &v))
				{
					usage_error("invalid --idle-timeout \"%s\": give a number of milliseconds from 0 (never) to 2147483647", optarg);
					return 2;
				}
				kconf.idle_timeout_ms = v;
				break;
			case OPT_IDLE_AWAIT:
				if (!parse_int64(optarg, 100, 3600000, &v))
				{
					usage_error("invalid --idle-await-ms \"%s\": give a number of milliseconds from 100 to 3600000", optarg);
					return 2;
				}
				kconf.idle_await_ms = (int) v;
				break;
			case OPT_AUTH_TIMEOUT:
				/* PostgreSQL's authentication_timeout has the same range. */
				if (!parse_int64(optarg, 1, 600, &v))
				{
					usage_error("invalid --authentication-timeout \"%s\": give a number of seconds from 1 to 600", optarg);
					return 2;
				}
				kconf.authentication_timeout_s = (int) v;
				break;
			case OPT_MAX_TXN_IDS:
				if (!parse_int64(optarg, 1, 10000000, &v))
				{
					usage_error("invalid --max-transactional-ids \"%s\": give a number from 1 to 10000000", optarg);
					return 2;
				}
				kconf.max_transactional_ids = (int) v;
				break;
			case OPT_TXN_IDLE_TIMEOUT:
				if (!parse_int64(optarg, 1, 86400, &v))
				{
					usage_error("invalid --transaction-idle-timeout \"%s\": give a number of seconds from 1 to 86400", optarg);
					return 2;
				}
				kconf.txn_idle_timeout_s = (int) v;
				break;
			case OPT_LOG_LEVEL:
				if (!klog_parse_level(optarg, &klog_level))
				{
					usage_error("invalid --log-level \"%s\": use error, warning, info or debug", optarg);
					return 2;
				}
				break;
			case OPT_SASL:
				if (!parse_sasl(optarg))
					return 2;
				break;
			case OPT_TLS_CERT:
				kconf.tls_cert = optarg;
				break;
			case OPT_TLS_KEY:
				kconf.tls_key = optarg;
				break;
			case OPT_TLS_CA:
				kconf.tls_ca = optarg;
				break;
			case OPT_HELP:
				help();
				return 0;
			case OPT_VERSION:
				printf("pg_eventlog_kafka (pg_eventlog) %s\n", K_VERSION);
				return 0;
			case ':':
				usage_error("option \"%s\" needs a value", argv[optind - 1]);
				return 2;
			default:
				usage_error("unknown option \"%s\"", argv[optind - 1]);
				return 2;
		}
	}
	if (optind < argc)
	{
		usage_error("unexpected argument \"%s\"", argv[optind]);
		return 2;
	}
	if (listen_arg == NULL)
	{
		usage_error("--listen is required");
		return 2;
	}
	if (kconf.dsn == NULL)
	{
		usage_error("--dsn is required");
		return 2;
	}
	/*
	 * A frame larger than the whole budget could never be read: refuse
	 * the combination rather than such frames (reqmem.c).
	 */
	if (kconf.max_request_bytes > kconf.max_request_memory)
	{
		usage_error("--max-request-bytes %lld is larger than --max-request-memory %lld: raise --max-request-memory or lower --max-request-bytes",
					(long long) kconf.max_request_bytes, (long long) kconf.max_request_memory);
		return 2;
	}
	if ((kconf.tls_cert == NULL) != (kconf.tls_key == NULL))
	{
		usage_error("--tls-cert and --tls-key go together");
		return 2;
	}
	if (kconf.tls_ca != NULL && kconf.tls_cert == NULL)
	{
		usage_error("--tls-ca needs --tls-cert and --tls-key");
		return 2;
	}
	if (!kparse_host_port(listen_arg, &kconf.listen))
	{
		usage_error("invalid --listen address \"%s\": use HOST:PORT, [IPv6]:PORT for IPv6", listen_arg);
		return 2;
	}
	if (advertise_arg != NULL)
	{
		if (!kparse_host_port(advertise_arg, &kconf.advertise) ||
			is_wildcard(kconf.advertise.host))
		{
			usage_error("invalid --advertise address \"%s\": use HOST:PORT with a host clients can reach", advertise_arg);
			return 2;
		}
	}
	else if (is_wildcard(kconf.listen.host))
	{
		usage_error("--listen \"%s\" accepts on every address: give --advertise HOST:PORT, the address clients should connect to", listen_arg);
		return 2;
	}
	else
		kconf.advertise = kconf.listen;

	if (brokers_arg != NULL)
	{
		if (!parse_brokers(brokers_arg))
			return 2;
		kconf.node_id = -1;
		for (int i = 0; i < kconf.nbrokers; i++)
			if (same_address(&kconf.brokers[i], &kconf.advertise))
				kconf.node_id = i;
		if (kconf.node_id < 0)
		{
			fprintf(stderr, "%s: this gateway's address %s:%d (--advertise, else --listen) is not in --brokers\n"
					USAGE_LINE, progname, kconf.advertise.host, kconf.advertise.port);
			return 2;
		}
	}
	else
	{
		kconf.brokers = &kconf.advertise;
		kconf.nbrokers = 1;
		kconf.node_id = 0;
	}
	return -1;
}

/*
 * FNV-1a over the topic's name: fixed by its definition, the same on every
 * platform, so every gateway agrees.
 */
int32_t
kpartition_leader(const char *topic, int topic_len, int32_t partition)
{
	uint32_t	h = 2166136261u;

	for (int i = 0; i < topic_len; i++)
	{
		h ^= (uint8_t) topic[i];
		h *= 16777619u;
	}
	return (int32_t) (((uint64_t) h + (uint32_t) partition) % (uint32_t) kconf.nbrokers);
}
