/*
 * sched_policy.c: fair share and multifactor priority in gschedd, over the pure
 * fairshare.c and priority.c. The tree is built from gsched.toml at start and its usage
 * loaded from the store; running jobs are charged their allocation's billing rate
 * (priority.billing_*) as time passes (on the cron) and the rest of it when they stop
 * (the job table's stop hook), and usage decays with its half-life. The planner asks
 * sched_policy_priority() for each pending job at every pass. The usage goes to the store
 * once a minute and at an orderly stop, so a restart loses at most a minute of charges.
 * Also what submit checks of priority, nice, account and QOS (which exists, its max_wall,
 * who may use it), and sshare's ShareReply.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/units.h"
#include "scheduler/fairshare.h"
#include "scheduler/priority.h"
#include "scheduler/sched_internal.h"

#define SAVE_EVERY_MS 60000

/*
 * The job's association, made on first use; a job outside the table (sbatch --test-only's
 * draft) only finds one: -ENOENT when its user has none yet, whose factor would be 1 (no
 * usage), and adding one would shift its siblings' shares.
 */
static int assoc_of(struct sched_ctx *s, struct sched_job *job)
{
    if (job->fs_assoc == 0) {
        int a = job->table != NULL ? sched_fairshare_assoc(s->fs, job->spec->account, job->user)
                                   : sched_fairshare_find(s->fs, job->spec->account, job->user);

        if (a < 0)
            return a;
        job->fs_assoc = a + 1;
    }
    return job->fs_assoc - 1;
}

void sched_policy_job_added(struct sched_ctx *s, struct sched_job *job)
{
    (void)assoc_of(s, job); /* out of memory: made when first charged */
}

static double job_rate(struct sched_ctx *s, const struct sched_job *job)
{
    uint64_t gpus = 0, cores = 0, mem = 0;

    for (uint32_t i = 0; i < job->alloc.nnodes; i++) {
        const struct sched_node_alloc *a = &job->alloc.nodes[i];

        gpus += (uint64_t)__builtin_popcountll(a->gpus);
        cores += sched_node_alloc_cores(a);
        mem += a->mem_mib;
    }
    return sched_billing_rate(&s->cfg->priority, gpus, cores, mem);
}

/* Charges job's use from what was charged last to now_ms. */
static void charge(struct sched_ctx *s, struct sched_job *job, uint64_t now_ms)
{
    uint64_t from = job->charged_ms > job->start_ms ? job->charged_ms : job->start_ms;
    int a;

    if (now_ms <= from || job->alloc.nnodes == 0)
        return;
    a = assoc_of(s, job);
    if (a >= 0)
        sched_fairshare_charge(s->fs, a, job_rate(s, job) * (double)(now_ms - from) / 1000.0);
    job->charged_ms = now_ms;
}

static void on_job_stop(void *data, struct sched_job *job)
{
    struct sched_ctx *s = data;

    charge(s, job, job->end_ms > job->start_ms ? job->end_ms : gs_clock_wall_ms());
}

int sched_policy_init(struct sched_ctx *s)
{
    s->fs = sched_fairshare_new(s->cfg, gs_clock_wall_ms());
    if (s->fs == NULL)
        return -ENOMEM;
    sched_jobs_on_stop(s->jobs, on_job_stop, s);
    return 0;
}

void sched_policy_free(struct sched_ctx *s)
{
    sched_fairshare_free(s->fs);
    s->fs = NULL;
}

int sched_policy_load_usage(const char *account, const char *user, double usage, uint64_t at_ms,
                            void *data)
{
    struct sched_ctx *s = data;
    uint64_t now = sched_fairshare_decayed_at(s->fs);
    double half = (double)s->cfg->priority.decay_half_life_s * 1000.0;
    int a = sched_fairshare_assoc(s->fs, account, user);

    if (a < 0)
        return a;
    /* Decayed from when it was stored to now, as if gschedd had run all along. */
    if (half > 0 && now > at_ms)
        usage *= exp2(-(double)(now - at_ms) / half);
    sched_fairshare_set_usage(s->fs, a, usage);
    return 0;
}

/* Every association's usage into the store, as of its last decay. */
static void save_usage(struct sched_ctx *s)
{
    struct sched_change *ch = sched_change_new(s);
    uint64_t at = sched_fairshare_decayed_at(s->fs);
    struct sched_fs_entry e;

    for (size_t i = 0; ch != NULL && i < sched_fairshare_count(s->fs); i++) {
        sched_fairshare_entry(s->fs, i, &e);
        if (e.user[0] != '\0')
            sched_change_usage(ch, e.account, e.user, e.usage, at);
    }
    sched_change_commit(s, ch, NULL, NULL);
}

