/*
 * sreport_fmt.c: gschedd's ReportReply laid out as Slurm's sreport prints each report
 * (sreport_fmt.h: slurm_sreport_format). Pure: sreport_args.c reads the command line,
 * cmd_sreport.c sends the request between the two.
 *
 * `cluster Utilization`, as Slurm's sreport (the title block unless -n; with -p/-P too, as
 * Slurm prints it there, only the column lines becoming '|'-separated):
 *
 *     --------------------------------------------------------------------------------
 *     Cluster Utilization 2026-12-04T00:00:00 - 2026-12-04T23:59:59
 *     Usage reported in CPU Minutes
 *     --------------------------------------------------------------------------------
 *       Cluster Allocate     Down PLND Dow     Idle Reported
 *     --------- -------- -------- -------- -------- --------
 *        gsched     1234        0        0    56789    58023
 *
 * every field followed by a blank. The title's end is the window's end less a second, as
 * Slurm prints it. Cluster is 9 wide, TRES Name 14, both right-justified and cut with '+'
 * (Slurm's print_fields_str); a usage column is as wide as its largest figure has digits
 * in seconds, at least 8, and 9 more in the SecPer/MinPer/HourPer formats (room for
 * "(45.67%)"), so that no figure is ever cut; a column name longer than its column is cut
 * to it, as Slurm's header is ("Allocate"). With more than one TRES, or one other than
 * cpu, a TRES Name column follows Cluster and the unit line says "TRES Minutes"; one line
 * per TRES in the order -T gave them.
 *
 * The user reports, from ReportReply.users (what each user's jobs under each account were
 * allocated), under the same title block with the window's length after it, as Slurm
 * prints it for them:
 *
 *     --------------------------------------------------------------------------------
 *     Cluster/Account/User Utilization 2026-12-04T00:00:00 - 2026-12-04T23:59:59 (86400 secs)
 *     Usage reported in CPU Minutes
 *     --------------------------------------------------------------------------------
 *       Cluster         Account     Login     Proper Name     Used
 *     --------- --------------- --------- --------------- --------
 *        gsched            root                                 30
 *        gsched            root     carol      Carol Chen       30
 *        gsched         physics                                400
 *        gsched         physics     alice     Alice Smith      300
 *        gsched         physics       bob                      100
 *
 * - cluster AccountUtilizationByUser (above): per account, root first (the top of Slurm's
 *   tree) then by name, a line with the account's total and no Login, then one per user of
 *   it, by login.
 * - cluster UserUtilizationByAccount ("Cluster/User/Account Utilization", columns Cluster
 *   Login Proper Name Account Used): one line per (user, account), by Used descending, ties
 *   by login then account.
 * - user TopUsage ("Top N Users", the same columns): one line per user, their usage summed
 *   over their accounts, Account those accounts joined with ',' (in the order above); the
 *   TopCount (default 10) largest by Used, ties by login. The title's N is TopCount, as in
 *   Slurm, however many lines follow.
 *
 * Jobs that named no account are root's, as gschedd's fair share counts them (an account
 * named "root" is the same one). Account is 15 wide, Login 9, Proper Name 15 (the GECOS
 * name the caller's lookup gives; empty on an account's line), right-justified and cut with
 * '+' as Slurm's; Used is sized as the usage columns above, from the largest figure shown.
 * With more than one TRES, or one other than cpu, a TRES Name column comes just before Used
 * (where Slurm's default formats put it) and each account, user or (user, account) gets
 * one line per TRES, in -T's order; the sorting by Used is by the first TRES given. A
 * percentage is of the cluster's Reported time for that TRES, as Slurm computes it. A
 * report with no usage is the header lines alone.
 *
 * Figures: gschedd sends resource-milliseconds; seconds, minutes and hours are rounded to
 * the nearest whole number as Slurm's "%.0f" does (halves to even), a percentage is of
 * Reported with 2 decimals ("0.00%" when nothing was reported). A TRES gschedd has no record
 * of gets no line, in every report.
 *
 * PLND Down is what nodes in a whole-node MAINT reservation had that no job held, down or
 * not; Down is what other nodes down or drained had that no job held. Not shown: Slurm's
 * "Planned" column, since gschedd does not record time held for pending jobs, nor its
 * Energy column, which gschedd does not measure. gsched adds
 * one title line when gschedd's history starts inside the window ("History recorded since
 * ...: earlier time is not counted"), only in the table form so that -n/-p/-P keep Slurm's
 * line count.
 */
