/*
 * scontrol_resv.c: advance reservations as Slurm's scontrol and sinfo read and show them
 * (scontrol_resv.h): the KEY=VALUE words of `scontrol create reservation` and `scontrol
 * update ReservationName=NAME` turned into a ReservationRequest, and a reservation turned
 * into scontrol's Key=Value record and into sinfo -T's line.
 *
 * Keys, any case: ReservationName= (Reservation= too), StartTime= and EndTime= (sbatch
 * --begin's TIME: now, now+N[unit], YYYY-MM-DD[THH:MM[:SS]], HH:MM[:SS]), Duration= (Slurm's
 * time: MIN, H:M:S, D-H:M:S, ...; UNLIMITED for no end), Nodes= (a hostlist, checked here and
 * sent as typed, since gschedd keeps the expression), Users=a,b, Accounts=x,y and Flags= (the
 * recurrence flags HOURLY, DAILY, WEEKDAY, WEEKEND, WEEKLY, and MAINT, IGNORE_JOBS, OVERLAP,
 * PURGE_COMP[=TIME], TIME as Duration='s, default 5 minutes, FLEX, MAGNETIC, REPLACE_DOWN,
 * REPLACE and ANY_NODES) and Licenses=NAME[:COUNT],... (the cluster's [[license]]s kept for
 * its jobs; a reservation of licenses needs no Nodes=). On
 * update, Users, Accounts and Flags also take Slurm's edits, Users+=a / Users-=a or
 * Users=+a / Users=-a, which gschedd applies to the stored list. Slurm's other keys
 * (CoreCnt=, BurstBuffer=, ...) and flags (STATIC_ALLOC, ...) are refused by name rather
 * than ignored: a reservation that silently lacks a flag the operator asked for is worse
 * than an error.
 * Whether the nodes and users exist, and who may reserve, is gschedd's to say.
 *
 * Pure: no daemon, no clock (the caller passes now), no stdout; local time for dates.
 */
#include "slurm/scontrol_resv.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/error.h"
#include "common/hostlist.h"
#include "common/jobspec_license.h"
#include "common/units.h"
#include "slurm/slurm_fmt.h"
#include "slurm/sbatch.h"

enum key {
    K_NAME,
    K_START,
    K_END,
    K_DURATION,
    K_NODES,
    K_USERS,
    K_ACCOUNTS,
    K_TRES,
    K_FLAGS,
    K_LICENSES,
    NKEYS
};

static const char *const key_names[NKEYS] = {
    [K_NAME] = "ReservationName", [K_START] = "StartTime", [K_END] = "EndTime",
    [K_DURATION] = "Duration",    [K_NODES] = "Nodes",     [K_USERS] = "Users",
    [K_ACCOUNTS] = "Accounts",    [K_TRES] = "TRES",       [K_FLAGS] = "Flags",
    [K_LICENSES] = "Licenses",
};

/* The words' values by key: set (KEY=), added (KEY+=) and taken away (KEY-=). */
struct words {
    const char *val[NKEYS], *add[NKEYS], *rm[NKEYS];
};

static const struct {
    const char *name;
    uint32_t bit;
} flag_names[] = {
    {"HOURLY", GS__RESERVATION_FLAG__RESERVATION_FLAG_HOURLY},
    {"DAILY", GS__RESERVATION_FLAG__RESERVATION_FLAG_DAILY},
    {"WEEKDAY", GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKDAY},
    {"WEEKEND", GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKEND},
    {"WEEKLY", GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKLY},
    {"MAINT", GS__RESERVATION_FLAG__RESERVATION_FLAG_MAINT},
    {"IGNORE_JOBS", GS__RESERVATION_FLAG__RESERVATION_FLAG_IGNORE_JOBS},
    {"OVERLAP", GS__RESERVATION_FLAG__RESERVATION_FLAG_OVERLAP},
    {"PURGE_COMP", GS__RESERVATION_FLAG__RESERVATION_FLAG_PURGE_COMP},
    {"FLEX", GS__RESERVATION_FLAG__RESERVATION_FLAG_FLEX},
    {"MAGNETIC", GS__RESERVATION_FLAG__RESERVATION_FLAG_MAGNETIC},
    {"REPLACE_DOWN", GS__RESERVATION_FLAG__RESERVATION_FLAG_REPLACE_DOWN},
    {"REPLACE", GS__RESERVATION_FLAG__RESERVATION_FLAG_REPLACE},
    {"ANY_NODES", GS__RESERVATION_FLAG__RESERVATION_FLAG_ANY_NODES},
};

