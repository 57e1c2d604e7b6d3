/*
 * cmd_top.c: `gsched top`, the whole cluster's GPUs at a glance, refreshed every second
 * (--interval) in a full-screen ncurses view, in the spirit of htop and nvtop: every
 * node's GPUs with a utilisation bar, memory, power, temperature, the job and user holding
 * each, its training throughput and MFU, and idle-flagged GPUs highlighted; totals on the
 * first line. `--once` prints one frame as plain text and exits, for scripts and logs.
 *
 * Keys: q quit; s next sort (node, util, idle); i idle-flagged GPUs only; u / p filter by
 * user / partition (a prompt; empty clears); c clear filters; arrows, PgUp/PgDn, Home scroll.
 * The frame itself is top_frame.c's; this file fetches (NodesRequest, QueueRequest) and
 * draws. In the full-screen view a failed fetch is a line on the screen, retried at the
 * next refresh, never a message over it.
 */
#include "cli/commands.h"

#include <curses.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/jobcmd.h"
#include "cli/top_frame.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/units.h"

#define FETCH_TIMEOUT_MS 2000

struct top {
    char socket[256];
    struct cli_top_opts opts;
    char user[64], partition[64];
    uint64_t interval_ms;
    bool once;
    int scroll;
};

/* Nodes and running jobs; *ret_* freed by the caller. quiet: print nothing on failure. */
static int fetch(const struct top *t, bool quiet, Gs__Envelope **ret_nodes,
                 Gs__Envelope **ret_queue)
{
    Gs__NodesRequest nreq = GS__NODES_REQUEST__INIT;
    Gs__QueueRequest qreq = GS__QUEUE_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    int rc;

    env.body_case = GS__ENVELOPE__BODY_NODES_REQUEST;
    env.nodes_request = &nreq;
    rc = quiet ? cli_request_quiet(t->socket, &env, FETCH_TIMEOUT_MS, ret_nodes)
               : cli_request(t->socket, &env, ret_nodes);
    if (rc < 0)
        return rc;
    if ((*ret_nodes)->body_case != GS__ENVELOPE__BODY_NODES_REPLY)
        return -EPROTO;
    env = (Gs__Envelope)GS__ENVELOPE__INIT;
    env.body_case = GS__ENVELOPE__BODY_QUEUE_REQUEST;
    env.queue_request = &qreq;
    rc = quiet ? cli_request_quiet(t->socket, &env, FETCH_TIMEOUT_MS, ret_queue)
               : cli_request(t->socket, &env, ret_queue);
    if (rc == 0 && (*ret_queue)->body_case != GS__ENVELOPE__BODY_QUEUE_REPLY)
        rc = -EPROTO;
    return rc;
}

/* The latest figures: replies kept between fetches, so that a key redraws without asking
 * gschedd again. */
struct figures {
    Gs__Envelope *nodes, *queue;
    int rc; /* of the last fetch */
};

static void figures_release(struct figures *g)
{
    if (g->nodes != NULL)
        gs_proto_envelope_free(g->nodes);
    if (g->queue != NULL)
        gs_proto_envelope_free(g->queue);
    g->nodes = g->queue = NULL;
}

static void figures_fetch(const struct top *t, bool quiet, struct figures *g)
{
    figures_release(g);
    g->rc = fetch(t, quiet, &g->nodes, &g->queue);
}

/* One frame of g, or a frame saying why there is none. */
static int frame(const struct top *t, const struct figures *g, struct cli_top_frame *f)
{
    char line[320];
    int rc;

    if (g->rc == 0)
        return cli_top_render(g->nodes->nodes_reply, g->queue->queue_reply, &t->opts,
                              gs_clock_wall_ms(), f);
    snprintf(line, sizeof(line), "gsched top: cannot reach gschedd at %s: %s (retrying)", t->socket,
             gs_strerror(g->rc));
    rc = cli_top_render(NULL, NULL, &t->opts, gs_clock_wall_ms(), f);
    return rc == 0 ? cli_top_add(f, CLI_TOP_DOWN, line) : rc;
}

