/*
 * test_metrics.c: what gschedd's HTTP routes render (scheduler/sched_http_routes.h) over a
 * scheduler context built by hand (sched_internal.h: nodes with topologies in a cluster,
 * jobs pending and running in it; no loop, no store). /metrics: queue depth by state and
 * partition, node states and per-node gauges, one line per allocated GPU with its job and
 * user (escaped), the counters and the planning pass's timing; a thousand nodes of eight
 * GPUs rendered whole (how fast is bench/telemetry.sh's to measure, not a test's). /api/v1: nodes
 * with the job holding each GPU, one job with its allocation and history, unknown and malformed job
 * ids refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/config.h"
#include "scheduler/sched_http_routes.h"
#include "scheduler/sched_internal.h"
#include "scheduler/telemetry.h"

#define GPUS 8

static struct gs_config cfg;
static struct sched_ctx *s;
static char fake_conn; /* a node's conn is only compared with NULL here */
static struct gs_buf out;

static void setup(void)
{
    cr_assert_eq(gs_config_init(&cfg), 0);
    s = calloc(1, sizeof(*s));
    cr_assert_not_null(s);
    s->cfg = &cfg;
    s->cluster = sched_cluster_new();
    s->jobs = sched_jobs_new(s->cluster);
    s->tel = sched_tel_new(5, 60000);
    cr_assert(s->cluster != NULL && s->jobs != NULL && s->tel != NULL);
    gs_buf_init(&out);
}

static void free_node(struct sched_node *n)
{
    for (size_t g = 0; g < n->topology->n_gpus; g++)
        free(n->topology->gpus[g]);
    free(n->topology->gpus);
    free(n->topology);
    free(n);
}

static void teardown(void)
{
    for (size_t i = 0; i < s->nnodes; i++)
        free_node(s->nodes[i]);
    free(s->nodes);
    free(s->nodes_by_name);
    sched_jobs_free(s->jobs);
    sched_cluster_free(s->cluster);
    sched_tel_free(s->tel);
    free(s);
    gs_config_release(&cfg);
    gs_buf_release(&out);
}

TestSuite(metrics, .init = setup, .fini = teardown);

static Gs__NodeTopology *topology(const char *name)
{
    Gs__NodeTopology *t = calloc(1, sizeof(*t));

    cr_assert_not_null(t);
    gs__node_topology__init(t);
    t->node_name = (char *)name;
    t->address = "127.0.0.1";
    t->cores = 64;
    t->memory_mib = 512 * 1024;
    t->n_gpus = GPUS;
    t->gpus = calloc(GPUS, sizeof(*t->gpus));
    cr_assert_not_null(t->gpus);
    for (uint32_t g = 0; g < GPUS; g++) {
        t->gpus[g] = calloc(1, sizeof(**t->gpus));
        cr_assert_not_null(t->gpus[g]);
        gs__gpu__init(t->gpus[g]);
        t->gpus[g]->index = g;
        t->gpus[g]->model = "H100";
    }
    return t;
}

/* n nodes n1..nN of GPUS GPUs and 64 cores, up and connected. */
static void add_nodes(size_t n)
{
    s->nodes = calloc(n, sizeof(*s->nodes));
    s->nodes_by_name = calloc(n, sizeof(*s->nodes_by_name));
    cr_assert_not_null(s->nodes);
    cr_assert_not_null(s->nodes_by_name);
    for (size_t i = 0; i < n; i++) {
        struct sched_node *node = calloc(1, sizeof(*node));
        struct sched_node_info info = {.ngpus = GPUS, .ncores = 64, .mem_mib = 512 * 1024};
        int index;

        cr_assert_not_null(node);
        snprintf(node->name, sizeof(node->name), "n%zu", i + 1);
        node->topology = topology(node->name);
        node->up = true;
        node->conn = (struct gs_proto_conn *)(void *)&fake_conn;
        node->last_heartbeat_wall = 1700000000000;
        info.name = node->name;
        index = sched_cluster_add_node(s->cluster, &info);
        cr_assert_geq(index, 0);
        node->index = (uint32_t)index;
        sched_node_by_name_insert(s, node);
        s->nodes[s->nnodes++] = node;
    }
}

/* A job of user asking for gpus GPUs on one node, started when it fits. */
static struct sched_job *add_job(uint64_t id, uint32_t gpus, const char *user, bool start)
{
    struct gs_jobspec *spec = gs_jobspec_new();
    struct sched_req req = {.nodes = 1, .gpus_per_node = gpus, .cores_per_node = 4};
    struct sched_alloc alloc;
    struct sched_job *job;

