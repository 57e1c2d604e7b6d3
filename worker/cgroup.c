/*
 * cgroup.c: per-job control groups on a worker, cgroup v1 or v2 (see cgroup.h).
 *
 * v1 keeps one tree per controller, so a job's group is made in each hierarchy used and a
 * task writes itself into each; v2 has one tree, whose controllers must be enabled in
 * every ancestor's cgroup.subtree_control. v1's cpuset starts a new group with no CPUs and
 * no memory nodes, so every level gets its parent's before anything joins it.
 *
 * v1 makes step groups only in the hierarchy that lists the job's processes (the freezer's
 * where there is one): there a step's processes are told apart from the job's other steps',
 * to be killed at the step's end; in the other hierarchies they sit in the job's group, whose
 * limits bound every step anyway. Each v1 group is a directory of control files that the
 * kernel makes and removes: four more per job were a fifth of the worker's time per short
 * job (bench/RESULTS.md).
 *
 * Ending a job: its group is frozen (v1 freezer, v2 cgroup.freeze) so nothing in it can
 * fork, every process listed in cgroup.procs gets SIGKILL, and it is thawed so the kills
 * land; repeated until the list is empty (v2's cgroup.kill does all of it where the kernel
 * has it). Killed processes leave the group as they exit, so removal is retried for a short
 * bounded time; the loop thread waits at most END_WAIT_MS for it.
 */
#define _GNU_SOURCE

#include "worker/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/path.h"
#include "worker/devbpf.h"

#define END_WAIT_MS 500
#define MAX_PIDS 4096

/* One tree the job groups are made in: a v1 hierarchy, or the v2 tree. */
struct hier {
    const char *ctrl; /* v1: "memory", ...; v2: "" */
    char base[PATH_MAX - 64];
    size_t top_len; /* of base's ROOT[/CTRL] part: the levels past it are ours */
};

struct wrk_cg {
    enum wrk_cg_mode mode;
    struct hier h[WRK_CG_MAX_FDS];
    int nh;
    int memory, pids, cpuset, freezer, devices; /* index into h, -1 when not there */
    bool bpf_devices;                           /* v2: a device program per job (devbpf.h) */
    bool quiet_cpusets; /* v1: the top cpuset balances the machine; ours need not (make_dir) */
    char desc[96];
};

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC), rc = 0;
    size_t len = strlen(text);

    if (fd < 0)
        return -errno;
    if (write(fd, text, len) != (ssize_t)len)
        rc = -errno;
    close(fd);
    return rc;
}

