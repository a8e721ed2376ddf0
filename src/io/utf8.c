/* utf8.c — invalid UTF-8 replaced by U+FFFD (utf8.h, adr/0075). RFC 3629: no overlong
 * forms, no surrogates (U+D800 … U+DFFF), nothing above U+10FFFF. */
#include "io/utf8.h"

#include <stdlib.h>
#include <string.h>

static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */

static int cont(unsigned char c)
{
	return (c & 0xC0) == 0x80;
}

size_t xf_utf8_seq(const unsigned char *p)
{
	unsigned char c = p[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		return cont(p[1]) ? 2 : 0;
	if (c >= 0xE0 && c <= 0xEF) {
		/* E0: no overlong (second byte ≥ A0); ED: no surrogate (second byte < A0) */
		unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
		return p[1] >= lo && p[1] <= hi && cont(p[2]) ? 3 : 0;
	}
	if (c >= 0xF0 && c <= 0xF4) {
		/* F0: no overlong (≥ 90); F4: at most U+10FFFF (< 90) */
		unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
		return p[1] >= lo && p[1] <= hi && cont(p[2]) && cont(p[3]) ? 4 : 0;
	}
	return 0; /* 80 … C1 (a continuation byte, an overlong lead), F5 … FF */
}

int xf_utf8_valid(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; p && *p;) {
		size_t n = xf_utf8_seq(p);
		if (!n)
			return 0;
		p += n;
	}
	return 1;
}

char *xf_utf8_clean_to(const char *s, char *buf, size_t size)
{
	size_t len = 0;
	if (!size)
		return buf;
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
		size_t n = xf_utf8_seq(p);
		const char *from = n ? (const char *)p : replacement;
		size_t put = n ? n : sizeof replacement - 1;
		if (len + put >= size)
			break;
		memcpy(buf + len, from, put);
		len += put;
		p += n ? n : 1;
	}
	buf[len] = '\0';
	return buf;
}

char *xf_utf8_clean(const char *s)
{
	size_t len = s ? strlen(s) : 0;
	/* each byte becomes at most 3 */
	char *out = malloc(3 * len + 1);
	return out ? xf_utf8_clean_to(s, out, 3 * len + 1) : NULL;
}
