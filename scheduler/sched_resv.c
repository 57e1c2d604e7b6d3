/*
 * sched_resv.c: advance reservations, as Slurm's `scontrol create reservation`: whole nodes
 * (or some of their GPUs), cluster licenses (Licenses=), or both, kept for some users and
 * accounts from a start time to an end time (or for good).
 *
 * The planner does the keeping (planner.h): a job that names a reservation waits for its
 * start and then runs on its nodes only; other jobs use those nodes only when their time
 * limits end them before it starts. Here: the registry, the operators' requests, the
 * submit check (a job may name a reservation that lets its user or account in), the end of
 * a job started in a reservation (its time limit lowered to the reservation's end, as
 * Slurm ends such jobs with it), and the clock: the cron asks for a pass when a
 * reservation starts or ends and deletes those that have ended, and the PURGE_COMP ones
 * that no job has named for their purge time.
 *
 * A reservation with a recurrence flag (HOURLY, DAILY, WEEKDAY, WEEKEND, WEEKLY) is not
 * deleted when it ends: the cron moves it to its next window, the same length, at the same
 * local time of day for the day-based ones (so a daylight-saving change keeps 02:00 at
 * 02:00), and stores it. Jobs waiting for it start in that window.
 *
 * Changes are root's, checked whole before anything changes (nodes known, users real,
 * accounts configured, licenses configured and never more of one kept at a time than the
 * cluster has, no other reservation holding a node at the same time: for a
 * repeating one, in any of its windows until the other ends, and two repeating ones never
 * share a node, unless either is OVERLAP or MAINT; no running job on its nodes past its
 * start, unless IGNORE_JOBS), kept in
 * SQLite (packed gs.Reservation rows) and answered once stored. MAINT only marks its nodes
 * as in maintenance while it is active (sched_resv_node_maint, for the node views).
 * REPLACE_DOWN swaps, each tick, a node that is down or drained for an idle one that fits
 * (replace_down); REPLACE, from its start, a node a running job holds as well. An
 * update's Users+= / Users-= (and Accounts, Flags) edit the stored lists here, so two
 * operators' edits compose. Loop thread only.
 */
#define _GNU_SOURCE /* getpwnam_r */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/fnv.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "common/sort.h"
#include "common/units.h"
#include "scheduler/license.h"
#include "scheduler/resv_recur.h"
#include "scheduler/sched_internal.h"

#define RESV_NAME_MAX 63
#define RECUR_FLAGS SCHED_RESV_RECUR_FLAGS
#define FLAG_MAINT GS__RESERVATION_FLAG__RESERVATION_FLAG_MAINT
#define FLAG_IGNORE_JOBS GS__RESERVATION_FLAG__RESERVATION_FLAG_IGNORE_JOBS
#define FLAG_OVERLAP GS__RESERVATION_FLAG__RESERVATION_FLAG_OVERLAP
#define FLAG_PURGE_COMP GS__RESERVATION_FLAG__RESERVATION_FLAG_PURGE_COMP
#define FLAG_FLEX GS__RESERVATION_FLAG__RESERVATION_FLAG_FLEX
#define FLAG_MAGNETIC GS__RESERVATION_FLAG__RESERVATION_FLAG_MAGNETIC
#define FLAG_REPLACE_DOWN GS__RESERVATION_FLAG__RESERVATION_FLAG_REPLACE_DOWN
#define FLAG_REPLACE GS__RESERVATION_FLAG__RESERVATION_FLAG_REPLACE
#define FLAG_ANY_NODES GS__RESERVATION_FLAG__RESERVATION_FLAG_ANY_NODES
#define KNOWN_FLAGS                                                                                \
    (RECUR_FLAGS | FLAG_MAINT | FLAG_IGNORE_JOBS | FLAG_OVERLAP | FLAG_PURGE_COMP | FLAG_FLEX |    \
     FLAG_MAGNETIC | FLAG_REPLACE_DOWN | FLAG_REPLACE | FLAG_ANY_NODES)
/* PURGE_COMP without a time: Slurm's 5 minutes. */
#define PURGE_DEFAULT_S 300
/* A pair of reservations may hold a node at the same time when either has one of these. */
#define SHARING_FLAGS (FLAG_MAINT | FLAG_OVERLAP)
/* Idle nodes REPLACE_DOWN checks as a lost node's replacement, at most, each tick. */
#define REPLACE_TRIES 64
/* Windows of a repeating reservation checked against another reservation at most. */
#define RECUR_CHECK_MAX 100000

struct resv {
    char name[RESV_NAME_MAX + 1];
    uint64_t start_ms, end_ms, created_ms; /* end 0: none */
    uint32_t gpus;                         /* kept in all over its nodes; 0: whole nodes */
    uint32_t flags;                        /* ReservationFlag bits */
    uint32_t purge_s;                      /* PURGE_COMP: deleted once idle this long */
    uint64_t busy_ms;  /* not stored: when a job last named it (or it was made or loaded) */
    char *nodes;       /* the hostlist as given */
    char **node_names; /* expanded (gs_hostlist_free) */
    size_t nnode_names;
    char **users, **accounts;
    size_t nusers, naccounts;
    /* Licenses= kept for its jobs, as messages so that a reply borrows them (names owned) */
    Gs__JobLicense *lic, **lic_ptrs;
    size_t nlic;
};

struct sched_resvs {
    struct resv *v;
    size_t n;
    /* The planner's view: rebuilt when a reservation or the node registry changed. */
    struct sched_planner_resv *view;
    uint64_t *masks;                /* n x words */
    uint64_t *gpus;                 /* n x (view_nodes + 1): each GPU reservation's GPUs per node */
    struct sched_license_need *lic; /* the view's licenses, each reservation's in a row */
    size_t words, view_nodes;
    bool dirty;
};

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void lic_free(Gs__JobLicense *lic, Gs__JobLicense **ptrs, size_t n)
{
    for (size_t i = 0; lic != NULL && i < n; i++)
        free(lic[i].name);
    free(lic);
    free(ptrs);
}

static void resv_release(struct resv *r)
{
    lic_free(r->lic, r->lic_ptrs, r->nlic);
    free(r->nodes);
    gs_hostlist_free(r->node_names);
    strv_free(r->users, r->nusers);
    strv_free(r->accounts, r->naccounts);
    memset(r, 0, sizeof(*r));
}

static int strv_copy(char *const *src, size_t n, char ***ret)
{
    char **v = calloc(n + 1, sizeof(*v));

    if (v == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if ((v[i] = strdup(src[i])) == NULL) {
            strv_free(v, i);
            return -ENOMEM;
        }
    }
    *ret = v;
    return 0;
}

/* r's nodes from a hostlist (replacing any); -EINVAL with why, -ENOMEM. */
static int set_nodes(struct resv *r, const char *nodes, char *why, size_t size)
{
    struct gs_error err = {0};
    char **names = NULL, *copy;
    size_t n = 0;
    int rc;

    if (nodes[0] == '\0') { /* licenses alone (resv_check says whether that may be) */
        if ((copy = strdup("")) == NULL)
            return -ENOMEM;
        free(r->nodes);
        gs_hostlist_free(r->node_names);
        r->nodes = copy;
        r->node_names = NULL;
        r->nnode_names = 0;
        return 0;
    }
    rc = gs_hostlist_expand(nodes, &names, &n, &err);
    if (rc == -EINVAL)
        snprintf(why, size, "Nodes: %.200s", err.msg);
    if (rc < 0)
        return rc;
    if ((copy = strdup(nodes)) == NULL) {
        gs_hostlist_free(names);
        return -ENOMEM;
    }
    free(r->nodes);
    gs_hostlist_free(r->node_names);
    r->nodes = copy;
    r->node_names = names;
    r->nnode_names = n;
    return 0;
}

static int set_strv(char ***v, size_t *n, char *const *src, size_t nsrc)
{
    char **copy;

    if (strv_copy(src, nsrc, &copy) < 0)
        return -ENOMEM;
    strv_free(*v, *n);
    *v = copy;
    *n = nsrc;
    return 0;
}

