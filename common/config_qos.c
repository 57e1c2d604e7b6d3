/*
 * config_qos.c: [[qos]] in gsched.toml (common/config.h): the qualities of service a job
 * may ask for (sbatch -q, a job file's qos): a priority for the multifactor QOS factor, a
 * preemption tier and what its jobs undergo when preempted (preempt_mode: Slurm's
 * PreemptMode), limits on what one user or account runs in it at once, and the longest
 * time limit a job of it may have, and who may ask for it (users, accounts: Slurm's QOS
 * access through associations). config.c registers the reader; gschedd applies them
 * (scheduler/qos.c, scheduler/sched_policy.c, docs/policy.md). A job naming no QOS is
 * "normal": limits apply to it only when a [[qos]] of that name is configured.
 *
 * Whether each name in accounts is an [[account]] is checked once the whole file is read
 * (gs_config_qos_check_accounts, from config.c): TOML gathers every [[account]] into one
 * array wherever it stands, so it may come after the [[qos]] naming it.
 */
#include "common/config_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jobspec.h"
#include "common/units.h"

#define CFG(c) ((struct gs_config *)(c)->target)
#define LIMIT_MAX 1000000
#define TIER_MAX 100
#define USER_NAME_MAX 255   /* as account.users; the message of rd_users says it */
#define ACCESS_SHOWN_MAX 40 /* list entries gs_config_qos_access_text() names before "..." */

static struct gs_config_qos *current(struct gs_schema_ctx *c)
{
    return &CFG(c)->qos[CFG(c)->nqos - 1];
}

static void rd_name(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *name = NULL;

    if (gs_schema_string(c, v, "qos.name", &name) < 0 || name == NULL)
        return;
    if (!gs_jobspec_name_ok(name) || strpbrk(name, " ,") != NULL) {
        GS_SCHEMA_REPORT_AT(c, v, "qos.name must be one word without ',' or '/'");
        goto out;
    }
    for (size_t i = 0; i + 1 < CFG(c)->nqos; i++) {
        if (CFG(c)->qos[i].name != NULL && strcmp(CFG(c)->qos[i].name, name) == 0) {
            GS_SCHEMA_REPORT_AT(c, v, "qos '%s' is defined twice", name);
            goto out;
        }
    }
    free(current(c)->name);
    current(c)->name = name;
    name = NULL;
out:
    free(name);
}

static void rd_priority(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "qos.priority", 0, LIMIT_MAX, &current(c)->priority);
}

static void rd_tier(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "qos.tier", 0, TIER_MAX, &current(c)->tier);
}

static void rd_max_gpus_per_user(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "qos.max_gpus_per_user", 0, LIMIT_MAX, &current(c)->max_gpus_per_user);
}

static void rd_max_jobs_per_user(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "qos.max_jobs_per_user", 0, LIMIT_MAX, &current(c)->max_jobs_per_user);
}

static void rd_max_gpus_per_account(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "qos.max_gpus_per_account", 0, LIMIT_MAX,
                   &current(c)->max_gpus_per_account);
}

static void rd_max_jobs_per_account(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "qos.max_jobs_per_account", 0, LIMIT_MAX,
                   &current(c)->max_jobs_per_account);
}

static void rd_max_wall(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_duration(c, v, "qos.max_wall", 60, false, &current(c)->max_wall_s);
}

static const char *const preempt_modes[] = {"requeue", "cancel", "off"};

const char *gs_preempt_mode_name(enum gs_preempt_mode m)
{
    return (unsigned)m < sizeof(preempt_modes) / sizeof(preempt_modes[0]) ? preempt_modes[m] : "?";
}

static void rd_preempt_mode(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    const char *s;

    if (gs_toml_as_string(v, &s, NULL) == 0) {
        for (size_t i = 0; i < sizeof(preempt_modes) / sizeof(preempt_modes[0]); i++) {
            if (strcmp(s, preempt_modes[i]) == 0) {
                current(c)->preempt_mode = (enum gs_preempt_mode)i;
                return;
            }
        }
    }
    GS_SCHEMA_REPORT_AT(c, v, "qos.preempt_mode must be \"requeue\", \"cancel\" or \"off\"");
}

