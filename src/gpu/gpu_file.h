/* gpu_file.h — the checks a CUDA module's file passes before dlopen() (adr/0072). */
#ifndef XF_GPU_FILE_H
#define XF_GPU_FILE_H

#include <stddef.h>

/* 0 when path (links followed) is a regular file holding a whole 64-bit ELF shared object
 * of this machine: every byte its header tables and loadable segments name. Otherwise −1
 * and why (len bytes) says what is wrong, one phrase ("it is a FIFO, not a regular
 * file"). Never blocks: a FIFO is not opened. */
int xf_gpu_module_file_check(const char *path, char *why, size_t len);

#endif