#include "slurm/sreport_fmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "slurm/slurm_fmt.h"

#define DASHES "--------------------------------------------------------------------------------"

/* The account of jobs that named none, as gschedd's fair share places them. */
#define ROOT "root"

/* --- the layout ---------------------------------------------------------------------------- */

enum column {
    C_CLUSTER,
    C_TRES,
    C_ALLOCATED,
    C_DOWN,
    C_PLND_DOWN,
    C_IDLE,
    C_REPORTED,
    C_ACCOUNT,
    C_LOGIN,
    C_PROPER,
    C_USED,
    C_COUNT,
};

static const char *const column_names[C_COUNT] = {
    [C_CLUSTER] = "Cluster",    [C_TRES] = "TRES Name",      [C_ALLOCATED] = "Allocated",
    [C_DOWN] = "Down",          [C_PLND_DOWN] = "PLND Down", [C_IDLE] = "Idle",
    [C_REPORTED] = "Reported",  [C_ACCOUNT] = "Account",     [C_LOGIN] = "Login",
    [C_PROPER] = "Proper Name", [C_USED] = "Used",
};

struct layout {
    const struct slurm_sreport_args *args;
    bool tres_column; /* more than one TRES, or not cpu */
    int ncols;
    enum column cols[C_COUNT]; /* those shown, in order */
    int width[C_COUNT];
};

static bool per_format(enum slurm_sreport_time t)
{
    return t == SLURM_SREPORT_SEC_PER || t == SLURM_SREPORT_MIN_PER || t == SLURM_SREPORT_HOUR_PER;
}

static const char *unit_name(enum slurm_sreport_time t)
{
    switch (t) {
    case SLURM_SREPORT_SECONDS:
        return "Seconds";
    case SLURM_SREPORT_HOURS:
        return "Hours";
    case SLURM_SREPORT_PERCENT:
        return "Percentage of Total";
    case SLURM_SREPORT_SEC_PER:
        return "Seconds/Percentage of Total";
    case SLURM_SREPORT_MIN_PER:
        return "Minutes/Percentage of Total";
    case SLURM_SREPORT_HOUR_PER:
        return "Hours/Percentage of Total";
    case SLURM_SREPORT_MINUTES:
    default:
        return "Minutes";
    }
}

static uint32_t top_count(const struct slurm_sreport_args *a)
{
    return a->top_count != 0 ? a->top_count : SLURM_SREPORT_TOP_DEFAULT;
}

static const Gs__TresUsage *find_tres(const Gs__ReportReply *r, const char *name)
{
    for (size_t i = 0; i < r->n_tres; i++) {
        if (r->tres[i]->name != NULL && strcmp(r->tres[i]->name, name) == 0)
            return r->tres[i];
    }
    return NULL;
}

/* Slurm's sreport_set_usage_col_width: the digits of the largest figure in seconds, >= 8. */
static int usage_width(uint64_t max_ms, enum slurm_sreport_time t)
{
    char digits[24];
    int width = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)(max_ms / 1000));

    if (width < 8)
        width = 8;
    return per_format(t) ? width + 9 : width;
}

/* The report's columns (TRES Name only where shown) and the text columns' widths. */
static void layout_init(struct layout *l, const struct slurm_sreport_args *a)
{
    static const enum column utilization[] = {C_CLUSTER,   C_TRES, C_ALLOCATED, C_DOWN,
                                              C_PLND_DOWN, C_IDLE, C_REPORTED};
    static const enum column account_first[] = {C_CLUSTER, C_ACCOUNT, C_LOGIN,
                                                C_PROPER,  C_TRES,    C_USED};
    static const enum column login_first[] = {C_CLUSTER, C_LOGIN, C_PROPER,
                                              C_ACCOUNT, C_TRES,  C_USED};
    bool util = a->report == SLURM_SREPORT_UTILIZATION;
    const enum column *cols = util                                         ? utilization
                              : a->report == SLURM_SREPORT_ACCOUNT_BY_USER ? account_first
                                                                           : login_first;
    size_t ncols = util ? sizeof(utilization) / sizeof(utilization[0])
                        : sizeof(account_first) / sizeof(account_first[0]);

    memset(l, 0, sizeof(*l));
    l->args = a;
    l->tres_column = a->ntres > 1 || strcmp(a->tres[0], "cpu") != 0;
    for (size_t i = 0; i < ncols; i++) {
        if (cols[i] != C_TRES || l->tres_column)
            l->cols[l->ncols++] = cols[i];
    }
    l->width[C_CLUSTER] = 9;
    l->width[C_TRES] = 14;
    l->width[C_ACCOUNT] = 15;
    l->width[C_LOGIN] = 9;
    l->width[C_PROPER] = 15;
}

