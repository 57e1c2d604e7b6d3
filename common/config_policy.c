/*
 * config_policy.c: the scheduling-policy part of gsched.toml (common/config.h): [priority],
 * the weights of Slurm's multifactor priority and how usage is billed, and [[account]], the
 * fair-share tree under the implicit "root". config.c registers these readers in its section
 * tables and calls the defaults and cleanup here from gs_config_init / gs_config_release
 * (common/config_internal.h); the account look-ups of config.h live here as well.
 *
 * Accounts are checked as a whole once every [[account]] table is read (TOML gathers all of
 * them into one array, wherever they stand in the file): a parent must be "root" or an
 * account defined anywhere, and no account may be its own ancestor. Those problems are
 * reported at the parent key's value, like every other bad value; a cycle once, at the
 * parent of its first account in file order. A later gs_config_parse() over the same
 * configuration adds its accounts to those already there, as it does partitions.
 */
#include "common/config_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/jobspec.h"
#include "common/units.h"

#define CFG(c) ((struct gs_config *)(c)->target)
#define PRIO(c) (&CFG(c)->priority)

#define WEIGHT_MAX 1000000
#define SHARES_MAX 1000000
#define BILLING_MAX 1e6
#define USER_NAME_MAX 255
#define CYCLE_SHOWN 8 /* accounts a cycle message names before "..." */

/* ---- [priority] ---- */

void gs_config_priority_defaults(struct gs_config_priority *p)
{
    *p = (struct gs_config_priority){
        .max_age_s = 7 * 86400,
        .decay_half_life_s = 7 * 86400,
        .billing_cpu = 1.0,
        .billing_gpu = 10.0,
        .billing_mem_gib = 0.0,
    };
}

static void update_multifactor(struct gs_config_priority *p)
{
    p->multifactor = p->weight_age > 0 || p->weight_fairshare > 0 || p->weight_job_size > 0 ||
                     p->weight_partition > 0 || p->weight_qos > 0;
}

static void read_weight(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                        uint32_t *out)
{
    if (gs_schema_uint(c, v, path, 0, WEIGHT_MAX, out) == 0)
        update_multifactor(PRIO(c));
}

static void rd_weight_age(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_weight(c, v, "priority.weight_age", &PRIO(c)->weight_age);
}

static void rd_weight_fairshare(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_weight(c, v, "priority.weight_fairshare", &PRIO(c)->weight_fairshare);
}

static void rd_weight_job_size(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_weight(c, v, "priority.weight_job_size", &PRIO(c)->weight_job_size);
}

static void rd_weight_partition(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_weight(c, v, "priority.weight_partition", &PRIO(c)->weight_partition);
}

/* Integers count seconds, as the other durations of gsched.toml; zero is refused. */
static void rd_weight_qos(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_weight(c, v, "priority.weight_qos", &PRIO(c)->weight_qos);
}

static void rd_max_age(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_duration(c, v, "priority.max_age", 1, false, &PRIO(c)->max_age_s);
}

/* "0s" turns decay off; "unlimited" (a half-life never reached) means the same. */
static void rd_decay_half_life(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    uint64_t s;

    if (gs_schema_duration(c, v, "priority.decay_half_life", 1, true, &s) == 0)
        PRIO(c)->decay_half_life_s = s == GS_DURATION_INFINITE ? 0 : s;
}

static void rd_favor_small(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_bool(c, v, "priority.favor_small", &PRIO(c)->favor_small);
}

static void rd_billing_cpu(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_double(c, v, "priority.billing_cpu", 0, BILLING_MAX, &PRIO(c)->billing_cpu);
}

static void rd_billing_gpu(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_double(c, v, "priority.billing_gpu", 0, BILLING_MAX, &PRIO(c)->billing_gpu);
}

static void rd_billing_mem_gib(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_double(c, v, "priority.billing_mem_gib", 0, BILLING_MAX, &PRIO(c)->billing_mem_gib);
}

const struct gs_schema_key gs_config_priority_keys[] = {
    {"weight_age", rd_weight_age},           {"weight_fairshare", rd_weight_fairshare},
    {"weight_job_size", rd_weight_job_size}, {"weight_partition", rd_weight_partition},
    {"weight_qos", rd_weight_qos},           {"max_age", rd_max_age},
    {"decay_half_life", rd_decay_half_life}, {"favor_small", rd_favor_small},
    {"billing_cpu", rd_billing_cpu},         {"billing_gpu", rd_billing_gpu},
    {"billing_mem_gib", rd_billing_mem_gib}, {NULL, NULL},
};