/* r's licenses from n messages (replacing any it had); 0 or -ENOMEM. */
static int set_licenses(struct resv *r, Gs__JobLicense *const *src, size_t n)
{
    Gs__JobLicense *lic = calloc(n + 1, sizeof(*lic));
    Gs__JobLicense **ptrs = calloc(n + 1, sizeof(*ptrs));

    for (size_t i = 0; lic != NULL && ptrs != NULL && i < n; i++) {
        gs__job_license__init(&lic[i]);
        lic[i].count = src[i]->count;
        if ((lic[i].name = strdup(src[i]->name)) == NULL) {
            lic_free(lic, ptrs, i);
            return -ENOMEM;
        }
        ptrs[i] = &lic[i];
    }
    if (lic == NULL || ptrs == NULL) {
        free(lic);
        free(ptrs);
        return -ENOMEM;
    }
    lic_free(r->lic, r->lic_ptrs, r->nlic);
    r->lic = lic;
    r->lic_ptrs = ptrs;
    r->nlic = n;
    return 0;
}

/* r from a stored message; -EINVAL with why, -ENOMEM. */
static int resv_from_msg(const Gs__Reservation *m, struct resv *r, char *why, size_t size)
{
    int rc;

    memset(r, 0, sizeof(*r));
    snprintf(r->name, sizeof(r->name), "%s", m->name);
    r->start_ms = m->start_ms;
    r->end_ms = m->end_ms;
    r->created_ms = m->created_ms;
    r->gpus = m->gpus;
    r->flags = m->flags;
    r->purge_s = m->purge_comp_s;
    if ((rc = set_nodes(r, m->nodes, why, size)) == 0 &&
        (rc = set_strv(&r->users, &r->nusers, m->users, m->n_users)) == 0 &&
        (rc = set_strv(&r->accounts, &r->naccounts, m->accounts, m->n_accounts)) == 0)
        rc = set_licenses(r, m->licenses, m->n_licenses);
    if (rc == -ENOMEM)
        snprintf(why, size, "out of memory");
    if (rc < 0)
        resv_release(r);
    return rc;
}

/* The message of r, borrowing its strings. */
static void resv_to_msg(const struct resv *r, uint64_t now_ms, Gs__Reservation *m)
{
    gs__reservation__init(m);
    m->name = (char *)r->name;
    m->start_ms = r->start_ms;
    m->end_ms = r->end_ms;
    m->nodes = r->nodes;
    m->users = r->users;
    m->n_users = r->nusers;
    m->accounts = r->accounts;
    m->n_accounts = r->naccounts;
    m->active = r->start_ms <= now_ms && (r->end_ms == 0 || now_ms < r->end_ms);
    m->node_count = (uint32_t)r->nnode_names;
    m->created_ms = r->created_ms;
    m->gpus = r->gpus;
    m->flags = r->flags;
    m->purge_comp_s = r->purge_s;
    m->licenses = r->lic_ptrs;
    m->n_licenses = r->nlic;
}

static struct resv *resv_find(struct sched_resvs *rs, const char *name)
{
    for (size_t i = 0; rs != NULL && i < rs->n; i++) {
        if (strcmp(rs->v[i].name, name) == 0)
            return &rs->v[i];
    }
    return NULL;
}

static int resvs_get(struct sched_ctx *s, struct sched_resvs **ret)
{
    if (s->resvs == NULL && (s->resvs = calloc(1, sizeof(*s->resvs))) == NULL)
        return -ENOMEM;
    *ret = s->resvs;
    return 0;
}

/* Adds r (taking what it holds) to the registry. */
static int resvs_add(struct sched_ctx *s, struct resv *r)
{
    struct sched_resvs *rs;
    struct resv *v;

    if (resvs_get(s, &rs) < 0 || (v = realloc(rs->v, (rs->n + 1) * sizeof(*v))) == NULL)
        return -ENOMEM;
    rs->v = v;
    rs->v[rs->n++] = *r;
    memset(r, 0, sizeof(*r));
    rs->dirty = true;
    return 0;
}

static void resvs_remove(struct sched_ctx *s, struct resv *r)
{
    struct sched_resvs *rs = s->resvs;
    size_t at = (size_t)(r - rs->v);

    resv_release(r);
    memmove(&rs->v[at], &rs->v[at + 1], (rs->n - at - 1) * sizeof(*rs->v));
    rs->n--;
    rs->dirty = true;
}

static void maint_tick(struct sched_ctx *s, uint64_t now);

static bool windows_meet(uint64_t a_start, uint64_t a_end, const struct resv *b)
{
    bool a_before_b = a_end != 0 && a_end <= b->start_ms;
    bool b_before_a = b->end_ms != 0 && b->end_ms <= a_start;

    return !a_before_b && !b_before_a;
}

/* Whether a and b hold their nodes at the same time in some window. A repeating one is
 * checked window by window until the other ends; against one without an end, or another
 * repeating one, any overlap from its start on counts. */
static bool resvs_meet(const struct resv *a, const struct resv *b)
{
    const struct resv *rec = (a->flags & RECUR_FLAGS) != 0 ? a : b, *other = rec == a ? b : a;
    uint64_t start = rec->start_ms, len = rec->end_ms - rec->start_ms;

    if ((rec->flags & RECUR_FLAGS) == 0)
        return windows_meet(a->start_ms, a->end_ms, b);
    if ((other->flags & RECUR_FLAGS) != 0 || other->end_ms == 0)
        return windows_meet(rec->start_ms, 0, other);
    for (int i = 0; i < RECUR_CHECK_MAX && start < other->end_ms; i++) {
        if (windows_meet(start, start + len, other))
            return true;
        start = sched_resv_recur_next(rec->flags & RECUR_FLAGS, start);
    }
    return false;
}

static bool holds_node(const struct resv *r, const char *node)
{
    for (size_t i = 0; i < r->nnode_names; i++) {
        if (strcmp(r->node_names[i], node) == 0)
            return true;
    }
    return false;
}

/* The order GPU reservations choose their GPUs in: creation, then name. */
static bool chooses_first(const struct resv *a, const struct resv *b)
{
    return a->created_ms != b->created_ms ? a->created_ms < b->created_ms
                                          : strcmp(a->name, b->name) < 0;
}

/* Whether a and b may keep the same GPUs when they meet (either OVERLAP or MAINT). */
static bool may_share(const struct resv *a, const struct resv *b)
{
    return ((a->flags | b->flags) & SHARING_FLAGS) != 0;
}

/* A GPU reservation that finds too few GPUs on a node: how many it and those meeting it
 * there would keep. */
struct gpus_short {
    const struct resv *r; /* NULL: every one found its own */
    uint32_t wanted;
};

/*
 * The GPUs GPU reservation r keeps on node n. The node's GPU reservations choose in
 * chooses_first order, each once, its share's best connected set among the GPUs that
 * those chosen before it and meeting it in time do not keep; failing that, among those
 * that the ones it may not share with (may_share) do not keep; failing that, the best of
 * all the node's. So reservations that never meet reuse the same GPUs, and three that
 * never all meet at once fit where pairwise sums would not. r need not be stored yet (a
 * request's); a stored one of its name is its old self and left out. With ret_short the
 * choosing goes on past r, and names the first of r and those after it that fell to the
 * last resort (r's change would leave it too few GPUs). O(m^2) for m of them.
 */