    cr_assert_not_null(spec);
    spec->gpus_per_node = gpus;
    job = sched_jobs_add(s->jobs, id, spec, 1000 * id);
    cr_assert_not_null(job);
    snprintf(job->user, sizeof(job->user), "%s", user);
    if (!start)
        return job;
    sched_alloc_init(&alloc);
    cr_assert_eq(sched_cluster_place(s->cluster, &req, NULL, &alloc), 0);
    sched_cluster_take(s->cluster, &alloc);
    cr_assert_eq(sched_job_start(job, &alloc, 1, 5000), 0);
    sched_alloc_release(&alloc);
    return job;
}

static void expect_line(const char *line)
{
    cr_expect_not_null(strstr(out.data, line), "no line '%s' in:\n%s", line, out.data);
}

Test(metrics, counts_jobs_nodes_and_allocated_gpus_with_their_labels)
{
    add_nodes(2);
    add_job(1, 2, "o\"neil", true);
    add_job(2, 16, "bob", false);
    cr_assert_eq(sched_metrics_render(s, &out), 0);
    expect_line("\ngsched_jobs{state=\"RUNNING\",partition=\"main\"} 1\n");
    expect_line("\ngsched_jobs{state=\"PENDING\",partition=\"main\"} 1\n");
    expect_line("\ngsched_nodes{state=\"up\"} 2\n");
    expect_line("\ngsched_nodes{state=\"down\"} 0\n");
    expect_line("\ngsched_node_up{node=\"n2\"} 1\n");
    expect_line("\ngsched_node_gpus{node=\"n1\"} 8\n");
    expect_line("\ngsched_node_gpus_allocated{node=\"n1\"} 2\n");
    expect_line("\ngsched_node_gpus_allocated{node=\"n2\"} 0\n");
    expect_line("\ngsched_node_cores_allocated{node=\"n1\"} 4\n");
    expect_line("\ngsched_node_memory_bytes{node=\"n1\"} 549755813888\n");
    expect_line("\ngsched_node_last_heartbeat_timestamp_seconds{node=\"n1\"} 1700000000\n");
    expect_line("\ngsched_gpu_allocated{node=\"n1\",gpu=\"0\",job=\"1\",user=\"o\\\"neil\"} 1\n");
    expect_line("\ngsched_gpu_allocated{node=\"n1\",gpu=\"1\",job=\"1\",user=\"o\\\"neil\"} 1\n");
    cr_expect_null(strstr(out.data, "gpu=\"2\""), "GPU 2 is free:\n%s", out.data);
    expect_line("# TYPE gsched_sched_pass_seconds summary\n");
    expect_line("\ngsched_build_info{version=\"");
}

static void slow_pass(struct sched_ctx *ctx)
{
    uint64_t until = gs_clock_mono_ns() + 2000000;

    ctx->plan_wanted = false;
    while (gs_clock_mono_ns() < until)
        continue;
}

Test(metrics, times_the_planning_pass_and_shows_the_counters)
{
    s->stats.jobs_submitted = 5;
    s->stats.jobs_started = 3;
    s->history_purged = 1234;
    sched_stats_time_pass(s, slow_pass);
    cr_assert_eq(s->stats.plan_passes, 1);
    cr_assert_geq(s->stats.plan_ns_last, 2000000);
    cr_assert_eq(s->stats.plan_ns_sum, s->stats.plan_ns_last);
    cr_assert_eq(sched_metrics_render(s, &out), 0);
    expect_line("\ngsched_jobs_submitted_total 5\n");
    expect_line("\ngsched_jobs_started_total 3\n");
    expect_line("\ngsched_sched_pass_seconds_count 1\n");
    expect_line("\ngsched_sched_pass_seconds_sum 0.00");
    expect_line("\ngsched_sched_last_pass_seconds 0.00");
    expect_line("# TYPE gsched_store_purged_jobs_total counter\n");
    expect_line("\ngsched_store_purged_jobs_total 1234\n");
}

Test(metrics, renders_a_thousand_nodes_of_eight_gpus_whole)
{
    add_nodes(1000);
    for (uint64_t id = 1; id <= 1000; id++)
        add_job(id, GPUS, "alice", true);
    cr_assert_eq(sched_metrics_render(s, &out), 0);
    expect_line("\ngsched_gpu_allocated{node=\"n1\",gpu=\"0\",job=\"");
    expect_line("\ngsched_gpu_allocated{node=\"n1000\",gpu=\"7\",job=\"");
    expect_line("\ngsched_jobs{state=\"RUNNING\",partition=\"main\"} 1000\n");
}

/* Answers the API route handler for the path remainder rest into out, as JSON. */
static void api(sched_http_handler handler, const char *rest)
{
    const char *type = NULL;

    cr_assert_eq(handler(s, &(struct sched_http_request){"", rest, NULL}, &out, &type), 0);
    cr_assert_str_eq(type, "application/json");
}

