/* main.c — xpcsfit-mpi: the xpcsfit command line under mpirun/srun (docs/cli.md,
 * adr/0021, adr/0022). MPI set up, the library's distribution hook installed, then the
 * same dispatch as xpcsfit (src/cli/dispatch.c). Rank 0 prints and writes; the output of
 * the other ranks goes to /dev/null (XPCSFIT_MPI_ALL_OUTPUT=1 keeps it, for debugging),
 * but for the error lines only that rank can say (a batch file it ran: xf_cli_own_lines),
 * which go to the job's stderr kept aside. */
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "mpi/dist_mpi.h"
#include "util/interrupt.h"

static void quiet_output(void)
{
	const char *keep = getenv("XPCSFIT_MPI_ALL_OUTPUT");
	if (keep && !strcmp(keep, "1"))
		return;
	int fd = open("/dev/null", O_WRONLY);
	if (fd < 0)
		return;
	fflush(stdout);
	fflush(stderr);
	xf_cli_rank_stderr(fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3));
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
}

int main(int argc, char **argv)
{
	int provided;
	if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
		fputs("xpcsfit: error: MPI could not be initialised\n", stderr);
		return 1;
	}
	xf_dist d;
	xf_dist_mpi_hook(&d);
	if (d.rank != 0) {
		quiet_output();
		xf_interrupt_record_off(); /* rank 0's status is the job's (adr/0058) */
	}
	xf_dist_install(&d);
	int rc = xf_cli_main(argc, argv);
	/* The other ranks' work is done and said: when rank 0 exits non-zero first, mpirun
	 * terminates them (SIGTERM) on their way out, which is no interruption to report. */
	if (d.rank != 0) {
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
	}
	xf_dist_install(NULL);
	MPI_Finalize();
	/* The ranks agreed on the status, and rank 0 reports it: the exit code of the job.
	 * Another rank that exits non-zero first makes mpirun terminate rank 0 (SIGTERM)
	 * while it may still be writing or printing, so the others exit 0 unless a signal
	 * stopped them. */
	if (d.rank != 0 && !xf_interrupt_signal())
		rc = 0;
	return rc;
}
