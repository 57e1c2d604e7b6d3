/*
 * jobcmd.h: plumbing the job subcommands (submit, sbatch, queue, show, cancel, hold, release,
 * wait, logs) share: one exchange with gschedd whose answer must be of the expected kind,
 * sending a job with who submits it, the usage error for a bad argument, and the list of
 * job ids typed on the command line.
 * Everything here prints its own failures to stderr. Single-threaded, like the CLI.
 */
#ifndef GS_CLI_JOBCMD_H
#define GS_CLI_JOBCMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/args.h"
#include "common/jobspec.h"
#include "common/json.h"
#include "proto/frame.h"

/*
 * Sends req (the caller sets its body) to gschedd at socket_path (from cli_socket_path)
 * and stores the reply in *ret_reply (free with gs_proto_envelope_free) when its body is
 * want. An ErrorReply has had its message and details printed by cli_request; a reply of
 * another kind prints "gsched: gschedd answered with KIND". Returns 0 or < 0.
 */
int cli_call(const char *socket_path, Gs__Envelope *req, Gs__Envelope__BodyCase want,
             Gs__Envelope **ret_reply);

/*
 * Sends spec as a SubmitRequest (validate_only: only ask whether it would be taken, as
 * sbatch --test-only; source: the job file's absolute path, or "") with who submits: this
 * process's uid, gid and supplementary groups and the name user. gschedd trusts
 * SO_PEERCRED, but records the name and groups sent. It carries a client key
 * (GSCHED_SUBMIT_KEY when set, else 128 random bits) and is sent again with the same key
 * when gschedd went away before answering (cli_request_retried), so it is queued once
 * whatever the connection does. The reply, whatever its kind (a SubmitReply, or an
 * ErrorReply the caller words), goes in *ret_reply. Out of memory is printed as "PREFIX:
 * why", an unreachable gschedd as cli_request_raw prints it. Returns 0 or < 0.
 */
int cli_submit_send(const char *socket_path, const struct gs_jobspec *spec, const char *source,
                    bool validate_only, const char *user, const char *prefix,
                    Gs__Envelope **ret_reply);

/* "key": [the n strings of v] in the object j writes (a SubmitReply's warnings). */
void cli_json_kv_strings(struct gs_json *j, const char *key, char *const *v, size_t n);

/* The usage error for a failed cli_args_next(): "gsched CMD: unknown option '--x'"; 2. */
int cli_args_error(const char *cmd, const struct cli_args *a);

/* Job ids in the order typed; caller-owned, ids NULL until the first. */
struct cli_job_ids {
    uint64_t *ids;
    size_t n;
    size_t cap;
};

/* Parses text as a job id and appends it. Returns 0, -EINVAL (not an id) or -ENOMEM. */
int cli_job_ids_add(struct cli_job_ids *v, const char *text);
void cli_job_ids_release(struct cli_job_ids *v);

/*
 * For the parse loops: adds operand a->value as a job id; on failure returns the exit
 * status to leave with (2, "gsched CMD: not a job id: 'x'"; 1 out of memory), else 0.
 */
int cli_job_ids_take(struct cli_job_ids *v, const char *cmd, const struct cli_args *a);

/*
 * `gsched CMD JOB [--json] [--socket PATH]`, the shape of show and seff: reads the
 * arguments, asks gschedd for the job and stores the ShowReply's envelope in *ret_reply
 * (free with gs_proto_envelope_free) and --json in *ret_json. Returns 0, or the exit status
 * to leave with (2 bad usage, 1 failure; the reason printed).
 */
int cli_show_fetch(const char *cmd, int argc, char **argv, bool *ret_json,
                   Gs__Envelope **ret_reply);

/* Sleeps ms milliseconds (for polling loops), resuming after signals. */
void cli_sleep_ms(uint64_t ms);

#endif
