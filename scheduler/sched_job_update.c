/*
 * sched_job_update.c: `scontrol update JobId=ID KEY=VALUE...` on a pending job, as Slurm
 * allows it: its priority (root only; 0 gives it back to the multifactor computation), its
 * nice (anyone may lower their job's priority; a negative nice is root's), its time limit
 * (its owner may only lower it, root may set any), its partition, its QOS (one that admits
 * its owner or account: sched_policy_qos_change), its dependencies and its licenses (ones
 * the cluster has, no more than it has: sched_license_admit; none clears them), its start
 * time (StartTime=, sbatch --begin's), its constraint (Features=) and excluded nodes
 * (ExcNodeList=), as long as some node could still run it (sched_submit_shape_check). Its
 * name, comment and WCKey change while it runs too. The
 * whole request is checked before anything changes, so a bad value changes nothing; the
 * change is stored, put in the job's history, and answered once on disk, and the planner
 * is woken.
 *
 * A running job's time limit may change too, by the same rules (root raises or lowers it,
 * its owner only lowers it), and nothing else of it. Slurm's TimeLimit counts from the
 * job's start, so a limit already passed ends the job at once (TIMEOUT). Its workers
 * enforce it: once the change is on disk, a JobLimitUpdate (protocol 1.8, fire-and-forget,
 * idempotent: it says the whole limit) goes to every node of its allocation, and each
 * restarts the timers of the job's tasks there, batch shell and srun steps alike. A worker
 * older than 1.8 would take the unknown body for a protocol error, so a job with one on its
 * nodes is refused; a node not connected at the time keeps the old limit for the tasks it
 * still runs. The planner reads the new end from spec->time_limit_s for backfill.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/features.h"
#include "common/jobspec_license.h"
#include "common/log.h"
#include "common/units.h"
#include "proto/frame.h"
#include "scheduler/license.h"
#include "scheduler/sched_internal.h"

struct update_op {
    struct sched_cli *cli;
    uint64_t request_id;
    struct sched_action_result result;
    bool send_limit; /* a running job's time limit changed: tell its workers once stored */
    uint32_t attempt;
};

void sched_job_limit_send(struct sched_ctx *s, const struct sched_job *job,
                          const struct sched_node *only)
{
    Gs__JobLimitUpdate up = GS__JOB_LIMIT_UPDATE__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    uint64_t now = gs_clock_wall_ms();

    up.job_id = job->id;
    up.time_limit_s = job->spec->time_limit_s == GS_DURATION_INFINITE ? 0 : job->spec->time_limit_s;
    /* Suspended, it has none: its stopped tasks must not time out meanwhile. Resumed, the
     * time it was suspended does not count. */
    if (job->suspended)
        up.time_limit_s = 0;
    up.elapsed_ms = sched_job_run_ms(job, now);
    up.attempt = job->attempt;
    env.body_case = GS__ENVELOPE__BODY_JOB_LIMIT_UPDATE;
    env.job_limit_update = &up;
    for (uint32_t i = 0; i < job->alloc.nnodes; i++) {
        struct sched_node *n = sched_node_at(s, job->alloc.nodes[i].node);

        if (only != NULL && n != only)
            continue;
        if (n == NULL || !sched_node_send(n, &env))
            GS_LOG(GS_LOG_WARN,
                   "job=%llu node=%s worker not connected; its tasks there keep their time "
                   "limit",
                   (unsigned long long)job->id, n != NULL ? n->name : "?");
    }
}