static uint64_t gpus_choose(const struct sched_ctx *s, const struct resv *r,
                            const struct sched_node *n, struct gpus_short *ret_short)
{
    size_t m = 0, cap = s->resvs != NULL ? s->resvs->n + 1 : 1;
    const struct resv **v = malloc(cap * sizeof(*v));
    uint64_t *kept = malloc(cap * sizeof(*kept)), mine = 0, all = ~UINT64_C(0);
    size_t ngpus = n->topology != NULL ? n->topology->n_gpus : 0;
    bool past_r = false;

    if (ret_short != NULL)
        *ret_short = (struct gpus_short){0};
    if (v == NULL || kept == NULL) { /* out of memory: the best set, as if alone */
        mine = sched_cluster_best_gpus(s->cluster, n->index, r->gpus / (uint32_t)r->nnode_names,
                                       ~UINT64_C(0));
        goto out;
    }
    if (ngpus < 64)
        all = (UINT64_C(1) << ngpus) - 1;
    for (size_t k = 0; s->resvs != NULL && k < s->resvs->n; k++) {
        const struct resv *o = &s->resvs->v[k];

        if (o->gpus > 0 && strcmp(o->name, r->name) != 0 && holds_node(o, n->name))
            v[m++] = o;
    }
    v[m++] = r;
    for (size_t i = 1; i < m; i++) { /* insertion sort by chooses_first: m is small */
        const struct resv *x = v[i];
        size_t j = i;

        for (; j > 0 && chooses_first(x, v[j - 1]); j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
    for (size_t i = 0; i < m; i++) {
        uint32_t share = v[i]->gpus / (uint32_t)v[i]->nnode_names;
        uint64_t among = ~UINT64_C(0), apart = ~UINT64_C(0);

        for (size_t j = 0; j < i; j++) {
            if (!resvs_meet(v[i], v[j]))
                continue;
            among &= ~kept[j];
            if (!may_share(v[i], v[j]))
                apart &= ~kept[j];
        }
        past_r = past_r || v[i] == r;
        if ((kept[i] = sched_cluster_best_gpus(s->cluster, n->index, share, among)) == 0 &&
            (kept[i] = sched_cluster_best_gpus(s->cluster, n->index, share, apart)) == 0) {
            kept[i] = sched_cluster_best_gpus(s->cluster, n->index, share, ~UINT64_C(0));
            if (past_r && ret_short != NULL && ret_short->r == NULL)
                *ret_short =
                    (struct gpus_short){v[i], share + (uint32_t)__builtin_popcountll(~apart & all)};
        }
        if (v[i] == r)
            mine = kept[i];
        if (v[i] == r && ret_short == NULL)
            break;
    }
out:
    free(v);
    free(kept);
    return mine;
}

/* Flags that make sense for r: known, one recurrence at most, an end within its period. */
static int check_flags(const struct resv *r, char *why, size_t size)
{
    uint32_t recur = r->flags & RECUR_FLAGS;

    if ((r->flags & ~(uint32_t)KNOWN_FLAGS) != 0) {
        snprintf(why, size, "Flags: unknown flag bits 0x%x", r->flags & ~(uint32_t)KNOWN_FLAGS);
        return -EINVAL;
    }
    if (recur == 0)
        return 0;
    if ((recur & (recur - 1)) != 0) {
        snprintf(why, size,
                 "Flags: a reservation repeats one way (HOURLY, DAILY, WEEKDAY, WEEKEND or "
                 "WEEKLY), not several");
        return -EINVAL;
    }
    if (r->end_ms == 0) {
        snprintf(why, size, "Flags=%s: a repeating reservation needs an end (Duration=)",
                 sched_resv_recur_name(recur));
        return -EINVAL;
    }
    if (r->end_ms - r->start_ms > sched_resv_recur_period_ms(recur)) {
        snprintf(why, size, "Flags=%s: each window lasts at most %s; this one lasts %llu minutes",
                 sched_resv_recur_name(recur),
                 recur == GS__RESERVATION_FLAG__RESERVATION_FLAG_HOURLY   ? "an hour"
                 : recur == GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKLY ? "a week"
                                                                          : "a day",
                 (unsigned long long)((r->end_ms - r->start_ms) / 60000));
        return -EINVAL;
    }
    return 0;
}

static bool name_ok(const char *name)
{
    if (name[0] == '\0' || strlen(name) > RESV_NAME_MAX)
        return false;
    for (const char *p = name; *p != '\0'; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-' || *p == '.'))
            return false;
    }
    return true;
}

static bool user_exists(const char *name)
{
    struct passwd pw, *found = NULL;
    char buf[4096];

    return getpwnam_r(name, &pw, buf, sizeof(buf), &found) == 0 && found != NULL;
}

/* How many of license name r keeps. */
static uint64_t lic_count(const struct resv *r, const char *name)
{
    uint64_t n = 0;

    for (size_t i = 0; i < r->nlic; i++)
        n += strcmp(r->lic[i].name, name) == 0 ? r->lic[i].count : 0;
    return n;
}

/* Licenses=: each one configured, named once, and no more of it kept at any time by r and
 * the reservations meeting it than the cluster has; self as in resv_check. */
static int lic_check(struct sched_ctx *s, const struct resv *r, const struct resv *self, char *why,
                     size_t size)
{
    for (size_t i = 0; i < r->nlic; i++) {
        const char *name = r->lic[i].name;
        const struct gs_config_license *l = gs_config_license(s->cfg, name);
        uint64_t kept = r->lic[i].count;

        if (l == NULL) {
            snprintf(why, size, "Licenses: no license %.64s in the configuration ([[license]])",
                     name);
            return -EINVAL;
        }
        if (r->lic[i].count == 0 || lic_count(r, name) != r->lic[i].count) {
            snprintf(why, size, "Licenses: %.64s: %s", name,
                     r->lic[i].count == 0 ? "keep at least 1" : "named more than once");
            return -EINVAL;
        }
        for (size_t k = 0; s->resvs != NULL && k < s->resvs->n; k++) {
            const struct resv *o = &s->resvs->v[k];

            if (o != self && o->nlic > 0 && resvs_meet(r, o))
                kept += lic_count(o, name);
        }
        if (kept > l->count) {
            snprintf(why, size,
                     "Licenses: %.64s: the reservations at that time would keep %llu with this "
                     "one; the cluster has %u",
                     name, (unsigned long long)kept, l->count);
            return r->lic[i].count > l->count ? -EINVAL : -EBUSY;
        }
    }
    return 0;
}

/* Whether r may be kept as it is; self is the reservation it replaces (update), or NULL. */
static int resv_check(struct sched_ctx *s, const struct resv *r, const struct resv *self, char *why,
                      size_t size)
{
    int rc;

    if (!name_ok(r->name)) {
        snprintf(why, size,
                 "ReservationName: '%.64s' is not a name (1-%d letters, digits, '_', '-', '.')",
                 r->name, RESV_NAME_MAX);
        return -EINVAL;
    }
    if (r->start_ms == 0) {
        snprintf(why, size, "StartTime: a reservation needs a start time");
        return -EINVAL;
    }
    if (r->end_ms != 0 && r->end_ms <= r->start_ms) {
        snprintf(why, size, "EndTime: the end must come after the start");
        return -EINVAL;
    }
    if (check_flags(r, why, size) < 0)
        return -EINVAL;
    if (r->nusers == 0 && r->naccounts == 0) {
        snprintf(why, size, "Users, Accounts: a reservation needs users or accounts to let in");
        return -EINVAL;
    }
    for (size_t i = 0; i < r->nnode_names; i++) {
        if (sched_node_find(s, r->node_names[i]) == NULL) {
            snprintf(why, size, "Nodes: no node %.64s in the cluster", r->node_names[i]);
            return -EINVAL;
        }
    }
    if (r->nnode_names == 0 && r->nlic == 0) {
        snprintf(why, size, "Nodes, Licenses: a reservation keeps nodes, licenses or both");
        return -EINVAL;
    }
    if (r->nnode_names == 0 && r->gpus > 0) {
        snprintf(why, size, "TRES: GPUs are kept on the reservation's nodes: give Nodes=");
        return -EINVAL;
    }
    if ((rc = lic_check(s, r, self, why, size)) < 0)
        return rc;
    if (r->gpus > 0 && r->gpus % r->nnode_names != 0) {
        snprintf(why, size, "TRES: gres/gpu=%u does not split evenly over its %zu nodes", r->gpus,
                 r->nnode_names);
        return -EINVAL;
    }
    for (size_t i = 0; r->gpus > 0 && i < r->nnode_names; i++) {
        const struct sched_node *n = sched_node_find(s, r->node_names[i]);
        uint32_t have = n->topology != NULL ? (uint32_t)n->topology->n_gpus : 0;

        if (have < r->gpus / r->nnode_names) {
            snprintf(why, size, "TRES: node %.64s has %u GPUs, fewer than the %zu per node asked",
                     n->name, have, r->gpus / r->nnode_names);
            return -EINVAL;
        }
    }
    for (size_t i = 0; i < r->nusers; i++) {
        if (!user_exists(r->users[i])) {
            snprintf(why, size, "Users: no user %.64s on this host", r->users[i]);
            return -EINVAL;
        }
    }
    for (size_t i = 0; s->cfg->naccounts > 0 && i < r->naccounts; i++) {
        if (strcmp(r->accounts[i], "root") != 0 &&
            gs_config_account(s->cfg, r->accounts[i]) == NULL) {
            snprintf(why, size, "Accounts: no account %.64s in the configuration", r->accounts[i]);
            return -EINVAL;
        }
    }
    for (size_t k = 0; s->resvs != NULL && k < s->resvs->n; k++) {
        const struct resv *o = &s->resvs->v[k];

        if (o == self || may_share(r, o) || !resvs_meet(r, o))
            continue;
        for (size_t i = 0; i < r->nnode_names; i++) {
            const struct sched_node *n = sched_node_find(s, r->node_names[i]);
            struct gpus_short tight = {0};

            if (n == NULL || !holds_node(o, r->node_names[i]))
                continue;
            if (r->gpus > 0 && o->gpus > 0) {
                gpus_choose(s, r, n, &tight);
                if (tight.r == NULL)
                    continue; /* GPUs side by side */
                snprintf(why, size,
                         "Nodes: node %.64s has %zu GPUs, fewer than reservation %s and the "
                         "others there at that time would keep (%u)",
                         n->name, n->topology->n_gpus, tight.r->name, tight.wanted);
            } else
                snprintf(why, size, "Nodes: node %.64s is in reservation %s at that time",
                         r->node_names[i], o->name);
            return -EBUSY;
        }
    }
    return 0;
}

/*
 * Slurm's "Requested nodes are busy": a job running on r's nodes (outside r) that its time
 * limit does not end before r starts, one without a limit always; for a GPU reservation,
 * only a job on the GPUs r keeps there. Flags=IGNORE_JOBS skips this: such jobs run on, and
 * r's jobs wait for what they hold.
 */
static int busy_check(struct sched_ctx *s, const struct resv *r, char *why, size_t size)
{
    for (size_t k = 0; k < r->nnode_names; k++) {
        const struct sched_node *n = sched_node_find(s, r->node_names[k]);
        uint64_t kept = ~UINT64_C(0);

        if (n == NULL)
            continue;
        if (r->gpus > 0)
            kept = gpus_choose(s, r, n, NULL);
        for (size_t i = s->plan_from; i < sched_jobs_count(s->jobs); i++) {
            const struct sched_job *job = sched_jobs_at(s->jobs, i);

            if (job->state != SCHED_JOB_RUNNING ||
                (job->spec->reservation != NULL && strcmp(job->spec->reservation, r->name) == 0))
                continue;
            uint64_t end = sched_job_limit_end_ms(job, gs_clock_wall_ms());

            if (end <= r->start_ms)
                continue;
            for (uint32_t a = 0; a < job->alloc.nnodes; a++) {
                if (job->alloc.nodes[a].node != n->index ||
                    (r->gpus > 0 && (job->alloc.nodes[a].gpus & kept) == 0))
                    continue;
                snprintf(why, size,
                         "Nodes: node %.64s is busy: job %llu runs there %s (Slurm: Requested "
                         "nodes are busy; Flags=IGNORE_JOBS makes it anyway)",
                         n->name, (unsigned long long)job->id,
                         end == UINT64_MAX ? "without a time limit"
                                           : "past the reservation's start");
                return -EBUSY;
            }
        }
    }
    return 0;
}

/* How many of license name the running jobs naming reservation r hold. */
static uint64_t lic_used_in(const struct sched_ctx *s, const struct resv *r, const char *name)
{
    uint64_t used = 0;

    for (size_t i = s->plan_from; i < sched_jobs_count(s->jobs); i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);
        const struct gs_jobspec *spec = job->spec;

        if (job->state != SCHED_JOB_RUNNING || spec->nlicenses == 0 || spec->reservation == NULL ||
            strcmp(spec->reservation, r->name) != 0)
            continue;
        for (size_t k = 0; k < spec->nlicenses; k++)
            used += strcmp(spec->licenses[k].name, name) == 0 ? spec->licenses[k].count : 0;
    }
    return used;
}

uint32_t sched_resv_licenses_kept(const struct sched_ctx *s, const char *name, uint64_t now_ms)
{
    uint64_t kept = 0;

    for (size_t i = 0; s->resvs != NULL && i < s->resvs->n; i++) {
        const struct resv *r = &s->resvs->v[i];
        uint64_t n = lic_count(r, name), used;

        if (n == 0 || r->start_ms > now_ms || (r->end_ms != 0 && now_ms >= r->end_ms))
            continue;
        used = lic_used_in(s, r, name);
        kept += used < n ? n - used : 0;
    }
    return kept > UINT32_MAX ? UINT32_MAX : (uint32_t)kept;
}

bool sched_resv_node_maint(const struct sched_ctx *s, const char *node, uint64_t now_ms)
{
    for (size_t k = 0; s->resvs != NULL && k < s->resvs->n; k++) {
        const struct resv *r = &s->resvs->v[k];

        if ((r->flags & FLAG_MAINT) != 0 && r->start_ms <= now_ms &&
            (r->end_ms == 0 || r->end_ms > now_ms) && holds_node(r, node))
            return true;
    }
    return false;
}

/* Slurm's generated name: the first user's (or account's), then _N, the first N free. */
static void generate_name(struct sched_ctx *s, const Gs__Reservation *m, char *out, size_t size)
{
    const char *base = m->n_users > 0 ? m->users[0] : m->n_accounts > 0 ? m->accounts[0] : "resv";

    for (unsigned n = 1;; n++) {
        snprintf(out, size, "%.48s_%u", base, n);
        if (resv_find(s->resvs, out) == NULL)
            return;
    }
}

/* --- requests ---------------------------------------------------------------------------- */

static void reply_resvs(struct sched_cli *c, uint64_t request_id, Gs__Reservation **ptrs, size_t n,
                        bool held)
{
    Gs__ReservationReply reply = GS__RESERVATION_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    reply.reservations = ptrs;
    reply.n_reservations = n;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_RESERVATION_REPLY;
    env.reservation_reply = &reply;
    sched_cli_reply(c, &env, held);
}

static int by_start(const void *pa, const void *pb)
{
    const Gs__Reservation *a = *(Gs__Reservation *const *)pa, *b = *(Gs__Reservation *const *)pb;

    if (a->start_ms != b->start_ms)
        return a->start_ms < b->start_ms ? -1 : 1;
    return strcmp(a->name, b->name);
}

static void show(struct sched_cli *c, uint64_t request_id, const char *name)
{
    struct sched_resvs *rs = c->s->resvs;
    size_t n = rs != NULL ? rs->n : 0, k = 0;
    Gs__Reservation *msgs = calloc(n + 1, sizeof(*msgs));
    Gs__Reservation **ptrs = calloc(n + 1, sizeof(*ptrs));
    uint64_t now = gs_clock_wall_ms();
    char why[128];

    if (msgs == NULL || ptrs == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (name[0] != '\0' && strcmp(rs->v[i].name, name) != 0)
            continue;
        resv_to_msg(&rs->v[i], now, &msgs[k]);
        ptrs[k] = &msgs[k];
        k++;
    }
    if (name[0] != '\0' && k == 0) {
        snprintf(why, sizeof(why), "Reservation %.64s not found", name);
        sched_cli_error(c, request_id, -ENOENT, why, false);
        goto out;
    }
    gs_sort(ptrs, k, sizeof(*ptrs), by_start);
    reply_resvs(c, request_id, ptrs, k, false);
out:
    free(msgs);
    free(ptrs);
}

/* A change waiting for its commit: the reservation as it is now (delete: as it was), packed. */
struct resv_op {
    struct sched_cli *cli;
    uint64_t request_id;
    uint8_t *packed;
    size_t len;
};

static void op_stored(struct sched_ctx *s, int status, void *arg)
{
    struct resv_op *op = arg;
    Gs__Reservation *m = NULL;

    if (status < 0) {
        sched_cli_error(op->cli, op->request_id, status, "the change could not be stored", true);
        goto out;
    }
    m = gs__reservation__unpack(NULL, op->len, op->packed);
    if (m == NULL) {
        sched_cli_error(op->cli, op->request_id, -ENOMEM, "out of memory", true);
        goto out;
    }
    {
        uint64_t now = gs_clock_wall_ms();

        m->active = m->start_ms <= now && (m->end_ms == 0 || now < m->end_ms);
    }
    reply_resvs(op->cli, op->request_id, &m, 1, true);
out:
    (void)s;
    if (m != NULL)
        gs__reservation__free_unpacked(m, NULL);
    free(op->packed);
    free(op);
}

/* Packs r into a new op and into ch (stored, or deleted when del). */
static int stage(const struct resv *r, bool del, struct sched_change *ch, struct resv_op **ret)
{
    struct resv_op *op = calloc(1, sizeof(*op));
    Gs__Reservation m;

    resv_to_msg(r, gs_clock_wall_ms(), &m);
    m.active = false; /* a reply's fact, not stored */
    if (op == NULL)
        return -ENOMEM;
    op->len = gs__reservation__get_packed_size(&m);
    if ((op->packed = malloc(op->len > 0 ? op->len : 1)) == NULL) {
        free(op);
        return -ENOMEM;
    }
    gs__reservation__pack(&m, op->packed);
    sched_change_resv(ch, r->name, del ? NULL : op->packed, op->len);
    *ret = op;
    return 0;
}

static void commit(struct sched_cli *c, uint64_t request_id, struct sched_change *ch,
                   struct resv_op *op, const char *what, const char *name)
{
    struct sched_ctx *s = c->s;
    char detail[160];

    snprintf(detail, sizeof(detail), "reservation %s %s by uid %u", name, what, (unsigned)c->uid);
    sched_change_event(ch, gs_clock_wall_ms(), 0, "", "RESERVATION", detail);
    op->cli = c;
    op->request_id = request_id;
    sched_cli_hold(c);
    sched_change_commit(s, ch, op_stored, op);
    sched_engine_wake(s); /* who may run where has changed */
}

/* Takes the names in rm from v (each must be there) and adds those in add not there yet;
 * key names the list in why. */
static int edit_list(char ***v, size_t *n, char *const *add, size_t nadd, char *const *rm,
                     size_t nrm, const char *key, char *why, size_t size)
{
    char **grown;

    for (size_t i = 0; i < nrm; i++) {
        size_t at = 0;

        while (at < *n && strcmp((*v)[at], rm[i]) != 0)
            at++;
        if (at == *n) {
            snprintf(why, size, "%s-=%.64s: not one of the reservation's %s", key, rm[i], key);
            return -EINVAL;
        }
        free((*v)[at]);
        memmove(&(*v)[at], &(*v)[at + 1], (*n - at - 1) * sizeof(**v));
        (*n)--;
    }
    for (size_t i = 0; i < nadd; i++) {
        bool there = false;

        for (size_t j = 0; j < *n && !there; j++)
            there = strcmp((*v)[j], add[i]) == 0;
        if (there)
            continue;
        if ((grown = realloc(*v, (*n + 1) * sizeof(**v))) == NULL)
            return -ENOMEM;
        *v = grown;
        if (((*v)[*n] = strdup(add[i])) == NULL)
            return -ENOMEM;
        (*n)++;
    }
    return 0;
}

/* The request's fields applied to r (a copy of the stored one, or a new one), then its
 * edits of the stored lists and flags. */
static int apply_fields(const Gs__ReservationRequest *req, bool create, struct resv *r, char *why,
                        size_t size)
{
    const Gs__Reservation *m = req->reservation;
    int rc = 0;

    if (create || req->set_flags)
        r->flags = m->flags;
    r->flags = (r->flags | req->add_flags) & ~req->remove_flags;
    if ((r->flags & FLAG_PURGE_COMP) == 0)
        r->purge_s = 0;
    else if (((create || req->set_flags) && (m->flags & FLAG_PURGE_COMP) != 0) ||
             (req->add_flags & FLAG_PURGE_COMP) != 0 || r->purge_s == 0)
        r->purge_s = m->purge_comp_s > 0 ? m->purge_comp_s : PURGE_DEFAULT_S;
    if (create || req->set_start)
        r->start_ms = m->start_ms;
    if (create || req->set_end)
        r->end_ms = m->end_ms;
    if (create || req->set_gpus)
        r->gpus = m->gpus;
    if (create || req->set_nodes)
        rc = set_nodes(r, m->nodes, why, size);
    if (rc == 0 && (create || req->set_users))
        rc = set_strv(&r->users, &r->nusers, m->users, m->n_users);
    if (rc == 0 && (create || req->set_accounts))
        rc = set_strv(&r->accounts, &r->naccounts, m->accounts, m->n_accounts);
    if (rc == 0 && (create || req->set_licenses))
        rc = set_licenses(r, m->licenses, m->n_licenses);
    if (rc == 0)
        rc = edit_list(&r->users, &r->nusers, req->add_users, req->n_add_users, req->remove_users,
                       req->n_remove_users, "Users", why, size);
    if (rc == 0)
        rc = edit_list(&r->accounts, &r->naccounts, req->add_accounts, req->n_add_accounts,
                       req->remove_accounts, req->n_remove_accounts, "Accounts", why, size);
    if (rc == -ENOMEM)
        snprintf(why, size, "out of memory");
    return rc;
}

static int resv_copy(const struct resv *src, struct resv *dst)
{
    Gs__Reservation m;
    char why[160];

    resv_to_msg(src, 0, &m);
    return resv_from_msg(&m, dst, why, sizeof(why));
}

/* A job naming reservation name that runs (running), or that has not finished (pending or
 * running: PURGE_COMP's "in use"); its id into *ret_id (NULL allowed). */
static bool has_job(struct sched_ctx *s, const char *name, bool running, uint64_t *ret_id)
{
    for (size_t i = s->plan_from; i < sched_jobs_count(s->jobs); i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);

        if ((running ? job->state == SCHED_JOB_RUNNING : !sched_job_finished(job)) &&
            job->spec->reservation != NULL && strcmp(job->spec->reservation, name) == 0) {
            if (ret_id != NULL)
                *ret_id = job->id;
            return true;
        }
    }
    return false;
}

