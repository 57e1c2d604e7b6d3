/*
 * main.c: gschedd, the central scheduler (scheduler/sched.h does the work). Reads
 * /etc/gsched/gsched.toml (or --config) with command-line overrides, listens, and runs until
 * SIGTERM or SIGINT. Exit codes: 0 stopped on a signal, 1 could not start, 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "common/config.h"
#include "common/log.h"
#include "common/stop_signals.h"
#include "gsched_config.h"
#include "scheduler/sched.h"

static const char usage[] =
    "usage: gschedd [--config FILE] [--port N] [--socket PATH] [--state-dir DIR]\n"
    "               [--auth-key FILE] [--log-level LEVEL]\n"
    "  --config FILE      configuration (default " GS_CONFIG_DEFAULT_PATH " when present)\n"
    "  --port N           TCP port workers connect to (0: any free port, printed at start)\n"
    "  --socket PATH      Unix socket for the gsched CLI\n"
    "  --state-dir DIR    where the job database lives (created when missing)\n"
    "  --auth-key FILE    the cluster key (scheduler.auth_key; \"\": none); gschedd.service\n"
    "                     passes the copy systemd's LoadCredential made for it\n"
    "  --log-level LEVEL  debug, info, warn or error\n";

/* The one context of this program. */
struct gschedd {
    struct gs_config cfg;
    uv_loop_t loop;
    struct gs_stop_signals stop;
    struct sched_ctx *sched;
};

enum { OPT_CONFIG = 1, OPT_PORT, OPT_SOCKET, OPT_STATE, OPT_AUTH_KEY, OPT_LOG };

static const struct option long_opts[] = {
    {"config", required_argument, NULL, OPT_CONFIG},
    {"port", required_argument, NULL, OPT_PORT},
    {"socket", required_argument, NULL, OPT_SOCKET},
    {"state-dir", required_argument, NULL, OPT_STATE},
    {"auth-key", required_argument, NULL, OPT_AUTH_KEY},
    {"log-level", required_argument, NULL, OPT_LOG},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

static int bad(const char *what, const char *arg)
{
    fprintf(stderr, "gschedd: %s, not '%s' (see gschedd --help)\n", what, arg);
    return 2;
}

static int load_config(struct gschedd *d, const char *path)
{
    struct gs_buf errors = GS_BUF_INIT;
    int rc = 0;

    if (gs_config_load_default(&d->cfg, path, &errors) < 0) {
        fputs(errors.data != NULL ? errors.data : "gschedd: bad configuration\n", stderr);
        rc = 1;
    }
    gs_buf_release(&errors);
    return rc;
}

static int override(struct gschedd *d, int opt, const char *arg)
{
    char *end;
    long n;

    switch (opt) {
    case OPT_PORT:
        n = strtol(arg, &end, 10);
        if (*end != '\0' || n < 0 || n > 65535)
            return bad("--port wants 0 to 65535", arg);
        d->cfg.port = (uint32_t)n;
        return 0;
    case OPT_SOCKET:
        if (strlen(arg) > 107)
            return bad("--socket wants a path of at most 107 bytes", arg);
        free(d->cfg.socket_path);
        d->cfg.socket_path = strdup(arg);
        return d->cfg.socket_path != NULL ? 0 : 1;
    case OPT_STATE:
        if (arg[0] == '\0' || strlen(arg) > 400)
            return bad("--state-dir wants a path of 1 to 400 bytes", arg);
        free(d->cfg.state_dir);
        d->cfg.state_dir = strdup(arg);
        return d->cfg.state_dir != NULL ? 0 : 1;
    case OPT_AUTH_KEY:
        if (strlen(arg) > 400)
            return bad("--auth-key wants a path of at most 400 bytes", arg);
        free(d->cfg.auth_key);
        d->cfg.auth_key = NULL;
        if (arg[0] == '\0')
            return 0;
        d->cfg.auth_key = strdup(arg);
        return d->cfg.auth_key != NULL ? 0 : 1;
    case OPT_LOG:
        return gs_log_level_parse(arg, &d->cfg.log_level) < 0
                   ? bad("--log-level wants debug, info, warn or error", arg)
                   : 0;
    default:
        return 0;
    }
}

static int configure(struct gschedd *d, int argc, char **argv)
{
    const char *config = NULL;
    int opt, rc;

    opterr = 0;
    while ((opt = getopt_long(argc, argv, "hV", long_opts, NULL)) != -1) {
        if (opt == 'h' || opt == 'V') {
            printf(opt == 'h' ? "%s" : "gschedd %s\n", opt == 'h' ? usage : GSCHED_VERSION);
            return -1;
        }
        if (opt == '?')
            return bad("unknown or incomplete option", argv[optind - 1]);
        if (opt == OPT_CONFIG)
            config = optarg;
    }
    if (optind < argc)
        return bad("no arguments besides options", argv[optind]);
    rc = load_config(d, config);
    optind = 0;
    while (rc == 0 && (opt = getopt_long(argc, argv, "hV", long_opts, NULL)) != -1)
        rc = override(d, opt, optarg);
    return rc;
}

static void on_stopped(void *data)
{
    struct gschedd *d = data;

    gs_stop_signals_close(&d->stop);
}

static void on_stop(struct gs_stop_signals *sig, int signum, void *data)
{
    struct gschedd *d = data;

    (void)sig;
    (void)signum;
    sched_stop(d->sched, on_stopped, d);
}

static int run(struct gschedd *d)
{
    struct gs_error err;

    uv_loop_init(&d->loop);
    d->sched = sched_new(&d->loop, &d->cfg, &err);
    if (d->sched == NULL) {
        fprintf(stderr, "gschedd: %s\n", err.msg);
        uv_run(&d->loop, UV_RUN_DEFAULT);
        uv_loop_close(&d->loop);
        return 1;
    }
    gs_stop_signals_init(&d->stop, &d->loop, on_stop, d);
    uv_run(&d->loop, UV_RUN_DEFAULT);
    uv_loop_close(&d->loop);
    return 0;
}

int main(int argc, char **argv)
{
    struct gschedd d = {0};
    int rc;

    signal(SIGPIPE, SIG_IGN); /* a vanished peer is a write error, not a dead daemon */
    if (gs_config_init(&d.cfg) < 0)
        return 1;
    rc = configure(&d, argc, argv);
    if (rc == 0) {
        gs_log_setup("gschedd", d.cfg.log_level, 2);
        rc = run(&d);
    }
    gs_config_release(&d.cfg);
    return rc < 0 ? 0 : rc;
}