int sched_job_limit_reachable(struct sched_ctx *s, const struct sched_job *job, const char *what,
                              char *msg, size_t size)
{
    for (uint32_t i = 0; job->state == SCHED_JOB_RUNNING && i < job->alloc.nnodes; i++) {
        struct sched_node *n = sched_node_at(s, job->alloc.nodes[i].node);
        const Gs__Hello *peer =
            n != NULL && n->conn != NULL ? gs_proto_conn_peer_hello(n->conn) : NULL;

        if (peer != NULL && peer->protocol_minor < GS_PROTO_MINOR_JOB_LIMIT) {
            snprintf(msg, size,
                     "%s: the worker on %s speaks protocol %u.%u; a running job's time limit "
                     "needs %u.%u",
                     what, n->name, peer->protocol_major, peer->protocol_minor,
                     GS_PROTO_VERSION_MAJOR, GS_PROTO_MINOR_JOB_LIMIT);
            return -EOPNOTSUPP;
        }
    }
    return 0;
}

static void update_stored(struct sched_ctx *s, int status, void *arg)
{
    struct update_op *op = arg;
    struct sched_job *job = op->send_limit ? sched_jobs_find(s->jobs, op->result.job_id) : NULL;

    /* Only what is on disk reaches the workers; a job that ended or was requeued meanwhile
     * has no tasks left to tell (a next attempt launches with the stored limit). */
    if (status == 0 && !s->stopping && job != NULL && job->state == SCHED_JOB_RUNNING &&
        job->attempt == op->attempt)
        sched_job_limit_send(s, job, NULL);
    if (status < 0)
        sched_cli_error(op->cli, op->request_id, status, "the change could not be stored", true);
    else
        sched_cli_action_reply(op->cli, op->request_id, GS__ENVELOPE__BODY_JOB_UPDATE_REQUEST,
                               &op->result, 1);
    free(op);
}

/* req's licenses as a job's list, the names borrowed from req, into l (room for the most a
 * job may name); how many, or -EINVAL with msg. */
static int req_licenses(const Gs__JobUpdateRequest *req, struct gs_job_license *l, char *msg,
                        size_t size)
{
    char why[160];

    if (req->n_licenses > GS_JOBSPEC_LICENSES_MAX) {
        snprintf(msg, size, "Licenses: at most %d names", GS_JOBSPEC_LICENSES_MAX);
        return -EINVAL;
    }
    for (size_t i = 0; i < req->n_licenses; i++)
        l[i] = (struct gs_job_license){req->licenses[i]->name, req->licenses[i]->count};
    if (gs_license_list_check(l, req->n_licenses, why, sizeof(why)) < 0) {
        snprintf(msg, size, "Licenses: %.140s", why);
        return -EINVAL;
    }
    return (int)req->n_licenses;
}

/* Every check of req against job; 0, or < 0 with msg saying which key. */
/* An update's dependency: its types count from 0 (gsched.proto's JobUpdateRequest). */
static struct gs_dep dep_of(const Gs__Dependency *d)
{
    return (struct gs_dep){(enum gs_dep_type)d->type, d->job_id, d->delay_min,
                           (enum gs_dep_target)d->target, d->task_id};
}

/* The names an update sets, as a job file's keys would take them. */
static int check_words(const Gs__JobUpdateRequest *req, char *msg, size_t size)
{
    char why[160];

    if (req->name != NULL && req->name[0] != '\0' && !gs_jobspec_name_ok(req->name)) {
        snprintf(msg, size, "Name: 1 to %d characters without '/', tabs or newlines",
                 GS_JOBSPEC_NAME_MAX);
        return -EINVAL;
    }
    if (req->set_wckey && req->wckey[0] != '\0' && !gs_jobspec_word_ok(req->wckey)) {
        snprintf(msg, size, "WCKey: one name of letters, digits, '_', '.' or '-'");
        return -EINVAL;
    }
    if (req->set_constraint && gs_features_check(req->constraint, why, sizeof(why)) < 0) {
        snprintf(msg, size, "Features: '%.40s': %.90s", req->constraint, why);
        return -EINVAL;
    }
    if (req->set_comment && strchr(req->comment, '\n') != NULL) {
        snprintf(msg, size, "Comment: one line");
        return -EINVAL;
    }
    return 0;
}