void sched_policy_tick(struct sched_ctx *s, bool final)
{
    uint64_t now = gs_clock_wall_ms();
    size_t n = sched_jobs_count(s->jobs);

    for (size_t i = s->plan_from; i < n; i++) {
        struct sched_job *job = sched_jobs_at(s->jobs, i);

        if (job->state == SCHED_JOB_RUNNING)
            charge(s, job, now);
    }
    sched_fairshare_decay(s->fs, now);
    sched_fairshare_update(s->fs);
    if (final || now - s->usage_saved_ms >= SAVE_EVERY_MS) {
        save_usage(s);
        s->usage_saved_ms = now;
    }
}

void sched_policy_before_pass(struct sched_ctx *s)
{
    s->prio_cluster = (struct sched_prio_cluster){0};
    for (size_t i = 0; i < s->nnodes; i++) {
        s->prio_cluster.gpus += s->nodes[i]->topology->n_gpus;
        s->prio_cluster.cores += s->nodes[i]->topology->cores;
    }
}

int32_t sched_policy_priority(void *data, struct sched_job *job, uint64_t now_ms)
{
    struct sched_ctx *s = data;
    int a = s->cfg->priority.weight_fairshare > 0 ? assoc_of(s, job) : -1;
    double factor = a >= 0 ? sched_fairshare_factor(s->fs, a) : a == -ENOENT ? 1.0 : 0;

    sched_priority(s->cfg, job->spec, job->submit_ms, now_ms, factor, &s->prio_cluster, &job->prio);
    job->prio_valid = true;
    return job->prio.priority;
}

int32_t sched_policy_job_priority(const struct sched_job *job)
{
    if (job->prio_valid)
        return job->prio.priority;
    return job->spec->priority != 0 ? job->spec->priority : -job->spec->nice;
}

void sched_policy_factors(const struct sched_job *job, Gs__PriorityFactors *f)
{
    gs__priority_factors__init(f);
    f->age = job->prio.age;
    f->fairshare = job->prio.fairshare;
    f->job_size = job->prio.job_size;
    f->partition = job->prio.partition;
    f->qos = job->prio.qos;
    f->nice = job->prio_valid ? job->prio.nice : job->spec->nice;
    f->admin_set = job->spec->priority != 0;
}

/* The job's QOS exists (or is "normal", or no [[qos]] is configured), and its time limit
 * fits the QOS's max_wall. */
static int admit_qos(const struct gs_config *cfg, struct gs_jobspec *spec, char *why, size_t size)
{
    const struct gs_config_qos *q = gs_config_qos(cfg, spec->qos);
    char limit[32];

    /* Without [[qos]] a QOS is only recorded, as accounts are without [[account]]. */
    if (q == NULL && cfg->nqos > 0 && spec->qos != NULL && spec->qos[0] != '\0' &&
        strcmp(spec->qos, GS_CONFIG_DEFAULT_QOS) != 0) {
        snprintf(why, size, "qos: no QOS '%.64s' in the cluster's configuration", spec->qos);
        return -EINVAL;
    }
    if (q == NULL || q->max_wall_s == GS_DURATION_INFINITE)
        return 0;
    if (spec->time_limit_s == GS_DURATION_INFINITE) {
        spec->time_limit_s = q->max_wall_s; /* as a partition's max_time does */
    } else if (spec->time_limit_s > q->max_wall_s) {
        gs_format_duration(q->max_wall_s, limit, sizeof(limit));
        snprintf(why, size, "resources.time_limit: QOS '%s' allows jobs at most %s (its max_wall)",
                 q->name, limit);
        return -EINVAL;
    }
    return 0;
}

/*
 * The job's account: given, the user's default (the first [[account]] listing them), or
 * none (charged under root); one given must exist and have the user as a member unless
 * root submits. Nothing to check without [[account]].
 */
static int admit_account(const struct gs_config *cfg, uint32_t uid, const char *user,
                         struct gs_jobspec *spec, char *why, size_t size)
{
    const struct gs_config_account *a;

    if (cfg->naccounts == 0)
        return 0;
    if (spec->account == NULL || spec->account[0] == '\0') {
        a = gs_config_user_account(cfg, user);
        if (a == NULL)
            return 0; /* charged under root */
        free(spec->account);
        spec->account = strdup(a->name);
        if (spec->account != NULL)
            return 0;
        snprintf(why, size, "out of memory");
        return -ENOMEM;
    }
    if (strcmp(spec->account, GS_CONFIG_ROOT_ACCOUNT) == 0 && uid == 0)
        return 0;
    a = gs_config_account(cfg, spec->account);
    if (a == NULL) {
        snprintf(why, size, "account: no account '%.64s' in the cluster's configuration",
                 spec->account);
        return -EINVAL;
    }
    if (uid != 0 && !gs_config_account_has(a, user)) {
        snprintf(why, size, "account: user %.64s is not a member of account '%.64s'", user,
                 spec->account);
        return -EPERM;
    }
    return 0;
}

