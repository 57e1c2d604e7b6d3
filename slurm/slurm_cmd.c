/*
 * slurm_cmd.c: what cmd_squeue.c, cmd_sinfo.c, cmd_sacct.c, cmd_scancel.c and
 * cmd_scontrol.c do alike around their output (see slurm_cmd.h): the requests to gschedd,
 * the job ids an action applies to, the layout choice and the final write. Kept apart from
 * slurm_fmt.c, which stays pure (no daemon, no stdout) so its unit test needs neither.
 */
#include "slurm/slurm_cmd.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/client.h"
#include "cli/jobcmd.h"

int slurm_call(const char *socket_opt, Gs__Envelope *req, Gs__Envelope__BodyCase want,
               Gs__Envelope **ret_reply)
{
    char path[256];

    /* Both print why they failed (no socket, no daemon, an ErrorReply, another answer). */
    if (cli_socket_path(socket_opt, path, sizeof(path)) < 0 ||
        cli_call(path, req, want, ret_reply) < 0)
        return 1;
    return 0;
}

int slurm_call_as(const char *cmd, const char *socket_opt, Gs__Envelope *req,
                  Gs__Envelope__BodyCase want, const char *enoent, Gs__Envelope **ret_reply)
{
    Gs__Envelope *reply = NULL;
    char path[256];
    int status = 1;

    /* Raw: gschedd's refusals are worded as the command's errors, not gsched's. */
    if (cli_socket_path(socket_opt, path, sizeof(path)) < 0 ||
        cli_request_raw(path, req, &reply) < 0)
        return 1;
    if (reply->body_case == GS__ENVELOPE__BODY_ERROR) {
        const Gs__ErrorReply *e = reply->error;

        if (enoent != NULL && e->code == -ENOENT)
            slurm_error(cmd, "%s", enoent);
        else
            slurm_error(cmd, "%s",
                        e->message != NULL && e->message[0] != '\0'
                            ? e->message
                            : gs_strerror(e->code < 0 ? e->code : -EIO));
        for (size_t i = 0; i < e->n_details; i++)
            fprintf(stderr, "%s\n", e->details[i]);
        goto out;
    }
    if (reply->body_case != want) {
        slurm_error(cmd, "gschedd answered with %s, not %s (too old a gschedd?)",
                    gs_proto_body_name(reply->body_case), gs_proto_body_name(want));
        goto out;
    }
    *ret_reply = reply;
    reply = NULL;
    status = 0;
out:
    gs_proto_envelope_free(reply);
    return status;
}

static int fetch(const char *socket_opt, const struct slurm_job_ref *refs, size_t nrefs,
                 bool include_finished, bool with_steps, Gs__Envelope **ret_reply)
{
    Gs__QueueRequest req = GS__QUEUE_REQUEST__INIT;
    Gs__JobSelector sel = GS__JOB_SELECTOR__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    uint64_t ids[SLURM_MAX_REFS];

    for (size_t i = 0; i < nrefs && i < SLURM_MAX_REFS; i++)
        ids[i] = refs[i].id;
    sel.job_ids = ids;
    sel.n_job_ids = nrefs < SLURM_MAX_REFS ? nrefs : SLURM_MAX_REFS;
    req.selector = &sel;
    req.include_finished = include_finished;
    req.with_steps = with_steps;
    env.body_case = GS__ENVELOPE__BODY_QUEUE_REQUEST;
    env.queue_request = &req;
    return slurm_call(socket_opt, &env, GS__ENVELOPE__BODY_QUEUE_REPLY, ret_reply);
}

int slurm_fetch_jobs(const char *socket_opt, const struct slurm_job_ref *refs, size_t nrefs,
                     bool include_finished, Gs__Envelope **ret_reply)
{
    return fetch(socket_opt, refs, nrefs, include_finished, false, ret_reply);
}

int slurm_fetch_steps(const char *socket_opt, const struct slurm_job_ref *refs, size_t nrefs,
                      bool include_finished, Gs__Envelope **ret_reply)
{
    return fetch(socket_opt, refs, nrefs, include_finished, true, ret_reply);
}

int slurm_fetch_cluster(const char *socket_opt, Gs__Envelope **ret_parts, Gs__Envelope **ret_nodes)
{
    Gs__PartitionsRequest preq = GS__PARTITIONS_REQUEST__INIT;
    Gs__NodesRequest nreq = GS__NODES_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char path[256];

    /* One socket lookup for both requests: the configuration is read once. */
    if (cli_socket_path(socket_opt, path, sizeof(path)) < 0)
        return 1;
    env.body_case = GS__ENVELOPE__BODY_PARTITIONS_REQUEST;
    env.partitions_request = &preq;
    if (cli_call(path, &env, GS__ENVELOPE__BODY_PARTITIONS_REPLY, ret_parts) < 0)
        return 1;
    env.body_case = GS__ENVELOPE__BODY_NODES_REQUEST;
    env.nodes_request = &nreq;
    return cli_call(path, &env, GS__ENVELOPE__BODY_NODES_REPLY, ret_nodes) < 0 ? 1 : 0;
}

