/*
 * cmd_srun.c: `srun [OPTIONS] COMMAND [ARGS...]` inside a job (gsched called as srun, or
 * `gsched srun`): a job step across some or all of the job's nodes, as Slurm's srun runs one
 * from a batch script. Outside a job, srun_alloc.c first makes an allocation for the step
 * (as Slurm's srun does), released once the step has ended. It sends gschedd one
 * StepLaunchRequest (the job from $SLURM_JOB_ID, the layout from -N/-n/..., its whole
 * environment), then stays on the connection: the tasks' output arrives as StepOutput
 * frames and goes to srun's stdout and stderr (-l puts "RANK: " before each line), each
 * task's end as a TaskExit, and gschedd closes the connection once every task has ended.
 * A connection that closes under the step (gschedd, or the worker relaying srun,
 * restarted) is taken up again: srun reattaches to its step (StepAttach) on a new one,
 * saying how much of each node's output it wrote, and drops what it has when that comes
 * again (StepOutput.end); one that closes before the step's reply (the step waited for
 * resources) has srun send the request again, with the random key it carried, which
 * gschedd answers for a step it started with that key, so that none starts twice.
 * srun's stdin goes to the step's tasks (every one, or the one -i names) as StepInput
 * frames (--pty: into task 0's pseudo-terminal, this terminal in raw mode meanwhile), at
 * most SRUN_INPUT_WINDOW bytes ahead of what gschedd says they took (StepInputAck), so that
 * a task that reads slowly slows srun's reading instead of losing input (what is in flight
 * is kept, and sent again after a reattach, with where each chunk ends: StepInput.end);
 * srun_io.c says where each task's output goes (-o/-e). A step that must wait for GPUs or cores the
 * job's other steps hold hears StepPending first and waits, as long as it takes. SIGINT, SIGTERM
 * and the other signals srun passes on go to the step as StepSignal (a waiting srun ends at
 * the first, which withdraws its step); a second SIGINT within a second closes the
 * connection, which ends the step's tasks. srun exits with the worst task status (a task
 * killed by a signal counts as 128 + the signal, as a shell shows it; one that never
 * started as 1) and names each failed task on stderr the way Slurm does.
 *
 * This file is the exchange and the streaming; srun_args.c reads the options (Slurm's
 * syntax, not gsched's) and builds the request. The CLI is not libuv: a poll() loop over
 * the socket, srun's stdin and a signal self-pipe.
 */
#define _GNU_SOURCE /* strsignal */

#include "slurm/commands.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli/client.h"
#include "common/clock.h"
#include "common/error.h"
#include "proto/auth.h"
#include "slurm/alloc.h"
#include "slurm/sig_pipe.h"
#include "slurm/srun.h"

#define SRUN_ABORT_WINDOW_MS 1000 /* a second SIGINT this soon after the first: abort */
/* How long srun tries to reattach to its step once its connection closed under it (gschedd,
 * or the worker relaying srun, restarted): longer than gschedd waits for it (the fence
 * timeout, 5 minutes by default). */
#define SRUN_REATTACH_MS (10 * 60 * 1000)
#define SRUN_REATTACH_EVERY_MS 500
/* ... but no longer than this while nothing listens where gschedd (or the worker relaying
 * srun) was: gschedd restarts in seconds (systemd: RestartSec=1), and the tasks of a worker
 * that died, this srun among them where it relayed srun, end with it. */
#define SRUN_UNREACHABLE_MS (10 * 1000)
#define SRUN_INPUT_CHUNK 65536 /* bytes of stdin per StepInput */
/* What a worker holds of a task's input not yet read: 1 MiB, as the protocol says
 * (StepInput; WRK_TASKS_INPUT_MAX). */
#define SRUN_WORKER_HOLDS (1024u * 1024u)
/* Bytes of stdin in flight to the tasks before srun stops reading: a chunk more may go
 * once it is reached, and that must still fit in what the worker holds. Wider windows
 * wait less for StepInputAck (bench/srun_io.sh: 512 KiB was 17% slower). */
#define SRUN_INPUT_WINDOW (SRUN_WORKER_HOLDS - 2 * SRUN_INPUT_CHUNK)
_Static_assert(SRUN_INPUT_WINDOW + SRUN_INPUT_CHUNK <= SRUN_WORKER_HOLDS,
               "srun's input window overruns what a worker holds");
/* The ring stdin is read into and kept in until the tasks took it, to send again after a
 * reattach: what is in flight (at most the window and a chunk) never wraps onto itself. */
#define SRUN_INPUT_KEEP SRUN_WORKER_HOLDS

/* --- output ----------------------------------------------------------------------------------- */

struct task_state {
    struct gs_buf part[2]; /* stdout, stderr: the current line's start, until its end */
    bool exited;
};