/* "DAILY,MAINT" for the log; "none" without flags. */
static const char *flag_names(uint32_t flags, char *out, size_t size)
{
    size_t len = 0;

    out[0] = '\0';
    if ((flags & RECUR_FLAGS) != 0)
        len += (size_t)snprintf(out, size, "%s", sched_resv_recur_name(flags & RECUR_FLAGS));
    if ((flags & FLAG_MAINT) != 0 && len < size)
        len += (size_t)snprintf(out + len, size - len, "%sMAINT", len > 0 ? "," : "");
    if ((flags & FLAG_IGNORE_JOBS) != 0 && len < size)
        len += (size_t)snprintf(out + len, size - len, "%sIGNORE_JOBS", len > 0 ? "," : "");
    if ((flags & FLAG_OVERLAP) != 0 && len < size)
        len += (size_t)snprintf(out + len, size - len, "%sOVERLAP", len > 0 ? "," : "");
    if ((flags & FLAG_PURGE_COMP) != 0 && len < size)
        len += (size_t)snprintf(out + len, size - len, "%sPURGE_COMP", len > 0 ? "," : "");
    if ((flags & FLAG_FLEX) != 0 && len < size)
        len += (size_t)snprintf(out + len, size - len, "%sFLEX", len > 0 ? "," : "");
    if ((flags & FLAG_MAGNETIC) != 0 && len < size)
        len += (size_t)snprintf(out + len, size - len, "%sMAGNETIC", len > 0 ? "," : "");
    if ((flags & FLAG_REPLACE_DOWN) != 0 && len < size)
        len += (size_t)snprintf(out + len, size - len, "%sREPLACE_DOWN", len > 0 ? "," : "");
    if ((flags & FLAG_REPLACE) != 0 && len < size)
        len += (size_t)snprintf(out + len, size - len, "%sREPLACE", len > 0 ? "," : "");
    if ((flags & FLAG_ANY_NODES) != 0 && len < size)
        snprintf(out + len, size - len, "%sANY_NODES", len > 0 ? "," : "");
    return out[0] != '\0' ? out : "none";
}

