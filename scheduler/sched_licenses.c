/*
 * sched_licenses.c: `scontrol show licenses` in gschedd: each [[license]] with the counts
 * its running jobs hold now (scheduler/license.c counts them, as the planning pass does).
 */
#include <errno.h>
#include <stdlib.h>

#include "common/clock.h"
#include "scheduler/license.h"
#include "scheduler/sched_internal.h"

void sched_query_licenses(struct sched_cli *c, uint64_t request_id)
{
    struct sched_ctx *s = c->s;
    const struct gs_config *cfg = s->cfg;
    struct sched_license_use use;
    Gs__LicenseInfo *infos = calloc(cfg->nlicenses + 1, sizeof(*infos));
    Gs__LicenseInfo **ptrs = calloc(cfg->nlicenses + 1, sizeof(*ptrs));
    Gs__LicensesReply reply = GS__LICENSES_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    size_t n = sched_jobs_count(s->jobs);
    uint64_t now_ms = gs_clock_wall_ms();

    if (sched_license_use_init(&use, cfg) < 0 || infos == NULL || ptrs == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        goto out;
    }
    for (size_t i = s->plan_from; i < n; i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);

        if (job->state == SCHED_JOB_RUNNING)
            sched_license_take(&use, job->spec);
    }
    for (size_t i = 0; i < cfg->nlicenses; i++) {
        gs__license_info__init(&infos[i]);
        infos[i].name = cfg->licenses[i].name;
        infos[i].total = cfg->licenses[i].count;
        infos[i].used = use.used[i];
        infos[i].reserved = sched_resv_licenses_kept(s, cfg->licenses[i].name, now_ms);
        ptrs[i] = &infos[i];
    }
    reply.licenses = ptrs;
    reply.n_licenses = cfg->nlicenses;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_LICENSES_REPLY;
    env.licenses_reply = &reply;
    sched_cli_reply(c, &env, false);
out:
    sched_license_use_release(&use);
    free(ptrs);
    free(infos);
}
