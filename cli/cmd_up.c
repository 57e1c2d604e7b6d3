/*
 * cmd_up.c: `gsched up` and `gsched down`: a whole cluster on this machine, so that gsched
 * can be tried (and its end-to-end tests run) without root, /etc/gsched or more than one
 * host. `up` writes DIR/gsched.toml, starts gschedd and N gsched-workerd named node1..nodeN
 * with synthetic GPUs (or an hwloc XML topology), and returns once every worker is UP;
 * `down` stops them and keeps the rest of DIR, so the next `up` resumes the same queue.
 * The state directory's layout and the process handling are in cli/local.h.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include "cli/commands.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/client.h"
#include "cli/local.h"
#include "cli/local_netns.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/units.h"
#include "proto/auth.h"

#define UP_DEFAULT_WORKERS 2
#define UP_DEFAULT_GPUS 4
#define UP_START_TIMEOUT_MS 20000
#define UP_POLL_MS 50
#define UP_PROBE_TIMEOUT_MS 1000
#define DOWN_TIMEOUT_MS 15000
#define TAIL_LINES 20
#define UP_MAX_PARTITIONS 16

static const char up_usage[] =
    "usage: gsched up [--workers N] [--gpus-per-node K | --topology FILE.xml] [--features A,B]\n"
    "                 [--state DIR] [--port P] [--heartbeat DUR] [--kill-grace DUR]\n"
    "                 [--fence-timeout DUR]\n"
    "                 [--partition NAME[=NODES][:default][:max_time=DUR]]... [--share-cpus]\n"
    "                 [--netns [--subnet A.B.C]]\n"
    "Starts gschedd and N gsched-workerd (node1..nodeN) on this machine.\n"
    "  --workers N         workers to start, 1 to 64 (default 2)\n"
    "  --share-cpus        every worker offers all of this machine's CPUs (default: each\n"
    "                      its own share when that is at least 4 CPUs, else all share, as\n"
    "                      Slurm's multiple-slurmd setups oversubscribe; not with --topology)\n"
    "  --gpus-per-node K   synthetic GPUs per worker (default 4; 0: this machine's own)\n"
    "  --topology FILE     every worker has the hardware of this hwloc XML file\n"
    "  --features A,B      features of every worker, for job constraints\n"
    "  --state DIR         configuration, socket, logs and database (default ./.gsched)\n"
    "  --port P            TCP port for the workers (default: a free one)\n"
    "  --heartbeat DUR     workers' heartbeat interval, whole seconds (default 2s); a node\n"
    "                      is DOWN after 3 missed ones\n"
    "  --kill-grace DUR    from SIGTERM to SIGKILL when a job ends (default 30s)\n"
    "  --fence-timeout DUR a worker that hears nothing from gschedd this long kills its\n"
    "                      tasks, and a lost node's jobs move only after it (default 5m)\n"
    "  --partition SPEC    a partition (sbatch -p), as [[partition]] in gsched.toml: its\n"
    "                      nodes a hostlist (default: all), the default one, its longest\n"
    "                      time limit; repeat for more (default: one, \"main\", of all)\n"
    "  --netns             (root) gschedd and each worker in network, UTS and mount\n"
    "                      namespaces of their own on one bridge: each node has its host\n"
    "                      name and address, and every node's /etc/hosts names them all\n"
    "                      (STATE/hosts); without it every node is 127.0.0.1\n"
    "  --subnet A.B.C      the /24 of --netns (default: a free one in 10.100-199.x)\n"
    "DUR is a duration as in gsched.toml: \"1s\", \"90s\", \"1m30s\", \"1:30\".\n"
    "A cluster in DIR whose gschedd alone died (every worker still runs) gets its gschedd\n"
    "back, from its own configuration; the options are then not used.\n";

static const char down_usage[] = "usage: gsched down [--state DIR]\n"
                                 "Stops the local cluster that `gsched up` started in DIR "
                                 "(default ./.gsched), keeping its jobs and logs.\n";

struct up_opts {
    unsigned workers;
    unsigned gpus;
    bool gpus_given;
    const char *topology;
    const char *features;
    const char *state;
    unsigned port;         /* 0: pick a free one */
    uint64_t heartbeat_s;  /* 0: the scheduler's default */
    uint64_t kill_grace_s; /* 0: the scheduler's default */
    uint64_t fence_s;      /* 0: the scheduler's default */
    const char *partitions[UP_MAX_PARTITIONS];
    unsigned npartitions;
    bool share_cpus;
    bool netns;
    const char *subnet;
};

