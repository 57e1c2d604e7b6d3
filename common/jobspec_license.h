/*
 * jobspec_license.h: the licenses a job holds while it runs (struct gs_job_license in
 * jobspec.h): Slurm's -L list as sbatch, srun and salloc take it, and a job file's
 * resources.licenses table.
 */
#ifndef GSCHED_COMMON_JOBSPEC_LICENSE_H
#define GSCHED_COMMON_JOBSPEC_LICENSE_H

#include <stddef.h>

#include "common/buf.h"
#include "common/jobspec.h"
#include "common/schema.h"

/*
 * "NAME[:COUNT][,NAME[:COUNT]]..." (COUNT 1 when left out) into *ret (malloc'd, *ret_n
 * entries; NULL and 0 for an empty text). -EINVAL with why (whylen bytes) saying what is
 * wrong: a bad name or count, a name twice, Slurm's "|" (any one of) or "@" (a remote
 * license server), too many; -ENOMEM. On failure *ret is untouched.
 */
int gs_license_list_parse(const char *text, struct gs_job_license **ret, size_t *ret_n, char *why,
                          size_t whylen);
/* "NAME:COUNT,..." into out, in the list's order; nothing for an empty list. */
void gs_license_list_format(const struct gs_job_license *l, size_t n, struct gs_buf *out);
void gs_license_list_free(struct gs_job_license *l, size_t n);
/* What a client may send: -EINVAL with why for what gs_license_list_parse refuses. */
int gs_license_list_check(const struct gs_job_license *l, size_t n, char *why, size_t whylen);

/* resources.licenses of a job file: a table of NAME = COUNT. */
void gs_jobspec_read_licenses(struct gs_schema_ctx *c, const struct gs_toml_value *v);

#endif