static int print_once(const struct top *t)
{
    struct cli_top_frame f = {0};
    struct figures g = {0};
    int rc;

    figures_fetch(t, false, &g); /* a failure is printed there */
    rc = g.rc == 0 ? frame(t, &g, &f) : g.rc;
    for (size_t i = 0; rc == 0 && i < f.n; i++)
        if (puts(f.lines[i].text) < 0)
            rc = -EIO;
    cli_top_frame_release(&f);
    figures_release(&g);
    return rc < 0 ? 1 : 0;
}

static void init_colors(void)
{
    if (!has_colors())
        return;
    start_color();
    use_default_colors();
    init_pair(CLI_TOP_TITLE, COLOR_CYAN, -1);
    init_pair(CLI_TOP_HEADER, COLOR_BLACK, COLOR_GREEN);
    init_pair(CLI_TOP_BUSY, COLOR_GREEN, -1);
    init_pair(CLI_TOP_IDLE, COLOR_WHITE, COLOR_RED);
    init_pair(CLI_TOP_FREE, COLOR_BLUE, -1);
    init_pair(CLI_TOP_DOWN, COLOR_RED, -1);
}

static attr_t look_attr(enum cli_top_look look)
{
    attr_t a = has_colors() && look != CLI_TOP_NORMAL ? COLOR_PAIR(look) : A_NORMAL;

    if (look == CLI_TOP_TITLE || look == CLI_TOP_IDLE)
        a |= A_BOLD;
    if (look == CLI_TOP_HEADER)
        a |= A_REVERSE * !has_colors();
    return a;
}

/* The title, options and header lines stay; the rest scrolls. */
static void draw(struct top *t, const struct cli_top_frame *f)
{
    int rows = LINES, cols = COLS, fixed = f->n < 3 ? (int)f->n : 3, body = rows - fixed - 1;
    int max_scroll = (int)f->n - fixed - body;

    if (t->scroll > max_scroll)
        t->scroll = max_scroll;
    if (t->scroll < 0)
        t->scroll = 0;
    erase();
    for (int y = 0; y < rows - 1; y++) {
        size_t i = y < fixed ? (size_t)y : (size_t)(y + t->scroll);

        if (i >= f->n)
            break;
        attrset(look_attr(f->lines[i].look));
        mvaddnstr(y, 0, f->lines[i].text, cols);
        if (f->lines[i].look == CLI_TOP_HEADER || f->lines[i].look == CLI_TOP_IDLE)
            for (int x = (int)strlen(f->lines[i].text); x < cols; x++)
                mvaddch(y, x, ' ');
    }
    attrset(A_REVERSE);
    mvaddnstr(rows - 1, 0,
              "q quit  s sort  i idle only  u user  p partition  c clear  arrows/PgUp/PgDn scroll",
              cols);
    attrset(A_NORMAL);
    refresh();
}

/* A one-line prompt on the bottom row; an empty answer clears the filter (*ret NULL). */
static void prompt(const char *what, char *buf, size_t size, const char **ret)
{
    mvhline(LINES - 1, 0, ' ', COLS);
    mvprintw(LINES - 1, 0, "%s (empty: all): ", what);
    echo();
    curs_set(1);
    timeout(-1);
    if (getnstr(buf, (int)size - 1) == ERR)
        buf[0] = '\0';
    noecho();
    curs_set(0);
    *ret = buf[0] != '\0' ? buf : NULL;
}

