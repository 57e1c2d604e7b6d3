/*
 * live_fuzz.c: the load tool that fuzzes running daemons (tests/fuzz/README.md, "Live
 * daemons"; the pieces are in live.h). Usage:
 *
 *   live_fuzz --target sched|worker --bin BIN_DIR [--seed N] [--messages N] [--seconds N]
 *             [--batch N] [--parallel N] [--work DIR] [--log-level L] [--replay FILE]
 *             [--regress DIR] [-v]
 *
 * It starts the target daemon from BIN_DIR (the ASan+UBSan build's bin/) in a work
 * directory of its own, then runs batches of sequences: each sequence is one connection
 * (target sched: a fake worker on gschedd's TCP port, or a CLI on its Unix socket; target
 * worker: the worker's link to us, its fake gschedd, or a CLI on the worker's socket) that
 * starts from valid messages and sends them mutated (live_mutate.c) and damaged on the
 * wire (lf_send below). Up to --parallel sequences run at once, their messages
 * interleaved. After each batch the target's check runs: the daemon still runs, printed
 * no sanitizer report, and answers a valid request within 10 s. A failure prints the seed,
 * the batch and the batch's actions (what was sent, frames decoded in short), writes them
 * to WORK/failure-*.txt (which --replay sends again to a fresh daemon), keeps WORK and
 * exits 1. --regress DIR first replays every file of DIR (fixed bugs' failure files),
 * each followed by the check. At the end the daemon is stopped and its stderr checked once
 * more (leaks). Defaults: --seed 1 --batch 50 --parallel 4, 30 s when no budget is given.
 *
 * Every sequence has its own PRNG, seeded from --seed and its number: the messages a
 * sequence sends follow from the seed and from what the daemon answered (job ids, request
 * ids), so a run repeats where the daemon's answers do. The last line is the report that
 * bench/fuzz.sh reads:
 *   live_fuzz: target=T seed=S messages=M sequences=Q seconds=X rate=R/s replies=P
 *   checks=C log_kinds=K bodies_sent=A/B bodies_heard=H failures=F
 * Exit status: 0 survived, 1 a failure, 2 usage or set-up error.
 */
#define _XOPEN_SOURCE 700 /* nftw */

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "common/clock.h"
#include "tests/fuzz/live.h"

#define MAX_FRAME_SENT (8u * 1024u * 1024u)
#define PROGRESS_EVERY_MS 10000

/* ---- counting ---- */

void lf_count_sent(struct lf_run *run, const Gs__Envelope *env)
{
    run->stats.messages++;
    if ((unsigned)env->body_case < 128)
        run->stats.bodies_sent[env->body_case]++;
}

void lf_count_heard(struct lf_run *run, const Gs__Envelope *env)
{
    run->stats.replies++;
    if ((unsigned)env->body_case < 128)
        run->stats.bodies_heard[env->body_case]++;
    if (env->body_case == GS__ENVELOPE__BODY_ERROR && env->error != NULL && env->error->code <= 0 &&
        env->error->code > -256)
        run->stats.error_codes[-env->error->code]++;
}

static unsigned body_kinds(const uint32_t *counts)
{
    unsigned n = 0;

    for (unsigned i = 1; i < 128; i++)
        n += counts[i] > 0 && gs_proto_body_known((Gs__Envelope__BodyCase)i);
    return n;
}

static unsigned known_bodies(void)
{
    unsigned n = 0;

    for (unsigned i = 1; i < 128; i++)
        n += gs_proto_body_known((Gs__Envelope__BodyCase)i);
    return n;
}

/* ---- sending ---- */

int lf_flush_held(struct lf_conn *c)
{
    struct gs_buf held = c->held;
    int rc;

    if (held.len == 0)
        return 0;
    c->held = GS_BUF_INIT;
    rc = lf_conn_write(c, held.data, held.len);
    gs_buf_release(&held);
    return rc;
}