/* What `up` works with once the options are checked. */
struct up {
    struct up_opts opts;
    struct cli_local local;
    char gschedd[PATH_MAX];
    char workerd[PATH_MAX];
    char topology[PATH_MAX]; /* absolute, "" without --topology */
    char config[PATH_MAX];
    char key[PATH_MAX]; /* the cluster key (proto/auth.h), made once and kept */
    char socket[PATH_MAX];
    unsigned gpus_per_node; /* from the scheduler's view of node1, for the summary */
    bool in_netns;          /* --netns, or a revived cluster that had it */
    struct cli_netns ns;
};

static int parse_number(const char *opt, const char *arg, unsigned min, unsigned max, unsigned *out)
{
    char *end;
    long n = strtol(arg, &end, 10);

    if (arg[0] == '\0' || *end != '\0' || n < (long)min || n > (long)max)
        return cli_usage_error("up", "%s wants %u to %u, not '%s'", opt, min, max, arg);
    *out = (unsigned)n;
    return 0;
}

/* A duration for gsched.toml, which counts in whole seconds: at least 1 s, not unlimited. */
static int parse_seconds(const char *opt, const char *arg, uint64_t *out)
{
    uint64_t s;

    if (gs_parse_duration(arg, &s) < 0 || s == 0 || s == GS_DURATION_INFINITE ||
        s > UINT32_MAX / 1000)
        return cli_usage_error("up",
                               "%s wants a duration of whole seconds such as \"1s\" or \"1m\", "
                               "not '%s'",
                               opt, arg);
    *out = s;
    return 0;
}

/* One option with its argument at argv[*i]; returns 0, or 2 after printing why. */
static int parse_up_option(struct up_opts *o, int argc, char **argv, int *i)
{
    const char *opt = argv[*i], *arg;

    if (*i + 1 >= argc)
        return cli_usage_error("up", "%s wants a value", opt);
    arg = argv[++*i];
    if (strcmp(opt, "--workers") == 0)
        return parse_number(opt, arg, 1, CLI_LOCAL_MAX_WORKERS, &o->workers);
    if (strcmp(opt, "--port") == 0)
        return parse_number(opt, arg, 1, 65535, &o->port);
    if (strcmp(opt, "--heartbeat") == 0)
        return parse_seconds(opt, arg, &o->heartbeat_s);
    if (strcmp(opt, "--kill-grace") == 0)
        return parse_seconds(opt, arg, &o->kill_grace_s);
    if (strcmp(opt, "--fence-timeout") == 0)
        return parse_seconds(opt, arg, &o->fence_s);
    if (strcmp(opt, "--gpus-per-node") == 0) {
        o->gpus_given = true;
        return parse_number(opt, arg, 0, 64, &o->gpus);
    }
    if (strcmp(opt, "--partition") == 0) {
        if (o->npartitions == UP_MAX_PARTITIONS)
            return cli_usage_error("up", "at most %d --partition options", UP_MAX_PARTITIONS);
        if (arg[0] == '\0' || arg[0] == '=' || arg[0] == ':')
            return cli_usage_error("up", "--partition wants NAME[=NODES][:default][:max_time=DUR]");
        o->partitions[o->npartitions++] = arg;
        return 0;
    }
    if (strcmp(opt, "--subnet") == 0)
        o->subnet = arg;
    else if (strcmp(opt, "--topology") == 0)
        o->topology = arg;
    else if (strcmp(opt, "--features") == 0)
        o->features = arg;
    else
        o->state = arg;
    return 0;
}

