/*
 * dl.c: dlsym() into a function pointer (see dl.h).
 */
#include "common/dl.h"

#include <dlfcn.h>
#include <string.h>

bool gs_dl_sym(void *lib, const char *name, void *ret_fn, size_t size)
{
    void *sym = dlsym(lib, name);

    if (sym == NULL || size != sizeof(sym))
        return false;
    memcpy(ret_fn, &sym, size);
    return true;
}
