/*
 * cmd_mpirun.c: `gsched mpirun` and `gsched rsh`, how Open MPI starts a job's ranks on the
 * job's nodes through gsched's workers rather than through ssh (docs/job-file.md, launcher).
 *
 * `gsched mpirun [MPIRUN OPTIONS --] PROGRAM [ARGS]` runs inside a job (a job file's
 * `launcher = "mpi"` leader runs it; a batch script may too). It turns the job's layout,
 * GSCHED_NODELIST and GSCHED_TASKS_PER_NODE, into mpirun's `--host n1:2,n2:2 -np 4` and
 * points Open MPI's remote-shell launcher at `gsched rsh`, then becomes mpirun. mpirun's
 * own binding is turned off (`--bind-to none`) unless the options name one: the workers
 * already bound each node's share to the job's cores.
 *
 * `gsched rsh HOST COMMAND...` is that remote shell: what ssh would do, a shell on HOST
 * running the words joined by spaces, is an `srun --overlap -N1 -n1 -w HOST` step of the
 * same job, so mpirun's daemon (orted) on HOST is a task of HOST's worker: bound, limited,
 * logged, ended with the job, and reaching gschedd through that node's worker socket. The
 * per-task rank variables of that one-task step would mislead the ranks the daemon starts,
 * so the shell unsets them; Open MPI gives each rank its own (OMPI_COMM_WORLD_RANK...).
 * GSCHED_NODELIST and GSCHED_NODE_RANK are set back to the job's, as its tasks have them,
 * and each daemon gets its own session directory (see with_session_dir()).
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "common/buf.h"
#include "common/hostlist.h"
#include "slurm/commands.h"

/* Rank variables of the rsh step's one task, wrong for the ranks its daemon starts. */
#define RSH_UNSET "unset RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE SLURM_PROCID SLURM_LOCALID; "

/*
 * The job's node list and host's place in it, which the one-node rsh step would otherwise
 * give as "host" and 0, as shell assignments. Nothing when host is not in the list.
 */
static int node_vars(const char *host, struct gs_buf *line)
{
    const char *nodes = getenv("GSCHED_NODELIST");
    char **names = NULL;
    size_t n = 0;
    struct gs_error err;
    int rc = 0;

    gs_error_clear(&err);
    if (nodes == NULL ||
        strspn(nodes, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789-_.,[]") != strlen(nodes) ||
        gs_hostlist_expand(nodes, &names, &n, &err) < 0)
        return 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (strcmp(names[i], host) == 0)
            rc = gs_buf_printf(line,
                               "export GSCHED_NODELIST='%s' GSCHED_NODE_RANK=%zu NODE_RANK=%zu; ",
                               nodes, i, i);
    }
    gs_hostlist_free(names);
    return rc;
}

static const char mpirun_usage[] =
    "usage: gsched mpirun [MPIRUN OPTIONS --] PROGRAM [ARGS]\n"
    "  inside a job: mpirun PROGRAM with one rank per task slot of the job's nodes\n"
    "  (GSCHED_NODELIST, GSCHED_TASKS_PER_NODE), its daemons started by gsched rsh.\n"
    "  GSCHED_MPIRUN names the mpirun to run (default: mpirun from PATH).\n";

static const char rsh_usage[] = "usage: gsched rsh HOST COMMAND [ARGS]\n"
                                "  inside a job: run the words joined as a shell command on HOST,\n"
                                "  one of the job's nodes (Open MPI's plm_rsh_agent)\n";

/* The job this runs in: $GSCHED_JOB_ID, else Slurm's. NULL when not inside a job. */
static const char *job_id_here(void)
{
    const char *id = getenv("GSCHED_JOB_ID");

    if (id == NULL || id[0] == '\0')
        id = getenv("SLURM_JOB_ID");
    return id != NULL && id[0] != '\0' ? id : NULL;
}

/* --host's value, "n1:2,n2:2", and the ranks in all, from the job's layout. */
static int host_list(struct gs_buf *hosts, unsigned long long *ret_np)
{
    const char *nodes = getenv("GSCHED_NODELIST"), *counts = getenv("GSCHED_TASKS_PER_NODE");
    char **names = NULL;
    uint32_t *per = NULL;
    size_t nnames = 0, ncounts = 0;
    unsigned long long np = 0;
    struct gs_error err;
    int rc;

    if (nodes == NULL || counts == NULL) {
        fprintf(stderr, "gsched mpirun: GSCHED_NODELIST and GSCHED_TASKS_PER_NODE are not set; "
                        "run it inside a gsched job\n");
        return -EINVAL;
    }
    gs_error_clear(&err);
    rc = gs_hostlist_expand(nodes, &names, &nnames, &err);
    if (rc < 0) {
        fprintf(stderr, "gsched mpirun: GSCHED_NODELIST '%s', column %d: %s\n", nodes, err.col,
                err.msg);
        goto out;
    }
    rc = gs_hostlist_counts_parse(counts, &per, &ncounts, &err);
    if (rc < 0) {
        fprintf(stderr, "gsched mpirun: GSCHED_TASKS_PER_NODE '%s', column %d: %s\n", counts,
                err.col, err.msg);
        goto out;
    }
    if (ncounts != nnames) {
        fprintf(stderr,
                "gsched mpirun: GSCHED_TASKS_PER_NODE '%s' counts %zu nodes, "
                "GSCHED_NODELIST '%s' names %zu\n",
                counts, ncounts, nodes, nnames);
        rc = -EINVAL;
        goto out;
    }
    for (size_t i = 0; i < nnames && rc == 0; i++) {
        rc = gs_buf_printf(hosts, "%s%s:%u", i > 0 ? "," : "", names[i], per[i]);
        np += per[i];
    }
    *ret_np = np;
out:
    gs_hostlist_free(names);
    free(per);
    return rc;
}

