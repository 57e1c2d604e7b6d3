/*
 * bind_list.h: the lists srun's --gpu-bind and --cpu-bind take after map_*: and mask_*:
 * ("0,2*3,1" or "0x3,c"): decimal ids or hex masks, each repeated N times with "*N". One
 * reader for both options (common/gpu_bind.c, common/cpu_bind.c). Pure; any thread.
 */
#ifndef GS_COMMON_BIND_LIST_H
#define GS_COMMON_BIND_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_BIND_LIST_MAX 128 /* entries after expanding "*N" */

/*
 * Reads s into list (room for GS_BIND_LIST_MAX) and *n: base 10 ids or base 16 masks (with
 * or without 0x; a zero mask is refused). opt ("--gpu-bind") and noun ("GPU") word the
 * error. Returns 0, or -EINVAL with why.
 */
int gs_bind_list_parse(const char *s, int base, const char *opt, const char *noun, uint64_t *list,
                       uint32_t *n, char *why, size_t why_size);

/* A whole unsigned number of base 10 or 16 (0x allowed) in [s, end); false when not one. */
bool gs_bind_number(const char *s, const char *end, int base, uint64_t *out);

#endif