struct srun_run {
    const struct cli_srun_args *a;
    Gs__StepLaunchRequest *req; /* a's, sent again by launch_once */
    const char *socket_path;
    int fd;
    struct cli_srun_sinks sinks; /* where each task's stdout and stderr go */
    uint32_t step_id;
    uint32_t ntasks;
    char **nodes;
    uint32_t *tasks_per_node;
    size_t nnodes;
    struct task_state *tasks;
    uint32_t nexited;
    int worst;
    int rank_width;
    char *ended_why; /* gschedd's ErrorReply while streaming (the job ended) */
    bool in_open;    /* srun's stdin is read and passed on to the tasks */
    bool in_acked;   /* gschedd says how far it got: keep within SRUN_INPUT_WINDOW of it */
    uint64_t in_sent, in_taken; /* bytes of stdin sent; of them, taken (StepInputAck) */
    /* gschedd takes StepInput.end (1.30, with in_acked): stdin is read into in_ring (byte
     * o at o % SRUN_INPUT_KEEP), where what was sent and not yet taken is sent again from
     * after a reattach */
    bool in_resend;
    bool in_eof_sent;
    char *in_ring;
    /* gschedd's output window (0: none): per node, the output bytes written and the last
     * count told (StepOutputAck), a quarter of the window apart at most */
    uint32_t out_window;
    uint64_t *out_written, *out_told;
    uint64_t *out_asked; /* per node, 1 + where srun asked for output again (0: never) */
    bool raw;            /* --pty: the terminal was put in raw mode, saved_tty to restore */
    bool said_timeout;
    uint64_t first_exit_ms; /* when the first task exited (-W counts from it); 0 none yet */
    bool wait_ended;        /* -W's time ran out and the step was told to end */
    int write_error;        /* the first failed write of the tasks' output (-errno), or 0 */
    struct termios saved_tty;
    /* StepLaunchRequest.launch_key: the request goes again with it when the connection
     * closes before its reply (cleared by cli_exchange for a gschedd that does not know it) */
    char key[33];
    Gs__Envelope *relaunched; /* launch_once's reply */
    bool said_pending;        /* "step creation temporarily disabled" */
};

/* Writes the tasks' output; the first failure is kept (said at the end, and srun then
 * exits 1: output that went nowhere must not pass as a clean run). */
static void write_all(struct srun_run *r, int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (r->write_error == 0)
                r->write_error = w < 0 ? -errno : -EIO;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static void emit(struct srun_run *r, uint32_t rank, int stream, const char *p, size_t n)
{
    char prefix[24];
    int fd = cli_srun_sink_fd(&r->sinks, rank, stream);

    if (fd < 0) /* -o/-e none, or another task's */
        return;
    if (r->a->req.label) {
        int len = snprintf(prefix, sizeof(prefix), "%*u: ", r->rank_width, rank);
        write_all(r, fd, prefix, (size_t)len);
    }
    write_all(r, fd, p, n);
}

/* Complete lines of a task's stream go out whole (all of it with flush). */
static void drain(struct srun_run *r, uint32_t rank, int stream, bool flush)
{
    struct gs_buf *b = &r->tasks[rank].part[stream];
    size_t start = 0;

    for (size_t i = 0; i < b->len; i++) {
        if (b->data[i] == '\n') {
            emit(r, rank, stream, b->data + start, i + 1 - start);
            start = i + 1;
        }
    }
    if (flush && start < b->len) {
        emit(r, rank, stream, b->data + start, b->len - start);
        start = b->len;
    }
    gs_buf_consume(b, start);
}

/* Output of node came past a gap (lost on its way: gschedd restarted, or dropped it): its
 * worker is asked once to send it again from what srun has (StepOutputAck.resend). */
static void ask_again(struct srun_run *r, uint32_t node)
{
    Gs__StepOutputAck ack = GS__STEP_OUTPUT_ACK__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    if (r->out_asked[node] == r->out_written[node] + 1)
        return;
    r->out_asked[node] = r->out_written[node] + 1;
    ack.node = node;
    ack.offset = r->out_written[node];
    ack.resend = true;
    env.body_case = GS__ENVELOPE__BODY_STEP_OUTPUT_ACK;
    env.step_output_ack = &ack;
    gs_proto_write_fd(r->fd, &env, CLI_TIMEOUT_MS);
}

/* The output of rank's node written as far as now: told to gschedd, for that node's worker,
 * every quarter window. A failure means gschedd is gone, which the read loop finds out. */
static void output_taken(struct srun_run *r, uint32_t rank, size_t len)
{
    Gs__StepOutputAck ack = GS__STEP_OUTPUT_ACK__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    uint32_t node = r->sinks.node_of[rank];

    if (r->out_window == 0 || node >= r->nnodes)
        return;
    r->out_written[node] += len;
    if (r->out_written[node] - r->out_told[node] < r->out_window / 4)
        return;
    r->out_told[node] = r->out_written[node];
    ack.node = node;
    ack.offset = r->out_written[node];
    env.body_case = GS__ENVELOPE__BODY_STEP_OUTPUT_ACK;
    env.step_output_ack = &ack;
    gs_proto_write_fd(r->fd, &env, CLI_TIMEOUT_MS);
}

static void on_output(struct srun_run *r, const Gs__StepOutput *o)
{
    int stream = o->stream == GS__LOG_STREAM__LOG_STREAM_STDERR ? 1 : 0;
    const char *data = (const char *)o->data.data;
    size_t len = o->data.len;
    uint32_t node = o->rank < r->ntasks ? r->sinks.node_of[o->rank] : UINT32_MAX;

    if (o->rank >= r->ntasks)
        return;
    /* Around a reattach (StepOutput.end): what srun has is dropped, and so is what comes
     * after a gap (output lost while srun was away, or dropped on the way): the worker
     * sends it again from what srun has (StepOutputResume after a reattach, else asked). */
    if (o->end != 0 && o->end >= len && r->out_window > 0 && node < r->nnodes) {
        uint64_t have = r->out_written[node], start = o->end - len;

        if (start > have)
            ask_again(r, node);
        if (o->end < have || (o->end == have && len > 0) || start > have)
            return;
        if (start < have) {
            data += have - start;
            len -= (size_t)(have - start);
        }
    }
    output_taken(r, o->rank, len); /* written below, or held as part of a line */
    if (r->a->unbuffered && !r->a->req.label) {
        emit(r, o->rank, stream, data, len);
        return;
    }
    if (gs_buf_append(&r->tasks[o->rank].part[stream], data, len) < 0) {
        drain(r, o->rank, stream, true); /* out of memory: what is there goes now */
        emit(r, o->rank, stream, data, len);
        return;
    }
    drain(r, o->rank, stream, o->eof);
}

/* Sends StepSignal; a failure means gschedd is gone, which the read loop finds out. */
static void send_signal(struct srun_run *r, uint32_t signum)
{
    Gs__StepSignal sig = GS__STEP_SIGNAL__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    sig.signal = signum;
    env.body_case = GS__ENVELOPE__BODY_STEP_SIGNAL;
    env.step_signal = &sig;
    gs_proto_write_fd(r->fd, &env, CLI_TIMEOUT_MS);
}

/* --pty: this terminal's new size (SIGWINCH), for task 0's pty. */
static void send_size(struct srun_run *r)
{
    Gs__StepInput in = GS__STEP_INPUT__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    struct winsize ws;

    if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_row == 0 || ws.ws_col == 0)
        return;
    in.rows = ws.ws_row;
    in.cols = ws.ws_col;
    env.body_case = GS__ENVELOPE__BODY_STEP_INPUT;
    env.step_input = &in;
    gs_proto_write_fd(r->fd, &env, CLI_TIMEOUT_MS);
}