/* A figure as -t asks: rounded seconds/minutes/hours, a percentage of reported_ms, or both. */
static void usage_text(uint64_t ms, uint64_t reported_ms, enum slurm_sreport_time t, char *buf,
                       size_t size)
{
    double pct = reported_ms > 0 ? (double)ms * 100.0 / (double)reported_ms : 0.0;
    double v;

    switch (t) {
    case SLURM_SREPORT_SECONDS:
    case SLURM_SREPORT_SEC_PER:
        v = (double)ms / 1000.0;
        break;
    case SLURM_SREPORT_HOURS:
    case SLURM_SREPORT_HOUR_PER:
        v = (double)ms / 3600000.0;
        break;
    default:
        v = (double)ms / 60000.0;
        break;
    }
    if (t == SLURM_SREPORT_PERCENT)
        snprintf(buf, size, "%.2f%%", pct);
    else if (per_format(t))
        snprintf(buf, size, "%.0f(%.2f%%)", v, pct);
    else
        snprintf(buf, size, "%.0f", v);
}

/* After the i-th field shown: a blank in the table, '|' when parsable, nothing after -P's last. */
static void end_field(const struct layout *l, int i, struct gs_buf *out)
{
    if (l->args->parsable == SLURM_SREPORT_TABLE)
        gs_buf_putc(out, ' ');
    else if (l->args->parsable == SLURM_SREPORT_PARSABLE || i != l->ncols - 1)
        gs_buf_putc(out, '|');
}

static void put_title(const struct layout *l, const Gs__ReportReply *r, struct gs_buf *out)
{
    static const char *const titles[] = {
        [SLURM_SREPORT_UTILIZATION] = "Cluster Utilization",
        [SLURM_SREPORT_ACCOUNT_BY_USER] = "Cluster/Account/User Utilization",
        [SLURM_SREPORT_USER_BY_ACCOUNT] = "Cluster/User/Account Utilization",
    };
    const struct slurm_sreport_args *a = l->args;
    enum slurm_sreport_time t = a->time_format;
    uint64_t secs = r->end_ms > r->start_ms ? (r->end_ms - r->start_ms) / 1000 : 0;
    char from[32], to[32], since[32];

    gs_buf_printf(out, "%s\n", DASHES);
    if (a->report == SLURM_SREPORT_TOP_USAGE)
        gs_buf_printf(out, "Top %u Users", (unsigned)top_count(a));
    else
        gs_buf_append_str(out, titles[a->report]);
    gs_buf_printf(
        out, " %s - %s", slurm_fmt_date(r->start_ms, "Unknown", from, sizeof(from)),
        slurm_fmt_date(r->end_ms >= 1000 ? r->end_ms - 1000 : 0, "Unknown", to, sizeof(to)));
    if (a->report != SLURM_SREPORT_UTILIZATION)
        gs_buf_printf(out, " (%llu secs)", (unsigned long long)secs);
    gs_buf_putc(out, '\n');
    if (t == SLURM_SREPORT_PERCENT)
        gs_buf_printf(out, "Usage reported in %s\n", unit_name(t));
    else
        gs_buf_printf(out, "Usage reported in %s %s\n", l->tres_column ? "TRES" : "CPU",
                      unit_name(t));
    if (a->parsable == SLURM_SREPORT_TABLE && r->known_since_ms > r->start_ms)
        gs_buf_printf(out, "History recorded since %s: earlier time is not counted\n",
                      slurm_fmt_date(r->known_since_ms, "Unknown", since, sizeof(since)));
    gs_buf_printf(out, "%s\n", DASHES);
}