/* Returns false to quit. */
static bool key(struct top *t, int ch)
{
    switch (ch) {
    case 'q':
    case 'Q':
        return false;
    case 's':
        t->opts.sort = (enum cli_top_sort)((t->opts.sort + 1) % CLI_TOP_SORT_COUNT);
        break;
    case 'i':
        t->opts.idle_only = !t->opts.idle_only;
        break;
    case 'u':
        prompt("user", t->user, sizeof(t->user), &t->opts.user);
        break;
    case 'p':
        prompt("partition", t->partition, sizeof(t->partition), &t->opts.partition);
        break;
    case 'c':
        t->opts.user = t->opts.partition = NULL;
        t->opts.idle_only = false;
        break;
    case KEY_DOWN:
        t->scroll++;
        break;
    case KEY_UP:
        t->scroll--;
        break;
    case KEY_NPAGE:
        t->scroll += LINES / 2;
        break;
    case KEY_PPAGE:
        t->scroll -= LINES / 2;
        break;
    case KEY_HOME:
        t->scroll = 0;
        break;
    default:
        break;
    }
    return true;
}

static int run_screen(struct top *t)
{
    struct figures g = {0};
    uint64_t next = 0;
    bool go = true;
    int rc = 0;

    if (initscr() == NULL)
        return 1;
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    init_colors();
    /* Fetched every interval; a key redraws the figures already here at once. */
    while (go) {
        struct cli_top_frame f = {0};
        uint64_t now = gs_clock_mono_ms();
        int ch;

        if (now >= next) {
            figures_fetch(t, true, &g);
            next = now + t->interval_ms;
        }
        rc = frame(t, &g, &f);
        if (rc == 0)
            draw(t, &f);
        cli_top_frame_release(&f);
        if (rc < 0)
            break;
        now = gs_clock_mono_ms();
        timeout(now < next ? (int)(next - now) : 0);
        ch = getch();
        if (ch != ERR)
            go = key(t, ch);
    }
    figures_release(&g);
    endwin();
    return rc < 0 ? 1 : 0;
}

static const struct cli_opt top_opts[] = {
    {"--once", NULL, false, 'o'},     {"--interval", NULL, true, 'n'}, {"--user", "-u", true, 'u'},
    {"--partition", "-p", true, 'p'}, {"--sort", NULL, true, 'S'},     {"--idle", NULL, false, 'i'},
    {"--socket", NULL, true, 's'},    {NULL, NULL, false, 0},
};

static int parse_sort(const char *s, enum cli_top_sort *ret)
{
    for (int i = 0; i < CLI_TOP_SORT_COUNT; i++) {
        if (strcmp(s, cli_top_sort_name((enum cli_top_sort)i)) == 0) {
            *ret = (enum cli_top_sort)i;
            return 0;
        }
    }
    return -EINVAL;
}

int cli_cmd_top(int argc, char **argv)
{
    struct top t = {.interval_ms = 1000};
    const char *socket_opt = NULL;
    struct cli_args a;
    uint64_t secs;
    int opt;

    cli_args_init(&a, argc, argv);
    while ((opt = cli_args_next(&a, top_opts)) > 0) {
        if (opt == 'o') {
            t.once = true;
        } else if (opt == 'n') {
            if (gs_parse_duration(a.value, &secs) < 0 || secs == 0 || secs > 3600)
                return cli_usage_error("top", "--interval: not a duration of 1s to 1h: '%s'",
                                       a.value);
            t.interval_ms = secs * 1000;
        } else if (opt == 'u') {
            snprintf(t.user, sizeof(t.user), "%s", a.value);
            t.opts.user = t.user;
        } else if (opt == 'p') {
            snprintf(t.partition, sizeof(t.partition), "%s", a.value);
            t.opts.partition = t.partition;
        } else if (opt == 'S') {
            if (parse_sort(a.value, &t.opts.sort) < 0)
                return cli_usage_error("top", "--sort: node, util or idle, not '%s'", a.value);
        } else if (opt == 'i') {
            t.opts.idle_only = true;
        } else if (opt == 's') {
            socket_opt = a.value;
        } else {
            return cli_usage_error("top", "unexpected argument '%s'", a.value);
        }
    }
    if (opt < 0)
        return cli_args_error("top", &a);
    if (cli_socket_path(socket_opt, t.socket, sizeof(t.socket)) < 0)
        return 1;
    return t.once ? print_once(&t) : run_screen(&t);
}
