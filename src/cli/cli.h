/*-------------------------------------------------------------------------
 *
 * cli.h
 *	  What the files of the pg_eventlog command share: the subcommands'
 *	  entry points, the connection and query helpers (conn.c), option
 *	  parsing helpers (options.c) and output helpers (output.c).
 *
 * Exit status: 0 success, 1 an error (a server's, the connection's, bad
 * input), 2 a wrong command line.  Every error is one line on standard
 * error, "pg_eventlog: error: ..." (a server error: its primary message).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CLI_H
#define CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <libpq-fe.h>

#ifndef CLI_VERSION
#define CLI_VERSION "unknown"
#endif

#define EXIT_USAGE 2

/* The connection string of -d, or NULL: libpq's environment. */
extern const char *cli_conninfo;
/* Set by SIGINT/SIGTERM in the commands that run until interrupted. */
extern volatile int cli_interrupted;

/* Subcommands (their files). */
extern int	cmd_topic(int argc, char **argv);
extern int	cmd_produce(int argc, char **argv);
extern int	cmd_consume(int argc, char **argv, bool tail);
extern int	cmd_group(int argc, char **argv);
extern int	cmd_export(int argc, char **argv);
extern int	cmd_stats(int argc, char **argv);
extern int	cmd_relay(int argc, char **argv);

/* conn.c */
extern PGconn *cli_connect(void);
extern void cli_install_interrupt(PGconn *conn);
extern PGresult *cli_query(PGconn *conn, const char *sql, int nparams,
						   const char *const *values);
extern PGresult *cli_query_params(PGconn *conn, const char *sql, int nparams,
								  const char *const *values, const int *lengths,
								  const int *formats, const unsigned int *types);
extern bool cli_result_ok(PGresult *res);
extern const char *cli_result_message(PGconn *conn, PGresult *res);
extern void cli_fail_result(PGconn *conn, PGresult *res) __attribute__((noreturn));
extern void cli_begin(PGconn *conn);
extern void cli_commit(PGconn *conn);
extern int	cli_topic_partitions(PGconn *conn, const char *topic);

/* options.c */
extern void cli_error(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));
extern void cli_usage(const char *cmd, const char *fmt,...) __attribute__((format(printf, 2, 3), noreturn));
extern int64_t cli_int_arg(const char *cmd, const char *opt, const char *arg,
						   int64_t min, int64_t max);
extern int64_t cli_bytes_arg(const char *cmd, const char *opt, const char *arg);
extern const char *cli_interval_arg(const char *cmd, const char *opt, const char *arg);
extern char *cli_unescape(const char *s, size_t *len);
extern bool cli_is_help(int argc, char **argv);
extern void cli_bad_option(const char *cmd, int c, char **argv) __attribute__((noreturn));
extern const char *cli_require_topic(const char *cmd, int argc, char **argv);

/* Every subcommand's getopt string starts with ':' and takes -d. */
#define CLI_DBNAME_OPTION {"dbname", required_argument, NULL, 'd'}

/* output.c */
typedef struct CliTable
{
	int			ncols;
	int			nrows;
	int			cap;
	char	  **cells;			/* nrows * ncols, row-major; header first */
} CliTable;

extern void cli_table_init(CliTable *t, int ncols, const char *const *header);
extern void cli_table_add(CliTable *t, const char *const *row);
extern void cli_table_add_result(CliTable *t, PGresult *res);
extern void cli_table_print(CliTable *t);
extern void (*cli_reader_gone_hook) (void);
extern void cli_write(const void *buf, size_t len);
extern void cli_puts(const char *s);
extern void cli_flush(void);
extern void cli_json_string(FILE *f, const char *s, size_t len);
extern void cli_csv_field(FILE *f, const char *s, size_t len);
extern char *cli_strdup(const char *s);
extern void *cli_malloc(size_t n);
extern void *cli_realloc(void *p, size_t n);

#endif							/* CLI_H */
