/*
 * scontrol_update.c: `scontrol update`, as Slurm's, for nodes and jobs:
 *
 *     scontrol update NodeName=LIST State=DRAIN Reason=TEXT
 *     scontrol update NodeName=LIST State=RESUME        (UNDRAIN too)
 *     scontrol update JobId=ID [Priority=N] [Nice=N] [TimeLimit=TIME] [Partition=NAME] [QOS=NAME]
 *                              [Dependency=LIST] [Licenses=LIST] [StartTime=TIME|now]
 *                              [Name=NAME] [Comment=TEXT] [WCKey=KEY] [Features=NAME]
 *                              [ExcNodeList=LIST]
 *     scontrol update ReservationName=NAME [StartTime=TIME] [EndTime=TIME|Duration=TIME]
 *                              [Nodes=LIST] [Users=a,b] [Accounts=x,y] [Flags=F]
 *                              [Users+=a] [Users-=b] [Accounts+=x] [Accounts-=y] [Flags+-=F]
 *
 * Keys are case-insensitive, LIST a hostlist (node[1-4,7]). Nodes are root's: gschedd
 * refuses anyone else, and a drain needs a reason (Slurm's rule), so nobody later wonders
 * why a node sits idle. A job's owner may raise its nice, lower its time limit, move it to
 * another partition and change its dependencies while it is pending; its priority and a
 * negative nice are root's (gschedd checks). A running job's TimeLimit changes too, by the
 * same rules, counted from its start (one already passed ends it); nothing else of it. TIME is
 * Slurm's (MIN, MIN:SEC, H:M:S, D-H, D-H:M, D-H:M:S, or UNLIMITED), Dependency sbatch's
 * (afterok:12:13, singleton, "" none), Licenses sbatch -L's (matlab:2,fluent; "" none: a
 * pending job's only). Nothing is printed on success for nodes and jobs,
 * "Reservation updated." for a reservation (Slurm's words); each failure prints a line and exits 1.
 * A reservation's words are read by scontrol_resv.c; they are root's to change (gschedd checks).
 */
#include "slurm/scontrol_update.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/client.h"
#include "common/clock.h"
#include "common/hostlist.h"
#include "common/jobspec_license.h"
#include "common/units.h"
#include "slurm/scontrol_resv.h"
#include "slurm/slurm_cmd.h"
#include "slurm/sbatch.h"

#define CMD "scontrol"

struct node_update {
    const char *nodes;
    const char *state;
    const char *reason;
    /* JobId=: the job's keys */
    const char *job, *priority, *nice, *time_limit, *partition, *dependency, *qos, *licenses;
    const char *start_time, *name, *comment, *wckey, *features, *exc_nodes;
};

/* What a job's update request points into, released by job_storage_release. */
struct job_storage {
    char **exclude; /* ExcNodeList=, expanded */
    Gs__Dependency *deps, **dep_ptrs;
    struct gs_job_license *licenses;
    size_t nlicenses;
    Gs__JobLicense pb[GS_JOBSPEC_LICENSES_MAX], *pb_ptrs[GS_JOBSPEC_LICENSES_MAX];
};

static void job_storage_release(struct job_storage *st)
{
    gs_hostlist_free(st->exclude);
    free(st->deps);
    free(st->dep_ptrs);
    gs_license_list_free(st->licenses, st->nlicenses);
}

static bool key_is(const char *word, size_t klen, const char *key)
{
    return klen == strlen(key) && strncasecmp(word, key, klen) == 0;
}