/* The column names (cut to their columns, as Slurm's header), then the dashes. */
static void put_header(const struct layout *l, struct gs_buf *out)
{
    bool table = l->args->parsable == SLURM_SREPORT_TABLE;

    for (int i = 0; i < l->ncols; i++) {
        int w = l->width[l->cols[i]];

        if (table)
            gs_buf_printf(out, "%*.*s", w, w, column_names[l->cols[i]]);
        else
            gs_buf_append_str(out, column_names[l->cols[i]]);
        end_field(l, i, out);
    }
    gs_buf_putc(out, '\n');
    if (!table)
        return;
    for (int i = 0; i < l->ncols; i++) {
        for (int k = 0; k < l->width[l->cols[i]]; k++)
            gs_buf_putc(out, '-');
        gs_buf_putc(out, ' ');
    }
    gs_buf_putc(out, '\n');
}

/* The i-th field, text: cut with '+' and padded in the table (Slurm's print_fields_str). */
static void put_text(const struct layout *l, int i, const char *text, struct gs_buf *out)
{
    if (l->args->parsable == SLURM_SREPORT_TABLE) {
        slurm_sacct_cell(out, text, l->width[l->cols[i]]);
        return;
    }
    gs_buf_append_str(out, text);
    end_field(l, i, out);
}

/* The i-th field, a figure: never cut, the width fits every one (a wider one pushes right). */
static void put_figure(const struct layout *l, int i, uint64_t ms, uint64_t reported_ms,
                       struct gs_buf *out)
{
    char text[64];

    usage_text(ms, reported_ms, l->args->time_format, text, sizeof(text));
    if (l->args->parsable == SLURM_SREPORT_TABLE)
        gs_buf_printf(out, "%*s", l->width[l->cols[i]], text);
    else
        gs_buf_append_str(out, text);
    end_field(l, i, out);
}

/* --- cluster Utilization ------------------------------------------------------------------- */

static uint64_t usage_ms(const Gs__TresUsage *t, enum column col)
{
    switch (col) {
    case C_ALLOCATED:
        return t->allocated;
    case C_DOWN:
        return t->down;
    case C_PLND_DOWN:
        return t->plnd_down;
    case C_IDLE:
        return t->idle;
    default:
        return t->reported;
    }
}

static void utilization_widths(struct layout *l, const Gs__ReportReply *r)
{
    const struct slurm_sreport_args *a = l->args;

    for (int col = C_ALLOCATED; col <= C_REPORTED; col++) {
        uint64_t max_ms = 0;

        for (size_t i = 0; i < a->ntres; i++) {
            const Gs__TresUsage *t = find_tres(r, a->tres[i]);

            if (t != NULL && usage_ms(t, (enum column)col) > max_ms)
                max_ms = usage_ms(t, (enum column)col);
        }
        l->width[col] = usage_width(max_ms, a->time_format);
    }
}

static void put_row(const struct layout *l, const char *cluster, const Gs__TresUsage *t,
                    struct gs_buf *out)
{
    for (int i = 0; i < l->ncols; i++) {
        if (l->cols[i] == C_CLUSTER)
            put_text(l, i, cluster, out);
        else if (l->cols[i] == C_TRES)
            put_text(l, i, t->name, out);
        else
            put_figure(l, i, usage_ms(t, l->cols[i]), t->reported, out);
    }
    gs_buf_putc(out, '\n');
}

static int format_utilization(const Gs__ReportReply *r, const struct slurm_sreport_args *a,
                              struct gs_buf *out)
{
    const char *cluster = r->cluster != NULL ? r->cluster : "";
    struct layout l;

    layout_init(&l, a);
    utilization_widths(&l, r);
    if (!a->noheader) {
        put_title(&l, r, out);
        put_header(&l, out);
    }
    for (size_t i = 0; i < a->ntres; i++) {
        const Gs__TresUsage *t = find_tres(r, a->tres[i]);

        if (t != NULL)
            put_row(&l, cluster, t, out);
    }
    return gs_buf_error(out);
}

/* --- the user reports ---------------------------------------------------------------------- */

