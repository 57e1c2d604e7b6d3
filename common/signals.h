/*
 * signals.h: signal names as users type them (`scancel -s USR1`, `sbatch --signal=B:TERM@60`,
 * `gsched cancel --signal`) and as gsched prints them. Names are Linux's without "SIG";
 * parsing takes them in any case, with or without the prefix, or as numbers 1..64 (the
 * real-time ones included). Pure; any thread.
 */
#ifndef GS_SIGNALS_H
#define GS_SIGNALS_H

#include <stddef.h>

#define GS_SIGNAL_MAX 64

/* "TERM" for SIGTERM; NULL for a number without a name here. */
const char *gs_signal_name(int signo);

/* The first len bytes of text as a signal. Returns 0 with *ret, or -EINVAL. */
int gs_signal_parse(const char *text, size_t len, int *ret);

#endif