/* The rule of account.name (and "root", the implicit top every account is under). */
static bool account_name_ok(const char *s, size_t len)
{
    return strlen(s) == len && gs_jobspec_name_ok(s) && strpbrk(s, " ,") == NULL;
}

/*
 * A list of names (users or accounts): every entry is checked and reported at its place,
 * and the list is kept only when all of them are good, as account.users does.
 */
static void read_names(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                       bool (*ok)(const char *s, size_t len), const char *what, char ***out,
                       size_t *ret_n)
{
    const struct gs_toml_value **items = NULL;
    size_t n = 0;
    bool good = true;

    if (gs_schema_string_list(c, v, path, &items, &n) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        const char *s = NULL;
        size_t len = 0;

        gs_toml_as_string(items[i], &s, &len);
        if (!ok(s, len)) {
            GS_SCHEMA_REPORT_AT(c, items[i], "%s[%zu] must be %s", path, i, what);
            good = false;
        }
    }
    free(items);
    if (good)
        gs_schema_strv(c, v, path, out, ret_n);
}

static void rd_users(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_names(c, v, "qos.users", gs_config_user_name_ok, /* account.users' rules */
               "a user name (1 to 255 characters without spaces, ':', ',' or '/')",
               &current(c)->users, &current(c)->nusers);
}

static void rd_accounts(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_names(c, v, "qos.accounts", account_name_ok,
               "an account name (one word without ',' or '/')", &current(c)->accounts,
               &current(c)->naccounts);
}

const struct gs_schema_key gs_config_qos_keys[] = {
    {"name", rd_name},
    {"priority", rd_priority},
    {"tier", rd_tier},
    {"max_gpus_per_user", rd_max_gpus_per_user},
    {"max_jobs_per_user", rd_max_jobs_per_user},
    {"max_gpus_per_account", rd_max_gpus_per_account},
    {"max_jobs_per_account", rd_max_jobs_per_account},
    {"max_wall", rd_max_wall},
    {"preempt_mode", rd_preempt_mode},
    {"users", rd_users},
    {"accounts", rd_accounts},
    {NULL, NULL},
};

void gs_config_qos_free(struct gs_config *cfg)
{
    for (size_t i = 0; i < cfg->nqos; i++) {
        free(cfg->qos[i].name);
        gs_schema_strv_free(cfg->qos[i].users);
        gs_schema_strv_free(cfg->qos[i].accounts);
    }
    free(cfg->qos);
    cfg->qos = NULL;
    cfg->nqos = 0;
}

static bool add_qos(struct gs_schema_ctx *c)
{
    static const struct gs_config_qos init = {.max_wall_s = GS_DURATION_INFINITE};
    struct gs_config_qos *q = gs_config_append(c, CFG(c)->qos, &CFG(c)->nqos, sizeof(*q), &init);

    if (q != NULL)
        CFG(c)->qos = q;
    return q != NULL;
}

static void after_qos(struct gs_schema_ctx *c, const struct gs_toml_value *t)
{
    if (current(c)->name == NULL)
        GS_SCHEMA_REPORT_AT(c, t, "qos needs a name");
}

void gs_config_read_qos(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_config_read_tables(c, v, "qos", CFG(c)->nqos, GS_CONFIG_MAX_QOS, add_qos, after_qos);
}

const struct gs_config_qos *gs_config_qos(const struct gs_config *cfg, const char *name)
{
    if (name == NULL || name[0] == '\0')
        name = GS_CONFIG_DEFAULT_QOS;
    for (size_t i = 0; i < cfg->nqos; i++) {
        if (cfg->qos[i].name != NULL && strcmp(cfg->qos[i].name, name) == 0)
            return &cfg->qos[i];
    }
    return NULL;
}

enum gs_preempt_mode gs_config_qos_preempt_mode(const struct gs_config *cfg, const char *name)
{
    const struct gs_config_qos *q = gs_config_qos(cfg, name);