static int check(struct sched_ctx *s, const struct sched_cli *c, const struct sched_job *job,
                 const Gs__JobUpdateRequest *req, char *msg, size_t size)
{
    const struct gs_jobspec *sp = job->spec;
    struct gs_jobspec trial = *sp; /* shallow: only read by sched_slurm_admit */
    uint64_t limit = req->time_limit_s == 0 ? GS_DURATION_INFINITE : req->time_limit_s;
    char why[256];
    int rc;

    if (c->uid != 0 && c->uid != job->uid) {
        snprintf(msg, size, "job %llu: permission denied (it belongs to %s)",
                 (unsigned long long)job->id, job->user);
        return -EPERM;
    }
    if (job->state == SCHED_JOB_RUNNING &&
        (req->set_priority || req->set_nice || req->set_dependency || req->set_licenses ||
         req->set_begin || req->set_constraint || req->set_exclude ||
         (req->partition != NULL && req->partition[0] != '\0') ||
         (req->qos != NULL && req->qos[0] != '\0'))) {
        snprintf(msg, size,
                 "job %llu is RUNNING: only its TimeLimit, Name, Comment and WCKey can be "
                 "changed",
                 (unsigned long long)job->id);
        return -EINVAL;
    }
    if ((rc = check_words(req, msg, size)) < 0)
        return rc;
    if (job->state != SCHED_JOB_PENDING && job->state != SCHED_JOB_RUNNING) {
        snprintf(msg, size, "job %llu is %s: only pending and running jobs can be updated",
                 (unsigned long long)job->id, sched_job_state_name(job->state));
        return -EINVAL;
    }
    if (req->set_priority && c->uid != 0) {
        snprintf(msg, size, "Priority: only root may set a job's priority (Nice lowers it)");
        return -EPERM;
    }
    if (req->set_priority &&
        (req->priority > GS_JOBSPEC_PRIORITY_MAX || req->priority < -GS_JOBSPEC_PRIORITY_MAX)) {
        snprintf(msg, size, "Priority: must be from %d to %d", -GS_JOBSPEC_PRIORITY_MAX,
                 GS_JOBSPEC_PRIORITY_MAX);
        return -EINVAL;
    }
    if (req->set_nice && (req->nice > GS_JOBSPEC_NICE_MAX || req->nice < -GS_JOBSPEC_NICE_MAX)) {
        snprintf(msg, size, "Nice: must be from %d to %d", -GS_JOBSPEC_NICE_MAX,
                 GS_JOBSPEC_NICE_MAX);
        return -EINVAL;
    }
    if (req->set_nice && req->nice < 0 && c->uid != 0) {
        snprintf(msg, size, "Nice: only root may give a negative nice");
        return -EPERM;
    }
    if (req->set_time_limit && c->uid != 0 && limit > sp->time_limit_s) {
        snprintf(msg, size, "TimeLimit: only root may raise a job's time limit");
        return -EPERM;
    }
    if (req->partition != NULL && req->partition[0] != '\0')
        trial.partition = req->partition;
    if (req->set_time_limit)
        trial.time_limit_s = limit;
    if (sched_slurm_admit(s, &trial, why, sizeof(why)) < 0) {
        /* Named as scontrol's keys, not the job file's. */
        if (strncmp(why, "resources.time_limit", 20) == 0)
            snprintf(msg, size, "TimeLimit%.140s", why + 20);
        else if (strncmp(why, "partition", 9) == 0)
            snprintf(msg, size, "Partition%.140s", why + 9);
        else
            snprintf(msg, size, "%.150s", why);
        return -EINVAL;
    }
    if (req->qos != NULL && req->qos[0] != '\0') {
        trial.qos = req->qos;
        if ((rc = sched_policy_qos_change(s, (uint32_t)c->uid, job->user, &trial, msg, size)) < 0)
            return rc;
    }
    if (req->set_licenses) {
        struct gs_job_license l[GS_JOBSPEC_LICENSES_MAX];

        if ((rc = req_licenses(req, l, msg, size)) < 0)
            return rc;
        trial.licenses = l;
        trial.nlicenses = (size_t)rc;
        if (sched_license_admit(s->cfg, &trial, why, sizeof(why)) < 0) {
            /* "resources.licenses: ..." named as scontrol's key */
            snprintf(msg, size, "Licenses%.150s", why + strlen("resources.licenses"));
            return -EINVAL;
        }
    }
    if (sched_job_limit_reachable(s, job, "TimeLimit", msg, size) < 0)
        return -EOPNOTSUPP;
    if (req->set_constraint || req->set_exclude) {
        trial.constraint = req->set_constraint && req->constraint[0] != '\0' ? req->constraint
                           : req->set_constraint                             ? NULL
                                                                             : sp->constraint;
        trial.exclude = req->set_exclude ? req->exclude : sp->exclude;
        trial.nexclude = req->set_exclude ? req->n_exclude : sp->nexclude;
        if (sched_submit_shape_check(s, &trial, why, sizeof(why)) < 0) {
            const char *colon = strstr(why, ": "); /* named as scontrol's key instead */

            snprintf(msg, size, "%s: %.120s", req->set_constraint ? "Features" : "ExcNodeList",
                     strncmp(why, "resources", 9) == 0 && colon != NULL ? colon + 2 : why);
            return -EINVAL;
        }
    }
    for (size_t i = 0; req->set_dependency && i < req->n_depends_on; i++) {
        struct gs_dep d = dep_of(req->depends_on[i]);
        char bad[100];

        if (!gs_dep_valid(&d)) {
            snprintf(msg, size, "Dependency: not a valid dependency");
            return -EINVAL;
        }
        if (d.job_id == job->id) {
            snprintf(msg, size, "Dependency: a job cannot depend on itself");
            return -EINVAL;
        }
        if (sched_jobs_dep_check(s->jobs, &d, bad, sizeof(bad)) < 0) {
            snprintf(msg, size, "Dependency: %s", bad);
            return -EINVAL;
        }
    }
    return 0;
}

