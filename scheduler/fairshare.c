/*
 * fairshare.c: the fair-share tree (see fairshare.h). Nodes live in one array: root at 0,
 * the configured accounts next in file order, user associations appended as they come.
 * Usage is kept on the associations only; an account's is the sum below it, found in the
 * update, which walks the tree in depth-first order (children after their parent).
 */
#include "scheduler/fairshare.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 64

struct fs_node {
    char account[NAME_MAX_LEN];
    char user[NAME_MAX_LEN]; /* "" for an account */
    int parent;              /* -1 for root */
    uint32_t shares;
    uint32_t depth;
    double usage; /* own (associations), or the sum below (accounts, after an update) */
    double sibling_shares;
    double norm_shares, eff_usage, factor;
};

struct sched_fairshare {
    struct fs_node *nodes;
    size_t n, cap;
    size_t *order; /* depth-first, built by the update */
    size_t norder;
    uint64_t half_life_ms; /* 0: no decay */
    uint64_t decayed_at_ms;
};

static int add_node(struct sched_fairshare *fs, const char *account, const char *user, int parent,
                    uint32_t shares)
{
    struct fs_node *v;

    if (fs->n == fs->cap) {
        size_t cap = fs->cap ? fs->cap * 2 : 16;

        v = realloc(fs->nodes, cap * sizeof(*v));
        if (v == NULL)
            return -ENOMEM;
        fs->nodes = v;
        fs->cap = cap;
    }
    v = &fs->nodes[fs->n];
    memset(v, 0, sizeof(*v));
    snprintf(v->account, sizeof(v->account), "%s", account);
    snprintf(v->user, sizeof(v->user), "%s", user != NULL ? user : "");
    v->parent = parent;
    v->shares = shares;
    v->depth = parent >= 0 ? fs->nodes[parent].depth + 1 : 0;
    v->factor = 1.0;
    return (int)fs->n++;
}

static int find(const struct sched_fairshare *fs, const char *account, const char *user)
{
    for (size_t i = 0; i < fs->n; i++) {
        if (strcmp(fs->nodes[i].account, account) == 0 && strcmp(fs->nodes[i].user, user) == 0)
            return (int)i;
    }
    return -1;
}

struct sched_fairshare *sched_fairshare_new(const struct gs_config *cfg, uint64_t now_ms)
{
    struct sched_fairshare *fs = calloc(1, sizeof(*fs));
    bool placed[GS_CONFIG_MAX_ACCOUNTS] = {0};
    size_t left = cfg->naccounts;

    if (fs == NULL || add_node(fs, GS_CONFIG_ROOT_ACCOUNT, "", -1, 1) < 0)
        goto fail;
    fs->half_life_ms = cfg->priority.decay_half_life_s * 1000;
    fs->decayed_at_ms = now_ms;
    /* Parents first: the configuration may name a parent defined further down. */
    while (left > 0) {
        size_t before = left;

        for (size_t i = 0; i < cfg->naccounts && i < GS_CONFIG_MAX_ACCOUNTS; i++) {
            const struct gs_config_account *a = &cfg->accounts[i];
            int parent = find(fs, a->parent != NULL ? a->parent : GS_CONFIG_ROOT_ACCOUNT, "");

            if (placed[i] || parent < 0)
                continue;
            if (add_node(fs, a->name, "", parent, a->shares) < 0)
                goto fail;
            placed[i] = true;
            left--;
        }
        if (left == before)
            break; /* a cycle or an undefined parent: the configuration refuses those */
    }
    /* The members listed have their associations from the start, as sshare shows them. */
    for (size_t i = 0; i < cfg->naccounts; i++) {
        for (size_t k = 0; k < cfg->accounts[i].nusers; k++) {
            if (sched_fairshare_assoc(fs, cfg->accounts[i].name, cfg->accounts[i].users[k]) < 0)
                goto fail;
        }
    }
    sched_fairshare_update(fs);
    return fs;
fail:
    sched_fairshare_free(fs);
    return NULL;
}

void sched_fairshare_free(struct sched_fairshare *fs)
{
    if (fs == NULL)
        return;
    free(fs->nodes);
    free(fs->order);
    free(fs);
}

/* The account node a user's association hangs from: account's, or root's. */
static int parent_of(const struct sched_fairshare *fs, const char *account)
{
    int parent = account != NULL && account[0] != '\0' ? find(fs, account, "") : -1;

    return parent < 0 ? 0 : parent;
}

int sched_fairshare_find(const struct sched_fairshare *fs, const char *account, const char *user)
{
    int i = find(fs, fs->nodes[parent_of(fs, account)].account,
                 user != NULL && user[0] != '\0' ? user : "?");

    return i >= 0 ? i : -ENOENT;
}

int sched_fairshare_assoc(struct sched_fairshare *fs, const char *account, const char *user)
{
    int parent = parent_of(fs, account);
    char acct[NAME_MAX_LEN]; /* a copy: add_node() may move the nodes */
    int i;

    snprintf(acct, sizeof(acct), "%s", fs->nodes[parent].account);
    i = find(fs, acct, user != NULL ? user : "");
    if (i >= 0 && fs->nodes[i].user[0] != '\0')
        return i;
    return add_node(fs, acct, user != NULL && user[0] != '\0' ? user : "?", parent, 1);
}

