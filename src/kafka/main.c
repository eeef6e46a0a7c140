/*-------------------------------------------------------------------------
 *
 * main.c
 *	  pg_eventlog_kafka: a Kafka wire-protocol gateway to pg_eventlog.
 *
 * The main thread listens and accepts; each client connection gets a
 * thread of its own with blocking I/O and, once a request needs the
 * database, a libpq connection of its own (conn.c, pg.c).  Requests on one
 * connection are handled one at a time and answered in order, as Kafka's
 * broker does.  This file also keeps the registry of open connections: the
 * cap on their number, and what shutdown needs to end them (their sockets
 * and the cancel handles of their queries in flight).
 *
 * SIGTERM and SIGINT stop the gateway: it stops accepting, shuts every
 * client socket down (which ends each thread's blocking read or write),
 * cancels every query in flight, waits for the threads to end (at most
 * K_SHUTDOWN_WAIT_S seconds) and exits 0.
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "io.h"
#include "log.h"
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define K_MAX_LISTEN_SOCKETS	16
#define K_SHUTDOWN_WAIT_S		10
/* Enough for libpq and the handlers, which keep big things on the heap. */
#define K_THREAD_STACK_BYTES	(512 * 1024)

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t registry_changed = PTHREAD_COND_INITIALIZER;
static KConn *registry_head;
static int	registry_count;
static uint64_t next_conn_id;
static atomic_bool stopping;

static int	signal_pipe[2] = {-1, -1};

void
kregistry_lock(void)
{
	pthread_mutex_lock(&registry_mutex);
}

void
kregistry_unlock(void)
{
	pthread_mutex_unlock(&registry_mutex);
}

bool
kshutting_down(void)
{
	return atomic_load(&stopping);
}

/*
 * A connection's thread leaves: its socket is closed here, under the lock,
 * so that shutdown never calls shutdown() on a descriptor number the
 * kernel has already given to someone else.
 */
void
kregistry_remove(KConn *conn)
{
	kregistry_lock();
	if (conn->prev)
		conn->prev->next = conn->next;
	else
		registry_head = conn->next;
	if (conn->next)
		conn->next->prev = conn->prev;
	if (conn->fd >= 0)
		close(conn->fd);
	conn->fd = -1;
	registry_count--;
	pthread_cond_signal(&registry_changed);
	kregistry_unlock();
}

static void
on_signal(int signo)
{
	int			saved_errno = errno;
	char		c = (char) signo;

	(void) !write(signal_pipe[1], &c, 1);
	errno = saved_errno;
}

static int
setup_signals(void)
{
	struct sigaction sa;

	if (pipe(signal_pipe) != 0)
		return -1;
	fcntl(signal_pipe[0], F_SETFL, O_NONBLOCK);
	fcntl(signal_pipe[1], F_SETFL, O_NONBLOCK);
	fcntl(signal_pipe[0], F_SETFD, FD_CLOEXEC);
	fcntl(signal_pipe[1], F_SETFD, FD_CLOEXEC);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* A client gone mid-response is an error return, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* Whether an address is a loopback one (127.0.0.0/8, ::1). */
static bool
is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *) sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *) sa)->sin6_addr);
	return false;
}

/*
 * Every address --listen names (both families of "localhost", say).
 * *exposed is set if one of them is not a loopback address.
 */
static int
open_listeners(int *fds, bool *exposed)
{
	struct addrinfo hints;
	struct addrinfo *res;
	char		port[16];
	int			n = 0;
	int			rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	snprintf(port, sizeof(port), "%d", kconf.listen.port);
	rc = getaddrinfo(strcmp(kconf.listen.host, "*") == 0 ? NULL : kconf.listen.host,
					 port, &hints, &res);
	if (rc != 0)
	{
		klog(KLOG_ERROR, "cannot resolve --listen host \"%s\": %s",
			 kconf.listen.host, gai_strerror(rc));
		return 0;
	}
	for (struct addrinfo *ai = res; ai && n < K_MAX_LISTEN_SOCKETS; ai = ai->ai_next)
	{
		char		host[NI_MAXHOST];
		int			fd;
		int			one = 1;

		getnameinfo(ai->ai_addr, ai->ai_addrlen, host, sizeof(host), NULL, 0, NI_NUMERICHOST);
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
		{
			klog(KLOG_WARNING, "cannot create a socket for %s: %s", host, strerror(errno));
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0)
		{
			klog(KLOG_ERROR, "cannot listen on %s port %d: %s", host, kconf.listen.port,
				 strerror(errno));
			close(fd);
			continue;
		}
		fcntl(fd, F_SETFL, O_NONBLOCK);
		if (!is_loopback(ai->ai_addr))
			*exposed = true;
		fds[n++] = fd;
	}
	freeaddrinfo(res);
	return n;
}