/* One (account, user) of the reply; or, for TopUsage, one user's sum over their entries. */
struct usage {
    const char *account;                 /* as shown: root for jobs that named none */
    const char *user;                    /* "" when gschedd sent none */
    uint64_t ms[SLURM_SREPORT_MAX_TRES]; /* allocated resource-ms, by args->tres */
    size_t first, n;                     /* TopUsage: the user's entries, in their array */
};

static const char *account_shown(const char *account)
{
    return account == NULL || account[0] == '\0' ? ROOT : account;
}

/* Accounts in the order shown: root first (the top of Slurm's tree), then by name. */
static int account_cmp(const char *a, const char *b)
{
    bool ra = strcmp(a, ROOT) == 0, rb = strcmp(b, ROOT) == 0;

    if (ra != rb)
        return ra ? -1 : 1;
    return strcmp(a, b);
}

static int by_account_user(const void *pa, const void *pb)
{
    const struct usage *a = pa, *b = pb;
    int c = account_cmp(a->account, b->account);

    return c != 0 ? c : strcmp(a->user, b->user);
}

static int by_user_account(const void *pa, const void *pb)
{
    const struct usage *a = pa, *b = pb;
    int c = strcmp(a->user, b->user);

    return c != 0 ? c : account_cmp(a->account, b->account);
}

/* By the first TRES's figure, largest first; ties by login, then account (TopUsage: none). */
static int by_used(const void *pa, const void *pb)
{
    const struct usage *a = pa, *b = pb;
    int c;

    if (a->ms[0] != b->ms[0])
        return a->ms[0] > b->ms[0] ? -1 : 1;
    c = strcmp(a->user, b->user);
    if (c != 0 || a->account == NULL || b->account == NULL)
        return c;
    return account_cmp(a->account, b->account);
}

/* The reply's users with the accounts as shown, sorted by cmp, each (account, user) once. */
static int collect(const Gs__ReportReply *r, const struct slurm_sreport_args *a,
                   int (*cmp)(const void *, const void *), struct usage **ret, size_t *ret_n)
{
    struct usage *u;
    size_t n = 0;

    *ret = NULL;
    *ret_n = 0;
    if (r->n_users == 0)
        return 0;
    u = calloc(r->n_users, sizeof(*u));
    if (u == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < r->n_users; i++) {
        const Gs__UserUsage *src = r->users[i];

        u[i].account = account_shown(src->account);
        u[i].user = src->user != NULL ? src->user : "";
        for (size_t k = 0; k < a->ntres; k++)
            u[i].ms[k] = strcmp(a->tres[k], "cpu") == 0 ? src->cpu : src->gpu;
    }
    qsort(u, r->n_users, sizeof(*u), cmp);
    for (size_t i = 0; i < r->n_users; i++) {
        if (n > 0 && cmp(&u[n - 1], &u[i]) == 0) {
            for (size_t k = 0; k < a->ntres; k++)
                u[n - 1].ms[k] += u[i].ms[k];
        } else {
            u[n++] = u[i];
        }
    }
    *ret = u;
    *ret_n = n;
    return 0;
}

/* TopUsage's lines: each user's sum over u (sorted by user), the largest count of them. */
static int top_users(const struct usage *u, size_t n, uint32_t count, size_t ntres,
                     struct usage **ret, size_t *ret_n)
{
    struct usage *tops;
    size_t ntops = 0, j;

    *ret = NULL;
    *ret_n = 0;
    if (n == 0)
        return 0;
    tops = calloc(n, sizeof(*tops));
    if (tops == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i = j) {
        struct usage *t = &tops[ntops++];

        t->user = u[i].user;
        t->first = i;
        for (j = i; j < n && strcmp(u[j].user, u[i].user) == 0; j++) {
            for (size_t k = 0; k < ntres; k++)
                t->ms[k] += u[j].ms[k];
        }
        t->n = j - i;
    }
    qsort(tops, ntops, sizeof(*tops), by_used);
    *ret = tops;
    *ret_n = ntops < count ? ntops : count;
    return 0;
}

/* Where the user reports' lines go: measured for Used's width first, then printed. */
struct sink {
    const struct layout *l;
    const Gs__ReportReply *r;
    const char *cluster;
    slurm_sreport_name_fn name;
    void *name_ctx;
    bool measure; /* only note the largest figure */
    uint64_t max_ms;
    struct gs_buf *out;
};

