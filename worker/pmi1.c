/*
 * pmi1.c: the PMI-1 wire protocol ("simple PMI", what MPICH's own client speaks; pmi.h).
 * A request is one line of space-separated key=value words, the first cmd=NAME; an answer
 * is one such line (the client reads each line whole and checks its cmd and rc). The one
 * multi-line request, spawn's mcmd=spawn ... endcmd, is read to its end and refused. An
 * init asking for version 2 is answered here, and the connection then speaks PMI-2
 * (pmi2.c), as MPICH's and Slurm's PMI-2 clients begin.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "worker/pmi_internal.h"

/* What get_maxes says (and PMI_VALLEN_MAX). */
#define PMI1_KVSNAME_MAX 256
#define PMI1_KEYLEN_MAX 64

/* One answer line to c (the newline added). */
static void say(struct pmi_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct pmi_conn *c, const char *fmt, ...)
{
    char small[512], *text = small;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small) - 1, fmt, ap);
    va_end(ap);
    if (n < 0) {
        pmi_conn_close(c);
        return;
    }
    if ((size_t)n >= sizeof(small) - 1) {
        if ((text = malloc((size_t)n + 2)) == NULL) {
            pmi_conn_close(c);
            return;
        }
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    text[n] = '\n';
    pmi_write(c, text, (size_t)n + 1);
    if (text != small)
        free(text);
}

/* An error's msg= word: the words of why joined by '_' (a value holds no space). */
static void say_error(struct pmi_conn *c, const char *cmd, const char *why)
{
    char word[160];
    size_t i;

    for (i = 0; why[i] != '\0' && i < sizeof(word) - 1; i++)
        word[i] = why[i] == ' ' ? '_' : why[i];
    word[i] = '\0';
    say(c, "cmd=%s rc=-1 msg=%s", cmd, word);
}

/* Splits line (in place) into its key=value words; words without '=' are skipped. */
static void split(char *line, struct pmi_args *a)
{
    char *save = NULL;

    a->n = 0;
    for (char *w = strtok_r(line, " ", &save); w != NULL && a->n < PMI_ARGS_MAX;
         w = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(w, '=');

        if (eq == NULL)
            continue;
        *eq = '\0';
        a->k[a->n] = w;
        a->v[a->n++] = eq + 1;
    }
}

/* Whether a request names the step's space (kvsname=); says so when it does not. */
static bool this_space(struct pmi_conn *c, const struct pmi_args *a, const char *answer)
{
    const char *name = pmi_arg(a, "kvsname");

    if (name != NULL && strcmp(name, c->st->kvsname) == 0)
        return true;
    say(c, "cmd=%s rc=-1 msg=kvsname_is_not_this_step's_(%s)", answer, c->st->kvsname);
    return false;
}

static void do_put(struct pmi_conn *c, const struct pmi_args *a)
{
    const char *key = pmi_arg(a, "key"), *value = pmi_arg(a, "value"), *why = "a put needs a value";

    if (!this_space(c, a, "put_result"))
        return;
    if (key != NULL && value != NULL && pmi_put(c->st, key, value, &why) == 0)
        say(c, "cmd=put_result rc=0");
    else
        say_error(c, "put_result", key == NULL ? "a put needs a key" : why);
}

static void do_get(struct pmi_conn *c, const struct pmi_args *a)
{
    const char *key = pmi_arg(a, "key"), *value;

    if (!this_space(c, a, "get_result"))
        return;
    if (key == NULL) {
        say_error(c, "get_result", "a get needs a key");
        return;
    }
    value = pmi_get(c->st, key);
    if (value != NULL)
        say(c, "cmd=get_result rc=0 value=%s", value);
    else
        say(c, "cmd=get_result rc=-1 msg=key_%s_not_found", key);
}

static void do_init(struct pmi_conn *c, const struct pmi_args *a)
{
    const char *v = pmi_arg(a, "pmi_version"), *sub = pmi_arg(a, "pmi_subversion");

    if (v != NULL && strcmp(v, "2") == 0 && sub != NULL && strcmp(sub, "0") == 0) {
        say(c, "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0");
        c->version = 2; /* every request from here on is PMI-2's */
        return;
    }
    say(c, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=%d",
        v != NULL && strcmp(v, "1") == 0 ? 0 : -1);
}

void pmi1_fence_out(struct pmi_conn *c, int code)
{
    if (code == 0)
        say(c, "cmd=barrier_out rc=0");
    else
        say(c, "cmd=barrier_out rc=-1 msg=barrier_failed:%s", gs_strerror(code));
}

void pmi1_request(struct pmi_conn *c, char *line)
{
    struct pmi_step *st = c->st;
    struct pmi_args a;
    const char *cmd;

    if (c->in_mcmd) { /* spawn: its lines up to endcmd, then one answer */
        if (strcmp(line, "endcmd") == 0) {
            c->in_mcmd = false;
            say(c, "cmd=spawn_result rc=-1 errmsg=gsched_does_not_serve_PMI_spawn");
        }
        return;
    }
    if (strncmp(line, "mcmd=", 5) == 0) {
        c->in_mcmd = true;
        return;
    }
    split(line, &a);
    cmd = pmi_arg(&a, "cmd");
    if (cmd == NULL) {
        GS_LOG(GS_LOG_WARN,
               "job=%" PRIu64 " step=%" PRIu32 " rank=%" PRIu32 " pmi request "
               "without cmd, connection closed",
               st->job_id, st->step, c->rank);
        pmi_conn_close(c);
    } else if (strcmp(cmd, "init") == 0) {
        do_init(c, &a);
    } else if (strcmp(cmd, "get_maxes") == 0) {
        say(c, "cmd=maxes rc=0 kvsname_max=%d keylen_max=%d vallen_max=%d", PMI1_KVSNAME_MAX,
            PMI1_KEYLEN_MAX, PMI_VALLEN_MAX);
    } else if (strcmp(cmd, "get_appnum") == 0) {
        say(c, "cmd=appnum rc=0 appnum=0");
    } else if (strcmp(cmd, "get_my_kvsname") == 0) {
        say(c, "cmd=my_kvsname rc=0 kvsname=%s", st->kvsname);
    } else if (strcmp(cmd, "get_universe_size") == 0) {
        say(c, "cmd=universe_size rc=0 size=%" PRIu32, st->size);
    } else if (strcmp(cmd, "put") == 0) {
        do_put(c, &a);
    } else if (strcmp(cmd, "get") == 0) {
        do_get(c, &a);
    } else if (strcmp(cmd, "barrier_in") == 0) {
        pmi_barrier_in(c);
    } else if (strcmp(cmd, "finalize") == 0) {
        say(c, "cmd=finalize_ack rc=0");
    } else if (strcmp(cmd, "abort") == 0) {
        const char *code = pmi_arg(&a, "exitcode");

        pmi_abort(c, code != NULL ? atoi(code) : 1, "PMI_Abort");
    } else if (strcmp(cmd, "publish_name") == 0 || strcmp(cmd, "unpublish_name") == 0 ||
               strcmp(cmd, "lookup_name") == 0) {
        say(c, "cmd=%.*s_result rc=-1 msg=gsched_does_not_serve_PMI_names", (int)(strlen(cmd) - 5),
            cmd);
    } else {
        GS_LOG(GS_LOG_WARN,
               "job=%" PRIu64 " step=%" PRIu32 " rank=%" PRIu32 " cmd=%.40s "
               "unknown pmi request",
               st->job_id, st->step, c->rank, cmd);
        say(c, "cmd=%.40s_result rc=-1 msg=unknown_request", cmd);
    }
}
