/*
 * sched_report.c: sreport cluster utilization in gschedd. A ReportRequest names a window;
 * the rows that matter (every node's availability history before the window's end, the
 * job allocations that overlap it) are copied out of SQLite on the journal's writer thread
 * (sched_journal_read: the loop never waits on the database), and the loop then does the
 * arithmetic (report.h) and answers with a ReportReply. The history is written as it
 * happens: a node's row when it becomes schedulable or stops being so
 * (sched_node_update_schedulable), an attempt's rows when a job runs and when it stops
 * (sched_persist.c). Anyone may ask, as anyone may run Slurm's sreport.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/sort.h"
#include "scheduler/report.h"
#include "scheduler/sched_internal.h"

struct report_read {
    struct sched_cli *cli;
    uint64_t request_id;
    uint64_t start_ms, end_ms;
    bool by_user;
    struct sched_report_state *states;
    size_t nstates, cap_states;
    struct sched_report_alloc *allocs;
    size_t nallocs, cap_allocs;
};

/* v with room for n + 1 entries (its capacity in *cap), or NULL (v stays) when out of
 * memory. */
static void *grow(void *v, size_t *cap, size_t n, size_t size)
{
    size_t want = *cap > 0 ? *cap * 2 : 64;
    void *nv;

    if (n < *cap)
        return v;
    if ((nv = realloc(v, want * size)) != NULL)
        *cap = want;
    return nv;
}

static int copy_state(uint64_t at_ms, const char *node, bool up, bool maint, uint32_t cores,
                      uint32_t gpus, void *data)
{
    struct report_read *r = data;
    struct sched_report_state *v = grow(r->states, &r->cap_states, r->nstates, sizeof(*v));
    char *name;

    if (v == NULL)
        return -ENOMEM;
    r->states = v;
    if ((name = strdup(node != NULL ? node : "")) == NULL)
        return -ENOMEM;
    v[r->nstates++] = (struct sched_report_state){name, at_ms, up, maint, cores, gpus};
    return 0;
}

static int copy_alloc(const struct sched_alloc_row *row, void *data)
{
    struct report_read *r = data;
    struct sched_report_alloc *v = grow(r->allocs, &r->cap_allocs, r->nallocs, sizeof(*v));
    char *name = NULL, *user = NULL, *account = NULL;

    if (v == NULL)
        return -ENOMEM;
    r->allocs = v;
    if ((name = strdup(row->node != NULL ? row->node : "")) == NULL ||
        (user = strdup(row->user != NULL ? row->user : "")) == NULL ||
        (account = strdup(row->account != NULL ? row->account : "")) == NULL) {
        free(name);
        free(user);
        return -ENOMEM;
    }
    v[r->nallocs++] = (struct sched_report_alloc){name,      row->start_ms, row->end_ms, row->cores,
                                                  row->gpus, user,          account,     0};
    return 0;
}

/* Writer thread: the rows, copied; loop state untouched. */
static int read_rows(struct sched_store *store, void *data)
{
    struct report_read *r = data;
    int rc = sched_store_load_node_states(store, r->end_ms, copy_state, r);

    if (rc == 0)
        rc = sched_store_load_allocs(store, r->start_ms, r->end_ms, copy_alloc, r);
    return rc;
}

static void read_free(struct report_read *r)
{
    for (size_t i = 0; i < r->nstates; i++)
        free((char *)r->states[i].node);
    for (size_t i = 0; i < r->nallocs; i++) {
        free((char *)r->allocs[i].node);
        free((char *)r->allocs[i].user);
        free((char *)r->allocs[i].account);
    }
    free(r->states);
    free(r->allocs);
    free(r);
}

static int by_assoc(const void *pa, const void *pb)
{
    const struct sched_report_alloc *a = pa, *b = pb;
    int c = strcmp(a->account, b->account);

    return c != 0 ? c : strcmp(a->user, b->user);
}

/*
 * by_user: the allocations' counted time summed per (account, user), in that order, into
 * *ret (n of them; entries point into r's strings). Entries that counted nothing are left
 * out. 0 or -ENOMEM.
 */
