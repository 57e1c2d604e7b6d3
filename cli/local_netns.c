/*
 * local_netns.c: the namespaces, bridge and links of a `gsched up --netns` cluster, made
 * and removed with iproute2's `ip -batch` (one process for this machine's side, one per
 * namespace for its inside), and the child's side of starting a daemon in them (see
 * local_netns.h). `ip` does the netlink work: it is on every Debian system, and what it
 * prints when something is refused is what an operator knows how to read.
 */
#define _GNU_SOURCE /* setns, unshare, CLONE_NEW* */

#include "cli/local_netns.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/error.h"
#include "common/path.h"

#define NETNS_DIR "/run/netns"
#define IP_ERR_MAX 2048
#define NODE_HOST_BASE 10u /* node I is .(10+I); gschedd .1; the bridge .254 */
#define BRIDGE_HOST 254u

static const char *const ip_paths[] = {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"};

/* FNV-1a of the state directory: the tag, and where the subnet search starts. */
static uint32_t dir_hash(const char *path)
{
    uint32_t h = 2166136261u;

    for (const char *p = path; *p != '\0'; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    return h;
}

static void ns_name(const struct cli_netns *n, unsigned i, char *out, size_t size)
{
    if (i == 0)
        snprintf(out, size, "gsched-%s-sched", n->tag);
    else
        snprintf(out, size, "gsched-%s-node%u", n->tag, i);
}

void cli_netns_addr(const struct cli_netns *n, unsigned i, char *out, size_t size)
{
    snprintf(out, size, "%u.%u.%u.%u", n->net[0], n->net[1], n->net[2],
             i == 0 ? 1u : NODE_HOST_BASE + i);
}

static int find_ip(struct cli_netns *n)
{
    const char *path = getenv("PATH");

    for (size_t k = 0; k < sizeof(ip_paths) / sizeof(ip_paths[0]); k++) {
        if (access(ip_paths[k], X_OK) == 0) {
            snprintf(n->ip, sizeof(n->ip), "%s", ip_paths[k]);
            return 0;
        }
    }
    while (path != NULL && *path != '\0') {
        size_t len = strcspn(path, ":");

        snprintf(n->ip, sizeof(n->ip), "%.*s/ip", (int)len, path);
        if (len > 0 && access(n->ip, X_OK) == 0)
            return 0;
        path += len + (path[len] == ':');
    }
    n->ip[0] = '\0';
    return -ENOENT;
}

/* Whether an IPv4 address of this machine's namespace lies in a.b.c.0/24. */
static bool subnet_in_use(const struct ifaddrs *list, unsigned a, unsigned b, unsigned c)
{
    uint32_t net = (a << 24) | (b << 16) | (c << 8);

    for (const struct ifaddrs *ifa = list; ifa != NULL; ifa = ifa->ifa_next) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)ifa->ifa_addr;

        if (sin != NULL && sin->sin_family == AF_INET &&
            (ntohl(sin->sin_addr.s_addr) & 0xffffff00u) == net)
            return true;
    }
    return false;
}

/* "A.B.C" or "A.B.C.0/24" into n->net; false when it is neither. */
static bool parse_subnet(const char *s, struct cli_netns *n)
{
    unsigned v[3];
    int used = 0;

    if (sscanf(s, "%3u.%3u.%3u%n", &v[0], &v[1], &v[2], &used) != 3 || v[0] > 255 || v[1] > 255 ||
        v[2] > 255 || v[0] == 0 || v[0] >= 224 || v[0] == 127)
        return false;
    if (s[used] != '\0' && strcmp(s + used, ".0/24") != 0)
        return false;
    memcpy(n->net, v, sizeof(v));
    return true;
}

static int pick_subnet(struct cli_netns *n, uint32_t h, const char *subnet)
{
    struct ifaddrs *list = NULL;
    int rc = -EADDRINUSE;

    if (subnet != NULL && !parse_subnet(subnet, n)) {
        fprintf(stderr, "gsched up: --subnet wants a /24 as A.B.C or A.B.C.0/24, not '%s'\n",
                subnet);
        return -EINVAL;
    }
    if (getifaddrs(&list) < 0) {
        rc = -errno;
        fprintf(stderr, "gsched up: cannot list this machine's addresses: %s\n", gs_strerror(rc));
        return rc;
    }
    if (subnet != NULL) {
        rc = subnet_in_use(list, n->net[0], n->net[1], n->net[2]) ? -EADDRINUSE : 0;
    } else {
        for (unsigned k = 0; k < 100 && rc < 0; k++) {
            unsigned b = 100 + ((h >> 8) + k) % 100, c = h & 0xffu;

            if (!subnet_in_use(list, 10, b, c)) {
                n->net[0] = 10, n->net[1] = b, n->net[2] = c;
                rc = 0;
            }
        }
    }
    freeifaddrs(list);
    if (rc < 0)
        fprintf(stderr, "gsched up: %s is in use on this machine; name a free /24 with --subnet\n",
                subnet != NULL ? subnet : "every 10.100-199.x subnet tried");
    return rc;
}

