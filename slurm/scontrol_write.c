/*
 * scontrol_write.c: `scontrol write batch_script JOBID [FILE]`, as Slurm's: the script a
 * batch job runs, as it was submitted, written to FILE (default slurm-JOBID.sh, mode 0600:
 * scripts hold what their owners put in them) or to stdout for "-". An array element
 * (123_4) or an array's id names that job's script. gschedd hands a job's script only to
 * its owner and root (sched_query.c hides it from others), so another user's job is
 * refused as Slurm refuses it.
 */
#include "slurm/scontrol_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/client.h"
#include "common/path.h"
#include "slurm/slurm_cmd.h"
#include "slurm/slurm_fmt.h"

#define CMD "scontrol"

/* The ShowReply of the first job ref names, into *ret_reply; 0, or 1 printed. */
static int fetch(const char *socket_opt, const struct slurm_job_ref *ref, const char *text,
                 Gs__Envelope **ret_reply)
{
    struct slurm_filter filter = {.refs = ref, .nrefs = 1};
    Gs__ShowRequest req = GS__SHOW_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *list = NULL;
    int status = slurm_fetch_jobs(socket_opt, ref, 1, true, &list);

    if (status != 0)
        return status;
    for (size_t i = 0; i < list->queue_reply->n_jobs && req.job_id == 0; i++) {
        if (slurm_filter_match(&filter, list->queue_reply->jobs[i]))
            req.job_id = list->queue_reply->jobs[i]->job_id;
    }
    gs_proto_envelope_free(list);
    if (req.job_id == 0)
        return slurm_error(CMD, "Invalid job id specified: %s", text);
    env.body_case = GS__ENVELOPE__BODY_SHOW_REQUEST;
    env.show_request = &req;
    return slurm_call_as(CMD, socket_opt, &env, GS__ENVELOPE__BODY_SHOW_REPLY, NULL, ret_reply);
}

static int put_script(uint64_t job_id, const char *script, const char *file)
{
    char name[64];
    int fd, rc;

    if (strcmp(file, "-") == 0) {
        rc = gs_write_all(STDOUT_FILENO, script, strlen(script));
        return rc < 0 ? slurm_error(CMD, "stdout: %s", strerror(-rc)) : 0;
    }
    if (file[0] == '\0') {
        snprintf(name, sizeof(name), "slurm-%llu.sh", (unsigned long long)job_id);
        file = name;
    }
    fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return slurm_error(CMD, "%s: %s", file, strerror(errno));
    rc = gs_write_all(fd, script, strlen(script));
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc < 0)
        return slurm_error(CMD, "%s: %s", file, strerror(-rc));
    printf("batch script for job %llu written to %s\n", (unsigned long long)job_id, file);
    return 0;
}

int scontrol_write(const char *socket_opt, int argc, char **argv)
{
    Gs__Envelope *reply = NULL;
    const Gs__JobInfo *job;
    const char *script;
    struct slurm_job_ref ref;
    int status;

    if (argc < 1 || strcasecmp(argv[0], "batch_script") != 0)
        return slurm_error(CMD, "write what? (batch_script JOBID [FILE])");
    if (argc < 2 || argc > 3)
        return slurm_error(CMD, "write batch_script takes a job id and an optional file name");
    if (slurm_job_ref_parse(argv[1], &ref) < 0)
        return slurm_error(CMD, "Invalid job id specified: %s", argv[1]);
    status = fetch(socket_opt, &ref, argv[1], &reply);
    if (status != 0)
        return status;
    job = reply->show_reply->job;
    script =
        job != NULL && job->spec != NULL && job->spec->run != NULL ? job->spec->run->script : NULL;
    if (job == NULL)
        status = slurm_error(CMD, "Invalid job id specified: %s", argv[1]);
    else if ((script == NULL || script[0] == '\0') && getuid() != 0 && job->user != NULL &&
             job->user->uid != getuid())
        status = slurm_error(CMD,
                             "Unable to retrieve batch script for job %llu: Access/permission "
                             "denied",
                             (unsigned long long)job->job_id);
    else if (script == NULL || script[0] == '\0')
        status = slurm_error(CMD, "job %llu has no batch script (its tasks run a command)",
                             (unsigned long long)job->job_id);
    else
        status = put_script(job->job_id, script, argc == 3 ? argv[2] : "");
    gs_proto_envelope_free(reply);
    return status;
}