static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* path = dir/name, refused when it would not fit. */
static int join(char *out, size_t size, const char *dir, const char *name)
{
    int n = snprintf(out, size, "%s/%s", dir, name);

    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* v1 cpuset: a new group has no CPUs or memory nodes until given its parent's. */
static int inherit_cpuset(const char *dir)
{
    char parent[PATH_MAX], path[PATH_MAX], value[4096];
    const char *files[] = {"cpuset.cpus", "cpuset.mems"};
    char *slash;
    int rc = 0;

    snprintf(parent, sizeof(parent), "%s", dir);
    slash = strrchr(parent, '/');
    if (slash == NULL)
        return -EINVAL;
    *slash = '\0';
    for (size_t i = 0; i < 2 && rc == 0; i++) {
        ssize_t len;

        if (join(path, sizeof(path), parent, files[i]) < 0)
            return -ENAMETOOLONG;
        len = gs_path_read_small(path, value, sizeof(value));
        if (len < 0)
            return (int)len;
        if (join(path, sizeof(path), dir, files[i]) < 0)
            return -ENAMETOOLONG;
        rc = write_file(path, value[0] == '\n' ? "" : value);
    }
    return rc;
}

/* Whether a v1 cpuset group has no CPUs or no memory nodes yet (a task cannot join it:
 * ENOSPC). Both: another worker filling in a level it just made writes the CPUs first, and a
 * group made below it in that moment would copy empty memory nodes. */
static bool cpuset_empty(const char *dir)
{
    static const char *files[] = {"cpuset.cpus", "cpuset.mems"};
    char path[PATH_MAX], value[64];

    for (size_t i = 0; i < 2; i++) {
        if (join(path, sizeof(path), dir, files[i]) < 0 ||
            gs_path_read_small(path, value, sizeof(value)) <= 0 || value[0] == '\n')
            return true;
    }
    return false;
}

/* mkdir dir (an existing one is fine); *created says whether this call made it. A v1 cpuset
 * group gets its parent's CPUs and memory nodes whenever it has none, also one another
 * worker made a moment ago and has not filled in yet (the levels go top-down, so the
 * parent has them). */
static int make_dir(const struct wrk_cg *cg, const struct hier *h, const char *dir, bool *created)
{
    char path[PATH_MAX];

    *created = mkdir(dir, 0755) == 0;
    if (!*created && errno != EEXIST)
        return -errno;
    if (cg->mode != WRK_CG_V1 || strcmp(h->ctrl, "cpuset") != 0)
        return 0;
    /* A v1 cpuset that balances load makes the kernel rebuild its scheduling domains at
     * every change to it (its CPUs filled in, its removal): on a busy node most of a short
     * job's cost (perf: dl_rebuild_rd_accounting, update_domain_attr_tree, under a global
     * lock). Where the top cpuset balances the whole machine, as by default, a child's flag
     * changes nothing of the balancing; turned off while the group has no CPUs yet, it
     * costs no rebuild itself. Best effort: the flag only saves time. */
    if (*created && cg->quiet_cpusets &&
        join(path, sizeof(path), dir, "cpuset.sched_load_balance") == 0)
        (void)write_file(path, "0");
    if (cpuset_empty(dir))
        return inherit_cpuset(dir);
    return 0;
}

/* v2: the controllers used enabled for dir's children (cpuset where it can be: another
 * user of the tree may hold CPUs exclusively). */
static int enable_controllers(const struct wrk_cg *cg, const char *dir)
{
    char path[PATH_MAX];
    int rc = 0;

    if (join(path, sizeof(path), dir, "cgroup.subtree_control") < 0)
        return -ENAMETOOLONG;
    if (cg->memory >= 0)
        rc = write_file(path, "+memory");
    if (rc == 0 && cg->pids >= 0)
        rc = write_file(path, "+pids");
    if (rc == 0 && cg->cpuset >= 0)
        (void)write_file(path, "+cpuset");
    return rc;
}

/* ROOT/[CTRL/]REL (REL: "gsched/NODE", a relative path), every level made and, on v2, given
 * the controllers. */
static int make_base(struct wrk_cg *cg, struct hier *h, const char *root, const char *rel,
                     struct gs_buf *why)
{
    char dir[sizeof(h->base)];
    const char *p = rel;
    bool created;
    int rc = 0;

    snprintf(dir, sizeof(dir), "%s%s%s", root, h->ctrl[0] != '\0' ? "/" : "", h->ctrl);
    h->top_len = strlen(dir);
    if (cg->mode == WRK_CG_V2)
        rc = enable_controllers(cg, dir);
    while (rc == 0 && *p != '\0') {
        size_t len = strcspn(p, "/"), at = strlen(dir);

        if (at + 1 + len >= sizeof(dir)) {
            rc = -ENAMETOOLONG;
            break;
        }
        dir[at] = '/';
        memcpy(dir + at + 1, p, len);
        dir[at + 1 + len] = '\0';
        p += len + (p[len] == '/');
        rc = make_dir(cg, h, dir, &created);
        if (rc == 0 && cg->mode == WRK_CG_V2)
            rc = enable_controllers(cg, dir);
    }
    snprintf(h->base, sizeof(h->base), "%s", dir);
    if (rc < 0)
        gs_buf_printf(why, "%s: %s", dir, strerror(-rc));
    return rc;
}

/* A relative path of plain names: no empty, "." or ".." component. */
static bool rel_ok(const char *rel)
{
    const char *p = rel;

    if (rel == NULL || rel[0] == '\0' || rel[0] == '/')
        return false;
    while (*p != '\0') {
        size_t len = strcspn(p, "/");

        if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        p += len + (p[len] == '/');
    }
    return rel[strlen(rel) - 1] != '/';
}

/* Whether the v2 controller name is in the list text ("cpuset cpu io memory pids"). */
static bool has_word(const char *text, const char *name)
{
    size_t len = strlen(name);

    for (const char *p = strstr(text, name); p != NULL; p = strstr(p + len, name)) {
        if ((p == text || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\n' || p[len] == '\0'))
            return true;
    }
    return false;
}

/* The controllers of the v2 tree at root (cgroup.controllers) into text; false when root is
 * not a v2 tree. */
static bool v2_controllers(const char *root, char *text, size_t size)
{
    char path[PATH_MAX];

    snprintf(path, sizeof(path), "%s/cgroup.controllers", root);
    return gs_path_read_small(path, text, size) >= 0;
}

/* v2 for "auto" when root is the unified tree with the memory and pids controllers. */
static bool v2_usable(const char *root)
{
    char text[512];

    return v2_controllers(root, text, sizeof(text)) && has_word(text, "memory") &&
           has_word(text, "pids");
}

/* v1 when the memory and pids hierarchies are mounted under root. */
static bool v1_has(const char *root, const char *ctrl)
{
    char path[PATH_MAX];

    snprintf(path, sizeof(path), "%s/%s/cgroup.procs", root, ctrl);
    return exists(path);
}

static int setup_v1(struct wrk_cg *cg, const char *root, const char *node, struct gs_buf *why)
{
    static const char *ctrls[] = {"memory", "pids", "cpuset", "freezer", "devices"};
    int *slot[] = {&cg->memory, &cg->pids, &cg->cpuset, &cg->freezer, &cg->devices};
    int rc;

    char path[PATH_MAX], flag[8];

    cg->mode = WRK_CG_V1;
    snprintf(path, sizeof(path), "%s/cpuset/cpuset.sched_load_balance", root);
    cg->quiet_cpusets = gs_path_read_small(path, flag, sizeof(flag)) > 0 && flag[0] == '1';
    snprintf(cg->desc, sizeof(cg->desc), "v1 (");
    for (size_t i = 0; i < 5; i++) {
        if (!v1_has(root, ctrls[i]))
            continue;
        cg->h[cg->nh].ctrl = ctrls[i];
        rc = make_base(cg, &cg->h[cg->nh], root, node, why);
        if (rc < 0)
            return rc;
        *slot[i] = cg->nh++;
        snprintf(cg->desc + strlen(cg->desc), sizeof(cg->desc) - strlen(cg->desc), "%s%s",
                 cg->nh > 1 ? "," : "", ctrls[i]);
    }
    snprintf(cg->desc + strlen(cg->desc), sizeof(cg->desc) - strlen(cg->desc), ")");
    return 0;
}

/* The v2 tree with the controllers it has ("auto" takes it only with memory and pids; "v2"
 * asked for takes any, as a hybrid system's unified tree with none still kills and freezes
 * a whole job and isolates devices) and, where this process can load one, a device program
 * per job (devbpf.h). What is missing is said in why. */
static int setup_v2(struct wrk_cg *cg, const char *root, const char *node, struct gs_buf *why)
{
    char text[512] = "", list[64], path[PATH_MAX];
    struct gs_buf bpf_why = GS_BUF_INIT;
    int rc;

    cg->mode = WRK_CG_V2;
    cg->h[0].ctrl = "";
    (void)v2_controllers(root, text, sizeof(text));
    cg->memory = has_word(text, "memory") ? 0 : -1;
    cg->pids = has_word(text, "pids") ? 0 : -1;
    cg->cpuset = has_word(text, "cpuset") ? 0 : -1;
    cg->freezer = 0; /* cgroup.freeze, in every v2 group but the root */
    rc = make_base(cg, &cg->h[0], root, node, why);
    if (rc < 0)
        return rc;
    cg->nh = 1;
    snprintf(path, sizeof(path), "%s/cpuset.cpus", cg->h[0].base);
    if (!exists(path))
        cg->cpuset = -1;
    cg->bpf_devices = wrk_devbpf_probe(&bpf_why) == 0;
    snprintf(list, sizeof(list), "%s%s%s%s", cg->memory == 0 ? ",memory" : "",
             cg->pids == 0 ? ",pids" : "", cg->cpuset == 0 ? ",cpuset" : "",
             cg->bpf_devices ? ",devices" : "");
    snprintf(cg->desc, sizeof(cg->desc), "v2 (%s)", list[0] != '\0' ? list + 1 : "no controllers");
    if (cg->memory < 0 || cg->pids < 0)
        gs_buf_printf(why, "%s has no %s controller: jobs' %s not limited", root,
                      cg->memory < 0 ? "memory" : "pids", cg->memory < 0 ? "memory" : "processes");
    if (!cg->bpf_devices)
        gs_buf_printf(why, "%sGPU devices not isolated (%s)", why->len > 0 ? "; " : "",
                      bpf_why.data != NULL ? bpf_why.data : "");
    gs_buf_release(&bpf_why);
    return 0;
}

/* Removes the empty job groups an earlier worker of this node left (killed before it could):
 * a group still holding processes stays, for the task ledger's adoption. */
static void sweep(const struct wrk_cg *cg)
{
    char path[PATH_MAX];

    for (int i = 0; i < cg->nh; i++) {
        DIR *d = opendir(cg->h[i].base);
        struct dirent *e;

        while (d != NULL && (e = readdir(d)) != NULL) {
            if (strncmp(e->d_name, "job_", 4) == 0 &&
                join(path, sizeof(path), cg->h[i].base, e->d_name) == 0)
                (void)rmdir(path);
        }
        if (d != NULL)
            closedir(d);
    }
}

int wrk_cg_open(const char *want, const char *root, const char *node, struct wrk_cg **ret,
                struct gs_buf *why)
{
    struct wrk_cg *cg = calloc(1, sizeof(*cg));
    char text[512];
    bool v2, v1;
    int rc = 0;

    if (cg == NULL)
        return -ENOMEM;
    cg->memory = cg->pids = cg->cpuset = cg->freezer = cg->devices = -1;
    snprintf(cg->desc, sizeof(cg->desc), "none");
    root = root != NULL ? root : "/sys/fs/cgroup";
    want = want != NULL ? want : "auto";
    if (!rel_ok(node)) {
        gs_buf_printf(why, "'%s' cannot name a cgroup", node != NULL ? node : "");
        free(cg);
        return -EINVAL;
    }
    v2 = v2_usable(root);
    v1 = v1_has(root, "memory") && v1_has(root, "pids");
    if (strcmp(want, "off") == 0) {
        gs_buf_printf(why, "worker.cgroups is \"off\"");
    } else if (strcmp(want, "v2") == 0 || (strcmp(want, "auto") == 0 && v2)) {
        rc = v2_controllers(root, text, sizeof(text)) ? setup_v2(cg, root, node, why) : -ENOTSUP;
        if (rc == -ENOTSUP)
            gs_buf_printf(why, "%s is not a cgroup v2 tree", root);
    } else if (strcmp(want, "v1") == 0 || (strcmp(want, "auto") == 0 && v1)) {
        rc = v1 ? setup_v1(cg, root, node, why) : -ENOTSUP;
        if (!v1)
            gs_buf_printf(why, "no cgroup v1 memory and pids hierarchies under %s", root);
    } else if (strcmp(want, "auto") == 0) {
        gs_buf_printf(why,
                      "neither a cgroup v2 tree with memory and pids nor v1 hierarchies of "
                      "them under %s",
                      root);
    } else {
        gs_buf_printf(why, "worker.cgroups must be \"auto\", \"v1\", \"v2\" or \"off\", not '%s'",
                      want);
        rc = -EINVAL;
    }
    if (rc < 0 && strcmp(want, "auto") == 0) {
        /* auto settles for none, saying why */
        memset(cg->h, 0, sizeof(cg->h));
        cg->nh = 0;
        cg->mode = WRK_CG_NONE;
        cg->memory = cg->pids = cg->cpuset = cg->freezer = cg->devices = -1;
        snprintf(cg->desc, sizeof(cg->desc), "none");
        rc = 0;
    }
    if (rc < 0) {
        free(cg);
        return rc;
    }
    sweep(cg);
    *ret = cg;
    return 0;
}

/* Removes the node's group and the levels above it up to the tree's top, as far as they are
 * empty (other nodes' groups may share them). */
void wrk_cg_free(struct wrk_cg *cg)
{
    for (int i = 0; cg != NULL && i < cg->nh; i++) {
        struct hier *h = &cg->h[i];
        char *slash;

        while (strlen(h->base) > h->top_len && rmdir(h->base) == 0 &&
               (slash = strrchr(h->base, '/')) != NULL)
            *slash = '\0';
    }
    free(cg);
}

enum wrk_cg_mode wrk_cg_mode(const struct wrk_cg *cg)
{
    return cg != NULL ? cg->mode : WRK_CG_NONE;
}

const char *wrk_cg_describe(const struct wrk_cg *cg)
{
    return cg != NULL ? cg->desc : "none";
}

/* The hierarchy whose cgroup.procs lists the job's processes: the freezer's, else the
 * first (a task joins every one). */
static int list_hier(const struct wrk_cg *cg)
{
    return cg->freezer >= 0 ? cg->freezer : 0;
}

/* Whether hierarchy i has step groups (v1: only the listing one; see the top). */
static bool has_steps(const struct wrk_cg *cg, int i)
{
    return cg->mode != WRK_CG_V1 || i == list_hier(cg);
}

/* BASE/job_ID, or with step >= 0 BASE/job_ID/step_STEP. */
static int group_dir(const struct hier *h, uint64_t job_id, long step, char *out, size_t size)
{
    int n = step < 0 ? snprintf(out, size, "%s/job_%llu", h->base, (unsigned long long)job_id)
                     : snprintf(out, size, "%s/job_%llu/step_%ld", h->base,
                                (unsigned long long)job_id, step);

    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int job_dir(const struct hier *h, uint64_t job_id, char *out, size_t size)
{
    return group_dir(h, job_id, -1, out, size);
}

/* Writes value into file of the job's group in hierarchy i (none when i < 0). */
static int set_value(int i, const char *dir_of_h[], const char *file, const char *value)
{
    char path[PATH_MAX];

    if (i < 0)
        return 0;
    if (join(path, sizeof(path), dir_of_h[i], file) < 0)
        return -ENAMETOOLONG;
    return write_file(path, value);
}

static void cpu_list(const struct wrk_cg_limits *lim, char *out, size_t size)
{
    size_t len = 0;

    out[0] = '\0';
    for (int i = 0; i < lim->ncpus && len + 12 < size; i++)
        len += (size_t)snprintf(out + len, size - len, "%s%d", i > 0 ? "," : "", lim->cpus[i]);
}

/* The limits of a group just made. */
static int apply_limits(const struct wrk_cg *cg, const char *dirs[],
                        const struct wrk_cg_limits *lim, struct gs_buf *why)
{
    char value[8192];
    const char *file = "";
    int rc = 0;

    if (lim->mem_bytes > 0) {
        snprintf(value, sizeof(value), "%llu", (unsigned long long)lim->mem_bytes);
        file = cg->mode == WRK_CG_V1 ? "memory.limit_in_bytes" : "memory.max";
        rc = set_value(cg->memory, dirs, file, value);
    }
    if (rc == 0 && lim->pids_max > 0) {
        snprintf(value, sizeof(value), "%llu", (unsigned long long)lim->pids_max);
        file = "pids.max";
        rc = set_value(cg->pids, dirs, file, value);
    }
    if (rc == 0 && lim->ncpus > 0) {
        cpu_list(lim, value, sizeof(value));
        file = "cpuset.cpus";
        rc = set_value(cg->cpuset, dirs, file, value);
    }
    for (int i = 0; rc == 0 && cg->mode == WRK_CG_V1 && i < lim->ndeny_gpus; i++) {
        snprintf(value, sizeof(value), "c %d:%u rwm", WRK_CG_NVIDIA_MAJOR, lim->deny_gpus[i]);
        file = "devices.deny";
        rc = set_value(cg->devices, dirs, file, value);
    }
    if (rc < 0) {
        gs_buf_printf(why, "%s: %s", file, strerror(-rc));
        return rc;
    }
    if (cg->mode == WRK_CG_V2 && cg->bpf_devices && lim->ndeny_gpus > 0) {
        int fd = open(dirs[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0)
            rc = -errno;
        else
            rc = wrk_devbpf_deny(fd, WRK_CG_NVIDIA_MAJOR, lim->deny_gpus, lim->ndeny_gpus, why);
        if (fd < 0)
            gs_buf_printf(why, "%s: %s", dirs[0], strerror(-rc));
        else
            close(fd);
    }
    return rc;
}

/* Makes the job's group (step < 0) or a step's in every hierarchy that has them, the paths
 * a task joins into dirs (a hierarchy without step groups: the job's, made before);
 * *created: whether some level was new. */
static int make_group(struct wrk_cg *cg, uint64_t job_id, long step, char dirs_buf[][PATH_MAX],
                      const char *dirs[], bool *created, struct gs_buf *why)
{
    bool made = false;
    int rc = 0;

    *created = false;
    for (int i = 0; i < cg->nh && rc == 0; i++) {
        bool own = step < 0 || has_steps(cg, i);

        made = false;
        rc = group_dir(&cg->h[i], job_id, own ? step : -1, dirs_buf[i], PATH_MAX);
        if (rc == 0 && own)
            rc = make_dir(cg, &cg->h[i], dirs_buf[i], &made);
        *created = *created || made;
        dirs[i] = dirs_buf[i];
        if (rc < 0)
            gs_buf_printf(why, "%s: %s", dirs_buf[i], strerror(-rc));
    }
    return rc;
}

int wrk_cg_job_enter(struct wrk_cg *cg, uint64_t job_id, uint32_t step,
                     const struct wrk_cg_limits *lim, int fds[WRK_CG_MAX_FDS], struct gs_buf *why)
{
    char dirs_buf[WRK_CG_MAX_FDS][PATH_MAX], path[PATH_MAX];
    const char *dirs[WRK_CG_MAX_FDS];
    bool created = false;
    int n = 0, rc;

    if (cg == NULL || cg->mode == WRK_CG_NONE)
        return 0;
    /* The job's group holds the limits, made before its steps': a v1 devices or cpuset group
     * starts with its parent's settings, and limits on v2 hold for the whole subtree. */
    rc = make_group(cg, job_id, -1, dirs_buf, dirs, &created, why);
    if (rc == 0 && created && lim != NULL)
        rc = apply_limits(cg, dirs, lim, why);
    if (rc == 0)
        rc = make_group(cg, job_id, step, dirs_buf, dirs, &created, why);
    for (int i = 0; i < cg->nh && rc == 0; i++) {
        if (join(path, sizeof(path), dirs[i], "cgroup.procs") < 0) {
            rc = -ENAMETOOLONG;
            break;
        }
        fds[n] = open(path, O_WRONLY | O_CLOEXEC);
        if (fds[n] < 0) {
            rc = -errno;
            gs_buf_printf(why, "%s: %s", path, strerror(errno));
            break;
        }
        n++;
    }
    if (rc < 0) {
        while (n > 0)
            close(fds[--n]);
        return rc;
    }
    return n;
}

/* Appends the pids listed in dir/cgroup.procs to out[*n..max); 0 or -errno. */
static int read_procs(const char *dir, char *text, int *out, int *n, int max)
{
    char path[PATH_MAX], *p, *end;
    ssize_t len;

    if (join(path, sizeof(path), dir, "cgroup.procs") < 0)
        return -ENAMETOOLONG;
    len = gs_path_read_small(path, text, MAX_PIDS * 12);
    if (len < 0)
        return (int)len;
    for (p = text; *p != '\0' && *n < max; p = end) {
        long pid = strtol(p, &end, 10);

        if (end == p)
            break;
        if (pid > 0)
            out[(*n)++] = (int)pid;
        while (*end == '\n' || *end == ' ')
            end++;
    }
    return 0;
}

/* The processes in the group dir and in its step groups (one level below). */
static int group_pids(const char *dir, bool with_steps, int *out, int max)
{
    char *text = malloc(MAX_PIDS * 12), sub[PATH_MAX];
    DIR *d = NULL;
    struct dirent *e;
    int n = 0, rc;

    if (text == NULL)
        return -ENOMEM;
    rc = read_procs(dir, text, out, &n, max);
    if (rc == 0 && with_steps)
        d = opendir(dir);
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "step_", 5) == 0 && join(sub, sizeof(sub), dir, e->d_name) == 0)
            (void)read_procs(sub, text, out, &n, max); /* a step group may go meanwhile */
    }
    if (d != NULL)
        closedir(d);
    free(text);
    return rc < 0 ? rc : n;
}

int wrk_cg_job_pids(const struct wrk_cg *cg, uint64_t job_id, int *out, int max)
{
    char dir[PATH_MAX];

    if (cg == NULL || cg->mode == WRK_CG_NONE)
        return 0;
    if (job_dir(&cg->h[list_hier(cg)], job_id, dir, sizeof(dir)) < 0)
        return -ENAMETOOLONG;
    return group_pids(dir, true, out, max);
}

/* Freezes (true) or thaws the job's group, where a freezer is there. */
static void freeze(const struct wrk_cg *cg, const char *dirs[], bool frozen)
{
    if (cg->mode == WRK_CG_V1 && cg->freezer >= 0)
        (void)set_value(cg->freezer, dirs, "freezer.state", frozen ? "FROZEN" : "THAWED");
    else if (cg->mode == WRK_CG_V2)
        (void)set_value(0, dirs, "cgroup.freeze", frozen ? "1" : "0");
}

/* Removes dir, first its step groups when it has some left (the job's, with_steps); waits
 * for EBUSY ones (killed processes still leaving) while *waited allows. 0 or -EBUSY. */
static int remove_group(const char *dir, bool with_steps, int *waited)
{
    char sub[PATH_MAX];
    DIR *d;
    struct dirent *e;

    /* Most groups have no step group left (v1 makes them in one hierarchy): no listing. */
    if (rmdir(dir) == 0 || errno == ENOENT)
        return 0;
    d = with_steps ? opendir(dir) : NULL;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "step_", 5) != 0 || join(sub, sizeof(sub), dir, e->d_name) < 0)
            continue;
        while (rmdir(sub) < 0 && errno == EBUSY && *waited < END_WAIT_MS) {
            sleep_ms(2);
            *waited += 2;
        }
    }
    if (d != NULL)
        closedir(d);
    while (rmdir(dir) < 0 && errno == EBUSY && *waited < END_WAIT_MS) {
        sleep_ms(2);
        *waited += 2;
    }
    return exists(dir) ? -EBUSY : 0;
}

