/*
 * main.c: the gsched command's entry point: global options, then dispatch to a subcommand
 * (cli/commands.h). The cluster subcommands (submit, queue, nodes, ...) join the table as
 * the scheduler gains them. Exit codes: 0 success, 1 the requested action failed, 2 bad
 * usage.
 */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "slurm/commands.h"
#include "gsched_config.h"

static const char usage_text[] =
    "usage: gsched [--version] [--help] <command> [args]\n"
    "\n"
    "gsched schedules jobs onto the GPUs of a cluster by hardware topology and launches them.\n"
    "\n"
    "commands:\n"
    "  check JOB.toml [--json]   check a job file and show the job as gsched reads it\n"
    "  nodes [--json] [NODE...]  the cluster's nodes: state, free GPUs, cores, memory\n"
    "  nodes --topology [--json] [NODE...]\n"
    "                            each node's GPU/NIC matrix, as nvidia-smi topo -m shows it\n"
    "  submit JOB.toml [--wait] [--hold] [--json | --parsable]\n"
    "                            queue a job; --wait: until it ends, exiting with its status\n"
    "  queue [--all] [--user U] [--name N] [--state S,...] [--array] [--json] [JOB...]\n"
    "                            the jobs waiting and running (--all: and finished ones)\n"
    "  show JOB [--json]         one job in full: state, times, nodes, history, task exits\n"
    "  cancel JOB... [--signal SIG] [--reason TEXT]\n"
    "                            end jobs (--signal: only send them SIG, e.g. USR1)\n"
    "  hold JOB... / release JOB...\n"
    "                            keep pending jobs from starting / let them start again\n"
    "  suspend JOB... / resume JOB...\n"
    "                            stop running jobs' tasks, which keep their nodes and GPUs /\n"
    "                            continue them (root)\n"
    "  wait JOB... [--timeout DUR] [--start] [--json]\n"
    "                            until the jobs end (--start: start); exit as submit --wait\n"
    "  logs JOB [-f] [--task N] [--stderr] [--tail BYTES]\n"
    "                            a task's output (rank 0 unless --task); -f follows it\n"
    "  (job commands also take --socket PATH; cancel, hold, release, suspend, resume take\n"
    "  --verbose, --json)\n"
    "  up [--workers N] [--gpus-per-node K | --topology FILE.xml] [--state DIR]\n"
    "     [--features A,B] [--port P] [--heartbeat DUR] [--kill-grace DUR]\n"
    "     [--fence-timeout DUR]\n"
    "                            start gschedd and N workers on this machine (./.gsched)\n"
    "  down [--state DIR]        stop that local cluster, keeping its jobs and logs\n"
    "  place --topology FILE.xml --gpus K [--busy LIST] [--affinity A] [--json]\n"
    "                            which GPUs of that node a K-GPU job gets, as gschedd picks\n"
    "  shard build --out DIR [--shard-tokens N] [--val-tokens N | --val-fraction F]\n"
    "        [--raw u8|u16|u32 --vocab V] FILE... / shard check DIR / shard info DIR [--json]\n"
    "                            a training dataset: build shards, verify them, list them\n"
    "  scontrol show hostnames [LIST]\n"
    "                            a Slurm hostlist (default $SLURM_JOB_NODELIST), one per line\n"
    "  scontrol [-o] show job|partition|node|reservation [X] / hold|release|requeue|requeuehold "
    "IDS\n"
    "  scontrol suspend|resume IDS\n"

    "  top [--once] [--interval DUR] [--user U] [--partition P] [--sort node|util|idle]\n"
    "      [--idle]              every GPU of the cluster, refreshed: use, memory, power, job,\n"
    "                            idle flags, totals (--once: one plain-text frame)\n"
    "  seff JOB [--json]         CPU and GPU efficiency of a running or ended job, as Slurm's\n"
    "                            seff, from the workers' telemetry\n"
    "  squeue / sinfo / sacct / sstat / scancel / sprio / sshare / sdiag [Slurm's options]\n"
    "                            Slurm's views and scancel, with Slurm's formats and options\n"
    "                            (sprio: priority factors; sshare: fair share; sdiag: counters)\n"
    "  sbatch [OPTIONS] SCRIPT [ARGS] | --wrap CMD [--test-only] [--json] [--wait]\n"
    "                            submit a Slurm batch script, its #SBATCH lines as Slurm reads\n"
    "                            them (--test-only: show the job and when it would start,\n"
    "                            submit nothing)\n"
    "  srun [-N N] [-n N] [-c N] [-l] [-w LIST] ... COMMAND [ARGS]\n"
    "                            inside a job: a job step on its nodes, output streamed back\n";
