/*
 * test_top_frame.c: one `gsched top` frame from hand-made replies: the totals line (GPUs of
 * up nodes, allocated, busy of allocated, idle-flagged), a line per GPU with the look the
 * screen draws it with, the job's user and throughput, the filters (user, partition, idle
 * only), the sorts, a GPU without figures and a CPU node listing its jobs.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "cli/top_frame.h"

static Gs__GpuStats gpu(uint32_t index, uint32_t util, uint64_t job, bool idle, uint64_t since)
{
    Gs__GpuStats g = GS__GPU_STATS__INIT;

    g.index = index;
    g.samples = 2;
    g.utilization_pct = util;
    g.memory_used_mib = 2048;
    g.memory_total_mib = 81920;
    g.power_w = 300;
    g.temperature_c = 60;
    g.job_id = job;
    g.idle = idle;
    g.idle_since_ms = since;
    return g;
}

struct fixture {
    Gs__GpuStats g[4];
    Gs__GpuStats *gp[4];
    Gs__NodeInfo n[3];
    Gs__NodeInfo *np[3];
    Gs__NodesReply nodes;
    Gs__UserIdentity u[2];
    Gs__NodeAllocation a[2];
    Gs__NodeAllocation *ap[2];
    Gs__JobInfo j[2];
    Gs__JobInfo *jp[2];
    Gs__QueueReply queue;
};

/* n1: GPUs 0 (job 7, 90%), 1 (job 7, idle-flagged), 2 (free, no figures), 3 (job 8,
 * under the threshold but not flagged yet); n2: down; cpu1: no GPUs, runs job 8. */
static void make(struct fixture *x)
{
    memset(x, 0, sizeof(*x));
    x->g[0] = gpu(0, 90, 7, false, 0);
    x->g[1] = gpu(1, 0, 7, true, 1000);
    x->g[2] = gpu(3, 1, 8, false, 50000);
    for (int i = 0; i < 3; i++)
        x->gp[i] = &x->g[i];
    for (int i = 0; i < 3; i++)
        gs__node_info__init(&x->n[i]);
    x->n[0].name = "n1";
    x->n[0].state = GS__NODE_STATE__NODE_STATE_UP;
    x->n[0].gpus_total = 4;
    x->n[0].gpus_free = 1;
    x->n[0].n_gpu_stats = 3;
    x->n[0].gpu_stats = x->gp;
    x->n[0].cpu_util_pct = 37;
    x->n[1].name = "n2";
    x->n[1].state = GS__NODE_STATE__NODE_STATE_DOWN;
    x->n[1].reason = "missed 3 heartbeats";
    x->n[1].gpus_total = 8;
    x->n[2].name = "cpu1";
    x->n[2].state = GS__NODE_STATE__NODE_STATE_UP;
    for (int i = 0; i < 3; i++)
        x->np[i] = &x->n[i];
    gs__nodes_reply__init(&x->nodes);
    x->nodes.n_nodes = 3;
    x->nodes.nodes = x->np;
    for (int i = 0; i < 2; i++) {
        gs__user_identity__init(&x->u[i]);
        gs__node_allocation__init(&x->a[i]);
        gs__job_info__init(&x->j[i]);
        x->ap[i] = &x->a[i];
        x->jp[i] = &x->j[i];
        x->j[i].user = &x->u[i];
        x->j[i].state = GS__JOB_STATE__JOB_STATE_RUNNING;
        x->j[i].n_allocation = 1;
        x->j[i].allocation = &x->ap[i];
    }
    x->u[0].username = "alice";
    x->u[1].username = "bob";
    x->j[0].job_id = 7;
    x->j[0].partition = "gpu";
    x->j[0].tokens_per_s = 8200;
    x->j[0].mfu = 0.41;
    x->a[0].node_name = "n1";
    x->j[1].job_id = 8;
    x->j[1].partition = "debug";
    x->a[1].node_name = "cpu1";
    gs__queue_reply__init(&x->queue);
    x->queue.n_jobs = 2;
    x->queue.jobs = x->jp;
}

static const struct cli_top_line *find(const struct cli_top_frame *f, const char *text)
{
    for (size_t i = 0; i < f->n; i++)
        if (strstr(f->lines[i].text, text) != NULL)
            return &f->lines[i];
    return NULL;
}

static size_t gpu_lines(const struct cli_top_frame *f)
{
    size_t k = 0;

    for (size_t i = 0; i < f->n; i++)
        k += f->lines[i].look == CLI_TOP_BUSY || f->lines[i].look == CLI_TOP_IDLE ||
             f->lines[i].look == CLI_TOP_FREE ||
             (f->lines[i].look == CLI_TOP_NORMAL && strstr(f->lines[i].text, "(no figures)"));
    return k;
}

