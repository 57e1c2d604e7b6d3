/*
 * cmd_place.c: `gsched place --topology FILE.xml --gpus K [--busy LIST] [--affinity A]
 * [--json]`: which GPUs of one node a K-GPU job would get while the GPUs in LIST are busy.
 * It is an operator's what-if tool, and the way tests pin placement choices on the topology
 * fixtures without starting a cluster. Nothing is sent anywhere.
 *
 * The answer has to be the one gschedd would give, so the pieces are the scheduler's own:
 * the node is read by common/topo.h as gsched-workerd reads it, the pair matrix is built as
 * scheduler/sched_workers.c builds it from a worker's registration, and the choice is
 * gs_gpuset_choose() (common/gpuset.h). Only node choice across a cluster is left out.
 *
 * Output: the node and its free GPUs, the chosen set with its worst link, class total,
 * NVLink count and score (lower is better, comparable across node shapes for one K), the best
 * worst link an empty node of this shape gives, and each chosen GPU's PCI bus id and NUMA
 * node; or with --json one object carrying the same facts. Exit 0 with a set, 1 when no set
 * can be given (or the file cannot be read), 2 for bad usage.
 */
#include "cli/commands.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/table.h"
#include "common/error.h"
#include "common/gpuset.h"
#include "common/json.h"
#include "common/topo.h"

/*
 * The two enums rank links the same way (gpuset.h keeps its own so that it stays free of
 * hwloc's world), and the scheduler relies on that when it turns a worker's links into
 * classes; so do we, and a change to either enum should fail here rather than misplace.
 */
_Static_assert((int)GS_TOPO_LINK_NVLINK == (int)GS_GPUSET_NVLINK, "link classes differ");
_Static_assert((int)GS_TOPO_LINK_PIX == (int)GS_GPUSET_PIX, "link classes differ");
_Static_assert((int)GS_TOPO_LINK_PXB == (int)GS_GPUSET_PXB, "link classes differ");
_Static_assert((int)GS_TOPO_LINK_PHB == (int)GS_GPUSET_PHB, "link classes differ");
_Static_assert((int)GS_TOPO_LINK_NODE == (int)GS_GPUSET_NODE, "link classes differ");
_Static_assert((int)GS_TOPO_LINK_SYS == (int)GS_GPUSET_SYS, "link classes differ");

/* No node has this many GPUs; the bound keeps "0-4000000000" from looping for minutes. */
#define BUSY_INDEX_MAX 9999

static const char place_usage[] =
    "usage: gsched place --topology FILE.xml --gpus K [--busy LIST] [--affinity A] [--json]\n"
    "Shows which GPUs of the node in FILE.xml a K-GPU job would get, as gschedd chooses.\n"
    "  --topology FILE   the node, an hwloc XML file (as gsched-workerd --topology takes)\n"
    "  --gpus K          GPUs the job asks for, 1 or more\n"
    "  --busy LIST       GPUs already taken, such as 0,2,5-7 (default: none)\n"
    "  --affinity A      prefer (default): the best set free now; strict: only a set as\n"
    "                    good as an empty node gives; any: the lowest free indices\n"
    "  --json            one JSON object instead of text\n";

static const struct cli_opt place_opts[] = {
    {"--topology", NULL, true, 't'}, {"--gpus", "-g", true, 'g'},  {"--busy", NULL, true, 'b'},
    {"--affinity", NULL, true, 'a'}, {"--json", NULL, false, 'j'}, {"--help", "-h", false, 'h'},
    {NULL, NULL, false, 0},
};

struct place_opts {
    const char *topology;
    uint64_t busy_mask; /* the busy GPUs that a node can have (index < GS_GPUSET_MAX) */
    long busy_highest;  /* the highest index in busy, -1 for none: checked once loaded */
    int gpus;           /* K, 0 until given */
    enum gs_gpuset_affinity affinity;
    bool json;
    bool help;
};

/* What was chosen, for either output. The topology is borrowed. */
struct place_result {
    const char *path;
    const struct gs_topo *topo;
    uint64_t free_mask;
    const struct place_opts *opts;
    struct gs_gpuset_choice choice;
    struct gs_gpuset_choice best; /* the best K-set on an empty node of this shape */
};

static const char *affinity_name(enum gs_gpuset_affinity a)
{
    return a == GS_GPUSET_STRICT ? "strict" : a == GS_GPUSET_ANY ? "any" : "prefer";
}