static void change(struct sched_cli *c, uint64_t request_id, const Gs__ReservationRequest *req)
{
    struct sched_ctx *s = c->s;
    const Gs__Reservation *m = req->reservation;
    bool create = req->action == GS__RESERVATION_ACTION__RESERVATION_ACTION_CREATE;
    struct resv *old = resv_find(s->resvs, m->name);
    struct resv r = {0};
    struct resv_op *op = NULL;
    struct sched_change *ch = NULL;
    char why[256], name[RESV_NAME_MAX + 1], flags[128];
    int rc;

    if (create && old != NULL) {
        snprintf(why, sizeof(why), "ReservationName: reservation %.64s exists already", m->name);
        rc = -EEXIST;
        goto refuse;
    }
    if (!create && old == NULL) {
        snprintf(why, sizeof(why), "Reservation %.64s not found", m->name);
        rc = -ENOENT;
        goto refuse;
    }
    if (create) {
        if (m->name[0] != '\0')
            snprintf(r.name, sizeof(r.name), "%s", m->name);
        else
            generate_name(s, m, r.name, sizeof(r.name));
        r.created_ms = gs_clock_wall_ms();
        r.busy_ms = r.created_ms;
    } else if ((rc = resv_copy(old, &r)) < 0) {
        snprintf(why, sizeof(why), "out of memory");
        goto refuse;
    } else {
        r.busy_ms = old->busy_ms;
    }
    if ((rc = apply_fields(req, create, &r, why, sizeof(why))) < 0 ||
        (rc = resv_check(s, &r, old, why, sizeof(why))) < 0)
        goto refuse;
    /* Only where it lands or when it starts changed: a Users+= does not ask again. */
    if ((create || req->set_nodes || req->set_start || req->set_gpus) &&
        (r.flags & FLAG_IGNORE_JOBS) == 0 && (rc = busy_check(s, &r, why, sizeof(why))) < 0)
        goto refuse;
    if ((ch = sched_change_new(s)) == NULL || (rc = stage(&r, false, ch, &op)) < 0) {
        rc = -ENOMEM;
        snprintf(why, sizeof(why), "out of memory");
        goto refuse;
    }
    snprintf(name, sizeof(name), "%s", r.name);
    if (old != NULL)
        resvs_remove(s, old);
    GS_LOG(GS_LOG_INFO,
           "reservation=%s nodes=%s start_ms=%llu end_ms=%llu flags=%s uid=%u reservation %s",
           r.name, r.nodes, (unsigned long long)r.start_ms, (unsigned long long)r.end_ms,
           flag_names(r.flags, flags, sizeof(flags)), (unsigned)c->uid,
           create ? "created" : "updated");
    if (resvs_add(s, &r) < 0) { /* out of memory: it is stored, and loads at the next start */
        GS_LOG(GS_LOG_ERROR, "reservation=%s out of memory keeping the reservation", r.name);
        resv_release(&r);
    }
    commit(c, request_id, ch, op, create ? "created" : "updated", name);
    return;
refuse:
    resv_release(&r);
    free(op);
    sched_change_commit(s, ch, NULL, NULL); /* nothing in it, or NULL */
    sched_cli_error(c, request_id, rc, why, false);
}

