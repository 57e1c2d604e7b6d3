/*
 * cmd_sshare.c: `sshare` (also `gsched sshare`): gschedd's fair-share tree (ShareReply), as
 * Slurm's sshare shows it by default, each field followed by a blank
 * (the last one not shown here):
 *
 *     Account                    User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare
 *     -------------------- ---------- ---------- ----------- ----------- ------------- ----------
 *     root                                     1    1.000000        3600      1.000000   0.500000
 *      physics                                 3    0.750000        3600      1.000000   0.396850
 *       physics                 alice          1    0.750000        3600      1.000000   0.396850
 *      chem                                    1    0.250000           0      0.000000   1.000000
 *
 * The lines come in gschedd's order (the tree depth first, root first); the Account column
 * is indented one blank per level, as Slurm indents children, and an account's own line has
 * no user. Numbers as Slurm prints them: shares and usage (decayed billing-seconds, cut to a
 * whole number) as integers, the fractions with 6 decimals (e-notation when too wide), a
 * text too long for its column cut with '+'.
 *
 * Options as Slurm's: -A/--accounts LIST (those accounts' lines and their users'),
 * -u/--users LIST (names or uids; the accounts' own lines stay), -U/--Users (user lines
 * only), -n/-h/--noheader, -p/--parsable ('|' after every field), -P/--parsable2 ('|'
 * between them); -a/--all is accepted and changes nothing, as every user's lines are listed
 * always (Slurm lists only the caller's without it). -l/--long is not offered: Slurm's adds
 * NormUsage and the TRES columns, which gschedd does not report. gsched adds --json
 * ({"decay_half_life_s", "shares": [ShareInfo by the proto's names]}) and --socket. Every
 * failure exits 1, as in Slurm.
 */
#include "slurm/commands.h"

#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "slurm/slurm_cmd.h"
#include "slurm/slurm_fmt.h"

#define CMD "sshare"

/* The most blanks an Account cell is indented by, whatever depth gschedd sends. */
#define MAX_INDENT 64

enum parsable {
    PARSABLE_NONE,
    PARSABLE_TRAILING, /* -p: '|' after every field */
    PARSABLE_BETWEEN,  /* -P: '|' between fields */
};

enum column {
    C_ACCOUNT,
    C_USER,
    C_RAW_SHARES,
    C_NORM_SHARES,
    C_RAW_USAGE,
    C_EFFECTIVE_USAGE,
    C_FAIRSHARE,
    C_COUNT
};

/* Slurm's names and widths (< 0: left-justified). */
static const struct {
    const char *name;
    int width;
} columns[C_COUNT] = {
    [C_ACCOUNT] = {"Account", -20},     [C_USER] = {"User", 10},
    [C_RAW_SHARES] = {"RawShares", 10}, [C_NORM_SHARES] = {"NormShares", 11},
    [C_RAW_USAGE] = {"RawUsage", 11},   [C_EFFECTIVE_USAGE] = {"EffectvUsage", 13},
    [C_FAIRSHARE] = {"FairShare", 10},
};

struct sshare_args {
    const char *accounts, *users, *socket_opt;
    enum parsable parsable;
    bool noheader, users_only, json;
};

static void usage(FILE *f)
{
    fputs("Usage: sshare [-A accounts] [-u users] [-U] [-n] [-p | -P] [--json] [--socket PATH]\n"
          "  -a/--all is accepted: every user's lines are listed always.\n"
          "  -l/--long is not supported: gschedd does not report normalized usage or TRES.\n",
          f);
}

/* Returns -1 to go on, else the exit status. */
static int parse_options(int argc, char **argv, struct sshare_args *s)
{
    static const struct option opts[] = {
        {"accounts", required_argument, NULL, 'A'},
        {"all", no_argument, NULL, 'a'},
        {"long", no_argument, NULL, 'l'},
        {"noheader", no_argument, NULL, 'n'},
        {"parsable", no_argument, NULL, 'p'},
        {"parsable2", no_argument, NULL, 'P'},
        {"users", required_argument, NULL, 'u'},
        {"Users", no_argument, NULL, 'U'},
        {"json", no_argument, NULL, 'J'},
        {"socket", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'H'},
        {"usage", no_argument, NULL, 'X'},
        {NULL, 0, NULL, 0},
    };
    int c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":A:ahlnpPu:U", opts, NULL)) != -1) {
        switch (c) {
        case 'A':
            s->accounts = optarg;
            break;
        case 'a':
            break; /* every user's lines show anyway */
        case 'h':
        case 'n':
            s->noheader = true;
            break;
        case 'l':
            return slurm_error(CMD, "-l/--long is not supported: gschedd does not report "
                                    "normalized usage or TRES");
        case 'p':
            s->parsable = PARSABLE_TRAILING;
            break;
        case 'P':
            s->parsable = PARSABLE_BETWEEN;
            break;
        case 'u':
            /* Slurm's "-u -1" means every user, as -a does. */
            s->users = strcmp(optarg, "-1") == 0 ? NULL : optarg;
            break;
        case 'U':
            s->users_only = true;
            break;
        case 'J':
            s->json = true;
            break;
        case 's':
            s->socket_opt = optarg;
            break;
        case 'H':
        case 'X':
            usage(stdout);
            return 0;
        default:
            return slurm_opt_error(CMD, c, optopt, argv[optind - 1]);
        }
    }
    if (optind < argc)
        return slurm_error(CMD, "unexpected argument '%s'", argv[optind]);
    return -1;
}