/* Writes why and returns -EINVAL. */
static int fail(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

static int find_key(const char *word, size_t klen)
{
    for (int k = 0; k < NKEYS; k++) {
        if (strlen(key_names[k]) == klen && strncasecmp(word, key_names[k], klen) == 0)
            return k;
    }
    /* Slurm's scontrol takes Reservation= for the name as well. */
    if (klen == strlen("Reservation") && strncasecmp(word, "Reservation", klen) == 0)
        return K_NAME;
    return -1;
}

/* Each word's value into w by key and operator; a key given twice with the same operator
 * keeps its last value, as in Slurm. */
static int collect(int argc, char *const *argv, Gs__ReservationAction action, struct words *w,
                   char *why, size_t size)
{
    for (int i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        size_t klen = eq != NULL ? (size_t)(eq - argv[i]) : 0;
        char op = klen > 1 && (eq[-1] == '+' || eq[-1] == '-') ? eq[-1] : '\0';
        int k;

        if (eq == NULL || eq == argv[i])
            return fail(why, size, "'%s' is not KEY=VALUE", argv[i]);
        k = find_key(argv[i], op != '\0' ? klen - 1 : klen);
        if (k < 0)
            return fail(why, size,
                        "%s: unknown or unsupported reservation key '%.*s' (gsched takes "
                        "ReservationName, StartTime, EndTime, Duration, Nodes, Users, Accounts, "
                        "TRES, Flags, Licenses)",
                        argv[i], (int)(op != '\0' ? klen - 1 : klen), argv[i]);
        if (op != '\0' && k != K_USERS && k != K_ACCOUNTS && k != K_FLAGS)
            return fail(why, size, "%s: only Users, Accounts and Flags take %c=", argv[i], op);
        if (op != '\0' && action != GS__RESERVATION_ACTION__RESERVATION_ACTION_UPDATE)
            return fail(why, size, "%s: %c= edits a reservation; a create gives whole lists",
                        argv[i], op);
        if (op == '+')
            w->add[k] = eq + 1;
        else if (op == '-')
            w->rm[k] = eq + 1;
        else
            w->val[k] = eq + 1;
    }
    return 0;
}

static int read_name(struct scontrol_resv *r, const char *name, char *why, size_t size)
{
    if (name == NULL)
        return 0;
    /* A blank would break the Key=Value records every view prints. */
    for (const char *p = name; *p != '\0'; p++) {
        if (isspace((unsigned char)*p) || *p == ',' || *p == '=')
            return fail(why, size, "ReservationName=%s: a name has no blanks, ',' or '='", name);
    }
    r->resv.name = (char *)name;
    return 0;
}

static int read_time(const char *key, const char *text, uint64_t now_ms, uint64_t *ret_ms,
                     char *why, size_t size)
{
    struct gs_error err;

    gs_error_clear(&err);
    if (gs_sbatch_parse_begin(text, now_ms, ret_ms, &err) < 0)
        return fail(why, size, "%s=%s: %s", key, text, err.msg);
    return 0;
}

/* Duration=: seconds, or GS_DURATION_INFINITE for UNLIMITED / infinite. */
static int read_duration(const char *text, uint64_t *ret_s, char *why, size_t size)
{
    uint64_t s;

    if (gs_parse_duration(text, &s) < 0 || s == 0)
        return fail(why, size,
                    "Duration=%s: not a duration (MIN, MIN:SEC, H:M:S, D-H, D-H:M, D-H:M:S or "
                    "UNLIMITED), or 0",
                    text);
    if (s != GS_DURATION_INFINITE && s > UINT64_MAX / 1000 / 2)
        return fail(why, size, "Duration=%s: too long", text);
    *ret_s = s;
    return 0;
}

/* StartTime=, EndTime= and Duration= into start_ms and end_ms, or end_from_start. */
static int read_times(struct scontrol_resv *r, const char *const *val, uint64_t now_ms, char *why,
                      size_t size)
{
    uint64_t dur = 0;
    int rc = 0;

    if (val[K_END] != NULL && val[K_DURATION] != NULL)
        return fail(why, size,
                    "EndTime=%s and Duration=%s: give one of them, not both (each sets the end)",
                    val[K_END], val[K_DURATION]);
    if (val[K_START] != NULL) {
        rc = read_time("StartTime", val[K_START], now_ms, &r->resv.start_ms, why, size);
        r->req.set_start = rc == 0;
    }
    if (rc == 0 && val[K_END] != NULL) {
        rc = read_time("EndTime", val[K_END], now_ms, &r->resv.end_ms, why, size);
        r->req.set_end = rc == 0;
        if (rc == 0 && r->req.set_start && r->resv.end_ms <= r->resv.start_ms)
            rc = fail(why, size, "EndTime=%s: not after StartTime=%s", val[K_END], val[K_START]);
    }
    if (rc == 0 && val[K_DURATION] != NULL) {
        rc = read_duration(val[K_DURATION], &dur, why, size);
        r->req.set_end = rc == 0;
        if (rc == 0 && dur == GS_DURATION_INFINITE)
            r->resv.end_ms = 0;
        else if (rc == 0 && r->req.set_start)
            r->resv.end_ms = r->resv.start_ms + dur * 1000;
        else if (rc == 0)
            r->end_from_start = true;
        r->duration_s = dur;
    }
    return rc;
}

/* TRES=gres/gpu=N (or gres/gpu:N): GPUs kept in all; 0 back to whole nodes. Other TRES no. */
static int read_tres(struct scontrol_resv *r, const char *tres, char *why, size_t size)
{
    const char *num;
    char *end;
    unsigned long n;

    if (tres == NULL)
        return 0;
    if (strncasecmp(tres, "gres/gpu", 8) != 0 || (tres[8] != '=' && tres[8] != ':'))
        return fail(why, size,
                    "TRES=%s: only gres/gpu=N (GPUs kept in all, split over the nodes) is "
                    "supported",
                    tres);
    num = tres + 9;
    n = strtoul(num, &end, 10);
    if (num[0] < '0' || num[0] > '9' || *end != '\0' || n > 1000000)
        return fail(why, size, "TRES=%s: N must be a count of GPUs", tres);
    r->resv.gpus = (uint32_t)n;
    r->req.set_gpus = true;
    return 0;
}

/* Licenses=NAME[:COUNT],... as sbatch -L reads them (an update's empty list drops them). */
static int read_licenses(struct scontrol_resv *r, const char *text, Gs__ReservationAction action,
                         char *why, size_t size)
{
    struct gs_job_license *l = NULL;
    char msg[160];
    size_t n = 0;
    int rc;

    if (text == NULL)
        return 0;
    if (text[0] == '\0' && action != GS__RESERVATION_ACTION__RESERVATION_ACTION_UPDATE)
        return fail(why, size, "Licenses= is empty: name at least one (NAME[:COUNT])");
    rc = gs_license_list_parse(text, &l, &n, msg, sizeof(msg));
    if (rc == -EINVAL)
        return fail(why, size, "Licenses=%s: %s", text, msg);
    if (rc < 0)
        return rc;
    r->lic = calloc(n + 1, sizeof(*r->lic));
    r->lic_ptrs = calloc(n + 1, sizeof(*r->lic_ptrs));
    if (r->lic == NULL || r->lic_ptrs == NULL) {
        gs_license_list_free(l, n);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) { /* the names move into the messages */
        gs__job_license__init(&r->lic[i]);
        r->lic[i].name = l[i].name;
        r->lic[i].count = l[i].count;
        r->lic_ptrs[i] = &r->lic[i];
        l[i].name = NULL;
    }
    r->nlic = n;
    gs_license_list_free(l, n);
    r->resv.licenses = r->lic_ptrs;
    r->resv.n_licenses = n;
    r->req.set_licenses = true;
    return 0;
}

static int read_nodes(struct scontrol_resv *r, const char *nodes, char *why, size_t size)
{
    struct gs_error err;
    char **names = NULL;
    size_t n = 0;
    int rc;

    if (nodes == NULL)
        return 0;
    if (nodes[0] == '\0')
        return fail(why, size, "Nodes= is empty: a reservation holds at least one node");
    gs_error_clear(&err);
    rc = gs_hostlist_expand(nodes, &names, &n, &err);
    gs_hostlist_free(names);
    if (rc == -ENOMEM)
        return rc;
    if (rc < 0)
        return fail(why, size, "Nodes=%s, column %d: %s", nodes, err.col, err.msg);
    r->resv.nodes = (char *)nodes;
    r->req.set_nodes = true;
    return 0;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i]);
    free(v);
}