/* A frame written so that the stream cannot go on; returns 1. */
static int break_stream(struct lf_rng *r, struct lf_conn *c, const struct gs_buf *frame)
{
    static const uint8_t huge[4] = {0xff, 0xff, 0xff, 0xff};
    static const uint8_t zero[4] = {0, 0, 0, 0};
    static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";

    switch (lf_below(r, 4)) {
    case 0: /* the frame cut short, then the end of the stream */
        (void)lf_conn_write(c, frame->data, 1 + lf_below(r, frame->len - 1));
        break;
    case 1:
        (void)lf_conn_write(c, huge, sizeof(huge));
        break;
    case 2:
        (void)lf_conn_write(c, zero, sizeof(zero));
        break;
    default:
        (void)lf_conn_write(c, http, sizeof(http) - 1);
        break;
    }
    return 1;
}

/* Writes frame the way the stream damage says; see lf_send. */
static int write_frame(struct lf_rng *r, struct lf_conn *c, struct gs_buf *frame, bool stream)
{
    int rc;

    if (stream) {
        switch (lf_below(r, 6)) {
        case 0:
            return break_stream(r, c, frame);
        case 1: /* held back: goes after the next frame */
            if (c->held.len == 0) {
                c->held = *frame;
                *frame = GS_BUF_INIT;
                return 0;
            }
            break;
        case 2: /* the previous frame again, first */
            if (c->last.len > 0 && lf_conn_write(c, c->last.data, c->last.len) < 0)
                return -EPIPE;
            break;
        case 3: /* twice */
            if (lf_conn_write(c, frame->data, frame->len) < 0)
                return -EPIPE;
            break;
        default: /* a few bytes at a time */
            rc = lf_conn_write_chunked(c, frame, 1 + lf_below(r, 7), r);
            goto sent;
        }
    }
    rc = lf_conn_write(c, frame->data, frame->len);
sent:
    if (rc == 0)
        rc = lf_flush_held(c);
    gs_buf_release(&c->last);
    c->last = *frame;
    *frame = GS_BUF_INIT;
    return rc < 0 ? -EPIPE : 0;
}

int lf_send(struct lf_run *run, struct lf_rng *r, struct lf_conn *c, Gs__Envelope *env,
            const struct lf_damage *d)
{
    struct gs_buf frame = GS_BUF_INIT;
    int rc;

    if (d != NULL && lf_chance(r, d->mutate))
        lf_mutate(r, &run->dict, &env->base);
    if (protobuf_c_message_get_packed_size(&env->base) > MAX_FRAME_SENT) {
        lf_free(env); /* grown too far: something small instead */
        env = lf_random_envelope(r, &run->dict);
    }
    if (d != NULL && d->fixup != NULL)
        d->fixup(env);
    lf_pack_frame(env, &frame);
    lf_count_sent(run, env);
    if (d != NULL && lf_chance(r, d->bytes))
        lf_mutate_payload(r, &frame);
    rc = write_frame(r, c, &frame, d != NULL && lf_chance(r, d->stream));
    gs_buf_release(&frame);
    lf_free(env);
    return rc;
}

/* ---- files ---- */

int lf_write_file(const struct lf_run *run, const char *name, const char *text)
{
    char path[512];
    FILE *f;
    int rc = 0;

    snprintf(path, sizeof(path), "%s/%s", run->work, name);
    f = fopen(path, "w");
    if (f == NULL)
        return -errno;
    if (fputs(text, f) == EOF)
        rc = -EIO;
    if (fclose(f) != 0 && rc == 0)
        rc = -EIO;
    return rc;
}