static const char *or_empty(const char *s)
{
    return s != NULL ? s : "";
}

static bool is_user_line(const Gs__ShareInfo *sh)
{
    return sh->user != NULL && sh->user[0] != '\0';
}

/* -u: the user by name, or by uid as Slurm takes it ("1000"). */
static bool user_listed(const char *list, const char *user)
{
    const struct passwd *pw;
    char uid[16];

    if (slurm_list_has(list, user))
        return true;
    pw = getpwnam(user);
    if (pw == NULL)
        return false;
    snprintf(uid, sizeof(uid), "%u", (unsigned)pw->pw_uid);
    return slurm_list_has(list, uid);
}

static bool line_shown(const struct sshare_args *s, const Gs__ShareInfo *sh)
{
    bool user_line = is_user_line(sh);

    if (s->users_only && !user_line)
        return false;
    if (s->accounts != NULL && !slurm_list_has(s->accounts, or_empty(sh->account)))
        return false;
    return !user_line || s->users == NULL || user_listed(s->users, sh->user);
}

/* Ends field col: a blank in the table, '|' when parsable (not after the last with -P). */
static int end_field(const struct sshare_args *s, enum column col, struct gs_buf *out)
{
    if (s->parsable == PARSABLE_NONE)
        return gs_buf_putc(out, ' ');
    if (s->parsable == PARSABLE_BETWEEN && col == C_COUNT - 1)
        return 0;
    return gs_buf_putc(out, '|');
}

/* A text field: padded and cut with '+' as Slurm's print_fields_str, as is when parsable. */
static int put_text(const struct sshare_args *s, enum column col, const char *text,
                    struct gs_buf *out)
{
    if (s->parsable == PARSABLE_NONE)
        return slurm_sacct_cell(out, text, columns[col].width);
    if (gs_buf_append_str(out, text) < 0)
        return -ENOMEM;
    return end_field(s, col, out);
}

/* A number already formatted: right-justified, never cut (Slurm's %*u), as is when parsable. */
static int put_number(const struct sshare_args *s, enum column col, const char *text,
                      struct gs_buf *out)
{
    int rc = s->parsable == PARSABLE_NONE ? gs_buf_printf(out, "%*s", columns[col].width, text)
                                          : gs_buf_append_str(out, text);

    return rc < 0 ? rc : end_field(s, col, out);
}

/*
 * A fraction as Slurm's print_fields_double: "%f" padded to the column, or when that is
 * wider than the column the e-notation that fits ("%*.*e" with the width cut by the excess).
 */
static int put_double(const struct sshare_args *s, enum column col, double v, struct gs_buf *out)
{
    int width = columns[col].width, len;
    char buf[64];

    if (s->parsable != PARSABLE_NONE) {
        snprintf(buf, sizeof(buf), "%f", v);
        return put_number(s, col, buf, out);
    }
    len = snprintf(buf, sizeof(buf), "%*f", width, v);
    if (len > width) {
        len = snprintf(buf, sizeof(buf), "%*.*e", width, width, v);
        if (len > width)
            width -= len - width;
        snprintf(buf, sizeof(buf), "%*.*e", width, width, v);
    }
    return put_number(s, col, buf, out);
}

static int put_header(const struct sshare_args *s, struct gs_buf *out)
{
    int rc = 0;

    for (int col = 0; rc == 0 && col < C_COUNT; col++)
        rc = put_text(s, (enum column)col, columns[col].name, out);
    if (rc == 0)
        rc = gs_buf_putc(out, '\n');
    if (s->parsable != PARSABLE_NONE)
        return rc;
    for (int col = 0; rc == 0 && col < C_COUNT; col++) {
        int w = columns[col].width < 0 ? -columns[col].width : columns[col].width;

        for (int i = 0; rc == 0 && i < w; i++)
            rc = gs_buf_putc(out, '-');
        if (rc == 0)
            rc = gs_buf_putc(out, ' ');
    }
    return rc == 0 ? gs_buf_putc(out, '\n') : rc;
}

