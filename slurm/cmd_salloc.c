/*
 * cmd_salloc.c: `salloc [OPTIONS] [COMMAND [ARGS...]]` (also `gsched salloc`), Slurm's
 * interactive allocation: sbatch's options ask for nodes, tasks, GPUs, a time limit; salloc
 * waits until gschedd grants them, then runs COMMAND (default: $SHELL, else /bin/sh) here,
 * on the submit host, with the job's SLURM_* variables, so that `srun` in it starts steps
 * on the allocated nodes. When COMMAND exits the allocation is released ("Relinquishing job
 * allocation N") and salloc exits with COMMAND's status (128 + N when killed by signal N).
 *
 * The allocation lives as long as salloc's connection to gschedd (alloc.h): salloc killed,
 * or gschedd gone, and the job ends. When the job ends under it (scancel, its time limit),
 * salloc says "Job allocation N has been revoked." and hangs up COMMAND (SIGHUP to its
 * process group, SIGKILL after SALLOC_KILL_WAIT_MS), as Slurm's salloc does.
 *
 * COMMAND runs in its own process group, given the terminal when salloc has it, so that an
 * interactive shell's job control works; signals salloc itself receives are passed on to
 * that group. Every failure exits 1, as Slurm's salloc.
 */
#define _GNU_SOURCE /* pipe2, putenv, killpg */

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
#include <sys/wait.h>
#include <unistd.h>

#include "cli/client.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/path.h"
#include "slurm/alloc.h"
#include "slurm/sbatch.h"
#include "slurm/sig_pipe.h"

#define SALLOC_KILL_WAIT_MS 5000 /* after the hang-up, until COMMAND is killed */

static const char salloc_usage[] =
    "Usage: salloc [OPTIONS] [: OPTIONS]... [COMMAND [ARGS...]]\n"
    "  sbatch's options (-N -n --ntasks-per-node -c --gres -G -t -p -J -A -q -w ...) ask for\n"
    "  the allocation; COMMAND (default $SHELL) runs here with SLURM_JOB_ID and the rest set,\n"
    "  and `srun` in it runs steps on the allocated nodes. The allocation ends with COMMAND.\n"
    "  ':' starts a further component of a heterogeneous allocation (srun --het-group=K).\n"
    "  -I, --immediate[=S]: give up (exit 1, the job cancelled) unless granted within S\n"
    "  seconds (1 without S).\n";

static int sig_fd = -1; /* the signal self-pipe's read end (sig_pipe.h) */
static const int caught[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD};

static int catch_signals(void)
{
    sig_fd = slurm_sig_pipe_open(caught, sizeof(caught) / sizeof(caught[0]), true);
    if (sig_fd < 0)
        return sig_fd;
    signal(SIGTTOU, SIG_IGN); /* handing the terminal to COMMAND and taking it back */
    return 0;
}

/*
 * In the child: its own process group, given the terminal (tty) before anything else runs,
 * since an interactive shell that starts in the background stops itself; then default
 * signals, the job's variables, and exec.
 */
static void exec_command(char **command, char **env, bool tty)
{
    setpgid(0, 0);
    if (tty)
        tcsetpgrp(STDIN_FILENO, getpid()); /* SIGTTOU is still ignored here */
    for (size_t i = 0; i < sizeof(caught) / sizeof(caught[0]); i++)
        signal(caught[i], SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGTTOU, SIG_DFL);
    for (size_t i = 0; env[i] != NULL; i++)
        putenv(env[i]);
    execvp(command[0], command);
    fprintf(stderr, "salloc: error: %s: %s\n", command[0], strerror(errno));
    _exit(127);
}

struct salloc_run {
    struct cli_alloc *al;
    pid_t child;
    int status; /* waitpid's, once it ended */
    bool ended;
    bool revoked; /* the allocation ended under COMMAND */
    bool tty;     /* COMMAND was given the terminal */
    uint64_t kill_at_ms;
};

static void reap(struct salloc_run *r)
{
    if (!r->ended && waitpid(r->child, &r->status, WNOHANG) == r->child)
        r->ended = true;
}

static void hang_up(struct salloc_run *r)
{
    r->revoked = true;
    killpg(r->child, SIGHUP);
    kill(r->child, SIGCONT); /* a stopped shell hears the hang-up too */
    r->kill_at_ms = gs_clock_mono_ms() + SALLOC_KILL_WAIT_MS;
}