void gs_config_read_priority(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_read_section(c, v, "priority");
}

/* ---- [[account]] ---- */

static void free_account(struct gs_config_account *a)
{
    free(a->name);
    free(a->parent);
    gs_schema_strv_free(a->users);
}

void gs_config_accounts_free(struct gs_config *cfg)
{
    for (size_t i = 0; i < cfg->naccounts; i++)
        free_account(&cfg->accounts[i]);
    free(cfg->accounts);
    cfg->accounts = NULL;
    cfg->naccounts = 0;
}

static struct gs_config_account *current_account(struct gs_schema_ctx *c)
{
    return &CFG(c)->accounts[CFG(c)->naccounts - 1];
}

static bool one_word(const char *name)
{
    return gs_jobspec_name_ok(name) && strpbrk(name, " ,") == NULL;
}

static void rd_account_name(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *name = NULL;

    if (gs_schema_string(c, v, "account.name", &name) < 0 || name == NULL)
        return;
    if (!one_word(name)) {
        GS_SCHEMA_REPORT_AT(c, v, "account.name must be one word without ',' or '/'");
        goto out;
    }
    if (strcmp(name, GS_CONFIG_ROOT_ACCOUNT) == 0) {
        GS_SCHEMA_REPORT_AT(c, v,
                            "account.name cannot be \"%s\": it is the implicit top of the tree",
                            GS_CONFIG_ROOT_ACCOUNT);
        goto out;
    }
    for (size_t i = 0; i + 1 < CFG(c)->naccounts; i++) {
        const char *other = CFG(c)->accounts[i].name; /* NULL: one without a name */

        if (other != NULL && strcmp(other, name) == 0) {
            GS_SCHEMA_REPORT_AT(c, v, "account '%s' is defined twice", name);
            goto out;
        }
    }
    free(current_account(c)->name);
    current_account(c)->name = name;
    name = NULL;
out:
    free(name);
}

/* Whether it names a defined account is checked once all of them are read. */
static void rd_account_parent(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *parent = NULL;

    if (gs_schema_string(c, v, "account.parent", &parent) < 0 || parent == NULL)
        return;
    if (!one_word(parent)) {
        GS_SCHEMA_REPORT_AT(c, v, "account.parent must be one word without ',' or '/'");
        free(parent);
        return;
    }
    free(current_account(c)->parent);
    current_account(c)->parent = parent;
}

static void rd_account_shares(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "account.shares", 0, SHARES_MAX, &current_account(c)->shares);
}

bool gs_config_user_name_ok(const char *s, size_t len)
{
    if (len == 0 || len > USER_NAME_MAX || strlen(s) != len)
        return false;
    for (; *s != '\0'; s++) {
        if ((unsigned char)*s <= ' ' || *s == 0x7f || strchr(":,/", *s) != NULL)
            return false;
    }
    return true;
}

static void rd_account_users(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    struct gs_config_account *a = current_account(c);
    const struct gs_toml_value **items = NULL;
    size_t n = 0;
    bool ok = true;

    if (gs_schema_string_list(c, v, "account.users", &items, &n) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        const char *s = NULL;
        size_t len = 0;

        gs_toml_as_string(items[i], &s, &len);
        if (!gs_config_user_name_ok(s, len)) {
            GS_SCHEMA_REPORT_AT(c, items[i],
                                "account.users[%zu] must be a user name (1 to %d characters "
                                "without spaces, ':', ',' or '/')",
                                i, USER_NAME_MAX);
            ok = false;
        }
    }
    free(items);
    if (ok)
        gs_schema_strv(c, v, "account.users", &a->users, &a->nusers);
}

const struct gs_schema_key gs_config_account_keys[] = {
    {"name", rd_account_name},
    {"parent", rd_account_parent},
    {"shares", rd_account_shares},
    {"users", rd_account_users},
    {NULL, NULL},
};

/*
 * Appends "a -> b -> ... -> a" for the cycle through a (at most CYCLE_SHOWN names, then
 * "..."). Every account on the way has a defined parent.
 */
static int cycle_text(const struct gs_config *cfg, const struct gs_config_account *a,
                      struct gs_buf *out)
{
    const struct gs_config_account *cur = a;
    int rc = gs_buf_append_str(out, a->name);

    for (int shown = 1; rc == 0; shown++) {
        cur = gs_config_account(cfg, cur->parent);
        if (shown == CYCLE_SHOWN && cur != a)
            return gs_buf_append_str(out, " -> ...");
        rc = gs_buf_printf(out, " -> %s", cur->name);
        if (cur == a)
            break;
    }
    return rc;
}

