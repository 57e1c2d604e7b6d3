/*
 * dl.h: symbols of a dlopen'd library as typed function pointers. gsched loads NVIDIA's
 * libnvidia-ml.so.1 at run time (common/topo_nvml.c for NVLinks, worker/nvml.c for
 * telemetry) so that it builds without NVIDIA's headers and runs on machines without the
 * library. ISO C has no conversion between void * and a function pointer, so dlsym()'s
 * answer is copied into the caller's pointer byte for byte.
 *
 * Any thread; the library handle is the caller's.
 */
#ifndef GS_DL_H
#define GS_DL_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Looks up name in lib and stores it into the function pointer at ret_fn (size: its size).
 * Returns false, leaving *ret_fn alone, when the symbol is missing or size is not a
 * pointer's.
 */
bool gs_dl_sym(void *lib, const char *name, void *ret_fn, size_t size);

#endif