/* A GPU index at *p, advancing *p past its digits. Returns 0 or -EINVAL. */
static int parse_index(const char **p, long *ret_index)
{
    long v = 0;

    if (**p < '0' || **p > '9')
        return -EINVAL;
    for (; **p >= '0' && **p <= '9'; (*p)++) {
        v = v * 10 + (**p - '0');
        if (v > BUSY_INDEX_MAX)
            return -EINVAL;
    }
    *ret_index = v;
    return 0;
}

/*
 * One entry of --busy, "3" or "5-7", at *p. Indices beyond what any node has are kept only
 * as o->busy_highest, so that the error can say how many GPUs the file's node has.
 */
static int parse_busy_entry(const char **p, struct place_opts *o)
{
    long lo, hi;

    if (parse_index(p, &lo) < 0)
        return -EINVAL;
    hi = lo;
    if (**p == '-') {
        (*p)++;
        if (parse_index(p, &hi) < 0 || hi < lo)
            return -EINVAL;
    }
    if (**p != ',' && **p != '\0')
        return -EINVAL;
    for (long i = lo; i <= hi && i < GS_GPUSET_MAX; i++)
        o->busy_mask |= UINT64_C(1) << i;
    if (hi > o->busy_highest)
        o->busy_highest = hi;
    return 0;
}

/* "0,2,5-7" into o. "" is no GPU at all, so that scripts can pass an empty list. */
static int parse_busy(const char *list, struct place_opts *o)
{
    const char *p = list;

    while (*p != '\0') {
        if (parse_busy_entry(&p, o) < 0)
            return cli_usage_error(
                "place", "--busy wants GPU indices and ranges such as 0,2,5-7, not '%s'", list);
        if (*p == ',' && *++p == '\0')
            return cli_usage_error("place", "--busy ends with a comma: '%s'", list);
    }
    return 0;
}

static int parse_option(struct place_opts *o, int opt, const char *value)
{
    uint64_t k;

    switch (opt) {
    case 't':
        o->topology = value;
        return 0;
    case 'g':
        if (cli_parse_u64(value, &k) < 0 || k < 1 || k > GS_GPUSET_MAX)
            return cli_usage_error("place", "--gpus wants 1 to %d, not '%s'", GS_GPUSET_MAX, value);
        o->gpus = (int)k;
        return 0;
    case 'b':
        return parse_busy(value, o);
    case 'a':
        if (strcmp(value, "prefer") == 0)
            o->affinity = GS_GPUSET_PREFER;
        else if (strcmp(value, "strict") == 0)
            o->affinity = GS_GPUSET_STRICT;
        else if (strcmp(value, "any") == 0)
            o->affinity = GS_GPUSET_ANY;
        else
            return cli_usage_error("place", "--affinity is prefer, strict or any, not '%s'", value);
        return 0;
    case 'j':
        o->json = true;
        return 0;
    default:
        o->help = true;
        return 0;
    }
}

/* Returns 0, or the exit status to leave with. */
static int parse_args(int argc, char **argv, struct place_opts *o)
{
    struct cli_args a;
    int opt, status = 0;

    *o = (struct place_opts){.busy_highest = -1, .affinity = GS_GPUSET_PREFER};
    cli_args_init(&a, argc, argv);
    while (status == 0 && (opt = cli_args_next(&a, place_opts)) != 0) {
        if (opt < 0)
            return cli_usage_error("place", "%s: '%s'", a.why, a.bad);
        if (opt == CLI_ARGS_OPERAND)
            return cli_usage_error("place", "unexpected argument '%s'", a.value);
        status = parse_option(o, opt, a.value);
    }
    if (status != 0 || o->help)
        return status;
    if (o->topology == NULL)
        return cli_usage_error("place", "which node? (--topology FILE.xml)");
    if (o->gpus == 0)
        return cli_usage_error("place", "how many GPUs? (--gpus K)");
    return 0;
}

/*
 * The ngpus x ngpus pair matrix of the node, as gschedd builds it from the links a worker
 * registers (which the worker reads with the same gs_topo_gpu_link()). The caller frees it.
 */
