/* See cuda_probe.h. */
#include <dlfcn.h>
#include <link.h>

#include "util/cuda_probe.h"

static int adds_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    *(unsigned long long *)data = info->dlpi_adds;
    return 1; /* the counter is the same in every entry: stop at the first */
}

int xp_cuda_driver_loaded(unsigned long long *probed_adds)
{
    unsigned long long adds = 0;
    dl_iterate_phdr(adds_cb, &adds);
    if (adds == __atomic_load_n(probed_adds, __ATOMIC_RELAXED))
        return 0;
    void *drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!drv) {
        __atomic_store_n(probed_adds, adds, __ATOMIC_RELAXED);
        return 0;
    }
    dlclose(drv);
    return 1;
}