void sched_fairshare_charge(struct sched_fairshare *fs, int assoc, double amount)
{
    if (assoc >= 0 && (size_t)assoc < fs->n && amount > 0)
        fs->nodes[assoc].usage += amount;
}

void sched_fairshare_set_usage(struct sched_fairshare *fs, int assoc, double usage)
{
    if (assoc >= 0 && (size_t)assoc < fs->n && usage >= 0)
        fs->nodes[assoc].usage = usage;
}

void sched_fairshare_decay(struct sched_fairshare *fs, uint64_t now_ms)
{
    double k;

    if (now_ms <= fs->decayed_at_ms)
        return;
    if (fs->half_life_ms > 0) {
        k = exp2(-(double)(now_ms - fs->decayed_at_ms) / (double)fs->half_life_ms);
        for (size_t i = 0; i < fs->n; i++) {
            if (fs->nodes[i].user[0] != '\0')
                fs->nodes[i].usage *= k;
        }
    }
    fs->decayed_at_ms = now_ms;
}

uint64_t sched_fairshare_decayed_at(const struct sched_fairshare *fs)
{
    return fs->decayed_at_ms;
}

/*
 * The depth-first order, root first, each node's accounts before its users, in one pass
 * over the nodes: children are bucketed under their parent (counting sort), then walked with
 * an explicit stack. Returns false when out of memory (the old order stands).
 */
static bool build_order(struct sched_fairshare *fs)
{
    size_t n = fs->n, *start = calloc(n + 1, sizeof(*start)), *child = malloc(n * sizeof(*child));
    size_t *stack = malloc(n * sizeof(*stack)), *order, depth = 0;
    bool ok = false;

    if (start == NULL || child == NULL || stack == NULL ||
        (order = realloc(fs->order, (n + 1) * sizeof(*order))) == NULL)
        goto out;
    fs->order = order;
    for (size_t k = 1; k < n; k++)
        start[fs->nodes[k].parent + 1]++;
    for (size_t i = 0; i < n; i++)
        start[i + 1] += start[i];
    /* Each bucket in the order wanted: accounts, then users, each by index. */
    for (int users = 0; users < 2; users++) {
        for (size_t k = 1; k < n; k++) {
            if ((fs->nodes[k].user[0] != '\0') == users)
                child[start[fs->nodes[k].parent]++] = k;
        }
    }
    /* start[i] is now the end of i's bucket; its beginning is the previous node's end. */
    fs->norder = 0;
    stack[depth++] = 0;
    while (depth > 0) {
        size_t i = stack[--depth], lo = i > 0 ? start[i - 1] : 0;

        fs->order[fs->norder++] = i;
        for (size_t c = start[i]; c-- > lo;) /* pushed backwards: popped in bucket order */
            stack[depth++] = child[c];
    }
    ok = true;
out:
    free(start);
    free(child);
    free(stack);
    return ok;
}

void sched_fairshare_update(struct sched_fairshare *fs)
{
    double total;

    if (!build_order(fs))
        return; /* out of memory: the factors of the last update stand */
    /* Sums from the leaves up: children come after their parent in the order. */
    for (size_t i = 0; i < fs->n; i++) {
        fs->nodes[i].sibling_shares = 0;
        if (fs->nodes[i].user[0] == '\0')
            fs->nodes[i].usage = 0;
    }
    for (size_t k = fs->norder; k-- > 1;) {
        const struct fs_node *x = &fs->nodes[fs->order[k]];

        fs->nodes[x->parent].usage += x->usage;
        fs->nodes[x->parent].sibling_shares += x->shares;
    }
    total = fs->nodes[0].usage;
    fs->nodes[0].norm_shares = 1.0;
    fs->nodes[0].eff_usage = total > 0 ? 1.0 : 0.0;
    fs->nodes[0].factor = 1.0;
    for (size_t k = 1; k < fs->norder; k++) {
        struct fs_node *x = &fs->nodes[fs->order[k]];
        const struct fs_node *p = &fs->nodes[x->parent];
        double part = p->sibling_shares > 0 ? x->shares / p->sibling_shares : 0;
        double norm_usage = total > 0 ? x->usage / total : 0;

        x->norm_shares = part * p->norm_shares;
        x->eff_usage =
            x->parent == 0 ? norm_usage : norm_usage + (p->eff_usage - norm_usage) * part;
        x->factor = x->norm_shares > 0 ? exp2(-x->eff_usage / x->norm_shares) : 0;
    }
}

double sched_fairshare_factor(const struct sched_fairshare *fs, int assoc)
{
    return assoc >= 0 && (size_t)assoc < fs->n ? fs->nodes[assoc].factor : 0;
}

size_t sched_fairshare_count(const struct sched_fairshare *fs)
{
    return fs->norder;
}

void sched_fairshare_entry(const struct sched_fairshare *fs, size_t i, struct sched_fs_entry *e)
{
    const struct fs_node *x = &fs->nodes[fs->order[i]];

    *e = (struct sched_fs_entry){
        .account = x->account,
        .user = x->user,
        .parent = x->parent >= 0 ? fs->nodes[x->parent].account : "",
        .depth = x->depth,
        .shares = x->shares,
        .norm_shares = x->norm_shares,
        .usage = x->usage,
        .eff_usage = x->eff_usage,
        .fairshare = x->factor,
    };
}
