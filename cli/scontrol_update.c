/*
 * scontrol_update.c: `scontrol update`, the parts operators use to take nodes out of
 * service and back, as Slurm's:
 *
 *     scontrol update NodeName=LIST State=DRAIN Reason=TEXT
 *     scontrol update NodeName=LIST State=RESUME        (UNDRAIN too)
 *
 * Keys are case-insensitive, LIST a hostlist (node[1-4,7]). Root only: gschedd refuses
 * anyone else. A drain needs a reason (Slurm's rule), so nobody later wonders why a node
 * sits idle. Nothing is printed on success; each failure prints a line and exits 1.
 */
#include "cli/scontrol_update.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/slurm_cmd.h"
#include "common/hostlist.h"

#define CMD "scontrol"

struct node_update {
    const char *nodes;
    const char *state;
    const char *reason;
};

/* KEY=VALUE words into u; 0 or 1 with the error printed. */
static int parse_words(int argc, char **argv, struct node_update *u)
{
    for (int i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        size_t klen = eq != NULL ? (size_t)(eq - argv[i]) : 0;

        if (eq == NULL)
            return slurm_error(CMD, "update: '%s' is not KEY=VALUE", argv[i]);
        if (klen == 8 && strncasecmp(argv[i], "NodeName", klen) == 0)
            u->nodes = eq + 1;
        else if (klen == 5 && strncasecmp(argv[i], "State", klen) == 0)
            u->state = eq + 1;
        else if (klen == 6 && strncasecmp(argv[i], "Reason", klen) == 0)
            u->reason = eq + 1;
        else
            return slurm_error(CMD, "Update of this parameter is not supported: %s", argv[i]);
    }
    if (u->nodes == NULL || u->nodes[0] == '\0')
        return slurm_error(CMD, "update: NodeName=LIST is required (gsched updates nodes only)");
    if (u->state == NULL)
        return slurm_error(CMD, "update: State=DRAIN or State=RESUME is required");
    return 0;
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

int scontrol_update(const char *socket_opt, int argc, char **argv)
{
    struct node_update u = {0};
    Gs__NodeAdminAction action;
    struct gs_error err;
    char **names = NULL;
    size_t n = 0;
    int status = parse_words(argc, argv, &u);

    if (status != 0)
        return status;
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
