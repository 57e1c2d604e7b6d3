/*
 * hostlist.c: Slurm hostlist expressions expanded and compressed (see hostlist.h).
 */
#include "common/hostlist.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/path.h"
#include "common/sort.h"

struct names {
    char **v;
    size_t n, cap;
};

static int push(struct names *ns, const char *prefix, size_t plen, const char *num,
                const char *suffix, size_t slen)
{
    size_t nlen = num != NULL ? strlen(num) : 0, len = plen + nlen + slen;
    char *s;

    if (ns->n + 1 >= ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 16;
        char **v = realloc(ns->v, cap * sizeof(*v));

        if (v == NULL)
            return -ENOMEM;
        ns->v = v;
        ns->cap = cap;
    }
    s = malloc(len + 1);
    if (s == NULL)
        return -ENOMEM;
    memcpy(s, prefix, plen);
    memcpy(s + plen, num != NULL ? num : "", nlen);
    memcpy(s + plen + nlen, suffix, slen);
    s[len] = '\0';
    ns->v[ns->n++] = s;
    ns->v[ns->n] = NULL;
    return 0;
}

/* A run of digits at *p as a number; its length in *ret_len. */
static int read_number(const char *p, uint64_t *ret, size_t *ret_len)
{
    size_t k = 0;
    uint64_t v = 0;

    while (isdigit((unsigned char)p[k])) {
        if (v > (UINT64_MAX - 9) / 10)
            return -EINVAL;
        v = v * 10 + (uint64_t)(p[k] - '0');
        k++;
    }
    if (k == 0)
        return -EINVAL;
    *ret = v;
    *ret_len = k;
    return 0;
}

