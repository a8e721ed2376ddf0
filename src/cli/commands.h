/* commands.h — one function per xpcsfit subcommand; each returns the process exit code
 * (0, 1 run/data failure, 2 usage/config error) and prints its own error line. */
#ifndef XPCSFIT_CLI_COMMANDS_H
#define XPCSFIT_CLI_COMMANDS_H

int xf_cmd_simulate(int argc, char **argv); /* cmd_simulate.c */
int xf_cmd_validate(int argc, char **argv); /* cmd_validate.c */
int xf_cmd_config(int argc, char **argv);   /* cmd_config.c */
int xf_cmd_nlsq(int argc, char **argv);	    /* cmd_nlsq.c */
int xf_cmd_plot(int argc, char **argv);	    /* cmd_plot.c */
int xf_cmd_cmc(int argc, char **argv);	    /* cmd_cmc.c */
int xf_cmd_fit(int argc, char **argv);	    /* cmd_cmc.c: nlsq, then cmc */
int xf_cmd_batch(int argc, char **argv);    /* cmd_batch.c: many files */

/* Run the command line (dispatch.c): the signal handlers, the subcommand, the exit
 * code. main() of xpcsfit and of xpcsfit-mpi (after its MPI set-up). */
int xf_cli_main(int argc, char **argv);

/* "xpcsfit: error: <msg>" on stderr; returns code. */
int xf_cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Text put before every following error line ("FILE.h5: " while batch runs one file);
 * NULL or "" for none. The text is copied; the last error (below) is cleared. */
void xf_cli_error_prefix(const char *prefix);
/* The message of the last error line printed (since xf_cli_error_prefix(), which
 * clears it), without "xpcsfit: error: " and the prefix; "" when none. For xf_cli_agree
 * and for the batch record of a failed file. */
const char *xf_cli_last_error(void);

/* xpcsfit-mpi on a rank other than 0, whose own stdout and stderr go to /dev/null: fd is
 * the job's stderr (mpi/main.c). The error lines this rank alone can say (a batch file
 * it runs: xf_cli_own_lines(1) around it) are written there, each once, by this rank;
 * the rest (the agreed errors) rank 0 prints. */
void xf_cli_rank_stderr(int fd);
void xf_cli_own_lines(int on);

/* Several ranks (xpcsfit-mpi, xpcsfit/dist.h): every rank passes its exit status; all
 * get the first failing rank's, and a rank that had none prints that rank's error line
 * (only rank 0's output is shown). One process: returns rc. cli_common.c. */
int xf_cli_agree(int rc);

/* The option rules of every command (cli_options.c, adr/0075), called after each
 * getopt_long() with the index it set (-1 before the call: a short option leaves it):
 * an empty value, or a second occurrence of an option that holds one value (an alias
 * counts as the same option), is refused with one line. 0, or the exit code. */
struct option;
#define XF_CLI_SEEN_MAX 64
typedef struct xf_cli_seen {
	int val[XF_CLI_SEEN_MAX];   /* the options given, by getopt value */
	int index[XF_CLI_SEEN_MAX]; /* and the spelling first given */
	int n;
} xf_cli_seen;
int xf_cli_option_rules(const char *cmd, const struct option *opts, int index, const char *arg,
			xf_cli_seen *seen);
/* --resume with --force (batch, cmc, fit): one line, the same for every command; 0 when
 * not both. */
int xf_cli_resume_force(const char *cmd, int resume, int force);

#endif