static int build_links(const struct gs_topo *topo, struct gs_gpuset_link **ret_links)
{
    int n = gs_topo_ngpus(topo);
    struct gs_gpuset_link *m = calloc((size_t)n * (size_t)n, sizeof(*m));
    int rc = 0;

    if (m == NULL)
        return -ENOMEM;
    /* Each pair is asked once and filled both ways; gs_gpuset_init() ignores the diagonal. */
    for (int i = 0; i < n && rc == 0; i++) {
        for (int j = i + 1; j < n && rc == 0; j++) {
            int nvlinks = 0, cls = gs_topo_gpu_link(topo, i, j, &nvlinks);
            uint8_t count = (uint8_t)(nvlinks < 255 ? nvlinks : 255);

            if (cls < 0)
                rc = cls;
            else
                m[i * n + j] = m[j * n + i] =
                    (struct gs_gpuset_link){(uint8_t)cls, cls == GS_TOPO_LINK_NVLINK ? count : 0};
        }
    }
    if (rc < 0) {
        free(m);
        return rc;
    }
    *ret_links = m;
    return 0;
}

/* Appends the GPUs of mask as "0,1,5-7" (a range from three on), or "none". */
static int put_mask_list(struct gs_buf *out, uint64_t mask)
{
    int rc = 0, i = 0;
    bool first = true;

    if (mask == 0)
        return gs_buf_append_str(out, "none");
    while (rc == 0 && i < GS_GPUSET_MAX) {
        int end = i;

        if (!((mask >> i) & 1)) {
            i++;
            continue;
        }
        while (end + 1 < GS_GPUSET_MAX && ((mask >> (end + 1)) & 1))
            end++;
        if (end < i + 2)
            end = i;
        rc = gs_buf_printf(out, end == i ? "%s%d" : "%s%d-%d", first ? "" : ",", i, end);
        first = false;
        i = end + 1;
    }
    return rc;
}

/* "NV18", "PIX": the set's worst link; NULL for fewer than two GPUs, which have no pair. */
static const char *worst_name(const struct gs_gpuset_choice *c, char *buf, size_t size)
{
    if (c->worst == GS_GPUSET_NONE)
        return NULL;
    return gs_gpuset_class_name(c->worst, c->worst_nvlinks, buf, size);
}

/* The GPUs' facts, one row each: index, PCI bus id, NUMA node, model. */
static int put_gpu_table(struct gs_buf *out, const struct place_result *r)
{
    static const char *const head[] = {"GPU", "PCI BUS ID", "NUMA", "MODEL"};
    struct cli_table t;
    char cell[32];
    int rc = 0;

    cli_table_init(&t, 4);
    for (size_t i = 0; i < 4 && rc == 0; i++)
        rc = cli_table_add(&t, head[i]);
    for (int g = 0; g < GS_GPUSET_MAX && rc == 0; g++) {
        const struct gs_topo_gpu *gpu = gs_topo_gpu(r->topo, g);

        if (!((r->choice.mask >> g) & 1) || gpu == NULL)
            continue;
        snprintf(cell, sizeof(cell), "%d", g);
        rc = cli_table_add(&t, cell);
        if (rc == 0)
            rc = cli_table_add(&t, gpu->pci_bus_id);
        snprintf(cell, sizeof(cell), "%d", gpu->numa_node);
        if (rc == 0)
            rc = cli_table_add(&t, gpu->numa_node >= 0 ? cell : "-");
        if (rc == 0)
            rc = cli_table_add(&t, gpu->model[0] != '\0' ? gpu->model : "-");
    }
    if (rc == 0)
        rc = cli_table_render(&t, out);
    cli_table_release(&t);
    return rc;
}

static int put_text(struct gs_buf *out, const struct place_result *r)
{
    const char *host = gs_topo_hostname(r->topo);
    char worst[GS_GPUSET_NAME_MAX], best[GS_GPUSET_NAME_MAX];
    const char *w = worst_name(&r->choice, worst, sizeof(worst));
    const char *b = worst_name(&r->best, best, sizeof(best));
    int rc;

    rc = gs_buf_printf(out, "%s%s%s: %d GPUs, free ", r->path, host[0] != '\0' ? ", host " : "",
                       host, gs_topo_ngpus(r->topo));
    if (rc == 0)
        rc = put_mask_list(out, r->free_mask);
    if (rc == 0)
        rc = gs_buf_printf(out, "\n%d GPU%s, affinity %s: GPUs ", r->opts->gpus,
                           r->opts->gpus == 1 ? "" : "s", affinity_name(r->opts->affinity));
    if (rc == 0)
        rc = put_mask_list(out, r->choice.mask);
    if (rc == 0)
        rc = gs_buf_printf(out,
                           "\nworst link %s (an empty node's best: %s), total %d, nvlinks %d, "
                           "score %" PRIu64 "\n",
                           w != NULL ? w : "none", b != NULL ? b : "none", r->choice.total,
                           r->choice.nvlinks, r->choice.score);
    if (rc == 0)
        rc = put_gpu_table(out, r);
    return rc;
}

