/*
 * sched_http_routes.h: what gschedd's HTTP routes (http.h's table, in http.c) answer with:
 * sched_metrics.c renders /metrics in the Prometheus text format, sched_api.c the read-only
 * /api/v1 JSON. All of them read struct sched_ctx on the loop thread, change nothing, and
 * append to the caller's buffer; docs/monitoring.md lists every metric and field.
 */
#ifndef SCHED_SCHED_HTTP_ROUTES_H
#define SCHED_SCHED_HTTP_ROUTES_H

#include <stdint.h>

#include "common/buf.h"
#include "scheduler/http.h"

struct sched_ctx;
struct sched_prom;

struct sched_node;
struct sched_job;
struct gs_json;

/* The GPU telemetry families of /metrics (sched_telemetry.c): per GPU, idle, nodes, jobs. */
void sched_telemetry_metrics(struct sched_prom *p, struct sched_ctx *s);
/* Telemetry keys inside a GPU's, a node's and a job's JSON object (sched_telemetry.c). */
void sched_telemetry_gpu_json(struct gs_json *j, struct sched_ctx *s, const struct sched_node *n,
                              uint32_t gpu);
void sched_telemetry_node_json(struct gs_json *j, struct sched_ctx *s, const struct sched_node *n);
void sched_telemetry_usage_json(struct gs_json *j, struct sched_ctx *s,
                                const struct sched_job *job);

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

/* GET /api/v1/history/NODE: each GPU's recent summaries and the last hour by minute. */
int sched_api_history(struct sched_ctx *s, const struct sched_http_request *req,
                      struct gs_buf *body, const char **content_type);
/* GET /, /app.js, /style.css: the status page's files (sched_web.c). */
int sched_web_file(struct sched_ctx *s, const struct sched_http_request *req, struct gs_buf *body,
                   const char **content_type);

#endif
