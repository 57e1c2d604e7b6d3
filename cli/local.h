/*
 * local.h: the mechanics of a local cluster (`gsched up` / `gsched down`, cli/cmd_up.c):
 * one state directory holding everything a gschedd and its workers on this machine need.
 *
 *     DIR/gsched.toml                  the configuration, rewritten by every `up`
 *     DIR/gschedd.sock                 the CLI's socket (gschedd creates it)
 *     DIR/nodeI.sock                   worker I's CLI socket, its tasks' GSCHED_SOCKET
 *                                      (the worker creates it, worker/relay.h)
 *     DIR/gschedd.pid, DIR/nodeI.pid   "PID\n" of each daemon, from `up` until `down`
 *     DIR/gschedd.log, DIR/nodeI.log   each daemon's stdout and stderr, appended run after run
 *     anything else                    the scheduler's own state (state_dir), kept by `down`
 *
 * A pid file counts only while /proc/PID/stat shows a live process (not a zombie) with the
 * daemon's program name: pids are reused, and `down` must never signal a stranger. The
 * daemons run in their own sessions; while `up` still runs they are its children and are
 * reaped here, afterwards init owns them.
 *
 * Messages for the user are printed here, prefixed "gsched CMD:" by the caller's cmd.
 * Single-threaded; struct cli_local is caller-owned storage with nothing to free.
 */
#ifndef GS_CLI_LOCAL_H
#define GS_CLI_LOCAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define CLI_LOCAL_MAX_WORKERS 64

struct cli_daemon {
    char name[16];    /* "gschedd" or "nodeI": its pid and log files are DIR/NAME.pid, .log */
    const char *prog; /* "gschedd" or "gsched-workerd", what /proc/PID/stat must show */
    pid_t pid;        /* 0: none known */
    bool running;
    bool child;    /* started by this process, so waitpid reaps it */
    off_t log_off; /* the log's size before the start: this run's lines begin there */
};

struct cli_local {
    const char *cmd;    /* "up" or "down", for messages */
    char dir[PATH_MAX]; /* absolute */
    unsigned nworkers;  /* daemons[1..nworkers] are node1..nodeN */
    struct cli_daemon daemons[1 + CLI_LOCAL_MAX_WORKERS]; /* [0] is gschedd */
};

/*
 * Resolves dir to an absolute path in l->dir, creating it with mode 0700 when create is set,
 * and names the daemons. Returns 0, or prints why not and returns -ENOENT (no such directory,
 * create unset), -ENOTDIR, -ENAMETOOLONG (no room for the socket path) or another -errno.
 */
int cli_local_init(struct cli_local *l, const char *cmd, const char *dir, bool create);

/* The absolute, symlink-free path of an existing path into out (PATH_MAX bytes).
 * Returns 0 or -errno. */
int cli_local_resolve(const char *path, char *out);

/* DIR/NAME into out. Returns 0 or -ENAMETOOLONG. */
int cli_local_path(const struct cli_local *l, const char *name, char *out, size_t size);

/* Reads every pid file; a daemon runs when its process is alive. nworkers becomes the
 * highest node number found. Returns how many run. */
int cli_local_load(struct cli_local *l);

/* Removes the pid files (and workers' sockets) of the daemons that do not run, and gschedd's
 * socket unless it runs. */
void cli_local_forget(struct cli_local *l);

/*
 * Starts argv[0] (an absolute path) as d: its own session, stdin /dev/null, stdout and
 * stderr appended to DIR/NAME.log, DIR/NAME.pid written. Returns 0, or prints why not (an
 * exec failure included) and returns < 0.
 */
int cli_local_spawn(struct cli_local *l, struct cli_daemon *d, char *const argv[]);

/* What a daemon's process does between fork and exec (its namespaces, cli/local_netns.h):
 * async-signal-safe calls only; 0, or -errno, which fails the start like an exec error. */
struct cli_spawn_hook {
    int (*before_exec)(const void *data);
    const void *data;
};

/* cli_local_spawn with hook->before_exec(hook->data) run in the child (hook may be NULL). */
int cli_local_spawn_hooked(struct cli_local *l, struct cli_daemon *d, char *const argv[],
                           const struct cli_spawn_hook *hook);

/*
 * Stops the running daemons among ds[0..n-1]: SIGTERM, up to timeout_ms for them to end,
 * then SIGKILL. Returns 0 when all have ended, or prints which have not and returns < 0.
 */
int cli_local_stop(struct cli_local *l, struct cli_daemon *ds, size_t n, uint64_t timeout_ms);

/* True once d has ended; reaps it when it is a child, storing its wait status in *status. */
bool cli_local_ended(struct cli_daemon *d, int *status);

/* Prints the last lines d wrote to its log since d->log_off, indented, to stderr. */
void cli_local_print_tail(const struct cli_local *l, const struct cli_daemon *d, int lines);

/*
 * The program name of the same build or installation as this gsched: beside it (a build
 * tree), in ../sbin (an installation: the daemons go to sbin), then on PATH. Its path into
 * out; 0, or -ENOENT with "gsched CMD: cannot find NAME ..." printed.
 */
int cli_find_program(const char *cmd, const char *name, char *out, size_t size);

#endif
