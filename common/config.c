/*
 * config.c: reading gsched.toml (see config.h) with common/schema.h, like job files. The
 * scheduling policy, [priority] and [[account]], is read in config_policy.c
 * (config_internal.h); its sections are registered here with the others.
 */
#include "common/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config_internal.h"
#include "common/error.h"
#include "common/hostlist.h"
#include "common/jobspec.h"
#include "common/schema.h"
#include "common/toml.h"
#include "common/units.h"

#define CFG(c) ((struct gs_config *)(c)->target)

static void free_partitions(struct gs_config *cfg)
{
    for (size_t i = 0; i < cfg->npartitions; i++) {
        free(cfg->partitions[i].name);
        gs_hostlist_free(cfg->partitions[i].nodes);
    }
    free(cfg->partitions);
    cfg->partitions = NULL;
    cfg->npartitions = 0;
}

int gs_config_init(struct gs_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->host = strdup("127.0.0.1");
    cfg->port = 6817;
    cfg->socket_path = strdup("/run/gsched/gschedd.sock");
    cfg->state_dir = strdup("/var/lib/gsched");
    cfg->heartbeat_interval_ms = 2000;
    cfg->heartbeat_misses = 3;
    cfg->kill_grace_ms = 30000;
    cfg->log_level = GS_LOG_INFO;
    cfg->log_dir = strdup("/var/lib/gsched/worker");
    cfg->cluster_name = strdup(GS_CONFIG_DEFAULT_CLUSTER);
    cfg->http_listen = strdup(GS_CONFIG_DEFAULT_HTTP);
    cfg->auth_key = strdup(GS_CONFIG_DEFAULT_AUTH_KEY);
    cfg->mail_prog = strdup(GS_CONFIG_DEFAULT_MAIL_PROG);
    cfg->cgroups = strdup("auto");
    cfg->cgroup_parent = strdup("gsched");
    cfg->job_pids_max = 32768;
    cfg->data_copies = 2;
    cfg->data_stall_s = 300;
    cfg->idle_threshold_pct = 5;
    cfg->idle_window_ms = 60000;
    cfg->max_connections = 1024;
    cfg->max_connections_per_user = 64;
    cfg->request_timeout_ms = 10000;
    cfg->max_submit_jobs = 10000;
    cfg->backfill_depth = 1;
    cfg->max_switch_wait_s = 300;   /* Slurm's default max_switch_wait */
    cfg->fence_timeout_ms = 300000; /* as Slurm's SlurmdTimeout: a node silent 5 min is lost */
    cfg->min_job_age_ms = 300000;   /* as Slurm's MinJobAge (300 s) */
    cfg->telemetry_interval_ms = 1000;
    gs_config_priority_defaults(&cfg->priority);
    cfg->partitions = calloc(1, sizeof(*cfg->partitions));
    if (cfg->partitions != NULL) {
        cfg->npartitions = 1;
        cfg->partitions[0] = (struct gs_config_partition){
            .name = strdup(GS_CONFIG_DEFAULT_PARTITION),
            .is_default = true,
            .max_time_s = GS_DURATION_INFINITE,
            .idle_grace_s = GS_CONFIG_DEFAULT_IDLE_GRACE_S,
            .priority_job_factor = 1,
        };
    }
    if (cfg->host == NULL || cfg->socket_path == NULL || cfg->state_dir == NULL ||
        cfg->log_dir == NULL || cfg->cluster_name == NULL || cfg->http_listen == NULL ||
        cfg->auth_key == NULL || cfg->mail_prog == NULL || cfg->cgroups == NULL ||
        cfg->cgroup_parent == NULL || cfg->partitions == NULL || cfg->partitions[0].name == NULL) {
        gs_config_release(cfg);
        return -ENOMEM;
    }
    return 0;
}

void gs_config_release(struct gs_config *cfg)
{
    free(cfg->host);
    free(cfg->socket_path);
    free(cfg->state_dir);
    free(cfg->http_listen);
    free(cfg->auth_key);
    free(cfg->mail_prog);
    free(cfg->munge_socket);
    free(cfg->cgroups);
    free(cfg->cgroup_parent);
    free(cfg->worker_name);
    free(cfg->worker_address);
    gs_schema_strv_free(cfg->features);
    free(cfg->topology_xml);
    free(cfg->worker_cpus);
    free(cfg->log_dir);
    free(cfg->worker_cli_socket);
    free(cfg->data_dir);
    free(cfg->tmp_fs);
    gs_config_switches_free(cfg);
    gs_config_accounts_free(cfg);
    gs_config_qos_free(cfg);
    gs_config_licenses_free(cfg);
    free_partitions(cfg);
    free(cfg->cluster_name);
    memset(cfg, 0, sizeof(*cfg));
}