static int parse_up(struct up_opts *o, int argc, char **argv)
{
    static const char *const with_value[] = {
        "--workers",   "--gpus-per-node", "--topology",  "--features",      "--state", "--port",
        "--heartbeat", "--kill-grace",    "--partition", "--fence-timeout", "--subnet"};

    *o = (struct up_opts){
        .workers = UP_DEFAULT_WORKERS, .gpus = UP_DEFAULT_GPUS, .state = CLI_LOCAL_STATE_DIR};
    for (int i = 1; i < argc; i++) {
        bool known = false;
        int rc;

        if (strcmp(argv[i], "--share-cpus") == 0) {
            o->share_cpus = true;
            continue;
        }
        if (strcmp(argv[i], "--netns") == 0) {
            o->netns = true;
            continue;
        }
        for (size_t k = 0; k < sizeof(with_value) / sizeof(with_value[0]); k++)
            known = known || strcmp(argv[i], with_value[k]) == 0;
        if (!known)
            return cli_usage_error("up", "unknown argument '%s'", argv[i]);
        rc = parse_up_option(o, argc, argv, &i);
        if (rc != 0)
            return rc;
    }
    if (o->gpus_given && o->topology != NULL)
        return cli_usage_error("up", "--gpus-per-node and --topology exclude each other");
    if (o->subnet != NULL && !o->netns)
        return cli_usage_error("up", "--subnet is --netns's");
    return 0;
}

static bool is_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    }
    return false;
}

/* A port nothing listens on now. Another program may take it before gschedd does; then
 * gschedd fails to listen, `up` says so, and running it again picks another. */
static int pick_port(unsigned *ret_port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc = 0;

    if (fd < 0)
        return -errno;
    if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
        getsockname(fd, (struct sockaddr *)&sin, &len) < 0)
        rc = -errno;
    close(fd);
    if (rc == 0)
        *ret_port = ntohs(sin.sin_port);
    return rc;
}

/* A TOML basic string: quotes, backslashes and control characters escaped. */
static void toml_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/*
 * --partition NAME[=NODES][:default][:max_time=DUR] as a [[partition]] table; gschedd
 * checks the values when it reads the file, with file:line:col messages.
 */
static void write_partition(FILE *f, const char *spec)
{
    char buf[512], *save = NULL, *part, *eq;

    snprintf(buf, sizeof(buf), "%s", spec);
    part = strtok_r(buf, ":", &save);
    eq = part != NULL ? strchr(part, '=') : NULL;
    if (eq != NULL)
        *eq = '\0';
    fputs("[[partition]]\nname = ", f);
    toml_string(f, part != NULL ? part : "");
    if (eq != NULL) {
        fputs("\nnodes = ", f);
        toml_string(f, eq + 1);
    }
    fputc('\n', f);
    while ((part = strtok_r(NULL, ":", &save)) != NULL) {
        if (strcmp(part, "default") == 0) {
            fputs("default = true\n", f);
        } else if (strncmp(part, "max_time=", 9) == 0) {
            fputs("max_time = ", f);
            toml_string(f, part + 9);
            fputc('\n', f);
        } else {
            fputs("unknown_option = ", f); /* gschedd names it at its line */
            toml_string(f, part);
            fputc('\n', f);
        }
    }
}