/* A checked request's licenses, the job's own copy; NULL out of memory. */
static struct gs_job_license *licenses_copy(const Gs__JobUpdateRequest *req)
{
    struct gs_job_license *l = calloc(req->n_licenses, sizeof(*l));

    for (size_t i = 0; l != NULL && i < req->n_licenses; i++) {
        l[i] = (struct gs_job_license){strdup(req->licenses[i]->name), req->licenses[i]->count};
        if (l[i].name == NULL) {
            gs_license_list_free(l, i);
            return NULL;
        }
    }
    return l;
}

/* The strings a checked request gives the job, copied before anything of it changes (so
 * that running out of memory changes nothing). NULL: not given, or cleared ("" asked). */
struct new_words {
    char *name, *comment, *wckey, *constraint;
    char **exclude;
};

static void words_free(struct new_words *w, size_t nexclude)
{
    free(w->name);
    free(w->comment);
    free(w->wckey);
    free(w->constraint);
    for (size_t i = 0; w->exclude != NULL && i < nexclude; i++)
        free(w->exclude[i]);
    free(w->exclude);
}

static char *dup_set(const char *v, bool *failed)
{
    char *d = v != NULL && v[0] != '\0' ? strdup(v) : NULL;

    *failed = *failed || (v != NULL && v[0] != '\0' && d == NULL);
    return d;
}

static int words_make(const Gs__JobUpdateRequest *req, struct new_words *w)
{
    bool failed = false;

    *w = (struct new_words){0};
    w->name = dup_set(req->name, &failed);
    w->comment = req->set_comment ? dup_set(req->comment, &failed) : NULL;
    w->wckey = req->set_wckey ? dup_set(req->wckey, &failed) : NULL;
    w->constraint = req->set_constraint ? dup_set(req->constraint, &failed) : NULL;
    if (req->set_exclude && req->n_exclude > 0) {
        w->exclude = calloc(req->n_exclude + 1, sizeof(*w->exclude));
        failed = failed || w->exclude == NULL;
        for (size_t i = 0; w->exclude != NULL && i < req->n_exclude; i++)
            w->exclude[i] = dup_set(req->exclude[i], &failed);
    }
    if (failed)
        words_free(w, req->n_exclude);
    return failed ? -ENOMEM : 0;
}