static void rd_host(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_string(c, v, "scheduler.host", &CFG(c)->host);
}

static void rd_port(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "scheduler.port", 0, 65535, &CFG(c)->port);
}

static void rd_socket(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *path = NULL;

    if (gs_schema_string(c, v, "scheduler.socket", &path) < 0 || path == NULL)
        return;
    /* sun_path holds 108 bytes including the NUL. */
    if (strlen(path) > 107) {
        GS_SCHEMA_REPORT_AT(c, v, "scheduler.socket is longer than a Unix socket path can be");
        free(path);
        return;
    }
    free(CFG(c)->socket_path);
    CFG(c)->socket_path = path;
}

/* 0 (the default): no TCP port for CLIs on login nodes. */
static void rd_cli_port(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "scheduler.cli_port", 0, 65535, &CFG(c)->cli_port);
}

/* "" (or no key): libmunge's own default socket. */
static void rd_munge_socket(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *path = NULL;

    if (gs_schema_string(c, v, "scheduler.munge_socket", &path) < 0 || path == NULL)
        return;
    if (path[0] != '\0' && (path[0] != '/' || strlen(path) > 107)) {
        GS_SCHEMA_REPORT_AT(c, v,
                            "scheduler.munge_socket must be an absolute path a Unix socket can "
                            "have, or \"\" for munged's default");
        free(path);
        return;
    }
    free(CFG(c)->munge_socket);
    CFG(c)->munge_socket = path[0] != '\0' ? path : NULL;
    if (path[0] == '\0')
        free(path);
}

static void rd_state_dir(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_string(c, v, "scheduler.state_dir", &CFG(c)->state_dir);
}

static void read_ms(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                    uint64_t *out_ms)
{
    uint64_t s;

    if (gs_schema_duration(c, v, path, 1, false, &s) == 0 && s < UINT64_MAX / 1000)
        *out_ms = s * 1000;
}

static void rd_heartbeat_interval(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_ms(c, v, "scheduler.heartbeat_interval", &CFG(c)->heartbeat_interval_ms);
}

static void rd_heartbeat_misses(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "scheduler.heartbeat_misses", 1, 1000, &CFG(c)->heartbeat_misses);
}

static void rd_kill_grace(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_ms(c, v, "scheduler.kill_grace", &CFG(c)->kill_grace_ms);
}

static void rd_log_level(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    const char *s;

    if (gs_toml_as_string(v, &s, NULL) < 0 || gs_log_level_parse(s, &CFG(c)->log_level) < 0)
        GS_SCHEMA_REPORT_AT(c, v,
                            "scheduler.log_level must be \"debug\", \"info\", \"warn\" or "
                            "\"error\"");
}

static void rd_cluster_name(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *name = NULL;

    if (gs_schema_string(c, v, "scheduler.cluster_name", &name) < 0 || name == NULL)
        return;
    if (!gs_jobspec_name_ok(name) || strchr(name, ' ') != NULL) {
        GS_SCHEMA_REPORT_AT(c, v, "scheduler.cluster_name must be one word without '/'");
        free(name);
        return;
    }
    free(CFG(c)->cluster_name);
    CFG(c)->cluster_name = name;
}

/* "host:port" with a port from 0 (any free one) to 65535, or "" for none. */
static void rd_http(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *addr = NULL, *colon, *end;
    unsigned long port;

    if (gs_schema_string(c, v, "scheduler.http", &addr) < 0 || addr == NULL)
        return;
    if (addr[0] == '\0') {
        free(addr);
        free(CFG(c)->http_listen);
        CFG(c)->http_listen = NULL;
        return;
    }
    colon = strrchr(addr, ':');
    errno = 0;
    port = colon != NULL ? strtoul(colon + 1, &end, 10) : 0;
    if (colon == NULL || colon == addr || colon[1] == '\0' || *end != '\0' || errno != 0 ||
        port > 65535) {
        GS_SCHEMA_REPORT_AT(c, v,
                            "scheduler.http must be \"HOST:PORT\" (such as \"127.0.0.1:6818\"), "
                            "or \"\" for no HTTP listener");
        free(addr);
        return;
    }
    free(CFG(c)->http_listen);
    CFG(c)->http_listen = addr;
}