/* KEY=VALUE words into u; 0 or 1 with the error printed. */
static int parse_words(int argc, char **argv, struct node_update *u)
{
    static const struct {
        const char *key;
        size_t offset;
    } keys[] = {
        {"NodeName", offsetof(struct node_update, nodes)},
        {"State", offsetof(struct node_update, state)},
        {"Reason", offsetof(struct node_update, reason)},
        {"JobId", offsetof(struct node_update, job)},
        {"Priority", offsetof(struct node_update, priority)},
        {"Nice", offsetof(struct node_update, nice)},
        {"TimeLimit", offsetof(struct node_update, time_limit)},
        {"Partition", offsetof(struct node_update, partition)},
        {"Dependency", offsetof(struct node_update, dependency)},
        {"QOS", offsetof(struct node_update, qos)},
        {"Licenses", offsetof(struct node_update, licenses)},
        {"StartTime", offsetof(struct node_update, start_time)},
        {"Name", offsetof(struct node_update, name)},
        {"JobName", offsetof(struct node_update, name)},
        {"Comment", offsetof(struct node_update, comment)},
        {"WCKey", offsetof(struct node_update, wckey)},
        {"Features", offsetof(struct node_update, features)},
        {"Constraint", offsetof(struct node_update, features)},
        {"ExcNodeList", offsetof(struct node_update, exc_nodes)},
    };

    for (int i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        size_t klen = eq != NULL ? (size_t)(eq - argv[i]) : 0, k;

        if (eq == NULL)
            return slurm_error(CMD, "update: '%s' is not KEY=VALUE", argv[i]);
        for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
            if (key_is(argv[i], klen, keys[k].key)) {
                *(const char **)((char *)u + keys[k].offset) = eq + 1;
                break;
            }
        }
        if (k == sizeof(keys) / sizeof(keys[0]))
            return slurm_error(CMD, "Update of this parameter is not supported: %s", argv[i]);
    }
    if ((u->nodes == NULL) == (u->job == NULL))
        return slurm_error(CMD, "update: NodeName=LIST, JobId=ID or ReservationName=NAME is "
                                "required (one of them)");
    if (u->job != NULL) {
        if (u->state != NULL || u->reason != NULL)
            return slurm_error(CMD, "update: State= and Reason= are for nodes (NodeName=)");
        return 0;
    }
    if (u->priority != NULL || u->nice != NULL || u->time_limit != NULL || u->partition != NULL ||
        u->dependency != NULL || u->qos != NULL || u->licenses != NULL || u->start_time != NULL ||
        u->name != NULL || u->comment != NULL || u->wckey != NULL || u->features != NULL ||
        u->exc_nodes != NULL)
        return slurm_error(CMD, "update: Priority=, Nice=, TimeLimit=, Partition=, QOS=, "
                                "Dependency=, Licenses=, StartTime=, Name=, Comment=, WCKey=, "
                                "Features= and ExcNodeList= are for jobs (JobId=)");
    if (u->nodes[0] == '\0')
        return slurm_error(CMD, "update: NodeName=LIST is empty");
    if (u->state == NULL)
        return slurm_error(CMD, "update: State=DRAIN or State=RESUME is required");
    return 0;
}

static int parse_int(const char *key, const char *text, int32_t *ret)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v > INT32_MAX || v < -INT32_MAX)
        return slurm_error(CMD, "Invalid %s value: %s", key, text);
    *ret = (int32_t)v;
    return 0;
}

/* Licenses=LIST into req, its storage in st. */
static int job_licenses(const char *text, Gs__JobUpdateRequest *req, struct job_storage *st)
{
    char why[160];
    int rc = gs_license_list_parse(text, &st->licenses, &st->nlicenses, why, sizeof(why));

    if (rc == -ENOMEM)
        return slurm_error(CMD, "out of memory");
    if (rc < 0)
        return slurm_error(CMD, "Invalid Licenses value: %s: %s", text, why);
    for (size_t i = 0; i < st->nlicenses; i++) { /* the parser keeps to the maximum */
        gs__job_license__init(&st->pb[i]);
        st->pb[i].name = st->licenses[i].name;
        st->pb[i].count = st->licenses[i].count;
        st->pb_ptrs[i] = &st->pb[i];
    }
    req->set_licenses = true;
    req->licenses = st->pb_ptrs;
    req->n_licenses = st->nlicenses;
    return 0;
}

/* StartTime= (sbatch --begin's forms; "now" or "" clears it), Name=, Comment=, WCKey=,
 * Features= and ExcNodeList= (a hostlist; "" none) into req. */
