/*
 * test_sim_readers.c: gsched-simulate's trace and cluster readers and the trace
 * transformations: each format's fields into jobs and nodes (run times, shapes, switches,
 * accounts), lines that are skipped, errors that name FILE:LINE, and sort, --load,
 * --nodes, shapes and --accounts.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "sim/readers.h"
#include "sim_fixture.h"

static struct gs_sim_trace t;
static struct gs_buf err;

static void setup(void)
{
    gs_sim_trace_init(&t);
    gs_buf_init(&err);
}

static void teardown(void)
{
    gs_sim_trace_release(&t);
    gs_buf_release(&err);
    sim_fixture_cleanup();
}

TestSuite(sim_readers, .init = setup, .fini = teardown);

static const char *errors(void)
{
    return err.data != NULL ? err.data : "";
}

Test(sim_readers, reads_tiresias_jobs_with_model_names_as_accounts)
{
    const char *p = sim_fixture_file("jobs.csv", "job_id,num_gpu,submit_time,iterations,"
                                                 "model_name,duration,interval\n"
                                                 "0,1,0,606,vgg19,164,30\n"
                                                 "1,8,30,133,vgg11,147,23\n"
                                                 "2,2,53,157,vgg19,0,26\n");

    cr_assert_eq(gs_sim_read_tiresias_jobs(&t, p, &err), 0, "%s", errors());
    cr_assert_eq(t.njobs, 3);
    cr_assert_eq(t.jobs[1].gpus, 8);
    cr_assert_eq(t.jobs[1].cores, 8);
    cr_assert_eq(t.jobs[1].submit_ms, 30000);
    cr_assert_eq(t.jobs[1].duration_ms, 147000);
    cr_assert_eq(t.jobs[2].duration_ms, 1000, "a zero run time is one second");
    cr_assert_eq(t.naccounts, 2);
    cr_assert_str_eq(t.accounts[t.jobs[0].account], "vgg19");
    cr_assert_eq(t.jobs[0].account, t.jobs[2].account);
    cr_assert_eq(t.jobs[1].line, 3);
}

Test(sim_readers, names_file_and_line_of_a_bad_field)
{
    const char *p = sim_fixture_file("bad.csv", "job_id,num_gpu,submit_time,iterations,"
                                                "model_name,duration,interval\n"
                                                "0,1,0,606,vgg19,164,30\n"
                                                "\n"
                                                "1,1,30,133,vgg11,soon,23\n");
    char want[600];

    cr_assert_eq(gs_sim_read_tiresias_jobs(&t, p, &err), -EINVAL);
    snprintf(want, sizeof(want), "%s:4: duration: 'soon' is not a whole number\n", p);
    cr_assert_str_eq(errors(), want);
}

Test(sim_readers, reads_tiresias_cluster_as_switches_of_nodes)
{
    const char *p = sim_fixture_file("cluster.csv", "num_switch,num_node_p_switch,"
                                                    "num_gpu_p_node,num_cpu_p_node,mem_p_node\n"
                                                    "2,3,4,40,256");

    cr_assert_eq(gs_sim_read_tiresias_cluster(&t, p, GS_SIM_LINKS_PCIE, &err), 0, "%s", errors());
    cr_assert_eq(t.nnodes, 6);
    cr_assert_eq(t.nodes[0].switch_id, 1);
    cr_assert_eq(t.nodes[2].switch_id, 1);
    cr_assert_eq(t.nodes[3].switch_id, 2);
    cr_assert_eq(t.nodes[5].ngpus, 4);
    cr_assert_eq(t.nodes[5].ncores, 40);
    cr_assert_eq(t.nodes[5].mem_mib, 256 * 1024);
    cr_assert_eq(t.nodes[5].links, GS_SIM_LINKS_PCIE);
    cr_assert_str_eq(t.nodes[5].name, "node6");
}

Test(sim_readers, refuses_an_impossible_cluster)
{
    const char *p = sim_fixture_file("cluster.csv", "h\n1,2,65,40,256\n");

    cr_assert_eq(gs_sim_read_tiresias_cluster(&t, p, GS_SIM_LINKS_PAIRS, &err), -EINVAL);
    cr_assert(strstr(errors(), "cluster.csv:2: impossible cluster") != NULL, "%s", errors());
}

Test(sim_readers, reads_openb_nodes_32_to_a_switch)
{
    struct gs_buf text = GS_BUF_INIT;
    const char *p;

    gs_buf_printf(&text, "sn,cpu_milli,memory_mib,gpu,model\n");
    for (int i = 0; i < 40; i++)
        gs_buf_printf(&text, "openb-node-%04d,96000,393216,8,G2\n", i);
    p = sim_fixture_file("nodes.csv", text.data);
    gs_buf_release(&text);
    cr_assert_eq(gs_sim_read_openb_nodes(&t, p, GS_SIM_LINKS_NVSWITCH, &err), 0, "%s", errors());
    cr_assert_eq(t.nnodes, 40);
    cr_assert_str_eq(t.nodes[39].name, "openb-node-0039");
    cr_assert_eq(t.nodes[0].ncores, 96);
    cr_assert_eq(t.nodes[0].mem_mib, 393216);
    cr_assert_eq(t.nodes[31].switch_id, 1);
    cr_assert_eq(t.nodes[32].switch_id, 2);
}

Test(sim_readers, replays_openb_pods_that_ran_with_whole_gpus)
{
    const char *p = sim_fixture_file(
        "pods.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                    "creation_time,deletion_time,scheduled_time\n"
                    "openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
                    "openb-pod-0001,6000,12288,1,460,,LS,Running,427061,427961,427161\n"
                    "openb-pod-0061,11908,47104,1,1000,,BE,Pending,10001278,10001403,\n"
                    "openb-pod-0100,88000,0,0,0,,BE,Failed,500,400,450\n"
                    "openb-pod-0101,1500,1024,8,1000,,LS,Succeeded,600,700,650\n");

    cr_assert_eq(gs_sim_read_openb_pods(&t, p, &err), 0, "%s", errors());
    cr_assert_eq(t.njobs, 4);
    cr_assert_eq(t.skipped, 1, "the pod never scheduled has no run time");
    cr_assert_eq(t.jobs[1].gpus, 1, "460 milli-GPUs take a whole GPU");
    cr_assert_eq(t.jobs[1].duration_ms, 800000, "deletion - scheduled");
    cr_assert_eq(t.jobs[1].submit_ms, 427061000, "submitted at creation");
    cr_assert_eq(t.jobs[1].cores, 6);
    cr_assert_eq(t.jobs[1].mem_mib, 12288);
    cr_assert_eq(t.jobs[2].gpus, 0, "a CPU pod");
    cr_assert_eq(t.jobs[2].duration_ms, 1000, "deleted before scheduled: one second");
    cr_assert_eq(t.jobs[3].cores, 2, "1500 milli-cores round up");
    cr_assert_neq(t.jobs[0].key, t.jobs[1].key);
}

Test(sim_readers, refuses_a_pod_list_without_times)
{
    const char *p = sim_fixture_file("multigpu50.csv", "name,cpu_milli,memory_mib,num_gpu,"
                                                       "gpu_milli\n"
                                                       "openb-pod-0000,12000,16384,1,1000\n");

    cr_assert_eq(gs_sim_read_openb_pods(&t, p, &err), -EINVAL);
    cr_assert(strstr(errors(), "multigpu50.csv:2: 5 fields, 11 expected") != NULL, "%s", errors());
}

Test(sim_readers, turns_philly_steps_into_seconds_by_the_step_time_model)
{
    const char *p = sim_fixture_file(
        "vc.trace", "ResNet-50 (batch size 128)\tcd x && python3 main.py\t--num_minibatches\t1\t"
                    "10000\t6.500000\t1\n"
                    "ResNet-50 (batch size 128)\tcd x\t-n\t1\t10000\t7.000000\t4\n"
                    "A3C\tcd y\t--max-steps\t1\t4000\t8.000000\t2\n");
    double step = 0.010 + 128.0 / 380;

    cr_assert_eq(gs_sim_read_philly(&t, p, &err), 0, "%s", errors());
    cr_assert_eq(t.njobs, 3);
    cr_assert_eq(t.jobs[0].submit_ms, 6500);
    cr_assert_eq(t.jobs[0].gpus, 1);
    cr_assert_eq(t.jobs[0].duration_ms, (uint64_t)(10000 * step * 1000 + 0.5));
    cr_assert_eq(t.jobs[1].gpus, 4);
    cr_assert_eq(t.jobs[1].duration_ms, (uint64_t)(10000 * step / (4 * 0.9) * 1000 + 0.5),
                 "k GPUs at 90 %% efficiency");
    cr_assert_eq(t.jobs[2].duration_ms, (uint64_t)(4000 * 0.025 / 1.8 * 1000 + 0.5));
    cr_assert_str_eq(t.accounts[t.jobs[0].account], "ResNet-50");
    cr_assert_str_eq(t.accounts[t.jobs[2].account], "A3C");
    cr_assert_lt(gs_sim_philly_seconds("GPT-9 (batch size 1)", 10, 1), 0);
}

Test(sim_readers, names_the_line_of_an_unknown_philly_job_type)
{
    const char *p = sim_fixture_file("vc.trace", "A3C\tc\t-n\t1\t400\t0.0\t1\n"
                                                 "BERT (batch size 8)\tc\t-n\t1\t400\t1.0\t1\n");

    cr_assert_eq(gs_sim_read_philly(&t, p, &err), -EINVAL);
    cr_assert(strstr(errors(), "vc.trace:2: job_type: 'BERT (batch size 8)'") != NULL, "%s",
              errors());
}

Test(sim_readers, reads_a_generic_cluster_in_toml)
{
    const char *p = sim_fixture_file("c.toml", "nodes = 4\ngpus = 8\ncores = 32\nmem_gib = 64\n"
                                               "switches = 2\nlinks = \"nvswitch\"\n");

    cr_assert_eq(gs_sim_read_cluster_toml(&t, p, &err), 0, "%s", errors());
    cr_assert_eq(t.nnodes, 4);
    cr_assert_eq(t.nodes[3].ngpus, 8);
    cr_assert_eq(t.nodes[3].ncores, 32);
    cr_assert_eq(t.nodes[3].mem_mib, 64 * 1024);
    cr_assert_eq(t.nodes[1].switch_id, 1);
    cr_assert_eq(t.nodes[2].switch_id, 2);
    cr_assert_eq(t.nodes[0].links, GS_SIM_LINKS_NVSWITCH);
}

Test(sim_readers, reads_cluster_groups_with_switches_numbered_on)
{
    const char *p = sim_fixture_file("c.toml", "[[group]]\nnodes = 2\ngpus = 8\n"
                                               "[[group]]\nnodes = 3\ngpus = 4\nswitches = 3\n"
                                               "links = \"pcie\"\n");

    cr_assert_eq(gs_sim_read_cluster_toml(&t, p, &err), 0, "%s", errors());
    cr_assert_eq(t.nnodes, 5);
    cr_assert_eq(t.nodes[0].links, GS_SIM_LINKS_PAIRS, "the default layout");
    cr_assert_eq(t.nodes[1].switch_id, 1);
    cr_assert_eq(t.nodes[2].switch_id, 2);
    cr_assert_eq(t.nodes[4].switch_id, 4);
    cr_assert_eq(t.nodes[4].ngpus, 4);
    cr_assert_str_eq(t.nodes[4].name, "node5");
}

Test(sim_readers, names_the_place_of_a_bad_cluster_key)
{
    const char *p = sim_fixture_file("c.toml", "nodes = 4\ngpu = 8\nlinks = \"ring\"\n");

    cr_assert_eq(gs_sim_read_cluster_toml(&t, p, &err), -EINVAL);
    cr_assert(strstr(errors(), "c.toml:2:1: unknown key 'gpu'") != NULL, "%s", errors());
    cr_assert(strstr(errors(), "c.toml:3:9: links must be") != NULL, "%s", errors());
}

Test(sim_readers, says_which_file_is_missing)
{
    cr_assert_eq(gs_sim_read_philly(&t, "/nonexistent/x.trace", &err), -ENOENT);
    cr_assert(strstr(errors(), "/nonexistent/x.trace: ") != NULL);
}

static void add_job(uint64_t submit_s, uint32_t gpus)
{
    struct gs_sim_job j = {.submit_ms = submit_s * 1000,
                           .duration_ms = 1000,
                           .gpus = gpus,
                           .cores = gpus * 2,
                           .mem_mib = 1000,
                           .line = (uint32_t)t.njobs + 1,
                           .key = t.njobs};

    cr_assert_eq(gs_sim_trace_add_job(&t, &j), 0);
}

static void add_nodes(size_t n, uint32_t gpus)
{
    for (size_t i = 0; i < n; i++) {
        struct gs_sim_node node = {.ngpus = gpus, .ncores = 64, .mem_mib = 1 << 20};

        snprintf(node.name, sizeof(node.name), "n%zu", t.nnodes);
        cr_assert_eq(gs_sim_trace_add_node(&t, &node), 0);
    }
}

Test(sim_readers, sorts_by_submit_and_compresses_arrivals_by_the_load)
{
    add_job(500, 1);
    add_job(100, 1);
    add_job(300, 1);
    add_job(100, 2);
    gs_sim_trace_sort(&t);
    cr_assert_eq(t.jobs[0].submit_ms, 0, "times start at the first submit");
    cr_assert_eq(t.jobs[0].line, 2, "ties keep trace order");
    cr_assert_eq(t.jobs[1].line, 4);
    cr_assert_eq(t.jobs[3].submit_ms, 400000);
    gs_sim_trace_scale_load(&t, 4);
    cr_assert_eq(t.jobs[2].submit_ms, 50000);
    cr_assert_eq(t.jobs[3].submit_ms, 100000);
}

Test(sim_readers, spreads_jobs_wider_than_a_node_evenly)
{
    add_nodes(3, 8);
    add_job(0, 4);
    add_job(0, 12);
    add_job(0, 16);
    add_job(0, 32);
    add_job(0, 0);
    cr_assert_eq(gs_sim_trace_shape(&t), 1);
    cr_assert_eq(t.jobs[0].nodes, 1);
    cr_assert_eq(t.jobs[0].cores_per_node, 8);
    cr_assert_eq(t.jobs[1].nodes, 2);
    cr_assert_eq(t.jobs[1].gpus_per_node, 6);
    cr_assert_eq(t.jobs[1].cores_per_node, 12);
    cr_assert_eq(t.jobs[1].mem_per_node_mib, 500);
    cr_assert_eq(t.jobs[2].nodes, 2);
    cr_assert_eq(t.jobs[2].gpus_per_node, 8);
    cr_assert(t.jobs[3].impossible, "4 nodes of 8 on a 3-node cluster");
    cr_assert_eq(t.jobs[4].nodes, 1);
    cr_assert_eq(t.jobs[4].cores_per_node, 1);
    gs_sim_trace_keep_nodes(&t, 1);
    cr_assert_eq(t.nnodes, 1);
    cr_assert_eq(gs_sim_trace_shape(&t), 3);
}

Test(sim_readers, hashes_jobs_over_n_accounts_by_key_and_seed)
{
    size_t count[4] = {0}, moved = 0;
    uint32_t before[400];

    for (int i = 0; i < 400; i++)
        add_job((uint64_t)i, 1);
    cr_assert_eq(gs_sim_trace_hash_accounts(&t, 4, 1), 0);
    cr_assert_eq(t.naccounts, 4);
    cr_assert_str_eq(t.accounts[3], "acct3");
    for (size_t i = 0; i < t.njobs; i++)
        count[t.jobs[i].account]++;
    for (int a = 0; a < 4; a++)
        cr_assert(count[a] > 60 && count[a] < 140, "account %d has %zu of 400", a, count[a]);
    for (size_t i = 0; i < t.njobs; i++)
        before[i] = t.jobs[i].account;
    cr_assert_eq(gs_sim_trace_hash_accounts(&t, 4, 2), 0);
    for (size_t i = 0; i < t.njobs; i++)
        moved += t.jobs[i].account != before[i];
    cr_assert_gt(moved, 100, "another seed, another assignment");
    cr_assert_eq(gs_sim_trace_hash_accounts(&t, 0, 1), -EINVAL);
}

Test(sim_readers, makes_account_names_one_word)
{
    cr_assert_eq(gs_sim_trace_account(&t, "LM (batch size 5)"), 0);
    cr_assert_str_eq(t.accounts[0], "LM__batch_size_5_");
    cr_assert_eq(gs_sim_trace_account(&t, ""), 1);
    cr_assert_str_eq(t.accounts[1], "default");
}
