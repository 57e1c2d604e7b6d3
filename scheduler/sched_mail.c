/*
 * sched_mail.c: the jobs' mail, sent (mail.h decides what is due and says it). Each
 * message runs the configured program (scheduler.mail_prog, Slurm's MailProg; default
 * /usr/bin/mail) as PROG -s SUBJECT ADDRESS, with an empty body on its stdin and the
 * SLURM_JOB_* variables Slurm gives its MailProg, through uv_spawn on gschedd's loop: no
 * argument goes through a shell, and the address was checked at submit (no leading '-').
 * At most MAIL_RUNNING programs run at once; later messages wait their turn, up to
 * MAIL_QUEUED (past that one is dropped and logged). A program that cannot start or fails
 * is logged: mail is best effort and never holds a job up. It runs as gschedd does.
 *
 * Decisions are made where every change to a job is announced (sched_query_job_changed)
 * and, for the shares of a time limit and dependencies that can never be met (a reason the
 * planning pass writes), on the cron.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/jobspec_mail.h"
#include "common/log.h"
#include "scheduler/mail.h"
#include "scheduler/sched_internal.h"

#define MAIL_RUNNING 4
#define MAIL_QUEUED 1000
#define MAIL_ENV 12

/* One message: the program's argv and environment (strings owned, NULL-terminated). */
struct mail_item {
    struct mail_item *next;
    uint64_t job_id;
    char *argv[5];
    char *env[MAIL_ENV + 1];
};

struct mail_run {
    uv_process_t proc;
    struct sched_ctx *s;
    struct mail_run *next;
    uint64_t job_id;
};

struct sched_mail {
    struct mail_item *head, *tail;
    size_t nqueued;
    struct mail_run *running;
    size_t nrunning;
};

static void item_free(struct mail_item *m)
{
    for (size_t i = 0; i < sizeof(m->argv) / sizeof(m->argv[0]); i++)
        free(m->argv[i]);
    for (size_t i = 0; i <= MAIL_ENV; i++)
        free(m->env[i]);
    free(m);
}

static void run_forget(struct sched_mail *m, struct mail_run *r)
{
    for (struct mail_run **p = &m->running; *p != NULL; p = &(*p)->next) {
        if (*p == r) {
            *p = r->next;
            m->nrunning--;
            return;
        }
    }
}

static void on_run_closed(uv_handle_t *h)
{
    struct mail_run *r = h->data;
    struct sched_ctx *s = r->s;

    free(r);
    sched_release_handle(s);
}

static void start_next(struct sched_ctx *s);

static void on_run_exit(uv_process_t *proc, int64_t status, int term_signal)
{
    struct mail_run *r = proc->data;
    struct sched_ctx *s = r->s;

    if (status != 0 || term_signal != 0)
        GS_LOG(GS_LOG_WARN, "job=%llu prog=%s exit=%lld signal=%d the mail program failed",
               (unsigned long long)r->job_id, s->cfg->mail_prog ? s->cfg->mail_prog : "",
               (long long)status, term_signal);
    run_forget(s->mail, r);
    uv_close((uv_handle_t *)proc, on_run_closed);
    start_next(s);
}

/* Runs the queue's first message, if one may run now. */
static void start_next(struct sched_ctx *s)
{
    struct sched_mail *m = s->mail;

    while (!s->stopping && m->head != NULL && m->nrunning < MAIL_RUNNING) {
        struct mail_item *it = m->head;
        struct mail_run *r = calloc(1, sizeof(*r));
        uv_process_options_t opt = {0};
        uv_stdio_container_t stdio[3] = {{UV_IGNORE, {0}}, {UV_IGNORE, {0}}, {UV_IGNORE, {0}}};
        int rc;

        m->head = it->next;
        m->tail = m->head != NULL ? m->tail : NULL;
        m->nqueued--;
        if (r == NULL) {
            GS_LOG(GS_LOG_WARN, "job=%llu mail dropped: out of memory",
                   (unsigned long long)it->job_id);
            item_free(it);
            continue;
        }
        opt.file = it->argv[0];
        opt.args = it->argv;
        opt.env = it->env;
        opt.exit_cb = on_run_exit;
        opt.stdio = stdio;
        opt.stdio_count = 3;
        r->s = s;
        r->job_id = it->job_id;
        r->proc.data = r;
        rc = uv_spawn(s->loop, &r->proc, &opt);
        if (rc < 0) {
            GS_LOG(GS_LOG_WARN, "job=%llu prog=%s error=\"%s\" cannot run the mail program",
                   (unsigned long long)it->job_id, it->argv[0], uv_strerror(rc));
            s->open_handles++; /* a handle uv_spawn failed on is closed all the same */
            uv_close((uv_handle_t *)&r->proc, on_run_closed);
        } else {
            s->open_handles++; /* until on_run_closed */
            r->next = m->running;
            m->running = r;
            m->nrunning++;
            GS_LOG(GS_LOG_DEBUG, "job=%llu subject=\"%s\" mail sent",
                   (unsigned long long)it->job_id, it->argv[2]);
        }
        item_free(it);
    }
}

/* "NAME=value" (value truncated to what fits a line), or NULL out of memory. */
static char *env_var(const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 2;
    char *v = malloc(n);

    if (v != NULL)
        snprintf(v, n, "%s=%s", name, value);
    return v;
}