static void rd_idle_threshold(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "scheduler.idle_threshold", 0, 100, &CFG(c)->idle_threshold_pct);
}

static void rd_idle_window(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_ms(c, v, "scheduler.idle_window", &CFG(c)->idle_window_ms);
}

static void rd_max_connections(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "scheduler.max_connections", 1, 1000000, &CFG(c)->max_connections);
}

static void rd_max_connections_per_user(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "scheduler.max_connections_per_user", 1, 1000000,
                   &CFG(c)->max_connections_per_user);
}

static void rd_request_timeout(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_ms(c, v, "scheduler.request_timeout", &CFG(c)->request_timeout_ms);
}

/* "" turns authentication off (a trusted network, or tests that want it so). */
static void rd_auth_key(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *path = NULL;

    if (gs_schema_string(c, v, "scheduler.auth_key", &path) < 0 || path == NULL)
        return;
    free(CFG(c)->auth_key);
    CFG(c)->auth_key = path[0] != '\0' ? path : NULL;
    if (path[0] == '\0')
        free(path);
}

/* An absolute path (it runs with gschedd's environment cleared); "" turns mail off. */
static void rd_mail_prog(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *path = NULL;

    if (gs_schema_string(c, v, "scheduler.mail_prog", &path) < 0 || path == NULL)
        return;
    if (path[0] != '\0' && path[0] != '/') {
        GS_SCHEMA_REPORT_AT(c, v, "scheduler.mail_prog must be an absolute path, or \"\"");
        free(path);
        return;
    }
    free(CFG(c)->mail_prog);
    CFG(c)->mail_prog = path[0] != '\0' ? path : NULL;
    if (path[0] == '\0')
        free(path);
}

/* "0s" (the default) turns fencing off. */
static void rd_fence_timeout(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    uint64_t s;

    if (gs_schema_duration(c, v, "scheduler.fence_timeout", 1, true, &s) == 0 &&
        s < UINT64_MAX / 1000)
        CFG(c)->fence_timeout_ms = s * 1000;
}

static void rd_max_submit_jobs(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "scheduler.max_submit_jobs", 0, 100000000, &CFG(c)->max_submit_jobs);
}

/* "0s" keeps finished jobs in memory for good. */
static void rd_min_job_age(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    uint64_t s;

    if (gs_schema_duration(c, v, "scheduler.min_job_age", 1, true, &s) == 0 &&
        s < UINT64_MAX / 1000)
        CFG(c)->min_job_age_ms = s * 1000;
}

/* "0s" (the default) and "unlimited" keep the store's history for good; else at least an
 * hour. */
static void rd_purge_after(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    uint64_t s;

    if (gs_schema_duration(c, v, "scheduler.purge_after", 1, true, &s) < 0)
        return;
    if (s > 0 && s < 3600) {
        GS_SCHEMA_REPORT_AT(c, v, "scheduler.purge_after must be at least 1h (or \"0s\": never)");
        return;
    }
    CFG(c)->purge_after_ms = s < UINT64_MAX / 1000 ? s * 1000 : 0;
}

static const char *const data_locality_names[] = {"tiebreak", "prefer", "off"};

const char *gs_data_locality_name(enum gs_data_locality l)
{
    return (unsigned)l <= GS_DATA_LOCALITY_OFF ? data_locality_names[l] : "?";
}

static void rd_data_locality(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *name = NULL;

    if (gs_schema_string(c, v, "scheduler.data_locality", &name) < 0 || name == NULL)
        return;
    for (int i = 0; i <= GS_DATA_LOCALITY_OFF; i++) {
        if (strcmp(name, data_locality_names[i]) == 0) {
            CFG(c)->data_locality = (enum gs_data_locality)i;
            free(name);
            return;
        }
    }
    GS_SCHEMA_REPORT_AT(c, v,
                        "scheduler.data_locality must be \"tiebreak\", \"prefer\" or \"off\", "
                        "not \"%s\"",
                        name);
    free(name);
}

