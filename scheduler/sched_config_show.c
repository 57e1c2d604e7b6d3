/*
 * sched_config_show.c: `scontrol show config` in gschedd: the settings it runs with, as
 * key/value pairs. Slurm's names come first where gsched has that setting or behaviour
 * (MinJobAge, KillWait, MailProg, SchedulerParameters=bf_licenses, ...), in Slurm's forms
 * ("300 sec"), so that `scontrol show config | grep MinJobAge` works as on Slurm; then
 * gsched.toml's own keys under their names ("scheduler.backfill_depth"), which have no
 * Slurm twin. What is shown is the loaded configuration, not the file: a change to the file
 * shows after gschedd's restart.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/buf.h"
#include "common/clock.h"
#include "gsched_config.h"
#include "scheduler/sched_internal.h"

#define MAX_ENTRIES 64

struct entries {
    Gs__ConfigEntry v[MAX_ENTRIES];
    Gs__ConfigEntry *ptrs[MAX_ENTRIES];
    char *text[MAX_ENTRIES]; /* the values made here (owned) */
    size_t n;
    bool oom;
};

__attribute__((format(printf, 3, 4))) static void add(struct entries *e, const char *key,
                                                      const char *fmt, ...)
{
    struct gs_buf b = GS_BUF_INIT;
    va_list ap;

    if (e->n == MAX_ENTRIES)
        return;
    va_start(ap, fmt);
    gs_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (gs_buf_error(&b) < 0) {
        e->oom = true;
        gs_buf_release(&b);
        return;
    }
    gs__config_entry__init(&e->v[e->n]);
    e->text[e->n] = b.data != NULL ? gs_buf_detach(&b, NULL) : NULL;
    e->v[e->n].key = (char *)key;
    e->v[e->n].value = e->text[e->n] != NULL ? e->text[e->n] : "";
    e->ptrs[e->n] = &e->v[e->n];
    e->n++;
}

static const char *or_null(const char *s)
{
    return s != NULL && s[0] != '\0' ? s : "(null)";
}

static void licenses(struct entries *e, const struct gs_config *cfg)
{
    struct gs_buf b = GS_BUF_INIT;

    for (size_t i = 0; i < cfg->nlicenses; i++)
        gs_buf_printf(&b, "%s%s:%u", i > 0 ? "," : "", cfg->licenses[i].name,
                      cfg->licenses[i].count);
    add(e, "Licenses", "%s", or_null(b.data));
    gs_buf_release(&b);
}

static bool any_tier(const struct gs_config *cfg)
{
    for (size_t i = 0; i < cfg->nqos; i++) {
        if (cfg->qos[i].tier > 0)
            return true;
    }
    return false;
}

static void slurm_names(struct entries *e, const struct gs_config *cfg)
{
    const struct gs_config_priority *p = &cfg->priority;

    add(e, "ClusterName", "%s", or_null(cfg->cluster_name));
    add(e, "GresTypes", "gpu");
    add(e, "KillWait", "%llu sec", (unsigned long long)(cfg->kill_grace_ms / 1000));
    licenses(e, cfg);
    add(e, "MailProg", "%s", or_null(cfg->mail_prog));
    add(e, "MaxArraySize", "%u", SCHED_MAX_ARRAY_SIZE);
    add(e, "MinJobAge", "%llu sec", (unsigned long long)(cfg->min_job_age_ms / 1000));
    add(e, "PreemptMode", "%s", any_tier(cfg) ? "REQUEUE" : "OFF");
    add(e, "MpiDefault", "%s", cfg->mpi_default[0] != '\0' ? cfg->mpi_default : "none");
    add(e, "PreemptType", "%s", any_tier(cfg) ? "preempt/qos" : "preempt/none");
    add(e, "PriorityDecayHalfLife", "%llu sec", (unsigned long long)p->decay_half_life_s);
    add(e, "PriorityFavorSmall", "%s", p->favor_small ? "Yes" : "No");
    add(e, "PriorityMaxAge", "%llu sec", (unsigned long long)p->max_age_s);
    add(e, "PriorityType", "%s", p->multifactor ? "priority/multifactor" : "priority/basic");
    add(e, "PriorityWeightAge", "%u", p->weight_age);
    add(e, "PriorityWeightFairShare", "%u", p->weight_fairshare);
    add(e, "PriorityWeightJobSize", "%u", p->weight_job_size);
    add(e, "PriorityWeightPartition", "%u", p->weight_partition);
    add(e, "PriorityWeightQOS", "%u", p->weight_qos);
    add(e, "SchedulerParameters", "bf_licenses%s,max_switch_wait=%u",
        cfg->kill_invalid_depend ? ",kill_invalid_depend" : "", cfg->max_switch_wait_s);
    add(e, "SchedulerType", "sched/backfill");
    add(e, "SelectType", "select/cons_tres");
    add(e, "SlurmctldHost", "%s", or_null(cfg->host));
    add(e, "SlurmctldPort", "%u", cfg->port);
    add(e, "SlurmdTimeout", "%llu sec",
        (unsigned long long)(cfg->heartbeat_interval_ms * cfg->heartbeat_misses / 1000));
    add(e, "StateSaveLocation", "%s", or_null(cfg->state_dir));
    add(e, "Version", "gsched %s", GSCHED_VERSION);
}

