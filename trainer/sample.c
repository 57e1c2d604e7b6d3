/*
 * sample.c: generating text from a checkpoint (see sample.h). The whole window is run again
 * for every new token: at the small contexts this trainer targets that costs little, and it
 * needs no separate key/value cache path in the kernels.
 */
#include "trainer/sample.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/model.h"
#include "trainer/rng.h"
#include "trainer/state.h"
#include "trainer/tensorfile.h"

/* Draws a token from logits[V] at temperature among the top_k likeliest. */
static int32_t draw(float *logits, uint32_t V, double temperature, uint32_t top_k,
                    struct trn_rng *rng)
{
    double max = -INFINITY, sum = 0, u;
    float cut = -INFINITY;

    if (top_k > 0 && top_k < V) {
        /* The k-th largest value, by repeated selection of the maximum below the last one:
         * V is small (a vocabulary) and k smaller. */
        float prev = INFINITY;

        for (uint32_t k = 0; k < top_k; k++) {
            float best = -INFINITY;

            for (uint32_t i = 0; i < V; i++) {
                if (logits[i] < prev && logits[i] > best)
                    best = logits[i];
            }
            prev = best;
        }
        cut = prev;
    }
    for (uint32_t i = 0; i < V; i++)
        max = fmax(max, logits[i]);
    for (uint32_t i = 0; i < V; i++) {
        double p = logits[i] >= cut ? exp((logits[i] - max) / temperature) : 0.0;

        logits[i] = (float)p;
        sum += p;
    }
    u = trn_rng_uniform(rng) * sum;
    for (uint32_t i = 0; i < V; i++) {
        u -= logits[i];
        if (u < 0)
            return (int32_t)i;
    }
    return (int32_t)(V - 1);
}

int trn_sample(const char *path, const struct trn_sample_opts *o, FILE *out, struct gs_buf *err)
{
    struct trn_model_shape shape;
    struct trn_model *m = NULL;
    struct trn_state st;
    struct trn_tf *tf = NULL;
    struct trn_rng rng;
    enum gs_kern_dtype dt;
    int32_t *window = NULL;
    float *logits = NULL;
    uint32_t n = 0;
    const char *prompt = o->prompt != NULL && o->prompt[0] != '\0' ? o->prompt : "\n";
    int rc;

    if (!(o->temperature > 0)) {
        gs_buf_printf(err, "--temperature must be above 0");
        return -EINVAL;
    }
    rc = trn_tf_open(path, &tf, err);
    if (rc == 0)
        rc = trn_state_shape(tf, path, &shape, &dt, err);
    if (rc == 0 && shape.vocab != 256) {
        gs_buf_printf(err, "%s: sampling prints bytes; this model's vocabulary is %u, not 256",
                      path, shape.vocab);
        rc = -EINVAL;
    }
    if (rc == 0 && (rc = trn_model_new(&shape, GS_KERN_F32, 1, &m)) < 0)
        gs_buf_printf(err, "model: %s", strerror(-rc));
    if (rc == 0)
        rc = trn_state_load(tf, path, m, &st, NULL, err);
    trn_tf_close(tf);
    window = calloc(shape.context + 1, sizeof(*window));
    logits = calloc(shape.vocab + 1, sizeof(*logits));
    if (rc == 0 && (window == NULL || logits == NULL))
        rc = -ENOMEM;
    trn_rng_seed(&rng, o->seed);
    /* The prompt's last `context` bytes start the window. */
    for (const unsigned char *p = (const unsigned char *)prompt; rc == 0 && *p != '\0'; p++) {
        if (n == shape.context) {
            memmove(window, window + 1, (n - 1) * sizeof(*window));
            n--;
        }
        window[n++] = *p;
    }
    if (rc == 0 && o->prompt != NULL)
        fputs(o->prompt, out); /* the continuation reads on from it */
    for (uint32_t i = 0; rc == 0 && i < o->tokens; i++) {
        int32_t next;

        rc = trn_model_forward(m, window, NULL, 1, n, 0, false, NULL);
        if (rc == 0)
            rc = trn_model_logits(m, 0, n - 1, logits);
        if (rc < 0)
            break;
        next = draw(logits, shape.vocab, o->temperature, o->top_k, &rng);
        fputc(next, out);
        if (n == shape.context) {
            memmove(window, window + 1, (n - 1) * sizeof(*window));
            n--;
        }
        window[n++] = next;
    }
    fflush(out);
    if (rc < 0 && err->len == 0)
        gs_buf_printf(err, "sampling: %s", strerror(-rc));
    free(window);
    free(logits);
    trn_model_free(m);
    return rc;
}
