/*
 * sched_http_routes.h: what gschedd's HTTP routes (http.h's table, in http.c) answer with:
 * sched_metrics.c renders /metrics in the Prometheus text format, sched_api.c the read-only
 * /api/v1 JSON. All of them read struct sched_ctx on the loop thread, change nothing, and
 * append to the caller's buffer; docs/monitoring.md lists every metric and field.
 */
#ifndef SCHED_SCHED_HTTP_ROUTES_H
#define SCHED_SCHED_HTTP_ROUTES_H

#include "common/buf.h"
#include "scheduler/http.h"

struct sched_ctx;

/*
 * Appends the metrics of s to out in the text exposition format 0.0.4. Returns 0 or
 * -ENOMEM (out then holds a partial text the caller drops).
 */
int sched_metrics_render(struct sched_ctx *s, struct gs_buf *out);

/* GET /metrics: sched_metrics_render, as text/plain; version=0.0.4. */
int sched_metrics_route(struct sched_ctx *s, const struct sched_http_request *req,
                        struct gs_buf *body, const char **content_type);
/* GET /api/v1/nodes: every node, in name order. */
int sched_api_nodes(struct sched_ctx *s, const struct sched_http_request *req, struct gs_buf *body,
                    const char **content_type);
/* GET /api/v1/jobs: pending and running jobs in id order; ?all=1 adds the ended ones. */
int sched_api_jobs(struct sched_ctx *s, const struct sched_http_request *req, struct gs_buf *body,
                   const char **content_type);
/* GET /api/v1/jobs/ID: one job (-ENOENT when unknown, -EINVAL for a malformed ID). */
int sched_api_job(struct sched_ctx *s, const struct sched_http_request *req, struct gs_buf *body,
                  const char **content_type);

#endif
