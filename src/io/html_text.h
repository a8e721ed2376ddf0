/* html_text.h — a growing HTML text (report_html.c): appending, escaping of text taken from
 * the user (file names, config paths: <, &, quotes) and base64 for data URIs. An
 * allocation that fails marks the text failed; later appends do nothing and the writer
 * checks xf_html.failed once at the end. */
#ifndef XPCSFIT_IO_HTML_TEXT_H
#define XPCSFIT_IO_HTML_TEXT_H

#include <stddef.h>

typedef struct xf_html {
	char *s;    /* NUL-terminated while not failed */
	size_t len; /* bytes in s, the NUL not counted */
	size_t cap; /* bytes allocated */
	int failed; /* an allocation failed (or the size overflowed) */
} xf_html;

/* markup, appended as is */
void xf_html_put(xf_html *h, const char *s);
void xf_html_putf(xf_html *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* text or an attribute value: & < > " ' written as entities (NULL: nothing) */
void xf_html_text(xf_html *h, const char *s);
/* v to the precision u supports (util/numfmt.h, adr/0062; u NaN: 6 significant digits),
 * an em dash for a v that is not finite */
void xf_html_value(xf_html *h, double v, double u);
/* "v ± u" to the precision u supports, an em dash for a v that is not finite */
void xf_html_pm(xf_html *h, double v, double u);
/* n bytes as base64 (RFC 4648, padded, no line breaks) */
void xf_html_base64(xf_html *h, const unsigned char *p, size_t n);
void xf_html_free(xf_html *h);

#endif
