/*
 * train.h: the training run: data, model, optimizer, evaluation, checkpoints and metrics
 * put together by one loop. gsched-train's `train` command is this function plus argument
 * parsing and signal handling (main.c).
 *
 * Stopping: when *stop becomes nonzero (SIGTERM or SIGUSR1 from the batch system), the loop
 * finishes the step it is in, writes a checkpoint, waits for it to be on disk and returns
 * TRN_EXIT_REQUEUE, the exit status that asks the scheduler to requeue the job (it resumes
 * from that checkpoint with checkpoint.resume = "auto").
 */
#ifndef TRN_TRAIN_H
#define TRN_TRAIN_H

#include <signal.h>
#include <stdio.h>

#include "common/buf.h"
#include "trainer/config.h"

/* sysexits.h's EX_TEMPFAIL: "try again later" — stopped early, resumable. */
#define TRN_EXIT_REQUEUE 75

struct trn_run_result {
    uint64_t steps_done; /* optimizer steps in the run so far, resumed ones included */
    double final_loss;   /* train loss of the last step */
    double eval_loss;    /* last evaluation; NaN when none ran */
    char ckpt_path[512]; /* newest checkpoint written, "" if none */
    char plot_path[512]; /* loss.svg, "" if none */
    bool lead;           /* rank 0, which speaks for the run; the others stay quiet */
};

/*
 * Trains as cfg says (checked with trn_config_check first). Human progress goes to out.
 * Returns 0 when the run reached optim.steps, TRN_EXIT_REQUEUE when stopped by *stop, or
 * -errno with one line saying what failed in err.
 */
int trn_train(const struct trn_config *cfg, volatile sig_atomic_t *stop, FILE *out,
              struct trn_run_result *result, struct gs_buf *err);

#endif
