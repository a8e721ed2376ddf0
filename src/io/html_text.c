/* html_text.c — the growing HTML text of html_text.h: appends, escaping, base64. */
#include "io/html_text.h"
#include "io/utf8.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/numfmt.h"

/* room for n more bytes and the NUL */
static int reserve(xf_html *h, size_t n)
{
	if (h->failed)
		return -1;
	if (n > SIZE_MAX / 2 - h->len - 1) {
		h->failed = 1;
		return -1;
	}
	size_t need = h->len + n + 1;
	if (need <= h->cap)
		return 0;
	size_t cap = h->cap ? h->cap : 4096;
	while (cap < need)
		cap *= 2;
	char *s = realloc(h->s, cap);
	if (!s) {
		h->failed = 1;
		return -1;
	}
	h->s = s;
	h->cap = cap;
	return 0;
}

static void put_n(xf_html *h, const char *s, size_t n)
{
	if (reserve(h, n) != 0)
		return;
	memcpy(h->s + h->len, s, n);
	h->len += n;
	h->s[h->len] = '\0';
}

void xf_html_put(xf_html *h, const char *s)
{
	put_n(h, s, strlen(s));
}

void xf_html_putf(xf_html *h, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0) {
		h->failed = 1;
		return;
	}
	if ((size_t)n < sizeof small) {
		put_n(h, small, (size_t)n);
		return;
	}
	if (reserve(h, (size_t)n) != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(h->s + h->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	h->len += (size_t)n;
}

void xf_html_text(xf_html *h, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': xf_html_put(h, "&amp;"); break;
		case '<': xf_html_put(h, "&lt;"); break;
		case '>': xf_html_put(h, "&gt;"); break;
		case '"': xf_html_put(h, "&quot;"); break;
		case '\'': xf_html_put(h, "&#39;"); break;
		default: { /* the page is UTF-8: an invalid byte is U+FFFD (adr/0075) */
			size_t n = xf_utf8_seq((const unsigned char *)s);
			if (n)
				put_n(h, s, n);
			else
				xf_html_put(h, "\xEF\xBF\xBD");
			s += n ? n - 1 : 0;
		}
		}
	}
}

void xf_html_base64(xf_html *h, const unsigned char *p, size_t n)
{
	static const char digits[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	if (n > SIZE_MAX / 4 - 3) {
		h->failed = 1;
		return;
	}
	size_t out = (n + 2) / 3 * 4;
	if (reserve(h, out) != 0)
		return;
	char *d = h->s + h->len;
	size_t k = 0;
	for (; k + 3 <= n; k += 3) {
		uint32_t v = (uint32_t)p[k] << 16 | (uint32_t)p[k + 1] << 8 | p[k + 2];
		*d++ = digits[v >> 18 & 63];
		*d++ = digits[v >> 12 & 63];
		*d++ = digits[v >> 6 & 63];
		*d++ = digits[v & 63];
	}
	if (k < n) {
		uint32_t v = (uint32_t)p[k] << 16 | (k + 1 < n ? (uint32_t)p[k + 1] << 8 : 0);
		*d++ = digits[v >> 18 & 63];
		*d++ = digits[v >> 12 & 63];
		*d++ = k + 1 < n ? digits[v >> 6 & 63] : '=';
		*d++ = '=';
	}
	h->len += out;
	h->s[h->len] = '\0';
}

void xf_html_free(xf_html *h)
{
	free(h->s);
	*h = (xf_html){ 0 };
}

void xf_html_value(xf_html *h, double v, double u)
{
	char buf[XF_NUM_TEXT];
	if (!isfinite(v)) {
		xf_html_put(h, "&mdash;");
		return;
	}
	xf_num_value(v, u, buf, sizeof buf);
	xf_html_put(h, buf);
}

void xf_html_pm(xf_html *h, double v, double u)
{
	char buf[2 * XF_NUM_TEXT + 8];
	if (!isfinite(v)) {
		xf_html_put(h, "&mdash;");
		return;
	}
	xf_num_pm(v, u, " ± ", buf, sizeof buf);
	xf_html_text(h, buf);
}