/* Decayed usage as Slurm's RawUsage: a whole number of billing-seconds, cut. */
static unsigned long long raw_usage(double v)
{
    return v >= 1.0 && v < 1.8e19 ? (unsigned long long)v : 0;
}

static int put_line(const struct sshare_args *s, const Gs__ShareInfo *sh, struct gs_buf *out)
{
    int indent = sh->depth < MAX_INDENT ? (int)sh->depth : MAX_INDENT;
    char account[MAX_INDENT + 256], num[32];
    int rc;

    snprintf(account, sizeof(account), "%*s%s", indent, "", or_empty(sh->account));
    rc = put_text(s, C_ACCOUNT, account, out);
    if (rc == 0)
        rc = put_text(s, C_USER, or_empty(sh->user), out);
    snprintf(num, sizeof(num), "%u", sh->raw_shares);
    if (rc == 0)
        rc = put_number(s, C_RAW_SHARES, num, out);
    if (rc == 0)
        rc = put_double(s, C_NORM_SHARES, sh->norm_shares, out);
    snprintf(num, sizeof(num), "%llu", raw_usage(sh->raw_usage));
    if (rc == 0)
        rc = put_number(s, C_RAW_USAGE, num, out);
    if (rc == 0)
        rc = put_double(s, C_EFFECTIVE_USAGE, sh->effective_usage, out);
    if (rc == 0)
        rc = put_double(s, C_FAIRSHARE, sh->fairshare, out);
    return rc == 0 ? gs_buf_putc(out, '\n') : rc;
}

/* --json: {"decay_half_life_s": N, "shares": [each shown ShareInfo, the proto's names]}. */
static int put_json(const struct sshare_args *s, const Gs__ShareReply *r, struct gs_buf *out)
{
    struct gs_json j;
    int rc;

    gs_json_init(&j, out);
    gs_json_object_begin(&j);
    gs_json_kv_uint(&j, "decay_half_life_s", r->decay_half_life_s);
    gs_json_key(&j, "shares");
    gs_json_array_begin(&j);
    for (size_t i = 0; i < r->n_shares; i++) {
        const Gs__ShareInfo *sh = r->shares[i];

        if (!line_shown(s, sh))
            continue;
        gs_json_object_begin(&j);
        gs_json_kv_string(&j, "account", or_empty(sh->account));
        gs_json_kv_string(&j, "user", or_empty(sh->user));
        gs_json_kv_string(&j, "parent", or_empty(sh->parent));
        gs_json_kv_uint(&j, "depth", sh->depth);
        gs_json_kv_uint(&j, "raw_shares", sh->raw_shares);
        gs_json_key(&j, "norm_shares");
        gs_json_double(&j, sh->norm_shares);
        gs_json_key(&j, "raw_usage");
        gs_json_double(&j, sh->raw_usage);
        gs_json_key(&j, "effective_usage");
        gs_json_double(&j, sh->effective_usage);
        gs_json_key(&j, "fairshare");
        gs_json_double(&j, sh->fairshare);
        gs_json_object_end(&j);
    }
    gs_json_array_end(&j);
    gs_json_object_end(&j);
    rc = gs_json_finish(&j);
    return rc == 0 ? gs_buf_putc(out, '\n') : rc;
}

static int print_shares(const struct sshare_args *s, const Gs__ShareReply *r)
{
    struct gs_buf out = GS_BUF_INIT;
    int rc, status;

    if (s->json) {
        rc = put_json(s, r, &out);
        goto out;
    }
    rc = s->noheader ? 0 : put_header(s, &out);
    for (size_t i = 0; rc == 0 && i < r->n_shares; i++) {
        if (line_shown(s, r->shares[i]))
            rc = put_line(s, r->shares[i], &out);
    }
out:
    status = slurm_print(CMD, rc, &out);
    gs_buf_release(&out);
    return status;
}

int cli_cmd_sshare(int argc, char **argv)
{
    Gs__ShareRequest req = GS__SHARE_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__Envelope *reply = NULL;
    struct sshare_args s = {0};
    int status = parse_options(argc, argv, &s);

    if (status >= 0)
        return status;
    env.body_case = GS__ENVELOPE__BODY_SHARE_REQUEST;
    env.share_request = &req;
    status = slurm_call(s.socket_opt, &env, GS__ENVELOPE__BODY_SHARE_REPLY, &reply);
    if (status == 0)
        status = print_shares(&s, reply->share_reply);
    gs_proto_envelope_free(reply);
    return status;
}