Test(top_frame, totals_and_one_line_per_gpu_with_its_look)
{
    struct fixture x;
    struct cli_top_opts o = {0};
    struct cli_top_frame f = {0};
    const struct cli_top_line *l;

    make(&x);
    cr_assert_eq(cli_top_render(&x.nodes, &x.queue, &o, 61000, &f), 0);
    l = find(&f, "gsched top");
    cr_assert_not_null(l);
    cr_assert_not_null(strstr(l->text, "3 nodes  4 GPUs  allocated 3 (75%)  busy 1 of 3 (33%)  "
                                       "idle-flagged 1"),
                       "%s", l->text);
    cr_assert_eq(f.lines[2].look, CLI_TOP_HEADER);
    l = find(&f, "90%");
    cr_assert_not_null(l);
    cr_assert_eq(l->look, CLI_TOP_BUSY);
    cr_assert_not_null(strstr(l->text, "n1"), "the node's first GPU line names it: %s", l->text);
    cr_assert_not_null(strstr(l->text, "[||||||||||||||  ]"), "%s", l->text);
    cr_assert_not_null(strstr(l->text, "alice"), "%s", l->text);
    cr_assert_not_null(strstr(l->text, "8200  41.0%"), "%s", l->text);
    l = find(&f, "IDLE 60s");
    cr_assert_not_null(l, "the idle GPU says for how long");
    cr_assert_eq(l->look, CLI_TOP_IDLE);
    l = find(&f, "(no figures)");
    cr_assert_not_null(l);
    cr_assert_not_null(strstr(l->text, "2 "), "%s", l->text);
    l = find(&f, "n2");
    cr_assert_eq(l->look, CLI_TOP_DOWN);
    cr_assert_not_null(strstr(l->text, "missed 3 heartbeats"));
    l = find(&f, "cpu1");
    cr_assert_not_null(strstr(l->text, "(no GPUs)  jobs 8"), "%s", l->text);
    cr_assert_eq(gpu_lines(&f), 4);
    cli_top_frame_release(&f);
}

Test(top_frame, filters_keep_only_the_gpus_asked_for)
{
    struct fixture x;
    struct cli_top_opts o = {.user = "bob"};
    struct cli_top_frame f = {0};

    make(&x);
    cr_assert_eq(cli_top_render(&x.nodes, &x.queue, &o, 61000, &f), 0);
    cr_assert_eq(gpu_lines(&f), 1);
    cr_assert_not_null(find(&f, "bob"));
    cr_assert_null(find(&f, "n2"), "a filtered view leaves down nodes out");
    cli_top_frame_release(&f);
    o = (struct cli_top_opts){.partition = "gpu"};
    cr_assert_eq(cli_top_render(&x.nodes, &x.queue, &o, 61000, &f), 0);
    cr_assert_eq(gpu_lines(&f), 2);
    cli_top_frame_release(&f);
    o = (struct cli_top_opts){.idle_only = true};
    cr_assert_eq(cli_top_render(&x.nodes, &x.queue, &o, 61000, &f), 0);
    cr_assert_eq(gpu_lines(&f), 1);
    cr_assert_not_null(find(&f, "IDLE"));
    cli_top_frame_release(&f);
}

Test(top_frame, sorts_nodes_by_name_util_or_idle)
{
    struct fixture x;
    struct cli_top_opts o = {.sort = CLI_TOP_SORT_NODE};
    struct cli_top_frame f = {0};

    make(&x);
    cr_assert_eq(cli_top_render(&x.nodes, &x.queue, &o, 61000, &f), 0);
    cr_assert_not_null(strstr(f.lines[3].text, "cpu1"), "%s", f.lines[3].text);
    cli_top_frame_release(&f);
    o.sort = CLI_TOP_SORT_IDLE;
    cr_assert_eq(cli_top_render(&x.nodes, &x.queue, &o, 61000, &f), 0);
    cr_assert_not_null(strstr(f.lines[3].text, "n1"), "idle GPUs first: %s", f.lines[3].text);
    cr_assert_not_null(find(&f, "sort idle"));
    cli_top_frame_release(&f);
    cr_assert_str_eq(cli_top_sort_name(CLI_TOP_SORT_UTIL), "util");
}

Test(top_frame, nothing_known_is_a_frame_with_zero_totals)
{
    struct cli_top_opts o = {0};
    struct cli_top_frame f = {0};

    cr_assert_eq(cli_top_render(NULL, NULL, &o, 0, &f), 0);
    cr_assert_eq(f.n, 3);
    cr_assert_not_null(strstr(f.lines[0].text, "0 nodes  0 GPUs"));
    cli_top_frame_release(&f);
}
