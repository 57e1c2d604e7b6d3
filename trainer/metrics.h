/*
 * metrics.h: what each training step reports. One record per optimizer step goes to
 * metrics.jsonl (one JSON object per line, flushed each step so that `tail -f` and gsched's
 * progress views see it at once) and, every log_every steps, to a human line on stdout:
 *
 *     step   120/2000 | loss 2.3141 | lr 5.99e-04 | norm 0.84 | 14,203 tok/s | 288 ms
 *       (data 1 fwd 95 bwd 170 opt 20 ckpt 0) | MFU 41.2% | mem 1.2 GiB [| gpu 30.1 GiB]
 *
 * Eval losses are recorded beside the train losses; trn_metrics_plot() draws both as
 * loss.svg at the end. Times are in milliseconds in the records.
 */
#ifndef TRN_METRICS_H
#define TRN_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct trn_step_record {
    uint64_t step;  /* 0-based optimizer step */
    uint64_t steps; /* in the run, for "120/2000" */
    double loss;    /* mean over the step's micro-batches */
    double lr, grad_norm, loss_scale;
    bool skipped; /* fp16 overflow: no update */
    uint64_t tokens;
    double step_ms, data_ms, fwd_ms, bwd_ms, optim_ms, ckpt_ms;
    double flops;               /* model FLOPs of the step (forward + backward) */
    double peak_flops;          /* per second, for MFU; 0: not reported */
    uint64_t peak_mem_bytes;    /* the process's peak resident memory */
    uint64_t device_mem_bytes;  /* on a GPU: the model's device arena, its whole use; else 0 */
    uint32_t ranks;             /* data-parallel ranks */
    bool data_parallel;         /* gradients all-reduced (ranks > 1 or ddp.always): comm fields */
    double comm_ms, exposed_ms; /* gradient all-reduce time, and the part the step waited */
};

struct trn_metrics;

/* jsonl_path NULL: no file. out: where the human lines go (stdout), NULL for none. */
int trn_metrics_new(const char *jsonl_path, FILE *out, uint32_t log_every,
                    struct trn_metrics **ret);
void trn_metrics_free(struct trn_metrics *m);

/* Records one step; 0 or -errno when the file cannot be written. */
int trn_metrics_step(struct trn_metrics *m, const struct trn_step_record *r);
/* Records an evaluation at step. */
int trn_metrics_eval(struct trn_metrics *m, uint64_t step, double loss);
/* Draws train and eval losses as an SVG line chart at path (written durably). */
int trn_metrics_plot(const struct trn_metrics *m, const char *path);

#endif