uint16_t lf_free_port(void)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    uint16_t port = 0;

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sin, &len) == 0)
        port = ntohs(sin.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

void lf_remove_tree(const char *path)
{
    (void)nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int make_work(struct lf_run *run, bool *ret_made)
{
    const char *tmp = getenv("TMPDIR");
    struct stat st;

    *ret_made = false;
    if (run->work[0] != '\0')
        return mkdir(run->work, 0755) < 0 && errno != EEXIST ? -errno : 0;
    if (tmp == NULL || tmp[0] == '\0')
        tmp = stat("/dev/shm", &st) == 0 && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(run->work, sizeof(run->work), "%s/live_fuzz.XXXXXX", tmp);
    if (mkdtemp(run->work) == NULL)
        return -errno;
    *ret_made = true;
    if (chmod(run->work, 0755) < 0) /* tasks run as nobody in WORK/out */
        return -errno;
    return 0;
}

static int make_key(struct lf_run *run)
{
    struct gs_buf err = GS_BUF_INIT;
    int rc;

    snprintf(run->key_path, sizeof(run->key_path), "%s/gsched.key", run->work);
    (void)unlink(run->key_path);
    rc = gs_proto_auth_key_create(run->key_path);
    if (rc == 0)
        rc = gs_proto_auth_key_load(run->key_path, &run->key, &err);
    if (rc < 0)
        fprintf(stderr, "live_fuzz: cluster key %s: %s\n", run->key_path,
                err.data != NULL ? err.data : strerror(-rc));
    gs_buf_release(&err);
    return rc;
}

/* ---- failures and the report ---- */

static void report_failure(struct lf_run *run, uint64_t batch, const char *why)
{
    char name[128], state[160];
    struct gs_buf text = GS_BUF_INIT;

    snprintf(name, sizeof(name), "failure-%s-seed%llu-batch%llu.txt", run->ops->name,
             (unsigned long long)run->seed, (unsigned long long)batch);
    (void)gs_buf_printf(&text, "# live_fuzz --target %s --seed %llu: batch %llu: %s\n",
                        run->ops->name, (unsigned long long)run->seed, (unsigned long long)batch,
                        why);
    (void)gs_buf_append(&text, run->rec.text.data != NULL ? run->rec.text.data : "",
                        run->rec.text.len);
    (void)lf_write_file(run, name, text.data);
    gs_buf_release(&text);
    lf_daemon_describe(&run->daemon, state, sizeof(state));
    fprintf(stderr,
            "live_fuzz: FAILURE target=%s seed=%llu batch=%llu: %s\n"
            "live_fuzz: %s\n"
            "live_fuzz: the batch's actions (the sequences since the last good check):\n",
            run->ops->name, (unsigned long long)run->seed, (unsigned long long)batch, why, state);
    lf_record_print(&run->rec, stderr, 300);
    lf_daemon_print_tail(&run->daemon, stderr);
    fprintf(stderr,
            "live_fuzz: all of it in %s/%s; again with: live_fuzz --target %s --bin %s "
            "--replay %s/%s\n",
            run->work, name, run->ops->name, run->bin_dir, run->work, name);
}

/* -v: what was heard, body by body. */
static void print_heard(const struct lf_run *run)
{
    fprintf(stderr, "live_fuzz: heard:");
    for (unsigned i = 1; i < 128; i++) {
        if (run->stats.bodies_heard[i] > 0)
            fprintf(stderr, " %s=%u", gs_proto_body_name((Gs__Envelope__BodyCase)i),
                    run->stats.bodies_heard[i]);
    }
    fprintf(stderr, "\n");
}

static void print_report(struct lf_run *run, unsigned failures)
{
    double secs = (double)(gs_clock_mono_ms() - run->started_ms) / 1000.0;

    if (run->verbose)
        print_heard(run);
    printf("live_fuzz: target=%s seed=%llu messages=%llu sequences=%llu seconds=%.0f "
           "rate=%.0f/s replies=%llu checks=%llu log_kinds=%zu bodies_sent=%u/%u "
           "bodies_heard=%u failures=%u\n",
           run->ops->name, (unsigned long long)run->seed, (unsigned long long)run->stats.messages,
           (unsigned long long)run->stats.sequences, secs,
           secs > 0 ? (double)run->stats.messages / secs : 0.0,
           (unsigned long long)run->stats.replies, (unsigned long long)run->stats.checks,
           lf_daemon_templates(&run->daemon), body_kinds(run->stats.bodies_sent), known_bodies(),
           body_kinds(run->stats.bodies_heard), failures);
    fflush(stdout);
}

static bool out_of_budget(const struct lf_run *run)
{
    return (run->max_messages > 0 && run->stats.messages >= run->max_messages) ||
           (run->max_seconds > 0 &&
            gs_clock_mono_ms() - run->started_ms >= run->max_seconds * 1000);
}

/* ---- batches ---- */

/* Runs sequences first..first+count-1, up to run->parallel at once; returns the next index,
 * or 0 after a failure inside a step. */
static uint64_t run_batch(struct lf_run *run, uint64_t first, unsigned count)
{
    bool active[LF_MAX_PARALLEL] = {false};
    unsigned started = 0, running = 0, waits = 0;

    for (;;) {
        for (unsigned s = 0; s < run->parallel && started < count && !out_of_budget(run); s++) {
            if (active[s])
                continue;
            if (run->ops->sequence(run, s, first + started) == 0) {
                active[s] = true;
                running++;
                run->stats.sequences++;
            }
            started++;
        }
        if (running == 0)
            break;
        unsigned pick = (unsigned)lf_below(&run->rng, running), s = 0;

        for (unsigned seen = 0; s < run->parallel; s++) {
            if (active[s] && seen++ == pick)
                break;
        }
        uint64_t step_start = gs_clock_mono_ms();
        int more = run->ops->step(run, s);

        if (run->ops->tick != NULL)
            run->ops->tick(run);
        if (run->verbose && gs_clock_mono_ms() - step_start >= 100)
            fprintf(stderr, "live_fuzz: slot %u: a step took %llu ms\n", s,
                    (unsigned long long)(gs_clock_mono_ms() - step_start));
        if (more <= 0) {
            run->ops->end(run, s);
            active[s] = false;
            running--;
        }
        if (more != LF_STEP_WAIT) {
            waits = 0;
        } else if (++waits >= 2 * running) { /* likely every slot waits */
            (void)poll(NULL, 0, 1);
            waits = 0;
        }
    }
    return first + started;
}

static void progress(struct lf_run *run, uint64_t *last_ms)
{
    uint64_t now = gs_clock_mono_ms();
    double secs = (double)(now - run->started_ms) / 1000.0;

    if (now - *last_ms < PROGRESS_EVERY_MS)
        return;
    *last_ms = now;
    fprintf(stderr, "live_fuzz: %.0f s: messages=%llu (%.0f/s) sequences=%llu log_kinds=%zu\n",
            secs, (unsigned long long)run->stats.messages,
            secs > 0 ? (double)run->stats.messages / secs : 0.0,
            (unsigned long long)run->stats.sequences, lf_daemon_templates(&run->daemon));
}

static int fuzz(struct lf_run *run)
{
    uint64_t next = 0, batch = 0, last_progress = gs_clock_mono_ms();
    char why[512];

    while (!out_of_budget(run)) {
        gs_buf_reset(&run->rec.text);
        run->rec.lines = 0;
        run->rec.on = true;
        lf_record_line(&run->rec, "# batch %llu: sequences from %llu", (unsigned long long)batch,
                       (unsigned long long)next);
        next = run_batch(run, next, run->batch);
        run->rec.on = false;
        why[0] = '\0';
        if (run->ops->check(run, why, sizeof(why)) != 0) {
            report_failure(run, batch, why);
            return 1;
        }
        run->stats.checks++;
        batch++;
        progress(run, &last_progress);
    }
    return 0;
}

/* ---- replay ---- */

struct replay {
    struct lf_conn **conns;
    size_t n;
};

static struct lf_conn *replay_conn(struct replay *rp, unsigned id, enum lf_kind kind)
{
    if (id >= rp->n) {
        struct lf_conn **grown = realloc(rp->conns, (id + 1) * sizeof(*grown));

        if (grown == NULL)
            abort();
        memset(grown + rp->n, 0, (id + 1 - rp->n) * sizeof(*grown));
        rp->conns = grown;
        rp->n = id + 1;
    }
    if (rp->conns[id] == NULL) {
        rp->conns[id] = calloc(1, sizeof(struct lf_conn));
        if (rp->conns[id] == NULL)
            abort();
        lf_conn_init(rp->conns[id], id, kind, NULL);
    }
    return rp->conns[id];
}

static void on_replayed(struct lf_conn *c, const Gs__Envelope *env, void *data)
{
    struct lf_run *run = data;

    lf_count_heard(run, env);
    if (run->verbose)
        fprintf(stderr, "live_fuzz: replay: connection %u heard %s(rid=%llu)%s%s\n", c->id,
                gs_proto_body_name(env->body_case), (unsigned long long)env->request_id,
                env->body_case == GS__ENVELOPE__BODY_ERROR ? ": " : "",
                env->body_case == GS__ENVELOPE__BODY_ERROR ? env->error->message : "");
}

/* Our Hello among bytes about to be sent again: its role, name and nonce are what a later
 * "proof" line proves. */
static void note_own_hello(struct lf_conn *c, const uint8_t *bytes, size_t len)
{
    struct gs_proto_decoder dec;
    Gs__Envelope *env = NULL;

    gs_proto_decoder_init(&dec, 0);
    while (gs_proto_decoder_next(&dec, &bytes, &len, &env) == 1) {
        if (env->body_case == GS__ENVELOPE__BODY_HELLO &&
            env->hello->auth_nonce.len == sizeof(c->nonce)) {
            c->role = env->hello->role;
            snprintf(c->name, sizeof(c->name), "%s", env->hello->name);
            memcpy(c->nonce, env->hello->auth_nonce.data, sizeof(c->nonce));
        }
        gs_proto_envelope_free(env);
    }
    gs_proto_decoder_release(&dec);
}

/* OpenSSL decodes the hex: sscanf("%2x") at each byte measured the rest of the line first,
 * which made replaying a multi-megabyte frame take minutes and stall the replay's
 * heartbeats. A line that is not all hex digits sends nothing. */
static int replay_bytes(struct lf_run *run, struct lf_conn *c, const char *hexs)
{
    size_t len = strlen(hexs) / 2;
    uint8_t *bytes = malloc(len + 1);
    int rc;

    if (bytes == NULL)
        abort();
    if (!OPENSSL_hexstr2buf_ex(bytes, len + 1, &len, hexs, '\0')) {
        fprintf(stderr, "live_fuzz: replay: a send line that is not hex, skipped\n");
        free(bytes);
        return -EINVAL;
    }
    note_own_hello(c, bytes, len);
    rc = lf_conn_write(c, bytes, len);
    free(bytes);
    run->stats.messages++;
    (void)lf_conn_poll(c, 0, on_replayed, run);
    return rc;
}

static void replay_line(struct lf_run *run, struct replay *rp, char *line)
{
    char kind[16];
    unsigned id;
    int off = 0;

    if (sscanf(line, "open %u %15s", &id, kind) == 2) {
        struct lf_conn *c = replay_conn(rp, id, LF_KIND_WORKER);

        if (run->ops->replay_open(run, c, kind) < 0)
            fprintf(stderr, "live_fuzz: replay: open %u %s failed\n", id, kind);
    } else if (sscanf(line, "accept %u", &id) == 1) {
        if (run->ops->replay_open(run, replay_conn(rp, id, LF_KIND_SCHED), "accept") < 0)
            fprintf(stderr, "live_fuzz: replay: accept %u failed\n", id);
    } else if (sscanf(line, "send %u %n", &id, &off) == 1 && off > 0) {
        (void)replay_bytes(run, replay_conn(rp, id, LF_KIND_WORKER), line + off);
    } else if (sscanf(line, "proof %u", &id) == 1) {
        (void)lf_conn_proof(replay_conn(rp, id, LF_KIND_WORKER), &run->key, 2000, on_replayed, run);
    } else if (sscanf(line, "close %u", &id) == 1) {
        lf_conn_close(replay_conn(rp, id, LF_KIND_WORKER));
    }
}

/* Half a second for what the replay set going (a commit, then a planning pass) to happen
 * before the check looks, the target's tick running meanwhile. */
static void settle(struct lf_run *run, unsigned ms)
{
    struct timespec pause = {0, 20000000};

    for (uint64_t end = gs_clock_mono_ms() + ms; gs_clock_mono_ms() < end;) {
        if (run->ops->tick != NULL)
            run->ops->tick(run);
        nanosleep(&pause, NULL);
    }
}

static int replay(struct lf_run *run, const char *path)
{
    FILE *f = fopen(path, "r");
    struct replay rp = {NULL, 0};
    char *line = NULL;
    size_t cap = 0;
    char why[512] = "";
    int rc;

    if (f == NULL) {
        fprintf(stderr, "live_fuzz: %s: %s\n", path, strerror(errno));
        return 2;
    }
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] != '#')
            replay_line(run, &rp, line);
        if (run->ops->tick != NULL)
            run->ops->tick(run);
    }
    free(line);
    fclose(f);
    for (size_t i = 0; i < rp.n; i++) { /* what they still have to say, then the end */
        if (rp.conns[i] != NULL) {
            (void)lf_conn_poll(rp.conns[i], 100, on_replayed, run);
            lf_conn_close(rp.conns[i]);
            free(rp.conns[i]);
        }
    }
    free(rp.conns);
    settle(run, 500);
    rc = run->ops->check(run, why, sizeof(why));
    if (rc != 0) {
        fprintf(stderr, "live_fuzz: replay of %s: FAILURE: %s\n", path, why);
        lf_daemon_print_tail(&run->daemon, stderr);
        return 1;
    }
    run->stats.checks++;
    return 0;
}