/*
 * Whether following parents from a comes back to a, with a the first of the cycle in file
 * order (so that each cycle is reported once, at its first account).
 */
static bool first_on_a_cycle(const struct gs_config *cfg, const struct gs_config_account *a)
{
    const struct gs_config_account *cur = a;

    for (size_t steps = 0; steps <= cfg->naccounts; steps++) {
        if (cur->parent == NULL || strcmp(cur->parent, GS_CONFIG_ROOT_ACCOUNT) == 0)
            return false;
        cur = gs_config_account(cfg, cur->parent);
        if (cur == NULL || cur < a)
            return false;
        if (cur == a)
            return true;
    }
    return false; /* a cycle further up, not through a: reported at its own accounts */
}

/* Account a, read from table t: its parent is defined, and it is not its own ancestor. */
static void check_parent(struct gs_schema_ctx *c, const struct gs_config_account *a,
                         const struct gs_toml_value *t)
{
    const struct gs_toml_value *at = gs_toml_get(t, "parent");
    struct gs_buf chain = GS_BUF_INIT;

    if (at == NULL || a->parent == NULL || strcmp(a->parent, GS_CONFIG_ROOT_ACCOUNT) == 0)
        return; /* a parent left out is "root" */
    if (gs_config_account(CFG(c), a->parent) == NULL) {
        GS_SCHEMA_REPORT_AT(c, at,
                            "account.parent: no account '%s' is defined (a parent is \"%s\" or "
                            "the name of an [[account]])",
                            a->parent, GS_CONFIG_ROOT_ACCOUNT);
        return;
    }
    if (a->name == NULL || !first_on_a_cycle(CFG(c), a))
        return;
    if (cycle_text(CFG(c), a, &chain) < 0)
        c->enomem = true;
    else
        GS_SCHEMA_REPORT_AT(c, at, "account.parent makes a cycle: %s", chain.data);
    gs_buf_release(&chain);
}

static bool add_account(struct gs_schema_ctx *c)
{
    static const struct gs_config_account init = {.shares = 1};
    struct gs_config_account *a =
        gs_config_append(c, CFG(c)->accounts, &CFG(c)->naccounts, sizeof(*a), &init);

    if (a != NULL)
        CFG(c)->accounts = a;
    return a != NULL;
}

static void after_account(struct gs_schema_ctx *c, const struct gs_toml_value *t)
{
    struct gs_config_account *a = current_account(c);

    if (a->name == NULL)
        GS_SCHEMA_REPORT_AT(c, t, "account needs a name");
    if (a->parent == NULL)
        a->parent = gs_schema_strdup(c, GS_CONFIG_ROOT_ACCOUNT); /* NULL: c->enomem */
}

void gs_config_read_accounts(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    struct gs_config *cfg = CFG(c);
    size_t n = gs_toml_count(v), first = cfg->naccounts, k;

    gs_config_read_tables(c, v, "account", cfg->naccounts, GS_CONFIG_MAX_ACCOUNTS, add_account,
                          after_account);
    /* Now that every account is known: the same tables again, in the same order. */
    k = first;
    for (size_t i = 0; i < n && k < cfg->naccounts; i++) {
        const struct gs_toml_value *t = gs_toml_at(v, i);

        if (gs_toml_type(t) == GS_TOML_TABLE)
            check_parent(c, &cfg->accounts[k++], t);
    }
}

/* ---- look-ups ---- */

const struct gs_config_account *gs_config_account(const struct gs_config *cfg, const char *name)
{
    for (size_t i = 0; name != NULL && i < cfg->naccounts; i++) {
        const struct gs_config_account *a = &cfg->accounts[i];

        if (a->name != NULL && strcmp(a->name, name) == 0)
            return a;
    }
    return NULL;
}

bool gs_config_account_has(const struct gs_config_account *a, const char *user)
{
    for (size_t i = 0; a != NULL && user != NULL && i < a->nusers; i++) {
        if (strcmp(a->users[i], user) == 0)
            return true;
    }
    return false;
}

const struct gs_config_account *gs_config_user_account(const struct gs_config *cfg,
                                                       const char *user)
{
    for (size_t i = 0; i < cfg->naccounts; i++) {
        if (cfg->accounts[i].name != NULL && gs_config_account_has(&cfg->accounts[i], user))
            return &cfg->accounts[i];
    }
    return NULL;
}
