/*
 * fuzz_features.c: libFuzzer harness for node feature expressions (common/features.h), which
 * gschedd reads from every submission and matches against every node on each pass.
 *
 * The input, cut at its first NUL, is checked, then matched with three views of a node's
 * features. An expression of '&', '|' and parentheses is monotone, which gives properties
 * that need no second evaluator: a node with every feature satisfies any expression the
 * check takes, a node with none satisfies none, and adding features to a node never turns
 * a match into a miss. An expression the check refuses matches no node, and its reason
 * names a character. Each alternative of a matching OR ("[a|b]") is taken by the check
 * alone, and is no matching OR itself.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/features.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool has_all(const char *name, size_t len, const void *data)
{
    (void)name;
    (void)len;
    (void)data;
    return true;
}

static bool has_none(const char *name, size_t len, const void *data)
{
    (void)name;
    (void)len;
    (void)data;
    return false;
}

/* Some features: those whose name's bytes sum to an even number. */
static bool has_some(const char *name, size_t len, const void *data)
{
    unsigned sum = 0;

    (void)data;
    for (size_t i = 0; i < len; i++)
        sum += (unsigned char)name[i];
    return sum % 2 == 0;
}

/* has_some's, and those whose name is short: a superset of them. */
static bool has_more(const char *name, size_t len, const void *data)
{
    return len < 3 || has_some(name, len, data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *expr = malloc(size + 1), why[200], alt[GS_FEATURES_EXPR_MAX + 1];
    int rc;

    if (expr == NULL)
        return 0;
    memcpy(expr, data, size);
    expr[size] = '\0';
    rc = gs_features_check(expr, why, sizeof(why));
    if (rc != 0 && rc != -EINVAL)
        abort();
    if (rc < 0) {
        if (strncmp(why, "at character ", 13) != 0 || gs_features_match(expr, has_all, NULL))
            abort();
    } else if (expr[0] != '\0') {
        if (!gs_features_match(expr, has_all, NULL) || gs_features_match(expr, has_none, NULL))
            abort();
        if (gs_features_match(expr, has_some, NULL) && !gs_features_match(expr, has_more, NULL))
            abort();
        for (unsigned k = 0; gs_features_alternative(expr, k, alt, sizeof(alt)); k++)
            if (gs_features_check(alt, why, sizeof(why)) != 0 || gs_features_matching_or(alt))
                abort();
    }
    free(expr);
    return 0;
}
