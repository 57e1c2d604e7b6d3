/*
 * test_jobspec.c: a job spec read from a job file survives the trip through a packed
 * gs.JobSpec unchanged, and a spec arriving from the wire is checked like a job file.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "proto/jobspec.h"

static const char full[] = "name = \"gpt\"\npriority = -3\nnice = -7\nhold = true\n"
                           "depends_on = [\"afterok:41\", \"after:2+5\", \"afterany:9_3\", "
                           "\"aftercorr:8_*\"]\nkill_on_invalid_dep = false\n"
                           "account = \"nlp\"\nqos = \"high\"\npartition = \"gpu\"\n"
                           "reservation = \"maint\"\ncomment = \"sweep 3\"\nwckey = \"ml7\"\n"
                           "[resources]\nnodes = 2\ngpus_per_node = 4\ncpus_per_gpu = 8\n"
                           "mem_per_node = \"64G\"\ntmp_per_node = \"2G\"\nthreads_per_core = "
                           "1\ntime_limit = \"1:00:00\"\nexclusive = true\n"
                           "constraint = \"h100\"\n"
                           "[run]\ncommand = [\"python3\", \"train.py\"]\n"
                           "tasks_per_node = \"per-gpu\"\nworkdir = \"/w\"\nlauncher = \"mpi\"\n"
                           "stdout = \"o-%j\"\nstderr = \"e-%t\"\n"
                           "env = { A = \"1\", B = \"x=y\" }\n[restart]\nmax_restarts = 2\n";

static struct gs_jobspec *parse(const char *text)
{
    struct gs_buf errors = GS_BUF_INIT;
    struct gs_jobspec *spec = NULL;

    cr_assert_eq(gs_jobspec_parse_toml(text, strlen(text), "job.toml", &spec, &errors), 0, "%s",
                 errors.data);
    gs_buf_release(&errors);
    return spec;
}

/* spec -> view -> packed bytes -> unpacked message -> spec */
static int round_trip(const struct gs_jobspec *in, struct gs_jobspec **out, struct gs_error *err)
{
    struct gs_proto_jobspec_view view;
    uint8_t buf[4096];
    Gs__JobSpec *pb;
    size_t len;
    int rc;

    cr_assert_eq(gs_proto_jobspec_view_init(&view, in), 0);
    len = gs__job_spec__get_packed_size(&view.spec);
    cr_assert_lt(len, sizeof(buf));
    gs__job_spec__pack(&view.spec, buf);
    gs_proto_jobspec_view_release(&view);
    pb = gs__job_spec__unpack(NULL, len, buf);
    cr_assert_not_null(pb);
    rc = gs_proto_jobspec_from_pb(pb, out, err);
    gs__job_spec__free_unpacked(pb, NULL);
    return rc;
}