/* The checked request's names, comment, WCKey, constraint, excluded nodes and start time
 * into sp (w's strings move there); what gets " Name=x ..." appended at *off. */
static void apply_words(struct gs_jobspec *sp, const Gs__JobUpdateRequest *req, struct new_words *w,
                        char *what, size_t size, size_t *off)
{
#define SAY(...)                                                                                   \
    do {                                                                                           \
        int k_ = snprintf(what + *off, size - *off, __VA_ARGS__);                                  \
        *off += k_ > 0 && (size_t)k_ < size - *off ? (size_t)k_ : 0;                               \
    } while (0)
    if (w->name != NULL) {
        free(sp->name);
        sp->name = w->name;
        SAY(" Name=%s", sp->name);
    }
    if (req->set_comment) {
        free(sp->comment);
        sp->comment = w->comment;
        SAY(" Comment=%s", sp->comment != NULL ? sp->comment : "(null)");
    }
    if (req->set_wckey) {
        free(sp->wckey);
        sp->wckey = w->wckey;
        SAY(" WCKey=%s", sp->wckey != NULL ? sp->wckey : "(null)");
    }
    if (req->set_constraint) {
        free(sp->constraint);
        sp->constraint = w->constraint;
        SAY(" Features=%s", sp->constraint != NULL ? sp->constraint : "(null)");
    }
    if (req->set_exclude) {
        for (size_t i = 0; i < sp->nexclude; i++)
            free(sp->exclude[i]);
        free(sp->exclude);
        sp->exclude = w->exclude;
        sp->nexclude = w->exclude != NULL ? req->n_exclude : 0;
        SAY(" ExcNodeList=%s", sp->nexclude > 0 ? "set" : "(null)");
    }
    if (req->set_begin) {
        sp->begin_ms = req->begin_ms;
        SAY(" StartTime=%s", req->begin_ms > 0 ? "set" : "now");
    }
#undef SAY
    *w = (struct new_words){0};
}

