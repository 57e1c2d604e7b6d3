/*
 * features.c: node feature expressions (features.h), read by one small recursive-descent
 * parser that checks and evaluates in the same walk, so matching a node allocates nothing:
 * gschedd matches every pending job's expression against every node on each pass.
 *
 * Expressions come from users and reach gschedd over the wire, so the walk is bounded: by
 * GS_FEATURES_EXPR_MAX bytes and GS_FEATURES_DEPTH_MAX nested parentheses.
 */
#include "common/features.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/jobspec.h"

/* The length of the feature name at s: letters, digits, '_', '.' and '-' (as a job file's
 * words; strspn with a set costs more than the rest of a one-name match). */
static size_t name_len(const char *s)
{
    size_t n = 0;

    for (;; n++) {
        unsigned char c = (unsigned char)s[n];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return n;
    }
}

struct walk {
    const char *s;
    size_t at;
    int depth;
    gs_features_has_fn *has; /* NULL: check only */
    const void *data;
    char *why;
    size_t why_size;
};

static int fail(struct walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct walk *w, const char *fmt, ...)
{
    va_list ap;
    int n = 0;

    if (w->why != NULL && w->why_size > 0) {
        n = snprintf(w->why, w->why_size, "at character %zu: ", w->at + 1);
        if (n < 0 || (size_t)n >= w->why_size)
            return -EINVAL;
        va_start(ap, fmt);
        vsnprintf(w->why + n, w->why_size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

/* What stands at w->at where a name or '(' should: named, with what to write instead. */
static int bad_term(struct walk *w, const char *after)
{
    char c = w->s[w->at];

    if (c == '[')
        return fail(w, "a matching OR ('[a|b]') is the whole expression, or not there");
    if (c == '\0')
        return fail(w, "a feature name expected%s%s", after[0] != '\0' ? " after " : "", after);
    return fail(w, "a feature name or '(' expected%s%s, not '%c'",
                after[0] != '\0' ? " after " : "", after, c);
}

static int expr(struct walk *w, bool *val);

/* A name, or an expression in parentheses; after says what came before, for messages. */
static int term(struct walk *w, bool *val, const char *after)
{
    const char *name = w->s + w->at;
    size_t n;
    int rc;

    if (*name == '(') {
        if (w->depth >= GS_FEATURES_DEPTH_MAX)
            return fail(w, "parentheses nested deeper than %d", GS_FEATURES_DEPTH_MAX);
        w->depth++;
        w->at++;
        rc = expr(w, val);
        if (rc < 0)
            return rc;
        if (w->s[w->at] != ')')
            return fail(w, "')' expected");
        w->at++;
        w->depth--;
        return 0;
    }
    n = name_len(name);
    if (n == 0)
        return bad_term(w, after);
    if (n > GS_JOBSPEC_NAME_MAX)
        return fail(w, "a feature name is at most %d characters", GS_JOBSPEC_NAME_MAX);
    *val = w->has != NULL && w->has(name, n, w->data);
    w->at += n;
    if (w->s[w->at] == '*')
        return fail(w, "node counts ('%.*s*N') are not supported", (int)n, name);
    return 0;
}

/* Terms joined by '&' and '|', taken left to right as Slurm takes them. */
static int expr(struct walk *w, bool *val)
{
    int rc = term(w, val, "");

    while (rc == 0 && (w->s[w->at] == '&' || w->s[w->at] == '|')) {
        char op = w->s[w->at];
        bool next = false;

        w->at++;
        rc = term(w, &next, op == '&' ? "'&'" : "'|'");
        *val = op == '&' ? *val && next : *val || next;
    }
    return rc;
}

/*
 * A matching OR, "[t1|t2|...]" from w->at, each ti a name or an expression in parentheses:
 * a node satisfies it as it satisfies any one (every node the same one is for placement to
 * see to: gs_features_alternative). With k >= 0, the k-th alternative's text goes to
 * *ret_from and *ret_len (-ENOENT past the last).
 */
static int bracket(struct walk *w, bool *val, int k, size_t *ret_from, size_t *ret_len)
{
    int rc, i = 0;

    w->at++; /* '[' */
    *val = false;
    for (;; i++) {
        size_t from = w->at;
        bool alt = false;

        rc = term(w, &alt, i == 0 ? "'['" : "'|'");
        if (rc < 0)
            return rc;
        *val = *val || alt;
        if (i == k) {
            *ret_from = from;
            *ret_len = w->at - from;
            return 0;
        }
        if (w->s[w->at] == ']')
            break;
        if (w->s[w->at] == '&')
            return fail(w, "alternatives in '[...]' are joined by '|' (group the others in "
                           "parentheses: '[(a&b)|c]')");
        if (w->s[w->at] != '|')
            return fail(w, "'|' or ']' expected");
        w->at++;
    }
    w->at++; /* ']' */
    if (k >= 0)
        return -ENOENT;
    if (w->s[w->at] == '*')
        return fail(w, "node counts ('[...]*N') are not supported");
    if (w->s[w->at] != '\0')
        return fail(w, "a matching OR ('[a|b]') is the whole expression, or not there");
    return 0;
}

/* The whole of w->s; one walked to its end past GS_FEATURES_EXPR_MAX is refused there, so
 * that matching needs no strlen of its own and still takes nothing the check refuses. */
static int walk(struct walk *w, bool *val)
{
    size_t from, len;
    char c;
    int rc;

    if (w->s[0] == '[') {
        rc = bracket(w, val, -1, &from, &len);
        if (rc == 0 && w->at > GS_FEATURES_EXPR_MAX)
            return fail(w, "longer than %d characters", GS_FEATURES_EXPR_MAX);
        return rc;
    }
    rc = expr(w, val);
    if (rc < 0)
        return rc;
    c = w->s[w->at];
    if (c == '\0' && w->at > GS_FEATURES_EXPR_MAX)
        return fail(w, "longer than %d characters", GS_FEATURES_EXPR_MAX);
    if (c == '\0')
        return 0;
    if (c == ',')
        return fail(w, "',' joins nothing: '&' for nodes with both features, '|' for either");
    if (c == ')')
        return fail(w, "')' without its '('");
    if (c == '*')
        return fail(w, "node counts ('(...)*N') are not supported");
    return fail(w, "'&', '|' or the end expected, not '%c'", c);
}

int gs_features_check(const char *expr, char *why, size_t size)
{
    struct walk w = {.s = expr, .why = why, .why_size = size};
    bool val;

    if (why != NULL && size > 0)
        why[0] = '\0';
    if (expr == NULL || expr[0] == '\0')
        return 0;
    return walk(&w, &val);
}

bool gs_features_match(const char *expr, gs_features_has_fn *has, const void *data)
{
    struct walk w = {.s = expr, .has = has, .data = data};
    bool val = false;
    size_t n;

    if (expr == NULL || expr[0] == '\0')
        return true;
    n = name_len(expr);
    if (expr[n] == '\0') /* one name: what most constraints are, for every node of a pass */
        return n <= GS_JOBSPEC_NAME_MAX && has(expr, n, data);
    return walk(&w, &val) == 0 && val;
}

struct names {
    char *const *v;
    size_t n;
};

static bool names_have(const char *name, size_t len, const void *data)
{
    const struct names *names = data;

    for (size_t i = 0; i < names->n; i++)
        if (strncmp(names->v[i], name, len) == 0 && names->v[i][len] == '\0')
            return true;
    return false;
}

bool gs_features_match_names(const char *expr, char *const *names, size_t n)
{
    struct names all = {names, n};

    return gs_features_match(expr, names_have, &all);
}

bool gs_features_matching_or(const char *expr)
{
    return expr != NULL && expr[0] == '[';
}

bool gs_features_alternative(const char *expr, unsigned k, char *out, size_t size)
{
    struct walk w = {.s = expr};
    size_t from = 0, len = 0;
    bool val;

    if (!gs_features_matching_or(expr) || k > GS_FEATURES_EXPR_MAX ||
        bracket(&w, &val, (int)k, &from, &len) < 0 || len >= size)
        return false;
    memcpy(out, expr + from, len);
    out[len] = '\0';
    return true;
}

bool gs_features_single(const char *expr)
{
    size_t n = expr != NULL ? name_len(expr) : 0;

    return n > 0 && expr[n] == '\0';
}