    return q != NULL ? q->preempt_mode : GS_PREEMPT_REQUEUE;
}

/*
 * Run over the document's qos array (NULL: none) after every section is read. Names that
 * are not account names were reported by rd_accounts and are skipped here; without any
 * [[account]] there is no tree to check against, and names are only compared at submit.
 */
void gs_config_qos_check_accounts(struct gs_schema_ctx *c, const struct gs_toml_value *qos)
{
    const struct gs_config *cfg = CFG(c);

    if (cfg->naccounts == 0 || gs_toml_type(qos) != GS_TOML_ARRAY)
        return;
    for (size_t i = 0; i < gs_toml_count(qos); i++) {
        const struct gs_toml_value *list = gs_toml_get(gs_toml_at(qos, i), "accounts");
        bool one = gs_toml_type(list) == GS_TOML_STRING;
        size_t n = one ? 1 : gs_toml_type(list) == GS_TOML_ARRAY ? gs_toml_count(list) : 0;

        for (size_t j = 0; j < n; j++) {
            const struct gs_toml_value *item = one ? list : gs_toml_at(list, j);
            const char *s = NULL;
            size_t len = 0;

            if (gs_toml_as_string(item, &s, &len) < 0 || !account_name_ok(s, len) ||
                strcmp(s, GS_CONFIG_ROOT_ACCOUNT) == 0 || gs_config_account(cfg, s) != NULL)
                continue;
            if (one)
                GS_SCHEMA_REPORT_AT(c, item, "qos.accounts: no account '%s' is defined", s);
            else
                GS_SCHEMA_REPORT_AT(c, item, "qos.accounts[%zu]: no account '%s' is defined", j, s);
        }
    }
}

static bool listed(char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; name != NULL && i < n; i++) {
        if (strcmp(names[i], name) == 0)
            return true;
    }
    return false;
}

bool gs_config_qos_restricted(const struct gs_config_qos *q)
{
    return q != NULL && (q->nusers > 0 || q->naccounts > 0);
}

bool gs_config_qos_admits(const struct gs_config *cfg, const struct gs_config_qos *q,
                          const char *user, const char *account)
{
    const struct gs_config_account *a;

    if (!gs_config_qos_restricted(q) || listed(q->users, q->nusers, user))
        return true;
    if (account == NULL || account[0] == '\0')
        account = GS_CONFIG_ROOT_ACCOUNT; /* a job without an account is charged under root */
    /* An account's sub-accounts inherit its access, as Slurm's child associations do. The
     * tree has no cycles (the reader refuses them); the bound only keeps a bad one finite. */
    for (size_t steps = 0; account != NULL && steps <= cfg->naccounts + 1; steps++) {
        if (listed(q->accounts, q->naccounts, account))
            return true;
        a = gs_config_account(cfg, account);
        account = a != NULL ? a->parent : NULL;
    }
    return false;
}

/* Appends "WHAT a, b, c" (at most ACCESS_SHOWN_MAX names, then "...") at *pos in out. */
static void append_names(char *out, size_t size, size_t *pos, const char *what, char *const *names,
                         size_t n)
{
    int w;

    for (size_t i = 0; i < n && *pos < size; i++) {
        if (i == ACCESS_SHOWN_MAX)
            w = snprintf(out + *pos, size - *pos, ", ...");
        else
            w = snprintf(out + *pos, size - *pos, "%s%s", i == 0 ? what : ", ", names[i]);
        *pos = w < 0 ? size : *pos + (size_t)w;
        if (i == ACCESS_SHOWN_MAX)
            break;
    }
}

void gs_config_qos_access_text(const struct gs_config_qos *q, char *out, size_t size)
{
    size_t pos = 0;

    if (size == 0)
        return;
    out[0] = '\0';
    append_names(out, size, &pos, "users ", q->users, q->nusers);
    if (q->nusers > 0 && q->naccounts > 0 && pos < size)
        pos += (size_t)snprintf(out + pos, size - pos, "; ");
    append_names(out, size, &pos, "accounts ", q->accounts, q->naccounts);
}
