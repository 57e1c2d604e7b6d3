/*
 * alloc_spec.c: the job an allocation asks for (alloc.h's cli_alloc_spec): sbatch's options,
 * as salloc takes them and as srun outside a job hands on the ones sbatch also reads, read
 * by slurm/sbatch.c and made a job by slurm/sbatch_spec.c over a stand-in batch script,
 * then named after the command's program. Pure but for where it runs (directory, host,
 * user); apart from the exchange so that tests/slurm/test_srun_alloc.c can drive it.
 */
#include "slurm/alloc.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/error.h"
#include "slurm/sbatch.h"
#include "slurm/sbatch_spec.h"

/* The job's stand-in batch script: what `scontrol show job` and the store keep. */
#define ALLOC_SCRIPT "#!/bin/sh\n# an allocation: its command runs on the submit host\n"

static void say_lines(const char *prog, const struct gs_buf *text, const char *kind)
{
    const char *p = text->data;

    while (p != NULL && *p != '\0') {
        size_t len = strcspn(p, "\n");

        fprintf(stderr, "%s: %s: %.*s\n", prog, kind, (int)len, p);
        p += len;
        if (*p == '\n')
            p++;
    }
}

int cli_alloc_spec(const char *prog, char **opts, int nopts, const char *command,
                   struct gs_jobspec **ret)
{
    struct gs_buf errors = GS_BUF_INIT, warnings = GS_BUF_INIT;
    struct gs_sbatch *sb = NULL;
    struct gs_jobspec *spec = NULL;
    const struct passwd *pw = getpwuid(getuid());
    char cwd[4096], host[256];
    char *no_env[] = {NULL};
    struct gs_sbatch_env env = {.cwd = cwd, .hostname = host, .envp = no_env};
    const char *base = strrchr(command, '/');
    int rc;

    if (getcwd(cwd, sizeof(cwd)) == NULL) {
        rc = -errno;
        fprintf(stderr, "%s: error: current directory: %s\n", prog, gs_strerror(rc));
        return rc;
    }
    if (gethostname(host, sizeof(host)) < 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    env.user = pw != NULL ? pw->pw_name : "";
    rc = gs_sbatch_parse(ALLOC_SCRIPT, strlen(ALLOC_SCRIPT), prog, nopts, opts, &sb, &errors,
                         &warnings);
    if (rc == 0)
        rc = gs_sbatch_to_jobspec(sb, ALLOC_SCRIPT, NULL, &env, &spec, &errors, &warnings);
    say_lines(prog, &warnings, "warning");
    say_lines(prog, &errors, "error");
    if (rc < 0) {
        if (errors.len == 0)
            fprintf(stderr, "%s: error: %s\n", prog, gs_strerror(rc));
        goto out;
    }
    if (sb->set_by[GS_SBATCH_OPT_JOB_NAME] == GS_SBATCH_UNSET) {
        char *name = strdup(base != NULL ? base + 1 : command);

        if (name == NULL || !gs_jobspec_name_ok(name)) {
            free(name);
            name = strdup(prog); /* a program name no job name can be */
        }
        if (name == NULL) {
            rc = -ENOMEM;
            fprintf(stderr, "%s: error: out of memory\n", prog);
            goto out;
        }
        free(spec->name);
        spec->name = name;
    }
    *ret = spec;
    spec = NULL;
out:
    gs_jobspec_free(spec);
    gs_sbatch_free(sb);
    gs_buf_release(&errors);
    gs_buf_release(&warnings);
    return rc;
}