/*
 * "a,b" into a malloc'd array of malloc'd names. With signs allowed, Slurm's "+a,+b" / "-a"
 * (names to add to or take from the stored list) are read too, their sign in *ret_sign
 * ('+', '-', or '\0' for a plain list), every name signed alike; without, a sign is an
 * error. key is what why names with the text after it ("Users=", "Users+=").
 */
static int read_list(const char *key, const char *text, bool signs, char ***ret_v, size_t *ret_n,
                     char *ret_sign, char *why, size_t size)
{
    size_t cap = 1, n = 0;
    char **v, sign = '\0';
    int rc = 0;

    for (const char *p = text; *p != '\0'; p++)
        cap += *p == ',';
    v = calloc(cap, sizeof(*v));
    if (v == NULL)
        return -ENOMEM;
    for (const char *p = text; text[0] != '\0';) {
        size_t len = strcspn(p, ",");

        if (len == 0) {
            rc = fail(why, size, "%s%s: an empty name in the list", key, text);
            goto out;
        }
        if ((p[0] == '+' || p[0] == '-') && !signs) {
            rc = fail(why, size,
                      "%s%s: a name cannot start with '%c' here (names to add or take away: "
                      "+NAME, -NAME, on update)",
                      key, text, p[0]);
            goto out;
        }
        if (n > 0 && (p[0] == '+' || p[0] == '-' ? p[0] : '\0') != sign) {
            rc = fail(why, size,
                      "%s%s: give the whole list, or names to add (+NAME) or to take away "
                      "(-NAME), not a mix",
                      key, text);
            goto out;
        }
        if (p[0] == '+' || p[0] == '-') {
            sign = p[0];
            p++, len--;
            if (len == 0) {
                rc = fail(why, size, "%s%s: a '%c' without a name", key, text, sign);
                goto out;
            }
        }
        v[n] = strndup(p, len);
        if (v[n] == NULL) {
            rc = -ENOMEM;
            goto out;
        }
        n++;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    *ret_v = v;
    *ret_n = n;
    if (ret_sign != NULL)
        *ret_sign = sign;
    v = NULL;
out:
    free_list(v, n);
    return rc;
}

/* KEY+= or KEY-= words: at least one name, none signed. */
static int read_edit(int k, char op, const char *text, char ***ret_v, size_t *ret_n, char *why,
                     size_t size)
{
    char label[24];

    snprintf(label, sizeof(label), "%s%c=", key_names[k], op);
    if (text[0] == '\0')
        return fail(why, size, "%s is empty: name at least one", label);
    return read_list(label, text, false, ret_v, ret_n, NULL, why, size);
}

/* Users or Accounts (k) into the request: KEY= (the whole list, or on update names signed
 * +NAME / -NAME), KEY+= and KEY-=. */
static int read_one_list(struct scontrol_resv *r, const struct words *w, int k,
                         Gs__ReservationAction action, char *why, size_t size)
{
    bool users = k == K_USERS, update = action == GS__RESERVATION_ACTION__RESERVATION_ACTION_UPDATE;
    char ***set_v = users ? &r->resv.users : &r->resv.accounts;
    size_t *set_n = users ? &r->resv.n_users : &r->resv.n_accounts;
    char ***add_v = users ? &r->req.add_users : &r->req.add_accounts;
    size_t *add_n = users ? &r->req.n_add_users : &r->req.n_add_accounts;
    char ***rm_v = users ? &r->req.remove_users : &r->req.remove_accounts;
    size_t *rm_n = users ? &r->req.n_remove_users : &r->req.n_remove_accounts;
    char label[24], sign = '\0', **v = NULL;
    size_t n = 0;
    int rc = 0;

    if (w->val[k] != NULL) {
        /* An update may empty a list (moving a reservation from users to accounts). */
        if (w->val[k][0] == '\0' && !update)
            return fail(why, size, "%s= is empty: name at least one", key_names[k]);
        snprintf(label, sizeof(label), "%s=", key_names[k]);
        rc = read_list(label, w->val[k], update, &v, &n, &sign, why, size);
        if (rc < 0)
            return rc;
        if (sign == '\0') {
            *set_v = v, *set_n = n;
            if (users)
                r->req.set_users = true;
            else
                r->req.set_accounts = true;
        } else if (sign == '+') {
            *add_v = v, *add_n = n;
        } else {
            *rm_v = v, *rm_n = n;
        }
    }
    if (w->add[k] != NULL) {
        if (sign == '+')
            return fail(why, size, "%s: give names to add once (%s=+NAME or %s+=NAME)",
                        key_names[k], key_names[k], key_names[k]);
        if ((rc = read_edit(k, '+', w->add[k], add_v, add_n, why, size)) < 0)
            return rc;
    }
    if (w->rm[k] != NULL) {
        if (sign == '-')
            return fail(why, size, "%s: give names to take away once (%s=-NAME or %s-=NAME)",
                        key_names[k], key_names[k], key_names[k]);
        if ((rc = read_edit(k, '-', w->rm[k], rm_v, rm_n, why, size)) < 0)
            return rc;
    }
    return 0;
}

static int read_lists(struct scontrol_resv *r, const struct words *w, Gs__ReservationAction action,
                      char *why, size_t size)
{
    int rc = read_one_list(r, w, K_USERS, action, why, size);

    return rc == 0 ? read_one_list(r, w, K_ACCOUNTS, action, why, size) : rc;
}

/* PURGE_COMP's "=TIME" (the part after '='), in seconds, into *purge_s. */
static int purge_time(const char *label, const char *text, const char *time, uint32_t *purge_s,
                      char *why, size_t size)
{
    uint64_t s;

    if (gs_parse_duration(time, &s) < 0 || s == 0 || s > UINT32_MAX)
        return fail(why, size,
                    "%s%s: PURGE_COMP=%s: not a time (MIN, MIN:SEC, H:M:S, D-H, D-H:M or "
                    "D-H:M:S, above 0)",
                    label, text, time);
    *purge_s = (uint32_t)s;
    return 0;
}

/* A Flags word's names into bits, PURGE_COMP's time (when given) into *purge_s; label is
 * the word's key and operator, for why. */
static int flag_bits(const char *label, const char *text, bool signs, uint32_t *bits, char *sign,
                     uint32_t *purge_s, char *why, size_t size)
{
    char **v = NULL;
    size_t n = 0;
    int rc = read_list(label, text, signs, &v, &n, sign, why, size);

    *bits = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *eq = strchr(v[i], '=');
        size_t f = 0;

        if (eq != NULL)
            *eq = '\0'; /* only PURGE_COMP takes a value */
        while (f < sizeof(flag_names) / sizeof(flag_names[0]) &&
               strcasecmp(v[i], flag_names[f].name) != 0)
            f++;
        if (f == sizeof(flag_names) / sizeof(flag_names[0]) ||
            (eq != NULL && flag_names[f].bit != GS__RESERVATION_FLAG__RESERVATION_FLAG_PURGE_COMP))
            rc = fail(why, size,
                      "%s%s: flag %s%s%s is not supported (gsched takes HOURLY, DAILY, WEEKDAY, "
                      "WEEKEND, WEEKLY, MAINT, IGNORE_JOBS, OVERLAP, PURGE_COMP[=TIME], FLEX, "
                      "MAGNETIC, REPLACE_DOWN, REPLACE and ANY_NODES)",
                      label, text, v[i], eq != NULL ? "=" : "", eq != NULL ? eq + 1 : "");
        else if (eq != NULL)
            rc = purge_time(label, text, eq + 1, purge_s, why, size);
        if (rc == 0)
            *bits |= flag_names[f].bit;
    }
    free_list(v, n);
    return rc;
}