/* Waits for COMMAND, passing signals on and watching the allocation. */
static void supervise(struct salloc_run *r)
{
    while (!r->ended) {
        struct pollfd p[2] = {{.fd = sig_fd, .events = POLLIN},
                              {.fd = r->al->fd, .events = POLLIN}};
        int timeout = -1;
        unsigned char sigs[16];
        ssize_t got;

        if (r->revoked) {
            uint64_t now = gs_clock_mono_ms();

            if (now >= r->kill_at_ms) {
                killpg(r->child, SIGKILL);
                r->kill_at_ms = UINT64_MAX;
            }
            timeout = r->kill_at_ms == UINT64_MAX ? -1 : (int)(r->kill_at_ms - now);
        }
        if (poll(p, r->revoked ? 1 : 2, timeout) < 0 && errno != EINTR)
            break;
        got = (p[0].revents & POLLIN) ? read(sig_fd, sigs, sizeof(sigs)) : 0;
        for (ssize_t i = 0; i < got; i++) {
            if (sigs[i] != SIGCHLD)
                killpg(r->child, sigs[i]);
        }
        reap(r);
        if (!r->revoked && !r->ended && (p[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
            cli_alloc_poll(r->al) != 0)
            hang_up(r);
    }
    if (!r->ended && waitpid(r->child, &r->status, 0) == r->child)
        r->ended = true;
}

/* srun in COMMAND reaches gschedd the way salloc did, wherever COMMAND changes directory
 * (a local cluster's ./.gsched socket made absolute; a HOST:PORT target as it is). */
static int hand_on_socket(const char *socket_path)
{
    struct gs_buf path = GS_BUF_INIT;
    char cwd[4096];
    int rc = 0;

    if (socket_path[0] != '/' && cli_target(socket_path) == socket_path)
        rc = getcwd(cwd, sizeof(cwd)) != NULL ? gs_path_absolute(cwd, socket_path, &path) : -errno;
    if (rc == 0 && setenv("GSCHED_SOCKET", path.data != NULL ? path.data : socket_path, 1) < 0)
        rc = -errno;
    gs_buf_release(&path);
    return rc;
}

static int run_command(struct cli_alloc *al, char **command)
{
    struct salloc_run r = {.al = al, .status = 0};

    r.tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
    r.child = fork();
    if (r.child < 0) {
        fprintf(stderr, "salloc: error: fork: %s\n", strerror(errno));
        return 1;
    }
    if (r.child == 0)
        exec_command(command, al->env, r.tty);
    /* Both sides, whichever runs first: as shells start their jobs. */
    setpgid(r.child, r.child);
    if (r.tty)
        tcsetpgrp(STDIN_FILENO, r.child);
    supervise(&r);
    if (r.tty)
        tcsetpgrp(STDIN_FILENO, getpgrp());
    if (!r.revoked)
        cli_alloc_release(al, WIFEXITED(r.status) ? WEXITSTATUS(r.status) : 0,
                          WIFSIGNALED(r.status) ? WTERMSIG(r.status) : 0, true);
    if (WIFSIGNALED(r.status))
        return 128 + WTERMSIG(r.status);
    return WIFEXITED(r.status) ? WEXITSTATUS(r.status) : 1;
}

/*
 * Where salloc's command starts: past the options, and past each lone ':' between a
 * heterogeneous job's components (salloc -N1 : -N2 bash), which sbatch's reader splits.
 */
static int command_index(int argc, char **argv)
{
    int at = 1;

    for (;;) {
        at += gs_sbatch_script_index(argc - at, argv + at);
        if (at >= argc || strcmp(argv[at], ":") != 0)
            return at;
        at++;
    }
}

int cli_cmd_salloc(int argc, char **argv)
{
    struct cli_alloc al = {.prog = "salloc", .fd = -1};
    struct gs_jobspec *spec = NULL;
    char socket_path[108];
    char *shell[] = {getenv("SHELL"), NULL};
    char **command;
    int at = command_index(argc, argv), nopts;
    int status = 1;

    for (int i = 1; i < at; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "--usage") == 0) {
            fputs(salloc_usage, stdout);
            return 0;
        }
    }
    if (shell[0] == NULL || shell[0][0] == '\0')
        shell[0] = "/bin/sh";
    command = at < argc ? argv + at : shell;
    nopts = at - 1;
    if (cli_alloc_take_immediate(&al, argv + 1, &nopts) < 0 ||
        cli_alloc_spec("salloc", argv + 1, nopts, command[0], &spec) < 0)
        goto out;
    if (cli_socket_path(NULL, socket_path, sizeof(socket_path)) < 0)
        goto out;
    if (catch_signals() < 0) {
        fprintf(stderr, "salloc: error: cannot set up signal handling: %s\n", strerror(errno));
        goto out;
    }
    if (cli_alloc_get(&al, spec, socket_path, sig_fd) != 0)
        goto out;
    if (hand_on_socket(socket_path) < 0) {
        fprintf(stderr, "salloc: error: out of memory\n");
        goto out;
    }
    status = run_command(&al, command);
out:
    cli_alloc_release_fds(&al);
    gs_jobspec_free(spec);
    return status;
}
