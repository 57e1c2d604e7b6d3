/*
 * cmd_sbcast.c: `sbcast [-f] [-p] [-t SECONDS] [-j JOBID] SOURCE DEST`, Slurm's way for a batch
 * script to copy a file (a program, its input) to every node of its job, onto storage local
 * to each, without every node reading it from a shared filesystem at once.
 *
 * It runs inside a job, on one of its nodes. It opens SOURCE as its user, listens on a TCP
 * port of its own, and runs an srun step of one task per node of the job (--overlap, so it
 * runs beside whatever the job runs): each task is `gsched sbcast --receive HOST:PORT DEST`,
 * as the job's user, which connects back, proves it holds the step's token (32 random bytes,
 * in the step's environment only, not on a command line), reads the file's size, mode and
 * times and then its bytes, and writes them to a temporary file beside DEST, synced, then
 * renamed over it: a node has the whole file or its old one, never part of one. Each
 * receiver answers "ok" or why not; the sender serves them all at once (sbcast_serve.c)
 * and exits 1 when any node failed.
 *
 * DEST keeps SOURCE's permission bits (a program stays runnable); -p also keeps its access
 * and modification times. An existing DEST is refused unless -f. Slurm's -C (compression),
 * -F (fanout) and -s (block size) are taken and have no effect.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli/client.h"
#include "common/clock.h"
#include "common/path.h"
#include "proto/auth.h"
#include "slurm/commands.h"
#include "slurm/sbcast.h"
#include "slurm/slurm_cmd.h"
#include "slurm/slurm_fmt.h"

#define CMD "sbcast"

struct sbcast {
    const char *source, *dest, *job, *receive;
    bool force, preserve;
    unsigned timeout_s;
};

static const char usage_text[] =
    "Usage: sbcast [-f] [-p] [-t SECONDS] [-j JOBID] SOURCE DEST\n"
    "  copies SOURCE to DEST on every node of the job (run inside the job: a batch script)\n"
    "  -f, --force         overwrite DEST where it exists\n"
    "  -p, --preserve      keep SOURCE's access and modification times too (its mode is\n"
    "                      always kept)\n"
    "  -t, --timeout=S     give up on a node after S seconds without progress (default 60)\n"
    "  -j, --jobid=ID      the job (default: $SLURM_JOB_ID)\n"
    "  -C, -F, -s          Slurm's compression, fanout and block size: accepted, no effect\n";

/* --- both ends -------------------------------------------------------------------------------- */

static void set_timeouts(int fd, unsigned seconds)
{
    struct timeval tv = {.tv_sec = seconds};

    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Reads one line (newline cut) into buf; 0, or -errno / -EPROTO (too long, cut short). */
static int read_line(int fd, char *buf, size_t size)
{
    size_t n = 0;

    for (;;) {
        ssize_t r = read(fd, buf + n, 1);

        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return -EPROTO;
        if (buf[n] == '\n') {
            buf[n] = '\0';
            return 0;
        }
        if (++n == size)
            return -EPROTO;
    }
}

/* --- the receiving end: one task on each node ------------------------------------------------ */

static int connect_to(const char *where, unsigned timeout_s)
{
    char host[256];
    const char *colon = strrchr(where, ':');
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int fd = -1, rc;

    if (colon == NULL || (size_t)(colon - where) >= sizeof(host))
        return -EINVAL;
    memcpy(host, where, (size_t)(colon - where));
    host[colon - where] = '\0';
    rc = getaddrinfo(host, colon + 1, &hints, &ai);
    if (rc != 0)
        return -EHOSTUNREACH;
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        set_timeouts(fd, timeout_s);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
            rc = -errno;
            close(fd);
            fd = rc;
        }
    } else {
        fd = -errno;
    }
    freeaddrinfo(ai);
    return fd;
}

/* Copies size bytes from the sender into a temporary file beside dest, then onto dest. */
static int take_file(const struct sbcast *o, int fd, uint64_t size, mode_t mode,
                     const struct timespec *times, char *why, size_t why_size)
{
    char tmp[PATH_MAX], buf[1 << 16];
    int out, rc = 0;

    if (snprintf(tmp, sizeof(tmp), "%s.sbcast-XXXXXX", o->dest) >= (int)sizeof(tmp)) {
        snprintf(why, why_size, "%.300s: path too long", o->dest);
        return -ENAMETOOLONG;
    }
    out = mkstemp(tmp);
    if (out < 0) {
        rc = -errno;
        snprintf(why, why_size, "cannot create a file beside %.300s: %s", o->dest, strerror(-rc));
        return rc;
    }
    while (rc == 0 && size > 0) {
        ssize_t r = read(fd, buf, size < sizeof(buf) ? (size_t)size : sizeof(buf));

        if (r <= 0) {
            rc = r == 0 ? -EPROTO : -errno;
            snprintf(why, why_size, "the file was cut short: %s",
                     r == 0 ? "the sender closed" : strerror(errno));
        } else if ((rc = gs_write_all(out, buf, (size_t)r)) < 0) {
            snprintf(why, why_size, "writing %.300s: %s", tmp, strerror(-rc));
        }
        size -= r > 0 ? (uint64_t)r : 0;
    }
    if (rc == 0 &&
        (fchmod(out, mode) < 0 || (o->preserve && futimens(out, times) < 0) || fsync(out) < 0)) {
        rc = -errno;
        snprintf(why, why_size, "%.300s: %s", tmp, strerror(errno));
    }
    if (close(out) < 0 && rc == 0) {
        rc = -errno;
        snprintf(why, why_size, "%.300s: %s", tmp, strerror(errno));
    }
    if (rc == 0 && rename(tmp, o->dest) < 0) {
        rc = -errno;
        snprintf(why, why_size, "rename to %.300s: %s", o->dest, strerror(errno));
    }
    if (rc < 0)
        unlink(tmp);
    return rc;
}