static int job_words(const struct node_update *u, Gs__JobUpdateRequest *req, struct job_storage *st)
{
    struct gs_error err;

    gs_error_clear(&err);
    if (u->start_time != NULL) {
        req->set_begin = true;
        if (u->start_time[0] != '\0' && strcasecmp(u->start_time, "now") != 0 &&
            gs_sbatch_parse_begin(u->start_time, gs_clock_wall_ms(), &req->begin_ms, &err) < 0)
            return slurm_error(CMD, "Invalid StartTime value: %s: %s", u->start_time, err.msg);
    }
    if (u->name != NULL) {
        if (u->name[0] == '\0')
            return slurm_error(CMD, "Invalid Name value: an empty name");
        req->name = (char *)u->name;
    }
    if (u->comment != NULL) {
        req->set_comment = true;
        req->comment = (char *)u->comment;
    }
    if (u->wckey != NULL) {
        req->set_wckey = true;
        req->wckey = (char *)u->wckey;
    }
    if (u->features != NULL) {
        req->set_constraint = true;
        req->constraint = (char *)u->features;
    }
    if (u->exc_nodes != NULL) {
        req->set_exclude = true;
        if (u->exc_nodes[0] != '\0' &&
            gs_hostlist_expand(u->exc_nodes, &st->exclude, &req->n_exclude, &err) < 0)
            return slurm_error(CMD, "Invalid ExcNodeList value: %s, column %d: %s", u->exc_nodes,
                               err.col, err.msg);
        req->exclude = st->exclude;
    }
    return 0;
}

/* JobId=ID's keys into req, what it points into in st (the caller's to release). */
static int job_request(const struct node_update *u, Gs__JobUpdateRequest *req,
                       struct job_storage *st)
{
    struct gs_sbatch_deps d = {0};
    struct slurm_job_ref ref;
    struct gs_error err;
    char *end;
    int status = 0;

    /* "42+1" is a job id of ours, but not one an update can act on alone. */
    if (slurm_job_ref_parse(u->job, &ref) == 0 && ref.het)
        return slurm_refs_whole(CMD, &ref, 1);
    errno = 0;
    req->job_id = strtoull(u->job, &end, 10);
    if (errno != 0 || end == u->job || *end != '\0' || req->job_id == 0)
        return slurm_error(CMD, "Invalid job id specified: %s", u->job);
    if (u->priority != NULL) {
        req->set_priority = true;
        status = parse_int("Priority", u->priority, &req->priority);
    }
    if (status == 0 && u->nice != NULL) {
        req->set_nice = true;
        status = parse_int("Nice", u->nice, &req->nice);
    }
    if (status == 0 && u->time_limit != NULL) {
        req->set_time_limit = true;
        if (strcasecmp(u->time_limit, "UNLIMITED") == 0 ||
            strcasecmp(u->time_limit, "INFINITE") == 0)
            req->time_limit_s = 0;
        else if (gs_parse_duration(u->time_limit, &req->time_limit_s) < 0 || req->time_limit_s == 0)
            status = slurm_error(CMD,
                                 "Invalid TimeLimit value: %s (MIN, MIN:SEC, H:M:S, D-H, "
                                 "D-H:M, D-H:M:S or UNLIMITED)",
                                 u->time_limit);
    }
    if (status == 0 && u->partition != NULL) {
        if (u->partition[0] == '\0')
            status = slurm_error(CMD, "Invalid Partition value: an empty name");
        req->partition = (char *)u->partition;
    }
    if (status == 0 && u->qos != NULL) {
        if (u->qos[0] == '\0')
            status = slurm_error(CMD, "Invalid QOS value: an empty name");
        req->qos = (char *)u->qos;
    }
    if (status == 0 && u->licenses != NULL)
        status = job_licenses(u->licenses, req, st);
    if (status == 0)
        status = job_words(u, req, st);
    if (status != 0 || u->dependency == NULL)
        return status;
    req->set_dependency = true;
    gs_error_clear(&err);
    if (u->dependency[0] != '\0' && gs_sbatch_parse_dependency(u->dependency, &d, &err) < 0)
        return slurm_error(CMD, "Dependency=%s, column %d: %s", u->dependency, err.col, err.msg);
    st->deps = calloc(d.n + 1, sizeof(*st->deps));
    st->dep_ptrs = calloc(d.n + 1, sizeof(*st->dep_ptrs));
    if (st->deps == NULL || st->dep_ptrs == NULL) {
        gs_sbatch_deps_release(&d);
        return slurm_error(CMD, "out of memory");
    }
    for (size_t i = 0; i < d.n; i++) {
        if (d.terms[i].singleton) {
            req->singleton = true;
            continue;
        }
        /* An update's types are common/jobspec.h's, not the JobSpec's (those plus one). */
        gs__dependency__init(&st->deps[req->n_depends_on]);
        st->deps[req->n_depends_on].type = (Gs__DependencyType)d.terms[i].dep.type;
        st->deps[req->n_depends_on].job_id = d.terms[i].dep.job_id;
        st->deps[req->n_depends_on].delay_min = d.terms[i].dep.delay_min;
        st->deps[req->n_depends_on].target = (Gs__DependencyTarget)d.terms[i].dep.target;
        st->deps[req->n_depends_on].task_id = d.terms[i].dep.task_id;
        st->dep_ptrs[req->n_depends_on] = &st->deps[req->n_depends_on];
        req->n_depends_on++;
    }
    req->depends_on = st->dep_ptrs;
    req->depends_any = d.op != GS_SBATCH_DEP_ALL;
    gs_sbatch_deps_release(&d);
    return 0;
}