static void delete (struct sched_cli *c, uint64_t request_id, const char *name)
{
    struct sched_ctx *s = c->s;
    struct resv *r = resv_find(s->resvs, name);
    struct sched_change *ch = NULL;
    struct resv_op *op = NULL;
    char why[160];
    uint64_t job_id;

    if (r == NULL) {
        snprintf(why, sizeof(why), "Reservation %.64s not found", name);
        sched_cli_error(c, request_id, -ENOENT, why, false);
        return;
    }
    if (has_job(s, name, true, &job_id)) {
        snprintf(why, sizeof(why), "reservation %.64s is busy: job %llu runs in it", name,
                 (unsigned long long)job_id);
        sched_cli_error(c, request_id, -EBUSY, why, false);
        return;
    }
    if ((ch = sched_change_new(s)) == NULL || stage(r, true, ch, &op) < 0) {
        sched_change_commit(s, ch, NULL, NULL);
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        return;
    }
    GS_LOG(GS_LOG_INFO, "reservation=%s uid=%u reservation deleted", name, (unsigned)c->uid);
    commit(c, request_id, ch, op, "deleted", name);
    resvs_remove(s, r);
}

void sched_resv_request(struct sched_cli *c, uint64_t request_id, const Gs__ReservationRequest *req)
{
    static const Gs__Reservation none = GS__RESERVATION__INIT;
    const Gs__Reservation *m = req->reservation != NULL ? req->reservation : &none;
    Gs__ReservationRequest fixed = *req;

    fixed.reservation = (Gs__Reservation *)m;
    if (req->action == GS__RESERVATION_ACTION__RESERVATION_ACTION_SHOW) {
        show(c, request_id, m->name);
        return;
    }
    if (req->action != GS__RESERVATION_ACTION__RESERVATION_ACTION_CREATE &&
        req->action != GS__RESERVATION_ACTION__RESERVATION_ACTION_UPDATE &&
        req->action != GS__RESERVATION_ACTION__RESERVATION_ACTION_DELETE) {
        sched_cli_error(c, request_id, -EINVAL, "action: show, create, update or delete", false);
        return;
    }
    if (c->uid != 0) {
        sched_cli_error(c, request_id, -EPERM,
                        "only root may create, update or delete reservations", false);
        return;
    }
    if (req->action != GS__RESERVATION_ACTION__RESERVATION_ACTION_CREATE && m->name[0] == '\0') {
        sched_cli_error(c, request_id, -EINVAL, "ReservationName: which reservation?", false);
        return;
    }
    if (req->action == GS__RESERVATION_ACTION__RESERVATION_ACTION_DELETE)
        delete (c, request_id, m->name);
    else
        change(c, request_id, &fixed);
    maint_tick(c->s, gs_clock_wall_ms()); /* a MAINT one's nodes in or out of it now */
}

/* --- start-up, planner, submit, launch, cron --------------------------------------------- */

int sched_resv_load(const char *name, const void *spec, size_t len, void *data)
{
    struct sched_ctx *s = data;
    Gs__Reservation *m = gs__reservation__unpack(NULL, len, spec);
    struct resv r;
    char why[160];
    int rc = 0;

    if (m == NULL) {
        GS_LOG(GS_LOG_WARN, "reservation=%s stored reservation unreadable, dropped", name);
        return 0;
    }
    rc = resv_from_msg(m, &r, why, sizeof(why));
    r.busy_ms = gs_clock_wall_ms(); /* idle from now: a restart purges nothing early */
    gs__reservation__free_unpacked(m, NULL);
    if (rc == -EINVAL) {
        GS_LOG(GS_LOG_WARN, "reservation=%s error=\"%s\" stored reservation dropped", name, why);
        return 0;
    }
    if (rc == 0 && (rc = resvs_add(s, &r)) < 0)
        resv_release(&r);
    return rc;
}

static void set_bit(uint64_t *mask, size_t i)
{
    mask[i / 64] |= UINT64_C(1) << (i % 64);
}

/* The GPUs each GPU reservation keeps on each of its nodes (gpus_choose: the best connected
 * set of its share there beside the others'). 0 or -ENOMEM. */
static int resv_gpus_build(struct sched_ctx *s, struct sched_resvs *rs, size_t nnodes)
{
    uint64_t *gpus;
    bool any = false;

    for (size_t i = 0; i < rs->n; i++)
        any = any || rs->v[i].gpus > 0;
    if (!any)
        return 0;
    if ((gpus = realloc(rs->gpus, rs->n * (nnodes + 1) * sizeof(*gpus))) == NULL)
        return -ENOMEM;
    rs->gpus = gpus;
    memset(gpus, 0, rs->n * (nnodes + 1) * sizeof(*gpus));
    for (size_t i = 0; i < rs->n; i++) {
        const struct resv *r = &rs->v[i];

        for (size_t k = 0; r->gpus > 0 && k < r->nnode_names; k++) {
            const struct sched_node *n = sched_node_find(s, r->node_names[k]);

            if (n != NULL && n->index < nnodes)
                gpus[i * (nnodes + 1) + n->index] = gpus_choose(s, r, n, NULL);
        }
    }
    return 0;
}

int sched_resv_view(struct sched_ctx *s, const struct sched_planner_resv **ret, size_t *ret_n)
{
    struct sched_resvs *rs = s->resvs;
    size_t nnodes = sched_cluster_nnodes(s->cluster), words = nnodes / 64 + 1;

    *ret = NULL;
    *ret_n = 0;
    if (rs == NULL || rs->n == 0)
        return 0;
    if (rs->dirty || rs->view_nodes != nnodes) {
        struct sched_planner_resv *view = realloc(rs->view, rs->n * sizeof(*view));
        size_t nlic = 0, at = 0;
        uint64_t *masks;

        if (view == NULL)
            return -ENOMEM;
        rs->view = view;
        for (size_t i = 0; i < rs->n; i++)
            nlic += rs->v[i].nlic;
        free(rs->lic);
        if ((rs->lic = malloc((nlic + 1) * sizeof(*rs->lic))) == NULL)
            return -ENOMEM;
        if ((masks = realloc(rs->masks, rs->n * words * sizeof(*masks))) == NULL)
            return -ENOMEM;
        rs->masks = masks;
        memset(masks, 0, rs->n * words * sizeof(*masks));
        if (resv_gpus_build(s, rs, nnodes) < 0)
            return -ENOMEM;
        for (size_t i = 0; i < rs->n; i++) {
            const struct resv *r = &rs->v[i];

            for (size_t k = 0; k < r->nnode_names; k++) {
                const struct sched_node *n = sched_node_find(s, r->node_names[k]);

                if (n != NULL && n->index < nnodes)
                    set_bit(&masks[i * words], n->index);
            }
            view[i] = (struct sched_planner_resv){
                .name = r->name,
                .start_ms = r->start_ms,
                .end_ms = r->end_ms,
                .nodes = &masks[i * words],
                .gpus = r->gpus > 0 ? &rs->gpus[i * (nnodes + 1)] : NULL,
                .flex = (r->flags & FLAG_FLEX) != 0,
                .magnetic = (r->flags & FLAG_MAGNETIC) != 0,
                .users = (const char *const *)r->users,
                .nusers = r->nusers,
                .accounts = (const char *const *)r->accounts,
                .naccounts = r->naccounts,
                .any_nodes = (r->flags & FLAG_ANY_NODES) != 0 || r->nnode_names == 0,
                .nodeless = r->nnode_names == 0,
                .licenses = &rs->lic[at],
                .nlicenses = (uint32_t)r->nlic};
            for (size_t k = 0; k < r->nlic; k++) { /* one no longer configured: never had */
                long idx = sched_license_index(s->cfg, r->lic[k].name);

                rs->lic[at++] = (struct sched_license_need){
                    idx >= 0 ? (uint32_t)idx : (uint32_t)s->cfg->nlicenses, r->lic[k].count};
            }
        }
        rs->words = words;
        rs->view_nodes = nnodes;
        rs->dirty = false;
    }
    *ret = rs->view;
    *ret_n = rs->n;
    return 0;
}

