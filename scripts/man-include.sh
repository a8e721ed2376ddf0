#!/bin/sh
# man-include.sh — the help2man include file of a man page (CMakeLists.txt, "Man pages"):
# usage: man-include.sh BINARY PAGE OUT, PAGE xpcsfit | xpcsfit-mpi | xpcsfit-gpu.
# For xpcsfit, every command's --help (BINARY CMD --help, preformatted) under COMMANDS, so
# that the page holds all the options; every page gets EXIT STATUS and SEE ALSO (the docs
# installed beside it). Text from --help is escaped for roff: \ as \e, - as \-, and each
# line starts with \& (no line is then read as a roff request or a help2man section).
set -eu
bin=$1 page=$2 out=$3
esc() { sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e 's/^/\\\&/'; }
tmp=$out.tmp
{
	case $page in
	xpcsfit)
		printf '[COMMANDS]\n'
		printf 'The options of each command, as \\fBxpcsfit \\fIcommand\\fB \\-\\-help\\fR prints them.\n'
		for cmd in simulate validate nlsq cmc fit batch plot config; do
			printf '.SS "xpcsfit %s"\n.nf\n' "$cmd"
			"$bin" "$cmd" --help | esc
			printf '.fi\n'
		done
		;;
	xpcsfit-mpi)
		printf '[DESCRIPTION]\n'
		printf '\\fBxpcsfit\\-mpi\\fR is \\fBxpcsfit\\fR(1) under \\fBmpirun\\fR or \\fBsrun\\fR: the same commands and options, '
		printf 'one fit spread over MPI ranks (nlsq: blocks of points; cmc: shards; batch: files), results byte for byte those of xpcsfit. '
		printf 'Rank 0 prints and writes. The job scripts for SLURM and PBS are installed in share/xpcsfit/cluster (docs/cluster.md).\n'
		;;
	esac
	printf '[EXIT STATUS]\n'
	printf '0 done; 1 bad data or a failed fit; 2 a usage or config error (nothing written); '
	printf '130 interrupted by SIGINT; 143 terminated by SIGTERM (a scheduler'"'"'s time limit).\n'
	if [ "$page" = xpcsfit-mpi ]; then
		printf '.PP\nOpen MPI'"'"'s mpirun exits 1 after it relays SIGTERM or SIGINT; rank 0 records the signal '
		printf 'in the file named by \\fBXPCSFIT_INTERRUPT_FILE\\fR, from which the job scripts end with 143 or 130 (docs/cluster.md, adr/0058).\n'
	fi
	printf '[SEE ALSO]\n'
	[ "$page" = xpcsfit ] || printf '\\fBxpcsfit\\fR(1). '
	printf 'The user guide, the reference pages and the design records (adr/) are installed in the documentation folder, '
	printf 'share/doc/xpcsfit: README.md, user\\-guide.md, cli.md, config.md, outputs.md, cluster.md, gpu.md.\n'
} >"$tmp"
mv -- "$tmp" "$out"