static void rd_data_locality_wait(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    uint64_t s;

    if (gs_schema_duration(c, v, "scheduler.data_locality_wait", 1, true, &s) == 0) {
        if (s > 86400)
            GS_SCHEMA_REPORT_AT(c, v,
                                "scheduler.data_locality_wait must be at most a day (86400 s)");
        else
            CFG(c)->data_locality_wait_s = (uint32_t)s;
    }
}

static void rd_max_switch_wait(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    uint64_t s;

    if (gs_schema_duration(c, v, "scheduler.max_switch_wait", 1, true, &s) == 0) {
        if (s > 86400)
            GS_SCHEMA_REPORT_AT(c, v, "scheduler.max_switch_wait must be at most a day (86400 s)");
        else
            CFG(c)->max_switch_wait_s = (uint32_t)s;
    }
}

static void rd_mpi_default(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *name = NULL;

    if (gs_schema_string(c, v, "scheduler.mpi_default", &name) < 0 || name == NULL)
        return;
    if (strcmp(name, "pmix") == 0 || strcmp(name, "pmi2") == 0)
        snprintf(CFG(c)->mpi_default, sizeof(CFG(c)->mpi_default), "%s", name);
    else if (strcmp(name, "none") == 0)
        CFG(c)->mpi_default[0] = '\0';
    else
        GS_SCHEMA_REPORT_AT(c, v,
                            "scheduler.mpi_default must be \"none\", \"pmix\" or \"pmi2\", not "
                            "\"%s\"",
                            name);
    free(name);
}

static void rd_data_copy_rate(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_size_mib(c, v, "scheduler.data_copy_rate", &CFG(c)->data_copy_rate_mib);
}

static void rd_backfill_depth(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "scheduler.backfill_depth", 1, 1000, &CFG(c)->backfill_depth);
}

static void rd_kill_invalid_depend(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_bool(c, v, "scheduler.kill_invalid_depend", &CFG(c)->kill_invalid_depend);
}

static const struct gs_schema_key scheduler_keys[] = {
    {"host", rd_host},
    {"port", rd_port},
    {"socket", rd_socket},
    {"cli_port", rd_cli_port},
    {"munge_socket", rd_munge_socket},
    {"state_dir", rd_state_dir},
    {"heartbeat_interval", rd_heartbeat_interval},
    {"heartbeat_misses", rd_heartbeat_misses},
    {"kill_grace", rd_kill_grace},
    {"log_level", rd_log_level},
    {"cluster_name", rd_cluster_name},
    {"http", rd_http},
    {"idle_threshold", rd_idle_threshold},
    {"idle_window", rd_idle_window},
    {"max_connections", rd_max_connections},
    {"max_connections_per_user", rd_max_connections_per_user},
    {"request_timeout", rd_request_timeout},
    {"auth_key", rd_auth_key},
    {"max_submit_jobs", rd_max_submit_jobs},
    {"fence_timeout", rd_fence_timeout},
    {"min_job_age", rd_min_job_age},
    {"purge_after", rd_purge_after},
    {"data_locality", rd_data_locality},
    {"data_locality_wait", rd_data_locality_wait},
    {"max_switch_wait", rd_max_switch_wait},
    {"mpi_default", rd_mpi_default},
    {"data_copy_rate", rd_data_copy_rate},
    {"backfill_depth", rd_backfill_depth},
    {"mail_prog", rd_mail_prog},
    {"kill_invalid_depend", rd_kill_invalid_depend},
    {NULL, NULL},
};

static void rd_name(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_string(c, v, "worker.name", &CFG(c)->worker_name);
}

static void rd_address(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_string(c, v, "worker.address", &CFG(c)->worker_address);
}

static void rd_features(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    if (gs_toml_count(v) > GS_CONFIG_MAX_FEATURES) {
        GS_SCHEMA_REPORT_AT(c, v, "worker.features holds at most %d features",
                            GS_CONFIG_MAX_FEATURES);
        return;
    }
    gs_schema_strv(c, v, "worker.features", &CFG(c)->features, &CFG(c)->nfeatures);
}

static void rd_topology(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_string(c, v, "worker.topology", &CFG(c)->topology_xml);
}

static void rd_gpus(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "worker.gpus", 0, 64, &CFG(c)->fake_gpus);
}

