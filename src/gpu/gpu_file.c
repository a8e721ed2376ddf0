/* gpu_file.c — is this file a module dlopen() can map without hanging or crashing the
 * program (gpu_file.h, adr/0072)? dlopen() of a FIFO blocks in open() forever; of a
 * folder or device it fails late or not at all; of a truncated shared object it maps
 * segments past the end of the file, and the first touch of such a page is SIGBUS. So
 * before dlopen: the path (links followed: a package manager's link to a module is
 * legitimate) must end at a regular file, opened without blocking; its ELF header must be
 * this host's kind of shared object; and the file must hold every byte the header tables
 * and the loadable segments name. What is inside those bytes is trusted (docs/gpu.md,
 * "Trust"): the checks are against accidents, not against a hostile module. */
#include "gpu/gpu_file.h"

#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The ELF machine this program runs as; 0: not known here, not checked. */
#if defined(__x86_64__)
#define XF_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define XF_ELF_MACHINE EM_AARCH64
#elif defined(__powerpc64__)
#define XF_ELF_MACHINE EM_PPC64
#else
#define XF_ELF_MACHINE 0
#endif

#if __BYTE_ORDER == __LITTLE_ENDIAN
#define XF_ELF_DATA ELFDATA2LSB
#else
#define XF_ELF_DATA ELFDATA2MSB
#endif

static const char *kind_of(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISDIR(mode))
		return "a folder";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a plain file";
}

/* end = off + n * size, 0 when that overflows */
static uint64_t table_end(uint64_t off, uint64_t n, uint64_t size)
{
	if (size && n > (UINT64_MAX - off) / size)
		return 0;
	return off + n * size;
}

/* The ELF header and program headers of fd (size bytes): 0, or −1 with why set. */
static int check_elf(int fd, uint64_t size, char *why, size_t len)
{
	Elf64_Ehdr eh;
	ssize_t got = pread(fd, &eh, sizeof eh, 0);
	if (got >= 0 && (size_t)got >= SELFMAG && memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
		snprintf(why, len, "it is no ELF file (no shared object at all)");
		return -1;
	}
	if (got < 0 || (size_t)got < sizeof eh) {
		snprintf(why, len, "it is truncated (%llu bytes, less than an ELF header)",
			 (unsigned long long)size);
		return -1;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != XF_ELF_DATA) {
		snprintf(why, len,
			 "it is not a 64-bit ELF file of this byte order (class %d, "
			 "data %d)",
			 eh.e_ident[EI_CLASS], eh.e_ident[EI_DATA]);
		return -1;
	}
	if (XF_ELF_MACHINE && eh.e_machine != XF_ELF_MACHINE) {
		snprintf(why, len,
			 "it is built for another machine (ELF machine %d, this "
			 "program's %d)",
			 eh.e_machine, XF_ELF_MACHINE);
		return -1;
	}
	if (eh.e_type != ET_DYN) {
		snprintf(why, len, "it is not a shared object (ELF type %d, want %d)", eh.e_type,
			 ET_DYN);
		return -1;
	}
	if (eh.e_phnum == 0 || eh.e_phnum == PN_XNUM || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    (eh.e_shnum && eh.e_shentsize != sizeof(Elf64_Shdr))) {
		snprintf(why, len, "its ELF header is damaged (%d program headers of %d bytes)",
			 eh.e_phnum, eh.e_phentsize);
		return -1;
	}
	uint64_t need = sizeof eh;
	uint64_t ph_end = table_end(eh.e_phoff, eh.e_phnum, eh.e_phentsize);
	uint64_t sh_end = table_end(eh.e_shoff, eh.e_shnum, eh.e_shentsize);
	if (!ph_end || (eh.e_shnum && !sh_end)) {
		snprintf(why, len, "its ELF header is damaged (tables beyond 2^64 bytes)");
		return -1;
	}
	need = ph_end > need ? ph_end : need;
	need = sh_end > need ? sh_end : need;
	Elf64_Phdr *ph = NULL;
	if (ph_end <= size) {
		ph = malloc((size_t)eh.e_phnum * sizeof *ph);
		size_t bytes = (size_t)eh.e_phnum * sizeof *ph;
		if (!ph || pread(fd, ph, bytes, (off_t)eh.e_phoff) != (ssize_t)bytes) {
			free(ph);
			snprintf(why, len, "its program headers cannot be read (%s)",
				 ph ? strerror(errno) : "out of memory");
			return -1;
		}
		/* the loader maps each loadable segment from the file: a page past the end of
		 * the file is SIGBUS at its first touch */
		for (int k = 0; k < eh.e_phnum; k++) {
			if (ph[k].p_type != PT_LOAD)
				continue;
			uint64_t end = table_end(ph[k].p_offset, 1, ph[k].p_filesz);
			if (!end && ph[k].p_filesz) {
				free(ph);
				snprintf(why, len, "its program headers are damaged");
				return -1;
			}
			need = end > need ? end : need;
		}
		free(ph);
	}
	if (need > size) {
		snprintf(why, len,
			 "it is truncated (%llu bytes; its headers and segments need "
			 "%llu)",
			 (unsigned long long)size, (unsigned long long)need);
		return -1;
	}
	return 0;
}

int xf_gpu_module_file_check(const char *path, char *why, size_t len)
{
	struct stat st, fst;
	if (stat(path, &st)) {
		snprintf(why, len, "%s", strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, len, "it is %s, not a regular file", kind_of(st.st_mode));
		return -1;
	}
	/* O_NONBLOCK: should the name be swapped for a FIFO after stat(), open() still
	 * returns, and fstat() below says what it is */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		snprintf(why, len, "%s", strerror(errno));
		return -1;
	}
	int rc;
	if (fstat(fd, &fst)) {
		snprintf(why, len, "%s", strerror(errno));
		rc = -1;
	} else if (!S_ISREG(fst.st_mode)) {
		snprintf(why, len, "it is %s, not a regular file", kind_of(fst.st_mode));
		rc = -1;
	} else {
		rc = check_elf(fd, (uint64_t)fst.st_size, why, len);
	}
	close(fd);
	return rc;
}