static int read_flags(struct scontrol_resv *r, const struct words *w, Gs__ReservationAction action,
                      char *why, size_t size)
{
    bool update = action == GS__RESERVATION_ACTION__RESERVATION_ACTION_UPDATE;
    uint32_t bits, purge = 0; /* a time on Flags-=PURGE_COMP=T means nothing */
    char sign = '\0';
    int rc = 0;

    if (w->val[K_FLAGS] != NULL) {
        rc = flag_bits("Flags=", w->val[K_FLAGS], update, &bits, &sign, &r->resv.purge_comp_s, why,
                       size);
        if (rc == 0 && sign == '+')
            r->req.add_flags |= bits;
        else if (rc == 0 && sign == '-')
            r->req.remove_flags |= bits;
        else if (rc == 0)
            r->resv.flags = bits, r->req.set_flags = true;
    }
    if (rc == 0 && w->add[K_FLAGS] != NULL) {
        rc = w->add[K_FLAGS][0] == '\0' ? fail(why, size, "Flags+= is empty: name at least one")
                                        : flag_bits("Flags+=", w->add[K_FLAGS], false, &bits, NULL,
                                                    &r->resv.purge_comp_s, why, size);
        r->req.add_flags |= rc == 0 ? bits : 0;
    }
    if (rc == 0 && w->rm[K_FLAGS] != NULL) {
        rc = w->rm[K_FLAGS][0] == '\0'
                 ? fail(why, size, "Flags-= is empty: name at least one")
                 : flag_bits("Flags-=", w->rm[K_FLAGS], false, &bits, NULL, &purge, why, size);
        r->req.remove_flags |= rc == 0 ? bits : 0;
    }
    return rc;
}

