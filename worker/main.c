/*
 * main.c: gsched-workerd, the per-node agent (worker/worker.h does the work). Reads
 * /etc/gsched/gsched.toml (or --config) and command-line overrides, loads the topology
 * (this machine, --topology FILE.xml, or --gpus N synthetic GPUs), connects to the
 * scheduler and runs until SIGTERM or SIGINT, which end its tasks and exit cleanly.
 * Exit codes: 0 stopped on a signal, 1 could not start, 2 bad usage.
 */
#define _DEFAULT_SOURCE /* realpath */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "common/stop_signals.h"
#include "common/topo.h"
#include "gsched_config.h"
#include "worker/keeper.h"
#include "worker/worker.h"

static const char usage[] =
    "usage: gsched-workerd [options]\n"
    "  --config FILE        configuration (default " GS_CONFIG_DEFAULT_PATH " when present)\n"
    "  --scheduler HOST:PORT  where gschedd listens for workers\n"
    "  --auth-key FILE      the cluster key (scheduler.auth_key; \"\": none)\n"
    "  --allow-root-jobs    run jobs of uid 0 (worker.allow_root_jobs; refused otherwise)\n"
    "  --name NAME          this node's name (default: the host name)\n"
    "  --address ADDR       address other nodes reach this one at (MASTER_ADDR)\n"
    "  --topology FILE.xml  hwloc XML topology instead of discovering this machine\n"
    "  --gpus N             pretend to have N GPUs (testing)\n"
    "  --cpus LIST          offer only these CPUs (OS numbers, \"0-3,8\"; worker.cpus)\n"
    "  --features A,B       node features job constraints match\n"
    "  --log-dir DIR        where the worker keeps its state (worker.log_dir)\n"
    "  --data-dir DIR       the node's shard cache (worker.data_dir; docs/data.md)\n"
    "  --tmp-fs DIR         the file system whose size is the node's TmpDisk (worker.tmp_fs;\n"
    "                       default /tmp)\n"
    "  --cli-socket PATH    the gsched CLI's socket inside this node's jobs (worker.cli_socket;\n"
    "                       default LOG_DIR/NAME.sock)\n"
    "  --log-level LEVEL    debug, info, warn or error\n"
    "  --version, --help\n";

/* The one context of this program: settings and the loop's handles. */
struct workerd {
    struct gs_config cfg;
    const char *config_path;
    uv_loop_t loop;
    struct gs_stop_signals stop;
    struct wrk_ctx *worker;
    struct gs_topo *topo;
};

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "gsched-workerd: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see gsched-workerd --help)\n");
    return 2;
}

static int set_str(char **field, const char *value)
{
    char *copy = strdup(value);

    if (copy == NULL)
        return -ENOMEM;
    free(*field);
    *field = copy;
    return 0;
}

static int split_features(struct gs_config *cfg, const char *list)
{
    char *copy = strdup(list), *save = NULL;
    size_t n = 0;

    if (copy == NULL)
        return -ENOMEM;
    for (size_t i = 0; cfg->features != NULL && cfg->features[i] != NULL; i++)
        free(cfg->features[i]);
    free(cfg->features);
    cfg->features = calloc(GS_CONFIG_MAX_FEATURES + 1, sizeof(char *));
    for (char *f = strtok_r(copy, ",", &save); cfg->features != NULL && f != NULL;
         f = strtok_r(NULL, ",", &save)) {
        if (n == GS_CONFIG_MAX_FEATURES || (cfg->features[n] = strdup(f)) == NULL)
            break;
        n++;
    }
    cfg->nfeatures = n;
    free(copy);
    return cfg->features != NULL ? 0 : -ENOMEM;
}

static int parse_scheduler(struct gs_config *cfg, const char *arg)
{
    const char *colon = strrchr(arg, ':');
    char *end;
    long port;

    if (colon == NULL || colon == arg)
        return -EINVAL;
    port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port < 1 || port > 65535)
        return -EINVAL;
    free(cfg->host);
    cfg->host = strndup(arg, (size_t)(colon - arg));
    cfg->port = (uint32_t)port;
    return cfg->host != NULL ? 0 : -ENOMEM;
}