static void rd_cpus(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_string(c, v, "worker.cpus", &CFG(c)->worker_cpus);
    if (CFG(c)->worker_cpus != NULL &&
        (CFG(c)->worker_cpus[0] == '\0' ||
         strspn(CFG(c)->worker_cpus, "0123456789,-") != strlen(CFG(c)->worker_cpus)))
        GS_SCHEMA_REPORT_AT(c, v, "worker.cpus must list CPU numbers, such as \"0-3,8\"");
}

static void rd_log_dir(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_string(c, v, "worker.log_dir", &CFG(c)->log_dir);
}

static void rd_cli_socket(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *path = NULL;

    if (gs_schema_string(c, v, "worker.cli_socket", &path) < 0 || path == NULL)
        return;
    if (strlen(path) > 107) { /* as scheduler.socket */
        GS_SCHEMA_REPORT_AT(c, v, "worker.cli_socket is longer than a Unix socket path can be");
        free(path);
        return;
    }
    free(CFG(c)->worker_cli_socket);
    CFG(c)->worker_cli_socket = path;
}

static void rd_telemetry_interval(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    uint64_t s;

    if (gs_schema_duration(c, v, "worker.telemetry_interval", 1, true, &s) == 0 &&
        s < UINT64_MAX / 1000)
        CFG(c)->telemetry_interval_ms = s * 1000;
}

static void rd_cgroups(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *mode = NULL;

    if (gs_schema_string(c, v, "worker.cgroups", &mode) < 0 || mode == NULL)
        return;
    if (strcmp(mode, "auto") != 0 && strcmp(mode, "v1") != 0 && strcmp(mode, "v2") != 0 &&
        strcmp(mode, "off") != 0) {
        GS_SCHEMA_REPORT_AT(c, v, "worker.cgroups must be \"auto\", \"v1\", \"v2\" or \"off\"");
        free(mode);
        return;
    }
    free(CFG(c)->cgroups);
    CFG(c)->cgroups = mode;
}

/* Plain names joined by '/', as the cgroup trees take them. */
static void rd_cgroup_parent(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *parent = NULL;

    if (gs_schema_string(c, v, "worker.cgroup_parent", &parent) < 0 || parent == NULL)
        return;
    if (parent[0] == '\0' || parent[0] == '/' || strstr(parent, "..") != NULL ||
        strstr(parent, "//") != NULL || parent[strlen(parent) - 1] == '/') {
        GS_SCHEMA_REPORT_AT(c, v,
                            "worker.cgroup_parent must be a relative path of names, such "
                            "as \"gsched\"");
        free(parent);
        return;
    }
    free(CFG(c)->cgroup_parent);
    CFG(c)->cgroup_parent = parent;
}

static void rd_job_pids_max(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "worker.job_pids_max", 0, 4194304, &CFG(c)->job_pids_max);
}

/* An absolute directory into *field (replacing what it held). */
static void rd_abs_dir(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *key,
                       char **field)
{
    char *dir = NULL;

    if (gs_schema_string(c, v, key, &dir) < 0 || dir == NULL)
        return;
    if (dir[0] != '/') {
        GS_SCHEMA_REPORT_AT(c, v, "%s must be an absolute directory", key);
        free(dir);
        return;
    }
    free(*field);
    *field = dir;
}

static void rd_data_dir(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    rd_abs_dir(c, v, "worker.data_dir", &CFG(c)->data_dir);
}

/* Slurm's TmpFS: the file system whose size the node reports as its TmpDisk. */
static void rd_tmp_fs(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    rd_abs_dir(c, v, "worker.tmp_fs", &CFG(c)->tmp_fs);
}

static void rd_data_cap(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_size_mib(c, v, "worker.data_cap", &CFG(c)->data_cap_mib);
}

static void rd_data_rate(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_size_mib(c, v, "worker.data_rate", &CFG(c)->data_rate_mib);
}

static void rd_data_port(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "worker.data_port", 0, 65535, &CFG(c)->data_port);
}

/* At most 8: each copy's thread reads and writes a file as fast as data_rate lets it. */
static void rd_data_copies(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "worker.data_copies", 1, 8, &CFG(c)->data_copies);
}

static void rd_data_stall(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    uint64_t s;

    if (gs_schema_duration(c, v, "worker.data_stall", 1, false, &s) == 0) {
        if (s > 86400)
            GS_SCHEMA_REPORT_AT(c, v, "worker.data_stall must be at most a day (86400 s)");
        else
            CFG(c)->data_stall_s = (uint32_t)s;
    }
}