static int sum_users(struct report_read *r, Gs__UserUsage **ret, size_t *ret_n)
{
    Gs__UserUsage *v;
    size_t n = 0;

    *ret = NULL;
    *ret_n = 0;
    if (!r->by_user || r->nallocs == 0)
        return 0;
    gs_sort(r->allocs, r->nallocs, sizeof(*r->allocs), by_assoc);
    if ((v = calloc(r->nallocs, sizeof(*v))) == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < r->nallocs; i++) {
        const struct sched_report_alloc *a = &r->allocs[i];

        if (a->counted == 0)
            continue;
        if (n == 0 || strcmp(v[n - 1].account, a->account) != 0 ||
            strcmp(v[n - 1].user, a->user) != 0) {
            gs__user_usage__init(&v[n]);
            v[n].account = (char *)a->account;
            v[n].user = (char *)a->user;
            n++;
        }
        v[n - 1].cpu += (uint64_t)a->cores * a->counted;
        v[n - 1].gpu += (uint64_t)a->gpus * a->counted;
    }
    *ret = v;
    *ret_n = n;
    return 0;
}

static void read_done(int status, void *data)
{
    struct report_read *r = data;
    struct sched_ctx *s = r->cli->s;
    struct sched_report_usage u[SCHED_REPORT_NTRES];
    Gs__TresUsage t[SCHED_REPORT_NTRES], *tp[SCHED_REPORT_NTRES];
    Gs__ReportReply reply = GS__REPORT_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__UserUsage *users = NULL, **uptrs = NULL;
    size_t nusers = 0;
    static const char *const names[SCHED_REPORT_NTRES] = {"cpu", "gres/gpu"};
    uint64_t since;
    char why[160];

    if (status < 0) {
        snprintf(why, sizeof(why), "reading the state database: %s", gs_strerror(status));
        GS_LOG(GS_LOG_WARN, "request=%llu error=\"%s\" utilization report not read",
               (unsigned long long)r->request_id, why);
        sched_cli_error(r->cli, r->request_id, status, why, true);
        read_free(r);
        return;
    }
    sched_report_compute(r->states, r->nstates, r->allocs, r->nallocs, r->start_ms, r->end_ms, u,
                         &since);
    if (sum_users(r, &users, &nusers) < 0 ||
        (nusers > 0 && (uptrs = calloc(nusers, sizeof(*uptrs))) == NULL)) {
        sched_cli_error(r->cli, r->request_id, -ENOMEM, "out of memory", true);
        goto out;
    }
    for (size_t i = 0; i < nusers; i++)
        uptrs[i] = &users[i];
    for (int k = 0; k < SCHED_REPORT_NTRES; k++) {
        gs__tres_usage__init(&t[k]);
        t[k].name = (char *)names[k];
        t[k].allocated = u[k].allocated;
        t[k].down = u[k].down;
        t[k].plnd_down = u[k].plnd_down;
        t[k].idle = u[k].idle;
        t[k].reported = u[k].reported;
        tp[k] = &t[k];
    }
    reply.start_ms = r->start_ms;
    reply.end_ms = r->end_ms;
    reply.known_since_ms = since;
    reply.cluster = s->cfg->cluster_name;
    reply.n_tres = SCHED_REPORT_NTRES;
    reply.tres = tp;
    reply.n_users = nusers;
    reply.users = uptrs;
    env.request_id = r->request_id;
    env.body_case = GS__ENVELOPE__BODY_REPORT_REPLY;
    env.report_reply = &reply;
    sched_cli_reply(r->cli, &env, true);
out:
    free(uptrs);
    free(users);
    read_free(r);
}

void sched_report_request(struct sched_cli *c, uint64_t request_id, const Gs__ReportRequest *req)
{
    struct sched_ctx *s = c->s;
    uint64_t now = gs_clock_wall_ms();
    struct report_read *r;
    int rc;

    if (req->start_ms >= req->end_ms || req->start_ms >= now) {
        sched_cli_error(c, request_id, -EINVAL,
                        req->start_ms >= req->end_ms
                            ? "start: the window's start is not before its end"
                            : "start: the window starts in the future",
                        false);
        return;
    }
    if ((r = calloc(1, sizeof(*r))) == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        return;
    }
    *r = (struct report_read){.cli = c,
                              .request_id = request_id,
                              .start_ms = req->start_ms,
                              .by_user = req->by_user,
                              .end_ms = req->end_ms < now ? req->end_ms : now};
    rc = s->journal != NULL ? sched_journal_read(s->journal, read_rows, read_done, r) : -ESHUTDOWN;
    if (rc < 0) {
        sched_cli_error(c, request_id, rc, "the state database cannot be read now", false);
        free(r);
        return;
    }
    sched_cli_hold(c);
}
