/*
 * args.h: what users type on gsched's command lines, read the same way by every subcommand:
 * options (a small getopt without global state), job ids, signal names, and paths made
 * absolute before they are sent to gschedd (which runs elsewhere, in another directory).
 * Nothing here prints: callers turn failures into usage errors naming the argument.
 * No allocation except into a caller's gs_buf; thread-safe.
 */
#ifndef GS_CLI_ARGS_H
#define GS_CLI_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"

/* One option a subcommand takes; a table of them ends with a zeroed entry. */
struct cli_opt {
    const char *name;  /* "--json" */
    const char *alias; /* "-f", or NULL */
    bool takes_value;  /* "--socket PATH" or "--socket=PATH" */
    int id;            /* returned by cli_args_next(); must be > CLI_ARGS_OPERAND */
};

#define CLI_ARGS_OPERAND 1

/* Iterator over argv[1..argc-1]; argv[0] is the subcommand's name. */
struct cli_args {
    int argc;
    char **argv;
    int next;           /* index of the next argument */
    bool only_operands; /* after "--" */
    const char *value;  /* the option's value, or the operand */
    const char *bad;    /* on -EINVAL: the argument at fault */
    const char *why;    /* on -EINVAL: "unknown option", "option needs a value" */
};

void cli_args_init(struct cli_args *a, int argc, char **argv);

/*
 * The next argument: an option's id (its value, if it takes one, in a->value), or
 * CLI_ARGS_OPERAND with the argument in a->value ("-" alone is an operand), or 0 when
 * there are no more. -EINVAL for an unknown option or a missing value, with a->bad and
 * a->why saying which and why.
 */
int cli_args_next(struct cli_args *a, const struct cli_opt *opts);

/* A plain decimal number (no sign, no blanks, no suffix). Returns 0 or -EINVAL. */
int cli_parse_u64(const char *text, uint64_t *ret_value);
/* A job id: decimal, 1 or more, nothing else. Returns 0 or -EINVAL. */
int cli_parse_job_id(const char *text, uint64_t *ret_id);

/* A signal by name ("TERM", "SIGTERM", "usr1", any case) or number 1..64. 0 or -EINVAL. */
int cli_parse_signal(const char *text, uint32_t *ret_signal);
/* "TERM" for SIGTERM; NULL for a number without a name here. */
const char *cli_signal_name(uint32_t signal);

#endif