/* FNV-1a of a path: a short name for it. */
static uint32_t path_hash(const char *path)
{
    uint32_t h = 2166136261u;

    for (const char *p = path; *p != '\0'; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    return h;
}

static int write_config(const struct up *u)
{
    FILE *f = fopen(u->config, "w");
    int rc = 0;

    if (f == NULL) {
        rc = -errno;
        goto out;
    }
    char addr[32] = "127.0.0.1";

    if (u->in_netns)
        cli_netns_addr(&u->ns, 0, addr, sizeof(addr));
    fputs("# Written by `gsched up` at every start; edits are lost.\n[scheduler]\n", f);
    fprintf(f, "host = \"%s\"\n", addr);
    fprintf(f, "port = %u\nsocket = ", u->opts.port);
    toml_string(f, u->socket);
    fputs("\nstate_dir = ", f);
    toml_string(f, u->local.dir);
    fputc('\n', f);
    if (u->opts.heartbeat_s > 0)
        fprintf(f, "heartbeat_interval = \"%" PRIu64 "s\"\n", u->opts.heartbeat_s);
    if (u->opts.kill_grace_s > 0)
        fprintf(f, "kill_grace = \"%" PRIu64 "s\"\n", u->opts.kill_grace_s);
    if (u->opts.fence_s > 0)
        fprintf(f, "fence_timeout = \"%" PRIu64 "s\"\n", u->opts.fence_s);
    /* Any free port, so that several local clusters each have their status page; with
     * --netns on gschedd's address, which this machine reaches through the bridge. */
    fprintf(f, "http = \"%s:0\"\n", addr);
    fputs("auth_key = ", f);
    toml_string(f, u->key);
    fputc('\n', f);
    for (unsigned i = 0; i < u->opts.npartitions; i++)
        write_partition(f, u->opts.partitions[i]);
    /* Each worker keeps its task ledger there (worker/ledger.h), one file per node. */
    fputs("[worker]\nlog_dir = ", f);
    toml_string(f, u->local.dir);
    fputs("\n", f);
    /* The cluster is its user's: started by root, its jobs are root's to run. */
    if (geteuid() == 0)
        fputs("allow_root_jobs = true\n", f);
    /* Its jobs' cgroups apart from another local cluster's nodes of the same names. */
    fprintf(f, "cgroup_parent = \"gsched-up/%08x\"\n", path_hash(u->local.dir));
    if (ferror(f))
        rc = -EIO;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
out:
    if (rc < 0)
        fprintf(stderr, "gsched up: cannot write %s: %s\n", u->config, gs_strerror(rc));
    return rc;
}

static int enter_netns(const void *data)
{
    return cli_netns_enter(data);
}

/* Starts daemon i (0: gschedd) from argv, in its namespaces with --netns. */
static int spawn(struct up *u, unsigned i, char *const argv[])
{
    struct cli_netns_enter enter;
    struct cli_spawn_hook hook = {.before_exec = enter_netns, .data = &enter};

    if (!u->in_netns)
        return cli_local_spawn(&u->local, &u->local.daemons[i], argv);
    cli_netns_prepare_enter(&u->ns, i, &enter);
    return cli_local_spawn_hooked(&u->local, &u->local.daemons[i], argv, &hook);
}

static int start_gschedd(struct up *u)
{
    char *argv[] = {u->gschedd, "--config", u->config, NULL};

    return spawn(u, 0, argv);
}

/*
 * Worker i's share (1-based) of the CPUs this process may use, as --cpus wants it ("0,1"):
 * N workers on one machine are N nodes, and binding each job's cores should not put two
 * "nodes'" ranks on one CPU. Returns 0, or 1 when the workers share them all: --share-cpus,
 * another machine's --topology, or shares under UP_MIN_SHARE CPUs, too small for the
 * examples' jobs (hello.toml asks 2 cores per node: on a 2-core machine 2 workers of 1 CPU
 * each would refuse the README's first job).
 */
#define UP_MIN_SHARE 4u

static int worker_cpus(const struct up *u, unsigned i, char *out, size_t size)
{
    unsigned n = u->opts.workers, ncpus = 0, *cpus, first, last;
    cpu_set_t set;
    size_t off = 0;

    if (u->opts.share_cpus || u->topology[0] != '\0' || sched_getaffinity(0, sizeof(set), &set) < 0)
        return 1;
    cpus = calloc(CPU_SETSIZE, sizeof(*cpus));
    if (cpus == NULL)
        return 1;
    for (unsigned c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &set))
            cpus[ncpus++] = c;
    }
    if (ncpus < n * UP_MIN_SHARE) {
        free(cpus);
        return 1;
    }
    first = (i - 1) * ncpus / n;
    last = i * ncpus / n;
    out[0] = '\0';
    for (unsigned k = first; k < last && off < size; k++)
        off += (size_t)snprintf(out + off, size - off, "%s%u", k > first ? "," : "", cpus[k]);
    free(cpus);
    return off < size ? 0 : 1;
}