static int only_files(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

/* Replays every file of dir (in name order), each followed by the check and a restart of
 * the daemon, whose stop is checked too (what leaks at exit, what hangs the stop). */
static int regress(struct lf_run *run, const char *dir)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, only_files, alphasort), rc = 0;
    char path[1024], why[512];

    if (n < 0 && errno == ENOENT)
        return 0; /* none yet */
    if (n < 0) {
        fprintf(stderr, "live_fuzz: %s: %s\n", dir, strerror(errno));
        return 2;
    }
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
        if (rc == 0)
            rc = replay(run, path);
        if (rc == 0 && run->ops->restart(run, why, sizeof(why)) < 0) {
            fprintf(stderr, "live_fuzz: after the replay of %s: FAILURE: %s\n", path, why);
            lf_daemon_print_tail(&run->daemon, stderr);
            rc = 1;
        }
        free(names[i]);
    }
    free(names);
    if (rc == 0)
        fprintf(stderr, "live_fuzz: %d regression files of %s replayed, daemon fine\n", n, dir);
    return rc;
}

/* ---- main ---- */

static int usage(void)
{
    fprintf(stderr,
            "usage: live_fuzz --target sched|worker --bin BIN_DIR [--seed N] [--messages N]\n"
            "                 [--seconds N] [--batch N] [--parallel N] [--work DIR]\n"
            "                 [--log-level debug|info|warn|error] [--replay FILE]\n"
            "                 [--regress DIR] [-v]\n");
    return 2;
}