int sched_resv_admit(struct sched_ctx *s, uint32_t uid, const char *user,
                     const struct gs_jobspec *spec, char *why, size_t size)
{
    const struct resv *r;
    bool any; /* its jobs may use nodes outside it */

    if (spec->reservation == NULL || spec->reservation[0] == '\0')
        return 0;
    r = resv_find(s->resvs, spec->reservation);
    if (r == NULL || (r->end_ms != 0 && r->end_ms <= gs_clock_wall_ms())) {
        snprintf(why, size, "reservation: no reservation %.64s", spec->reservation);
        return -EINVAL;
    }
    any = (r->flags & (FLAG_FLEX | FLAG_ANY_NODES)) != 0 || r->nnode_names == 0;
    if (!any && gs_jobspec_total_nodes(spec) > r->nnode_names) {
        snprintf(why, size, "reservation: %.64s holds %zu nodes; the job asks for %u", r->name,
                 r->nnode_names, gs_jobspec_total_nodes(spec));
        return -EINVAL;
    }
    if (!any && r->gpus > 0 && spec->gpus_per_node > r->gpus / r->nnode_names) {
        snprintf(why, size, "reservation: %.64s keeps %zu GPUs per node; the job asks for %u",
                 r->name, r->gpus / r->nnode_names, spec->gpus_per_node);
        return -EINVAL;
    }
    if (uid == 0)
        return 0;
    for (size_t i = 0; user != NULL && i < r->nusers; i++) {
        if (strcmp(r->users[i], user) == 0)
            return 0;
    }
    for (size_t i = 0; spec->account != NULL && i < r->naccounts; i++) {
        if (strcmp(r->accounts[i], spec->account) == 0)
            return 0;
    }
    snprintf(why, size, "reservation: user %.64s (account %.64s) may not use reservation %.64s",
             user != NULL ? user : "?",
             spec->account != NULL && spec->account[0] ? spec->account : "none", r->name);
    return -EPERM;
}

void sched_resv_cap(struct sched_ctx *s, struct sched_job *job, uint64_t now_ms)
{
    const struct resv *r;
    uint64_t left_s;

    if (job->spec->reservation == NULL || job->spec->reservation[0] == '\0')
        return;
    r = resv_find(s->resvs, job->spec->reservation);
    if (r == NULL || r->end_ms == 0 || (r->flags & FLAG_FLEX) != 0)
        return; /* FLEX: its jobs may run past its end */
    left_s = r->end_ms > now_ms ? (r->end_ms - now_ms + 999) / 1000 : 1;
    if (job->spec->time_limit_s == GS_DURATION_INFINITE || job->spec->time_limit_s > left_s) {
        GS_LOG(GS_LOG_INFO,
               "job=%llu reservation=%s time_limit_s=%llu time limit ends the job "
               "with its reservation",
               (unsigned long long)job->id, r->name, (unsigned long long)left_s);
        job->spec->time_limit_s = left_s;
    }
}

