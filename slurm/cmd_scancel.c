/*
 * cmd_scancel.c: `scancel` (also `gsched scancel`): end jobs, or send them a signal, the
 * way Slurm's scancel is called from scripts:
 *
 *     scancel 42 123_4 '123_[1-3]'      # jobs, array elements, element ranges
 *     scancel -u alice -t PENDING       # every pending job of alice
 *     scancel -s USR1 42                # only deliver SIGUSR1 (CancelRequest.signal)
 *
 * Options: -u/--user, -n/--name (--jobname), -t/--state, -p/--partition, -A/--account,
 * -q/--qos, -s/--signal, -b/--batch (the signal goes to the batch shell alone, not to its
 * srun steps; SIGKILL when no -s), --me, -v, and gsched's --socket. Silent on success, like
 * scancel; each failure is "scancel: error: ..." and the exit status is 1.
 *
 * Plain job ids go to gschedd as they are (it matches an id against a job's own and its
 * array's, so "123" cancels every element of array 123). Element ids and filters are first
 * resolved against the queue here, and only the matching jobs' own ids are sent: an empty
 * selector would select every job. One component of a heterogeneous job ("42+1") is refused
 * before anything is sent (slurm_resolve_ids): gschedd cancels such a job only as a whole.
 * Not supported: -i/--interactive, -f/--full.
 */
#include "slurm/commands.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/args.h"
#include "slurm/slurm_cmd.h"
#include "slurm/slurm_fmt.h"

#define CMD "scancel"

struct scancel_args {
    struct slurm_filter filter;
    struct slurm_job_ref refs[SLURM_MAX_REFS];
    const char *socket_opt;
    uint32_t signal;
    bool verbose, batch;
    char me[64];
};

/* One operand, one job: scancel takes no comma lists. */
static int add_ref(struct scancel_args *x, const char *text)
{
    if (x->filter.nrefs == SLURM_MAX_REFS)
        return slurm_error(CMD, "at most %d job ids", SLURM_MAX_REFS);
    if (slurm_job_ref_parse(text, &x->refs[x->filter.nrefs]) < 0)
        return slurm_error(CMD, "Invalid job id %s", text);
    x->filter.nrefs++;
    return 0;
}

static void usage(FILE *f)
{
    fputs("Usage: scancel [-b] [-s signal] [-u user] [-n name] [-t state] [-p partition] [-A "
          "account]\n"
          "               [-q qos] [--me] [-v] [--socket PATH] [job_id[_array_id]...]\n",
          f);
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct scancel_args *x)
{
    static const struct option opts[] = {
        {"user", required_argument, NULL, 'u'},
        {"name", required_argument, NULL, 'n'},
        {"jobname", required_argument, NULL, 'n'},
        {"state", required_argument, NULL, 't'},
        {"partition", required_argument, NULL, 'p'},
        {"account", required_argument, NULL, 'A'},
        {"qos", required_argument, NULL, 'q'},
        {"signal", required_argument, NULL, 's'},
        {"me", no_argument, NULL, 'm'},
        {"verbose", no_argument, NULL, 'v'},
        {"batch", no_argument, NULL, 'b'},
        {"interactive", no_argument, NULL, 'i'},
        {"help", no_argument, NULL, 'h'},
        {"usage", no_argument, NULL, 'U'},
        {"socket", required_argument, NULL, 'S'},
        {NULL, 0, NULL, 0},
    };
    int c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":u:n:t:p:A:q:s:vbih", opts, NULL)) != -1) {
        switch (c) {
        case 'u':
            x->filter.users = optarg;
            break;
        case 'n':
            x->filter.names = optarg;
            break;
        case 't':
            if (slurm_states_option(CMD, "job state", optarg, &x->filter.states) != 0)
                return 1;
            break;
        case 'p':
            x->filter.partitions = optarg;
            break;
        case 'A':
            x->filter.accounts = optarg;
            break;
        case 'q':
            x->filter.qos = optarg;
            break;
        case 's':
            if (cli_parse_signal(optarg, &x->signal) < 0)
                return slurm_error(CMD, "Invalid job signal: %s", optarg);
            break;
        case 'm':
            x->filter.users = slurm_my_name(x->me, sizeof(x->me));
            break;
        case 'v':
            x->verbose = true;
            break;
        case 'b':
            x->batch = true;
            break;
        case 'i':
            return slurm_error(CMD, "%s is not supported by gsched", argv[optind - 1]);
        case 'S':
            x->socket_opt = optarg;
            break;
        case 'h':
        case 'U':
            usage(stdout);
            return 0;
        default:
            return slurm_opt_error(CMD, c, optopt, argv[optind - 1]);
        }
    }
    for (; optind < argc; optind++) {
        if (add_ref(x, argv[optind]) != 0)
            return 1;
    }
    if (x->filter.nrefs == 0 && !slurm_filter_narrows(&x->filter))
        return slurm_error(CMD, "No job identification provided");
    return -1;
}