/* This program's own path, for the agent mpirun calls back. */
static int self_path(char *out, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", out, size - 1);

    if (n <= 0)
        return -errno;
    out[n] = '\0';
    return 0;
}

static bool names_binding(char **opts, int nopts)
{
    for (int i = 0; i < nopts; i++) {
        if (strcmp(opts[i], "--bind-to") == 0 || strcmp(opts[i], "-bind-to") == 0 ||
            strncmp(opts[i], "--bind-to=", 10) == 0)
            return true;
    }
    return false;
}

/* mpirun's pid for the forwarding handler; the one piece of state a handler can reach. */
static volatile sig_atomic_t mpirun_pid;

static void forward_signal(int signum)
{
    if (mpirun_pid > 0)
        kill((pid_t)mpirun_pid, signum);
}

/* The exit status a shell would give for a wait status. */
static int exit_status(int wstatus)
{
    return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
}

/*
 * Waits for what mpirun left behind, the rsh steps reparented here, so the job's leader
 * ends after its daemons and their steps report; after a while they are ended.
 */
static void reap_rest(pid_t group)
{
    for (int tick = 0;; tick++) {
        pid_t pid = waitpid(-1, NULL, WNOHANG);

        if (pid < 0 && errno == ECHILD)
            return;
        if (pid > 0)
            continue;
        if (tick == 200) /* 10 s */
            kill(-group, SIGTERM);
        if (tick == 300) {
            kill(-group, SIGKILL);
            return;
        }
        nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
    }
}

/*
 * Runs mpirun in its own process group, dying with this process, and passes it every
 * signal this one gets: the worker signals the leader's group (a cancel, a time-limit
 * warning) and mpirun, not each of its pieces, knows how to stop a distributed run. This
 * process is the subreaper of mpirun's children. Returns mpirun's exit status.
 */
static int run_mpirun(char **cmd)
{
    static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};
    struct sigaction sa = {.sa_handler = forward_signal};
    int wstatus = 0;
    pid_t pid;

    sigemptyset(&sa.sa_mask);
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        fprintf(stderr, "gsched mpirun: warning: cannot adopt mpirun's children: %s\n",
                strerror(errno));
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gsched mpirun: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
            _exit(1);
        execvp(cmd[0], cmd);
        fprintf(stderr,
                "gsched mpirun: cannot run %s: %s (install openmpi-bin, or set GSCHED_MPIRUN)\n",
                cmd[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid); /* either side may get there first */
    mpirun_pid = pid;
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        sigaction(forwarded[i], &sa, NULL);
    for (;;) {
        pid_t got = waitpid(-1, &wstatus, 0);

        if (got == pid)
            break;
        if (got < 0 && errno != EINTR) {
            fprintf(stderr, "gsched mpirun: waitpid: %s\n", strerror(errno));
            return 1;
        }
    }
    mpirun_pid = 0;
    reap_rest(pid);
    return exit_status(wstatus);
}