static void rd_allow_root_jobs(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_bool(c, v, "worker.allow_root_jobs", &CFG(c)->allow_root_jobs);
}

static const struct gs_schema_key worker_keys[] = {
    {"name", rd_name},
    {"address", rd_address},
    {"features", rd_features},
    {"topology", rd_topology},
    {"gpus", rd_gpus},
    {"cpus", rd_cpus},
    {"log_dir", rd_log_dir},
    {"cli_socket", rd_cli_socket},
    {"telemetry_interval", rd_telemetry_interval},
    {"allow_root_jobs", rd_allow_root_jobs},
    {"cgroups", rd_cgroups},
    {"cgroup_parent", rd_cgroup_parent},
    {"job_pids_max", rd_job_pids_max},
    {"data_dir", rd_data_dir},
    {"tmp_fs", rd_tmp_fs},
    {"data_cap", rd_data_cap},
    {"data_rate", rd_data_rate},
    {"data_port", rd_data_port},
    {"data_copies", rd_data_copies},
    {"data_stall", rd_data_stall},
    {NULL, NULL},
};

/* One hostlist or a list of them, expanded and appended to *nodes (NULL-terminated). */
void gs_config_read_node_lists(struct gs_schema_ctx *c, const struct gs_toml_value *v,
                               const char *path, char ***nodes, size_t *nnodes)
{
    const struct gs_toml_value **items = NULL;
    size_t n = 0;

    if (gs_schema_string_list(c, v, path, &items, &n) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        const char *expr;
        char **names = NULL, **all;
        size_t k = 0;
        struct gs_error err;

        gs_error_clear(&err);
        gs_toml_as_string(items[i], &expr, NULL);
        if (gs_hostlist_expand(expr, &names, &k, &err) < 0) {
            gs_schema_report(c, gs_toml_line(items[i]), gs_toml_col(items[i]) + err.col, "%s: %s",
                             path, err.msg);
            continue;
        }
        all = realloc(*nodes, (*nnodes + k + 1) * sizeof(*all));
        if (all == NULL) {
            c->enomem = true;
            gs_hostlist_free(names);
            break;
        }
        *nodes = all;
        memcpy(all + *nnodes, names, k * sizeof(*all));
        *nnodes += k;
        all[*nnodes] = NULL;
        free(names); /* its strings now belong to *nodes */
    }
    free(items);
}

static struct gs_config_partition *current_partition(struct gs_schema_ctx *c)
{
    return &CFG(c)->partitions[CFG(c)->npartitions - 1];
}

static void rd_partition_name(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    struct gs_config_partition *p = current_partition(c);
    char *name = NULL;

    if (gs_schema_string(c, v, "partition.name", &name) < 0 || name == NULL)
        return;
    if (!gs_jobspec_name_ok(name) || strpbrk(name, " ,") != NULL) {
        GS_SCHEMA_REPORT_AT(c, v, "partition.name must be one word without ',' or '/'");
        free(name);
        return;
    }
    for (size_t i = 0; i + 1 < CFG(c)->npartitions; i++) {
        const char *other = CFG(c)->partitions[i].name; /* NULL: one without a name */
        if (other != NULL && strcmp(other, name) == 0) {
            GS_SCHEMA_REPORT_AT(c, v, "partition '%s' is defined twice", name);
            free(name);
            return;
        }
    }
    free(p->name);
    p->name = name;
}

/* "ALL" (as slurm.conf says it) is every node, like leaving nodes out. */
static void rd_partition_nodes(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    struct gs_config_partition *p = current_partition(c);
    const char *s;

    if (gs_toml_as_string(v, &s, NULL) == 0 && strcmp(s, "ALL") == 0)
        return;
    gs_config_read_node_lists(c, v, "partition.nodes", &p->nodes, &p->nnodes);
    if (p->nodes == NULL && !c->enomem) {
        p->nodes = calloc(1, sizeof(*p->nodes)); /* an empty list: no node at all */
        if (p->nodes == NULL)
            c->enomem = true;
    }
}

static void rd_partition_default(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    struct gs_config_partition *p = current_partition(c);

    if (gs_schema_bool(c, v, "partition.default", &p->is_default) < 0 || !p->is_default)
        return;
    for (size_t i = 0; i + 1 < CFG(c)->npartitions; i++) {
        if (CFG(c)->partitions[i].is_default) {
            GS_SCHEMA_REPORT_AT(c, v, "partition '%s' is the default already",
                                CFG(c)->partitions[i].name != NULL ? CFG(c)->partitions[i].name
                                                                   : "(unnamed)");
            p->is_default = false;
            return;
        }
    }
}