/* Kills everything in the job's group (step < 0, its steps' included) or a step's, and
 * removes it: see wrk_cg_job_end. */
static int end_group(struct wrk_cg *cg, uint64_t job_id, long step)
{
    char dirs_buf[WRK_CG_MAX_FDS][PATH_MAX];
    const char *dirs[WRK_CG_MAX_FDS];
    int pids[256], seen[256], killed = 0, n, rc = 0, waited = 0, li;

    if (cg == NULL || cg->mode == WRK_CG_NONE)
        return 0;
    for (int i = 0; i < cg->nh; i++) {
        if (group_dir(&cg->h[i], job_id, step >= 0 && !has_steps(cg, i) ? -1 : step, dirs_buf[i],
                      sizeof(dirs_buf[i])) < 0)
            return -ENAMETOOLONG;
        dirs[i] = dirs_buf[i];
    }
    li = list_hier(cg);
    if (!exists(dirs[li]))
        return 0;
    /* freezing a group freezes its descendants (v1 freezer and v2 alike) */
    while ((n = group_pids(dirs[li], step < 0, pids, 256)) > 0 && waited < END_WAIT_MS) {
        freeze(cg, dirs, true);
        n = group_pids(dirs[li], step < 0, pids, 256);
        for (int i = 0; i < n; i++) {
            bool again = false;

            if (kill(pids[i], SIGKILL) < 0)
                continue;
            /* A process killed in an earlier round may still be listed while it exits:
             * counted once. */
            for (int k = 0; k < killed && k < 256; k++)
                again = again || seen[k] == pids[i];
            if (!again && killed < 256)
                seen[killed] = pids[i];
            killed += !again;
        }
        freeze(cg, dirs, false);
        sleep_ms(2);
        waited += 2;
    }
    for (int i = cg->nh - 1; i >= 0; i--) {
        if (step >= 0 && !has_steps(cg, i))
            continue; /* dirs[i] is the job's group, which goes on */
        if (remove_group(dirs[i], step < 0, &waited) < 0)
            rc = -EBUSY;
    }
    return rc < 0 ? rc : killed;
}