static void put_user_line(const struct sink *s, const char *account, const char *login,
                          const char *proper, const Gs__TresUsage *t, uint64_t ms)
{
    const struct layout *l = s->l;

    for (int i = 0; i < l->ncols; i++) {
        switch (l->cols[i]) {
        case C_CLUSTER:
            put_text(l, i, s->cluster, s->out);
            break;
        case C_ACCOUNT:
            put_text(l, i, account, s->out);
            break;
        case C_LOGIN:
            put_text(l, i, login, s->out);
            break;
        case C_PROPER:
            put_text(l, i, proper, s->out);
            break;
        case C_TRES:
            put_text(l, i, t->name, s->out);
            break;
        default:
            put_figure(l, i, ms, t->reported, s->out);
            break;
        }
    }
    gs_buf_putc(s->out, '\n');
}

/* The lines of one account (login ""), user or (user, account): one per TRES the reply has. */
static void put_usage(struct sink *s, const char *account, const char *login, const uint64_t *ms)
{
    const struct slurm_sreport_args *a = s->l->args;
    char proper[256] = "";

    if (!s->measure && login[0] != '\0' && s->name != NULL) {
        s->name(s->name_ctx, login, proper, sizeof(proper));
        proper[sizeof(proper) - 1] = '\0';
    }
    for (size_t k = 0; k < a->ntres; k++) {
        const Gs__TresUsage *t = find_tres(s->r, a->tres[k]);

        if (t == NULL)
            continue;
        if (s->measure) {
            if (ms[k] > s->max_ms)
                s->max_ms = ms[k];
            continue;
        }
        put_user_line(s, account, login, proper, t, ms[k]);
    }
}

/* AccountUtilizationByUser: u by account then user; each account's total, then its users. */
static void put_accounts(struct sink *s, const struct usage *u, size_t n)
{
    size_t j;

    for (size_t i = 0; i < n; i = j) {
        uint64_t total[SLURM_SREPORT_MAX_TRES] = {0};

        for (j = i; j < n && strcmp(u[j].account, u[i].account) == 0; j++) {
            for (size_t k = 0; k < SLURM_SREPORT_MAX_TRES; k++)
                total[k] += u[j].ms[k];
        }
        put_usage(s, u[i].account, "", total);
        for (size_t m = i; m < j; m++)
            put_usage(s, u[m].account, u[m].user, u[m].ms);
    }
}

/* UserUtilizationByAccount: each (user, account) of u, in u's order. */
static void put_pairs(struct sink *s, const struct usage *u, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put_usage(s, u[i].account, u[i].user, u[i].ms);
}

/* TopUsage: each of tops with its accounts (u's entries) joined with ','. */
static void put_tops(struct sink *s, const struct usage *u, const struct usage *tops, size_t n,
                     struct gs_buf *accounts)
{
    for (size_t i = 0; i < n; i++) {
        gs_buf_reset(accounts);
        for (size_t m = tops[i].first; !s->measure && m < tops[i].first + tops[i].n; m++)
            gs_buf_printf(accounts, "%s%s", m > tops[i].first ? "," : "", u[m].account);
        if (gs_buf_error(accounts) < 0) {
            gs_buf_fail(s->out, gs_buf_error(accounts));
            return;
        }
        put_usage(s, accounts->data != NULL ? accounts->data : "", tops[i].user, tops[i].ms);
    }
}

