/*
 * cmd_nodes.c: `gsched nodes [--json] [--topology] [--socket PATH] [NODE...]`: the
 * cluster's nodes as sinfo shows them, one aligned line each (state, GPUs free/total, cores
 * free/total, memory free/total, features), or a JSON array with the same facts for
 * programs (with each GPU's latest telemetry under "gpu_stats"). With --topology, each node's GPU
 * matrix as `nvidia-smi topo -m` draws it (cli/topo_print.h) instead of the line, or, with --json,
 * under "topology".
 */
#include "cli/commands.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/client.h"
#include "cli/topo_print.h"
#include "common/json.h"
#include "common/units.h"

static const char *state_name(Gs__NodeState s)
{
    switch (s) {
    case GS__NODE_STATE__NODE_STATE_UP:
        return "up";
    case GS__NODE_STATE__NODE_STATE_DOWN:
        return "down";
    case GS__NODE_STATE__NODE_STATE_DRAINING:
        return "draining";
    case GS__NODE_STATE__NODE_STATE_DRAINED:
        return "drained";
    default:
        return "unknown";
    }
}

/* The table's state: an up node in a Flags=MAINT reservation says "maint". */
static const char *shown_state(const Gs__NodeInfo *n)
{
    return n->maint && n->state == GS__NODE_STATE__NODE_STATE_UP ? "maint" : state_name(n->state);
}

/* One GPU's figures as the workers' telemetry left them in gschedd (gs.GpuStats). */
static void json_gpu(struct gs_json *j, const Gs__GpuStats *g)
{
    gs_json_object_begin(j);
    gs_json_kv_uint(j, "index", g->index);
    gs_json_kv_uint(j, "samples", g->samples);
    gs_json_kv_uint(j, "utilization_pct", g->utilization_pct);
    gs_json_kv_uint(j, "utilization_max_pct", g->utilization_max_pct);
    gs_json_kv_uint(j, "memory_util_pct", g->memory_util_pct);
    gs_json_kv_uint(j, "memory_used_mib", g->memory_used_mib);
    gs_json_kv_uint(j, "memory_used_max_mib", g->memory_used_max_mib);
    gs_json_kv_uint(j, "memory_total_mib", g->memory_total_mib);
    gs_json_kv_int(j, "temperature_c", g->temperature_c);
    gs_json_kv_uint(j, "power_w", g->power_w);
    gs_json_kv_uint(j, "sm_clock_mhz", g->sm_clock_mhz);
    gs_json_kv_uint(j, "throttle_reasons", g->throttle_reasons);
    gs_json_kv_uint(j, "ecc_uncorrected", g->ecc_uncorrected);
    gs_json_kv_uint(j, "xid_last", g->xid_last);
    gs_json_kv_uint(j, "xid_count", g->xid_count);
    gs_json_kv_uint(j, "job_id", g->job_id);
    gs_json_kv_bool(j, "idle", g->idle);
    gs_json_kv_uint(j, "idle_since_ms", g->idle_since_ms);
    gs_json_kv_uint(j, "sampled_at_ms", g->sampled_at_ms);
    gs_json_key(j, "processes");
    gs_json_array_begin(j);
    for (size_t i = 0; i < g->n_processes; i++) {
        gs_json_object_begin(j);
        gs_json_kv_uint(j, "pid", g->processes[i]->pid);
        gs_json_kv_uint(j, "memory_mib", g->processes[i]->memory_mib);
        gs_json_kv_uint(j, "job_id", g->processes[i]->job_id);
        gs_json_object_end(j);
    }
    gs_json_array_end(j);
    gs_json_object_end(j);
}

static void json_node(struct gs_json *j, const Gs__NodeInfo *n)
{
    gs_json_object_begin(j);
    gs_json_kv_string(j, "name", n->name);
    gs_json_kv_string(j, "state", state_name(n->state));
    gs_json_kv_bool(j, "maint", n->maint);
    gs_json_kv_string(j, "reason", n->reason);
    gs_json_kv_uint(j, "gpus_total", n->gpus_total);
    gs_json_kv_uint(j, "gpus_free", n->gpus_free);
    gs_json_kv_uint(j, "cores_total", n->cores_total);
    gs_json_kv_uint(j, "cores_free", n->cores_free);
    gs_json_kv_uint(j, "memory_total_mib", n->memory_total_mib);
    gs_json_kv_uint(j, "memory_free_mib", n->memory_free_mib);
    gs_json_key(j, "features");
    gs_json_array_begin(j);
    for (size_t i = 0; i < n->n_features; i++)
        gs_json_string(j, n->features[i]);
    gs_json_array_end(j);
    gs_json_kv_uint(j, "last_heartbeat_ms", n->last_heartbeat_ms);
    gs_json_kv_uint(j, "cpu_util_pct", n->cpu_util_pct);
    gs_json_kv_uint(j, "memory_used_mib", n->memory_used_mib);
    gs_json_key(j, "free_gpus");
    gs_json_array_begin(j);
    for (size_t i = 0; i < n->n_free_gpus; i++)
        gs_json_uint(j, n->free_gpus[i]);
    gs_json_array_end(j);
    gs_json_key(j, "gpu_stats");
    gs_json_array_begin(j);
    for (size_t i = 0; i < n->n_gpu_stats; i++)
        json_gpu(j, n->gpu_stats[i]);
    gs_json_array_end(j);
    if (n->topology != NULL) {
        gs_json_key(j, "topology");
        cli_topo_json(j, n->topology);
    }
    gs_json_object_end(j);
}