int cli_netns_plan(struct cli_netns *n, const struct cli_local *l, unsigned workers,
                   const char *subnet)
{
    uint32_t h = dir_hash(l->dir);

    *n = (struct cli_netns){.workers = workers};
    if (geteuid() != 0) {
        fprintf(stderr, "gsched up: --netns needs root (namespaces, a bridge and veth pairs "
                        "need CAP_NET_ADMIN); without it every node shares this machine's "
                        "address\n");
        return -EPERM;
    }
    if (find_ip(n) < 0) {
        fprintf(stderr, "gsched up: --netns needs iproute2's ip command (Debian: iproute2)\n");
        return -ENOENT;
    }
    snprintf(n->tag, sizeof(n->tag), "%06x", (unsigned)(h & 0xffffffu));
    if (cli_local_path(l, CLI_NETNS_HOSTS, n->hosts, sizeof(n->hosts)) < 0)
        return -ENAMETOOLONG;
    return pick_subnet(n, h, subnet);
}

/*
 * Runs `ip [-n NS] [-force] -batch -` with text on its stdin. Its stderr goes into err
 * (when not NULL) for the caller to print. Returns 0 when ip exits 0, else -EIO (or
 * -errno when it could not run).
 */
static int ip_batch(const struct cli_netns *n, const char *ns, bool force, const char *text,
                    char *err, size_t err_size)
{
    int in[2], out[2], status = 0, rc = 0;
    const char *argv[8];
    size_t len = strlen(text), off = 0, got = 0;
    int k = 0;
    pid_t pid;

    argv[k++] = n->ip;
    if (ns != NULL) {
        argv[k++] = "-n";
        argv[k++] = ns;
    }
    if (force)
        argv[k++] = "-force";
    argv[k++] = "-batch";
    argv[k++] = "-";
    argv[k] = NULL;
    if (pipe2(in, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(out, O_CLOEXEC) < 0) {
        rc = -errno;
        close(in[0]);
        close(in[1]);
        return rc;
    }
    pid = fork();
    if (pid == 0) {
        if (dup2(in[0], STDIN_FILENO) >= 0 && dup2(out[1], STDOUT_FILENO) >= 0 &&
            dup2(out[1], STDERR_FILENO) >= 0)
            execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (pid < 0)
        rc = -errno;
    close(in[0]);
    close(out[1]);
    while (pid > 0 && off < len) {
        ssize_t w = write(in[1], text + off, len - off);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(in[1]);
    for (;;) {
        char chunk[512];
        ssize_t r = read(out[0], chunk, sizeof(chunk));

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        for (ssize_t i = 0; i < r && err != NULL && got + 1 < err_size; i++)
            err[got++] = chunk[i];
    }
    if (err != NULL && err_size > 0)
        err[got] = '\0';
    close(out[0]);
    if (pid > 0 && waitpid(pid, &status, 0) < 0)
        rc = -errno;
    if (rc == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
        rc = -EIO;
    return rc;
}

/* ip_batch that prints ip's complaint; what says what was being made. */
static int ip_run(const struct cli_netns *n, const char *ns, const char *text, const char *what)
{
    char err[IP_ERR_MAX];
    int rc = ip_batch(n, ns, false, text, err, sizeof(err));

    if (rc < 0)
        fprintf(stderr, "gsched up: cannot make %s%s%s: %s%s", what, ns != NULL ? " in " : "",
                ns != NULL ? ns : "", err[0] != '\0' ? err : gs_strerror(rc),
                err[0] != '\0' && err[strlen(err) - 1] == '\n' ? "" : "\n");
    return rc;
}

/* This machine's side: the namespaces, the bridge with its address, each veth pair with
 * its bridge end up and its other end moved into its namespace. */
static int host_side(const struct cli_netns *n, struct gs_buf *b)
{
    char ns[64];
    bool nomem = false;

    for (unsigned i = 0; i <= n->workers; i++) {
        ns_name(n, i, ns, sizeof(ns));
        nomem |= gs_buf_printf(b, "netns add %s\n", ns) < 0;
    }
    nomem |= gs_buf_printf(b, "link add gs%sbr type bridge\n", n->tag) < 0;
    nomem |= gs_buf_printf(b, "addr add %u.%u.%u.%u/24 dev gs%sbr\n", n->net[0], n->net[1],
                           n->net[2], BRIDGE_HOST, n->tag) < 0;
    nomem |= gs_buf_printf(b, "link set gs%sbr up\n", n->tag) < 0;
    for (unsigned i = 0; i <= n->workers; i++) {
        ns_name(n, i, ns, sizeof(ns));
        nomem |= gs_buf_printf(b, "link add gs%sh%u type veth peer name gs%sp%u\n", n->tag, i,
                               n->tag, i) < 0;
        nomem |= gs_buf_printf(b, "link set gs%sp%u netns %s\n", n->tag, i, ns) < 0;
        nomem |= gs_buf_printf(b, "link set gs%sh%u master gs%sbr up\n", n->tag, i, n->tag) < 0;
    }
    if (nomem)
        return -ENOMEM;
    return ip_run(n, NULL, b->data, "the cluster's namespaces and bridge");
}

/* Daemon i's side: its veth end as eth0 with its address, and loopback, up. */
static int ns_side(const struct cli_netns *n, unsigned i, struct gs_buf *b)
{
    char ns[64], addr[32];

    ns_name(n, i, ns, sizeof(ns));
    cli_netns_addr(n, i, addr, sizeof(addr));
    gs_buf_reset(b);
    if (gs_buf_printf(b,
                      "link set gs%sp%u name eth0\naddr add %s/24 dev eth0\n"
                      "link set eth0 up\nlink set lo up\n",
                      n->tag, i, addr) < 0)
        return -ENOMEM;
    return ip_run(n, ns, b->data, "the link");
}

static int write_files(const struct cli_netns *n, const struct cli_local *l, struct gs_buf *b)
{
    char path[PATH_MAX], addr[32];
    bool nomem = false;
    int rc;

    gs_buf_reset(b);
    nomem |= gs_buf_printf(b, "# Written by `gsched up --netns`: every node's /etc/hosts.\n"
                              "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    for (unsigned i = 0; i <= n->workers; i++) {
        cli_netns_addr(n, i, addr, sizeof(addr));
        if (i == 0)
            nomem |= gs_buf_printf(b, "%s\tgschedd\n", addr) < 0;
        else
            nomem |= gs_buf_printf(b, "%s\tnode%u\n", addr, i) < 0;
    }
    rc = nomem ? -ENOMEM : gs_path_replace(n->hosts, b->data, b->len, 0644);
    if (rc < 0) {
        fprintf(stderr, "gsched up: cannot write %s: %s\n", n->hosts, gs_strerror(rc));
        return rc;
    }
    gs_buf_reset(b);
    rc = gs_buf_printf(b, "tag %s\nsubnet %u.%u.%u\nworkers %u\n", n->tag, n->net[0], n->net[1],
                       n->net[2], n->workers);
    if (rc >= 0)
        rc = cli_local_path(l, CLI_NETNS_FILE, path, sizeof(path));
    if (rc == 0)
        rc = gs_path_replace(path, b->data, b->len, 0600);
    if (rc < 0)
        fprintf(stderr, "gsched up: cannot write %s: %s\n", path, gs_strerror(rc));
    return rc;
}

int cli_netns_create(struct cli_netns *n, const struct cli_local *l)
{
    struct gs_buf b;
    char br[80];
    int rc;

    gs_buf_init(&b);
    /* DIR/netns first: whatever the next steps make, `down` (or the cleanup below) knows
     * its names. */
    rc = write_files(n, l, &b);
    if (rc == 0) {
        gs_buf_reset(&b);
        rc = host_side(n, &b);
    }
    for (unsigned i = 0; i <= n->workers && rc == 0; i++)
        rc = ns_side(n, i, &b);
    if (rc == 0) {
        /* Bridged frames must not meet a host firewall's FORWARD rules (br_netfilter, where
         * loaded); where the knob does not exist there is nothing to turn off. */
        snprintf(br, sizeof(br), "link set gs%sbr type bridge nf_call_iptables 0\n", n->tag);
        ip_batch(n, NULL, false, br, NULL, 0);
    }
    gs_buf_release(&b);
    if (rc < 0)
        cli_netns_destroy(n, l);
    return rc;
}

int cli_netns_load(struct cli_netns *n, const struct cli_local *l)
{
    char path[PATH_MAX], tag[16] = "";
    unsigned a, b, c, workers;
    FILE *f;
    int fields;

    if (cli_local_path(l, CLI_NETNS_FILE, path, sizeof(path)) < 0)
        return -ENAMETOOLONG;
    f = fopen(path, "r");
    if (f == NULL)
        return errno == ENOENT ? -ENOENT : -errno;
    fields = fscanf(f, "tag %6s subnet %u.%u.%u workers %u", tag, &a, &b, &c, &workers);
    fclose(f);
    *n = (struct cli_netns){0};
    if (fields != 5 || strlen(tag) != 6 || a > 255 || b > 255 || c > 255 ||
        workers > CLI_LOCAL_MAX_WORKERS) {
        fprintf(stderr,
                "gsched %s: %s is damaged; remove the namespaces gsched-*-sched/node* "
                "with `ip netns del` and the file by hand\n",
                l->cmd, path);
        return -EINVAL;
    }
    memcpy(n->tag, tag, 7); /* six hex digits and the NUL, checked above */
    n->net[0] = a, n->net[1] = b, n->net[2] = c;
    n->workers = workers;
    if (cli_local_path(l, CLI_NETNS_HOSTS, n->hosts, sizeof(n->hosts)) < 0)
        return -ENAMETOOLONG;
    return find_ip(n) < 0 ? -ENOENT : 0;
}

/* SIGKILL to every process whose network namespace is the one mounted at path. */
static void kill_inside(const char *path)
{
    struct stat ns, st;
    struct dirent *e;
    DIR *proc;

    if (stat(path, &ns) < 0 || (proc = opendir("/proc")) == NULL)
        return;
    while ((e = readdir(proc)) != NULL) {
        char link[64];
        char *end;
        long pid = strtol(e->d_name, &end, 10);

        if (*end != '\0' || pid <= 1)
            continue;
        snprintf(link, sizeof(link), "/proc/%ld/ns/net", pid);
        if (stat(link, &st) == 0 && st.st_ino == ns.st_ino && st.st_dev == ns.st_dev)
            kill((pid_t)pid, SIGKILL);
    }
    closedir(proc);
}

int cli_netns_destroy(const struct cli_netns *n, const struct cli_local *l)
{
    char ns[64], path[PATH_MAX], name[IF_NAMESIZE + 8];
    struct gs_buf b;
    bool nomem = false;
    int left = 0;

    gs_buf_init(&b);
    for (unsigned i = 0; i <= n->workers; i++) {
        ns_name(n, i, ns, sizeof(ns));
        snprintf(path, sizeof(path), "%s/%s", NETNS_DIR, ns);
        kill_inside(path);
        nomem |= gs_buf_printf(&b, "netns del %s\nlink del gs%sh%u\n", ns, n->tag, i) < 0;
    }
    nomem |= gs_buf_printf(&b, "link del gs%sbr\n", n->tag) < 0;
    /* -force: each line whatever the others did; what is already gone fails harmlessly,
     * and what is left is checked below. */
    if (!nomem)
        ip_batch(n, NULL, true, b.data, NULL, 0);
    gs_buf_release(&b);
    for (unsigned i = 0; i <= n->workers; i++) {
        ns_name(n, i, ns, sizeof(ns));
        snprintf(path, sizeof(path), "%s/%s", NETNS_DIR, ns);
        if (access(path, F_OK) == 0) {
            fprintf(stderr, "gsched %s: namespace %s is left\n", l->cmd, ns);
            left++;
        }
    }
    snprintf(name, sizeof(name), "gs%sbr", n->tag);
    if (if_nametoindex(name) != 0) {
        fprintf(stderr, "gsched %s: bridge %s is left\n", l->cmd, name);
        left++;
    }
    if (left > 0)
        return -EBUSY;
    if (cli_local_path(l, CLI_NETNS_FILE, path, sizeof(path)) == 0)
        unlink(path);
    return 0;
}

void cli_netns_prepare_enter(const struct cli_netns *n, unsigned i, struct cli_netns_enter *e)
{
    char ns[64];

    ns_name(n, i, ns, sizeof(ns));
    snprintf(e->path, sizeof(e->path), "%s/%s", NETNS_DIR, ns);
    if (i == 0)
        snprintf(e->hostname, sizeof(e->hostname), "gschedd");
    else
        snprintf(e->hostname, sizeof(e->hostname), "node%u", i);
    e->hosts = n->hosts;
}

int cli_netns_enter(const struct cli_netns_enter *e)
{
    int fd = open(e->path, O_RDONLY | O_CLOEXEC), rc = 0;

    if (fd < 0)
        return -errno;
    if (setns(fd, CLONE_NEWNET) < 0)
        rc = -errno;
    close(fd);
    /* Slave propagation: this machine's later mounts still reach the daemon, the hosts
     * file's bind mount stays in its namespace. */
    if (rc == 0 && (unshare(CLONE_NEWUTS | CLONE_NEWNS) < 0 ||
                    mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0 ||
                    mount(e->hosts, "/etc/hosts", NULL, MS_BIND, NULL) < 0 ||
                    sethostname(e->hostname, strlen(e->hostname)) < 0))
        rc = -errno;
    return rc;
}