static void put_json_mask(struct gs_json *j, const char *key, uint64_t mask)
{
    gs_json_key(j, key);
    gs_json_array_begin(j);
    for (int g = 0; g < GS_GPUSET_MAX; g++) {
        if ((mask >> g) & 1)
            gs_json_int(j, g);
    }
    gs_json_array_end(j);
}

static void put_json_devices(struct gs_json *j, const struct place_result *r)
{
    gs_json_key(j, "devices");
    gs_json_array_begin(j);
    for (int g = 0; g < GS_GPUSET_MAX; g++) {
        const struct gs_topo_gpu *gpu = gs_topo_gpu(r->topo, g);

        if (!((r->choice.mask >> g) & 1) || gpu == NULL)
            continue;
        gs_json_object_begin(j);
        gs_json_kv_int(j, "index", g);
        gs_json_kv_string(j, "pci_bus_id", gpu->pci_bus_id);
        gs_json_key(j, "numa_node");
        if (gpu->numa_node >= 0)
            gs_json_int(j, gpu->numa_node);
        else
            gs_json_null(j);
        gs_json_kv_string(j, "model", gpu->model);
        gs_json_object_end(j);
    }
    gs_json_array_end(j);
}

static int put_json(struct gs_buf *out, const struct place_result *r)
{
    char worst[GS_GPUSET_NAME_MAX], best[GS_GPUSET_NAME_MAX];
    struct gs_json j;
    int ngpus = gs_topo_ngpus(r->topo);
    int rc;

    gs_json_init(&j, out);
    gs_json_object_begin(&j);
    gs_json_kv_string(&j, "topology", r->path);
    gs_json_kv_string(&j, "host", gs_topo_hostname(r->topo));
    gs_json_kv_int(&j, "ngpus", ngpus);
    put_json_mask(&j, "free", r->free_mask);
    gs_json_kv_int(&j, "k", r->opts->gpus);
    gs_json_kv_string(&j, "affinity", affinity_name(r->opts->affinity));
    put_json_mask(&j, "gpus", r->choice.mask);
    gs_json_kv_string(&j, "worst", worst_name(&r->choice, worst, sizeof(worst)));
    gs_json_kv_int(&j, "total", r->choice.total);
    gs_json_kv_int(&j, "nvlinks", r->choice.nvlinks);
    gs_json_kv_uint(&j, "score", r->choice.score);
    gs_json_kv_uint(&j, "frag", r->choice.frag);
    gs_json_kv_string(&j, "best_possible", worst_name(&r->best, best, sizeof(best)));
    gs_json_kv_uint(&j, "best_score", r->best.score);
    put_json_devices(&j, r);
    gs_json_object_end(&j);
    rc = gs_json_finish(&j);
    if (rc == 0)
        rc = gs_buf_putc(out, '\n');
    return rc;
}

/*
 * Says why no set was given. Under strict the best set free now is found again with prefer,
 * so that the operator sees what the job could have had.
 */
static void report_no_set(const struct gs_gpuset_node *n, const struct place_result *r)
{
    struct gs_gpuset_choice now;
    char best[GS_GPUSET_NAME_MAX], got[GS_GPUSET_NAME_MAX];
    struct gs_buf list = GS_BUF_INIT;
    int nfree = __builtin_popcountll(r->free_mask);

    if (nfree < r->opts->gpus) {
        (void)put_mask_list(&list, r->free_mask);
        fprintf(stderr,
                "gsched place: %d GPU%s wanted, but the node has %d free of %d (free: %s)\n",
                r->opts->gpus, r->opts->gpus == 1 ? "" : "s", nfree, n->ngpus,
                list.data != NULL ? list.data : "none");
    } else if (gs_gpuset_choose(n, r->free_mask, r->opts->gpus, GS_GPUSET_PREFER, &now) == 0) {
        (void)put_mask_list(&list, now.mask);
        fprintf(stderr,
                "gsched place: strict: no %d-GPU set as good as %s is free; the best now is %s "
                "(GPUs %s)\n",
                r->opts->gpus, worst_name(&r->best, best, sizeof(best)),
                worst_name(&now, got, sizeof(got)), list.data != NULL ? list.data : "none");
    } else {
        fprintf(stderr, "gsched place: no %d-GPU set found\n", r->opts->gpus);
    }
    gs_buf_release(&list);
}