/* A read of srun's stdin, passed on to the tasks; its end (or an error) ends the input. */
/* One StepInput: len bytes of stdin ending at end (0: not said), or its end (eof). */
static void send_input(struct srun_run *r, const void *data, size_t len, uint64_t end, bool eof,
                       bool resent)
{
    Gs__StepInput in = GS__STEP_INPUT__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    in.data.data = (uint8_t *)data;
    in.data.len = len;
    in.end = end;
    in.eof = eof;
    in.resent = resent;
    env.body_case = GS__ENVELOPE__BODY_STEP_INPUT;
    env.step_input = &in;
    gs_proto_write_fd(r->fd, &env, CLI_TIMEOUT_MS);
}

/* How much of what srun sent from offset at on lies in one piece in its ring. */
static size_t ring_run(const struct srun_run *r, uint64_t at)
{
    uint64_t left = r->in_sent - at, room = SRUN_INPUT_KEEP - at % SRUN_INPUT_KEEP;
    uint64_t n = left < room ? left : room;

    return n < SRUN_INPUT_CHUNK ? (size_t)n : SRUN_INPUT_CHUNK;
}

static void forward_input(struct srun_run *r)
{
    char buf[SRUN_INPUT_CHUNK], *at = buf;
    size_t want = sizeof(buf);
    ssize_t n;

    if (r->in_resend) { /* read into the ring, where it stays until taken */
        uint64_t room = SRUN_INPUT_KEEP - r->in_sent % SRUN_INPUT_KEEP;

        at = r->in_ring + r->in_sent % SRUN_INPUT_KEEP;
        want = room < want ? (size_t)room : want;
    }
    n = read(STDIN_FILENO, at, want);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n > 0) {
        r->in_sent += (uint64_t)n;
        send_input(r, at, (size_t)n, r->in_resend ? r->in_sent : 0, false, false);
    } else {
        r->in_open = false;
        r->in_eof_sent = true;
        send_input(r, NULL, 0, r->in_resend ? r->in_sent : 0, true, false);
    }
}

/* After a reattach: the stdin sent and not yet taken (lost, maybe, with gschedd) is sent
 * again from what the tasks took; each worker gives its tasks only what they lack. */
static void resend_input(struct srun_run *r)
{
    uint64_t at = r->in_taken < r->in_sent ? r->in_taken : r->in_sent;

    if (!r->in_resend)
        return;
    for (size_t n; at < r->in_sent; at += n) {
        n = ring_run(r, at);
        send_input(r, r->in_ring + at % SRUN_INPUT_KEEP, n, at + n, false, true);
    }
    if (r->in_eof_sent)
        send_input(r, NULL, 0, r->in_sent, true, true);
}

/* --pty: the local terminal passes every key on (^C and ^D too) until the step ends. */
static void raw_on(struct srun_run *r)
{
    struct termios t;

    if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &r->saved_tty) < 0)
        return;
    t = r->saved_tty;
    cfmakeraw(&t);
    r->raw = tcsetattr(STDIN_FILENO, TCSADRAIN, &t) == 0;
}

static void raw_off(struct srun_run *r)
{
    if (r->raw)
        tcsetattr(STDIN_FILENO, TCSADRAIN, &r->saved_tty);
    r->raw = false;
}