int cli_cmd_mpirun(int argc, char **argv)
{
    const char *mpirun = getenv("GSCHED_MPIRUN");
    struct gs_buf hosts = GS_BUF_INIT, agent = GS_BUF_INIT;
    char self[4096], np_text[32], **cmd = NULL, **opts = argv + 1, **prog = argv + 1;
    int nopts = 0, nprog = argc - 1, k = 0, status = 1;
    unsigned long long np = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) { /* mpirun's options, then the program */
            nopts = i - 1;
            prog = argv + i + 1;
            nprog = argc - i - 1;
            break;
        }
    }
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(mpirun_usage, stdout);
        return 0;
    }
    if (nprog == 0 || prog[0][0] == '-') {
        fputs(nprog == 0 ? "gsched mpirun: which program? (gsched mpirun [OPTIONS --] PROGRAM)\n"
                         : "gsched mpirun: mpirun's options go before '--' "
                           "(gsched mpirun -x VAR -- PROGRAM)\n",
              stderr);
        return 2;
    }
    if (job_id_here() == NULL) {
        fputs("gsched mpirun: runs inside a job (no GSCHED_JOB_ID); put it in a job file's "
              "command with launcher = \"mpi\", or in a batch script\n",
              stderr);
        return 2;
    }
    if (host_list(&hosts, &np) < 0)
        goto out;
    if (self_path(self, sizeof(self)) < 0 || gs_buf_printf(&agent, "%s rsh", self) < 0) {
        fprintf(stderr, "gsched mpirun: cannot find this program's path: %s\n", strerror(errno));
        goto out;
    }
    snprintf(np_text, sizeof(np_text), "%llu", np);
    /* Open MPI refuses root unless told: a root job is root's own choice here. */
    if (geteuid() == 0 && (setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1) < 0 ||
                           setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1) < 0))
        goto nomem;
    /* PMIx's shared-memory store assumes one daemon per host; several workers on one
     * machine (gsched up --workers N) would share it. The hash store has no such limit. */
    if (setenv("PMIX_MCA_gds", "hash", 0) < 0)
        goto nomem;
    cmd = calloc((size_t)(nopts + nprog) + 24, sizeof(*cmd));
    if (cmd == NULL)
        goto nomem;
    cmd[k++] = (char *)(mpirun != NULL && mpirun[0] != '\0' ? mpirun : "mpirun");
    cmd[k++] = "--host";
    cmd[k++] = hosts.data;
    cmd[k++] = "-np";
    cmd[k++] = np_text;
    /* The daemons stay the rsh steps' processes (no --daemonize), so they end with them. */
    cmd[k++] = "--leave-session-attached";
    cmd[k++] = "--mca";
    cmd[k++] = "plm";
    cmd[k++] = "rsh";
    cmd[k++] = "--mca";
    cmd[k++] = "plm_rsh_agent";
    cmd[k++] = agent.data;
    /* Every daemon from here: each is a step of this job, started by the same gschedd. */
    cmd[k++] = "--mca";
    cmd[k++] = "plm_rsh_no_tree_spawn";
    cmd[k++] = "1";
    if (!names_binding(opts, nopts)) {
        cmd[k++] = "--bind-to";
        cmd[k++] = "none";
    }
    for (int i = 0; i < nopts; i++)
        cmd[k++] = opts[i];
    for (int i = 0; i < nprog; i++)
        cmd[k++] = prog[i];
    status = run_mpirun(cmd);
    goto out;
nomem:
    fputs("gsched mpirun: out of memory\n", stderr);
out:
    free(cmd);
    gs_buf_release(&hosts);
    gs_buf_release(&agent);
    return status;
}

static bool plain_word(const char *s)
{
    return s[0] != '\0' &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") ==
               strlen(s);
}

/*
 * Open MPI keeps a daemon's session files (the topology it shares with its ranks, among
 * them) under a directory named by the real host: two "nodes" of one machine would write
 * the same files and crash each other. Each rsh step gets its own base, removed after:
 * appends cmd run that way (or as it is, when host or job would need quoting).
 */
static int with_session_dir(const char *host, const char *job, const char *cmd, struct gs_buf *line)
{
    if (!plain_word(host) || !plain_word(job))
        return gs_buf_append_str(line, cmd);
    return gs_buf_printf(line,
                         "d=\"${TMPDIR:-/tmp}/gsched-ompi-%s-%s\"; mkdir -p \"$d\" && "
                         "export OMPI_MCA_orte_tmpdir_base=\"$d\"; %s; rc=$?; "
                         "rmdir \"$d\" 2>/dev/null; exit $rc",
                         job, host, cmd);
}

int cli_cmd_rsh(int argc, char **argv)
{
    struct gs_buf line = GS_BUF_INIT, cmd = GS_BUF_INIT;
    const char *job = job_id_here();
    char jobopt[64];
    int i = 1, status = 1, rc = 0;

    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(rsh_usage, stdout);
        return 0;
    }
    if (argc < 3) {
        fputs(rsh_usage, stderr);
        return 2;
    }
    if (job == NULL) {
        fputs("gsched rsh: runs inside a job (no GSCHED_JOB_ID)\n", stderr);
        return 2;
    }
    snprintf(jobopt, sizeof(jobopt), "--jobid=%s", job);
    rc = gs_buf_append_str(&line, RSH_UNSET);
    if (rc == 0)
        rc = node_vars(argv[1], &line);
    for (i = 2; i < argc && rc == 0; i++) /* as ssh does: the words joined by spaces */
        rc = gs_buf_printf(&cmd, "%s%s", i > 2 ? " " : "", argv[i]);
    if (rc == 0)
        rc = with_session_dir(argv[1], job, cmd.data, &line);
    if (rc == 0) {
        char *srun[] = {"srun", "--overlap", "-N1", "-n1",     "-w", argv[1],
                        jobopt, "/bin/sh",   "-c",  line.data, NULL};

        status = cli_cmd_srun((int)(sizeof(srun) / sizeof(srun[0])) - 1, srun);
    } else {
        fputs("gsched rsh: out of memory\n", stderr);
    }
    gs_buf_release(&line);
    gs_buf_release(&cmd);
    return status;
}