int wrk_cg_job_end(struct wrk_cg *cg, uint64_t job_id)
{
    return end_group(cg, job_id, -1);
}

int wrk_cg_step_end(struct wrk_cg *cg, uint64_t job_id, uint32_t step)
{
    return end_group(cg, job_id, step);
}

/* The oom_kill count of the group dir (memory.oom_control on v1, memory.events on v2). */
static uint64_t oom_kills_in(const struct wrk_cg *cg, const char *dir)
{
    char path[PATH_MAX], text[1024];
    const char *line;

    if (join(path, sizeof(path), dir,
             cg->mode == WRK_CG_V1 ? "memory.oom_control" : "memory.events") < 0 ||
        gs_path_read_small(path, text, sizeof(text)) < 0)
        return 0;
    line = strstr(text, "oom_kill ");
    return line != NULL ? strtoull(line + strlen("oom_kill "), NULL, 10) : 0;
}

uint64_t wrk_cg_job_oom_kills(const struct wrk_cg *cg, uint64_t job_id)
{
    char dir[PATH_MAX], sub[PATH_MAX];
    uint64_t n;
    DIR *d;
    struct dirent *e;

    if (cg == NULL || cg->memory < 0 || job_dir(&cg->h[cg->memory], job_id, dir, sizeof(dir)) < 0)
        return 0;
    n = oom_kills_in(cg, dir);
    /* v2 counts a kill in every ancestor up to the root; v1 only in the victim's own group,
     * which is the job's unless the memory hierarchy has the step groups (no freezer) */
    if (cg->mode != WRK_CG_V1 || !has_steps(cg, cg->memory))
        return n;
    d = opendir(dir);
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "step_", 5) == 0 && join(sub, sizeof(sub), dir, e->d_name) == 0)
            n += oom_kills_in(cg, sub);
    }
    if (d != NULL)
        closedir(d);
    return n;
}