enum {
    OPT_CONFIG = 1,
    OPT_SCHED,
    OPT_NAME,
    OPT_ADDRESS,
    OPT_TOPO,
    OPT_GPUS,
    OPT_CPUS,
    OPT_FEAT,
    OPT_LOGDIR,
    OPT_LOG,
    OPT_CLISOCK,
    OPT_AUTH_KEY,
    OPT_ALLOW_ROOT,
    OPT_DATA_DIR,
    OPT_TMP_FS
};

static const struct option long_opts[] = {
    {"config", required_argument, NULL, OPT_CONFIG},
    {"scheduler", required_argument, NULL, OPT_SCHED},
    {"name", required_argument, NULL, OPT_NAME},
    {"address", required_argument, NULL, OPT_ADDRESS},
    {"topology", required_argument, NULL, OPT_TOPO},
    {"gpus", required_argument, NULL, OPT_GPUS},
    {"cpus", required_argument, NULL, OPT_CPUS},
    {"features", required_argument, NULL, OPT_FEAT},
    {"log-dir", required_argument, NULL, OPT_LOGDIR},
    {"log-level", required_argument, NULL, OPT_LOG},
    {"cli-socket", required_argument, NULL, OPT_CLISOCK},
    {"auth-key", required_argument, NULL, OPT_AUTH_KEY},
    {"allow-root-jobs", no_argument, NULL, OPT_ALLOW_ROOT},
    {"data-dir", required_argument, NULL, OPT_DATA_DIR},
    {"tmp-fs", required_argument, NULL, OPT_TMP_FS},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

static int apply_option(struct workerd *d, int opt, const char *arg)
{
    struct gs_config *cfg = &d->cfg;
    char *end;
    long n;

    switch (opt) {
    case OPT_SCHED:
        return parse_scheduler(cfg, arg) < 0 ? usage_error("--scheduler wants HOST:PORT, not "
                                                           "'%s'",
                                                           arg)
                                             : 0;
    case OPT_NAME:
        return set_str(&cfg->worker_name, arg) < 0 ? 1 : 0;
    case OPT_ADDRESS:
        return set_str(&cfg->worker_address, arg) < 0 ? 1 : 0;
    case OPT_TOPO:
        return set_str(&cfg->topology_xml, arg) < 0 ? 1 : 0;
    case OPT_GPUS:
        n = strtol(arg, &end, 10);
        if (*end != '\0' || n < 0 || n > 64)
            return usage_error("--gpus wants 0 to 64, not '%s'", arg);
        cfg->fake_gpus = (uint32_t)n;
        return 0;
    case OPT_CPUS:
        return set_str(&cfg->worker_cpus, arg) < 0 ? 1 : 0;
    case OPT_FEAT:
        return split_features(cfg, arg) < 0 ? 1 : 0;
    case OPT_LOGDIR:
        return set_str(&cfg->log_dir, arg) < 0 ? 1 : 0;
    case OPT_ALLOW_ROOT:
        cfg->allow_root_jobs = true;
        return 0;
    case OPT_DATA_DIR:
        if (arg[0] != '/')
            return usage_error("--data-dir wants an absolute directory, not '%s'", arg);
        return set_str(&cfg->data_dir, arg) < 0 ? 1 : 0;
    case OPT_TMP_FS:
        if (arg[0] != '/')
            return usage_error("--tmp-fs wants an absolute directory, not '%s'", arg);
        return set_str(&cfg->tmp_fs, arg) < 0 ? 1 : 0;
    case OPT_AUTH_KEY:
        if (arg[0] == '\0') {
            free(cfg->auth_key);
            cfg->auth_key = NULL;
            return 0;
        }
        return set_str(&cfg->auth_key, arg) < 0 ? 1 : 0;
    case OPT_CLISOCK:
        if (arg[0] == '\0' || strlen(arg) > 107)
            return usage_error("--cli-socket wants a Unix socket path of 1 to 107 bytes, not "
                               "'%s'",
                               arg);
        return set_str(&cfg->worker_cli_socket, arg) < 0 ? 1 : 0;
    case OPT_LOG:
        return gs_log_level_parse(arg, &cfg->log_level) < 0
                   ? usage_error("--log-level wants debug, info, warn or error, not '%s'", arg)
                   : 0;
    default:
        return 0;
    }
}

/* First pass: --help, --version and --config, which decide what the second pass builds on. */
static int first_pass(struct workerd *d, int argc, char **argv)
{
    int opt;

    opterr = 0;
    while ((opt = getopt_long(argc, argv, "hV", long_opts, NULL)) != -1) {
        if (opt == 'h') {
            fputs(usage, stdout);
            return -1;
        }
        if (opt == 'V') {
            printf("gsched-workerd %s\n", GSCHED_VERSION);
            return -1;
        }
        if (opt == '?')
            return usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
        if (opt == OPT_CONFIG)
            d->config_path = optarg;
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    return 0;
}

static int configure(struct workerd *d, int argc, char **argv)
{
    struct gs_buf errors = GS_BUF_INIT;
    int rc = first_pass(d, argc, argv), opt;

    if (rc != 0)
        return rc;
    if (gs_config_load_default(&d->cfg, d->config_path, &errors) < 0) {
        fputs(errors.data != NULL ? errors.data : "gsched-workerd: bad configuration\n", stderr);
        gs_buf_release(&errors);
        return 1;
    }
    gs_buf_release(&errors);
    optind = 0; /* GNU getopt: start over */
    while (rc == 0 && (opt = getopt_long(argc, argv, "hV", long_opts, NULL)) != -1)
        rc = apply_option(d, opt, optarg);
    return rc;
}

static int resolve(const struct gs_config *cfg, struct sockaddr_storage *out)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    char port[8];
    int rc;

    snprintf(port, sizeof(port), "%u", cfg->port);
    rc = getaddrinfo(cfg->host, port, &hints, &res);
    if (rc != 0 || res == NULL) {
        fprintf(stderr, "gsched-workerd: scheduler %s:%s: %s\n", cfg->host, port, gai_strerror(rc));
        return -EHOSTUNREACH;
    }
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

static void on_stopped(void *data)
{
    struct workerd *d = data;

    gs_stop_signals_close(&d->stop);
}

static void on_stop(struct gs_stop_signals *sig, int signum, void *data)
{
    struct workerd *d = data;

    (void)sig;
    (void)signum;
    wrk_stop(d->worker, on_stopped, d);
}

static int load_topology(struct workerd *d)
{
    struct gs_topo_opts opts = {.xml_path = d->cfg.topology_xml,
                                .fake_gpus = (int)d->cfg.fake_gpus,
                                .cpus = d->cfg.worker_cpus};
    struct gs_error err;
    int rc = gs_topo_load(&opts, &d->topo, &err);

    if (rc < 0)
        fprintf(stderr, "gsched-workerd: %s\n", err.msg);
    return rc;
}

/* mkdir -p, for the worker's state directory. */
static int make_dirs(const char *path)
{
    char buf[4096];

    if (strlen(path) >= sizeof(buf))
        return -ENAMETOOLONG;
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char was = *p;
        *p = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -errno;
        if (was == '\0')
            return 0;
        *p = was;
    }
}

/* The task ledger's path under log_dir, or "" (with a warning) when there is none. */
static void ledger_path(const struct workerd *d, const char *node, char *out, size_t size)
{
    int rc = d->cfg.log_dir != NULL ? make_dirs(d->cfg.log_dir) : -ENOENT;

    out[0] = '\0';
    if (rc < 0) {
        GS_LOG(GS_LOG_WARN,
               "dir=%s error=\"%s\" no task ledger: tasks a crashed worker leaves "
               "behind will not be ended",
               d->cfg.log_dir != NULL ? d->cfg.log_dir : "", gs_strerror(rc));
        return;
    }
    snprintf(out, size, "%s/%s.tasks", d->cfg.log_dir, node);
}

/*
 * The CLI socket: the configured one (which must work), else NAME.sock beside the task
 * ledger, as each node has its own ledger there (which may fail with a warning: a worker
 * without a writable log_dir still runs jobs). "" when there is none.
 */
static void cli_socket_path(const struct workerd *d, const char *node, const char *ledger,
                            struct wrk_opts *opts, char *out, size_t size)
{
    out[0] = '\0';
    if (d->cfg.worker_cli_socket != NULL) {
        snprintf(out, size, "%s", d->cfg.worker_cli_socket);
        opts->cli_socket = out;
        return;
    }
    if (ledger[0] == '\0')
        return;
    snprintf(out, size, "%s/%s.sock", d->cfg.log_dir, node);
    opts->cli_socket = out;
    opts->cli_socket_optional = true;
}

/*
 * The gsched of this gsched-workerd's build or prefix, which a launcher job's leader runs
 * and Slurm jobs' srun links point to: beside it (a build tree's bin/) or in ../bin (an
 * install: the worker in sbin/, the CLI in bin/). NULL when there is none, and the task's
 * PATH decides.
 */
static const char *cli_beside(char *out, size_t size)
{
    static const char *const tails[] = {"/gsched", "/../bin/gsched"};
    size_t len = size;
    char *slash;

    if (uv_exepath(out, &len) < 0 || (slash = strrchr(out, '/')) == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
        char real[PATH_MAX];

        if ((size_t)(slash - out) + strlen(tails[i]) + 1 > size)
            return NULL;
        memcpy(slash, tails[i], strlen(tails[i]) + 1);
        if (access(out, X_OK) == 0 && realpath(out, real) != NULL && strlen(real) < size) {
            memcpy(out, real, strlen(real) + 1); /* no "..": links point straight at it */
            return out;
        }
    }
    return NULL;
}

/*
 * LOG_DIR/slurm-bin: links to gsched (the one beside this worker) by Slurm's command names,
 * which the worker puts at the end of Slurm jobs' PATH, so that a batch script's `srun` and
 * `scontrol show hostnames` work as on a Slurm cluster without deploy/install-slurm-links.sh
 * (whose links would come first on PATH and shadow a real Slurm; these come last). Made again
 * at each start; NULL, with a warning, when it cannot be.
 */
static const char *slurm_bin(const struct workerd *d, const char *cli, char *out, size_t size)
{
    static const char *const names[] = {"sbatch",   "srun",    "squeue", "scancel", "sinfo",
                                        "scontrol", "sacct",   "sstat",  "seff",    "sprio",
                                        "sshare",   "sreport", "sdiag",  "sbcast"};
    char link[4300], tmp[4400], target[4200];
    int rc = 0;

    if (cli == NULL || d->cfg.log_dir == NULL ||
        snprintf(out, size, "%s/slurm-bin", d->cfg.log_dir) >= (int)size)
        return NULL;
    if (mkdir(out, 0755) < 0 && errno != EEXIST)
        rc = -errno;
    for (size_t i = 0; rc == 0 && i < sizeof(names) / sizeof(names[0]); i++) {
        ssize_t n;

        snprintf(link, sizeof(link), "%s/%s", out, names[i]);
        n = readlink(link, target, sizeof(target) - 1);
        if (n >= 0 && (size_t)n == strlen(cli) && memcmp(target, cli, (size_t)n) == 0)
            continue; /* there from an earlier start */
        /* Made aside and renamed over: the workers of a local cluster share LOG_DIR and
         * start at once, and a plain symlink() lost that race with EEXIST, leaving one
         * worker's Slurm jobs without srun. */
        snprintf(tmp, sizeof(tmp), "%s.%ld", link, (long)getpid());
        unlink(tmp);
        if (symlink(cli, tmp) < 0 || rename(tmp, link) < 0) {
            rc = -errno;
            unlink(tmp);
        }
    }
    if (rc < 0) {
        GS_LOG(GS_LOG_WARN, "dir=%s error=\"%s\" no Slurm command names for Slurm jobs", out,
               gs_strerror(rc));
        return NULL;
    }
    return out;
}

/* The cluster key into key (len 0 when scheduler.auth_key is ""); 0, or -1 after saying why. */
static int load_key(const struct gs_config *cfg, struct gs_proto_auth_key *key)
{
    struct gs_buf why = GS_BUF_INIT;
    int rc = 0;

    memset(key, 0, sizeof(*key));
    if (cfg->auth_key == NULL) {
        GS_LOG(GS_LOG_WARN, "auth=none the link to gschedd is not authenticated "
                            "(scheduler.auth_key is \"\")");
        return 0;
    }
    if (gs_proto_auth_key_load(cfg->auth_key, key, &why) < 0) {
        fprintf(stderr, "gsched-workerd: scheduler.auth_key: %s\n",
                why.data != NULL ? why.data : "");
        rc = -1;
    }
    gs_buf_release(&why);
    return rc;
}

static int run(struct workerd *d)
{
    struct sockaddr_storage sched;
    char host[256] = "", ledger[4200], cli_socket[4200], cli[4200], slurm[4200];
    struct wrk_opts opts = {.scheduler = (const struct sockaddr *)&sched,
                            .features = d->cfg.features,
                            .grace_ms = d->cfg.kill_grace_ms,
                            .telemetry_ms = d->cfg.telemetry_interval_ms,
                            .synthetic_gpus = d->cfg.fake_gpus > 0,
                            .allow_root_jobs = d->cfg.allow_root_jobs,
                            .cgroups = d->cfg.cgroups,
                            .cgroup_parent = d->cfg.cgroup_parent,
                            .job_pids_max = d->cfg.job_pids_max,
                            .data_dir = d->cfg.data_dir,
                            .tmp_fs = d->cfg.tmp_fs,
                            .data_cap_bytes = d->cfg.data_cap_mib << 20,
                            .data_rate_bytes = d->cfg.data_rate_mib << 20,
                            .data_port = d->cfg.data_port,
                            .data_copies = d->cfg.data_copies,
                            .data_stall_s = d->cfg.data_stall_s};
    struct gs_proto_auth_key key = {0};
    struct gs_error err;
    int rc, keeper = -1;

    gethostname(host, sizeof(host) - 1);
    opts.node_name = d->cfg.worker_name != NULL ? d->cfg.worker_name : host;
    opts.address = d->cfg.worker_address != NULL ? d->cfg.worker_address : host;
    ledger_path(d, opts.node_name, ledger, sizeof(ledger));
    opts.ledger_path = ledger[0] != '\0' ? ledger : NULL;
    /* First, while the process holds no key, socket or thread for the keeper to inherit. */
    if (opts.ledger_path != NULL && (keeper = wrk_keeper_start(opts.ledger_path, NULL)) < 0)
        GS_LOG(GS_LOG_WARN,
               "error=\"%s\" no keeper: the tasks of a worker that dies run on until it is "
               "started again",
               gs_strerror(keeper));
    opts.keeper = keeper >= 0;
    opts.keeper_fd = keeper;
    rc = load_key(&d->cfg, &key);
    if (rc == 0)
        rc = load_topology(d);
    if (rc == 0)
        rc = resolve(&d->cfg, &sched);
    if (rc < 0)
        goto out;
    opts.auth_key = &key;
    opts.topo = d->topo;
    cli_socket_path(d, opts.node_name, ledger, &opts, cli_socket, sizeof(cli_socket));
    opts.cli_path = cli_beside(cli, sizeof(cli));
    opts.slurm_bin = slurm_bin(d, opts.cli_path, slurm, sizeof(slurm));
    uv_loop_init(&d->loop);
    d->worker = wrk_new(&d->loop, &opts, &err);
    gs_proto_auth_key_clear(&key); /* the worker keeps its own copy */
    if (d->worker == NULL) {
        fprintf(stderr, "gsched-workerd: %s\n", err.msg);
        uv_run(&d->loop, UV_RUN_DEFAULT); /* what it had opened closes */
        uv_loop_close(&d->loop);
        wrk_keeper_goodbye(keeper);
        return 1;
    }
    gs_stop_signals_init(&d->stop, &d->loop, on_stop, d);
    GS_LOG(GS_LOG_INFO, "node=%s gpus=%d cores=%d scheduler=%s:%u starting", opts.node_name,
           gs_topo_ngpus(d->topo), gs_topo_ncores(d->topo), d->cfg.host, d->cfg.port);
    wrk_start(d->worker);
    uv_run(&d->loop, UV_RUN_DEFAULT);
    uv_loop_close(&d->loop);
    wrk_keeper_goodbye(keeper); /* a clean stop: it ended its tasks itself */
    return 0;
out:
    gs_proto_auth_key_clear(&key);
    wrk_keeper_goodbye(keeper);
    return 1;
}

int main(int argc, char **argv)
{
    struct workerd d = {0};
    int rc;

    signal(SIGPIPE, SIG_IGN); /* libuv writes with write(2); a vanished peer is an error */
    if (gs_config_init(&d.cfg) < 0)
        return 1;
    rc = configure(&d, argc, argv);
    if (rc == 0) {
        gs_log_setup("gsched-workerd", d.cfg.log_level, 2);
        rc = run(&d);
    }
    gs_topo_free(d.topo);
    gs_config_release(&d.cfg);
    return rc < 0 ? 0 : rc;
}
