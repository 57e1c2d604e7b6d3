/*
 * sample.h: text generation from a checkpoint (`gsched-train sample`): the model is run on
 * the prompt, and each next token is drawn from its softmax at a temperature, among the k
 * likeliest (top-k), then appended; the window slides once the context is full. With a
 * byte-level vocabulary (256) tokens are bytes and are written as they are, after the
 * prompt.
 */
#ifndef TRN_SAMPLE_H
#define TRN_SAMPLE_H

#include <stdint.h>
#include <stdio.h>

#include "common/buf.h"

struct trn_sample_opts {
    const char *prompt; /* bytes; NULL or "": start from a newline */
    uint32_t tokens;    /* to generate */
    double temperature; /* > 0; 1 is the model's own distribution */
    uint32_t top_k;     /* 0: every token */
    uint64_t seed;
};

/* Generates from the checkpoint at path to out. 0, or -errno with the reason in err. */
int trn_sample(const char *path, const struct trn_sample_opts *o, FILE *out, struct gs_buf *err);

#endif
