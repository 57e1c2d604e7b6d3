/*
 * clock.h: time for gsched. All durations and deadlines inside gsched are uint64_t
 * milliseconds (or nanoseconds where noted) on the monotonic clock, which never jumps when an
 * operator sets the wall clock. Wall-clock time is used only for what users read (submit
 * times, log stamps). Thread-safe.
 */
#ifndef GS_CLOCK_H
#define GS_CLOCK_H

#include <stdint.h>

/* Monotonic time since an arbitrary epoch. */
uint64_t gs_clock_mono_ns(void);
uint64_t gs_clock_mono_ms(void);
/* Wall-clock time in milliseconds since the Unix epoch. */
uint64_t gs_clock_wall_ms(void);

#endif
