/*
 * test_features.c: node feature expressions (common/features.h): what matches which node,
 * read left to right as Slurm reads them, and every refusal naming its character.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/features.h"

static bool node(const char *expr, const char *features)
{
    char copy[128], *names[8], *save = NULL;
    size_t n = 0;

    snprintf(copy, sizeof(copy), "%s", features);
    for (char *f = strtok_r(copy, ",", &save); f != NULL && n < 8; f = strtok_r(NULL, ",", &save))
        names[n++] = f;
    return gs_features_match_names(expr, names, n);
}

/* The reason gs_features_check gives for expr, which it must refuse. */
static const char *refusal(const char *expr)
{
    static char why[200];

    cr_assert_eq(gs_features_check(expr, why, sizeof(why)), -EINVAL, "'%s' was taken", expr);
    return why;
}

Test(features, one_name_matches_the_nodes_that_have_it)
{
    cr_assert(node("a100", "a100,ib"));
    cr_assert_not(node("a100", "h100,ib"));
    cr_assert_not(node("a10", "a100"), "a prefix is not the feature");
    cr_assert_not(node("a100", "a10"), "nor is a longer name");
    cr_assert(node("", "a100"));
    cr_assert(node(NULL, ""));
    cr_assert_not(node("a100", ""));
}

Test(features, and_or_and_parentheses)
{
    cr_assert(node("a100&ib", "ib,a100"));
    cr_assert_not(node("a100&ib", "a100"));
    cr_assert(node("a100|h100", "h100"));
    cr_assert_not(node("a100|h100", "v100,ib"));
    cr_assert(node("(a100|h100)&ib", "h100,ib"));
    cr_assert_not(node("(a100|h100)&ib", "h100"));
    cr_assert(node("ib&(a100|(h100&nvl))", "ib,h100,nvl"));
    cr_assert_not(node("ib&(a100|(h100&nvl))", "ib,h100"));
}

/* Slurm has no precedence: "a|b&c" is "(a|b)&c", not "a|(b&c)". */
Test(features, reads_left_to_right_without_precedence)
{
    cr_assert_not(node("a|b&c", "a"));
    cr_assert(node("a|b&c", "a,c"));
    cr_assert(node("a&b|c", "c"));
    cr_assert(node("a|(b&c)", "a"));
}

Test(features, refuses_what_it_cannot_read_naming_the_character)
{
    cr_assert_str_eq(refusal("a&&b"), "at character 3: a feature name or '(' expected after "
                                      "'&', not '&'");
    cr_assert_str_eq(refusal("a|"), "at character 3: a feature name expected after '|'");
    cr_assert_str_eq(refusal("(a|b"), "at character 5: ')' expected");
    cr_assert_str_eq(refusal("a)"), "at character 2: ')' without its '('");
    cr_assert_str_eq(refusal("a,b"), "at character 2: ',' joins nothing: '&' for nodes with "
                                     "both features, '|' for either");
    cr_assert_str_eq(refusal("a b"), "at character 2: '&', '|' or the end expected, not ' '");
    cr_assert_str_eq(refusal("knl*2"), "at character 4: node counts ('knl*N') are not supported");
    cr_assert_str_eq(refusal("(a&b)*2"),
                     "at character 6: node counts ('(...)*N') are not supported");
    cr_assert_eq(gs_features_check("", NULL, 0), 0);
    cr_assert_eq(gs_features_check("a_1.x-y&(b|c)", NULL, 0), 0);
    cr_assert_not(node("a&&b", "a,b"), "a refused expression matches no node");
}

/* "[a|b]": a node meets it as it meets a|b; placement takes one alternative for all nodes. */
Test(features, a_matching_or_and_its_alternatives)
{
    char alt[32];

    cr_assert_eq(gs_features_check("[rack1|rack2|(a100&ib)]", NULL, 0), 0);
    cr_assert(gs_features_matching_or("[rack1|rack2]"));
    cr_assert_not(gs_features_matching_or("rack1|rack2"));
    cr_assert(node("[rack1|rack2]", "rack2"));
    cr_assert_not(node("[rack1|(a100&ib)]", "a100"));
    cr_assert(node("[rack1|(a100&ib)]", "ib,a100"));
    cr_assert(gs_features_alternative("[rack1|rack2|(a100&ib)]", 0, alt, sizeof(alt)));
    cr_assert_str_eq(alt, "rack1");
    cr_assert(gs_features_alternative("[rack1|rack2|(a100&ib)]", 2, alt, sizeof(alt)));
    cr_assert_str_eq(alt, "(a100&ib)");
    cr_assert_not(gs_features_alternative("[rack1|rack2|(a100&ib)]", 3, alt, sizeof(alt)));
    cr_assert_not(gs_features_alternative("[rack1|rack2]", 0, alt, 5), "does not fit");
    cr_assert_not(gs_features_alternative("rack1|rack2", 0, alt, sizeof(alt)));
    cr_assert_str_eq(refusal("[a&b]"), "at character 3: alternatives in '[...]' are joined by "
                                       "'|' (group the others in parentheses: '[(a&b)|c]')");
    cr_assert_str_eq(refusal("ib&[a|b]"),
                     "at character 4: a matching OR ('[a|b]') is the whole expression, or not "
                     "there");
    cr_assert_str_eq(refusal("[a|b]&ib"),
                     "at character 6: a matching OR ('[a|b]') is the whole expression, or not "
                     "there");
    cr_assert_str_eq(refusal("[a|b"), "at character 5: '|' or ']' expected");
    cr_assert_str_eq(refusal("[]"), "at character 2: a feature name or '(' expected after '[', "
                                    "not ']'");
    cr_assert_str_eq(refusal("[a*2&b*1]"), "at character 3: node counts ('a*N') are not supported");
    cr_assert_str_eq(refusal("[a|b]*2"),
                     "at character 6: node counts ('[...]*N') are not supported");
}

/* Expressions reach gschedd from users: their walk is bounded. */
Test(features, bounds_nesting_and_length)
{
    char deep[64] = "", longest[GS_FEATURES_EXPR_MAX + 8];

    for (int i = 0; i < GS_FEATURES_DEPTH_MAX; i++)
        strcat(deep, "(");
    strcat(deep, "a");
    for (int i = 0; i < GS_FEATURES_DEPTH_MAX; i++)
        strcat(deep, ")");
    cr_assert_eq(gs_features_check(deep, NULL, 0), 0);
    cr_assert(node(deep, "a"));
    memmove(deep + 1, deep, strlen(deep) + 1);
    deep[0] = '(';
    strcat(deep, ")");
    cr_assert(strstr(refusal(deep), "parentheses nested deeper than 8") != NULL);
    memset(longest, 'a', sizeof(longest) - 1);
    longest[sizeof(longest) - 1] = '\0';
    for (size_t i = 60; i < sizeof(longest) - 1; i += 61)
        longest[i] = '|';
    cr_assert(strstr(refusal(longest), "longer than 1024 characters") != NULL);
    cr_assert(gs_features_single("a100"));
    cr_assert_not(gs_features_single("a100|h100"));
    cr_assert_not(gs_features_single(""));
}
