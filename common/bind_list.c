/*
 * bind_list.c: the id and mask lists of srun's --gpu-bind and --cpu-bind (see bind_list.h),
 * read the one way Slurm's srun(1) writes them.
 */
#include "common/bind_list.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool gs_bind_number(const char *s, const char *end, int base, uint64_t *out)
{
    char buf[32], *stop;
    size_t len = (size_t)(end - s);

    if (len == 0 || len >= sizeof(buf))
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (base == 16 && len > 2 && buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X'))
        memmove(buf, buf + 2, len - 1);
    if (buf[0] == '\0' || buf[0] == '-' || buf[0] == '+')
        return false;
    errno = 0;
    *out = strtoull(buf, &stop, base);
    return errno == 0 && *stop == '\0';
}

int gs_bind_list_parse(const char *s, int base, const char *opt, const char *noun, uint64_t *list,
                       uint32_t *n, char *why, size_t why_size)
{
    *n = 0;
    while (*s != '\0') {
        const char *comma = strchr(s, ','), *end = comma != NULL ? comma : s + strlen(s);
        const char *star = memchr(s, '*', (size_t)(end - s));
        uint64_t v, times = 1;

        if (!gs_bind_number(s, star != NULL ? star : end, base, &v) ||
            (star != NULL && (!gs_bind_number(star + 1, end, 10, &times) || times == 0)) ||
            (base == 16 && v == 0)) {
            snprintf(why, why_size, "%s: '%s' is not a list of %s ids or masks", opt, s, noun);
            return -EINVAL;
        }
        if (times > GS_BIND_LIST_MAX - *n) {
            snprintf(why, why_size, "%s: more than %d entries in '%s'", opt, GS_BIND_LIST_MAX, s);
            return -EINVAL;
        }
        for (uint64_t i = 0; i < times; i++)
            list[(*n)++] = v;
        s = comma != NULL ? comma + 1 : end;
        if (comma != NULL && *s == '\0') {
            snprintf(why, why_size, "%s: the list ends with a comma", opt);
            return -EINVAL;
        }
    }
    if (*n == 0) {
        snprintf(why, why_size, "%s: an empty list", opt);
        return -EINVAL;
    }
    return 0;
}