Test(proto_jobspec, every_field_survives_the_wire)
{
    struct gs_jobspec *in = parse(full), *out = NULL;
    struct gs_error err;

    cr_assert_eq(gs_jobspec_check(in, &err), 0, "%s", err.msg);
    cr_assert_eq(round_trip(in, &out, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out->name, "gpt");
    cr_assert_eq(out->priority, -3);
    cr_assert_eq(out->nice, -7, "negative nice survives the wire (sint32)");
    cr_assert(out->hold);
    cr_assert_eq(out->ndeps, 4);
    cr_assert_eq(out->deps[0].type, GS_DEP_AFTEROK);
    cr_assert_eq(out->deps[1].type, GS_DEP_AFTER);
    cr_assert_eq(out->deps[1].job_id, 2);
    cr_assert_eq(out->deps[1].delay_min, 5);
    cr_assert_eq(out->deps[2].target, GS_DEP_TASK);
    cr_assert_eq(out->deps[2].task_id, 3);
    cr_assert_eq(out->deps[3].type, GS_DEP_AFTERCORR);
    cr_assert_eq(out->deps[3].target, GS_DEP_ARRAY);
    cr_assert_eq(out->kill_invalid_dep, GS_KILL_INVALID_DEP_NO);
    cr_assert_eq(out->nodes, 2);
    cr_assert_eq(out->gpus_per_node, 4);
    cr_assert_eq(out->cpus_per_gpu, 8);
    cr_assert_eq(out->cpus_per_task, 0);
    cr_assert_eq(out->mem_per_node_mib, 65536);
    cr_assert_eq(out->tmp_per_node_mib, 2048);
    cr_assert_eq(out->threads_per_core, 1);
    cr_assert_eq(out->time_limit_s, 3600);
    cr_assert(out->exclusive);
    cr_assert_str_eq(out->constraint, "h100");
    cr_assert_eq(out->argc, 2);
    cr_assert_str_eq(out->argv[1], "train.py");
    cr_assert_null(out->script);
    cr_assert(out->tasks_per_gpu);
    cr_assert_str_eq(out->workdir, "/w");
    cr_assert_str_eq(out->stdout_pattern, "o-%j");
    cr_assert_str_eq(out->stderr_pattern, "e-%t");
    cr_assert_eq(out->nenv, 2);
    cr_assert_str_eq(out->env[1], "B=x=y");
    cr_assert_eq(out->max_restarts, 2);
    cr_assert_eq(out->launcher, GS_LAUNCHER_MPI);
    cr_assert_str_eq(out->account, "nlp");
    cr_assert_str_eq(out->qos, "high");
    cr_assert_str_eq(out->partition, "gpu");
    cr_assert_str_eq(out->reservation, "maint");
    cr_assert_str_eq(out->comment, "sweep 3");
    cr_assert_str_eq(out->wckey, "ml7");
    gs_jobspec_free(in);
    gs_jobspec_free(out);
}

Test(proto_jobspec, unlimited_time_and_defaults_survive)
{
    struct gs_jobspec *in = parse("[run]\nscript = \"echo hi\"\n"), *out = NULL;
    struct gs_error err;

    cr_assert_eq(round_trip(in, &out, &err), 0, "%s", err.msg);
    cr_assert_eq(out->time_limit_s, GS_DURATION_INFINITE);
    cr_assert_eq(out->cpus_per_task, 1);
    cr_assert_eq(out->tasks_per_node, 1);
    cr_assert_str_eq(out->script, "echo hi");
    cr_assert_null(out->argv);
    cr_assert_null(out->constraint);
    cr_assert_null(out->stderr_pattern);
    cr_assert_eq(out->nice, 0);
    cr_assert_null(out->reservation, "\"\" on the wire is none");
    gs_jobspec_free(in);
    gs_jobspec_free(out);
}

Test(proto_jobspec, torchrun_launcher_survives_the_wire)
{
    struct gs_jobspec *in = parse("[run]\nlauncher = \"torchrun\"\ncommand = [\"t.py\"]\n"),
                      *out = NULL;
    struct gs_error err;

    cr_assert_eq(round_trip(in, &out, &err), 0, "%s", err.msg);
    cr_assert_eq(out->launcher, GS_LAUNCHER_TORCHRUN);
    gs_jobspec_free(in);
    gs_jobspec_free(out);
}

Test(proto_jobspec, dataset_survives_the_wire)
{
    struct gs_jobspec *in = parse("[run]\nscript = \"echo hi\"\n[data]\nmanifest = \"d\"\n"
                                  "stage = \"stream\"\ntolerance = 0.25\nseed = 9\n"
                                  "locality_wait = \"90s\"\n"),
                      *out = NULL;
    struct gs_error err;

    /* What the CLI fills in when it reads the dataset (cli/data_resolve.c). */
    snprintf(in->data.id, sizeof(in->data.id), "%s", "00112233445566778899aabbccddeeff");
    in->data.source = strdup("/data/d");
    in->data.shards = 12;
    in->data.bytes = 12345;
    cr_assert_eq(round_trip(in, &out, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out->data.id, "00112233445566778899aabbccddeeff");
    cr_assert_str_eq(out->data.source, "/data/d");
    cr_assert_eq(out->data.shards, 12);
    cr_assert_eq(out->data.bytes, 12345);
    cr_assert_eq(out->data.stage, GS_DATA_STAGE_STREAM);
    cr_assert_float_eq(out->data.tolerance, 0.25, 1e-12);
    cr_assert_eq(out->data.seed, 9);
    cr_assert(out->data.locality_wait_set && out->data.locality_wait_s == 90);
    cr_assert_null(out->data.manifest, "the job file's own words stay with the CLI");
    gs_jobspec_free(out);
    /* A wait past a day is refused on receipt as at parse. */
    in->data.locality_wait_s = GS_DATA_LOCALITY_WAIT_MAX + 1;
    cr_assert_eq(round_trip(in, &out, &err), -EINVAL);
    cr_assert_not_null(strstr(err.msg, "data.locality_wait"), "%s", err.msg);
    in->data.locality_wait_s = 90;
    /* Resolved wrongly (or by a client that lies): refused by name. */
    in->data.id[3] = 'X';
    cr_assert_eq(round_trip(in, &out, &err), -EINVAL);
    cr_assert_not_null(strstr(err.msg, "data.dataset"), "%s", err.msg);
    in->data.id[3] = '3';
    free(in->data.source);
    in->data.source = strdup("relative/d");
    cr_assert_eq(round_trip(in, &out, &err), -EINVAL);
    cr_assert_not_null(strstr(err.msg, "data.source"), "%s", err.msg);
    gs_jobspec_free(in);
}

static void assert_rejected(Gs__JobSpec *pb, const char *fragment)
{
    struct gs_jobspec *out = (struct gs_jobspec *)0x1;
    struct gs_error err;

    cr_assert_eq(gs_proto_jobspec_from_pb(pb, &out, &err), -EINVAL);
    cr_assert_eq(out, (struct gs_jobspec *)0x1);
    cr_assert_not_null(strstr(err.msg, fragment), "'%s' lacks '%s'", err.msg, fragment);
}

Test(proto_jobspec, wire_specs_are_checked_like_job_files)
{
    Gs__JobSpec pb = GS__JOB_SPEC__INIT;
    Gs__Resources res = GS__RESOURCES__INIT;
    Gs__RunSpec run = GS__RUN_SPEC__INIT;
    Gs__Dependency dep = GS__DEPENDENCY__INIT, *deps[] = {&dep};
    char *argv[] = {"true"};

    assert_rejected(&pb, "lacks resources");
    pb.resources = &res;
    pb.run = &run;
    pb.name = "x";
    run.tasks_per_node = 1;
    run.stdout_pattern = "out";
    assert_rejected(&pb, "resources.nodes");
    res.nodes = 1;
    assert_rejected(&pb, "exactly one of run.command and run.script");
    run.n_argv = 1;
    run.argv = argv;
    run.script = "echo";
    assert_rejected(&pb, "exactly one of run.command and run.script");
    run.script = "";
    pb.name = "a/b";
    assert_rejected(&pb, "name must be");
    pb.name = "ok";
    res.cpus_case = GS__RESOURCES__CPUS_CPUS_PER_GPU;
    res.cpus_per_gpu = 2;
    assert_rejected(&pb, "cpus_per_gpu needs");
    res.cpus_case = GS__RESOURCES__CPUS__NOT_SET;
    run.stdout_pattern = "%q";
    assert_rejected(&pb, "placeholder");
    run.stdout_pattern = "out";
    pb.n_depends_on = 1;
    pb.depends_on = deps;
    assert_rejected(&pb, "depends_on[0]");
    dep.type = (Gs__DependencyType)INT32_MIN; /* any int32 on the wire (live_fuzz found it) */
    assert_rejected(&pb, "depends_on[0]");
    dep.type = GS__DEPENDENCY_TYPE__DEPENDENCY_TYPE_AFTERANY;
    assert_rejected(&pb, "depends_on[0]"); /* job id 0 */
    dep.job_id = 5;
    dep.target = (Gs__DependencyTarget)3;
    assert_rejected(&pb, "depends_on[0]");
    dep.target = GS__DEPENDENCY_TARGET__DEPENDENCY_TARGET_TASK;
    dep.type = GS__DEPENDENCY_TYPE__DEPENDENCY_TYPE_AFTERCORR;
    assert_rejected(&pb, "depends_on[0]"); /* aftercorr names the array, not a task */
    dep.type = GS__DEPENDENCY_TYPE__DEPENDENCY_TYPE_AFTEROK;
    dep.delay_min = 5;
    assert_rejected(&pb, "depends_on[0]"); /* +MIN only after "after" */
    dep.target = GS__DEPENDENCY_TARGET__DEPENDENCY_TARGET_JOB;
    dep.delay_min = 0;
    pb.kill_on_invalid_dep = 3;
    assert_rejected(&pb, "kill_on_invalid_dep");
    pb.kill_on_invalid_dep = 1;
    pb.priority = 2000000;
    assert_rejected(&pb, "priority");
    pb.priority = 0;
    pb.nice = 1000001;
    assert_rejected(&pb, "nice must be from");
    pb.nice = INT32_MIN;
    assert_rejected(&pb, "nice must be from");
    pb.nice = 0;
    pb.reservation = "maint window"; /* the scheduler matches one name, as job files give it */
    assert_rejected(&pb, "reservation must be one name");
}

/* A batch job (as sbatch makes it) with two further components. */
static struct gs_jobspec *het_job(void)
{
    struct gs_jobspec *in = parse("[run]\nscript = \"srun hostname\"\n");

    in->batch = in->slurm = true;
    in->nodes = 1;
    in->ntasks = 2;
    in->tasks_per_node = 2;
    in->het = calloc(2, sizeof(*in->het));
    cr_assert_not_null(in->het);
    in->nhet = 2;
    in->het[0] = (struct gs_het_component){.nodes = 2,
                                           .cpus_per_task = 4,
                                           .tasks_per_node = 1,
                                           .mem_per_node_mib = 2048,
                                           .constraint = strdup("big")};
    in->het[1] = (struct gs_het_component){.nodes = 3,
                                           .gpus_per_node = 2,
                                           .cpus_per_gpu = 3,
                                           .tasks_per_gpu = true,
                                           .ntasks = 5,
                                           .gpus_per_task = 1};
    return in;
}

Test(proto_jobspec, heterogeneous_components_survive_the_wire)
{
    struct gs_jobspec *in = het_job(), *out = NULL;
    struct gs_error err;

    cr_assert_eq(round_trip(in, &out, &err), 0, "%s", err.msg);
    cr_assert_eq(out->nhet, 2);
    cr_assert_eq(out->het[0].nodes, 2);
    cr_assert_eq(out->het[0].cpus_per_task, 4);
    cr_assert_eq(out->het[0].cpus_per_gpu, 0);
    cr_assert_eq(out->het[0].mem_per_node_mib, 2048);
    cr_assert_str_eq(out->het[0].constraint, "big");
    cr_assert_eq(out->het[1].gpus_per_node, 2);
    cr_assert_eq(out->het[1].cpus_per_gpu, 3);
    cr_assert_eq(out->het[1].cpus_per_task, 0);
    cr_assert(out->het[1].tasks_per_gpu);
    cr_assert_eq(out->het[1].ntasks, 5);
    cr_assert_eq(out->het[1].gpus_per_task, 1);
    cr_assert_null(out->het[1].constraint);
    cr_assert_eq(gs_jobspec_total_nodes(out), 6);
    cr_assert_eq(gs_jobspec_total_gpus(out), 6);
    cr_assert_eq(gs_jobspec_ntasks(out), 2 + 2 + 5);
    /* Each node's tasks as its component lays them out: 2 | 1 1 | 2 2 1. */
    cr_assert_eq(gs_jobspec_node_tasks(out, 0), 2);
    cr_assert_eq(gs_jobspec_node_tasks(out, 2), 1);
    cr_assert_eq(gs_jobspec_node_tasks(out, 3), 2);
    cr_assert_eq(gs_jobspec_node_tasks(out, 5), 1);
    cr_assert_eq(gs_jobspec_het_of_node(out, 0), 0);
    cr_assert_eq(gs_jobspec_het_of_node(out, 1), 1);
    cr_assert_eq(gs_jobspec_het_of_node(out, 2), 1);
    cr_assert_eq(gs_jobspec_het_of_node(out, 3), 2);
    cr_assert_eq(gs_jobspec_het_first_node(out, 2), 3);
    gs_jobspec_free(in);
    gs_jobspec_free(out);
}

Test(proto_jobspec, heterogeneous_jobs_are_checked_whole_and_per_component)
{
    struct gs_jobspec *in = het_job();
    struct gs_error err;

    cr_assert_eq(gs_jobspec_check(in, &err), 0, "%s", err.msg);
    in->het[1].ntasks = 7; /* 3 nodes of 2 tasks at most */
    cr_assert_eq(gs_jobspec_check(in, &err), -EINVAL);
    cr_assert_str_eq(err.msg, "het component 2: resources.ntasks 7 does not fit 3 nodes of at "
                              "most 2 tasks");
    in->het[1].ntasks = 5;
    in->het[0].nodes = 0;
    cr_assert_eq(gs_jobspec_check(in, &err), -EINVAL);
    cr_assert(strstr(err.msg, "het component 1: resources.nodes must be 1") != NULL, "%s", err.msg);
    in->het[0].nodes = 2;
    in->batch = false; /* a job file's: no steps to say where each part runs */
    cr_assert_eq(gs_jobspec_check(in, &err), -EINVAL);
    cr_assert(strstr(err.msg, "need a batch script") != NULL, "%s", err.msg);
    in->batch = true;
    in->nodelist = calloc(2, sizeof(char *));
    cr_assert_not_null(in->nodelist);
    in->nodelist[0] = strdup("node1");
    in->nnodelist = 1;
    cr_assert_eq(gs_jobspec_check(in, &err), -EINVAL);
    cr_assert(strstr(err.msg, "nodelist") != NULL, "%s", err.msg);
    gs_jobspec_free(in);
}

/* sbatch --propagate's limits cross the wire by name; one the worker could not set is
 * refused. */
Test(proto_jobspec, rlimits_survive_and_are_checked)
{
    struct gs_jobspec *in = parse("[run]\ncommand = [\"true\"]\n"), *out = NULL;
    struct gs_error err;

    in->rlimits = calloc(2, sizeof(*in->rlimits));
    cr_assert_not_null(in->rlimits);
    in->rlimits[0] = (struct gs_rlimit){"STACK", 2000 * 1024};
    in->rlimits[1] = (struct gs_rlimit){"CORE", UINT64_MAX};
    in->nrlimits = 2;
    cr_assert_eq(round_trip(in, &out, &err), 0, "%s", err.msg);
    cr_assert_eq(out->nrlimits, 2);
    cr_assert_str_eq(out->rlimits[1].name, "CORE");
    cr_assert_eq(out->rlimits[1].soft, UINT64_MAX);
    cr_assert_eq(out->rlimits[0].soft, 2000 * 1024);
    gs_jobspec_free(out);
    snprintf(in->rlimits[1].name, sizeof(in->rlimits[1].name), "CORES");
    cr_assert_eq(round_trip(in, &out, &err), -EINVAL);
    cr_assert_not_null(strstr(err.msg, "'CORES' is no limit's name"), "%s", err.msg);
    gs_jobspec_free(in);
}
