/*
 * metrics.c: per-step records as JSON lines and human lines (see metrics.h). The loss
 * history kept for the plot is two growing arrays of (step, loss) pairs: a few thousand steps
 * cost a few tens of kilobytes, and the plot needs every point.
 */
#include "trainer/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"
#include "trainer/plot.h"

struct trn_metrics {
    FILE *jsonl, *out;
    uint32_t log_every;
    struct trn_series train, eval;
};

int trn_metrics_new(const char *jsonl_path, FILE *out, uint32_t log_every, struct trn_metrics **ret)
{
    struct trn_metrics *m = calloc(1, sizeof(*m));

    if (m == NULL)
        return -ENOMEM;
    if (jsonl_path != NULL) {
        m->jsonl = fopen(jsonl_path, "a"); /* a resumed run continues the same file */
        if (m->jsonl == NULL) {
            int rc = -errno;

            free(m);
            return rc;
        }
    }
    m->out = out;
    m->log_every = log_every > 0 ? log_every : 1;
    *ret = m;
    return 0;
}

void trn_metrics_free(struct trn_metrics *m)
{
    if (m == NULL)
        return;
    if (m->jsonl != NULL)
        fclose(m->jsonl);
    trn_series_release(&m->train);
    trn_series_release(&m->eval);
    free(m);
}

static int write_line(struct trn_metrics *m, struct gs_buf *line)
{
    if (m->jsonl == NULL)
        return 0;
    if (fwrite(line->data, 1, line->len, m->jsonl) != line->len || fputc('\n', m->jsonl) == EOF ||
        fflush(m->jsonl) != 0)
        return -EIO;
    return 0;
}

/* 1 - exposed / total, within [0, 1]: waking up after the last bucket can cost a little more
 * than the all-reduce itself when nothing overlapped. */
static double overlap(const struct trn_step_record *r)
{
    double o = r->comm_ms > 0 ? 1.0 - r->exposed_ms / r->comm_ms : 1.0;

    return o < 0 ? 0 : o;
}

static void kv_double(struct gs_json *j, const char *key, double v)
{
    gs_json_key(j, key);
    gs_json_double(j, v);
}