/*
 * Two descriptors per client (its socket and its libpq connection): raise
 * the soft limit on open files as far as the hard limit allows.
 */
static void
raise_fd_limit(void)
{
	struct rlimit rl;
	rlim_t		want = (rlim_t) kconf.max_connections * 2 + 64;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur < want)
	{
		rl.rlim_cur = (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want) ? want : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur < want)
		klog(KLOG_WARNING, "the open files limit (%llu) is too low for --max-connections %d: connections past about %llu will fail",
			 (unsigned long long) rl.rlim_cur, kconf.max_connections,
			 (unsigned long long) (rl.rlim_cur - 64) / 2);
}

/*
 * One malloc arena per core instead of glibc's eight.  Each connection is
 * a thread, and glibc gives threads arenas of their own up to 8 per core;
 * an arena keeps what its threads freed (up to its trim threshold, which
 * glibc raises to twice the largest block it has unmapped, and what
 * fragmentation pins), so resident memory grew with the arenas in use,
 * not with what is allocated: under test/kafka/fuzz_gateway.c on 2 cores,
 * 16 arenas held 14 MB of free memory for 1 MB in use, and after 100,000
 * requests the gateway's resident memory was 24 MB (peak 30) where it was
 * 12 MB (peak 17 and 20) with one arena and with two (docs/kafka.md,
 * "Fuzz test").  A thread per core is the most that can allocate at once,
 * so the lock contention this adds is small (no change in the gateway's
 * CPU per request measured there).  MALLOC_ARENA_MAX (or GLIBC_TUNABLES)
 * in the environment still decides.
 */
static void
bound_malloc_arenas(void)
{
#ifdef M_ARENA_MAX
	long		ncpu;
	const char *tunables = getenv("GLIBC_TUNABLES");

	if (getenv("MALLOC_ARENA_MAX") != NULL ||
		(tunables != NULL && strstr(tunables, "arena_max") != NULL))
		return;
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	mallopt(M_ARENA_MAX, ncpu < 1 ? 1 : ncpu > 1024 ? 1024 : (int) ncpu);
#endif
}

/*
 * Fixed mmap and trim thresholds instead of glibc's sliding ones.  A
 * Produce or Fetch request's buffers are a few hundred kB to a few MB,
 * allocated and freed per request.  glibc maps the first such block,
 * then raises its mmap threshold past it and its trim threshold to twice
 * it, so later ones come from an arena; but a thread's arena that is not
 * the main one gives a free top above the trim threshold back to the
 * kernel (madvise) at every free, and the next request faults the pages
 * in again.  With a kafkajs producer of 1,000-record batches that churn
 * was about two thirds of the connection thread's CPU (perf: memset and
 * memmove in page faults, madvise, sysmalloc), and the connection that
 * happened to get the main arena cost a third as much.  Blocks up to
 * 4 MB come from the arenas, and an arena keeps up to 8 MB free at its
 * top: with one arena per core, at most 8 MB per core held back.
 * MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_ (or GLIBC_TUNABLES) in
 * the environment still decide.
 */
static void
fix_malloc_thresholds(void)
{
	const char *tunables = getenv("GLIBC_TUNABLES");

	if (getenv("MALLOC_MMAP_THRESHOLD_") == NULL &&
		(tunables == NULL || strstr(tunables, "mmap_threshold") == NULL))
		mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
	if (getenv("MALLOC_TRIM_THRESHOLD_") == NULL &&
		(tunables == NULL || strstr(tunables, "trim_threshold") == NULL))
		mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
}

/* Tell the user at start whether the database is there (no exit if not). */
static void
check_database(void)
{
	const char *const keys[] = {"dbname", "fallback_application_name", NULL};
	const char *const values[] = {kconf.dsn, "pg_eventlog_kafka", NULL};
	PGconn	   *pg = PQconnectdbParams(keys, values, 1);
	PGresult   *res;

	if (PQstatus(pg) != CONNECTION_OK)
	{
		klog(KLOG_WARNING, "cannot connect to PostgreSQL with --dsn (clients will get errors until it can): %s",
			 kpg_trimmed(PQerrorMessage(pg)));
		PQfinish(pg);
		return;
	}
	res = PQexec(pg, "SELECT pg_catalog.current_database(), current_user, "
				 "(SELECT e.extversion FROM pg_catalog.pg_extension e WHERE e.extname = 'pg_eventlog')");
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
	{
		if (PQgetisnull(res, 0, 2))
			klog(KLOG_WARNING, "database \"%s\" has no pg_eventlog extension: no topics to serve until CREATE EXTENSION pg_eventlog",
				 PQgetvalue(res, 0, 0));
		else
			klog(KLOG_INFO, "serving database \"%s\" as role \"%s\" (pg_eventlog %s)",
				 PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2));
	}
	else
		klog(KLOG_WARNING, "cannot check the database: %s",
			 kpg_trimmed(PQresultErrorMessage(res)));
	PQclear(res);
	PQfinish(pg);
}