static int update_job(const char *socket_opt, const struct node_update *u)
{
    Gs__JobUpdateRequest req = GS__JOB_UPDATE_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    struct job_storage st = {0};
    int status = job_request(u, &req, &st);

    if (status != 0)
        goto out;
    env.body_case = GS__ENVELOPE__BODY_JOB_UPDATE_REQUEST;
    env.job_update_request = &req;
    status = slurm_call(socket_opt, &env, GS__ENVELOPE__BODY_JOB_UPDATE_REPLY, &reply);
    for (size_t i = 0; status == 0 && i < reply->job_update_reply->n_results; i++) {
        const Gs__JobActionResult *r = reply->job_update_reply->results[i];

        if (r->code == 0)
            continue;
        if (r->code == -ENOENT)
            slurm_error(CMD, "Invalid job id specified");
        else
            slurm_error(CMD, "%s", r->message);
        status = 1;
    }
out:
    gs_proto_envelope_free(reply);
    job_storage_release(&st);
    return status;
}

static int send_update(const char *socket_opt, const struct node_update *u,
                       Gs__NodeAdminAction action, char **names, size_t n)
{
    Gs__NodeUpdateRequest req = GS__NODE_UPDATE_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    int status;

    req.names = names;
    req.n_names = n;
    req.action = action;
    req.reason = (char *)(u->reason != NULL ? u->reason : "");
    env.body_case = GS__ENVELOPE__BODY_NODE_UPDATE_REQUEST;
    env.node_update_request = &req;
    status = slurm_call(socket_opt, &env, GS__ENVELOPE__BODY_NODE_UPDATE_REPLY, &reply);
    for (size_t i = 0; status == 0 && i < reply->node_update_reply->n_results; i++) {
        const Gs__NodeUpdateResult *r = reply->node_update_reply->results[i];

        if (r->code == 0)
            continue;
        if (r->code == -ENOENT)
            slurm_error(CMD, "Invalid node name specified: %s", r->name);
        else
            slurm_error(CMD, "%s", r->message);
        status = 1;
    }
    gs_proto_envelope_free(reply);
    return status;
}

/* --- reservations ----------------------------------------------------------------------- */

int scontrol_resv_call(const char *cmd, const char *socket_opt, Gs__ReservationRequest *req,
                       const char *missing, Gs__Envelope **ret_reply)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char enoent[160];

    env.body_case = GS__ENVELOPE__BODY_RESERVATION_REQUEST;
    env.reservation_request = req;
    snprintf(enoent, sizeof(enoent), "Reservation %s not found", missing != NULL ? missing : "");
    return slurm_call_as(cmd, socket_opt, &env, GS__ENVELOPE__BODY_RESERVATION_REPLY,
                         missing != NULL ? enoent : NULL, ret_reply);
}