/* The rest of the help (a string literal may not be longer than 4095 characters). */
static const char usage_more[] =
    "  mpirun [MPIRUN OPTIONS --] PROGRAM [ARGS]\n"
    "                            inside a job: Open MPI's mpirun over the job's nodes, its\n"
    "                            daemons started by gsched rsh (a launcher = \"mpi\" job's "
    "leader)\n"
    "  rsh HOST COMMAND...       inside a job: a shell command on one of its nodes\n"
    "  kv put KEY VALUE / kv get KEY [--timeout SECONDS] [--job ID] [--json]\n"
    "                            the job's key/value store, for its tasks to rendezvous:\n"
    "                            one puts (an address), the others wait for it (kv --help)\n"
    "  sbcast [-f] [-p] SOURCE DEST\n"
    "                            inside a job: copy a file to DEST on each of its nodes\n"
    "  salloc [SBATCH OPTIONS] [COMMAND [ARGS]]\n"
    "                            an allocation; COMMAND (default $SHELL) runs here in it, srun\n"
    "                            there runs steps on its nodes (srun outside a job: the same)\n"
    "  sreport [-t FORMAT] [-T cpu,gres/gpu] [-n] [-p|-P] [--json] REPORT\n"
    "          [start=TIME] [end=TIME]\n"
    "                            Slurm's reports over a window (default yesterday): cluster\n"
    "                            Utilization (cores, -T: GPUs: allocated, down, idle),\n"
    "                            cluster AccountUtilizationByUser, UserUtilizationByAccount,\n"
    "                            user TopUsage [TopCount=N]\n"
    "  scontrol create|update|delete reservation KEY=VALUE... / sinfo -T\n"
    "                            advance reservations of nodes (root; docs/policy.md)\n"
    "  data ls [-w NODES] [--json] / data stat DATASET|DIR [-w NODES] [--json]\n"
    "  data warm DATASET|DIR -w NODES|--all [--wait] / data evict DATASET|DIR -w NODES|--all\n"
    "                            datasets in the nodes' shard caches: list, per-node\n"
    "                            shards, stage one ahead of a job, remove one (root)\n"
    "  simulate --trace FORMAT:FILE --cluster FILE [--policy LIST] [--nodes N] [--load X]\n"
    "           [--json] [--svg FILE]\n"
    "                            replay a cluster trace through gschedd's planning code in\n"
    "                            virtual time, policies side by side (docs/simulator.md)\n"
    "\n"
    "options:\n"
    "  -V, --version   print the version and the optional parts this build has\n"
    "  -h, --help      print this help\n";

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
    {"check", cli_cmd_check}, {"nodes", cli_cmd_nodes},     {"submit", cli_cmd_submit},
    {"queue", cli_cmd_queue}, {"show", cli_cmd_show},       {"cancel", cli_cmd_cancel},
    {"hold", cli_cmd_hold},   {"release", cli_cmd_release}, {"wait", cli_cmd_wait},
    {"logs", cli_cmd_logs},   {"up", cli_cmd_up},           {"down", cli_cmd_down},
    {"place", cli_cmd_place}, {"shard", cli_cmd_shard},     {"mpirun", cli_cmd_mpirun},
    {"rsh", cli_cmd_rsh},     {"kv", cli_cmd_kv},           {"top", cli_cmd_top},
    {"data", cli_cmd_data},   {"suspend", cli_cmd_suspend}, {"resume", cli_cmd_resume},
};

static void print_version(void)
{
    printf("gsched %s (cuda=%s cudnn=%s nccl=%s mpi=%s munge=%s pmix=%s)\n", GSCHED_VERSION,
           GSCHED_HAVE_CUDA ? "yes" : "no", GSCHED_HAVE_CUDNN ? "yes" : "no",
           GSCHED_HAVE_NCCL ? "yes" : "no", GSCHED_HAVE_MPI ? "yes" : "no",
           GSCHED_HAVE_MUNGE ? "yes" : "no", GSCHED_HAVE_PMIX ? "yes" : "no");
}

/*
 * Called as a Slurm command (a link named squeue to gsched), gsched is that command: job
 * scripts call them by those names. Only the ones gsched implements the Slurm way answer;
 * each also answers as "gsched NAME".
 */
static const struct command slurm_commands[] = {
    {"scontrol", cli_cmd_scontrol}, {"squeue", cli_cmd_squeue},     {"sinfo", cli_cmd_sinfo},
    {"sacct", cli_cmd_sacct},       {"scancel", cli_cmd_scancel},   {"sbatch", cli_cmd_sbatch},
    {"srun", cli_cmd_srun},         {"seff", cli_cmd_seff},         {"sprio", cli_cmd_sprio},
    {"sshare", cli_cmd_sshare},     {"simulate", cli_cmd_simulate}, {"salloc", cli_cmd_salloc},
    {"sstat", cli_cmd_sstat},       {"sreport", cli_cmd_sreport},   {"sdiag", cli_cmd_sdiag},
    {"sbcast", cli_cmd_sbcast},
};

static const struct command *slurm_command(const char *argv0)
{
    const char *base = strrchr(argv0, '/');

    base = base != NULL ? base + 1 : argv0;
    for (size_t i = 0; i < sizeof(slurm_commands) / sizeof(slurm_commands[0]); i++) {
        if (strcmp(base, slurm_commands[i].name) == 0)
            return &slurm_commands[i];
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const struct command *as = slurm_command(argv[0]);
    const char *arg;

    if (as != NULL)
        return as->run(argc, argv);
    if (argc < 2) {
        fputs(usage_text, stderr);
        fputs(usage_more, stderr);
        return 2;
    }
    arg = argv[1];
    if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0 || strcmp(arg, "version") == 0) {
        print_version();
        return 0;
    }
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0 || strcmp(arg, "help") == 0) {
        fputs(usage_text, stdout);
        fputs(usage_more, stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(arg, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    }
    for (size_t i = 0; i < sizeof(slurm_commands) / sizeof(slurm_commands[0]); i++) {
        if (strcmp(arg, slurm_commands[i].name) == 0)
            return slurm_commands[i].run(argc - 1, argv + 1);
    }
    if (arg[0] == '-')
        fprintf(stderr, "gsched: unknown option '%s' (see gsched --help)\n", arg);
    else
        fprintf(stderr, "gsched: unknown command '%s' (see gsched --help)\n", arg);
    return 2;
}