static int start_worker(struct up *u, unsigned i)
{
    struct cli_daemon *d = &u->local.daemons[i];
    char sched[48], gpus[16], sock_name[32], cli_socket[PATH_MAX], cpus[1024], *argv[22];
    char data_name[80], data_dir[PATH_MAX], sched_addr[32] = "127.0.0.1", addr[32] = "127.0.0.1";
    int n = 0;

    /* Each worker's own CLI socket, the GSCHED_SOCKET of its tasks: here they share one
     * directory, where on a real cluster each worker has its host. No longer than
     * gschedd.sock, which cli_local_init checked fits. */
    snprintf(sock_name, sizeof(sock_name), "%s.sock", d->name);
    if (cli_local_path(&u->local, sock_name, cli_socket, sizeof(cli_socket)) < 0)
        return -ENAMETOOLONG;
    /* Each node's own shard cache, as each host has its own disk (docs/data.md). */
    snprintf(data_name, sizeof(data_name), "data/%s", d->name);
    if (cli_local_path(&u->local, data_name, data_dir, sizeof(data_dir)) < 0)
        return -ENAMETOOLONG;
    if (u->in_netns) {
        cli_netns_addr(&u->ns, 0, sched_addr, sizeof(sched_addr));
        cli_netns_addr(&u->ns, i, addr, sizeof(addr));
    }
    snprintf(sched, sizeof(sched), "%s:%u", sched_addr, u->opts.port);
    snprintf(gpus, sizeof(gpus), "%u", u->opts.gpus);
    argv[n++] = u->workerd;
    argv[n++] = "--config"; /* so a /etc/gsched/gsched.toml on this machine stays out */
    argv[n++] = u->config;
    argv[n++] = "--scheduler";
    argv[n++] = sched;
    argv[n++] = "--name";
    argv[n++] = d->name;
    argv[n++] = "--cli-socket";
    argv[n++] = cli_socket;
    argv[n++] = "--address"; /* MASTER_ADDR: without --netns the host name may not resolve */
    argv[n++] = addr;
    argv[n++] = "--data-dir";
    argv[n++] = data_dir;
    argv[n++] = u->topology[0] != '\0' ? "--topology" : "--gpus";
    argv[n++] = u->topology[0] != '\0' ? u->topology : gpus;
    if (u->opts.features != NULL) {
        argv[n++] = "--features";
        argv[n++] = (char *)u->opts.features;
    }
    if (worker_cpus(u, i, cpus, sizeof(cpus)) == 0) {
        argv[n++] = "--cpus";
        argv[n++] = cpus;
    }
    argv[n] = NULL;
    return spawn(u, i, argv);
}

/* Reports a daemon that has already exited, with its log; returns -ECHILD when one has. */
static int check_exits(struct up *u)
{
    for (unsigned i = 0; i <= u->local.nworkers; i++) {
        struct cli_daemon *d = &u->local.daemons[i];
        int status = 0;

        if (!d->child || !cli_local_ended(d, &status))
            continue;
        if (WIFSIGNALED(status))
            fprintf(stderr, "gsched up: %s was killed by signal %d\n", d->name, WTERMSIG(status));
        else
            fprintf(stderr, "gsched up: %s exited with status %d\n", d->name, WEXITSTATUS(status));
        cli_local_print_tail(&u->local, d, TAIL_LINES);
        return -ECHILD;
    }
    return 0;
}

/* The first of node1..nodeN whose worker is not registered in r (0: all are: UP, or drained
 * by an operator); node1's GPUs into u. */
static unsigned first_not_up(struct up *u, const Gs__NodesReply *r)
{
    for (unsigned i = 1; i <= u->local.nworkers; i++) {
        const Gs__NodeInfo *n = NULL;

        for (size_t k = 0; k < r->n_nodes && n == NULL; k++) {
            if (strcmp(r->nodes[k]->name, u->local.daemons[i].name) == 0)
                n = r->nodes[k];
        }
        if (n == NULL || n->state == GS__NODE_STATE__NODE_STATE_DOWN ||
            n->state == GS__NODE_STATE__NODE_STATE_UNSPECIFIED)
            return i;
        if (i == 1)
            u->gpus_per_node = n->gpus_total;
    }
    return 0;
}

/* Asks gschedd for its nodes: 0 when it answers and (with workers) all are UP; else the
 * first worker not UP, or -errno when gschedd does not answer yet. */
static int probe(struct up *u, bool workers)
{
    Gs__NodesRequest req = GS__NODES_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    int rc;

    env.body_case = GS__ENVELOPE__BODY_NODES_REQUEST;
    env.nodes_request = &req;
    rc = cli_request_quiet(u->socket, &env, UP_PROBE_TIMEOUT_MS, &reply);
    if (rc < 0)
        return rc;
    if (reply->body_case != GS__ENVELOPE__BODY_NODES_REPLY)
        rc = -EPROTO;
    else if (workers)
        rc = (int)first_not_up(u, reply->nodes_reply);
    gs_proto_envelope_free(reply);
    return rc;
}

static void sleep_poll(void)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = UP_POLL_MS * 1000000L};

    nanosleep(&ts, NULL);
}

