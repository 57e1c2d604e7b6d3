/*
 * main.c: the gsched-train program.
 *
 *     gsched-train train CONFIG.toml [--section.key=value ...]
 *     gsched-train sample CHECKPOINT [--prompt TEXT] [--tokens N] [--temperature T]
 *                         [--top-k K] [--seed S]
 *
 * `train` reads the settings (every override checked like the file), trains, and exits 0
 * when done, 75 when SIGTERM or SIGUSR1 stopped it after a checkpoint (requeue and it
 * resumes), 1 on an error, 2 on bad usage. The only global state is the program's context
 * below, whose stop flag the signal handler sets.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gsched_config.h"
#include "trainer/config.h"
#include "trainer/sample.h"
#include "trainer/train.h"

static struct {
    volatile sig_atomic_t stop;
} ctx;

static const char usage[] =
    "usage: gsched-train train CONFIG.toml [--section.key=value ...]\n"
    "       gsched-train sample CHECKPOINT [--prompt TEXT] [--tokens N] [--temperature T]\n"
    "                           [--top-k K] [--seed S]\n"
    "Settings and their defaults: docs/trainer.md. Exit status: 0 done, 75 stopped by\n"
    "SIGTERM/SIGUSR1 after a checkpoint (resumable), 1 error, 2 usage.\n";

static void on_stop(int sig)
{
    (void)sig;
    ctx.stop = 1;
}

static int cmd_train(int argc, char **argv)
{
    struct trn_config cfg;
    struct trn_run_result res;
    struct gs_buf err = GS_BUF_INIT;
    struct sigaction sa;
    int rc, status;

    if (argc < 1 || argv[0][0] == '-') {
        fputs(usage, stderr);
        return 2;
    }
    trn_config_defaults(&cfg);
    rc = trn_config_load(&cfg, argv[0], &err);
    for (int i = 1; rc == 0 && i < argc; i++) {
        if (strncmp(argv[i], "--", 2) != 0) {
            fprintf(stderr,
                    "gsched-train: unexpected argument '%s' (settings are "
                    "--section.key=value)\n",
                    argv[i]);
            trn_config_release(&cfg);
            return 2;
        }
        rc = trn_config_override(&cfg, argv[i] + 2, &err);
    }
    if (rc < 0) {
        fprintf(stderr, "%s", err.data != NULL ? err.data : "");
        status = 2;
        goto out;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    rc = trn_train(&cfg, &ctx.stop, stdout, &res, &err);
    if (rc < 0) {
        fprintf(stderr, "gsched-train: %s\n", err.data != NULL ? err.data : strerror(-rc));
        status = 1;
        goto out;
    }
    /* Rank 0 reports for every rank. */
    if (res.lead && rc == TRN_EXIT_REQUEUE)
        printf("stopped at step %llu; checkpoint %s; exit %d asks to be requeued\n",
               (unsigned long long)res.steps_done, res.ckpt_path, TRN_EXIT_REQUEUE);
    else if (res.lead && isnan(res.eval_loss))
        printf("done: %llu steps, train loss %.4f, no eval\ncheckpoint: %s\nplot: %s\n",
               (unsigned long long)res.steps_done, res.final_loss,
               res.ckpt_path[0] ? res.ckpt_path : "(none)", res.plot_path);
    else if (res.lead)
        printf("done: %llu steps, train loss %.4f, eval loss %.4f\ncheckpoint: %s\nplot: %s\n",
               (unsigned long long)res.steps_done, res.final_loss, res.eval_loss,
               res.ckpt_path[0] ? res.ckpt_path : "(none)", res.plot_path);
    status = rc == TRN_EXIT_REQUEUE ? TRN_EXIT_REQUEUE : 0;
out:
    trn_config_release(&cfg);
    gs_buf_release(&err);
    return status;
}

/* "--name VALUE" or "--name=VALUE" at argv[*i]; advances *i. NULL when not this option. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);

    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

static int parse_num(const char *opt, const char *s, double min, double max, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= min && v <= max)) {
        fprintf(stderr, "gsched-train sample: %s wants a number from %g to %g, not '%s'\n", opt,
                min, max, s);
        return -EINVAL;
    }
    *out = v;
    return 0;
}

static int cmd_sample(int argc, char **argv)
{
    struct trn_sample_opts o = {.tokens = 256, .temperature = 0.8, .top_k = 40, .seed = 1};
    struct gs_buf err = GS_BUF_INIT;
    double v;
    int rc = 0;

    if (argc < 1 || argv[0][0] == '-') {
        fputs(usage, stderr);
        return 2;
    }
    for (int i = 1; rc == 0 && i < argc; i++) {
        const char *val;

        if ((val = opt_value(argc, argv, &i, "--prompt")) != NULL)
            o.prompt = val;
        else if ((val = opt_value(argc, argv, &i, "--tokens")) != NULL) {
            if ((rc = parse_num("--tokens", val, 0, 1e7, &v)) == 0)
                o.tokens = (uint32_t)v;
        } else if ((val = opt_value(argc, argv, &i, "--temperature")) != NULL) {
            rc = parse_num("--temperature", val, 1e-6, 100, &o.temperature);
        } else if ((val = opt_value(argc, argv, &i, "--top-k")) != NULL) {
            if ((rc = parse_num("--top-k", val, 0, 1e7, &v)) == 0)
                o.top_k = (uint32_t)v;
        } else if ((val = opt_value(argc, argv, &i, "--seed")) != NULL) {
            if ((rc = parse_num("--seed", val, 0, 9e15, &v)) == 0)
                o.seed = (uint64_t)v;
        } else {
            fprintf(stderr, "gsched-train sample: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (rc < 0)
        return 2;
    rc = trn_sample(argv[0], &o, stdout, &err);
    if (rc < 0)
        fprintf(stderr, "gsched-train: %s\n", err.data != NULL ? err.data : strerror(-rc));
    else
        putchar('\n');
    gs_buf_release(&err);
    return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "train") == 0)
        return cmd_train(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "sample") == 0)
        return cmd_sample(argc - 2, argv + 2);
    if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
        printf("gsched-train %s\n", GSCHED_VERSION);
        return 0;
    }
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage, stdout);
        return 0;
    }
    fputs(usage, stderr);
    return 2;
}
