/*
 * qos.c: counting what runs in each QOS per user and per account during a planning pass
 * (see qos.h). Counts are rebuilt at every pass from the running jobs, so nothing here is
 * ever out of step with the job table; a pass looks at a handful of (QOS, owner) pairs, so
 * they sit in one array searched in order.
 */
#include "scheduler/qos.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct count {
    const struct gs_config_qos *qos;
    bool account; /* key is an account, else a user */
    char key[64];
    uint64_t gpus, jobs;
};

struct sched_qos_usage {
    const struct gs_config *cfg;
    struct count *v;
    size_t n, cap;
};

struct sched_qos_usage *sched_qos_usage_new(const struct gs_config *cfg)
{
    struct sched_qos_usage *u = calloc(1, sizeof(*u));

    if (u != NULL)
        u->cfg = cfg;
    return u;
}

void sched_qos_usage_free(struct sched_qos_usage *u)
{
    if (u == NULL)
        return;
    free(u->v);
    free(u);
}

static bool limited(const struct gs_config_qos *q)
{
    return q != NULL && (q->max_gpus_per_user > 0 || q->max_jobs_per_user > 0 ||
                         q->max_gpus_per_account > 0 || q->max_jobs_per_account > 0);
}

static struct count *find(const struct sched_qos_usage *u, const struct gs_config_qos *q,
                          bool account, const char *key)
{
    for (size_t i = 0; i < u->n; i++) {
        struct count *c = &u->v[i];

        if (c->qos == q && c->account == account && strncmp(c->key, key, sizeof(c->key)) == 0)
            return c;
    }
    return NULL;
}

static int add(struct sched_qos_usage *u, const struct gs_config_qos *q, bool account,
               const char *key, uint32_t gpus)
{
    struct count *c = find(u, q, account, key);

    if (c == NULL) {
        if (u->n == u->cap) {
            size_t cap = u->cap ? u->cap * 2 : 16;
            struct count *v = realloc(u->v, cap * sizeof(*v));

            if (v == NULL)
                return -ENOMEM;
            u->v = v;
            u->cap = cap;
        }
        c = &u->v[u->n++];
        memset(c, 0, sizeof(*c));
        c->qos = q;
        c->account = account;
        snprintf(c->key, sizeof(c->key), "%s", key);
    }
    c->gpus += gpus;
    c->jobs++;
    return 0;
}

static const char *account_of(const struct gs_jobspec *spec)
{
    return spec->account != NULL ? spec->account : "";
}

int sched_qos_usage_add(struct sched_qos_usage *u, const struct gs_jobspec *spec, const char *user,
                        uint32_t gpus)
{
    const struct gs_config_qos *q = gs_config_qos(u->cfg, spec->qos);
    int rc;

    if (!limited(q))
        return 0;
    rc = add(u, q, false, user, gpus);
    return rc < 0 ? rc : add(u, q, true, account_of(spec), gpus);
}

const char *sched_qos_usage_check(const struct sched_qos_usage *u, const struct gs_jobspec *spec,
                                  const char *user, uint32_t gpus)
{
    const struct gs_config_qos *q = gs_config_qos(u->cfg, spec->qos);
    const struct count *mine, *acct;

    if (!limited(q))
        return NULL;
    mine = find(u, q, false, user);
    acct = find(u, q, true, account_of(spec));
    if (q->max_gpus_per_user > 0 && (mine ? mine->gpus : 0) + gpus > q->max_gpus_per_user)
        return "QOSMaxGRESPerUser";
    if (q->max_jobs_per_user > 0 && (mine ? mine->jobs : 0) + 1 > q->max_jobs_per_user)
        return "QOSMaxJobsPerUserLimit";
    if (q->max_gpus_per_account > 0 && (acct ? acct->gpus : 0) + gpus > q->max_gpus_per_account)
        return "QOSMaxGRESPerAccount";
    if (q->max_jobs_per_account > 0 && (acct ? acct->jobs : 0) + 1 > q->max_jobs_per_account)
        return "QOSMaxJobsPerAccount";
    return NULL;
}

uint32_t sched_qos_tier(const struct gs_config *cfg, const struct gs_jobspec *spec)
{
    const struct gs_config_qos *q = gs_config_qos(cfg, spec->qos);

    return q != NULL ? q->tier : 0;
}
