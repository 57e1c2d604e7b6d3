/*
 * fuzz_hostlist.c: libFuzzer harness for Slurm hostlists (common/hostlist.h): node lists in
 * gsched.toml's [[switch]] and [[partition]], sbatch --nodelist and --exclude, and the
 * per-node counts of SLURM_TASKS_PER_NODE.
 *
 * The input, cut at its first NUL (the parsers take C strings), is read both ways: as a
 * hostlist expression, whose names are compressed again and the compressed form expanded
 * (it must give the same set of names: compression drops repeats, so the count may fall;
 * the sets are compared for up to SET_CHECK_MAX names); and as a count list ("2(x3),1"),
 * written back with gs_hostlist_counts(). The ctest run caps inputs at 4 KiB (-max_len);
 * one input may still expand to GS_HOSTLIST_MAX names, which is what makes this harness
 * slower than the others (about a thousand inputs a second).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/hostlist.h"

#define SET_CHECK_MAX 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool contains(char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

/* Whether a and b hold the same names, repeats aside (quadratic: small lists only). */
static bool same_set(char *const *a, size_t na, char *const *b, size_t nb)
{
    for (size_t i = 0; i < na; i++)
        if (!contains(b, nb, a[i]))
            return false;
    for (size_t i = 0; i < nb; i++)
        if (!contains(a, na, b[i]))
            return false;
    return true;
}

/* Compresses names and expands the result again: the same names must come out. */
static void recompress(char *const *names, size_t n)
{
    struct gs_buf compressed = GS_BUF_INIT;
    struct gs_error err;
    char **again = NULL;
    size_t nagain = 0;

    if (gs_hostlist_compress((const char *const *)names, n, &compressed) < 0)
        return;
    if (gs_hostlist_expand(compressed.data != NULL ? compressed.data : "", &again, &nagain, &err) <
        0)
        abort(); /* what compress writes, expand reads */
    if (nagain > n || (n <= SET_CHECK_MAX && !same_set(names, n, again, nagain)))
        abort();
    gs_hostlist_free(again);
    gs_buf_release(&compressed);
}

static void expand(const char *expr)
{
    struct gs_error err;
    char **names = NULL;
    size_t n = 0;

    if (gs_hostlist_expand(expr, &names, &n, &err) == 0)
        recompress(names, n);
    gs_hostlist_free(names);
}

static void counts(const char *text)
{
    struct gs_buf out = GS_BUF_INIT;
    struct gs_error err;
    uint32_t *values = NULL;
    size_t n = 0;

    if (gs_hostlist_counts_parse(text, &values, &n, &err) == 0)
        (void)gs_hostlist_counts(values, n, &out);
    free(values);
    gs_buf_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);

    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    expand(text);
    counts(text);
    free(text);
    return 0;
}