static void on_exit_frame(struct srun_run *r, const Gs__TaskExit *ex)
{
    const char *node = ex->node_name != NULL && ex->node_name[0] ? ex->node_name : "?";
    int status;

    if (ex->rank >= r->ntasks || r->tasks[ex->rank].exited)
        return;
    r->tasks[ex->rank].exited = true;
    if (r->nexited++ == 0)
        r->first_exit_ms = gs_clock_mono_ms();
    drain(r, ex->rank, 0, true);
    drain(r, ex->rank, 1, true);
    if (ex->end_reason == GS__END_REASON__END_REASON_TIMEOUT && !r->said_timeout) {
        /* slurmstepd's words, once: the time limit ends every task of the step */
        r->said_timeout = true;
        fprintf(stderr,
                "srun: error: *** STEP %" PRIu64 ".%u ON %s CANCELLED DUE TO TIME LIMIT ***\n",
                r->a->job_id, r->step_id, node);
    }
    if (ex->end_reason == GS__END_REASON__END_REASON_LAUNCH_FAILED) {
        fprintf(stderr, "srun: error: %s: task %u: could not start: %s\n", node, ex->rank,
                ex->launch_error != NULL && ex->launch_error[0] ? ex->launch_error : "?");
        status = 1;
    } else if (ex->end_reason == GS__END_REASON__END_REASON_LOST) {
        fprintf(stderr, "srun: error: %s: task %u: lost: %s\n", node, ex->rank,
                ex->launch_error != NULL && ex->launch_error[0] ? ex->launch_error
                                                                : "its node failed");
        status = 1;
    } else if (ex->signaled) {
        fprintf(stderr, "srun: error: %s: task %u: %s\n", node, ex->rank,
                strsignal((int)ex->term_signal));
        /* a signal number from the wire: only a real one makes 128 + N */
        status = ex->term_signal >= 1 && ex->term_signal <= 127 ? 128 + (int)ex->term_signal : 1;
    } else {
        status = ex->exit_code;
        if (status != 0)
            fprintf(stderr, "srun: error: %s: task %u: Exited with exit code %d\n", node, ex->rank,
                    status);
    }
    if (status > r->worst)
        r->worst = status;
    if (status != 0 && r->a->kill_bad)
        send_signal(r, 0); /* -K: the step ends with its first failure */
}

/* --- signals ---------------------------------------------------------------------------------- */

static int sig_fd = -1; /* the signal self-pipe's read end (sig_pipe.h) */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

static int catch_signals(void)
{
    sig_fd = slurm_sig_pipe_open(forwarded, sizeof(forwarded) / sizeof(forwarded[0]), false);
    return sig_fd < 0 ? sig_fd : 0;
}

/* --- the exchange -------------------------------------------------------------------------------
 */