/* The checked request into job's spec; "Priority=5 TimeLimit=01:00:00" into what. */
static int apply(struct sched_job *job, const Gs__JobUpdateRequest *req, char *what, size_t size)
{
    struct gs_jobspec *sp = job->spec;
    struct gs_dep *deps = NULL;
    struct gs_job_license *lic = NULL;
    char *part = NULL, *qos = NULL;
    struct new_words w;
    size_t off = 0;

    if (words_make(req, &w) < 0)
        return -ENOMEM;
    if (req->set_dependency && req->n_depends_on > 0) {
        deps = calloc(req->n_depends_on, sizeof(*deps));
        if (deps == NULL) {
            words_free(&w, req->n_exclude);
            return -ENOMEM;
        }
        for (size_t i = 0; i < req->n_depends_on; i++)
            deps[i] = dep_of(req->depends_on[i]);
    }
    if (req->partition != NULL && req->partition[0] != '\0' &&
        (part = strdup(req->partition)) == NULL) {
        free(deps);
        words_free(&w, req->n_exclude);
        return -ENOMEM;
    }
    if ((req->qos != NULL && req->qos[0] != '\0' && (qos = strdup(req->qos)) == NULL) ||
        (req->set_licenses && req->n_licenses > 0 && (lic = licenses_copy(req)) == NULL)) {
        free(deps);
        free(part);
        free(qos);
        words_free(&w, req->n_exclude);
        return -ENOMEM;
    }
    what[0] = '\0';
#define SAY(...)                                                                                   \
    do {                                                                                           \
        int k_ = snprintf(what + off, size - off, __VA_ARGS__);                                    \
        off += k_ > 0 && (size_t)k_ < size - off ? (size_t)k_ : 0;                                 \
    } while (0)
    if (req->set_priority) {
        sp->priority = req->priority;
        SAY(" Priority=%d", req->priority);
    }
    if (req->set_nice) {
        sp->nice = req->nice;
        SAY(" Nice=%d", req->nice);
    }
    if (part != NULL) {
        free(sp->partition);
        sp->partition = part;
        SAY(" Partition=%s", part);
    }
    if (qos != NULL) {
        free(sp->qos);
        sp->qos = qos;
        SAY(" QOS=%s", qos);
    }
    if (req->set_licenses) {
        struct gs_buf text = GS_BUF_INIT;

        gs_license_list_free(sp->licenses, sp->nlicenses);
        sp->licenses = lic;
        sp->nlicenses = req->n_licenses;
        gs_license_list_format(sp->licenses, sp->nlicenses, &text);
        SAY(" Licenses=%s", text.data != NULL ? text.data : "(null)");
        gs_buf_release(&text);
    }
    if (req->set_time_limit) {
        char d[32];

        sp->time_limit_s = req->time_limit_s == 0 ? GS_DURATION_INFINITE : req->time_limit_s;
        if (sp->time_limit_s == GS_DURATION_INFINITE)
            snprintf(d, sizeof(d), "UNLIMITED");
        else
            gs_format_duration(sp->time_limit_s, d, sizeof(d));
        SAY(" TimeLimit=%s", d);
    }
    if (req->set_dependency) {
        free(sp->deps);
        sp->deps = deps;
        sp->ndeps = req->n_depends_on;
        sp->depends_any = req->depends_any;
        sp->singleton = req->singleton;
        SAY(" Dependency=%s", sp->ndeps > 0 || sp->singleton ? "set" : "(null)");
    }
#undef SAY
    apply_words(sp, req, &w, what, size, &off);
    job->prio_valid = false;
    job->expected_start_ms = 0;
    return 0;
}

void sched_job_update(struct sched_cli *c, uint64_t request_id, const Gs__JobUpdateRequest *req)
{
    struct sched_ctx *s = c->s;
    struct sched_job *job = sched_jobs_find(s->jobs, req->job_id);
    struct update_op *op = calloc(1, sizeof(*op));
    struct sched_change *ch = NULL;
    char detail[480], what[400];
    uint64_t now = gs_clock_wall_ms();
    int rc;

    if (op == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        return;
    }
    op->cli = c;
    op->request_id = request_id;
    op->result.job_id = req->job_id;
    if (job == NULL) {
        op->result.code = -ENOENT;
        snprintf(op->result.message, sizeof(op->result.message), "job %llu: no such job",
                 (unsigned long long)req->job_id);
        goto answer;
    }
    rc = check(s, c, job, req, op->result.message, sizeof(op->result.message));
    if (rc == 0)
        rc = apply(job, req, what, sizeof(what));
    op->result.code = rc;
    op->result.state = sched_job_wire_state(job);
    if (rc < 0)
        goto answer;
    op->send_limit = job->state == SCHED_JOB_RUNNING && req->set_time_limit;
    op->attempt = job->attempt;
    snprintf(detail, sizeof(detail), "updated by %s:%s", c->uid == 0 ? "root" : job->user, what);
    sched_job_note(job, now, job->state, detail);
    GS_LOG(GS_LOG_INFO, "job=%llu uid=%u change=\"%s\" job updated", (unsigned long long)job->id,
           (unsigned)c->uid, what + (what[0] == ' '));
    ch = sched_change_new(s);
    sched_change_job(ch, job);
    sched_change_event(ch, now, job->id, "", sched_job_state_name(job->state), detail);
    sched_query_job_changed(s, job);
    sched_engine_wake(s);
    sched_cli_hold(c);
    sched_change_commit(s, ch, update_stored, op);
    return;
answer:
    sched_cli_hold(c);
    update_stored(s, 0, op);
}