/* Polls until probe() is satisfied, a daemon exits, or the deadline passes. */
static int wait_ready(struct up *u, bool workers, uint64_t deadline_ms)
{
    int rc;

    for (;;) {
        rc = check_exits(u);
        if (rc < 0)
            return rc;
        rc = probe(u, workers);
        if (rc == 0)
            return 0;
        if (gs_clock_mono_ms() >= deadline_ms)
            break;
        sleep_poll();
    }
    if (rc < 0) {
        fprintf(stderr, "gsched up: gschedd does not answer on %s after %d s: %s\n", u->socket,
                UP_START_TIMEOUT_MS / 1000, gs_strerror(rc));
        cli_local_print_tail(&u->local, &u->local.daemons[0], TAIL_LINES);
    } else {
        fprintf(stderr, "gsched up: %s is not up after %d s\n", u->local.daemons[rc].name,
                UP_START_TIMEOUT_MS / 1000);
        cli_local_print_tail(&u->local, &u->local.daemons[rc], TAIL_LINES);
    }
    return -ETIMEDOUT;
}

/*
 * gschedd first, and the workers once it answers: a worker that finds nobody listening
 * backs off for up to seconds, which would make every `up` slow.
 */
static int start_cluster(struct up *u)
{
    uint64_t deadline = gs_clock_mono_ms() + UP_START_TIMEOUT_MS;
    unsigned n = u->local.nworkers;
    int rc;

    u->local.nworkers = 0;
    rc = start_gschedd(u);
    if (rc == 0)
        rc = wait_ready(u, false, deadline);
    for (unsigned i = 1; i <= n && rc == 0; i++) {
        rc = start_worker(u, i);
        u->local.nworkers = i; /* started or not, its files are cleaned up on failure */
    }
    if (rc == 0)
        rc = wait_ready(u, true, deadline);
    return rc;
}

static void stop_cluster(struct cli_local *l)
{
    cli_local_stop(l, &l->daemons[1], l->nworkers, DOWN_TIMEOUT_MS);
    cli_local_stop(l, &l->daemons[0], 1, DOWN_TIMEOUT_MS);
    cli_local_forget(l);
}

/*
 * The namespaces of l's cluster, when it has them (DIR/netns) and no daemon of it runs any
 * more: removed, with whatever still runs inside. Returns 0 (also when there are none) or
 * < 0 (printed).
 */
static int remove_netns(struct cli_local *l)
{
    struct cli_netns ns;
    int rc = cli_netns_load(&ns, l);

    if (rc == -ENOENT)
        return 0;
    if (rc == 0)
        rc = cli_netns_destroy(&ns, l);
    return rc;
}

/* Whether the cluster in l lost its gschedd alone: every worker still runs. */
static bool only_gschedd_died(const struct cli_local *l)
{
    if (l->daemons[0].running || l->nworkers == 0)
        return false;
    for (unsigned i = 1; i <= l->nworkers; i++)
        if (!l->daemons[i].running)
            return false;
    return true;
}

/* Refuses a directory whose cluster (or a leftover daemon of it) still runs; 1 when only
 * its gschedd died, which `up` then starts again (revive()). */
static int check_not_running(struct cli_local *l)
{
    if (cli_local_load(l) == 0) {
        cli_local_forget(l); /* stale pid files: their pids may come back as strangers */
        return 0;
    }
    if (only_gschedd_died(l))
        return 1;
    if (l->daemons[0].running) {
        fprintf(stderr,
                "gsched up: a cluster is already running in %s (gschedd pid %d); gsched down "
                "first\n",
                l->dir, (int)l->daemons[0].pid);
        return -EEXIST;
    }
    for (unsigned i = 1; i <= l->nworkers; i++) {
        if (l->daemons[i].running) {
            fprintf(stderr,
                    "gsched up: %s (pid %d) of an earlier cluster still runs in %s, but not "
                    "all of its workers do; gsched down first\n",
                    l->daemons[i].name, (int)l->daemons[i].pid, l->dir);
            break;
        }
    }
    return -EEXIST;
}

/*
 * A cluster whose gschedd alone died (its workers run on, waiting to reconnect): gschedd is
 * started again from the configuration it had, so on the port the workers know; its state
 * directory brings back every job. Returns 0 or < 0 (said why).
 */