/* Copies the reply's layout; returns 0, or 1 (said) when gschedd refused the step. */
static int take_reply(struct srun_run *r, Gs__Envelope *reply)
{
    const Gs__StepLaunchReply *rep = reply->step_launch_reply;

    if (reply->body_case == GS__ENVELOPE__BODY_ERROR) {
        fprintf(stderr, "srun: error: Unable to create step for job %" PRIu64 ": %s\n",
                r->a->job_id, reply->error->message);
        return 1;
    }
    if (reply->body_case != GS__ENVELOPE__BODY_STEP_LAUNCH_REPLY || rep->ntasks == 0) {
        fprintf(stderr, "srun: error: gschedd answered with %s\n",
                gs_proto_body_name(reply->body_case));
        return 1;
    }
    r->step_id = rep->step_id;
    r->ntasks = rep->ntasks;
    r->tasks = calloc(rep->ntasks, sizeof(*r->tasks));
    r->nodes = calloc(rep->n_nodes + 1, sizeof(*r->nodes));
    if (r->tasks == NULL || r->nodes == NULL) {
        fprintf(stderr, "srun: error: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < rep->n_nodes; i++) {
        if ((r->nodes[i] = strdup(rep->nodes[i])) == NULL) {
            fprintf(stderr, "srun: error: out of memory\n");
            return 1;
        }
        r->nnodes++;
    }
    for (uint32_t n = rep->ntasks - 1; n >= 10; n /= 10)
        r->rank_width++;
    r->rank_width++;
    if (r->a->nodes_given && r->a->req.nodes != r->nnodes)
        fprintf(stderr,
                "srun: warning: can't run %u processes on %u nodes, setting nnodes to %zu\n",
                r->ntasks, r->a->req.nodes, r->nnodes);
    return 0;
}

/* One frame while streaming: 0 go on, or the frame was out of place (said; 1). */
static int on_frame(struct srun_run *r, const Gs__Envelope *env)
{
    switch (env->body_case) {
    case GS__ENVELOPE__BODY_STEP_OUTPUT:
        on_output(r, env->step_output);
        return 0;
    case GS__ENVELOPE__BODY_TASK_EXIT:
        on_exit_frame(r, env->task_exit);
        return 0;
    case GS__ENVELOPE__BODY_STEP_INPUT_ACK:
        if (env->step_input_ack->offset > r->in_taken)
            r->in_taken = env->step_input_ack->offset;
        if (r->in_taken == UINT64_MAX) /* no task reads any more: neither does srun */
            r->in_open = false;
        return 0;
    case GS__ENVELOPE__BODY_ERROR:
        free(r->ended_why);
        r->ended_why = strdup(env->error->message != NULL ? env->error->message : "");
        return 0;
    default:
        return 0; /* newer frames this srun does not know: not its business */
    }
}

/*
 * Streams until gschedd closes the connection (every task done, or the job ended) or the
 * user aborts. Returns the exit status.
 */
/*
 * -W S: milliseconds poll may wait before S seconds have passed since the first task
 * exited (-1: no such deadline); at it, srun says so as Slurm's does and ends the step.
 */
static int wait_deadline(struct srun_run *r)
{
    uint64_t now = gs_clock_mono_ms(), due;

    if (r->a->wait_s == 0 || r->first_exit_ms == 0 || r->wait_ended || r->nexited == r->ntasks)
        return -1;
    due = r->first_exit_ms + (uint64_t)r->a->wait_s * 1000;
    if (now < due)
        return (int)(due - now < INT32_MAX ? due - now : INT32_MAX);
    r->wait_ended = true;
    fprintf(stderr, "srun: First task exited %us ago\n", r->a->wait_s);
    fprintf(stderr, "srun: StepId=%" PRIu64 ".%u tasks: %u of %u running\n", r->a->job_id,
            r->step_id, r->ntasks - r->nexited, r->ntasks);
    fprintf(stderr, "srun: Terminating StepId=%" PRIu64 ".%u\n", r->a->job_id, r->step_id);
    send_signal(r, 0); /* as -K: gschedd ends the step's tasks */
    return -1;
}

/* One try at taking the step up again on a fresh connection: 0 (r->fd is it), -EAGAIN (not
 * now: no gschedd yet, or it still holds the old connection), -ECONNREFUSED (nothing
 * listens), or another error, said. */
static int attach_once(struct srun_run *r)
{
    Gs__StepAttach at = GS__STEP_ATTACH__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    int fd = cli_connect(r->socket_path), rc;

    if (fd < 0)
        return -ECONNREFUSED;
    at.job_id = r->a->job_id;
    at.step = r->step_id + 1;
    at.output_written = r->out_written;
    at.n_output_written = r->out_window > 0 ? r->nnodes : 0;
    env.body_case = GS__ENVELOPE__BODY_STEP_ATTACH;
    env.step_attach = &at;
    rc = cli_exchange(fd, &env, CLI_TIMEOUT_MS, &reply);
    if (rc < 0) {
        rc = -EAGAIN; /* it went again, or is not serving yet */
    } else if (reply->body_case == GS__ENVELOPE__BODY_STEP_LAUNCH_REPLY) {
        r->fd = fd;
        fd = -1;
        for (size_t i = 0; r->out_window > 0 && i < r->nnodes; i++)
            r->out_told[i] = r->out_written[i]; /* StepAttach said it */
        rc = 0;
    } else if (reply->body_case == GS__ENVELOPE__BODY_ERROR &&
               (reply->error->code == -ENOTCONN || reply->error->code == -EBUSY)) {
        rc = -EAGAIN; /* the relaying worker is not back with gschedd, or the old session is
                       * still there */
    } else {
        fprintf(stderr, "srun: error: cannot reattach to StepId=%" PRIu64 ".%u: %s\n", r->a->job_id,
                r->step_id,
                reply->body_case == GS__ENVELOPE__BODY_ERROR && reply->error->message != NULL
                    ? reply->error->message
                    : gs_proto_body_name(reply->body_case));
        rc = -EIO;
    }
    if (fd >= 0)
        close(fd);
    gs_proto_envelope_free(reply);
    return rc;
}

/*
 * Tries once (attach_once, launch_once) every SRUN_REATTACH_EVERY_MS until it is done or
 * fails for good, for SRUN_REATTACH_MS, or SRUN_UNREACHABLE_MS while nothing listens. Signals
 * meanwhile: with pending (a step not started), the first ends srun, as it withdraws a
 * waiting step; else each is kept in *ret_pending (bit n: signal n) to pass on once back,
 * and a second SIGINT within a second gives up. Returns once's 0, -1 when srun gives up
 * (said), or once's last -EAGAIN / -ECONNREFUSED (said: "could not WHAT in N s"), or its
 * error (said by it).
 */
static int retry(struct srun_run *r, int (*once)(struct srun_run *r), const char *what,
                 bool pending, uint64_t *ret_pending)
{
    uint64_t start = gs_clock_mono_ms(), deadline = start + SRUN_REATTACH_MS, last_int = 0;
    uint64_t refused = 0; /* since when nothing listens */
    int rc;

    for (;;) {
        struct pollfd p = {.fd = sig_fd, .events = POLLIN};
        unsigned char sigs[16];
        uint64_t now;
        ssize_t got;

        rc = once(r);
        now = gs_clock_mono_ms();
        refused = rc != -ECONNREFUSED ? 0 : refused != 0 ? refused : now;
        if ((rc != -EAGAIN && rc != -ECONNREFUSED) || now >= deadline ||
            (refused != 0 && now - refused >= SRUN_UNREACHABLE_MS))
            break;
        if (poll(&p, 1, SRUN_REATTACH_EVERY_MS) <= 0)
            continue;
        got = read(sig_fd, sigs, sizeof(sigs));
        now = gs_clock_mono_ms();
        for (ssize_t i = 0; i < got; i++) {
            if (pending && sigs[i] != SIGWINCH) {
                fprintf(stderr, "srun: Cancelled pending job step with signal %u\n", sigs[i]);
                return -1;
            }
            if (sigs[i] == SIGINT && last_int != 0 && now - last_int < SRUN_ABORT_WINDOW_MS) {
                fprintf(stderr, "srun: Job step aborted (not reattached)\n");
                return -1;
            }
            if (sigs[i] == SIGINT)
                last_int = now;
            if (sigs[i] < 64)
                *ret_pending |= 1ull << sigs[i];
        }
    }
    if (rc == -EAGAIN || rc == -ECONNREFUSED)
        fprintf(stderr, "srun: error: could not %s in %llu s%s\n", what,
                (unsigned long long)(gs_clock_mono_ms() - start) / 1000,
                rc == -ECONNREFUSED ? ": nothing answers at the socket" : "");
    return rc;
}

/*
 * The connection closed under the step (gschedd, or the worker relaying srun, restarted):
 * srun reattaches (StepAttach) and streams on, trying for SRUN_REATTACH_MS. Signals meanwhile
 * are passed on once back; a second SIGINT within a second gives up. 0, or -1 (said).
 */
static int reattach(struct srun_run *r)
{
    uint64_t pending = 0;
    char what[80];

    close(r->fd);
    r->fd = -1;
    fprintf(stderr, "srun: lost the connection to gschedd; reattaching to StepId=%" PRIu64 ".%u\n",
            r->a->job_id, r->step_id);
    snprintf(what, sizeof(what), "reattach to StepId=%" PRIu64 ".%u", r->a->job_id, r->step_id);
    if (retry(r, attach_once, what, false, &pending) < 0)
        return -1;
    fprintf(stderr, "srun: reattached to StepId=%" PRIu64 ".%u\n", r->a->job_id, r->step_id);
    resend_input(r);
    for (uint32_t s = 1; s < 64; s++) {
        if (pending & (1ull << s) && s != SIGWINCH)
            send_signal(r, s);
    }
    return 0;
}

static int stream(struct srun_run *r)
{
    uint64_t last_int = 0;
    bool aborted = false;

    for (;;) {
        /* stdin waits while a window of it is in flight */
        bool reading = r->in_open && (!r->in_acked || r->in_sent - r->in_taken < SRUN_INPUT_WINDOW);
        struct pollfd p[3] = {{.fd = r->fd, .events = POLLIN},
                              {.fd = sig_fd, .events = POLLIN},
                              {.fd = reading ? STDIN_FILENO : -1, .events = POLLIN}};
        unsigned char sigs[16];
        ssize_t got;

        if (poll(p, 3, wait_deadline(r)) < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "srun: error: poll: %s\n", strerror(errno));
            return 1;
        }
        /* Read whatever poll said (the pipe does not block): a signal that woke poll is
         * handled as poll returns, after it looked at the pipe, so a resize followed at once
         * by typing would reach task 0 after the typed line (its terminal a size behind). */
        got = read(sig_fd, sigs, sizeof(sigs));
        for (ssize_t i = 0; i < got; i++) {
            uint64_t now = gs_clock_mono_ms();

            if (sigs[i] == SIGWINCH) { /* caught only with --pty: the terminal, not a signal */
                send_size(r);
                continue;
            }
            if (sigs[i] == SIGINT && last_int != 0 && now - last_int < SRUN_ABORT_WINDOW_MS) {
                fprintf(stderr, "srun: forcing job termination\n");
                aborted = true; /* closing the connection ends the step's tasks */
                break;
            }
            if (sigs[i] == SIGINT) {
                last_int = now;
                fprintf(stderr, "srun: interrupt (one more within 1 sec to abort)\n");
                fprintf(stderr, "srun: StepId=%" PRIu64 ".%u tasks: %u of %u running\n",
                        r->a->job_id, r->step_id, r->ntasks - r->nexited, r->ntasks);
            }
            send_signal(r, sigs[i]);
        }
        if (aborted) {
            fprintf(stderr, "srun: Job step aborted\n");
            return 128 + SIGINT;
        }
        if (reading && (p[2].revents & (POLLIN | POLLHUP | POLLERR)))
            forward_input(r);
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            Gs__Envelope *env = NULL;
            int rc = gs_proto_read_fd(r->fd, 0, CLI_TIMEOUT_MS, &env);

            /* Every task reported: gschedd (or the relaying worker) ended the connection, and
             * may have reset it over an acknowledgement it did not read; nothing is lost. */
            if (rc < 0 && r->nexited == r->ntasks)
                break;
            /* Closed under the step, which goes on: gschedd keeps it over a restart. */
            if (rc < 0 && r->ended_why == NULL && reattach(r) == 0)
                continue;
            if (rc == GS_PROTO_ERR_PEER_CLOSED || r->fd < 0)
                break;
            if (rc < 0) {
                fprintf(stderr, "srun: error: the connection to gschedd failed: %s\n",
                        gs_proto_reason(rc));
                break;
            }
            on_frame(r, env);
            gs_proto_envelope_free(env);
        }
    }
    for (uint32_t i = 0; i < r->ntasks; i++) {
        drain(r, i, 0, true);
        drain(r, i, 1, true);
    }
    if (r->nexited < r->ntasks) {
        fprintf(stderr, "srun: error: StepId=%" PRIu64 ".%u: %u of %u tasks did not report: %s\n",
                r->a->job_id, r->step_id, r->ntasks - r->nexited, r->ntasks,
                r->ended_why != NULL
                    ? r->ended_why
                    : "the connection to gschedd (or the worker relaying it) closed");
        return r->worst > 0 ? r->worst : 1;
    }
    return r->worst;
}

