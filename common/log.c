/*
 * log.c: the logger behind GS_LOG. Formats each line into a stack buffer and emits it with a
 * single write(2), which keeps lines whole across threads and processes sharing a file.
 * Lines longer than the buffer are cut and end in "..." rather than being split.
 */
#include "common/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 2048

/* The logger's settings: written by gs_log_setup() before threads exist, then read-only. */
static struct {
    char prog[32];
    enum gs_log_level level;
    int fd;
} log_cfg = {"gsched", GS_LOG_INFO, 2};

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

void gs_log_setup(const char *prog, enum gs_log_level level, int fd)
{
    if (prog != NULL)
        snprintf(log_cfg.prog, sizeof(log_cfg.prog), "%s", prog);
    log_cfg.level = level;
    log_cfg.fd = fd;
}

int gs_log_level_parse(const char *name, enum gs_log_level *ret_level)
{
    for (int i = GS_LOG_DEBUG; i <= GS_LOG_OFF; i++) {
        if (strcasecmp(name, level_names[i]) == 0) {
            *ret_level = (enum gs_log_level)i;
            return 0;
        }
    }
    if (strcasecmp(name, "warning") == 0) {
        *ret_level = GS_LOG_WARN;
        return 0;
    }
    return -EINVAL;
}

const char *gs_log_level_name(enum gs_log_level level)
{
    if ((int)level < GS_LOG_DEBUG || level > GS_LOG_OFF)
        return "unknown";
    return level_names[level];
}

bool gs_log_enabled(enum gs_log_level level)
{
    return level >= log_cfg.level && level < GS_LOG_OFF;
}

static size_t format_prefix(char *out, size_t size, enum gs_log_level level)
{
    struct timespec ts;
    struct tm tm;
    int n;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = snprintf(out, size, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s prog=%s ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 ts.tv_nsec / 1000000L, gs_log_level_name(level), log_cfg.prog);
    if (n < 0)
        return 0;
    return (size_t)n < size ? (size_t)n : size - 1;
}

void gs_log_write(enum gs_log_level level, const char *fmt, ...)
{
    char line[LOG_LINE_MAX];
    size_t len = format_prefix(line, sizeof(line) - 1, level);
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line + len, sizeof(line) - 1 - len, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof(line) - 1 - len) {
        len = sizeof(line) - 1;
        memcpy(line + len - 3, "...", 3);
    } else {
        len += (size_t)n;
    }
    while (len > 0 && line[len - 1] == '\n')
        len--;
    line[len++] = '\n';
    /* A failed or short log write has nowhere better to be reported; drop it. */
    for (size_t off = 0; off < len;) {
        ssize_t w = write(log_cfg.fd, line + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
}