/* One "a" or "a-b" of a bracket, at p (column col), appended for prefix and suffix. */
static int expand_range(struct names *ns, const char *p, size_t len, const char *prefix,
                        size_t plen, const char *suffix, size_t slen, int col, struct gs_error *err)
{
    uint64_t lo, hi;
    size_t la, lb = 0;
    int width;
    char num[32];

    if (read_number(p, &lo, &la) < 0)
        return gs_error_set(err, -EINVAL, 1, col, "expected a number in the brackets");
    hi = lo;
    if (la < len) {
        if (p[la] != '-' || read_number(p + la + 1, &hi, &lb) < 0 || la + 1 + lb != len)
            return gs_error_set(err, -EINVAL, 1, col, "expected N or N-M in the brackets");
        if (hi < lo)
            return gs_error_set(err, -EINVAL, 1, col, "range %llu-%llu goes down",
                                (unsigned long long)lo, (unsigned long long)hi);
    }
    if (hi - lo >= GS_HOSTLIST_MAX || ns->n + (hi - lo) >= GS_HOSTLIST_MAX)
        return gs_error_set(err, -EINVAL, 1, col, "more than %d names", GS_HOSTLIST_MAX);
    width = la > 1 && p[0] == '0' ? (int)la : 0; /* leading zeros: fixed width */
    for (uint64_t i = lo; i <= hi; i++) {
        snprintf(num, sizeof(num), "%0*llu", width, (unsigned long long)i);
        if (push(ns, prefix, plen, num, suffix, slen) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* One top-level term ("node[1-3,7]" or "login") starting at column col. */
static int expand_term(struct names *ns, const char *t, size_t len, int col, struct gs_error *err)
{
    const char *open = memchr(t, '[', len), *close, *p;
    size_t plen, slen;

    if (len == 0)
        return gs_error_set(err, -EINVAL, 1, col, "empty name");
    if (open == NULL) {
        if (memchr(t, ']', len) != NULL)
            return gs_error_set(err, -EINVAL, 1, col, "']' without '['");
        /* The cap holds for plain names too: compress folds ranges but not distinct names,
         * so a list past it would not read back. */
        if (ns->n >= GS_HOSTLIST_MAX)
            return gs_error_set(err, -EINVAL, 1, col, "more than %d names", GS_HOSTLIST_MAX);
        return push(ns, t, len, NULL, "", 0);
    }
    close = memchr(open, ']', len - (size_t)(open - t));
    if (close == NULL)
        return gs_error_set(err, -EINVAL, 1, col + (int)(open - t), "'[' without ']'");
    if (memchr(open + 1, '[', (size_t)(close - open - 1)) != NULL ||
        memchr(close + 1, '[', len - (size_t)(close + 1 - t)) != NULL)
        return gs_error_set(err, -EINVAL, 1, col, "one bracket per name");
    if (memchr(t, ']', (size_t)(open - t)) != NULL ||
        memchr(close + 1, ']', len - (size_t)(close + 1 - t)) != NULL)
        return gs_error_set(err, -EINVAL, 1, col, "']' without '['");
    plen = (size_t)(open - t);
    slen = len - (size_t)(close + 1 - t);
    for (p = open + 1; p < close;) {
        const char *end = memchr(p, ',', (size_t)(close - p));
        size_t n = end != NULL ? (size_t)(end - p) : (size_t)(close - p);
        int rc = expand_range(ns, p, n, t, plen, close + 1, slen, col + (int)(p - t), err);

        if (rc < 0)
            return rc;
        p += n + (end != NULL ? 1 : 0);
        if (end != NULL && p == close)
            return gs_error_set(err, -EINVAL, 1, col + (int)(p - t), "empty range");
    }
    return 0;
}

int gs_hostlist_expand(const char *expr, char ***ret_names, size_t *ret_n, struct gs_error *err)
{
    struct names ns = {0};
    size_t start = 0, i = 0;
    int depth = 0, rc = 0;

    for (; expr[0] != '\0'; i++) {
        char ch = expr[i];

        if (ch == '[')
            depth++;
        else if (ch == ']' && depth > 0)
            depth--;
        if ((ch == ',' && depth == 0) || ch == '\0') {
            rc = expand_term(&ns, expr + start, i - start, (int)start + 1, err);
            if (rc < 0 || ch == '\0')
                break;
            start = i + 1;
        }
    }
    if (rc < 0) {
        gs_hostlist_free(ns.v);
        return rc;
    }
    if (ns.v == NULL && (ns.v = calloc(1, sizeof(char *))) == NULL)
        return -ENOMEM;
    *ret_names = ns.v;
    *ret_n = ns.n;
    return 0;
}

void gs_hostlist_free(char **names)
{
    for (size_t i = 0; names != NULL && names[i] != NULL; i++)
        free(names[i]);
    free(names);
}

/* A name split into a prefix and a trailing number. */
struct split {
    const char *name;
    size_t plen; /* prefix length; the whole name when there is no number */
    int width;   /* digits when zero-padded, else 0 */
    int digits;
    uint64_t num;
    bool has_num;
    bool done;
    size_t next; /* the next name with this prefix, in input order; n after the last */
};

static void split_name(const char *name, struct split *s)
{
    size_t len = strlen(name), k = len;

    while (k > 0 && isdigit((unsigned char)name[k - 1]))
        k--;
    s->name = name;
    s->plen = k;
    s->has_num = k < len && len - k < 19;
    if (!s->has_num) {
        s->plen = len;
        return;
    }
    s->num = strtoull(name + k, NULL, 10);
    s->digits = (int)(len - k);
    s->width = len - k > 1 && name[k] == '0' ? s->digits : 0;
}

/* Same prefix and the same printed width: gpu08 and gpu10 go together (as gpu[08-10]),
 * node9 and node10 too (node[9-10]), gpu08 and gpu100 do not. */
static bool same_group(const struct split *a, const struct split *b)
{
    bool width_ok = a->width == b->width ||
                    (a->width > 0 && b->width == 0 && b->digits == a->width) ||
                    (b->width > 0 && a->width == 0 && a->digits == b->width);

    return a->has_num && b->has_num && a->plen == b->plen && width_ok &&
           memcmp(a->name, b->name, a->plen) == 0;
}

/* Folds b into a group's summary (a copy of its first name): the padded width once a member
 * has one, and digits -1 once members differ in length, so that no padded name joins
 * unpadded ones of another length (111 and 2, then 011, would print 2 as 002). */
static void join_group(struct split *group, const struct split *b)
{
    if (b->width > group->width)
        group->width = b->width;
    if (b->digits != group->digits)
        group->digits = -1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* The numbers of one group as "1-3,7". */
static int put_ranges(struct gs_buf *out, uint64_t *nums, size_t n, int width)
{
    int rc = 0;

    gs_sort(nums, n, sizeof(*nums), cmp_u64);
    for (size_t i = 0, first = 1; rc == 0 && i < n; first = 0) {
        size_t j = i;

        while (j + 1 < n && (nums[j + 1] == nums[j] || nums[j + 1] == nums[j] + 1))
            j++;
        rc = gs_buf_printf(out, "%s%0*llu", first ? "" : ",", width, (unsigned long long)nums[i]);
        if (rc == 0 && nums[j] != nums[i])
            rc = gs_buf_printf(out, "-%0*llu", width, (unsigned long long)nums[j]);
        i = j + 1;
    }
    return rc;
}

/* Whether a group holds one number, repeats aside: "n3,n3" compresses to "n3", not "n[3]". */
static bool one_number(const uint64_t *nums, size_t k)
{
    for (size_t i = 1; i < k; i++)
        if (nums[i] != nums[0])
            return false;
    return true;
}

/* Orders names by prefix, then by input position (they all sit in one array). */
static int cmp_prefix(const void *a, const void *b)
{
    const struct split *x = *(const struct split *const *)a;
    const struct split *y = *(const struct split *const *)b;
    int c;

    if (x->plen != y->plen)
        return x->plen < y->plen ? -1 : 1;
    c = memcmp(x->name, y->name, x->plen);
    if (c != 0)
        return c;
    return x < y ? -1 : x > y;
}

/*
 * Chains each name to the next one with the same prefix (next), so that grouping scans the
 * names of one prefix instead of all: n names with distinct prefixes cost n log n, not n^2.
 * Returns 0 or -ENOMEM.
 */
static int link_prefixes(struct split *sp, size_t n)
{
    struct split **order = malloc((n + 1) * sizeof(*order));

    if (order == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        order[i] = &sp[i];
    gs_sort(order, n, sizeof(*order), cmp_prefix);
    for (size_t i = 0; i < n; i++) {
        bool same = i + 1 < n && order[i + 1]->plen == order[i]->plen &&
                    memcmp(order[i + 1]->name, order[i]->name, order[i]->plen) == 0;

        order[i]->next = same ? (size_t)(order[i + 1] - sp) : n;
    }
    free(order);
    return 0;
}

int gs_hostlist_compress(const char *const *names, size_t n, struct gs_buf *out)
{
    struct split *sp = calloc(n + 1, sizeof(*sp));
    uint64_t *nums = calloc(n + 1, sizeof(*nums));
    int rc = sp != NULL && nums != NULL ? gs_buf_append_str(out, "") : gs_buf_fail(out, -ENOMEM);
    bool first = true;

    for (size_t i = 0; rc == 0 && i < n; i++)
        split_name(names[i], &sp[i]);
    if (rc == 0 && link_prefixes(sp, n) < 0)
        rc = gs_buf_fail(out, -ENOMEM);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        size_t k = 0;

        if (sp[i].done)
            continue;
        struct split group = sp[i]; /* what the members so far have in common */

        for (size_t j = i; j < n; j = sp[j].next) {
            if (j == i || (!sp[j].done && same_group(&group, &sp[j]))) {
                nums[k++] = sp[j].num;
                sp[j].done = true;
                join_group(&group, &sp[j]);
            }
        }
        sp[i].width = group.width;
        rc = gs_buf_printf(out, "%s%.*s", first ? "" : ",", (int)sp[i].plen, sp[i].name);
        first = false;
        if (rc == 0 && sp[i].has_num && one_number(nums, k))
            rc = gs_buf_printf(out, "%0*llu", sp[i].width, (unsigned long long)nums[0]);
        else if (rc == 0 && sp[i].has_num) {
            rc = gs_buf_putc(out, '[');
            if (rc == 0)
                rc = put_ranges(out, nums, k, sp[i].width);
            if (rc == 0)
                rc = gs_buf_putc(out, ']');
        }
    }
    free(sp);
    free(nums);
    return rc;
}

int gs_hostlist_counts(const uint32_t *counts, size_t n, struct gs_buf *out)
{
    int rc = 0;

    for (size_t i = 0; i < n && rc == 0;) {
        size_t run = 1;

        while (i + run < n && counts[i + run] == counts[i])
            run++;
        rc = run > 1 ? gs_buf_printf(out, "%s%u(x%zu)", i > 0 ? "," : "", counts[i], run)
                     : gs_buf_printf(out, "%s%u", i > 0 ? "," : "", counts[i]);
        i += run;
    }
    return rc;
}

/* One decimal number of 1..UINT32_MAX at *p, advancing p; 0 when there is none. */
static uint32_t read_count(const char **p)
{
    uint64_t v = 0;
    const char *s = *p;

    while (*s >= '0' && *s <= '9' && v <= UINT32_MAX)
        v = v * 10 + (uint64_t)(*s++ - '0');
    if (s == *p || v > UINT32_MAX)
        return 0;
    *p = s;
    return (uint32_t)v;
}

int gs_hostlist_counts_parse(const char *text, uint32_t **ret_counts, size_t *ret_n,
                             struct gs_error *err)
{
    uint32_t *counts = NULL;
    size_t n = 0, cap = 0;
    const char *p = text;
    int rc = 0;

    while (rc == 0) {
        const char *at = p;
        uint32_t value = read_count(&p), times = 1;

        if (value == 0) {
            rc = gs_error_set(err, -EINVAL, 1, (int)(at - text) + 1, "expected a count");
            break;
        }
        if (strncmp(p, "(x", 2) == 0) {
            at = p += 2;
            times = read_count(&p);
            if (times == 0 || *p != ')') {
                rc = gs_error_set(err, -EINVAL, 1, (int)(at - text) + 1,
                                  "expected a repeat count and ')'");
                break;
            }
            p++;
        }
        if (times > 100000 || n + times > 100000) { /* more nodes than a job may have */
            rc = gs_error_set(err, -EINVAL, 1, (int)(at - text) + 1, "too many nodes");
            break;
        }
        if (n + times > cap) {
            size_t ncap = (n + times) * 2;
            uint32_t *grown = realloc(counts, ncap * sizeof(*counts));

            if (grown == NULL) {
                rc = -ENOMEM;
                break;
            }
            counts = grown;
            cap = ncap;
        }
        for (uint32_t i = 0; i < times; i++)
            counts[n++] = value;
        if (*p == '\0')
            break;
        if (*p != ',')
            rc = gs_error_set(err, -EINVAL, 1, (int)(p - text) + 1, "expected ',' or the end");
        p++;
    }
    if (rc < 0) {
        free(counts);
        return rc;
    }
    *ret_counts = counts;
    *ret_n = n;
    return 0;
}

int gs_hostlist_read_file(const char *path, struct gs_buf *list)
{
    struct gs_buf text = GS_BUF_INIT;
    size_t before = list->len;
    int rc = gs_path_read_all(path, &text);

    for (const char *p = text.data != NULL ? text.data : ""; rc == 0 && *p != '\0';) {
        size_t len = strcspn(p, " \t\r\n,");

        if (len > 0)
            rc = gs_buf_printf(list, "%s%.*s", list->len > before ? "," : "", (int)len, p);
        p += len;
        p += strspn(p, " \t\r\n,");
    }
    gs_buf_release(&text);
    return rc == 0 && list->len == before ? -ENODATA : rc;
}
