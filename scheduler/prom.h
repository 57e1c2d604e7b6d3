/*
 * prom.h: writing the Prometheus text exposition format, version 0.0.4 (what /metrics
 * serves, sched_metrics.c):
 *
 *     sched_prom_init(&p, &out);
 *     sched_prom_family(&p, "gsched_node_gpus", "gauge", "GPUs of the node.");
 *     sched_prom_sample(&p, "gsched_node_gpus", 8, "node", "n1", NULL);
 *     rc = sched_prom_finish(&p);
 *
 * gives
 *
 *     # HELP gsched_node_gpus GPUs of the node.
 *     # TYPE gsched_node_gpus gauge
 *     gsched_node_gpus{node="n1"} 8
 *
 * The caller writes a family's HELP and TYPE once, then all its samples (a summary's
 * NAME_sum and NAME_count follow the family NAME). Label values are escaped (backslash,
 * double quote, newline), as is the HELP text (backslash, newline); names are the
 * caller's constants and are not checked. Integral values print as integers, others with
 * 10 significant digits, NaN and infinities as Prometheus spells them.
 *
 * Errors are sticky: after the first failure (out of memory) every call is a no-op and
 * sched_prom_finish() returns it, so a renderer checks once at the end. Pure: no I/O, no
 * allocation besides the buffer's growth. Caller-owned storage; one thread at a time.
 */
#ifndef SCHED_PROM_H
#define SCHED_PROM_H

#include <stdint.h>

#include "common/buf.h"

struct sched_prom {
    struct gs_buf *out;
    int rc;
};

void sched_prom_init(struct sched_prom *p, struct gs_buf *out);
/* The # HELP and # TYPE lines; type is "gauge", "counter", "summary" or "untyped". */
void sched_prom_family(struct sched_prom *p, const char *name, const char *type, const char *help);
/*
 * One sample line: name, then label pairs (key, value, key, value, ..., NULL), then the
 * value. No pairs (just NULL) writes no braces.
 */
void sched_prom_sample(struct sched_prom *p, const char *name, double value, ...)
    __attribute__((sentinel));
/*
 * A label set, {key="value",...} from the pairs (NULL-terminated), escaped, appended to out:
 * made once for a series written in many families. 0 or -ENOMEM.
 */
int sched_prom_labels(struct gs_buf *out, ...) __attribute__((sentinel));
/* One sample line with a label set from sched_prom_labels (len bytes at labels). */
void sched_prom_sample_labels(struct sched_prom *p, const char *name, const char *labels,
                              size_t len, double value);
/* 0, or the first error (-ENOMEM). */
int sched_prom_finish(const struct sched_prom *p);

#endif
