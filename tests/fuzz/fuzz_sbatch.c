/*
 * fuzz_sbatch.c: libFuzzer harness for Slurm batch scripts, along the path `gsched sbatch`
 * takes (slurm/cmd_sbatch.c): gs_sbatch_script_index() and gs_sbatch_parse() read the command
 * line and the script's #SBATCH lines (slurm/sbatch.h), gs_sbatch_to_jobspec() makes the
 * job (slurm/sbatch_spec.h, which runs gs_jobspec_check), and --test-only shows it with
 * gs_sbatch_show() in both formats; gs_sbatch_to_kv() is the parsed request's own view.
 *
 * Input: when it holds a NUL, the bytes before the first NUL are the command line, one
 * argument per line (at most MAX_ARGS; an empty argument is kept), and the rest is the
 * script, none when empty (as with --wrap); without a NUL it is all script, as with
 * `gsched sbatch run.sh`. Arguments after the script's name are the script's arguments.
 * The submitter's directory, host, user and environment are fixed, so runs reproduce.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/jobspec.h"
#include "slurm/sbatch.h"
#include "slurm/sbatch_spec.h"

#define MAX_ARGS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *submit_envp[] = {"HOME=/home/alice", "PATH=/usr/bin:/bin", "SLURM_JOB_ID=9",
                              "PWD=/home/alice",  "VENV=/opt/venv",     NULL};

static const struct gs_sbatch_env submit_env = {
    .cwd = "/home/alice/run",
    .hostname = "login1",
    .user = "alice",
    .envp = submit_envp,
};

/* Splits the NUL-terminated text at newlines, in place, into up to MAX_ARGS arguments. */
static int split_args(char *text, char **argv)
{
    int argc = 0;

    argv[argc++] = text;
    for (char *p = text; *p != '\0' && argc < MAX_ARGS; p++) {
        if (*p == '\n') {
            *p = '\0';
            argv[argc++] = p + 1;
        }
    }
    argv[argc] = NULL;
    return argc;
}

/* What --test-only prints, in both formats, and the request's own key=value view. */
static void show(const struct gs_jobspec *spec, const struct gs_sbatch *sb)
{
    struct gs_buf out = GS_BUF_INIT;

    (void)gs_sbatch_to_kv(sb, &out);
    (void)gs_sbatch_show(spec, sb, "run.sh", submit_env.user, GS_SBATCH_SHOW_KV, &out);
    (void)gs_sbatch_show(spec, sb, "run.sh", submit_env.user, GS_SBATCH_SHOW_JSON, &out);
    gs_buf_release(&out);
}

static void submit(const char *script, size_t len, int argc, char **argv)
{
    struct gs_buf errors = GS_BUF_INIT, warnings = GS_BUF_INIT;
    struct gs_jobspec *spec = NULL;
    struct gs_sbatch *sb = NULL;
    int opts = gs_sbatch_script_index(argc, argv);
    char **script_args = opts < argc ? argv + opts + 1 : NULL;
    int rc;

    if (opts < 0 || opts > argc)
        abort();
    rc = gs_sbatch_parse(script, len, "run.sh", opts, argv, &sb, &errors, &warnings);
    if (rc == 0)
        rc = gs_sbatch_to_jobspec(sb, script, script_args, &submit_env, &spec, &errors, &warnings);
    if (rc == -EINVAL && errors.len == 0)
        abort(); /* every refusal says why */
    if (rc == 0)
        show(spec, sb);
    gs_jobspec_free(spec);
    gs_sbatch_free(sb);
    gs_buf_release(&errors);
    gs_buf_release(&warnings);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    char *argv[MAX_ARGS + 1] = {NULL};
    const char *nul;
    int argc = 0;

    if (copy == NULL)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    nul = memchr(copy, '\0', size);
    if (nul == NULL) {
        submit(copy, size, 0, argv);
    } else {
        size_t script_len = size - (size_t)(nul + 1 - copy);

        argc = split_args(copy, argv);
        submit(script_len > 0 ? nul + 1 : NULL, script_len, argc, argv);
    }
    free(copy);
    return 0;
}
