/*
 * sim_fixture.c: temporary trace files for the simulator's tests (see sim_fixture.h).
 */
#include "sim_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];
static char path[512];
static char written[32][512];
static int nwritten;

const char *sim_fixture_file(const char *name, const char *text)
{
    FILE *f;

    if (dir[0] == '\0') {
        snprintf(dir, sizeof(dir), "%s/gsched-sim-test.XXXXXX",
                 getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
        if (mkdtemp(dir) == NULL)
            return NULL;
    }
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    if (f == NULL)
        return NULL;
    fputs(text, f);
    fclose(f);
    if (nwritten < 32)
        snprintf(written[nwritten++], sizeof(written[0]), "%s", path);
    return path;
}

void sim_fixture_cleanup(void)
{
    for (int i = 0; i < nwritten; i++)
        unlink(written[i]);
    nwritten = 0;
    if (dir[0] != '\0')
        rmdir(dir);
    dir[0] = '\0';
}
