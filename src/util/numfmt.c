/* numfmt.c — numbers for a person, to the precision their uncertainty supports
 * (numfmt.h, adr/0062). */
#include "util/numfmt.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* significant digits of an uncertainty, and of a value with none */
#define UNC_DIGITS  2
#define BARE_DIGITS 6
/* scientific notation outside [1e-4, 1e6), as %g with 6 digits decides */
#define SCI_LOW_EXP  (-4)
#define SCI_HIGH_EXP 6

static int usable_unc(double u)
{
	return isfinite(u) && u > 0.0;
}

/* the decimal exponent of |x| > 0 */
static int exponent_of(double x)
{
	return (int)floor(log10(fabs(x)));
}

/* x rounded to a multiple of 10^place, through the decimal text printf rounds to: no
 * product of x with a power of ten that could overflow (x·10^311) or lose digits */
static double round_to(double x, int place)
{
	if (x == 0.0)
		return 0.0;
	int digits = exponent_of(x) - place + 1; /* significant digits kept */
	if (digits <= 0) /* below the place: 0, or one unit of it when x is at least half */
		return fabs(x) >= 0.5 * pow(10.0, place) ? copysign(pow(10.0, place), x) : 0.0;
	char buf[XF_NUM_TEXT];
	snprintf(buf, sizeof buf, "%.*e", digits > 17 ? 16 : digits - 1, x);
	double r = strtod(buf, NULL);
	return isfinite(r) ? r : x; /* DBL_MAX rounds up past the largest double */
}

int xf_num_place(double u)
{
	if (!usable_unc(u))
		return INT_MIN;
	int place = exponent_of(u) - (UNC_DIGITS - 1);
	/* 0.0996 keeps "0.10", not "0.100": rounding carried into a new leading digit */
	if (exponent_of(round_to(u, place)) > exponent_of(u))
		place++;
	return place;
}

/* The place for the pair (v, u): u's, but never past the 17th significant digit of the
 * larger, which a double does not hold (v = 1, u = 1e-300 would ask for 301 decimals). */
static int pair_place(double v, double u)
{
	int place = xf_num_place(u);
	int e = exponent_of(fmax(fabs(v), u));
	return place < e - 16 ? e - 16 : place;
}

static int non_finite(double v, char *buf, size_t size)
{
	if (isfinite(v))
		return 0;
	snprintf(buf, size, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
	return 1;
}

/* scientific notation for the pair (v, u) at place: the larger of the two, rounded,
 * below 1e-4 or from 1e6 on; both numbers of a pair take the same notation, so that
 * "1.0000061 +/- 0.0000045" keeps its digits aligned */
static int scientific(double v, double u, int place)
{
	double m = fmax(fabs(round_to(v, place)), round_to(u, place));
	if (m == 0.0)
		return 0;
	int e = (int)floor(log10(m));
	return e < SCI_LOW_EXP || e >= SCI_HIGH_EXP;
}

/* x with its last digit at 10^place, plain or scientific */
static void write_at(double x, int place, int sci, char *buf, size_t size)
{
	double r = round_to(x, place);
	if (r == 0.0) /* also -0: "0.00", never "-0.00" */
		r = fabs(r);
	if (!sci) {
		snprintf(buf, size, "%.*f", place < 0 ? -place : 0, r);
		return;
	}
	int e = r == 0.0 ? place + UNC_DIGITS - 1 : (int)floor(log10(fabs(r)));
	snprintf(buf, size, "%.*e", e > place ? e - place : 0, r);
}

void xf_num_value(double v, double u, char *buf, size_t size)
{
	if (non_finite(v, buf, size))
		return;
	if (!usable_unc(u)) {
		snprintf(buf, size, "%.*g", BARE_DIGITS, v == 0.0 ? 0.0 : v);
		return;
	}
	int place = pair_place(v, u);
	write_at(v, place, scientific(v, u, place), buf, size);
}

void xf_num_unc(double v, double u, char *buf, size_t size)
{
	if (!usable_unc(u)) {
		xf_num_value(u, NAN, buf, size);
		return;
	}
	double w = isfinite(v) ? v : 0.0;
	int place = pair_place(w, u);
	write_at(u, place, scientific(w, u, place), buf, size);
}

void xf_num_pm(double v, double u, const char *pm, char *buf, size_t size)
{
	char value[XF_NUM_TEXT], unc[XF_NUM_TEXT];
	xf_num_value(v, u, value, sizeof value);
	if (!usable_unc(u) || !isfinite(v)) {
		snprintf(buf, size, "%s", value);
		return;
	}
	xf_num_unc(v, u, unc, sizeof unc);
	snprintf(buf, size, "%s%s%s", value, pm, unc);
}
