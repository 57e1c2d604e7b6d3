/*
 * args.c: reading gsched's command-line arguments (see args.h). Options may come before,
 * between or after operands, as with GNU getopt, because users type "gsched cancel 7 8
 * --reason x" as often as the other order; "--" ends them.
 */
#include "cli/args.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/signals.h"

void cli_args_init(struct cli_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof(*a));
    a->argc = argc;
    a->argv = argv;
    a->next = 1;
}

static int fail(struct cli_args *a, const char *arg, const char *why)
{
    a->bad = arg;
    a->why = why;
    return -EINVAL;
}

static bool matches(const struct cli_opt *o, const char *arg, size_t len)
{
    if (strlen(o->name) == len && strncmp(o->name, arg, len) == 0)
        return true;
    return o->alias != NULL && strlen(o->alias) == len && strncmp(o->alias, arg, len) == 0;
}

/* eq: the '=' of "--opt=value", or NULL. */
static int take_value(struct cli_args *a, const struct cli_opt *o, const char *arg, const char *eq)
{
    a->value = NULL;
    if (!o->takes_value)
        return eq != NULL ? fail(a, arg, "option takes no value") : o->id;
    if (eq != NULL) {
        a->value = eq + 1;
        return o->id;
    }
    if (a->next >= a->argc)
        return fail(a, arg, "option needs a value");
    a->value = a->argv[a->next++];
    return o->id;
}

int cli_args_next(struct cli_args *a, const struct cli_opt *opts)
{
    const char *arg, *eq;
    size_t len;

    if (a->next >= a->argc)
        return 0;
    arg = a->argv[a->next++];
    if (!a->only_operands && strcmp(arg, "--") == 0) {
        a->only_operands = true;
        return cli_args_next(a, opts);
    }
    if (a->only_operands || arg[0] != '-' || arg[1] == '\0') {
        a->value = arg;
        return CLI_ARGS_OPERAND;
    }
    eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
    len = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
    for (const struct cli_opt *o = opts; o->name != NULL; o++) {
        if (matches(o, arg, len))
            return take_value(a, o, arg, eq);
    }
    return fail(a, arg, "unknown option");
}

/* Decimal digits only: strtoull alone would take "+7", " 7" and "-7" (as a huge number). */
int cli_parse_u64(const char *text, uint64_t *ret_value)
{
    unsigned long long v;
    char *end;

    if (text[0] < '0' || text[0] > '9')
        return -EINVAL;
    errno = 0;
    v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return -EINVAL;
    *ret_value = v;
    return 0;
}

int cli_parse_job_id(const char *text, uint64_t *ret_id)
{
    uint64_t id;

    if (cli_parse_u64(text, &id) < 0 || id == 0)
        return -EINVAL;
    *ret_id = id;
    return 0;
}

int cli_parse_signal(const char *text, uint32_t *ret_signal)
{
    int n;

    if (gs_signal_parse(text, strlen(text), &n) < 0)
        return -EINVAL;
    *ret_signal = (uint32_t)n;
    return 0;
}

const char *cli_signal_name(uint32_t signal)
{
    return signal <= GS_SIGNAL_MAX ? gs_signal_name((int)signal) : NULL;
}
