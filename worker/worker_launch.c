/*
 * worker_launch.c: LaunchTasks and SignalTasks on a worker (see worker.h).
 *
 * For each task of this node: the command (argv, or the script under /bin/sh -c), the
 * environment (worker/env.h), the output files from the job's patterns, the job's user,
 * limits, and CPU binding to the task's cores when the topology is this machine's (a fake
 * topology's core numbers mean nothing here, so binding is skipped). Every task gets a
 * result in the LaunchTasksReply; one that could not start also gets a TaskExit saying
 * why, so the scheduler has a single path for "this task is over".
 */
#define _GNU_SOURCE /* getpwuid_r */

#include "worker/worker_internal.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/jobspec.h"
#include "common/log.h"
#include "worker/env.h"

/* What every task of one LaunchTasks shares. */
struct launch {
    struct wrk_ctx *w;
    const Gs__LaunchTasks *msg;
    char **job_env;
    char **argv;
    char nodelist[4096];
    uint32_t node_rank;
    char user[64];
    char home[256];
    bool set_user;
    Gs__TaskLaunchResult *results;
    Gs__TaskLaunchResult **result_ptrs;
    char (*messages)[256];
};

struct wrk_job *wrk_job_find(struct wrk_ctx *w, uint64_t job_id)
{
    for (struct wrk_job *j = w->jobs; j != NULL; j = j->next) {
        if (j->job_id == job_id)
            return j;
    }
    return NULL;
}

static int remember_job(struct wrk_ctx *w, uint64_t job_id, uint32_t attempt)
{
    struct wrk_job *j = wrk_job_find(w, job_id);

    if (j == NULL) {
        j = calloc(1, sizeof(*j));
        if (j == NULL)
            return -ENOMEM;
        j->job_id = job_id;
        j->next = w->jobs;
        w->jobs = j;
    }
    j->attempt = attempt;
    return 0;
}

