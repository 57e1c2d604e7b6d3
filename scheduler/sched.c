/*
 * sched.c: gschedd's lifecycle: state reloaded from the store, listeners, node registry
 * and heartbeat expiry, and an orderly stop (see sched.h).
 */
#define _GNU_SOURCE /* struct ucred, SO_PEERCRED */

#include "scheduler/sched.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "proto/conn.h"
#include "scheduler/cluster.h"
#include "scheduler/http.h"
#include "scheduler/sched_internal.h"
#include "scheduler/submit_keys.h"
#include "scheduler/telemetry.h"

static void on_cron(uv_timer_t *timer);

/* Where name is, or would go, in s->nodes_by_name. Names are looked up by every node list
 * (reservations at each pass, --exclude, launches), so not by a walk of every node. */
static size_t by_name_slot(const struct sched_ctx *s, const char *name)
{
    size_t lo = 0, hi = s->nnodes;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (strcmp(s->nodes_by_name[mid]->name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct sched_node *sched_node_find(struct sched_ctx *s, const char *name)
{
    size_t at = by_name_slot(s, name);

    return at < s->nnodes && strcmp(s->nodes_by_name[at]->name, name) == 0 ? s->nodes_by_name[at]
                                                                           : NULL;
}

void sched_node_by_name_insert(struct sched_ctx *s, struct sched_node *n)
{
    size_t at = by_name_slot(s, n->name);

    memmove(&s->nodes_by_name[at + 1], &s->nodes_by_name[at],
            (s->nnodes - at) * sizeof(*s->nodes_by_name));
    s->nodes_by_name[at] = n;
}

uint64_t sched_fence_ms(const struct sched_ctx *s)
{
    return s->cfg->fence_timeout_ms;
}

void sched_node_set_down(struct sched_ctx *s, struct sched_node *n, const char *why)
{
    if (!n->up)
        return;
    n->up = false;
    snprintf(n->reason, sizeof(n->reason), "%s", why);
    sched_node_update_schedulable(s, n);
    GS_LOG(GS_LOG_WARN, "node=%s reason=\"%s\" node down", n->name, why);
    sched_failover_node_down(s, n);
    /* A worker that is only slow keeps its connection; closing it makes it register again,
     * and that registration is where its leftover tasks are told to stop. */
    if (n->conn != NULL)
        gs_proto_conn_close(n->conn);
}

static void on_cron(uv_timer_t *timer)
{
    struct sched_ctx *s = timer->data;
    uint64_t now = gs_clock_mono_ms(), limit = s->heartbeat_ms * s->heartbeat_misses;

    for (size_t i = 0; i < s->nnodes; i++) {
        struct sched_node *n = s->nodes[i];
        char why[96];

        if (n->up && now - n->last_heartbeat_mono > limit) {
            snprintf(why, sizeof(why), "missed %u heartbeats", s->heartbeat_misses);
            sched_node_set_down(s, n, why);
        }
        if (!n->up && n->failover_due_mono != 0 && now >= n->failover_due_mono) {
            GS_LOG(GS_LOG_WARN,
                   "node=%s fence_ms=%llu its worker has fenced itself by now: its "
                   "jobs move",
                   n->name, (unsigned long long)sched_fence_ms(s));
            sched_failover_node_lost(s, n);
        }
    }
    sched_cli_sweep(s, now);
    sched_workers_sweep(s, now);
    sched_policy_tick(s, false);
    sched_purge_tick(s);         /* finished jobs past scheduler.min_job_age leave memory */
    sched_history_purge_tick(s); /* ... and past scheduler.purge_after, the store */
    sched_resv_tick(s);          /* reservations that start or end */
    sched_alloc_tick(s);         /* allocations past their time limit (no worker runs their task) */
    sched_steps_check_detached(s); /* steps whose srun did not come back after a restart */
    sched_mail_tick(s);            /* running jobs past the shares of their limit they mail about */
    if (s->timed_deps)
        sched_engine_wake(s);
}

void sched_release_handle(struct sched_ctx *s)
{
    if (--s->open_handles > 0 || !s->stopping)
        return;
    if (s->stopped != NULL)
        s->stopped(s->stopped_data);
    sched_steps_free(s);
    for (size_t i = 0; i < s->nnodes; i++) {
        gs__node_topology__free_unpacked(s->nodes[i]->topology, NULL);
        sched_data_node_free(s->nodes[i]);
        free(s->nodes[i]);
    }
    free(s->nodes);
    free(s->nodes_by_name);
    sched_jobs_free(s->jobs);
    sched_policy_free(s);
    sched_resv_free(s);
    sched_cluster_free(s->cluster);
    sched_part_masks_free(s);
    sched_data_view_end(s);
    sched_tel_free(s->tel);
    sched_mail_free(s);
    sched_submit_keys_free(s->submit_keys);
    gs_proto_auth_key_clear(&s->auth_key);
    free(s);
}

static void on_handle_closed(uv_handle_t *handle)
{
    sched_release_handle(handle->data);
}

static void on_http_closed(void *data)
{
    sched_release_handle(data);
}

int sched_worker_port(const struct sched_ctx *s)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);

    if (uv_tcp_getsockname(&s->workers, (struct sockaddr *)&ss, &len) < 0)
        return -1;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

void sched_stop(struct sched_ctx *s, void (*stopped)(void *data), void *data)
{
    if (s->stopping)
        return;
    s->stopping = true;
    s->stopped = stopped;
    s->stopped_data = data;
    /* Every worker connection, registered or not: one that never registered would
     * otherwise hold the stop for as long as its peer keeps it open (the cron that times
     * those out is closed below). */
    sched_workers_close_all(s);
    sched_mail_stop(s);
    for (struct sched_cli *c = s->clis; c != NULL; c = c->next)
        sched_cli_close(c);
    if (s->journal != NULL && s->fs != NULL)
        sched_policy_tick(s, true); /* the usage since the last minute's save */
    if (s->journal != NULL) {
        sched_journal_close(s->journal); /* commits what is queued first */
        s->journal = NULL;
    }
    if (s->http != NULL) {
        s->open_handles++;
        sched_http_close(s->http, on_http_closed, s);
        s->http = NULL;
    }
    uv_close((uv_handle_t *)&s->plan_idle, on_handle_closed);
    uv_close((uv_handle_t *)&s->plan_timer, on_handle_closed);
    uv_close((uv_handle_t *)&s->cron, on_handle_closed);
    uv_close((uv_handle_t *)&s->workers, on_handle_closed);
    uv_close((uv_handle_t *)&s->cli, on_handle_closed);
    uv_close((uv_handle_t *)&s->login, on_handle_closed);
    unlink(s->socket_path);
}

static int listen_workers(struct sched_ctx *s, const struct gs_config *cfg, struct gs_error *err)
{
    struct sockaddr_storage addr;
    int rc = uv_ip4_addr(cfg->host, (int)cfg->port, (struct sockaddr_in *)&addr);

    if (rc < 0)
        rc = uv_ip6_addr(cfg->host, (int)cfg->port, (struct sockaddr_in6 *)&addr);
    if (rc < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "scheduler.host '%s' is not an IP address",
                            cfg->host);
    rc = uv_tcp_bind(&s->workers, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&s->workers, 128, sched_on_worker_connection);
    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "listen on %s:%u: %s", cfg->host, cfg->port,
                            uv_strerror(rc));
    return 0;
}

/* The CLI socket: a stale file from a crashed gschedd is replaced; anyone may connect,
 * since every request is judged by the caller's uid. */
static int listen_cli(struct sched_ctx *s, const struct gs_config *cfg, struct gs_error *err)
{
    int rc;

    snprintf(s->socket_path, sizeof(s->socket_path), "%s", cfg->socket_path);
    unlink(s->socket_path);
    rc = uv_pipe_bind(&s->cli, s->socket_path);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&s->cli, 128, sched_on_cli_connection);
    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "listen on %s: %s", s->socket_path, uv_strerror(rc));
    chmod(s->socket_path, 0666);
    return 0;
}

