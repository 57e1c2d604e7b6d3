/*
 * log.h: one-line-per-event logging with key=value facts.
 *
 *     GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " node=%s gpus=%s placed", id, node, gpus);
 *
 * writes  ts=2026-12-02T13:54:08.123Z level=info prog=gschedd job=42 node=n3 gpus=0,1 placed
 * to the sink (stderr by default). GS_LOG checks the level before evaluating its arguments, so
 * debug lines cost one comparison when disabled. Messages are lowercase, the facts as key=value.
 *
 * The logger's settings are the one process-wide state in common/: a daemon's main() sets them
 * with gs_log_setup() before starting threads; after that they are only read. Writes are one
 * write(2) per line, so lines from threads never interleave. Libraries in common/, kernels/
 * and sharding/ log at debug at most; their callers decide what is worth more.
 */
#ifndef GS_LOG_H
#define GS_LOG_H

#include <stdbool.h>

enum gs_log_level {
    GS_LOG_DEBUG = 0,
    GS_LOG_INFO = 1,
    GS_LOG_WARN = 2,
    GS_LOG_ERROR = 3,
    GS_LOG_OFF = 4,
};

/* Sets the program name printed as prog=, the lowest level written and the output fd.
 * prog is copied (at most 31 bytes). */
void gs_log_setup(const char *prog, enum gs_log_level level, int fd);

/* Parses "debug", "info", "warn"/"warning", "error" or "off". Returns 0 or -EINVAL. */
int gs_log_level_parse(const char *name, enum gs_log_level *ret_level);
const char *gs_log_level_name(enum gs_log_level level);

/* True when lines at level would be written. */
bool gs_log_enabled(enum gs_log_level level);

void gs_log_write(enum gs_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define GS_LOG(level, ...)                                                                         \
    do {                                                                                           \
        if (gs_log_enabled(level))                                                                 \
            gs_log_write((level), __VA_ARGS__);                                                    \
    } while (0)

#endif