/*
 * The QOS's access lists (users, accounts) admit the job: run after admit_account, so that
 * a job that names no account is judged by its default one. Root may use any QOS.
 */
static int admit_qos_access(const struct gs_config *cfg, uint32_t uid, const char *user,
                            const struct gs_jobspec *spec, char *why, size_t size)
{
    const struct gs_config_qos *q = gs_config_qos(cfg, spec->qos);
    char lists[160], account[80] = "";

    if (uid == 0 || gs_config_qos_admits(cfg, q, user, spec->account))
        return 0;
    gs_config_qos_access_text(q, lists, sizeof(lists));
    if (spec->account != NULL && spec->account[0] != '\0')
        snprintf(account, sizeof(account), " (account %.64s)", spec->account);
    snprintf(why, size, "qos: user %.64s%s may not use QOS %.64s (it admits %s)",
             user != NULL ? user : "?", account, q->name, lists);
    return -EPERM;
}

int sched_policy_admit(struct sched_ctx *s, uint32_t uid, const char *user, struct gs_jobspec *spec,
                       char *why, size_t size)
{
    int rc;

    if (uid != 0 && spec->priority != 0) {
        snprintf(why, size, "priority: only root may set a job's priority (nice lowers it)");
        return -EPERM;
    }
    if (uid != 0 && spec->nice < 0) {
        snprintf(why, size, "nice: only root may give a negative nice");
        return -EPERM;
    }
    rc = admit_qos(s->cfg, spec, why, size);
    if (rc == 0 && spec->deadline_ms != 0 && spec->time_limit_s == GS_DURATION_INFINITE) {
        snprintf(why, size, "resources.time_limit: a job with a deadline needs a time limit");
        rc = -EINVAL;
    }
    if (rc == 0)
        rc = admit_account(s->cfg, uid, user, spec, why, size);
    if (rc == 0)
        rc = admit_qos_access(s->cfg, uid, user, spec, why, size);
    return rc;
}

int sched_policy_qos_change(struct sched_ctx *s, uint32_t uid, const char *user,
                            const struct gs_jobspec *trial, char *why, size_t size)
{
    const struct gs_config_qos *q = gs_config_qos(s->cfg, trial->qos);
    char limit[32];

    if (q == NULL && s->cfg->nqos > 0 && strcmp(trial->qos, GS_CONFIG_DEFAULT_QOS) != 0) {
        snprintf(why, size, "QOS: no QOS '%.64s' in the cluster's configuration", trial->qos);
        return -EINVAL;
    }
    if (q != NULL && q->max_wall_s != GS_DURATION_INFINITE &&
        (trial->time_limit_s == GS_DURATION_INFINITE || trial->time_limit_s > q->max_wall_s)) {
        gs_format_duration(q->max_wall_s, limit, sizeof(limit));
        snprintf(why, size,
                 "QOS: QOS '%s' allows jobs at most %s (its max_wall): lower TimeLimit "
                 "first, or with it",
                 q->name, limit);
        return -EINVAL;
    }
    if (admit_qos_access(s->cfg, uid, user, trial, why, size) < 0) {
        memcpy(why, "QOS", 3); /* "qos: ..." as scontrol names the key */
        return -EPERM;
    }
    return 0;
}

void sched_policy_share(struct sched_cli *c, uint64_t request_id)
{
    struct sched_ctx *s = c->s;
    size_t n;
    Gs__ShareInfo *v, **ptrs;
    Gs__ShareReply reply = GS__SHARE_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    struct sched_fs_entry e;

    /* Associations made since the last cron tick (a user's first submit) join the tree's
     * order and factors now, or sshare would list them only after the next tick. */
    sched_fairshare_update(s->fs);
    n = sched_fairshare_count(s->fs);
    v = calloc(n + 1, sizeof(*v));
    ptrs = calloc(n + 1, sizeof(*ptrs));
    if (v == NULL || ptrs == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        sched_fairshare_entry(s->fs, i, &e);
        gs__share_info__init(&v[i]);
        v[i].account = (char *)e.account;
        v[i].user = (char *)e.user;
        v[i].parent = (char *)e.parent;
        v[i].depth = e.depth;
        v[i].raw_shares = e.shares;
        v[i].norm_shares = e.norm_shares;
        v[i].raw_usage = e.usage;
        v[i].effective_usage = e.eff_usage;
        v[i].fairshare = e.fairshare;
        ptrs[i] = &v[i];
    }
    reply.n_shares = n;
    reply.shares = ptrs;
    reply.decay_half_life_s = s->cfg->priority.decay_half_life_s;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_SHARE_REPLY;
    env.share_reply = &reply;
    sched_cli_reply(c, &env, false);
out:
    free(v);
    free(ptrs);
}