/* Whether the request went with its key (gschedd knows it), and rc (a failed exchange)
 * says the connection closed under it: then it may go again (launch_once). */
static bool may_resend(const struct srun_run *r, int rc)
{
    return r->req->launch_key != NULL && r->req->launch_key[0] != '\0' &&
           (rc == GS_PROTO_ERR_PEER_CLOSED || rc == -ECONNRESET || rc == -EPIPE);
}

/*
 * gschedd said the step waits for resources its job's other steps hold (StepPending): say
 * so as Slurm does and wait, as long as it takes, for the StepLaunchReply (or an error),
 * which replaces *reply. A signal withdraws the request: closing the connection is enough.
 * Returns 0, 1 (said) when srun is to end, or 2 when the connection closed and the request
 * may go again (may_resend).
 */
static int wait_for_step(struct srun_run *r, Gs__Envelope **reply)
{
    const char *why = (*reply)->step_pending->reason;

    if (!r->said_pending)
        fprintf(stderr, "srun: Job %" PRIu64 " step creation temporarily disabled, retrying (%s)\n",
                r->a->job_id, why != NULL && why[0] != '\0' ? why : "Requested nodes are busy");
    r->said_pending = true;
    for (;;) {
        struct pollfd p[2] = {{.fd = r->fd, .events = POLLIN}, {.fd = sig_fd, .events = POLLIN}};
        Gs__Envelope *env = NULL;
        unsigned char sig;
        int rc;

        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "srun: error: poll: %s\n", strerror(errno));
            return 1;
        }
        if ((p[1].revents & POLLIN) && read(sig_fd, &sig, 1) == 1) {
            fprintf(stderr, "srun: Cancelled pending job step with signal %u\n", sig);
            return 1;
        }
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        rc = gs_proto_read_fd(r->fd, 0, CLI_TIMEOUT_MS, &env);
        if (rc < 0 && may_resend(r, rc))
            return 2;
        if (rc < 0) {
            fprintf(stderr, "srun: error: the connection to gschedd failed: %s\n",
                    gs_proto_reason(rc));
            return 1;
        }
        if (env->body_case == GS__ENVELOPE__BODY_STEP_PENDING) {
            gs_proto_envelope_free(env); /* said already */
            continue;
        }
        gs_proto_envelope_free(*reply);
        *reply = env;
        return 0;
    }
}