/* What each action cannot do without, in Slurm's rules. */
static int check_complete(const struct scontrol_resv *r, const char *const *val,
                          Gs__ReservationAction action, char *why, size_t size)
{
    const Gs__ReservationRequest *q = &r->req;

    if (action == GS__RESERVATION_ACTION__RESERVATION_ACTION_UPDATE) {
        if (val[K_NAME] == NULL || val[K_NAME][0] == '\0')
            return fail(why, size, "ReservationName= is required: which reservation to update");
        if (!q->set_start && !q->set_end && !q->set_nodes && !q->set_users && !q->set_accounts &&
            !q->set_gpus && !q->set_flags && !q->set_licenses && q->n_add_users == 0 &&
            q->n_remove_users == 0 && q->n_add_accounts == 0 && q->n_remove_accounts == 0 &&
            q->add_flags == 0 && q->remove_flags == 0)
            return fail(why, size,
                        "nothing to update: give StartTime=, EndTime=, Duration=, Nodes=, "
                        "Users=, Accounts=, TRES=, Flags= or Licenses= (or Users+=, Users-=, "
                        "...)");
        return 0;
    }
    if (!r->req.set_start)
        return fail(why, size,
                    "StartTime= is required to create a reservation (now, "
                    "now+1hour, 2026-12-05T10:00, ...)");
    if (!r->req.set_end)
        return fail(why, size,
                    "EndTime= or Duration= is required to create a reservation "
                    "(Duration=UNLIMITED for no end)");
    if (!r->req.set_nodes && !r->req.set_licenses)
        return fail(why, size,
                    "Nodes= or Licenses= is required to create a reservation (a hostlist, "
                    "node[1-4]; licenses, matlab:2)");
    if (!r->req.set_users && !r->req.set_accounts)
        return fail(why, size,
                    "Users= or Accounts= is required to create a reservation "
                    "(who may run in it)");
    return 0;
}