static int revive(struct up *u)
{
    uint64_t deadline = gs_clock_mono_ms() + UP_START_TIMEOUT_MS;
    int rc = cli_local_path(&u->local, "gsched.toml", u->config, sizeof(u->config));

    if (rc == 0)
        rc = cli_local_path(&u->local, CLI_LOCAL_SOCKET, u->socket, sizeof(u->socket));
    if (rc == 0)
        rc = cli_find_program("up", "gschedd", u->gschedd, sizeof(u->gschedd));
    if (rc < 0)
        return rc;
    rc = cli_netns_load(&u->ns, &u->local);
    u->in_netns = rc == 0;
    if (rc < 0 && rc != -ENOENT)
        return rc;
    cli_local_forget(&u->local); /* the dead gschedd's pid file and socket */
    printf("gsched up: the gschedd of %s is not running, its %u worker%s are: starting it "
           "again from %s\n",
           u->local.dir, u->local.nworkers, u->local.nworkers == 1 ? "" : "s", u->config);
    rc = start_gschedd(u);
    if (rc == 0)
        rc = wait_ready(u, true, deadline);
    return rc;
}

/* STATE/gsched.key, the key this cluster's daemons authenticate each other with: created
 * on the first start (mode 0600, the user's alone) and kept, so that workers started with
 * it still get in after gschedd is revived. */
static int make_key(struct up *u)
{
    int rc = cli_local_path(&u->local, "gsched.key", u->key, sizeof(u->key));

    if (rc == 0) {
        rc = gs_proto_auth_key_create(u->key);
        if (rc == -EEXIST)
            rc = 0;
        if (rc < 0)
            fprintf(stderr, "gsched up: cannot create the cluster key %s: %s\n", u->key,
                    gs_strerror(rc));
    }
    return rc;
}

static int prepare(struct up *u)
{
    int rc = cli_local_init(&u->local, "up", u->opts.state, true);

    if (rc == 0)
        rc = check_not_running(&u->local);
    if (rc == 1)
        return 1; /* revive() instead */
    if (rc == 0 && u->opts.topology != NULL &&
        (rc = cli_local_resolve(u->opts.topology, u->topology)) < 0) {
        fprintf(stderr, "gsched up: %s: %s\n", u->opts.topology, gs_strerror(rc));
    }
    if (rc == 0)
        rc = cli_find_program("up", "gschedd", u->gschedd, sizeof(u->gschedd));
    if (rc == 0)
        rc = cli_find_program("up", "gsched-workerd", u->workerd, sizeof(u->workerd));
    if (rc == 0)
        rc = remove_netns(&u->local); /* an earlier cluster's, left by a failed `down` */
    if (rc == 0 && u->opts.netns) {
        rc = cli_netns_plan(&u->ns, &u->local, u->opts.workers, u->opts.subnet);
        u->in_netns = rc == 0;
        if (u->opts.port == 0)
            u->opts.port = CLI_NETNS_SCHED_PORT; /* gschedd's namespace is its own */
    }
    if (rc == 0 && u->opts.port == 0 && (rc = pick_port(&u->opts.port)) < 0)
        fprintf(stderr, "gsched up: cannot find a free port: %s\n", gs_strerror(rc));
    if (rc == 0)
        rc = cli_local_path(&u->local, "gsched.toml", u->config, sizeof(u->config));
    if (rc == 0)
        rc = cli_local_path(&u->local, CLI_LOCAL_SOCKET, u->socket, sizeof(u->socket));
    if (rc == 0)
        rc = make_key(u);
    if (rc == 0)
        rc = write_config(u);
    if (rc == 0 && u->in_netns)
        rc = cli_netns_create(&u->ns, &u->local);
    u->local.nworkers = u->opts.workers;
    return rc;
}

/* Whether dir is ./.gsched, which gsched finds by itself (cli/client.h). */
static bool is_default_dir(const char *dir)
{
    char here[PATH_MAX];

    return cli_local_resolve(CLI_LOCAL_STATE_DIR, here) == 0 && strcmp(here, dir) == 0;
}

/* The status page's address, from gschedd's STATE_DIR/http.addr (none when it has no HTTP). */
static void print_status_page(const struct cli_local *l)
{
    char path[512], addr[128] = "";
    FILE *f;

    if (cli_local_path(l, "http.addr", path, sizeof(path)) < 0 || (f = fopen(path, "r")) == NULL)
        return;
    if (fgets(addr, sizeof(addr), f) != NULL) {
        addr[strcspn(addr, "\n")] = '\0';
        printf("  gsched top, or the status page at http://%s/\n", addr);
    }
    fclose(f);
}