/* 14203.7 -> "14,204": thousands separators without the locale. */
static void thousands(char *out, size_t size, double v)
{
    char digits[32];
    size_t n, o = 0;

    snprintf(digits, sizeof(digits), "%.0f", v < 0 ? 0 : v);
    n = strlen(digits);
    for (size_t i = 0; i < n && o + 2 < size; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
}

static void human_line(struct trn_metrics *m, const struct trn_step_record *r, double tok_s,
                       double mfu)
{
    char tps[32];

    thousands(tps, sizeof(tps), tok_s);
    fprintf(m->out,
            "step %6llu/%llu | loss %.4f | lr %.2e | norm %.2f | %s tok/s | %.0f ms (data %.0f "
            "fwd %.0f bwd %.0f opt %.0f ckpt %.0f)",
            (unsigned long long)r->step + 1, (unsigned long long)r->steps, r->loss, r->lr,
            r->grad_norm, tps, r->step_ms, r->data_ms, r->fwd_ms, r->bwd_ms, r->optim_ms,
            r->ckpt_ms);
    if (r->loss_scale > 0)
        fprintf(m->out, " | scale %.0f%s", r->loss_scale, r->skipped ? " SKIPPED" : "");
    if (mfu >= 0)
        fprintf(m->out, " | MFU %.1f%%", 100.0 * mfu);
    if (r->peak_mem_bytes > 0)
        fprintf(m->out, " | mem %.2f GiB", (double)r->peak_mem_bytes / (1024.0 * 1024 * 1024));
    if (r->device_mem_bytes > 0)
        fprintf(m->out, " | gpu %.2f GiB", (double)r->device_mem_bytes / (1024.0 * 1024 * 1024));
    if (r->data_parallel)
        fprintf(m->out, " | %u ranks, comm %.0f ms, exposed %.1f ms, overlap %.2f", r->ranks,
                r->comm_ms, r->exposed_ms, overlap(r));
    fputc('\n', m->out);
    fflush(m->out);
}

int trn_metrics_step(struct trn_metrics *m, const struct trn_step_record *r)
{
    struct gs_buf line = GS_BUF_INIT;
    struct gs_json j;
    double secs = r->step_ms / 1000.0;
    double tok_s = secs > 0 ? (double)r->tokens / secs : 0;
    double flops_s = secs > 0 ? r->flops / secs : 0;
    double mfu = r->peak_flops > 0 ? flops_s / r->peak_flops : -1;
    int rc;

    gs_json_init(&j, &line);
    gs_json_object_begin(&j);
    gs_json_kv_string(&j, "kind", "train");
    gs_json_kv_uint(&j, "step", r->step);
    kv_double(&j, "loss", r->loss);
    kv_double(&j, "lr", r->lr);
    kv_double(&j, "grad_norm", r->grad_norm);
    if (r->loss_scale > 0)
        kv_double(&j, "loss_scale", r->loss_scale);
    gs_json_kv_bool(&j, "skipped", r->skipped);
    gs_json_kv_uint(&j, "tokens", r->tokens);
    kv_double(&j, "tokens_per_s", tok_s);
    kv_double(&j, "step_ms", r->step_ms);
    kv_double(&j, "data_wait_ms", r->data_ms);
    kv_double(&j, "forward_ms", r->fwd_ms);
    kv_double(&j, "backward_ms", r->bwd_ms);
    kv_double(&j, "optimizer_ms", r->optim_ms);
    kv_double(&j, "checkpoint_stall_ms", r->ckpt_ms);
    kv_double(&j, "flops_per_s", flops_s);
    if (mfu >= 0)
        kv_double(&j, "mfu", mfu);
    gs_json_kv_uint(&j, "peak_mem_bytes", r->peak_mem_bytes);
    if (r->device_mem_bytes > 0)
        gs_json_kv_uint(&j, "device_mem_bytes", r->device_mem_bytes);
    if (r->data_parallel) {
        gs_json_kv_uint(&j, "ranks", r->ranks);
        kv_double(&j, "comm_ms", r->comm_ms);
        kv_double(&j, "comm_exposed_ms", r->exposed_ms);
        kv_double(&j, "overlap", overlap(r));
    }
    gs_json_object_end(&j);
    rc = gs_json_finish(&j);
    if (rc == 0)
        rc = write_line(m, &line);
    if (rc == 0)
        rc = trn_series_add(&m->train, (double)r->step, r->loss);
    if (rc == 0 && m->out != NULL && (r->step % m->log_every == 0 || r->step + 1 == r->steps))
        human_line(m, r, tok_s, mfu);
    gs_buf_release(&line);
    return rc;
}

int trn_metrics_eval(struct trn_metrics *m, uint64_t step, double loss)
{
    struct gs_buf line = GS_BUF_INIT;
    struct gs_json j;
    int rc;

    gs_json_init(&j, &line);
    gs_json_object_begin(&j);
    gs_json_kv_string(&j, "kind", "eval");
    gs_json_kv_uint(&j, "step", step);
    kv_double(&j, "loss", loss);
    gs_json_object_end(&j);
    rc = gs_json_finish(&j);
    if (rc == 0)
        rc = write_line(m, &line);
    if (rc == 0)
        rc = trn_series_add(&m->eval, (double)step, loss);
    if (rc == 0 && m->out != NULL) {
        fprintf(m->out, "eval at step %llu: loss %.4f\n", (unsigned long long)step + 1, loss);
        fflush(m->out);
    }
    gs_buf_release(&line);
    return rc;
}

int trn_metrics_plot(const struct trn_metrics *m, const char *path)
{
    const struct trn_series *series[2] = {&m->train, &m->eval};
    const char *names[2] = {"train", "eval"};

    return trn_plot_svg(path, "loss", series, names, 2);
}