/*
 * The ids to send (slurm_resolve_ids). A typed id that matched nothing in the queue is an
 * error, as Slurm's "Invalid job id", unless filters narrowed the choice. *ret_ids is
 * caller-freed. Returns 0 or the exit status.
 */
static int resolve(const struct scancel_args *x, uint64_t **ret_ids, size_t *ret_n,
                   bool *ret_missing)
{
    Gs__Envelope *queue = NULL;
    const Gs__QueueReply *r;
    int status = slurm_resolve_ids(CMD, x->socket_opt, &x->filter, ret_ids, ret_n, &queue);

    *ret_missing = false;
    if (status != 0 || queue == NULL || slurm_filter_narrows(&x->filter))
        goto out;
    r = queue->queue_reply;
    for (size_t k = 0; k < x->filter.nrefs; k++) {
        bool found = false;

        for (size_t i = 0; !found && i < r->n_jobs; i++)
            found = slurm_job_ref_match(&x->refs[k], r->jobs[i]);
        if (!found) {
            slurm_error(CMD, "Kill job error on job id %llu%s: Invalid job id specified",
                        (unsigned long long)x->refs[k].id, x->refs[k].nranges > 0 ? "_*" : "");
            *ret_missing = true;
        }
    }
out:
    gs_proto_envelope_free(queue);
    return status;
}

int cli_cmd_scancel(int argc, char **argv)
{
    struct scancel_args x = {0};
    Gs__JobSelector sel = GS__JOB_SELECTOR__INIT;
    Gs__CancelRequest cancel = GS__CANCEL_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    uint64_t *ids = NULL;
    size_t n = 0;
    bool missing = false, failed;
    int status = parse_args(argc, argv, &x);

    if (status >= 0)
        goto out;
    x.filter.refs = x.refs;
    status = resolve(&x, &ids, &n, &missing);
    if (status != 0)
        goto out;
    failed = missing;
    if (n == 0) { /* nothing matched the filters: nothing to do, as in Slurm */
        status = failed ? 1 : 0;
        goto out;
    }
    sel.job_ids = ids;
    sel.n_job_ids = n;
    cancel.selector = &sel;
    /* -b without -s kills the batch shell, which ends the job the way its script would. */
    if (x.batch && x.signal == 0)
        x.signal = SIGKILL;
    cancel.signal = x.signal;
    cancel.batch_only = x.batch;
    cancel.reason = "";
    env.body_case = GS__ENVELOPE__BODY_CANCEL_REQUEST;
    env.cancel_request = &cancel;
    status = slurm_call(x.socket_opt, &env, GS__ENVELOPE__BODY_CANCEL_REPLY, &reply);
    if (status != 0)
        goto out;
    for (size_t i = 0; i < reply->cancel_reply->n_results; i++) {
        const Gs__JobActionResult *res = reply->cancel_reply->results[i];

        if (res->code == -ENOENT)
            slurm_error(CMD, "Kill job error on job id %llu: Invalid job id specified",
                        (unsigned long long)res->job_id);
        else if (res->code != 0)
            slurm_error(CMD, "Kill job error on job id %llu: %s", (unsigned long long)res->job_id,
                        slurm_result_message(res));
        else if (x.verbose)
            fprintf(stderr, "scancel: %s job %llu\n", x.signal != 0 ? "Signalled" : "Terminating",
                    (unsigned long long)res->job_id);
        failed |= res->code != 0;
    }
    status = failed ? 1 : 0;
out:
    gs_proto_envelope_free(reply);
    free(ids);
    return status;
}
