/*
 * top_frame.h: one frame of `gsched top`, as lines of text each with one look (normal,
 * header, idle GPU, down node, ...), from gschedd's NodesReply (with the workers' GPU
 * figures) and QueueReply (running jobs: user, partition, training progress). The same
 * frame is printed by `gsched top --once` and drawn by the full-screen view (cmd_top.c), so
 * what a script reads is what an operator sees. Pure: no I/O.
 */
#ifndef GS_CLI_TOP_FRAME_H
#define GS_CLI_TOP_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/gsched.pb-c.h"

enum cli_top_sort {
    CLI_TOP_SORT_NODE = 0, /* node name, GPU index */
    CLI_TOP_SORT_UTIL,     /* nodes by their GPUs' mean utilisation, highest first */
    CLI_TOP_SORT_IDLE,     /* nodes with idle-flagged GPUs first, then by name */
    CLI_TOP_SORT_COUNT,
};

struct cli_top_opts {
    enum cli_top_sort sort;
    const char *user;      /* NULL: everyone's; else only GPUs of that user's jobs */
    const char *partition; /* NULL: all; else only GPUs of jobs in that partition */
    bool idle_only;        /* only GPUs flagged idle */
};

enum cli_top_look {
    CLI_TOP_NORMAL = 0,
    CLI_TOP_TITLE,
    CLI_TOP_HEADER,
    CLI_TOP_BUSY, /* an allocated GPU over the idle threshold */
    CLI_TOP_IDLE, /* an allocated GPU flagged idle */
    CLI_TOP_FREE, /* a GPU nobody holds */
    CLI_TOP_DOWN, /* a node that is down */
};

struct cli_top_line {
    char *text; /* owned */
    enum cli_top_look look;
};

struct cli_top_frame {
    struct cli_top_line *lines;
    size_t n, cap;
};

const char *cli_top_sort_name(enum cli_top_sort sort);

/*
 * Renders the frame for nodes and the running jobs of queue (either may be NULL: nothing
 * known) at now_ms into f (empty, or released). Returns 0 or -ENOMEM.
 */
int cli_top_render(const Gs__NodesReply *nodes, const Gs__QueueReply *queue,
                   const struct cli_top_opts *o, uint64_t now_ms, struct cli_top_frame *f);
/* Adds one line (copied) to f: for the caller's own messages. 0 or -ENOMEM. */
int cli_top_add(struct cli_top_frame *f, enum cli_top_look look, const char *text);
void cli_top_frame_release(struct cli_top_frame *f);

#endif