static int format_users(const Gs__ReportReply *r, const struct slurm_sreport_args *a,
                        slurm_sreport_name_fn name, void *name_ctx, struct gs_buf *out)
{
    struct usage *u = NULL, *tops = NULL;
    struct gs_buf accounts = GS_BUF_INIT;
    struct layout l;
    struct sink s = {.l = &l,
                     .r = r,
                     .cluster = r->cluster != NULL ? r->cluster : "",
                     .name = name,
                     .name_ctx = name_ctx,
                     .out = out};
    size_t n = 0, ntops = 0;
    int rc;

    rc = collect(r, a, a->report == SLURM_SREPORT_TOP_USAGE ? by_user_account : by_account_user, &u,
                 &n);
    if (rc == 0 && a->report == SLURM_SREPORT_USER_BY_ACCOUNT && n > 1)
        qsort(u, n, sizeof(*u), by_used);
    if (rc == 0 && a->report == SLURM_SREPORT_TOP_USAGE)
        rc = top_users(u, n, top_count(a), a->ntres, &tops, &ntops);
    if (rc < 0)
        goto out;
    layout_init(&l, a);
    for (int pass = 0; pass < 2; pass++) {
        s.measure = pass == 0;
        if (!s.measure) {
            l.width[C_USED] = usage_width(s.max_ms, a->time_format);
            if (!a->noheader) {
                put_title(&l, r, out);
                put_header(&l, out);
            }
        }
        if (a->report == SLURM_SREPORT_ACCOUNT_BY_USER)
            put_accounts(&s, u, n);
        else if (a->report == SLURM_SREPORT_TOP_USAGE)
            put_tops(&s, u, tops, ntops, &accounts);
        else
            put_pairs(&s, u, n);
    }
    rc = gs_buf_error(out);
out:
    free(u);
    free(tops);
    gs_buf_release(&accounts);
    return rc;
}

/* --- --json -------------------------------------------------------------------------------- */

static void put_json_tres(struct gs_json *j, const Gs__TresUsage *t)
{
    gs_json_object_begin(j);
    gs_json_kv_string(j, "name", t->name != NULL ? t->name : "");
    gs_json_kv_uint(j, "allocated_ms", t->allocated);
    gs_json_kv_uint(j, "down_ms", t->down);
    gs_json_kv_uint(j, "plnd_down_ms", t->plnd_down);
    gs_json_kv_uint(j, "idle_ms", t->idle);
    gs_json_kv_uint(j, "reported_ms", t->reported);
    gs_json_object_end(j);
}

/*
 * --json: the reply; its TRES those -T (or $SREPORT_TRES) named, else every one; for the
 * user reports its users too, as gschedd sent them (account "" for none), whichever report.
 */
static int put_json(const Gs__ReportReply *r, const struct slurm_sreport_args *a,
                    struct gs_buf *out)
{
    struct gs_json j;
    int rc;

    gs_json_init(&j, out);
    gs_json_object_begin(&j);
    gs_json_kv_uint(&j, "start_ms", r->start_ms);
    gs_json_kv_uint(&j, "end_ms", r->end_ms);
    gs_json_kv_uint(&j, "known_since_ms", r->known_since_ms);
    gs_json_kv_string(&j, "cluster", r->cluster != NULL ? r->cluster : "");
    gs_json_key(&j, "tres");
    gs_json_array_begin(&j);
    if (a->tres_set) {
        for (size_t i = 0; i < a->ntres; i++) {
            const Gs__TresUsage *t = find_tres(r, a->tres[i]);

            if (t != NULL)
                put_json_tres(&j, t);
        }
    } else {
        for (size_t i = 0; i < r->n_tres; i++)
            put_json_tres(&j, r->tres[i]);
    }
    gs_json_array_end(&j);
    if (slurm_sreport_by_user(a)) {
        gs_json_key(&j, "users");
        gs_json_array_begin(&j);
        for (size_t i = 0; i < r->n_users; i++) {
            const Gs__UserUsage *u = r->users[i];

            gs_json_object_begin(&j);
            gs_json_kv_string(&j, "account", u->account != NULL ? u->account : "");
            gs_json_kv_string(&j, "user", u->user != NULL ? u->user : "");
            gs_json_kv_uint(&j, "cpu_ms", u->cpu);
            gs_json_kv_uint(&j, "gpu_ms", u->gpu);
            gs_json_object_end(&j);
        }
        gs_json_array_end(&j);
    }
    gs_json_object_end(&j);
    rc = gs_json_finish(&j);
    return rc == 0 ? gs_buf_putc(out, '\n') : rc;
}

int slurm_sreport_format(const Gs__ReportReply *reply, const struct slurm_sreport_args *args,
                         slurm_sreport_name_fn name, void *name_ctx, struct gs_buf *out)
{
    if (args->json)
        return put_json(reply, args, out);
    if (args->report == SLURM_SREPORT_UTILIZATION)
        return format_utilization(reply, args, out);
    return format_users(reply, args, name, name_ctx, out);
}
