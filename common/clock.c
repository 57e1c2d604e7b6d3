/*
 * clock.c: monotonic and wall-clock readings (see clock.h). CLOCK_MONOTONIC cannot fail on
 * Linux with a valid clock id, so these return values rather than error codes.
 */
#include "common/clock.h"

#include <time.h>

static uint64_t read_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t gs_clock_mono_ns(void)
{
    return read_ns(CLOCK_MONOTONIC);
}

uint64_t gs_clock_mono_ms(void)
{
    return gs_clock_mono_ns() / 1000000ULL;
}

uint64_t gs_clock_wall_ms(void)
{
    return read_ns(CLOCK_REALTIME) / 1000000ULL;
}
