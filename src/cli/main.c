/*-------------------------------------------------------------------------
 *
 * main.c
 *	  pg_eventlog: the command line of pg_eventlog's log, for people who
 *	  type kcat, rpk and kafka-consumer-groups (docs/cli.md).  A libpq
 *	  client: it talks to PostgreSQL through the extension's SQL API, and
 *	  needs no gateway.
 *
 * This file holds the global options (-d, --help, --version) and hands
 * the rest of the command line to the subcommand's file.
 *
 *-------------------------------------------------------------------------
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
help(void)
{
	printf("pg_eventlog works with pg_eventlog's topics, records and consumer groups\n"
		   "in a PostgreSQL database, through libpq.\n\n"
		   "usage: pg_eventlog [-d CONNINFO] COMMAND [ARGS]...\n\n"
		   "Commands:\n"
		   "  topic create|list|describe|alter|delete   manage topics\n"
		   "  produce TOPIC        produce records read from standard input\n"
		   "  consume TOPIC        print records (kcat's options: -o -e -c -f -J -g)\n"
		   "  tail TOPIC           follow a topic's new records (consume -o end)\n"
		   "  group list|describe|reset|delete          manage consumer groups\n"
		   "  export TOPIC         write a topic to files, resumably, as a group\n"
		   "  stats                records/s in and out per topic, lag per group\n"
		   "  relay TOPIC... --group G --to-kafka BOOTSTRAP   copy topics into Apache Kafka\n"
		   "  relay TOPIC... --from-kafka BOOTSTRAP   copy Kafka topics here, exactly once\n\n"
		   "Options:\n"
		   "  -d, --dbname=CONNINFO   database name or connection string (default:\n"
		   "                          libpq's environment, PGHOST, PGDATABASE, ...)\n"
		   "  --version               print the version and exit\n"
		   "  --help                  print this help and exit\n\n"
		   "\"pg_eventlog COMMAND --help\" describes a command.  Exit status: 0 success,\n"
		   "1 error, 2 wrong command line.\n");
}

/*
 * Standard input, output and error closed by the caller (cron, "<&-",
 * ">&-") become /dev/null: otherwise the connection's socket takes the
 * lowest free descriptor, and produce reads the server's replies as
 * records, or consume writes records into the connection.
 */
static void
open_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++)
	{
		if (fcntl(fd, F_GETFD) == -1 && errno == EBADF)
		{
			int			nfd = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);

			if (nfd != fd)
				exit(EXIT_FAILURE);
		}
	}
}

int
main(int argc, char **argv)
{
	int			i = 1;
	const char *cmd;

	open_std_fds();

	/* A reader that went away is seen as EPIPE by the writes (output.c). */
	signal(SIGPIPE, SIG_IGN);

	/* Global options, before the command. */
	while (i < argc && argv[i][0] == '-')
	{
		const char *a = argv[i];

		if (strcmp(a, "--help") == 0 || strcmp(a, "-?") == 0)
		{
			help();
			return 0;
		}
		if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0)
		{
			printf("pg_eventlog (pg_eventlog) %s\n", CLI_VERSION);
			return 0;
		}
		if (strcmp(a, "-d") == 0 || strcmp(a, "--dbname") == 0)
		{
			if (i + 1 >= argc)
				cli_usage(NULL, "option %s needs a value", a);
			cli_conninfo = argv[i + 1];
			i += 2;
			continue;
		}
		if (strncmp(a, "--dbname=", 9) == 0)
		{
			cli_conninfo = a + 9;
			i++;
			continue;
		}
		cli_usage(NULL, "unknown option \"%s\"", a);
	}
	if (i >= argc)
		cli_usage(NULL, "a command is required");
	cmd = argv[i];
	argc -= i;
	argv += i;

	if (strcmp(cmd, "topic") == 0)
		return cmd_topic(argc, argv);
	if (strcmp(cmd, "produce") == 0)
		return cmd_produce(argc, argv);
	if (strcmp(cmd, "consume") == 0)
		return cmd_consume(argc, argv, false);
	if (strcmp(cmd, "tail") == 0)
		return cmd_consume(argc, argv, true);
	if (strcmp(cmd, "group") == 0)
		return cmd_group(argc, argv);
	if (strcmp(cmd, "export") == 0)
		return cmd_export(argc, argv);
	if (strcmp(cmd, "stats") == 0)
		return cmd_stats(argc, argv);
	if (strcmp(cmd, "relay") == 0)
		return cmd_relay(argc, argv);
	if (strcmp(cmd, "help") == 0)
	{
		help();
		return 0;
	}
	cli_usage(NULL, "unknown command \"%s\"", cmd);
}