static void gsched_names(struct entries *e, const struct gs_config *cfg)
{
    add(e, "scheduler.backfill_depth", "%u", cfg->backfill_depth);
    add(e, "scheduler.data_locality", "%s", gs_data_locality_name(cfg->data_locality));
    add(e, "scheduler.data_locality_wait", "%u sec", cfg->data_locality_wait_s);
    add(e, "scheduler.data_copy_rate", "%llu MiB/s", (unsigned long long)cfg->data_copy_rate_mib);
    add(e, "scheduler.fence_timeout", "%llu sec",
        (unsigned long long)(cfg->fence_timeout_ms / 1000));
    add(e, "scheduler.heartbeat_interval", "%llu ms",
        (unsigned long long)cfg->heartbeat_interval_ms);
    add(e, "scheduler.heartbeat_misses", "%u", cfg->heartbeat_misses);
    add(e, "scheduler.http", "%s", or_null(cfg->http_listen));
    add(e, "scheduler.idle_threshold", "%u %%", cfg->idle_threshold_pct);
    add(e, "scheduler.idle_window", "%llu sec", (unsigned long long)(cfg->idle_window_ms / 1000));
    add(e, "scheduler.kill_invalid_depend", "%s", cfg->kill_invalid_depend ? "true" : "false");
    add(e, "scheduler.max_connections", "%u", cfg->max_connections);
    add(e, "scheduler.max_connections_per_user", "%u", cfg->max_connections_per_user);
    add(e, "scheduler.max_submit_jobs", "%u", cfg->max_submit_jobs);
    add(e, "scheduler.purge_after", "%llu sec", (unsigned long long)(cfg->purge_after_ms / 1000));
    add(e, "scheduler.request_timeout", "%llu sec",
        (unsigned long long)(cfg->request_timeout_ms / 1000));
    add(e, "scheduler.cli_port", "%u", cfg->cli_port);
    add(e, "scheduler.auth_key", "%s", or_null(cfg->auth_key));
}

void sched_query_config(struct sched_cli *c, uint64_t request_id)
{
    struct entries *e = calloc(1, sizeof(*e));
    Gs__ConfigReply reply = GS__CONFIG_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    if (e == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        return;
    }
    slurm_names(e, c->s->cfg);
    gsched_names(e, c->s->cfg);
    if (e->oom) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
    } else {
        reply.now_ms = gs_clock_wall_ms();
        reply.entries = e->ptrs;
        reply.n_entries = e->n;
        env.request_id = request_id;
        env.body_case = GS__ENVELOPE__BODY_CONFIG_REPLY;
        env.config_reply = &reply;
        sched_cli_reply(c, &env, false);
    }
    for (size_t i = 0; i < e->n; i++)
        free(e->text[i]);
    free(e);
}