int scontrol_resv_parse(struct scontrol_resv *r, Gs__ReservationAction action, int argc,
                        char *const *argv, uint64_t now_ms, char *why, size_t why_size)
{
    struct words w = {0};
    const char *const *val = w.val;
    int rc;

    memset(r, 0, sizeof(*r));
    gs__reservation_request__init(&r->req);
    gs__reservation__init(&r->resv);
    r->req.action = action;
    r->req.reservation = &r->resv;
    if (action != GS__RESERVATION_ACTION__RESERVATION_ACTION_CREATE &&
        action != GS__RESERVATION_ACTION__RESERVATION_ACTION_UPDATE)
        return fail(why, why_size, "only create and update take KEY=VALUE words");
    rc = collect(argc, argv, action, &w, why, why_size);
    if (rc == 0)
        rc = read_name(r, val[K_NAME], why, why_size);
    if (rc == 0)
        rc = read_times(r, val, now_ms, why, why_size);
    if (rc == 0)
        rc = read_nodes(r, val[K_NODES], why, why_size);
    if (rc == 0)
        rc = read_lists(r, &w, action, why, why_size);
    if (rc == 0)
        rc = read_flags(r, &w, action, why, why_size);
    if (rc == 0)
        rc = read_tres(r, val[K_TRES], why, why_size);
    if (rc == 0)
        rc = read_licenses(r, val[K_LICENSES], action, why, why_size);
    if (rc == 0)
        rc = check_complete(r, val, action, why, why_size);
    if (rc == -ENOMEM)
        snprintf(why, why_size, "out of memory");
    if (rc < 0)
        scontrol_resv_release(r);
    return rc;
}

