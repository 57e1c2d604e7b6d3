/*
 * client.c: one blocking request to gschedd over its Unix socket (see client.h), and its
 * two halves (connect, then hello + request + reply) for srun, which keeps the connection.
 * From a login node ($GSCHED_SERVER) the same calls go over TCP with a MUNGE credential
 * (server.h): the target then reads "tcp:HOST:PORT", and only cli_connect and cli_exchange
 * look at the difference.
 */
#include "cli/client.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/jobcmd.h"
#include "cli/server.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/error.h"
#include "proto/cred.h"

/* A local cluster in the current directory wins over the configuration: whoever ran
 * `gsched up` here means that cluster. Kept relative, so a long cwd still fits sun_path. */
static bool local_socket(char *out, size_t size)
{
    const char *path = "./" CLI_LOCAL_STATE_DIR "/" CLI_LOCAL_SOCKET;
    struct stat st;

    if (stat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
        return false;
    snprintf(out, size, "%s", path);
    return true;
}

const char *cli_target(const char *socket_path)
{
    size_t n = strlen(CLI_SERVER_PREFIX);

    return strncmp(socket_path, CLI_SERVER_PREFIX, n) == 0 ? socket_path + n : socket_path;
}

/* Why cli_connect failed, in words. */
static const char *connect_error(const char *socket_path, int code)
{
    if (cli_target(socket_path) != socket_path && code == CLI_ERR_NO_HOST)
        return "no such host";
    return gs_strerror(code);
}

/* $GSCHED_SERVER as a target, checked. */
static int server_target(const char *server, char *out, size_t size)
{
    char host[256], port[8];

    if (!gs_proto_cred_available()) {
        fprintf(stderr, "gsched: GSCHED_SERVER is set, but this gsched was built without libmunge, "
                        "which it needs to reach gschedd from another host\n");
        return -EPROTONOSUPPORT;
    }
    if (cli_server_split(server, host, sizeof(host), port, sizeof(port)) < 0) {
        fprintf(stderr, "gsched: GSCHED_SERVER=%s is not HOST:PORT (gschedd's cli_port)\n", server);
        return -EINVAL;
    }
    snprintf(out, size, "%s%s", CLI_SERVER_PREFIX, server);
    return 0;
}

int cli_socket_path(const char *option, char *out, size_t size)
{
    const char *env = getenv("GSCHED_SOCKET"), *server = getenv("GSCHED_SERVER");
    struct gs_config cfg;
    struct gs_buf errors = GS_BUF_INIT;
    int rc = 0;

    if (option != NULL || (env != NULL && env[0] != '\0')) {
        snprintf(out, size, "%s", option != NULL ? option : env);
        return 0;
    }
    if (server != NULL && server[0] != '\0')
        return server_target(server, out, size);
    if (local_socket(out, size))
        return 0;
    if (gs_config_init(&cfg) < 0)
        return -ENOMEM;
    rc = gs_config_load_default(&cfg, NULL, &errors);
    if (rc < 0)
        fputs(errors.data, stderr);
    if (rc == 0)
        snprintf(out, size, "%s", cfg.socket_path);
    gs_buf_release(&errors);
    gs_config_release(&cfg);
    return rc;
}

int cli_connect(const char *path)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    int fd;

    if (cli_target(path) != path)
        return cli_server_connect(cli_target(path), CLI_TIMEOUT_MS);
    if (strlen(path) >= sizeof(sun.sun_path))
        return -ENAMETOOLONG;
    memcpy(sun.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

/* The value of the detail "key=VALUE" of err, or NULL. */
static const char *detail(const Gs__ErrorReply *err, const char *key)
{
    size_t len = strlen(key);

    for (size_t i = 0; i < err->n_details; i++)
        if (strncmp(err->details[i], key, len) == 0 && err->details[i][len] == '=')
            return err->details[i] + len + 1;
    return NULL;
}

/*
 * An older gschedd refusing a field it does not know names it by numbers only; this gsched
 * knows its name and the option behind it is the user's, so the message is put in those
 * terms (and the details, meant for this, dropped). Left as it is when it cannot be.
 */
static void name_unknown_field(Gs__Envelope *reply)
{
    Gs__ErrorReply *err = reply->error;
    const char *path, *protocol;
    char names[256], *msg;
    size_t size = 512;

    if (reply->body_case != GS__ENVELOPE__BODY_ERROR || err->code != -EPROTONOSUPPORT)
        return;
    path = detail(err, "field");
    protocol = detail(err, "protocol");
    if (path == NULL || protocol == NULL)
        return;
    gs_proto_field_names(&gs__envelope__descriptor, path, false, names, sizeof(names));
    msg = malloc(size); /* freed with the reply, as protobuf-c's default allocator would */
    if (msg == NULL)
        return;
    snprintf(msg, size,
             "gschedd speaks protocol %.16s and does not know %s, which this gsched (protocol "
             "%u.%u) sets for an option you gave: upgrade gschedd, or leave that option out",
             protocol, names, GS_PROTO_VERSION_MAJOR, GS_PROTO_VERSION_MINOR);
    free(err->message);
    err->message = msg;
    for (size_t i = 0; i < err->n_details; i++)
        free(err->details[i]);
    free(err->details);
    err->details = NULL;
    err->n_details = 0;
}

/*
 * An ErrorReply of our own for a request the peer is too old to know (a body case after its
 * protocol minor): it would close the connection on it (hello.c), so it is never sent. As an
 * unpacked reply: every part malloc'd, freed by gs_proto_envelope_free(). NULL without memory.
 */
static Gs__Envelope *too_old(const Gs__Envelope *req, const Gs__Hello *peer, uint32_t need,
                             const char *what)
{
    Gs__Envelope *env = malloc(sizeof(*env));
    Gs__ErrorReply *err = malloc(sizeof(*err));
    char *msg = malloc(320);

    if (env == NULL || err == NULL || msg == NULL) {
        free(env);
        free(err);
        free(msg);
        return NULL;
    }
    gs__envelope__init(env);
    gs__error_reply__init(err);
    snprintf(msg, 320,
             "%s speaks protocol %u.%u, and %s needs %u.%u (this gsched speaks %u.%u): upgrade "
             "%s",
             peer->role == GS__ROLE__ROLE_WORKER ? "the gsched-workerd relaying this request"
                                                 : "gschedd",
             peer->protocol_major, peer->protocol_minor, what, GS_PROTO_VERSION_MAJOR, need,
             GS_PROTO_VERSION_MAJOR, GS_PROTO_VERSION_MINOR,
             peer->role == GS__ROLE__ROLE_WORKER ? "gsched-workerd" : "gschedd");
    err->code = -EPROTONOSUPPORT;
    err->message = msg;
    env->request_id = req->request_id;
    env->body_case = GS__ENVELOPE__BODY_ERROR;
    env->error = err;
    return env;
}

/* The hello on fd, by whichever handshake its kind takes; the peer's Hello into *ret_peer
 * (the caller frees it), or NULL where only its minor is known (*ret_minor either way). */
static int hello(int fd, int timeout_ms, Gs__Envelope **ret_peer, uint32_t *ret_minor)
{
    int rc;

    *ret_peer = NULL;
    if (cli_server_fd(fd))
        return cli_server_hello(fd, timeout_ms, ret_minor);
    rc = gs_proto_handshake_fd(fd, GS__ROLE__ROLE_CLI, "gsched",
                               GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_SCHEDULER), timeout_ms, ret_peer);
    if (rc == 0)
        *ret_minor = (*ret_peer)->hello->protocol_minor;
    return rc;
}

/* The minor the peer must speak to read req as meant, and what needs it. Its body's, but a
 * field value a peer would take for another may need more: srun --mpi=pmi2 would start plain
 * under a gschedd that does not know it. */
static uint32_t request_minor(const Gs__Envelope *req, const char **ret_what)
{
    const Gs__StepLaunchRequest *step = req->step_launch_request;

    *ret_what = gs_proto_body_name(req->body_case);
    if (req->body_case != GS__ENVELOPE__BODY_STEP_LAUNCH_REQUEST)
        return gs_proto_body_minor(req->body_case);
    /* srun --input=N or FILE: an older gschedd would feed task 0 or give /dev/null */
    if (!step->pty && ((step->input && !step->input_all && step->input_rank != 0) ||
                       (!step->input && step->stdin_pattern != NULL && step->stdin_pattern[0]))) {
        *ret_what = "srun --input=TASK|FILE";
        return GS_PROTO_MINOR_INPUT;
    }
    if (step->no_gpus) { /* an older gschedd would give the step the job's GPUs */
        *ret_what = "srun --gres=none";
        return GS_PROTO_MINOR_STEP_GRES;
    }
    if (step->ntasks_per_gpu > 0 || step->cpus_per_gpu > 0) { /* it would lay out the job's */
        *ret_what = step->ntasks_per_gpu > 0 ? "srun --ntasks-per-gpu" : "srun --cpus-per-gpu";
        return GS_PROTO_MINOR_STEP_GRES;
    }
    if (step->mpi != NULL && strcmp(step->mpi, "pmi2") == 0) {
        *ret_what = "srun --mpi=pmi2";
        return GS_PROTO_MINOR_PMI;
    }
    return gs_proto_body_minor(req->body_case);
}

int cli_exchange(int fd, Gs__Envelope *req, int timeout_ms, Gs__Envelope **ret_reply)
{
    Gs__Envelope *peer = NULL;
    const char *what;
    uint32_t minor = 0, need = request_minor(req, &what);
    int rc;

    req->request_id = 1;
    rc = hello(fd, timeout_ms, &peer, &minor);
    if (rc == 0 && minor < need) {
        Gs__Hello old = GS__HELLO__INIT;

        if (peer == NULL) { /* a login node's gschedd */
            old.protocol_major = GS_PROTO_VERSION_MAJOR;
            old.protocol_minor = minor;
            old.role = GS__ROLE__ROLE_SCHEDULER;
        }
        *ret_reply = too_old(req, peer != NULL ? peer->hello : &old, need, what);
        gs_proto_envelope_free(peer);
        return *ret_reply != NULL ? 0 : -ENOMEM;
    }
    gs_proto_envelope_free(peer);
    /* What an older peer goes without, left out for it (it would refuse a field it does not
     * know): the caller sees the field cleared. */
    if (rc == 0 && req->body_case == GS__ENVELOPE__BODY_STEP_LAUNCH_REQUEST &&
        minor < GS_PROTO_MINOR_STEP_KEY)
        req->step_launch_request->launch_key = NULL;
    if (rc == 0)
        rc = gs_proto_write_fd(fd, req, timeout_ms);
    if (rc == 0)
        rc = gs_proto_read_fd(fd, 0, timeout_ms, ret_reply);
    /* A refused hello (not a CLI port, an old gschedd) comes where the reply would. */
    if (rc == 0 && (*ret_reply)->body_case == GS__ENVELOPE__BODY_HELLO_REJECT) {
        gs_proto_envelope_free(*ret_reply);
        *ret_reply = NULL;
        rc = GS_PROTO_ERR_REJECTED;
    }
    if (rc == 0)
        name_unknown_field(*ret_reply);
    return rc;
}

/* How loud a request is: print transport failures? hand back ErrorReplies as replies? */
struct req_mode {
    bool print;
    bool raw_errors;
};

static int take_reply(Gs__Envelope *reply, struct req_mode m, Gs__Envelope **ret_reply)
{
    int rc;

    if (reply->body_case != GS__ENVELOPE__BODY_ERROR || m.raw_errors) {
        *ret_reply = reply;
        return 0;
    }
    if (m.print) {
        fprintf(stderr, "gsched: %s\n", reply->error->message);
        for (size_t i = 0; i < reply->error->n_details; i++)
            fprintf(stderr, "%s\n", reply->error->details[i]);
    }
    rc = reply->error->code < 0 ? reply->error->code : -EIO;
    gs_proto_envelope_free(reply);
    return rc;
}

static int request(const char *socket_path, Gs__Envelope *req, int timeout_ms, struct req_mode m,
                   Gs__Envelope **ret_reply)
{
    Gs__Envelope *reply = NULL;
    int fd = cli_connect(socket_path), rc;

    if (fd < 0) {
        if (m.print)
            fprintf(stderr, "gsched: cannot reach gschedd at %s: %s\n", cli_target(socket_path),
                    connect_error(socket_path, fd));
        return fd;
    }
    rc = cli_exchange(fd, req, timeout_ms, &reply);
    close(fd);
    if (rc < 0) {
        if (m.print && rc != CLI_ERR_LOGIN)
            fprintf(stderr, "gsched: gschedd at %s: %s\n", cli_target(socket_path),
                    gs_proto_reason(rc));
        return rc;
    }
    return take_reply(reply, m, ret_reply);
}

int cli_request(const char *socket_path, Gs__Envelope *req, Gs__Envelope **ret_reply)
{
    return request(socket_path, req, CLI_TIMEOUT_MS, (struct req_mode){true, false}, ret_reply);
}

int cli_request_quiet(const char *socket_path, Gs__Envelope *req, int timeout_ms,
                      Gs__Envelope **ret_reply)
{
    return request(socket_path, req, timeout_ms, (struct req_mode){false, false}, ret_reply);
}

int cli_request_raw(const char *socket_path, Gs__Envelope *req, Gs__Envelope **ret_reply)
{
    return request(socket_path, req, CLI_TIMEOUT_MS, (struct req_mode){true, true}, ret_reply);
}

static bool try_again(const Gs__Envelope *reply)
{
    return reply->body_case == GS__ENVELOPE__BODY_ERROR && reply->error->code == -EAGAIN;
}

int cli_request_retried(const char *socket_path, Gs__Envelope *req, uint64_t retry_ms,
                        Gs__Envelope **ret_reply)
{
    uint64_t deadline = gs_clock_mono_ms() + retry_ms, pause_ms = 100;
    Gs__Envelope *reply = NULL;
    int fd = cli_connect(socket_path), rc;

    if (fd < 0) {
        fprintf(stderr, "gsched: cannot reach gschedd at %s: %s\n", cli_target(socket_path),
                connect_error(socket_path, fd));
        return fd;
    }
    for (;;) {
        rc = fd < 0 ? fd : cli_exchange(fd, req, CLI_TIMEOUT_MS, &reply);
        if (fd >= 0)
            close(fd);
        /* No credential is no credential the next time either: nothing was sent. */
        if ((rc == 0 && !try_again(reply)) || rc == CLI_ERR_LOGIN ||
            gs_clock_mono_ms() + pause_ms > deadline)
            break;
        if (rc == 0) {
            gs_proto_envelope_free(reply);
            reply = NULL;
        }
        cli_sleep_ms(pause_ms);
        pause_ms = pause_ms * 2 > 1000 ? 1000 : pause_ms * 2;
        fd = cli_connect(socket_path);
    }
    if (rc < 0) {
        if (rc != CLI_ERR_LOGIN)
            fprintf(stderr, "gsched: gschedd at %s: %s\n", cli_target(socket_path),
                    fd < 0 ? connect_error(socket_path, rc) : gs_proto_reason(rc));
        return rc;
    }
    return take_reply(reply, (struct req_mode){true, true}, ret_reply);
}