/* A repeating r that ended: on to its next window, stored in ch. */
static void repeat(struct sched_ctx *s, struct sched_change *ch, struct resv *r, uint64_t now)
{
    struct resv_op *op = NULL;
    char detail[160], start[32];
    time_t t;
    struct tm tm;

    sched_resv_recur_roll(r->flags & RECUR_FLAGS, &r->start_ms, &r->end_ms, now);
    if (stage(r, false, ch, &op) == 0) { /* ch copies the row; op is only for a reply */
        free(op->packed);
        free(op);
    }
    t = (time_t)(r->start_ms / 1000);
    if (localtime_r(&t, &tm) == NULL ||
        strftime(start, sizeof(start), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        snprintf(start, sizeof(start), "%llu", (unsigned long long)r->start_ms);
    snprintf(detail, sizeof(detail), "reservation %s repeats (%s) from %s", r->name,
             sched_resv_recur_name(r->flags & RECUR_FLAGS), start);
    sched_change_event(ch, now, 0, "", "RESERVATION", detail);
    GS_LOG(GS_LOG_INFO, "reservation=%s flags=%s start_ms=%llu end_ms=%llu reservation repeats",
           r->name, sched_resv_recur_name(r->flags & RECUR_FLAGS), (unsigned long long)r->start_ms,
           (unsigned long long)r->end_ms);
    s->resvs->dirty = true;
    sched_engine_wake(s);
}

/*
 * PURGE_COMP: whether r, active, has had no pending or running job for its purge time,
 * counted from its start, from when a job last named it, or from when gschedd made or loaded
 * it, whichever is latest.
 */
static bool idle_past(struct sched_ctx *s, struct resv *r, uint64_t now)
{
    uint64_t since;

    if ((r->flags & FLAG_PURGE_COMP) == 0 || r->start_ms > now)
        return false;
    if (has_job(s, r->name, false, NULL)) {
        r->busy_ms = now;
        return false;
    }
    since = r->busy_ms > r->start_ms ? r->busy_ms : r->start_ms;
    return now - since >= (uint64_t)r->purge_s * 1000;
}

/* Whether node name is fit to keep: known, up and not drained. */
static bool node_fit(struct sched_ctx *s, const char *name)
{
    const struct sched_node *n = sched_node_find(s, name);

    return n != NULL && n->up && !n->drain;
}

/*
 * Into *ret (initialised by the caller; released on failure), r with its k-th node replaced
 * by the first node of the registry fit to keep, idle (no job on it at all, as Slurm's
 * REPLACE_DOWN takes idle nodes), not r's, that r could have been made with (resv_check: no
 * other reservation holding it at a time r meets, the GPUs r keeps); *ret_name gets that
 * node's name (ret's list is the new hostlist expanded, so its order may differ from r's).
 * At most REPLACE_TRIES idle nodes are checked a tick, so a cluster without one costs
 * little. -ENOENT: none.
 */
static int replacement(struct sched_ctx *s, const struct resv *r, size_t k, struct resv *ret,
                       const char **ret_name)
{
    char why[320];
    int rc = -ENOENT, tries = 0;

    for (uint32_t i = 0; rc == -ENOENT && i < s->nnodes && tries < REPLACE_TRIES; i++) {
        const struct sched_node *m = sched_node_at(s, i);
        const char **names = NULL;
        struct gs_buf list = GS_BUF_INIT;

        if (m == NULL || !node_fit(s, m->name) || holds_node(r, m->name) ||
            sched_cluster_node_jobs(s->cluster, m->index) > 0)
            continue;
        tries++;
        if ((names = calloc(r->nnode_names, sizeof(*names))) == NULL)
            return -ENOMEM;
        for (size_t j = 0; j < r->nnode_names; j++)
            names[j] = j == k ? m->name : r->node_names[j];
        rc = gs_hostlist_compress(names, r->nnode_names, &list);
        free(names);
        if (rc == 0)
            rc = resv_copy(r, ret);
        if (rc == 0)
            rc = set_nodes(ret, list.data, why, sizeof(why));
        gs_buf_release(&list);
        if (rc == 0 && resv_check(s, ret, r, why, sizeof(why)) < 0)
            rc = -EAGAIN;
        if (rc == 0)
            *ret_name = m->name;
        if (rc < 0) {
            resv_release(ret);
            memset(ret, 0, sizeof(*ret));
            if (rc == -ENOMEM)
                return rc;
            rc = -ENOENT;
        }
    }
    return rc;
}

/*
 * Whether a running job holds node name where r keeps it: anywhere on it, or for a GPU
 * reservation, on the GPUs r keeps there (Flags=REPLACE).
 */
static bool node_held(struct sched_ctx *s, const struct resv *r, const char *name)
{
    const struct sched_node *n = sched_node_find(s, name);
    uint64_t kept;

    if (n == NULL || sched_cluster_node_jobs(s->cluster, n->index) == 0)
        return false;
    if (r->gpus == 0)
        return true;
    kept = gpus_choose(s, r, n, NULL);
    for (size_t i = s->plan_from; i < sched_jobs_count(s->jobs); i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);

        for (uint32_t a = 0; job->state == SCHED_JOB_RUNNING && a < job->alloc.nnodes; a++) {
            if (job->alloc.nodes[a].node == n->index && (job->alloc.nodes[a].gpus & kept) != 0)
                return true;
        }
    }
    return false;
}

/*
 * Flags=REPLACE_DOWN (Slurm's): while r has not ended, each of its nodes that is down,
 * drained or gone from the registry is replaced by an idle node (replacement), stored as
 * an update and logged. Flags=REPLACE: from r's start, each node a running job holds too
 * (node_held), so that r keeps a pool of idle nodes for its pending jobs; the job runs on
 * where it is, outside r. A node without a replacement stays, and is tried again next
 * tick, as is one the new list's order moved before k.
 */
static void replace_down(struct sched_ctx *s, struct sched_change **ch, struct resv *r,
                         uint64_t now)
{
    bool held_too = (r->flags & FLAG_REPLACE) != 0 && now >= r->start_ms;
    const char *flag = (r->flags & FLAG_REPLACE) != 0 ? "REPLACE" : "REPLACE_DOWN";

    for (size_t k = 0; k < r->nnode_names; k++) {
        struct resv_op *op = NULL;
        struct resv copy = {0};
        const char *by = NULL;
        char old[64], detail[280];
        bool fit = node_fit(s, r->node_names[k]);

        if ((fit && !(held_too && node_held(s, r, r->node_names[k]))) ||
            replacement(s, r, k, &copy, &by) < 0)
            continue;
        if (*ch == NULL && (*ch = sched_change_new(s)) == NULL) {
            resv_release(&copy);
            return; /* out of memory: the next tick tries again */
        }
        if (stage(&copy, false, *ch, &op) == 0) { /* ch copies the row */
            free(op->packed);
            free(op);
        }
        snprintf(old, sizeof(old), "%s", r->node_names[k]);
        copy.busy_ms = r->busy_ms;
        resv_release(r);
        *r = copy;
        snprintf(detail, sizeof(detail), "reservation %s: node %s is %s, replaced by %.64s (%s)",
                 r->name, old, fit ? "held by a job" : "down or drained", by, flag);
        sched_change_event(*ch, now, 0, old, "RESERVATION", detail);
        GS_LOG(GS_LOG_INFO,
               "reservation=%s node=%s replaced_by=%s nodes=%s reservation node %s, replaced "
               "(%s)",
               r->name, old, by, r->nodes, fit ? "held by a job" : "down or drained", flag);
        s->resvs->dirty = true;
        sched_engine_wake(s);
    }
}

/* Whether r is a whole-node MAINT reservation active at now (what sreport's PLND Down
 * counts; a GPU reservation's GPUs are not set apart). */
static bool maint_now(const struct resv *r, uint64_t now)
{
    return (r->flags & FLAG_MAINT) != 0 && r->gpus == 0 && r->start_ms <= now &&
           (r->end_ms == 0 || r->end_ms > now);
}

/*
 * sreport's PLND Down: each node's history row says whether it is in an active whole-node
 * MAINT reservation (sched_node.maint). When the active ones, their nodes or the registry
 * differ from the last tick's (a hash of them, so that a quiet tick costs a look at each
 * reservation), every node's flag is worked out again and each that changed gets a row.
 */
static void maint_tick(struct sched_ctx *s, uint64_t now)
{
    struct sched_resvs *rs = s->resvs;
    uint64_t key = gs_fnv64(GS_FNV64_OFFSET, &s->nnodes, sizeof(s->nnodes));
    struct sched_change *ch = NULL;
    bool *in;

    for (size_t i = 0; rs != NULL && i < rs->n; i++) {
        const struct resv *r = &rs->v[i];

        if (!maint_now(r, now))
            continue;
        key = gs_fnv64(key, r->name, strlen(r->name) + 1);
        for (size_t k = 0; k < r->nnode_names; k++)
            key = gs_fnv64(key, r->node_names[k], strlen(r->node_names[k]) + 1);
    }
    if (key == s->maint_key || (in = calloc(s->nnodes + 1, sizeof(*in))) == NULL)
        return; /* unchanged, or out of memory: the next tick tries again */
    s->maint_key = key;
    for (size_t i = 0; rs != NULL && i < rs->n; i++) {
        const struct resv *r = &rs->v[i];

        for (size_t k = 0; maint_now(r, now) && k < r->nnode_names; k++) {
            for (size_t j = 0; j < s->nnodes; j++) {
                if (strcmp(s->nodes[j]->name, r->node_names[k]) == 0)
                    in[j] = true;
            }
        }
    }
    for (size_t j = 0; j < s->nnodes; j++) {
        struct sched_node *n = s->nodes[j];

        if (n->maint == in[j])
            continue;
        if (ch == NULL && (ch = sched_change_new(s)) == NULL) {
            s->maint_key = 0; /* the rest next tick */
            break;
        }
        n->maint = in[j];
        sched_change_node_state(ch, now, n->name, sched_cluster_is_up(s->cluster, n->index),
                                n->maint, n->topology->cores, (uint32_t)n->topology->n_gpus);
    }
    if (ch != NULL)
        sched_change_commit(s, ch, NULL, NULL);
    free(in);
}

void sched_resv_jobs_started(struct sched_ctx *s)
{
    struct sched_resvs *rs = s->resvs;
    uint64_t now = gs_clock_wall_ms();
    struct sched_change *ch = NULL;

    for (size_t i = 0; rs != NULL && i < rs->n; i++) {
        struct resv *r = &rs->v[i];

        if ((r->flags & FLAG_REPLACE) != 0 && now >= r->start_ms &&
            (r->end_ms == 0 || r->end_ms > now))
            replace_down(s, &ch, r, now);
    }
    if (ch != NULL)
        sched_change_commit(s, ch, NULL, NULL);
}

void sched_resv_tick(struct sched_ctx *s)
{
    struct sched_resvs *rs = s->resvs;
    uint64_t now = gs_clock_wall_ms();
    struct sched_change *ch = NULL;

    for (size_t i = 0; rs != NULL && i < rs->n;) {
        struct resv *r = &rs->v[i];
        bool ended = r->end_ms != 0 && r->end_ms <= now;
        char detail[160];

        if (!ended && (r->flags & (FLAG_REPLACE_DOWN | FLAG_REPLACE)) != 0)
            replace_down(s, &ch, r, now);
        if (!ended && !idle_past(s, r, now)) {
            i++;
            continue;
        }
        if (ch == NULL && (ch = sched_change_new(s)) == NULL)
            break; /* out of memory: the next tick tries again */
        if (ended && (r->flags & RECUR_FLAGS) != 0) {
            repeat(s, ch, r, now);
            i++;
            continue;
        }
        sched_change_resv(ch, r->name, NULL, 0);
        if (ended)
            snprintf(detail, sizeof(detail), "reservation %s ended", r->name);
        else
            snprintf(detail, sizeof(detail),
                     "reservation %s purged: no job in it for %u s (PURGE_COMP)", r->name,
                     r->purge_s);
        sched_change_event(ch, now, 0, "", "RESERVATION", detail);
        GS_LOG(GS_LOG_INFO, "reservation=%s purge_s=%u reservation %s, deleted", r->name,
               ended ? 0 : r->purge_s, ended ? "ended" : "idle (PURGE_COMP)");
        resvs_remove(s, r);
        sched_engine_wake(s);
    }
    if (ch != NULL)
        sched_change_commit(s, ch, NULL, NULL);
    maint_tick(s, now);
    if (s->resv_wake_ms != 0 && now >= s->resv_wake_ms) {
        s->resv_wake_ms = 0; /* the pass sets the next */
        sched_engine_wake(s);
    }
}

void sched_resv_nodes_changed(struct sched_ctx *s)
{
    if (s->resvs != NULL)
        s->resvs->dirty = true; /* a node's GPUs (a GPU reservation's set there) may differ */
}

void sched_resv_free(struct sched_ctx *s)
{
    struct sched_resvs *rs = s->resvs;

    for (size_t i = 0; rs != NULL && i < rs->n; i++)
        resv_release(&rs->v[i]);
    if (rs != NULL) {
        free(rs->v);
        free(rs->view);
        free(rs->masks);
        free(rs->gpus);
        free(rs->lic);
    }
    free(rs);
    s->resvs = NULL;
}
