/* numfmt.h — the one home of how a number is written for a person (adr/0062): the
 * console summaries, report.html and the tables of `validate`. A value with an
 * uncertainty u is written to the precision u supports: u to 2 significant digits, the
 * value rounded to the same decimal place ("26100 +/- 6300", "0.300012 +/- 0.000010");
 * a value without one (fixed, a count, χ²) to 6 significant digits. A pair whose larger
 * number is below 1e-4 or from 1e6 on is written in scientific notation, the thresholds
 * of %g ("4.29e-05 +/- 4.3e-06"); otherwise both are plain, digits aligned
 * ("1.0000061 +/- 0.0000045"). Machine files (parameters.json, results.h5, the batch CSV and
 * JSON) keep every digit (io_internal.h, xf_io_format_double). C locale: '.' decimal. */
#ifndef XPCSFIT_UTIL_NUMFMT_H
#define XPCSFIT_UTIL_NUMFMT_H

#include <stddef.h>

/* bytes that hold any text written here (a double's %.17e is 24, "v +/- u" twice that) */
#define XF_NUM_TEXT 64

/* v to the precision u supports; 6 significant digits when u is not a positive finite
 * number. A non-finite v is written "nan", "inf" or "-inf". Also for a number that
 * shares v's uncertainty (an interval's ends). */
void xf_num_value(double v, double u, char *buf, size_t size);
/* u, the uncertainty of v, to its 2 significant digits in the notation of the pair
 * (the place xf_num_value keeps for v); 6 digits when u is not positive and finite. */
void xf_num_unc(double v, double u, char *buf, size_t size);
/* "v<pm>u" with both written as above, or v alone (6 digits) when u is not a positive
 * finite number; pm is the separator (" +/- " on the console). */
void xf_num_pm(double v, double u, const char *pm, char *buf, size_t size);
/* The decimal place (power of ten) of the last digit that u's 2 significant digits
 * keep: 6295.3 → 2 (hundreds), 1.01e-5 → -6; INT_MIN when u is not positive and finite. */
int xf_num_place(double u);

#endif
