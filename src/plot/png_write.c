/* png_write.c — the one PNG encoder of the plots: an 8-bit RGB image (the memcairo page
 * of plsession.c) to an open file descriptor. Deterministic: the same pixels give the
 * same bytes (fixed filter, fixed zlib level, no time or text chunks). */
#include "plot/plot_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* zlib level of the image data: level 1 writes the 23 pages of a 1000-frame fit in a third
 * less time than level 6 (libpng's default) for files 10 % larger (the residual maps are
 * noise, which no level compresses) */
#define XF_PNG_LEVEL 1

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* length, type, data, CRC of type + data */
static int chunk(int fd, const char *type, const unsigned char *data, size_t n)
{
	unsigned char head[8], crc[4];
	put_u32(head, (uint32_t)n);
	memcpy(head + 4, type, 4);
	uLong c = crc32(0L, head + 4, 4);
	if (n)
		c = crc32(c, data, (uInt)n);
	put_u32(crc, (uint32_t)c);
	return write_all(fd, head, 8) || (n && write_all(fd, data, n)) || write_all(fd, crc, 4);
}

int xf_png_write_rgb(int fd, const unsigned char *rgb, int width, int height)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	unsigned char ihdr[13];
	put_u32(ihdr, (uint32_t)width);
	put_u32(ihdr + 4, (uint32_t)height);
	ihdr[8] = 8;  /* bits per channel */
	ihdr[9] = 2;  /* RGB */
	ihdr[10] = 0; /* deflate */
	ihdr[11] = 0; /* adaptive filtering, one filter byte per row */
	ihdr[12] = 0; /* no interlace */
	size_t row = (size_t)width * 3, raw_n = (row + 1) * (size_t)height;
	/* filter "Up" on every row: plots are mostly runs of equal columns (white, axes,
	 * flat colour), which it turns into zeros */
	unsigned char *raw = malloc(raw_n);
	uLongf out_n = compressBound((uLong)raw_n);
	unsigned char *out = malloc(out_n);
	int rc = -1;
	if (!raw || !out)
		goto done;
	for (int y = 0; y < height; y++) {
		unsigned char *r = raw + (size_t)y * (row + 1);
		const unsigned char *cur = rgb + (size_t)y * row;
		r[0] = y ? 2 : 0;
		if (y == 0)
			memcpy(r + 1, cur, row);
		else
			for (size_t k = 0; k < row; k++)
				r[1 + k] = (unsigned char)(cur[k] - cur[k - row]);
	}
	if (compress2(out, &out_n, raw, (uLong)raw_n, XF_PNG_LEVEL) != Z_OK)
		goto done;
	int failed = write_all(fd, sig, 8) || chunk(fd, "IHDR", ihdr, 13);
	failed = failed || chunk(fd, "IDAT", out, out_n) || chunk(fd, "IEND", NULL, 0);
	rc = failed ? -1 : 0;
done:
	free(raw);
	free(out);
	return rc;
}