static int parse(struct lf_run *run, int argc, char **argv)
{
    static const struct option opts[] = {
        {"target", required_argument, NULL, 't'},
        {"bin", required_argument, NULL, 'b'},
        {"seed", required_argument, NULL, 's'},
        {"messages", required_argument, NULL, 'm'},
        {"seconds", required_argument, NULL, 'S'},
        {"batch", required_argument, NULL, 'B'},
        {"parallel", required_argument, NULL, 'p'},
        {"work", required_argument, NULL, 'w'},
        {"replay", required_argument, NULL, 'r'},
        {"log-level", required_argument, NULL, 'l'},
        {"regress", required_argument, NULL, 'R'},
        {"verbose", no_argument, NULL, 'v'},
        {NULL, 0, NULL, 0},
    };
    int c;

    while ((c = getopt_long(argc, argv, "v", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (strcmp(optarg, "sched") == 0)
                run->ops = &lf_target_sched;
            else if (strcmp(optarg, "worker") == 0)
                run->ops = &lf_target_worker;
            else
                return usage();
            break;
        case 'b':
            run->bin_dir = optarg;
            break;
        case 's':
            run->seed = strtoull(optarg, NULL, 0);
            break;
        case 'm':
            run->max_messages = strtoull(optarg, NULL, 0);
            break;
        case 'S':
            run->max_seconds = strtoull(optarg, NULL, 0);
            break;
        case 'B':
            run->batch = (unsigned)strtoul(optarg, NULL, 0);
            break;
        case 'p':
            run->parallel = (unsigned)strtoul(optarg, NULL, 0);
            break;
        case 'w':
            snprintf(run->work, sizeof(run->work), "%s", optarg);
            break;
        case 'r':
            run->replay_path = optarg;
            break;
        case 'R':
            run->regress_dir = optarg;
            break;
        case 'l':
            run->log_level = optarg;
            break;
        case 'v':
            run->verbose = true;
            break;
        default:
            return usage();
        }
    }
    if (optind != argc || run->ops == NULL || run->bin_dir == NULL || run->batch == 0 ||
        run->parallel == 0 || run->parallel > LF_MAX_PARALLEL)
        return usage();
    return 0;
}

int main(int argc, char **argv)
{
    static struct lf_run run = {.seed = 1, .batch = 50, .parallel = 4, .log_level = "info"};
    bool made_work = false;
    unsigned failures = 0;
    char out_dir[300], why[512];
    int rc;

    signal(SIGPIPE, SIG_IGN);
    setvbuf(stderr, NULL, _IOLBF, 0);
    if (parse(&run, argc, argv) != 0)
        return 2;
    if (run.max_messages == 0 && run.max_seconds == 0)
        run.max_seconds = 30;
    lf_rng_seed(&run.rng, run.seed);
    rc = make_work(&run, &made_work);
    if (rc == 0)
        rc = make_key(&run);
    if (rc < 0) {
        fprintf(stderr, "live_fuzz: work directory %s: %s\n", run.work, strerror(-rc));
        return 2;
    }
    lf_daemon_init(&run.daemon);
    run.started_ms = gs_clock_mono_ms();
    snprintf(out_dir, sizeof(out_dir), "%s/out", run.work);
    if (mkdir(out_dir, 01777) < 0 || chmod(out_dir, 01777) < 0 || lf_cli_init(&run, out_dir) < 0) {
        fprintf(stderr, "live_fuzz: cannot set up %s\n", out_dir);
        return 2;
    }
    rc = run.ops->start(&run);
    if (rc < 0) {
        fprintf(stderr, "live_fuzz: cannot start the %s target: %s\n", run.ops->name,
                strerror(-rc));
        lf_daemon_print_tail(&run.daemon, stderr);
        (void)run.ops->stop(&run, why, sizeof(why));
        lf_daemon_release(&run.daemon);
        return 2;
    }
    fprintf(stderr, "live_fuzz: target=%s seed=%llu work=%s\n", run.ops->name,
            (unsigned long long)run.seed, run.work);
    if (run.replay_path != NULL)
        rc = replay(&run, run.replay_path);
    else if (run.regress_dir != NULL && (rc = regress(&run, run.regress_dir)) == 0)
        rc = fuzz(&run);
    else if (run.regress_dir == NULL)
        rc = fuzz(&run);
    failures = rc == 1 ? 1 : 0;
    if (run.ops->stop(&run, why, sizeof(why)) < 0 && failures == 0) { /* leaks, a hang */
        fprintf(stderr, "live_fuzz: FAILURE target=%s seed=%llu: %s\n", run.ops->name,
                (unsigned long long)run.seed, why);
        lf_daemon_print_tail(&run.daemon, stderr);
        failures = 1;
    }
    print_report(&run, failures);
    lf_daemon_release(&run.daemon);
    lf_cli_release(&run);
    gs_buf_release(&run.rec.text);
    gs_proto_auth_key_clear(&run.key);
    if (failures == 0 && rc == 0 && made_work)
        lf_remove_tree(run.work);
    return failures > 0 ? 1 : rc;
}
