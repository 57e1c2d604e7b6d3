/*
 * sched_drain.c: operators taking nodes out of service (`scontrol update nodename=LIST
 * state=drain reason=...`) and back (`state=resume`), as in Slurm. A drained node takes no
 * new jobs: the planner sees it as unschedulable (sched_node_update_schedulable), while the
 * jobs already on it run to their end, their srun steps included. It is DRAINING while a
 * job holds any of it and DRAINED after. The drain and its reason are stored with the node
 * (nodes.drain_reason), so a restarted gschedd keeps the node out; the change is answered
 * only once it is on disk, and logged and put in the event log with the node's name.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "scheduler/sched_internal.h"

/* Whether a job holds any of the node: every job takes at least one core of each node. */
static bool node_busy(struct sched_ctx *s, const struct sched_node *n)
{
    return sched_cluster_free_cores(s->cluster, n->index) < n->topology->cores ||
           sched_cluster_free_gpus(s->cluster, n->index) < (uint32_t)n->topology->n_gpus;
}

Gs__NodeState sched_node_state(struct sched_ctx *s, const struct sched_node *n)
{
    if (!n->up || n->conn == NULL)
        return GS__NODE_STATE__NODE_STATE_DOWN;
    if (!n->drain)
        return GS__NODE_STATE__NODE_STATE_UP;
    return node_busy(s, n) ? GS__NODE_STATE__NODE_STATE_DRAINING
                           : GS__NODE_STATE__NODE_STATE_DRAINED;
}

const char *sched_node_reason(const struct sched_node *n)
{
    return n->up && n->conn != NULL && n->drain ? n->drain_reason : n->reason;
}

struct update_op {
    struct sched_cli *cli;
    uint64_t request_id;
    Gs__NodeUpdateResult *results;
    Gs__NodeUpdateResult **ptrs;
    char (*messages)[160];
    char **names; /* the request's, copied: the request is gone by the commit */
    size_t n;
};

static void update_op_free(struct update_op *op)
{
    for (size_t i = 0; op != NULL && op->names != NULL && i < op->n; i++)
        free(op->names[i]);
    if (op != NULL) {
        free(op->names);
        free(op->results);
        free(op->ptrs);
        free(op->messages);
    }
    free(op);
}

static void update_stored(struct sched_ctx *s, int status, void *arg)
{
    struct update_op *op = arg;
    Gs__NodeUpdateReply reply = GS__NODE_UPDATE_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    if (status < 0) {
        sched_cli_error(op->cli, op->request_id, status, "the change could not be stored", true);
        goto out;
    }
    for (size_t i = 0; i < op->n; i++) { /* the state now: DRAINED if it emptied meanwhile */
        struct sched_node *n = sched_node_find(s, op->names[i]);

        if (n != NULL && op->results[i].code == 0)
            op->results[i].state = sched_node_state(s, n);
    }
    reply.n_results = op->n;
    reply.results = op->ptrs;
    env.request_id = op->request_id;
    env.body_case = GS__ENVELOPE__BODY_NODE_UPDATE_REPLY;
    env.node_update_reply = &reply;
    sched_cli_reply(op->cli, &env, true);
out:
    update_op_free(op);
}

/* One node's drain or resume into ch; returns 0 or a negative errno with msg saying why. */
static int update_one(struct sched_ctx *s, struct sched_node *n, const Gs__NodeUpdateRequest *req,
                      struct sched_change *ch, char *msg, size_t size)
{
    bool drain = req->action == GS__NODE_ADMIN_ACTION__NODE_ADMIN_ACTION_DRAIN;
    uint64_t now = gs_clock_wall_ms();

    if (!drain && !n->drain) {
        snprintf(msg, size, "node %s is not drained", n->name);
        return -EALREADY;
    }
    n->drain = drain;
    snprintf(n->drain_reason, sizeof(n->drain_reason), "%s", drain ? req->reason : "");
    sched_node_update_schedulable(s, n); /* a resumed node wakes the planner */
    sched_change_node(ch, n);
    sched_change_event(ch, now, 0, n->name, drain ? "DRAIN" : "RESUME", drain ? req->reason : "");
    GS_LOG(GS_LOG_INFO, "node=%s reason=\"%s\" node %s", n->name, drain ? req->reason : "",
           drain ? "drained" : "resumed");
    snprintf(msg, size, "%s", drain ? "drained: no new jobs start on it" : "resumed");
    return 0;
}

void sched_node_update(struct sched_cli *c, uint64_t request_id, const Gs__NodeUpdateRequest *req)
{
    struct sched_ctx *s = c->s;
    struct update_op *op = NULL;
    struct sched_change *ch = NULL;

    if (c->uid != 0) {
        sched_cli_error(c, request_id, -EPERM, "only root may drain or resume nodes", false);
        return;
    }
    if (req->action != GS__NODE_ADMIN_ACTION__NODE_ADMIN_ACTION_DRAIN &&
        req->action != GS__NODE_ADMIN_ACTION__NODE_ADMIN_ACTION_RESUME) {
        sched_cli_error(c, request_id, -EINVAL, "state: must be drain or resume", false);
        return;
    }
    if (req->action == GS__NODE_ADMIN_ACTION__NODE_ADMIN_ACTION_DRAIN &&
        (req->reason == NULL || req->reason[0] == '\0')) {
        sched_cli_error(c, request_id, -EINVAL, "reason: a drain needs a reason (reason=...)",
                        false);
        return;
    }
    if (req->n_names == 0) {
        sched_cli_error(c, request_id, -EINVAL, "nodename: no nodes named", false);
        return;
    }
    op = calloc(1, sizeof(*op));
    ch = sched_change_new(s);
    if (op != NULL) {
        op->results = calloc(req->n_names, sizeof(*op->results));
        op->ptrs = calloc(req->n_names, sizeof(*op->ptrs));
        op->messages = calloc(req->n_names, sizeof(*op->messages));
        op->names = calloc(req->n_names, sizeof(*op->names));
    }
    if (op == NULL || ch == NULL || op->results == NULL || op->ptrs == NULL ||
        op->messages == NULL || op->names == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        update_op_free(op);
        sched_change_commit(s, ch, NULL, NULL); /* nothing in it */
        return;
    }
    op->cli = c;
    op->request_id = request_id;
    for (size_t i = 0; i < req->n_names; i++) {
        struct sched_node *n = sched_node_find(s, req->names[i]);
        Gs__NodeUpdateResult *r = &op->results[i];

        gs__node_update_result__init(r);
        op->names[i] = strdup(req->names[i]);
        op->n++;
        if (op->names[i] == NULL) {
            r->code = -ENOMEM;
            snprintf(op->messages[i], sizeof(op->messages[i]), "out of memory");
        } else if (n == NULL) {
            r->code = -ENOENT;
            snprintf(op->messages[i], sizeof(op->messages[i]), "node %.64s: no such node",
                     req->names[i]);
        } else {
            r->code = update_one(s, n, req, ch, op->messages[i], sizeof(op->messages[i]));
            r->state = sched_node_state(s, n);
        }
        r->name = op->names[i] != NULL ? op->names[i] : "";
        r->message = op->messages[i];
        op->ptrs[i] = r;
    }
    sched_cli_hold(c);
    sched_change_commit(s, ch, update_stored, op);
}