/* The cluster key workers must prove they hold (proto/auth.h); none when turned off. */
static int load_key(struct sched_ctx *s, const struct gs_config *cfg, struct gs_error *err)
{
    struct gs_buf why = GS_BUF_INIT;
    int rc;

    if (cfg->auth_key == NULL) {
        GS_LOG(GS_LOG_WARN, "auth=none worker links are not authenticated (scheduler.auth_key "
                            "is \"\"): anyone who reaches the port can register a node");
        return 0;
    }
    rc = gs_proto_auth_key_load(cfg->auth_key, &s->auth_key, &why);
    if (rc < 0)
        gs_error_set(err, rc, 0, 0, "scheduler.auth_key: %s", why.data != NULL ? why.data : "");
    gs_buf_release(&why);
    return rc;
}

struct sched_ctx *sched_new(uv_loop_t *loop, const struct gs_config *cfg, struct gs_error *err)
{
    struct sched_ctx *s = calloc(1, sizeof(*s));

    if (s == NULL || (s->cluster = sched_cluster_new()) == NULL ||
        (s->jobs = sched_jobs_new(s->cluster)) == NULL ||
        (s->tel = sched_tel_new(cfg->idle_threshold_pct, cfg->idle_window_ms)) == NULL ||
        (s->submit_keys = sched_submit_keys_new()) == NULL) {
        if (s != NULL) {
            sched_tel_free(s->tel);
            sched_jobs_free(s->jobs);
            sched_cluster_free(s->cluster);
        }
        free(s);
        gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
        return NULL;
    }
    s->loop = loop;
    s->diag_since_ms = gs_clock_wall_ms();
    s->heartbeat_ms = cfg->heartbeat_interval_ms;
    s->heartbeat_misses = cfg->heartbeat_misses;
    s->kill_grace_ms = cfg->kill_grace_ms;
    s->cfg = cfg;
    snprintf(s->state_dir, sizeof(s->state_dir), "%s", cfg->state_dir);
    uv_tcp_init(loop, &s->workers);
    uv_pipe_init(loop, &s->cli, 0);
    uv_tcp_init(loop, &s->login);
    s->login.data = s;
    uv_timer_init(loop, &s->cron);
    uv_idle_init(loop, &s->plan_idle);
    uv_timer_init(loop, &s->plan_timer);
    s->workers.data = s->cli.data = s->cron.data = s->plan_idle.data = s->plan_timer.data = s;
    s->open_handles = 6;
    if (sched_policy_init(s) < 0) {
        gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
        sched_stop(s, NULL, NULL);
        return NULL;
    }
    if (load_key(s, cfg, err) < 0 || sched_persist_open(s, err) < 0 ||
        listen_workers(s, cfg, err) < 0 || listen_cli(s, cfg, err) < 0 ||
        sched_login_listen(s, cfg, err) < 0) {
        sched_stop(s, NULL, NULL);
        return NULL;
    }
    sched_alloc_reload(s); /* no salloc connection outlives gschedd */
    uv_timer_start(&s->cron, on_cron, s->heartbeat_ms, s->heartbeat_ms);
    s->http = sched_http_start(s, loop, cfg->http_listen, s->state_dir);
    sched_engine_wake(s); /* jobs left pending by the last run */
    GS_LOG(GS_LOG_INFO, "port=%d socket=%s heartbeat_ms=%llu listening", sched_worker_port(s),
           s->socket_path, (unsigned long long)s->heartbeat_ms);
    return s;
}
