/*
 * fuzz_config.c: libFuzzer harness for gsched.toml (common/config.h), which the daemons and
 * the CLI read at start.
 *
 * The input is the file's text. It is read over the defaults, as gs_config_load() does, and
 * then asked what the daemons ask of a configuration (the default partition, a node's
 * switch and partition); a failed parse must explain itself in the errors buffer. The
 * configuration is released either way, so LeakSanitizer sees every error path's cleanup.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/buf.h"
#include "common/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What gschedd asks of every node that registers. */
static void ask(const struct gs_config *cfg)
{
    const struct gs_config_partition *p = gs_config_partition(cfg, NULL);

    if (p == NULL)
        abort(); /* a parse that succeeded always has a default partition */
    (void)gs_config_partition_has(p, "node1");
    (void)gs_config_switch_of(cfg, "node1");
    for (size_t i = 0; i < cfg->npartitions; i++)
        if (gs_config_partition(cfg, cfg->partitions[i].name) == NULL)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_buf errors = GS_BUF_INIT;
    struct gs_config cfg;
    int rc;

    if (gs_config_init(&cfg) < 0)
        return 0;
    rc = gs_config_parse(&cfg, (const char *)data, size, "gsched.toml", &errors);
    if (rc == 0)
        ask(&cfg);
    else if (rc == -EINVAL && errors.len == 0)
        abort(); /* every rejection names its place */
    gs_config_release(&cfg);
    gs_buf_release(&errors);
    return 0;
}