static int print_json(const Gs__NodesReply *r)
{
    struct gs_buf out = GS_BUF_INIT;
    struct gs_json j;
    int rc;

    gs_json_init(&j, &out);
    gs_json_array_begin(&j);
    for (size_t i = 0; i < r->n_nodes; i++)
        json_node(&j, r->nodes[i]);
    gs_json_array_end(&j);
    rc = gs_json_finish(&j);
    if (rc == 0)
        printf("%s\n", out.data);
    gs_buf_release(&out);
    return rc;
}

static void print_table(const Gs__NodesReply *r)
{
    printf("%-16s %-8s %-9s %-11s %-13s %s\n", "NODE", "STATE", "GPUS", "CPUS", "MEMORY",
           "FEATURES");
    for (size_t i = 0; i < r->n_nodes; i++) {
        const Gs__NodeInfo *n = r->nodes[i];
        char gpus[24], cpus[24], mem[48], a[24], b[24], feat[256] = "";

        snprintf(gpus, sizeof(gpus), "%u/%u", n->gpus_free, n->gpus_total);
        snprintf(cpus, sizeof(cpus), "%u/%u", n->cores_free, n->cores_total);
        snprintf(mem, sizeof(mem), "%s/%s", gs_format_size(n->memory_free_mib << 20, a, 24),
                 gs_format_size(n->memory_total_mib << 20, b, 24));
        for (size_t k = 0; k < n->n_features; k++)
            snprintf(feat + strlen(feat), sizeof(feat) - strlen(feat), "%s%s", k ? "," : "",
                     n->features[k]);
        printf("%-16s %-8s %-9s %-11s %-13s %s%s%s\n", n->name, shown_state(n), gpus, cpus, mem,
               feat[0] ? feat : "-", n->reason[0] ? "  " : "", n->reason);
    }
}

static const char *plural(size_t n)
{
    return n == 1 ? "" : "s";
}

/* "dgx: up, 2 sockets, 112 cores, 8 GPUs, 4 NICs" and a blank line. */
static int print_heading(struct gs_buf *out, const Gs__NodeInfo *n)
{
    const Gs__NodeTopology *t = n->topology;

    if (t == NULL)
        return gs_buf_printf(out, "%s: %s, no topology reported\n", n->name, state_name(n->state));
    return gs_buf_printf(out, "%s: %s, %u socket%s, %u core%s, %zu GPU%s, %zu NIC%s\n\n", n->name,
                         state_name(n->state), t->sockets, plural(t->sockets), t->cores,
                         plural(t->cores), t->n_gpus, plural(t->n_gpus), t->n_nics,
                         plural(t->n_nics));
}

/* Per node a heading and its matrix, a blank line between nodes, the legend once at the end
 * when any node has GPUs. */
static int print_topologies(const Gs__NodesReply *r)
{
    struct gs_buf out = GS_BUF_INIT;
    bool any_gpus = false;
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < r->n_nodes; i++) {
        const Gs__NodeInfo *n = r->nodes[i];

        if (i > 0)
            rc = gs_buf_putc(&out, '\n');
        if (rc == 0)
            rc = print_heading(&out, n);
        if (rc == 0 && n->topology != NULL)
            rc = cli_topo_print(n->topology, &out);
        any_gpus = any_gpus || (n->topology != NULL && n->topology->n_gpus > 0);
    }
    if (rc == 0 && any_gpus)
        rc = gs_buf_putc(&out, '\n');
    if (rc == 0 && any_gpus)
        rc = cli_topo_legend(&out);
    if (rc == 0 && out.len > 0)
        fputs(out.data, stdout);
    gs_buf_release(&out);
    return rc;
}

int cli_cmd_nodes(int argc, char **argv)
{
    Gs__NodesRequest req = GS__NODES_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    const char *socket_opt = NULL;
    char *names[64], path[256];
    bool json = false;
    int rc;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--topology") == 0)
            req.with_topology = true;
        else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
            socket_opt = argv[++i];
        else if (argv[i][0] == '-')
            return cli_usage_error("nodes", "unknown option '%s'", argv[i]);
        else if (req.n_names < 64)
            names[req.n_names++] = argv[i];
    }
    req.names = names;
    if (cli_socket_path(socket_opt, path, sizeof(path)) < 0)
        return 1;
    env.body_case = GS__ENVELOPE__BODY_NODES_REQUEST;
    env.nodes_request = &req;
    rc = cli_request(path, &env, &reply);
    if (rc < 0)
        return 1;
    if (reply->body_case != GS__ENVELOPE__BODY_NODES_REPLY) {
        fprintf(stderr, "gsched: gschedd answered with %s\n", gs_proto_body_name(reply->body_case));
        rc = -EPROTO;
    } else if (json) {
        rc = print_json(reply->nodes_reply);
    } else if (req.with_topology) {
        rc = print_topologies(reply->nodes_reply);
    } else {
        print_table(reply->nodes_reply);
    }
    gs_proto_envelope_free(reply);
    return rc < 0 ? 1 : 0;
}