static void rd_partition_max_time(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_duration(c, v, "partition.max_time", 60, false, &current_partition(c)->max_time_s);
}

static const char *const idle_actions[] = {"flag", "notify", "cancel", "requeue"};

const char *gs_idle_action_name(enum gs_idle_action a)
{
    return (unsigned)a < sizeof(idle_actions) / sizeof(idle_actions[0]) ? idle_actions[a] : "?";
}

static void rd_partition_idle_action(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    const char *s;

    if (gs_toml_as_string(v, &s, NULL) == 0) {
        for (size_t i = 0; i < sizeof(idle_actions) / sizeof(idle_actions[0]); i++) {
            if (strcmp(s, idle_actions[i]) == 0) {
                current_partition(c)->idle_action = (enum gs_idle_action)i;
                return;
            }
        }
    }
    GS_SCHEMA_REPORT_AT(c, v,
                        "partition.idle_action must be \"flag\", \"notify\", \"cancel\" or "
                        "\"requeue\"");
}

static void rd_partition_idle_grace(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_duration(c, v, "partition.idle_grace", 60, true, &current_partition(c)->idle_grace_s);
}

static void rd_partition_priority_job_factor(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "partition.priority_job_factor", 0, 65535,
                   &current_partition(c)->priority_job_factor);
}

static const struct gs_schema_key partition_keys[] = {
    {"name", rd_partition_name},
    {"nodes", rd_partition_nodes},
    {"default", rd_partition_default},
    {"max_time", rd_partition_max_time},
    {"idle_action", rd_partition_idle_action},
    {"idle_grace", rd_partition_idle_grace},
    {"priority_job_factor", rd_partition_priority_job_factor},
    {NULL, NULL},
};

/* The first [[partition]] replaces the implicit "main"; the first is the default when none says so.
 */
static void rd_partition(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    struct gs_config *cfg = CFG(c);
    size_t n = gs_toml_count(v);
    bool any_default = false;

    if (gs_toml_type(v) != GS_TOML_ARRAY || n == 0 || n > GS_CONFIG_MAX_PARTITIONS) {
        GS_SCHEMA_REPORT_AT(c, v, "partition must be an array of tables ([[partition]]), 1 to %d",
                            GS_CONFIG_MAX_PARTITIONS);
        return;
    }
    if (!cfg->partitions_configured) {
        free_partitions(cfg);
        cfg->partitions_configured = true;
    }
    for (size_t i = 0; i < n; i++) {
        const struct gs_toml_value *t = gs_toml_at(v, i);
        struct gs_config_partition *p;

        if (gs_toml_type(t) != GS_TOML_TABLE) {
            GS_SCHEMA_REPORT_AT(c, t, "partition must be an array of tables ([[partition]])");
            continue;
        }
        p = realloc(cfg->partitions, (cfg->npartitions + 1) * sizeof(*p));
        if (p == NULL) {
            c->enomem = true;
            return;
        }
        cfg->partitions = p;
        cfg->partitions[cfg->npartitions++] = (struct gs_config_partition){
            .max_time_s = GS_DURATION_INFINITE,
            .idle_grace_s = GS_CONFIG_DEFAULT_IDLE_GRACE_S,
            .priority_job_factor = 1,
        };
        gs_schema_read_section(c, t, "partition");
        if (current_partition(c)->name == NULL)
            GS_SCHEMA_REPORT_AT(c, t, "partition needs a name");
    }
    for (size_t i = 0; i < cfg->npartitions; i++)
        any_default = any_default || cfg->partitions[i].is_default;
    if (!any_default && cfg->npartitions > 0)
        cfg->partitions[0].is_default = true;
}

const struct gs_config_partition *gs_config_partition(const struct gs_config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->npartitions; i++) {
        const struct gs_config_partition *p = &cfg->partitions[i];
        if (p->name != NULL && (name == NULL ? p->is_default : strcmp(p->name, name) == 0))
            return p;
    }
    return NULL;
}

bool gs_config_partition_has(const struct gs_config_partition *p, const char *node)
{
    if (p->nodes == NULL)
        return true;
    for (size_t i = 0; i < p->nnodes; i++) {
        if (strcmp(p->nodes[i], node) == 0)
            return true;
    }
    return false;
}