static int receive(const struct sbcast *o)
{
    const char *token = getenv(SBCAST_TOKEN_VAR), *node = getenv("SLURMD_NODENAME");
    char line[SBCAST_LINE_MAX], why[SBCAST_LINE_MAX + 64] = "";
    uint64_t size = 0;
    unsigned mode = 0;
    long long sec[2] = {0, 0};
    long nsec[2] = {0, 0};
    struct timespec times[2];
    struct stat st;
    int fd, rc;

    if (token == NULL || strlen(token) != SBCAST_TOKEN_HEX) {
        fprintf(stderr, "sbcast: error: --receive is sbcast's own (no " SBCAST_TOKEN_VAR ")\n");
        return 1;
    }
    if (!o->force && lstat(o->dest, &st) == 0) { /* before the sender sends it all */
        fprintf(stderr, "sbcast: error: %s: %s exists (sbcast -f overwrites it)\n",
                node != NULL ? node : "?", o->dest);
        return 1;
    }
    fd = connect_to(o->receive, o->timeout_s);
    if (fd < 0) {
        fprintf(stderr, "sbcast: error: %s: cannot reach the sender at %s: %s\n",
                node != NULL ? node : "?", o->receive, strerror(-fd));
        return 1;
    }
    rc = gs_write_all(fd, token, SBCAST_TOKEN_HEX);
    if (rc == 0)
        rc = gs_write_all(fd, "\n", 1);
    if (rc == 0)
        rc = read_line(fd, line, sizeof(line));
    if (rc == 0 && sscanf(line, "%" SCNu64 " %o %lld %ld %lld %ld", &size, &mode, &sec[0], &nsec[0],
                          &sec[1], &nsec[1]) != 6)
        rc = -EPROTO;
    for (int i = 0; i < 2; i++)
        times[i] = (struct timespec){.tv_sec = (time_t)sec[i], .tv_nsec = nsec[i]};
    if (rc < 0)
        snprintf(why, sizeof(why), "no file from the sender: %s", strerror(-rc));
    else
        rc = take_file(o, fd, size, (mode_t)(mode & 07777), times, why, sizeof(why));
    if (rc == 0) {
        rc = gs_write_all(fd, "ok\n", 3);
    } else {
        char answer[sizeof(why) + 16];

        snprintf(answer, sizeof(answer), "error %s\n", why);
        (void)gs_write_all(fd, answer, strlen(answer));
        fprintf(stderr, "sbcast: error: %s: %s\n", node != NULL ? node : "?", why);
    }
    close(fd);
    return rc == 0 ? 0 : 1;
}

/* --- the sending end -------------------------------------------------------------------------- */

/* This node's address, as gschedd knows it (where the job's other nodes reach it). */
static int own_address(const char *node, char *out, size_t size)
{
    Gs__NodesRequest req = GS__NODES_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    char *names[1] = {(char *)node};
    int rc;

    req.names = names;
    req.n_names = 1;
    req.with_topology = true;
    env.body_case = GS__ENVELOPE__BODY_NODES_REQUEST;
    env.nodes_request = &req;
    rc = slurm_call_as(CMD, NULL, &env, GS__ENVELOPE__BODY_NODES_REPLY, NULL, &reply);
    if (rc != 0)
        return -EIO;
    rc = -ENOENT;
    if (reply->nodes_reply->n_nodes == 1 && reply->nodes_reply->nodes[0]->topology != NULL &&
        reply->nodes_reply->nodes[0]->topology->address[0] != '\0') {
        snprintf(out, size, "%s", reply->nodes_reply->nodes[0]->topology->address);
        rc = 0;
    }
    gs_proto_envelope_free(reply);
    return rc;
}

static int listen_any(uint16_t *ret_port)
{
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
    struct sockaddr_in b = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), off = 0;

    /* Both families where the kernel has IPv6 (the node's address may be either). */
    if (fd >= 0 && (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) < 0 ||
                    bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&b, sizeof(b)) < 0) {
            int rc = -errno;

            if (fd >= 0)
                close(fd);
            return rc;
        }
    }
    if (listen(fd, 128) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
        int rc = -errno;

        close(fd);
        return rc;
    }
    *ret_port =
        ntohs(a.sin6_family == AF_INET6 ? a.sin6_port : ((struct sockaddr_in *)&a)->sin_port);
    return fd;
}