static void free_strv(char **v)
{
    for (size_t i = 0; v != NULL && v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

static int build_job_env(struct launch *l)
{
    const Gs__LaunchTasks *m = l->msg;

    l->job_env = calloc(m->n_env + 1, sizeof(char *));
    if (l->job_env == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < m->n_env; i++) {
        struct gs_buf kv = GS_BUF_INIT;

        if (gs_buf_printf(&kv, "%s=%s", m->env[i]->key, m->env[i]->value) < 0)
            return -ENOMEM;
        l->job_env[i] = gs_buf_detach(&kv, NULL);
        if (l->job_env[i] == NULL)
            return -ENOMEM;
    }
    return 0;
}

static int build_argv(struct launch *l)
{
    const Gs__RunSpec *run = l->msg->run;
    size_t n = run != NULL ? run->n_argv : 0;

    if (run == NULL || (n == 0 && (run->script == NULL || run->script[0] == '\0')))
        return -EINVAL;
    l->argv = calloc(n > 0 ? n + 1 : 4, sizeof(char *));
    if (l->argv == NULL)
        return -ENOMEM;
    if (n == 0) {
        l->argv[0] = strdup("/bin/sh");
        l->argv[1] = strdup("-c");
        l->argv[2] = strdup(run->script);
        n = 3;
    } else {
        for (size_t i = 0; i < n; i++)
            l->argv[i] = strdup(run->argv[i]);
    }
    for (size_t i = 0; i < n; i++) {
        if (l->argv[i] == NULL)
            return -ENOMEM;
    }
    return 0;
}

static void describe_allocation(struct launch *l)
{
    size_t off = 0;

    l->nodelist[0] = '\0';
    for (size_t i = 0; i < l->msg->n_allocation; i++) {
        const char *name = l->msg->allocation[i]->node_name;
        int n =
            snprintf(l->nodelist + off, sizeof(l->nodelist) - off, "%s%s", i > 0 ? "," : "", name);

        if (n > 0 && (size_t)n < sizeof(l->nodelist) - off)
            off += (size_t)n;
        if (strcmp(name, l->w->node_name) == 0)
            l->node_rank = (uint32_t)i;
    }
}

/* Whose the tasks are: the job's user, if this worker may become it. */
static int resolve_user(struct launch *l, char *why, size_t why_size)
{
    const Gs__UserIdentity *u = l->msg->user;
    uid_t me = geteuid();
    struct passwd pw, *found = NULL;
    char buf[4096];

    if (u == NULL)
        return 0;
    if (u->uid != me && me != 0) {
        snprintf(why, why_size, "worker runs as uid %u and cannot start tasks as uid %u",
                 (unsigned)me, u->uid);
        return -EPERM;
    }
    l->set_user = me == 0 && u->uid != 0;
    getpwuid_r(u->uid, &pw, buf, sizeof(buf), &found);
    snprintf(l->user, sizeof(l->user), "%s",
             found != NULL ? found->pw_name : (u->username != NULL ? u->username : ""));
    snprintf(l->home, sizeof(l->home), "%s", found != NULL ? found->pw_dir : "");
    return 0;
}

/* The PUs of the task's cores, when the topology describes this machine. */
static int task_cpus(const struct launch *l, const Gs__TaskAssignment *t, int **ret_cpus)
{
    const struct gs_topo *topo = l->w->topo;
    size_t n = 0;
    int *cpus;

    *ret_cpus = NULL;
    if (t->n_cores == 0 || topo == NULL || !gs_topo_is_this_system(topo))
        return 0;
    cpus = calloc(t->n_cores * 8 + 1, sizeof(int));
    if (cpus == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < t->n_cores; i++) {
        const struct gs_topo_core *core = gs_topo_core(topo, (int)t->cores[i]);

        for (int p = 0; core != NULL && p < core->npus && p < 8; p++)
            cpus[n++] = core->pus[p];
    }
    *ret_cpus = cpus;
    return (int)n;
}

static int output_path(const struct launch *l, const char *pattern, uint32_t rank,
                       struct gs_buf *out)
{
    struct gs_pattern_vars vars = {l->msg->job_id, rank, l->w->node_name, l->msg->job_name,
                                   l->user};

    return gs_jobspec_expand_pattern(pattern, &vars, out);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

/* The PCI bus ids of the task's GPUs (borrowed from the topology), and its cores sorted. */
static int task_facts(const struct launch *l, const Gs__TaskAssignment *t, const char ***ret_ids,
                      uint32_t **ret_cores)
{
    const char **ids = calloc(t->n_gpus + 1, sizeof(*ids));
    uint32_t *cores = calloc(t->n_cores + 1, sizeof(*cores));

    if (ids == NULL || cores == NULL) {
        free(ids);
        free(cores);
        return -ENOMEM;
    }
    for (size_t i = 0; i < t->n_gpus; i++) {
        const struct gs_topo_gpu *g =
            l->w->topo != NULL ? gs_topo_gpu(l->w->topo, (int)t->gpus[i]) : NULL;
        ids[i] = g != NULL ? g->pci_bus_id : "";
    }
    if (t->n_cores > 0) {
        memcpy(cores, t->cores, t->n_cores * sizeof(*cores));
        qsort(cores, t->n_cores, sizeof(*cores), cmp_u32);
    }
    *ret_ids = ids;
    *ret_cores = cores;
    return 0;
}

static int start_task(struct launch *l, const Gs__TaskAssignment *t, struct gs_error *err)
{
    const Gs__RunSpec *run = l->msg->run;
    const Gs__TaskLimits *lim = l->msg->limits;
    struct wrk_task_env te = {l->msg->job_id,
                              l->msg->job_name,
                              l->nodelist,
                              t->rank,
                              t->local_rank,
                              l->msg->world_size,
                              (uint32_t)l->msg->n_tasks,
                              l->node_rank,
                              l->msg->master_addr,
                              l->msg->master_port,
                              t->gpus,
                              t->n_gpus,
                              l->user[0] ? l->user : NULL,
                              l->home[0] ? l->home : NULL,
                              l->job_env,
                              NULL,
                              NULL,
                              0};
    struct gs_buf out = GS_BUF_INIT, errp = GS_BUF_INIT;
    struct wrk_launch_spec spec = {.argv = l->argv};
    char **envp = NULL;
    const char **bus_ids = NULL;
    uint32_t *cores = NULL;
    int *cpus = NULL, ncpus, rc;

    rc = task_facts(l, t, &bus_ids, &cores);
    te.gpu_bus_ids = bus_ids;
    te.cores = cores;
    te.ncores = t->n_cores;
    if (rc == 0)
        rc = wrk_env_build(&te, &envp);
    if (rc == 0)
        rc =
            output_path(l, run->stdout_pattern[0] ? run->stdout_pattern : GS_JOBSPEC_DEFAULT_STDOUT,
                        t->rank, &out);
    if (rc == 0 && run->stderr_pattern[0] != '\0')
        rc = output_path(l, run->stderr_pattern, t->rank, &errp);
    ncpus = rc == 0 ? task_cpus(l, t, &cpus) : 0;
    if (rc < 0 || ncpus < 0) {
        rc = gs_error_set(err, rc < 0 ? rc : ncpus, 0, 0, "cannot prepare the task: %s",
                          gs_strerror(rc < 0 ? rc : ncpus));
        goto out;
    }
    spec.envp = envp;
    spec.workdir = run->workdir[0] != '\0' ? run->workdir : NULL;
    spec.stdout_path = out.data;
    spec.stderr_path = errp.data;
    spec.set_user = l->set_user;
    spec.uid = l->msg->user != NULL ? l->msg->user->uid : 0;
    spec.gid = l->msg->user != NULL ? l->msg->user->gid : 0;
    spec.mem_limit_bytes = lim != NULL ? lim->mem_limit_mib << 20 : 0;
    spec.max_open_files = lim != NULL ? lim->max_open_files : 0;
    spec.ncpus = ncpus;
    spec.cpus = cpus;
    rc = wrk_tasks_start(l->w->tasks, l->msg->job_id, t->rank, &spec,
                         lim != NULL ? lim->time_limit_s * 1000 : 0, err);
out:
    wrk_env_free(envp);
    free(bus_ids);
    free(cores);
    free(cpus);
    gs_buf_release(&out);
    gs_buf_release(&errp);
    return rc;
}

static void fail_task(struct launch *l, size_t i, int code, const char *message)
{
    const Gs__TaskAssignment *t = l->msg->tasks[i];

    l->results[i].code = code;
    snprintf(l->messages[i], sizeof(l->messages[i]), "%s", message);
    GS_LOG(GS_LOG_WARN, "job=%llu rank=%u error=\"%s\" launch failed",
           (unsigned long long)l->msg->job_id, t->rank, message);
    wrk_record_exit(l->w, l->msg->job_id, t->rank, l->msg->attempt, NULL,
                    GS__END_REASON__END_REASON_LAUNCH_FAILED, message);
}

static void send_reply(struct launch *l, uint64_t request_id)
{
    Gs__LaunchTasksReply reply = GS__LAUNCH_TASKS_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    reply.job_id = l->msg->job_id;
    reply.attempt = l->msg->attempt;
    reply.n_results = l->msg->n_tasks;
    reply.results = l->result_ptrs;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_LAUNCH_TASKS_REPLY;
    env.launch_tasks_reply = &reply;
    wrk_send(l->w, &env);
}

static int prepare(struct launch *l, char *why, size_t why_size)
{
    size_t n = l->msg->n_tasks;
    int rc;

    l->results = calloc(n + 1, sizeof(*l->results));
    l->result_ptrs = calloc(n + 1, sizeof(*l->result_ptrs));
    l->messages = calloc(n + 1, sizeof(*l->messages));
    if (l->results == NULL || l->result_ptrs == NULL || l->messages == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        gs__task_launch_result__init(&l->results[i]);
        l->results[i].rank = l->msg->tasks[i]->rank;
        l->results[i].message = l->messages[i];
        l->result_ptrs[i] = &l->results[i];
    }
    describe_allocation(l);
    rc = resolve_user(l, why, why_size);
    if (rc == 0 && (rc = build_argv(l)) == -EINVAL)
        snprintf(why, why_size, "the job has no command or script");
    if (rc == 0)
        rc = build_job_env(l);
    if (rc == 0)
        rc = remember_job(l->w, l->msg->job_id, l->msg->attempt);
    if (rc == -ENOMEM)
        snprintf(why, why_size, "out of memory");
    return rc;
}

void wrk_handle_launch(struct wrk_ctx *w, const Gs__LaunchTasks *msg, uint64_t request_id)
{
    struct launch l = {.w = w, .msg = msg};
    char why[256] = "";
    int rc = prepare(&l, why, sizeof(why));

    for (size_t i = 0; l.results != NULL && i < msg->n_tasks; i++) {
        struct gs_error err;

        if (rc < 0) {
            fail_task(&l, i, rc, why);
            continue;
        }
        gs_error_clear(&err);
        if (start_task(&l, msg->tasks[i], &err) < 0) {
            fail_task(&l, i, err.code, err.msg);
            continue;
        }
        wrk_job_find(w, msg->job_id)->ntasks++;
        GS_LOG(GS_LOG_INFO, "job=%llu rank=%u gpus=%zu task started",
               (unsigned long long)msg->job_id, msg->tasks[i]->rank, msg->tasks[i]->n_gpus);
    }
    if (l.results != NULL)
        send_reply(&l, request_id);
    if (wrk_job_find(w, msg->job_id) != NULL && wrk_job_find(w, msg->job_id)->ntasks <= 0)
        wrk_job_forget(w, wrk_job_find(w, msg->job_id));
    free_strv(l.job_env);
    free_strv(l.argv);
    free(l.results);
    free(l.result_ptrs);
    free(l.messages);
}

void wrk_handle_signal(struct wrk_ctx *w, const Gs__SignalTasks *msg)
{
    enum wrk_end_reason reason =
        msg->end_reason == GS__END_REASON__END_REASON_TIMEOUT ? WRK_END_TIMEOUT : WRK_END_CANCELLED;
    int n;

    if (msg->signal == 0)
        n = wrk_tasks_kill(w->tasks, msg->job_id, reason);
    else
        n = wrk_tasks_signal(w->tasks, msg->job_id, (int)msg->signal);
    GS_LOG(GS_LOG_INFO, "job=%llu signal=%u tasks=%d reason=\"%s\" signalled",
           (unsigned long long)msg->job_id, msg->signal, n, msg->reason != NULL ? msg->reason : "");
}