void scontrol_resv_release(struct scontrol_resv *r)
{
    if (r == NULL)
        return;
    free_list(r->resv.users, r->resv.n_users);
    free_list(r->resv.accounts, r->resv.n_accounts);
    free_list(r->req.add_users, r->req.n_add_users);
    free_list(r->req.remove_users, r->req.n_remove_users);
    free_list(r->req.add_accounts, r->req.n_add_accounts);
    free_list(r->req.remove_accounts, r->req.n_remove_accounts);
    for (size_t i = 0; r->lic != NULL && i < r->nlic; i++)
        free(r->lic[i].name);
    free(r->lic);
    free(r->lic_ptrs);
    r->lic = NULL;
    r->lic_ptrs = NULL;
    r->nlic = 0;
    r->resv.licenses = NULL;
    r->resv.n_licenses = 0;
    r->resv.users = r->resv.accounts = NULL;
    r->resv.n_users = r->resv.n_accounts = 0;
    r->req.add_users = r->req.remove_users = r->req.add_accounts = r->req.remove_accounts = NULL;
    r->req.n_add_users = r->req.n_remove_users = 0;
    r->req.n_add_accounts = r->req.n_remove_accounts = 0;
}

/* --- showing them -------------------------------------------------------------------------- */

/* "01:00:00", "2-00:00:00"; "UNLIMITED" without an end. */
static char *duration(const Gs__Reservation *r, char *out, size_t size)
{
    if (r->end_ms == 0)
        snprintf(out, size, "UNLIMITED");
    else
        slurm_fmt_secs_long(r->end_ms > r->start_ms ? (r->end_ms - r->start_ms) / 1000 : 0, out,
                            size);
    return out;
}

