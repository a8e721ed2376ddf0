/* png_write.c — the one PNG encoder of the plots: an 8-bit RGB image (the memcairo page
 * of plsession.c) to an open file descriptor, through libpng; as an 8-bit palette image
 * when it has at most 256 colours (png_palette.c; lossless either way). Deterministic: the same
 * pixels give the same bytes with one libpng/zlib build (fixed filter, fixed zlib level
 * and strategy, no time, text or gamma chunks). */
#include "plot/plot_internal.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

/* zlib level of the image data: level 1 writes the 23 pages of a 1000-frame fit in a third
 * less time than level 6 (libpng's default) for files 10 % larger (the residual maps are
 * noise, which no level compresses) */
#define XF_PNG_LEVEL 1

typedef struct png_sink {
	int fd;	    /* where the bytes go */
	int failed; /* a write() failed (disk full): the file is not whole */
	int why;    /* its errno */
} png_sink;

static void sink_write(png_structp png, png_bytep data, size_t n)
{
	png_sink *s = png_get_io_ptr(png);
	while (n > 0 && !s->failed) {
		ssize_t w = write(s->fd, data, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			s->failed = 1;
			s->why = w < 0 ? errno : ENOSPC; /* write() 0 bytes: no room */
			png_error(png, "write failed");
		}
		data += w;
		n -= (size_t)w;
	}
}

static void sink_flush(png_structp png)
{
	(void)png;
}

/* libpng's warnings (none expected for an RGB8 image we built) stay out of the terminal */
static void png_quiet(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

/* libpng's errors (a failed write, out of memory) go back to the setjmp below without a
 * word: the caller says what failed in its one error line. This handler must not return:
 * libpng then calls its default handler, which prints "libpng error: ..." on stderr. */
static void png_fail(png_structp png, png_const_charp msg)
{
	(void)msg;
	png_longjmp(png, 1);
}

int xf_png_write_rgb(int fd, const unsigned char *rgb, int width, int height)
{
	png_sink sink = { fd, 0, 0 };
	/* one byte a pixel where the colours fit a palette (the plot pages, quantised by
	 * plsession.c); else three */
	unsigned char plte[3 * XF_PNG_PALETTE_N];
	unsigned char *volatile entries = malloc((size_t)width * (size_t)height);
	int n_colours = entries ? xf_png_palette(rgb, width, height, plte, entries) : -1;
	if (n_colours < 0) {
		free(entries);
		entries = NULL;
	}
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, png_fail, png_quiet);
	png_infop info = png ? png_create_info_struct(png) : NULL;
	if (!info) {
		png_destroy_write_struct(&png, NULL);
		free(entries);
		errno = ENOMEM;
		return -1;
	}
	if (setjmp(png_jmpbuf(png))) { /* png_error: write failed or out of memory */
		png_destroy_write_struct(&png, &info);
		free(entries);
		errno = sink.failed ? sink.why : ENOMEM;
		return -1;
	}
	png_set_write_fn(png, &sink, sink_write, sink_flush);
	/* no filter on any row (one fixed choice, no per-row heuristic): the heatmaps' pixels
	 * are entries of a 256-colour table whose RGB triplets deflate finds again as
	 * matches, which "Up" turned into noise: pages 30 % smaller and deflated 10-25 %
	 * faster than with "Up" (adr/0036) */
	png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
	png_set_compression_level(png, XF_PNG_LEVEL);
	/* zlib's default strategy (libpng picks Z_FILTERED for filtered rows): the same
	 * matches as before the move to libpng, and as fast */
	png_set_compression_strategy(png, Z_DEFAULT_STRATEGY);
	png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8,
		     entries ? PNG_COLOR_TYPE_PALETTE : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_BASE, PNG_FILTER_TYPE_BASE);
	if (entries) {
		png_color colours[XF_PNG_PALETTE_N];
		for (int k = 0; k < n_colours; k++) {
			colours[k].red = plte[3 * k];
			colours[k].green = plte[3 * k + 1];
			colours[k].blue = plte[3 * k + 2];
		}
		png_set_PLTE(png, info, colours, n_colours);
	}
	png_write_info(png, info);
	const unsigned char *pixels = entries ? entries : rgb;
	size_t row = (size_t)width * (entries ? 1 : 3);
	for (int y = 0; y < height; y++)
		png_write_row(png, pixels + (size_t)y * row);
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	free(entries);
	return sink.failed ? -1 : 0;
}