int slurm_refs_whole(const char *cmd, const struct slurm_job_ref *refs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (refs[i].het)
            return slurm_error(cmd,
                               "%llu+%u: gsched acts on a heterogeneous job as a whole; "
                               "use %llu",
                               (unsigned long long)refs[i].id, refs[i].het_offset,
                               (unsigned long long)refs[i].id);
    }
    return 0;
}

int slurm_resolve_ids(const char *cmd, const char *socket_opt, const struct slurm_filter *f,
                      uint64_t **ret_ids, size_t *ret_n, Gs__Envelope **ret_queue)
{
    bool lookup = slurm_filter_narrows(f);
    Gs__Envelope *reply = NULL;
    const Gs__QueueReply *r = NULL;
    uint64_t *ids = NULL;
    size_t n = 0;
    int status;

    if (ret_queue != NULL)
        *ret_queue = NULL;
    status = slurm_refs_whole(cmd, f->refs, f->nrefs);
    if (status != 0)
        return status;
    for (size_t i = 0; i < f->nrefs; i++)
        lookup |= f->refs[i].nranges > 0;
    /*
     * Only the matching jobs' own ids are sent then: gschedd knows no element ranges, and
     * an empty selector would select every job.
     */
    if (lookup) {
        status = slurm_fetch_jobs(socket_opt, f->refs, f->nrefs, false, &reply);
        if (status != 0)
            return status;
        r = reply->queue_reply;
    }
    ids = calloc((r != NULL ? r->n_jobs : f->nrefs) + 1, sizeof(*ids));
    if (ids == NULL) {
        status = slurm_error(cmd, "out of memory");
        goto out;
    }
    for (size_t i = 0; r == NULL && i < f->nrefs; i++)
        ids[n++] = f->refs[i].id;
    for (size_t i = 0; r != NULL && i < r->n_jobs; i++) {
        if (slurm_filter_match(f, r->jobs[i]))
            ids[n++] = r->jobs[i]->job_id;
    }
    *ret_ids = ids;
    *ret_n = n;
    ids = NULL;
    if (ret_queue != NULL) {
        *ret_queue = reply;
        reply = NULL;
    }
    status = 0;
out:
    gs_proto_envelope_free(reply);
    free(ids);
    return status;
}

int slurm_jobs_option(const char *cmd, const char *list, struct slurm_job_ref *refs, size_t *n)
{
    char bad[64];
    int rc = slurm_job_list_parse(list, refs, SLURM_MAX_REFS, n, bad, sizeof(bad));

    if (rc == -E2BIG)
        return slurm_error(cmd, "at most %d job ids", SLURM_MAX_REFS);
    if (rc < 0)
        return slurm_error(cmd, "Invalid job id: %s", bad);
    return 0;
}

int slurm_states_option(const char *cmd, const char *what, const char *list, uint32_t *mask)
{
    const char *bad = NULL;

    if (slurm_state_list_parse(list, mask, &bad) < 0)
        return slurm_error(cmd, "Invalid %s specified: %.*s", what, (int)strcspn(bad, ","), bad);
    return 0;
}

int slurm_format_choose(const char *cmd, const char *format, const char *names,
                        const char *fallback, const struct slurm_field *fields, size_t nfields,
                        struct slurm_format *ret)
{
    char why[256];
    int rc;

    if (format == NULL && names != NULL)
        rc = slurm_format_parse_names(names, fields, nfields, 20, ret, why, sizeof(why));
    else
        rc = slurm_format_parse(format != NULL ? format : fallback, fields, nfields, ret, why,
                                sizeof(why));
    if (rc < 0)
        return slurm_error(cmd, "%s", rc == -EINVAL ? why : "out of memory");
    return 0;
}

int slurm_print(const char *cmd, int rc, const struct gs_buf *out)
{
    if (rc == 0 && (out->len == 0 || fwrite(out->data, 1, out->len, stdout) == out->len))
        return 0;
    return slurm_error(cmd, "cannot write the listing");
}

const char *slurm_my_name(char *out, size_t size)
{
    struct passwd *pw = getpwuid(getuid());

    if (pw != NULL)
        snprintf(out, size, "%s", pw->pw_name);
    else
        snprintf(out, size, "%u", (unsigned)getuid());
    return out;
}

const char *slurm_group_name(uint32_t gid, char *buf, size_t size)
{
    const struct group *gr = getgrgid(gid);

    if (gr != NULL && gr->gr_name != NULL)
        return gr->gr_name;
    snprintf(buf, size, "%u", gid);
    return buf;
}
