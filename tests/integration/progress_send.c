/*
 * progress_send.c: sends one JobProgressReport the way gsched-train does (trn_report_send),
 * for tests/integration/progress.sh, which needs reports a trainer would never send: for
 * another user's job, for a job that is not running, with a text that must be cleaned.
 *
 *     progress_send SOCKET JOB STEP STEPS [TEXT]
 *
 * Prints "ok", or "refused rc=N: message" (exit 1), or "failed rc=N: why" (exit 2).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "trainer/report.h"

int main(int argc, char **argv)
{
    Gs__JobProgressReport msg = GS__JOB_PROGRESS_REPORT__INIT;
    bool refused = false;
    char why[256];
    int rc;

    if (argc < 5 || argc > 6) {
        fprintf(stderr, "usage: progress_send SOCKET JOB STEP STEPS [TEXT]\n");
        return 2;
    }
    msg.job_id = strtoull(argv[2], NULL, 10);
    msg.step = strtoull(argv[3], NULL, 10);
    msg.steps = strtoull(argv[4], NULL, 10);
    msg.loss = 2.5;
    msg.tokens_per_s = 1000;
    msg.ranks = 1;
    msg.text = argc == 6 ? argv[5] : "";
    /* A generous timeout: the sanitizer build's gschedd may be slow to answer. */
    rc = trn_report_send(argv[1], &msg, 5000, &refused, why, sizeof(why));
    if (rc == 0) {
        puts("ok");
        return 0;
    }
    printf("%s rc=%d: %s\n", refused ? "refused" : "failed", rc, why);
    return refused ? 1 : 2;
}