static time_t
monotonic_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static void
accept_one(int lfd, const pthread_attr_t *attr)
{
	struct sockaddr_storage addr;
	socklen_t	addrlen = sizeof(addr);
	char		host[64];		/* numeric: INET6_ADDRSTRLEN is 46 */
	char		serv[16];
	char		peer[96];
	KConn	   *conn;
	int			fd;
	int			one = 1;
	int			rc;
	sigset_t	block;
	sigset_t	old;

	fd = accept(lfd, (struct sockaddr *) &addr, &addrlen);
	if (fd < 0)
	{
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
		{
			klog(KLOG_WARNING, "cannot accept a connection: %s", strerror(errno));
			/* The pending connection stays queued: do not spin on it. */
			usleep(100 * 1000);
		}
		return;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (getnameinfo((struct sockaddr *) &addr, addrlen, host, sizeof(host), serv, sizeof(serv),
					NI_NUMERICHOST | NI_NUMERICSERV) != 0)
		snprintf(peer, sizeof(peer), "unknown");
	else if (addr.ss_family == AF_INET6)
		snprintf(peer, sizeof(peer), "[%s]:%s", host, serv);
	else
		snprintf(peer, sizeof(peer), "%s:%s", host, serv);

	kregistry_lock();
	if (registry_count >= kconf.max_connections)
	{
		kregistry_unlock();
		klog(KLOG_WARNING, "connection from %s refused: %d connections are open (--max-connections)",
			 peer, kconf.max_connections);
		close(fd);
		return;
	}
	conn = calloc(1, sizeof(KConn));
	if (conn == NULL)
	{
		kregistry_unlock();
		klog(KLOG_WARNING, "connection from %s refused: out of memory", peer);
		close(fd);
		return;
	}
	conn->id = ++next_conn_id;
	conn->fd = fd;
	if (ksasl_enabled())
		conn->auth_deadline = monotonic_seconds() + kconf.authentication_timeout_s;
	memcpy(conn->peer, peer, sizeof(peer));
	conn->next = registry_head;
	if (registry_head)
		registry_head->prev = conn;
	registry_head = conn;
	registry_count++;
	kregistry_unlock();

	/* Kafka's requests are small and answered at once: no Nagle delay. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));

	/* Signals are the main thread's: connection threads block them. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	{
		pthread_t	thread;

		rc = pthread_create(&thread, attr, kconn_main, conn);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
	{
		klog(KLOG_WARNING, "connection from %s refused: cannot start a thread: %s", peer, strerror(rc));
		kregistry_remove(conn);
		free(conn);
	}
}

/*
 * Shuts down the connections that have not authenticated by their
 * deadline (--authentication-timeout after they connected).  conn.c
 * closes a client silent for 30 s (or that timeout, if shorter) before it
 * authenticated, but one that trickles a byte at a time (in a TLS
 * handshake, a frame, or one ApiVersions after another) would never be
 * silent that long, and would keep its thread and its place under
 * --max-connections for good.
 */
static void
end_late_logins(void)
{
	time_t		now = monotonic_seconds();

	kregistry_lock();
	for (KConn *c = registry_head; c; c = c->next)
	{
		if (c->auth_deadline != 0 && now >= c->auth_deadline && c->fd >= 0)
		{
			c->auth_deadline = 0;
			klog(KLOG_WARNING, "conn %llu (%s): did not authenticate within %d seconds of connecting: closing",
				 (unsigned long long) c->id, c->peer, kconf.authentication_timeout_s);
			shutdown(c->fd, SHUT_RDWR);
		}
	}
	kregistry_unlock();
}

/* Shut every client socket down and cancel every query in flight. */
static void
end_connections(bool sockets)
{
	kregistry_lock();
	for (KConn *c = registry_head; c; c = c->next)
	{
		if (sockets && c->fd >= 0)
			shutdown(c->fd, SHUT_RDWR);
		if (c->in_query && c->pg_cancel)
		{
			char		errbuf[256];

			PQcancel(c->pg_cancel, errbuf, sizeof(errbuf));
		}
	}
	kregistry_unlock();
}

static void
shut_down(void)
{
	struct timespec deadline;
	int			left;

	end_connections(true);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += K_SHUTDOWN_WAIT_S;
	kregistry_lock();
	while (registry_count > 0)
	{
		struct timespec tick;

		clock_gettime(CLOCK_REALTIME, &tick);
		if (tick.tv_sec >= deadline.tv_sec)
			break;
		tick.tv_sec += 1;
		pthread_cond_timedwait(&registry_changed, &registry_mutex, &tick);
		if (registry_count > 0)
		{
			/* A query sent just after the first cancel: cancel again. */
			kregistry_unlock();
			end_connections(false);
			kregistry_lock();
		}
	}
	left = registry_count;
	kregistry_unlock();
	if (left > 0)
		klog(KLOG_WARNING, "%d connections did not end within %d seconds; exiting anyway",
			 left, K_SHUTDOWN_WAIT_S);
}

int
main(int argc, char **argv)
{
	int			rc;
	int			lfds[K_MAX_LISTEN_SOCKETS];
	int			nlisten;
	struct pollfd pfds[K_MAX_LISTEN_SOCKETS + 1];
	pthread_attr_t attr;
	int			status = 0;
	bool		exposed = false;

	/* Before any thread allocates (and gets an arena). */
	bound_malloc_arenas();
	fix_malloc_thresholds();
	rc = kconfig_parse(argc, argv);
	if (rc >= 0)
		return rc;
	if (PQisthreadsafe() == 0)
	{
		klog(KLOG_ERROR, "this libpq is not thread-safe");
		return 1;
	}
	if (setup_signals() != 0)
	{
		klog(KLOG_ERROR, "cannot set up signal handling: %s", strerror(errno));
		return 1;
	}
	if (!kio_setup())
		return 1;
	raise_fd_limit();
	nlisten = open_listeners(lfds, &exposed);
	if (nlisten == 0)
		return 1;
	klog(KLOG_INFO, "pg_eventlog_kafka %s listening on %s:%d, advertised as %s:%d, node %d of %d",
#ifdef K_VERSION
		 K_VERSION,
#else
		 "unknown",
#endif
		 kconf.listen.host, kconf.listen.port, kconf.advertise.host, kconf.advertise.port,
		 kconf.node_id, kconf.nbrokers);
	klog(KLOG_INFO, "%s, %s",
		 kconf.sasl_plain && kconf.sasl_scram ? "SASL PLAIN and SCRAM-SHA-256 required" :
		 kconf.sasl_plain ? "SASL PLAIN required" :
		 kconf.sasl_scram ? "SASL SCRAM-SHA-256 required" :
		 "no authentication: every client works as the --dsn role",
		 kconf.tls_cert ? "TLS" : "plain TCP");
	if (exposed && !ksasl_enabled())
		klog(KLOG_WARNING, "listening on a non-loopback address without --sasl: anyone who can reach it works as the --dsn role");
	check_database();

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, K_THREAD_STACK_BYTES);

	for (int i = 0; i < nlisten; i++)
	{
		pfds[i].fd = lfds[i];
		pfds[i].events = POLLIN;
	}
	pfds[nlisten].fd = signal_pipe[0];
	pfds[nlisten].events = POLLIN;

	while (!kshutting_down())
	{
		/* With --sasl, a look at the login deadlines every second. */
		rc = poll(pfds, (nfds_t) nlisten + 1, ksasl_enabled() ? 1000 : -1);
		if (ksasl_enabled())
			end_late_logins();
		if (rc < 0)
		{
			if (errno == EINTR)
				continue;
			klog(KLOG_ERROR, "poll failed: %s", strerror(errno));
			status = 1;
			break;
		}
		if (pfds[nlisten].revents & POLLIN)
		{
			char		signo = 0;

			(void) !read(signal_pipe[0], &signo, 1);
			klog(KLOG_INFO, "received %s: shutting down",
				 signo == SIGINT ? "SIGINT" : "SIGTERM");
			atomic_store(&stopping, true);
			break;
		}
		for (int i = 0; i < nlisten; i++)
			if (pfds[i].revents & POLLIN)
				accept_one(lfds[i], &attr);
	}
	atomic_store(&stopping, true);
	for (int i = 0; i < nlisten; i++)
		close(lfds[i]);
	shut_down();
	klog(KLOG_INFO, "stopped");
	return status;
}