/* One try at sending the step's request again on a fresh connection: 0 (r->fd is it,
 * r->relaunched its reply), -EAGAIN (not now: gschedd is not back, or still holds the
 * old connection), or -ECONNREFUSED (nothing listens). */
static int launch_once(struct srun_run *r)
{
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    int fd = cli_connect(r->socket_path), rc;

    if (fd < 0)
        return -ECONNREFUSED;
    env.body_case = GS__ENVELOPE__BODY_STEP_LAUNCH_REQUEST;
    env.step_launch_request = r->req;
    rc = cli_exchange(fd, &env, CLI_TIMEOUT_MS, &reply);
    if (rc < 0 || (reply->body_case == GS__ENVELOPE__BODY_ERROR &&
                   (reply->error->code == -ENOTCONN || reply->error->code == -EBUSY))) {
        close(fd);
        gs_proto_envelope_free(reply);
        return -EAGAIN;
    }
    r->fd = fd;
    r->relaunched = reply;
    return 0;
}

/*
 * The connection closed before the step's reply (gschedd, or the worker relaying srun,
 * restarted while the step waited): the request goes again with its key, which gschedd
 * answers for the step it started meanwhile, if it did, so that none starts twice. 0 (the
 * new reply in *reply), or 1 (said) when srun is to end.
 */
static int relaunch(struct srun_run *r, Gs__Envelope **reply)
{
    uint64_t signals = 0;

    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    fprintf(stderr, "srun: lost the connection to gschedd; sending the step's request again\n");
    if (retry(r, launch_once, "send the step's request again", true, &signals) < 0)
        return 1;
    gs_proto_envelope_free(*reply);
    *reply = r->relaunched;
    r->relaunched = NULL;
    return 0;
}

