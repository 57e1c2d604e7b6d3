/*
 * prom.c: the Prometheus text exposition writer (see prom.h). Written for a scrape of a
 * thousand nodes: label values without anything to escape are copied whole, integral
 * values are printed without printf, and nothing is allocated per line.
 */
#include "scheduler/prom.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void sched_prom_init(struct sched_prom *p, struct gs_buf *out)
{
    p->out = out;
    p->rc = 0;
}

int sched_prom_finish(const struct sched_prom *p)
{
    return p->rc;
}

static void put(struct sched_prom *p, const char *s, size_t len)
{
    if (p->rc == 0)
        p->rc = gs_buf_append(p->out, s, len);
}

static void put_str(struct sched_prom *p, const char *s)
{
    put(p, s, strlen(s));
}

/* s with each character of specials escaped by a backslash (newline as \n). */
static void put_escaped(struct sched_prom *p, const char *s, const char *specials)
{
    size_t run;

    while (*s != '\0') {
        run = strcspn(s, specials);
        put(p, s, run);
        s += run;
        if (*s == '\0')
            break;
        put(p, *s == '\n' ? "\\n" : *s == '\\' ? "\\\\" : "\\\"", 2);
        s++;
    }
}

void sched_prom_family(struct sched_prom *p, const char *name, const char *type, const char *help)
{
    put_str(p, "# HELP ");
    put_str(p, name);
    put(p, " ", 1);
    put_escaped(p, help, "\\\n");
    put_str(p, "\n# TYPE ");
    put_str(p, name);
    put(p, " ", 1);
    put_str(p, type);
    put(p, "\n", 1);
}

/* An integer in decimal, without printf. */
static void put_int(struct sched_prom *p, int64_t v)
{
    char digits[24];
    size_t i = sizeof(digits);
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

    do {
        digits[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        digits[--i] = '-';
    put(p, digits + i, sizeof(digits) - i);
}

static void put_value(struct sched_prom *p, double v)
{
    char text[32];
    int n;

    if (isnan(v)) {
        put_str(p, "NaN");
    } else if (isinf(v)) {
        put_str(p, v > 0 ? "+Inf" : "-Inf");
    } else if ((v < 0 ? -v : v) < 9007199254740992.0 && v == (double)(int64_t)v) {
        put_int(p, (int64_t)v);
    } else {
        n = snprintf(text, sizeof(text), "%.10g", v);
        put(p, text, n > 0 ? (size_t)n : 0);
    }
}

/* {key="value",...} from the pairs of ap, nothing when there are none. */
static void put_labels(struct sched_prom *p, va_list ap)
{
    const char *key, *sep = "{";

    while ((key = va_arg(ap, const char *)) != NULL) {
        put_str(p, sep);
        put_str(p, key);
        put(p, "=\"", 2);
        put_escaped(p, va_arg(ap, const char *), "\\\"\n");
        put(p, "\"", 1);
        sep = ",";
    }
    if (sep[0] == ',')
        put(p, "}", 1);
}

void sched_prom_sample(struct sched_prom *p, const char *name, double value, ...)
{
    va_list ap;

    put_str(p, name);
    va_start(ap, value);
    put_labels(p, ap);
    va_end(ap);
    put(p, " ", 1);
    put_value(p, value);
    put(p, "\n", 1);
}

int sched_prom_labels(struct gs_buf *out, ...)
{
    struct sched_prom p;
    va_list ap;

    sched_prom_init(&p, out);
    va_start(ap, out);
    put_labels(&p, ap);
    va_end(ap);
    return p.rc;
}

void sched_prom_sample_labels(struct sched_prom *p, const char *name, const char *labels,
                              size_t len, double value)
{
    put_str(p, name);
    put(p, labels, len);
    put(p, " ", 1);
    put_value(p, value);
    put(p, "\n", 1);
}