/* The message's program run, queued; out of memory or a full queue drops it (logged). */
static void queue(struct sched_ctx *s, const struct sched_job *job,
                  const struct sched_mail_msg *msg, uint64_t now_ms)
{
    struct sched_mail *m = s->mail;
    struct mail_item *it = calloc(1, sizeof(*it));
    struct gs_buf subject = GS_BUF_INIT;
    const char *type = "", *to = job->spec->mail_user != NULL ? job->spec->mail_user : job->user;
    char num[32], code[16];
    size_t e = 0;
    bool failed;

    sched_mail_subject(s->jobs, job, msg, now_ms, &subject, &type);
    snprintf(num, sizeof(num), "%llu", (unsigned long long)job->id);
    snprintf(code, sizeof(code), "%d", job->exit_code);
    failed = it == NULL || gs_buf_error(&subject) < 0;
    if (!failed) {
        it->job_id = job->id;
        it->argv[0] = strdup(s->cfg->mail_prog);
        it->argv[1] = strdup("-s");
        it->argv[2] = strdup(subject.data);
        it->argv[3] = strdup(to);
        it->env[e++] = env_var("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
        it->env[e++] = env_var("SLURM_JOB_ID", num);
        it->env[e++] = env_var("SLURM_JOB_NAME", job->spec->name != NULL ? job->spec->name : "");
        it->env[e++] = env_var("SLURM_JOB_USER", job->user);
        it->env[e++] = env_var("SLURM_JOB_MAIL_TYPE", type);
        it->env[e++] = env_var("SLURM_JOB_STATE", sched_job_state_name(job->state));
        it->env[e++] = env_var("SLURM_JOB_EXIT_CODE_MAX", code);
        it->env[e++] =
            env_var("SLURM_JOB_WORK_DIR", job->spec->workdir != NULL ? job->spec->workdir : "");
        it->env[e++] = env_var("SLURM_CLUSTER_NAME", s->cfg->cluster_name);
        for (size_t i = 0; i < 4; i++)
            failed = failed || it->argv[i] == NULL;
        for (size_t i = 0; i < e; i++)
            failed = failed || it->env[i] == NULL;
    }
    gs_buf_release(&subject);
    if (failed || m->nqueued >= MAIL_QUEUED) {
        GS_LOG(GS_LOG_WARN, "job=%llu type=%s mail dropped: %s", (unsigned long long)job->id, type,
               failed ? "out of memory" : "too many waiting");
        if (it != NULL)
            item_free(it);
        return;
    }
    if (m->tail != NULL)
        m->tail->next = it;
    else
        m->head = it;
    m->tail = it;
    m->nqueued++;
    start_next(s);
}

/* s->mail, made at the first message; NULL when mail is off or out of memory. */
static struct sched_mail *mail_of(struct sched_ctx *s)
{
    if (s->cfg->mail_prog == NULL || s->stopping)
        return NULL;
    if (s->mail == NULL)
        s->mail = calloc(1, sizeof(*s->mail));
    return s->mail;
}

void sched_mail_job_changed(struct sched_ctx *s, struct sched_job *job)
{
    struct sched_mail_msg msgs[SCHED_MAIL_MAX];
    enum sched_job_state before = job->mail_seen;
    size_t n;

    job->mail_seen = job->state;
    if (job->state == SCHED_JOB_RUNNING && before != SCHED_JOB_RUNNING)
        job->mail_sent = 0; /* a new attempt: its own shares of the limit */
    if (job->spec->mail_types == 0 || mail_of(s) == NULL)
        return;
    n = sched_mail_due(s->jobs, job, before, msgs);
    for (size_t i = 0; i < n; i++) {
        if (msgs[i].event == SCHED_MAIL_INVALID_DEPEND)
            job->mail_sent |= GS_MAIL_INVALID_DEPEND;
        queue(s, job, &msgs[i], gs_clock_wall_ms());
    }
}

void sched_mail_tick(struct sched_ctx *s)
{
    uint64_t now = gs_clock_wall_ms();
    size_t count = sched_jobs_count(s->jobs);

    for (size_t i = s->plan_from; i < count && mail_of(s) != NULL; i++) {
        struct sched_job *job = sched_jobs_at(s->jobs, i);
        struct sched_mail_msg msg = {SCHED_MAIL_TIME_SHARE, 0, false};
        uint32_t bit;

        if (job->spec->mail_types == 0)
            continue;
        if (sched_mail_invalid_depend(job)) {
            struct sched_mail_msg dep = {SCHED_MAIL_INVALID_DEPEND, 0, false};

            job->mail_sent |= GS_MAIL_INVALID_DEPEND;
            queue(s, job, &dep, now);
            continue;
        }
        msg.pct = sched_mail_time_share(job, now, &bit);
        if (msg.pct == 0)
            continue;
        job->mail_sent |= bit;
        queue(s, job, &msg, now);
    }
}

void sched_mail_stop(struct sched_ctx *s)
{
    struct sched_mail *m = s->mail;

    if (m == NULL)
        return;
    if (m->nqueued > 0)
        GS_LOG(GS_LOG_WARN, "count=%zu mail not sent: gschedd stops", m->nqueued);
    while (m->head != NULL) {
        struct mail_item *it = m->head;

        m->head = it->next;
        item_free(it);
    }
    m->tail = NULL;
    m->nqueued = 0;
    while (m->running != NULL) { /* the programs run on; their handles go */
        struct mail_run *r = m->running;

        run_forget(m, r);
        uv_close((uv_handle_t *)&r->proc, on_run_closed);
    }
}

void sched_mail_free(struct sched_ctx *s)
{
    free(s->mail);
    s->mail = NULL;
}
