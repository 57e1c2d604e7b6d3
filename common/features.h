/*
 * features.h: node feature expressions, what sbatch's --constraint and --prefer and a job
 * file's resources.constraint and resources.prefer take (docs/slurm.md, "Node features").
 *
 * An expression is feature names joined by '&' (the node has both) and '|' (it has either),
 * grouped with parentheses. As Slurm reads it, it is read left to right with no precedence:
 * "a|b&c" is "(a|b)&c". A matching OR, "[a|b|(c&d)]" as the whole expression, is met by each
 * node as "a|b|(c&d)" is, and placement gives a job nodes that all meet the same one
 * (gs_features_alternative). Slurm's node counts ("a*2", "[a*2&b*1]") are refused by name.
 */
#ifndef GS_FEATURES_H
#define GS_FEATURES_H

#include <stdbool.h>
#include <stddef.h>

#define GS_FEATURES_EXPR_MAX 1024 /* bytes of one expression */
#define GS_FEATURES_DEPTH_MAX 8   /* parentheses inside parentheses */

/* Whether the node at hand has the feature of len bytes at name (not NUL-terminated). */
typedef bool gs_features_has_fn(const char *name, size_t len, const void *data);

/*
 * Checks expr. Returns 0, or -EINVAL with the reason in why (up to size bytes), which
 * names the character where it went wrong: "at character 3: a feature name expected
 * after '&'".
 */
int gs_features_check(const char *expr, char *why, size_t size);

/*
 * Whether a node satisfies expr, which gs_features_check passed (one it refuses matches
 * no node); has says which features the node has. NULL or "" matches every node.
 */
bool gs_features_match(const char *expr, gs_features_has_fn *has, const void *data);

/* Whether the node whose n features are in the NULL-free array names satisfies expr. */
bool gs_features_match_names(const char *expr, char *const *names, size_t n);

/* Whether expr, checked, is a matching OR ("[a|b]"). */
bool gs_features_matching_or(const char *expr);

/*
 * The k-th alternative (from 0) of a checked matching OR, as an expression of its own, in
 * out; false past the last one (or when it does not fit in size bytes).
 */
bool gs_features_alternative(const char *expr, unsigned k, char *out, size_t size);

/* Whether expr is one feature name alone (messages then say "the feature 'x'"). */
bool gs_features_single(const char *expr);

#endif