void gs_config_read_tables(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *name,
                           size_t have, size_t max, bool (*add)(struct gs_schema_ctx *c),
                           void (*after)(struct gs_schema_ctx *c, const struct gs_toml_value *t))
{
    size_t n = gs_toml_count(v);

    if (gs_toml_type(v) != GS_TOML_ARRAY || have > max || n > max - have) {
        GS_SCHEMA_REPORT_AT(c, v, "%s must be an array of tables ([[%s]]), at most %zu", name, name,
                            max);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct gs_toml_value *t = gs_toml_at(v, i);

        if (gs_toml_type(t) != GS_TOML_TABLE) {
            GS_SCHEMA_REPORT_AT(c, t, "%s must be an array of tables ([[%s]])", name, name);
            continue;
        }
        if (!add(c))
            return;
        gs_schema_read_section(c, t, name);
        if (after != NULL)
            after(c, t);
    }
}

void *gs_config_append(struct gs_schema_ctx *c, void *items, size_t *n, size_t size,
                       const void *init)
{
    char *grown = realloc(items, (*n + 1) * size);

    if (grown == NULL) {
        c->enomem = true;
        return NULL;
    }
    memcpy(grown + *n * size, init, size);
    (*n)++;
    return grown;
}

static void rd_scheduler(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_read_section(c, v, "scheduler");
}

static void rd_worker(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_read_section(c, v, "worker");
}

static const struct gs_schema_key root_keys[] = {
    {"scheduler", rd_scheduler},
    {"worker", rd_worker},
    {"switch", gs_config_read_switches},
    {"partition", rd_partition},
    {"priority", gs_config_read_priority},
    {"account", gs_config_read_accounts},
    {"qos", gs_config_read_qos},
    {"license", gs_config_read_licenses},
    {NULL, NULL},
};

static const struct gs_schema_section sections[] = {
    {"", root_keys},
    {"scheduler", scheduler_keys},
    {"worker", worker_keys},
    {"switch", gs_config_switch_keys},
    {"partition", partition_keys},
    {"priority", gs_config_priority_keys},
    {"account", gs_config_account_keys},
    {"qos", gs_config_qos_keys},
    {"license", gs_config_license_keys},
};

/*
 * As gs_schema_parse(), with two steps after the walk: [[qos]] accounts may name
 * [[account]]s that stand later in the file (config_qos.c), and the switches' nodes are
 * indexed, which finds a node under two (config_switch.c).
 */
int gs_config_parse(struct gs_config *cfg, const char *text, size_t len, const char *filename,
                    struct gs_buf *errors)
{
    const char *name = filename != NULL ? filename : "gsched.toml";
    struct gs_toml_doc *doc = NULL;
    struct gs_schema_ctx c;
    struct gs_error err;
    int rc = gs_toml_parse(text, len, &doc, &err);

    if (rc == -EINVAL)
        gs_buf_printf(errors, "%s:%d:%d: %s\n", name, err.line, err.col, err.msg);
    if (rc < 0)
        return rc;
    gs_schema_init(&c, errors, name, sections, sizeof(sections) / sizeof(sections[0]), cfg);
    gs_schema_read_section(&c, gs_toml_root(doc), "");
    gs_config_qos_check_accounts(&c, gs_toml_get(gs_toml_root(doc), "qos"));
    gs_config_index_switches(&c);
    gs_toml_free(doc);
    return gs_schema_finish(&c);
}

/* As gs_schema_load(), through gs_config_parse() for its check after the walk. */
int gs_config_load(struct gs_config *cfg, const char *path, struct gs_buf *errors)
{
    struct gs_buf text = GS_BUF_INIT;
    int rc = gs_schema_read_file(path, &text, errors);

    if (rc == 0)
        rc = gs_config_parse(cfg, text.data != NULL ? text.data : "", text.len, path, errors);
    gs_buf_release(&text);
    return rc;
}

int gs_config_load_default(struct gs_config *cfg, const char *path, struct gs_buf *errors)
{
    if (path == NULL && access(GS_CONFIG_DEFAULT_PATH, F_OK) == 0)
        path = GS_CONFIG_DEFAULT_PATH;
    return path != NULL ? gs_config_load(cfg, path, errors) : 0;
}