static void print_summary(const struct up *u)
{
    const struct cli_local *l = &u->local;
    unsigned n = l->nworkers;
    char names[128] = "";

    for (unsigned i = 1; i <= n && n <= 4; i++)
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i > 1 ? ", " : "",
                 l->daemons[i].name);
    if (n > 4)
        snprintf(names, sizeof(names), "node1..node%u", n);
    printf("gsched: local cluster up in %s: gschedd (port %u) and %u worker%s (%s), %u GPU%s%s\n",
           l->dir, u->opts.port, n, n == 1 ? "" : "s", names, u->gpus_per_node,
           u->gpus_per_node == 1 ? "" : "s", n == 1 ? "" : " each");
    if (u->in_netns) {
        char first[32], last[32];

        cli_netns_addr(&u->ns, 0, first, sizeof(first));
        cli_netns_addr(&u->ns, n, last, sizeof(last));
        printf("  each in its own network namespace: gschedd %s, node1..node%u from %u.%u.%u.%u "
               "to %s; names in %s\n",
               first, n, u->ns.net[0], u->ns.net[1], u->ns.net[2], 11u, last, u->ns.hosts);
    }
    if (is_default_dir(l->dir))
        printf("  gsched nodes / gsched submit job.toml / gsched queue / gsched down\n");
    else
        printf("  export GSCHED_SOCKET=%s\n"
               "  gsched nodes / gsched submit job.toml / gsched queue / gsched down --state %s\n",
               u->socket, l->dir);
    print_status_page(l);
}

int cli_cmd_up(int argc, char **argv)
{
    struct up *u;
    int rc;

    if (is_help(argc, argv)) {
        fputs(up_usage, stdout);
        return 0;
    }
    u = calloc(1, sizeof(*u)); /* a few PATH_MAX buffers and 65 daemons: not for the stack */
    if (u == NULL)
        return 1;
    rc = parse_up(&u->opts, argc, argv);
    if (rc != 0)
        goto out;
    rc = prepare(u);
    if (rc == 1) {
        rc = revive(u) < 0 ? 1 : 0;
        if (rc == 0)
            print_status_page(&u->local);
        goto out;
    }
    rc = rc < 0 ? 1 : 0;
    if (rc != 0)
        goto out;
    if (start_cluster(u) < 0) {
        stop_cluster(&u->local);
        if (u->in_netns)
            cli_netns_destroy(&u->ns, &u->local);
        rc = 1;
        goto out;
    }
    print_summary(u);
out:
    free(u);
    return rc;
}

int cli_cmd_down(int argc, char **argv)
{
    struct cli_local *l = NULL;
    const char *state = CLI_LOCAL_STATE_DIR;
    int rc = 1;

    if (is_help(argc, argv)) {
        fputs(down_usage, stdout);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--state") != 0)
            return cli_usage_error("down", "unknown argument '%s'", argv[i]);
        if (i + 1 >= argc)
            return cli_usage_error("down", "--state wants a value");
        state = argv[++i];
    }
    l = calloc(1, sizeof(*l));
    if (l == NULL)
        return 1;
    rc = cli_local_init(l, "down", state, false);
    if (rc == -ENOENT)
        fprintf(stderr, "gsched down: no cluster in %s (no such directory)\n", state);
    if (rc < 0) {
        rc = 1; /* cli_local_init said why otherwise */
        goto out;
    }
    rc = 1;
    if (cli_local_load(l) == 0) {
        struct cli_netns ns;

        cli_local_forget(l);
        /* Its daemons died (kill -9, a reboot): its namespaces may still be there. */
        if (cli_netns_load(&ns, l) == 0) {
            if (cli_netns_destroy(&ns, l) == 0) {
                printf("gsched: no cluster was running in %s; its namespaces are removed\n",
                       l->dir);
                rc = 0;
            }
            goto out;
        }
        fprintf(stderr, "gsched down: no cluster is running in %s\n", l->dir);
        goto out;
    }
    stop_cluster(l);
    if (cli_local_load(l) > 0)
        goto out; /* cli_local_stop said which */
    if (remove_netns(l) < 0)
        goto out;
    printf("gsched: local cluster in %s stopped\n", l->dir);
    rc = 0;
out:
    free(l);
    return rc;
}