Test(metrics, api_nodes_tell_which_job_holds_each_gpu)
{
    add_nodes(2);
    add_job(7, 1, "alice", true);
    api(sched_api_nodes, "");
    expect_line("{\"name\":\"n1\",\"state\":\"up\",");
    expect_line("\"gpus_total\":8,\"gpus_free\":7,\"gpus\":[{\"index\":0,\"model\":\"H100\","
                "\"memory_mib\":0,\"job\":7,\"user\":\"alice\",\"util_pct\":null,");
    expect_line("{\"index\":1,\"model\":\"H100\",\"memory_mib\":0,\"job\":null,\"user\":null,");
    expect_line("\"idle\":false,\"below_threshold_since_ms\":null},{\"index\":1,");
    expect_line("\"cores_total\":64,\"cores_free\":60,");
    expect_line("\"last_heartbeat_ms\":1700000000000,\"nvml\":false,\"cpu_util_pct\":null,"
                "\"memory_used_mib\":null}");
}

Test(metrics, api_job_shows_its_allocation_and_history)
{
    add_nodes(1);
    add_job(7, 2, "alice", true);
    cr_assert_eq(sched_job_note(sched_jobs_find(s->jobs, 7), 5000, SCHED_JOB_RUNNING, "on n1"), 0);
    api(sched_api_job, "7");
    expect_line("{\"id\":7,");
    expect_line("\"state\":\"RUNNING\",");
    expect_line("\"partition\":\"main\",");
    expect_line("\"allocation\":[{\"node\":\"n1\",\"gpus\":[0,1],\"cores\":4,\"memory_mib\":0}],"
                "\"gpus_allocated\":2,\"progress\":null,");
    expect_line("\"history\":[{\"at_ms\":5000,\"state\":\"RUNNING\",\"detail\":\"on n1\"}]}\n");
}

Test(metrics, api_jobs_show_a_progress_report)
{
    struct sched_job *job;

    add_nodes(1);
    job = add_job(7, 1, "alice", true);
    job->progress = calloc(1, sizeof(*job->progress));
    cr_assert_not_null(job->progress);
    job->progress->step = 5;
    job->progress->steps = 10;
    job->progress->loss = 2.5;
    snprintf(job->progress->text, sizeof(job->progress->text), "step 5/10");
    api(sched_api_job, "7");
    expect_line("\"progress\":{\"received_ms\":null,\"attempt\":0,\"step\":5,\"steps\":10,"
                "\"loss\":2.5,");
    expect_line("\"text\":\"step 5/10\"},");
}

Test(metrics, api_job_refuses_unknown_and_malformed_ids)
{
    const char *type = NULL;
    const char *bad[] = {"", "x", "7x", "-7", "99999999999999999999999"};

    add_nodes(1);
    add_job(7, 0, "alice", false);
    cr_assert_eq(sched_api_job(s, &(struct sched_http_request){"", "8", NULL}, &out, &type),
                 -ENOENT);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(sched_api_job(s, &(struct sched_http_request){"", bad[i], NULL}, &out, &type),
                     -EINVAL, "'%s' accepted", bad[i]);
}

Test(metrics, gpu_telemetry_by_node_and_gpu_and_idle_gpus_with_their_job)
{
    struct sched_tel_node *tn;
    struct sched_tel_figures f;

    add_nodes(1);
    add_job(7, 2, "alice", true);
    tn = sched_tel_node(s->tel, 0, GPUS);
    cr_assert_not_null(tn);
    memset(&f, 0, sizeof(f));
    f.samples = 1;
    f.s.util_pct = f.s.util_max_pct = 42;
    f.s.mem_used_mib = 1024;
    f.s.power_w = 300;
    f.s.temperature_c = -1;
    sched_tel_record(s->tel, &tn->gpus[0], &f, 7, 1000);
    f.s.util_pct = f.s.util_max_pct = 0;
    sched_tel_record(s->tel, &tn->gpus[1], &f, 7, 1000);
    sched_tel_record(s->tel, &tn->gpus[1], &f, 7, 61000);
    cr_assert(tn->gpus[1].flagged);
    cr_assert_eq(sched_metrics_render(s, &out), 0);
    expect_line("# TYPE gsched_gpu_utilization_percent gauge\n");
    expect_line("gsched_gpu_utilization_percent{node=\"n1\",gpu=\"0\"} 42\n");
    expect_line("gsched_gpu_memory_used_bytes{node=\"n1\",gpu=\"0\"} 1073741824\n");
    expect_line("gsched_gpu_power_watts{node=\"n1\",gpu=\"1\"} 300\n");
    expect_line("gsched_gpu_below_idle_threshold{node=\"n1\",gpu=\"1\"} 1\n");
    expect_line("gsched_gpu_idle_seconds{node=\"n1\",gpu=\"1\",job=\"7\",user=\"alice\"} ");
    cr_expect_null(strstr(out.data, "gsched_gpu_temperature_celsius{"), "unknown: left out");
    cr_expect_null(strstr(out.data, "gpu=\"2\"}"), "a GPU never reported is left out");
}