/* The step of receivers: one task per node of the job. Runs in a child; its exit status. */
static int run_receivers(const struct sbcast *o, const char *where, const char *token)
{
    const char *nodes = getenv("SLURM_JOB_NUM_NODES");
    char jobopt[64], nopt[32], self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *argv[16];
    int k = 0;

    if (n <= 0 || nodes == NULL || setenv(SBCAST_TOKEN_VAR, token, 1) < 0) {
        fprintf(stderr, "sbcast: error: cannot start the receivers (no SLURM_JOB_NUM_NODES?)\n");
        return 1;
    }
    self[n] = '\0';
    snprintf(jobopt, sizeof(jobopt), "--jobid=%s", o->job);
    snprintf(nopt, sizeof(nopt), "-N%s", nodes);
    argv[k++] = "srun";
    argv[k++] = "--overlap";
    argv[k++] = jobopt;
    argv[k++] = nopt;
    argv[k++] = "--ntasks-per-node=1";
    argv[k++] = self;
    argv[k++] = "sbcast";
    argv[k++] = "--receive";
    argv[k++] = (char *)where;
    if (o->force)
        argv[k++] = "-f";
    if (o->preserve)
        argv[k++] = "-p";
    argv[k++] = "--";
    argv[k++] = (char *)o->dest;
    argv[k] = NULL;
    return cli_cmd_srun(k, argv);
}

static int send_file(const struct sbcast *o)
{
    const char *node = getenv("SLURMD_NODENAME");
    uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE];
    char token[SBCAST_TOKEN_HEX + 1], addr[256], where[300];
    struct stat st;
    uint16_t port = 0;
    int src = -1, lfd = -1, status = 1;
    pid_t pid;

    if (o->job == NULL || node == NULL)
        return slurm_error(CMD, "runs inside a job, on one of its nodes (no SLURM_JOB_ID or "
                                "SLURMD_NODENAME): call it from the batch script");
    src = open(o->source, O_RDONLY | O_CLOEXEC);
    if (src < 0 || fstat(src, &st) < 0 || !S_ISREG(st.st_mode)) {
        slurm_error(CMD, "%s: %s", o->source, src < 0 ? strerror(errno) : "not a regular file");
        goto out;
    }
    if (own_address(node, addr, sizeof(addr)) < 0) {
        slurm_error(CMD, "gschedd knows no address of this node (%s)", node);
        goto out;
    }
    lfd = listen_any(&port);
    if (lfd < 0 || gs_proto_auth_nonce(nonce) < 0) {
        slurm_error(CMD, "cannot listen for the job's nodes: %s", strerror(lfd < 0 ? -lfd : EIO));
        goto out;
    }
    for (size_t i = 0; i < sizeof(nonce); i++)
        snprintf(token + 2 * i, 3, "%02x", nonce[i]);
    snprintf(where, sizeof(where), strchr(addr, ':') != NULL ? "[%s]:%u" : "%s:%u", addr, port);
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        close(lfd);
        close(src);
        _exit(run_receivers(o, where, token));
    }
    if (pid < 0) {
        slurm_error(CMD, "fork: %s", strerror(errno));
        goto out;
    }
    signal(SIGPIPE, SIG_IGN); /* a receiver that gives up is its node's failure, not ours */
    status = sbcast_serve(lfd, pid, src, &st, token, o->timeout_s);
out:
    if (lfd >= 0)
        close(lfd);
    if (src >= 0)
        close(src);
    return status;
}

int cli_cmd_sbcast(int argc, char **argv)
{
    static const struct option longopts[] = {{"force", no_argument, NULL, 'f'},
                                             {"preserve", no_argument, NULL, 'p'},
                                             {"timeout", required_argument, NULL, 't'},
                                             {"jobid", required_argument, NULL, 'j'},
                                             {"compress", optional_argument, NULL, 'C'},
                                             {"fanout", required_argument, NULL, 'F'},
                                             {"size", required_argument, NULL, 's'},
                                             {"receive", required_argument, NULL, 'R'},
                                             {"help", no_argument, NULL, 'h'},
                                             {"usage", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    struct sbcast o = {.job = getenv("SLURM_JOB_ID"), .timeout_s = 60};
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "+fpt:j:C::F:s:hv", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            o.force = true;
            break;
        case 'p':
            o.preserve = true;
            break;
        case 't': {
            char *end;
            unsigned long t = strtoul(optarg, &end, 10);

            if (*end != '\0' || t == 0 || t > 86400)
                return slurm_error(CMD, "--timeout=%s: seconds from 1 to 86400", optarg);
            o.timeout_s = (unsigned)t;
            break;
        }
        case 'j':
            o.job = optarg;
            break;
        case 'R':
            o.receive = optarg;
            break;
        case 'C':
        case 'F':
        case 's':
        case 'v':
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            fputs(usage_text, stderr);
            return 1;
        }
    }
    if (o.receive != NULL && argc - optind == 1) {
        o.dest = argv[optind];
        return receive(&o);
    }
    if (argc - optind != 2) {
        fputs(usage_text, stderr);
        return 1;
    }
    o.source = argv[optind];
    o.dest = argv[optind + 1];
    return send_file(&o);
}
