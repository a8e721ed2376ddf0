/* profile.c — per-phase wall time and peak memory for --profile (profile.h). */
#include "util/profile.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include "util/clock.h"

static int enabled;
static double t_start, t_phase; /* clock at enable, at the current phase's start */
static int current = -1;	/* index into rows of the current phase */
static int n_rows;
static xf_profile_phase_row rows[XF_PROFILE_MAX_PHASES];
static long children_kib; /* RUSAGE_CHILDREN max RSS when the current phase began */

/* VmHWM of this process in KiB, -1 when /proc is not there */
static long hwm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	long kib = -1;
	char line[256];
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %ld", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* start a new high-water mark (writing 5 to clear_refs resets VmHWM to the current RSS) */
static void hwm_reset(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (f) {
		fputs("5", f);
		fclose(f);
	}
}

static long children_max_kib(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_CHILDREN, &ru) == 0 ? ru.ru_maxrss : 0;
}

/* the current phase's peak: this process's, or a child's that ended in it if larger */
static double current_peak_mib(void)
{
	long self = hwm_kib(), kids = children_max_kib();
	long peak = kids > children_kib && kids > self ? kids : self;
	return peak >= 0 ? (double)peak / 1024.0 : NAN;
}

static void close_current(double t)
{
	if (current < 0)
		return;
	xf_profile_phase_row *r = &rows[current];
	r->wall_s += t - t_phase;
	double peak = current_peak_mib();
	if (isnan(r->peak_mib) || peak > r->peak_mib)
		r->peak_mib = peak;
}

void xf_profile_enable(void)
{
	enabled = 1;
	t_start = t_phase = xf_monotonic_s();
	current = -1;
	n_rows = 0;
}

int xf_profile_enabled(void)
{
	return enabled;
}

void xf_profile_phase(const char *name)
{
	if (!enabled)
		return;
	double t = xf_monotonic_s();
	close_current(t);
	int k = 0;
	while (k < n_rows && strcmp(rows[k].name, name))
		k++;
	if (k == n_rows) {
		if (n_rows == XF_PROFILE_MAX_PHASES) {
			current = -1; /* more phases than kept: the rest is in the total only */
			return;
		}
		rows[n_rows++] = (xf_profile_phase_row){ name, 0.0, NAN };
	}
	current = k;
	t_phase = t;
	hwm_reset();
	children_kib = children_max_kib();
}

int xf_profile_snapshot(xf_profile_phase_row *out, int max, double *total_s)
{
	double t = xf_monotonic_s();
	int n = n_rows < max ? n_rows : max;
	for (int k = 0; k < n; k++) {
		out[k] = rows[k];
		if (k == current) {
			out[k].wall_s += t - t_phase;
			double peak = current_peak_mib();
			if (isnan(out[k].peak_mib) || peak > out[k].peak_mib)
				out[k].peak_mib = peak;
		}
	}
	*total_s = enabled ? t - t_start : 0.0;
	return n;
}

void xf_profile_format(char *buf, unsigned long size)
{
	xf_profile_phase_row r[XF_PROFILE_MAX_PHASES];
	double total;
	int n = xf_profile_snapshot(r, XF_PROFILE_MAX_PHASES, &total);
	size_t used = 0;
	buf[0] = '\0';
	for (int k = 0; k < n && used < size; k++)
		used += (size_t)snprintf(buf + used, size - used, "%s %.2f s (%.0f MiB), ",
					 r[k].name, r[k].wall_s, r[k].peak_mib);
	if (used < size)
		snprintf(buf + used, size - used, "total %.2f s", total);
}