/* The node's checks against the options: GPUs present, --busy and K within range. */
static int check_node(const struct place_opts *o, const struct gs_topo *topo)
{
    int ngpus = gs_topo_ngpus(topo);

    if (ngpus == 0) {
        fprintf(stderr, "gsched place: %s has no GPUs: nothing to place\n", o->topology);
        return -ENODEV;
    }
    if (ngpus > GS_GPUSET_MAX) {
        fprintf(stderr, "gsched place: %s has %d GPUs; placement handles up to %d\n", o->topology,
                ngpus, GS_GPUSET_MAX);
        return -ERANGE;
    }
    if (o->busy_highest >= ngpus) {
        fprintf(stderr, "gsched place: --busy names GPU %ld, but %s has GPUs 0-%d only\n",
                o->busy_highest, o->topology, ngpus - 1);
        return -ERANGE;
    }
    if (o->gpus > ngpus) {
        fprintf(stderr, "gsched place: %d GPUs wanted, but %s has %d\n", o->gpus, o->topology,
                ngpus);
        return -ERANGE;
    }
    return 0;
}

/* Chooses the set into r, or says why there is none. Returns 0 or a negative errno. */
static int place(const struct gs_topo *topo, struct place_result *r)
{
    struct gs_gpuset_link *links = NULL;
    struct gs_gpuset_node *n = malloc(sizeof(*n)); /* some 14 KiB: kept off the stack */
    int ngpus = gs_topo_ngpus(topo), rc;
    uint64_t all = ngpus == GS_GPUSET_MAX ? UINT64_MAX : (UINT64_C(1) << ngpus) - 1;

    rc = n != NULL ? build_links(topo, &links) : -ENOMEM;
    if (rc == 0)
        rc = gs_gpuset_init(n, ngpus, links);
    if (rc < 0) {
        fprintf(stderr, "gsched place: %s: %s\n", r->path, gs_strerror(rc));
        goto out;
    }
    r->free_mask = all & ~r->opts->busy_mask;
    rc = gs_gpuset_choose(n, all, r->opts->gpus, GS_GPUSET_PREFER, &r->best);
    if (rc == 0)
        rc = gs_gpuset_choose(n, r->free_mask, r->opts->gpus, r->opts->affinity, &r->choice);
    if (rc < 0)
        report_no_set(n, r);
out:
    free(links);
    free(n);
    return rc;
}

static int print_result(const struct place_result *r)
{
    struct gs_buf out = GS_BUF_INIT;
    int rc = r->opts->json ? put_json(&out, r) : put_text(&out, r);

    if (rc == 0 && fwrite(out.data, 1, out.len, stdout) != out.len)
        rc = -EIO;
    if (rc < 0)
        fprintf(stderr, "gsched place: %s\n", gs_strerror(rc));
    gs_buf_release(&out);
    return rc;
}

int cli_cmd_place(int argc, char **argv)
{
    struct place_opts o;
    struct gs_topo *topo = NULL;
    struct gs_error err;
    struct place_result r = {0};
    int rc, status = parse_args(argc, argv, &o);

    if (status != 0)
        return status;
    if (o.help) {
        fputs(place_usage, stdout);
        return 0;
    }
    gs_error_clear(&err);
    rc = gs_topo_load(&(struct gs_topo_opts){.xml_path = o.topology}, &topo, &err);
    if (rc < 0) {
        fprintf(stderr, "gsched place: %s\n", err.msg[0] != '\0' ? err.msg : gs_strerror(rc));
        goto out;
    }
    rc = check_node(&o, topo);
    if (rc < 0)
        goto out;
    r = (struct place_result){.path = o.topology, .topo = topo, .opts = &o};
    rc = place(topo, &r);
    if (rc == 0)
        rc = print_result(&r);
out:
    gs_topo_free(topo);
    return rc == 0 ? 0 : 1;
}