/*
 * Duration= without StartTime=: the end is the current start plus the duration, and only
 * gschedd knows the start, so it is asked first. Returns 0 or 1.
 */
static int end_from_start(const char *socket_opt, struct scontrol_resv *r)
{
    Gs__ReservationRequest req = GS__RESERVATION_REQUEST__INIT;
    Gs__Reservation which = GS__RESERVATION__INIT;
    Gs__Envelope *reply = NULL;
    const Gs__ReservationReply *rr;
    int status;

    which.name = r->resv.name;
    req.action = GS__RESERVATION_ACTION__RESERVATION_ACTION_SHOW;
    req.reservation = &which;
    status = scontrol_resv_call(CMD, socket_opt, &req, r->resv.name, &reply);
    if (status != 0)
        return status;
    rr = reply->reservation_reply;
    for (size_t i = 0; i < rr->n_reservations; i++) {
        if (strcmp(rr->reservations[i]->name, r->resv.name) == 0) {
            r->resv.end_ms = rr->reservations[i]->start_ms + r->duration_s * 1000;
            goto out;
        }
    }
    status = slurm_error(CMD, "Reservation %s not found", r->resv.name);
out:
    gs_proto_envelope_free(reply);
    return status;
}

static int update_reservation(const char *socket_opt, int argc, char **argv)
{
    struct scontrol_resv r;
    Gs__Envelope *reply = NULL;
    char why[512];
    int status;

    if (scontrol_resv_parse(&r, GS__RESERVATION_ACTION__RESERVATION_ACTION_UPDATE, argc, argv,
                            gs_clock_wall_ms(), why, sizeof(why)) < 0)
        return slurm_error(CMD, "update: %s", why);
    status = r.end_from_start ? end_from_start(socket_opt, &r) : 0;
    if (status == 0)
        status = scontrol_resv_call(CMD, socket_opt, &r.req, r.resv.name, &reply);
    if (status == 0)
        printf("Reservation updated.\n");
    gs_proto_envelope_free(reply);
    scontrol_resv_release(&r);
    return status;
}

/* Whether the words name a reservation (ReservationName=, or Slurm's Reservation=). */
static bool names_reservation(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        size_t klen = eq != NULL ? (size_t)(eq - argv[i]) : 0;

        if (key_is(argv[i], klen, "ReservationName") || key_is(argv[i], klen, "Reservation"))
            return true;
    }
    return false;
}

int scontrol_update(const char *socket_opt, int argc, char **argv)
{
    struct node_update u = {0};
    Gs__NodeAdminAction action;
    struct gs_error err;
    char **names = NULL;
    size_t n = 0;
    int status;

    if (names_reservation(argc, argv))
        return update_reservation(socket_opt, argc, argv);
    status = parse_words(argc, argv, &u);
    if (status != 0)
        return status;
    if (u.job != NULL)
        return update_job(socket_opt, &u);
    if (strcasecmp(u.state, "drain") == 0)
        action = GS__NODE_ADMIN_ACTION__NODE_ADMIN_ACTION_DRAIN;
    else if (strcasecmp(u.state, "resume") == 0 || strcasecmp(u.state, "undrain") == 0)
        action = GS__NODE_ADMIN_ACTION__NODE_ADMIN_ACTION_RESUME;
    else
        return slurm_error(CMD, "Invalid node state specified: %s (DRAIN or RESUME)", u.state);
    if (action == GS__NODE_ADMIN_ACTION__NODE_ADMIN_ACTION_DRAIN &&
        (u.reason == NULL || u.reason[0] == '\0'))
        return slurm_error(CMD, "You must specify a reason when DRAINING a node (Reason=...). "
                                "Request denied");
    gs_error_clear(&err);
    if (gs_hostlist_expand(u.nodes, &names, &n, &err) < 0)
        return slurm_error(CMD, "NodeName=%s, column %d: %s", u.nodes, err.col, err.msg);
    status = send_update(socket_opt, &u, action, names, n);
    gs_hostlist_free(names);
    return status;
}