static void put_list(struct gs_buf *out, const char *key, char *const *v, size_t n)
{
    gs_buf_printf(out, "%s=", key);
    for (size_t i = 0; i < n; i++)
        gs_buf_printf(out, "%s%s", i > 0 ? "," : "", v[i]);
    if (n == 0)
        gs_buf_append_str(out, "(null)");
}

int scontrol_resv_record(struct gs_buf *out, const Gs__Reservation *r, bool oneliner)
{
    char start[48], end[48], dur[48];

    /* Written straight through: out keeps its first failure (gs_buf_error). */
    gs_buf_printf(
        out, "ReservationName=%s StartTime=%s EndTime=%s Duration=%s", slurm_or_null(r->name),
        slurm_fmt_date(r->start_ms, "Unknown", start, sizeof(start)),
        slurm_fmt_date(r->end_ms, "Unknown", end, sizeof(end)), duration(r, dur, sizeof(dur)));
    gs_buf_append_str(out, oneliner ? " " : "\n   ");
    gs_buf_printf(out, "Nodes=%s NodeCnt=%u ", slurm_or_null(r->nodes), r->node_count);
    if (r->gpus > 0)
        gs_buf_printf(out, "TRES=gres/gpu=%u ", r->gpus);
    for (size_t i = 0; i < r->n_licenses; i++) /* Slurm's Licenses=matlab:2,fluent:1 */
        gs_buf_printf(out, "%s%s:%u%s", i == 0 ? "Licenses=" : ",", r->licenses[i]->name,
                      r->licenses[i]->count, i + 1 == r->n_licenses ? " " : "");
    for (size_t f = 0, first = 1; f < sizeof(flag_names) / sizeof(flag_names[0]); f++) {
        if ((r->flags & flag_names[f].bit) == 0)
            continue;
        gs_buf_printf(out, "%s%s", first ? "Flags=" : ",", flag_names[f].name);
        if (flag_names[f].bit == GS__RESERVATION_FLAG__RESERVATION_FLAG_PURGE_COMP) {
            char t[48];

            gs_buf_printf(out, "=%s", slurm_fmt_secs_long(r->purge_comp_s, t, sizeof(t)));
        }
        first = 0;
    }
    if (r->flags != 0)
        gs_buf_append_str(out, " ");
    put_list(out, "Users", r->users, r->n_users);
    gs_buf_append_str(out, " ");
    put_list(out, "Accounts", r->accounts, r->n_accounts);
    gs_buf_printf(out, " State=%s", r->active ? "ACTIVE" : "INACTIVE");
    gs_buf_append_str(out, oneliner ? "\n" : "\n\n");
    return gs_buf_error(out);
}

int scontrol_resv_table(struct gs_buf *out, Gs__Reservation *const *v, size_t n, bool header)
{
    char start[48], end[48], dur[48];
    int width = 9, rc = 0;

    /* Slurm widens the name column to the longest name; the others are fixed. */
    for (size_t i = 0; i < n; i++) {
        int len = (int)strlen(slurm_or_null(v[i]->name));

        width = len > width ? len : width;
    }
    if (header)
        rc = gs_buf_printf(out, "%-*s  %8s  %19s  %19s  %11s  %s\n", width, "RESV_NAME", "STATE",
                           "START_TIME", "END_TIME", "DURATION", "NODELIST");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const Gs__Reservation *r = v[i];

        rc = gs_buf_printf(out, "%-*s  %8s  %19s  %19s  %11s  %s\n", width, slurm_or_null(r->name),
                           r->active ? "ACTIVE" : "INACTIVE",
                           slurm_fmt_date(r->start_ms, "Unknown", start, sizeof(start)),
                           slurm_fmt_date(r->end_ms, "Unknown", end, sizeof(end)),
                           duration(r, dur, sizeof(dur)), slurm_or_null(r->nodes));
    }
    return rc;
}