static int run_step(struct cli_srun_args *a, const char *socket_path)
{
    struct srun_run r = {.a = a, .req = &a->req, .socket_path = socket_path, .fd = -1};
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE];
    int rc, status = 1;

    r.fd = cli_connect(socket_path);
    if (r.fd < 0) {
        fprintf(stderr, "srun: error: cannot reach gschedd at %s: %s\n", socket_path,
                gs_strerror(r.fd));
        goto out;
    }
    if (a->req.pty) { /* the remote terminal starts at this one's size */
        struct winsize ws;

        if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0) {
            a->req.pty_rows = ws.ws_row;
            a->req.pty_cols = ws.ws_col;
        }
    }
    if (gs_proto_auth_nonce(nonce) == 0) { /* without one, a lost connection ends srun */
        for (size_t i = 0; i < (sizeof(r.key) - 1) / 2; i++)
            snprintf(r.key + 2 * i, 3, "%02x", nonce[i]);
        a->req.launch_key = r.key;
    }
    env.body_case = GS__ENVELOPE__BODY_STEP_LAUNCH_REQUEST;
    env.step_launch_request = &a->req;
    rc = cli_exchange(r.fd, &env, CLI_TIMEOUT_MS, &reply);
    if (rc < 0 && may_resend(&r, rc) && relaunch(&r, &reply) != 0)
        goto out;
    if (rc < 0 && reply == NULL) {
        fprintf(stderr, "srun: error: gschedd at %s: %s\n", socket_path, gs_proto_reason(rc));
        goto out;
    }
    while (reply->body_case == GS__ENVELOPE__BODY_STEP_PENDING) {
        rc = wait_for_step(&r, &reply);
        if (rc == 2 && relaunch(&r, &reply) == 0)
            continue;
        if (rc != 0)
            goto out;
    }
    if (r.said_pending && reply->body_case == GS__ENVELOPE__BODY_STEP_LAUNCH_REPLY)
        fprintf(stderr, "srun: Step created for StepId=%" PRIu64 ".%u\n", a->job_id,
                reply->step_launch_reply->step_id);
    if (take_reply(&r, reply) != 0)
        goto out;
    if (cli_srun_sinks_open(&r.sinks, a, reply->step_launch_reply) < 0) {
        send_signal(&r, 0); /* as -K: gschedd ends the step's tasks */
        goto out;
    }
    /* An older gschedd would close the connection over StepInput: only when it says so. */
    r.in_open = (a->req.input || a->req.pty) && reply->step_launch_reply->input;
    r.in_acked = reply->step_launch_reply->input_acked;
    /* the key went: this gschedd knows StepInput.end too */
    r.in_resend = r.in_acked && a->req.launch_key != NULL && a->req.launch_key[0] != '\0' &&
                  r.in_open && (r.in_ring = malloc(SRUN_INPUT_KEEP)) != NULL;
    r.out_window = reply->step_launch_reply->output_window;
    if (r.out_window > 0) {
        r.out_written = calloc(r.nnodes + 1, sizeof(*r.out_written));
        r.out_told = calloc(r.nnodes + 1, sizeof(*r.out_told));
        r.out_asked = calloc(r.nnodes + 1, sizeof(*r.out_asked));
        if (r.out_written == NULL || r.out_told == NULL || r.out_asked == NULL) {
            fprintf(stderr, "srun: error: out of memory\n");
            send_signal(&r, 0);
            goto out;
        }
    }
    if (a->req.pty) {
        raw_on(&r);
        /* From now on a new size of this terminal goes to task 0's (send_size). */
        if (r.in_open && slurm_sig_pipe_catch(SIGWINCH, false) < 0)
            fprintf(stderr, "srun: warning: the remote terminal will not follow resizes\n");
    }
    status = stream(&r);
    raw_off(&r);
    if (r.write_error != 0) {
        fprintf(stderr, "srun: error: writing the tasks' output: %s\n", gs_strerror(r.write_error));
        status = status != 0 ? status : 1;
    }
out:
    if (r.fd >= 0)
        close(r.fd);
    cli_srun_sinks_close(&r.sinks);
    free(r.out_written);
    free(r.out_told);
    free(r.out_asked);
    for (uint32_t i = 0; r.tasks != NULL && i < r.ntasks; i++) {
        gs_buf_release(&r.tasks[i].part[0]);
        gs_buf_release(&r.tasks[i].part[1]);
    }
    for (size_t i = 0; i < r.nnodes; i++)
        free(r.nodes[i]);
    free(r.nodes);
    free(r.tasks);
    free(r.ended_why);
    free(r.in_ring);
    gs_proto_envelope_free(reply);
    a->req.launch_key = NULL; /* r.key's, gone with r */
    return status;
}

int cli_cmd_srun(int argc, char **argv)
{
    struct cli_srun_args a = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_owned own = {.workdir = GS_BUF_INIT};
    struct cli_alloc al = {.prog = "srun", .fd = -1};
    char socket_path[108];
    int rc, status = 1;

    rc = cli_srun_parse(&a, argc, argv);
    if (rc != 0)
        return rc > 0 ? 0 : 1;
    if (cli_socket_path(NULL, socket_path, sizeof(socket_path)) < 0)
        goto out;
    if (catch_signals() < 0) {
        fprintf(stderr, "srun: error: cannot set up signal handling: %s\n", strerror(errno));
        goto out;
    }
    /* Outside a job, an allocation first (srun_alloc.c); its connection holds it. */
    if (!cli_srun_in_job(&a) && cli_srun_alloc(&a, &al, socket_path, sig_fd) != 0)
        goto out;
    if (cli_srun_request(&a, &own) < 0)
        goto out;
    status = run_step(&a, socket_path);
    if (al.fd >= 0)
        cli_alloc_release(&al, status, 0, false);
out:
    cli_alloc_release_fds(&al);
    cli_srun_owned_release(&own);
    return status;
}
