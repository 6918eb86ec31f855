/*
 * test_dlclose - libportals loaded with dlopen, initialized (its progress
 * thread running), never finalized, and closed: the process goes on and
 * exits normally. Open MPI does exactly this: it loads its Portals
 * components with dlopen, osc/portals4 calls PtlInit but never PtlFini, and
 * MPI_Finalize closes the components. If the library were unmapped, the
 * progress thread's next wake-up (its first nap ends within a millisecond)
 * would run unmapped code. libportals is linked with -z nodelete.
 *
 *   test_dlclose PATH_TO_LIBPORTALS
 */
#include <dlfcn.h>
#include <portals4.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "xp_test.h"

typedef int (*init_fn)(void);
typedef int (*ni_init_fn)(ptl_interface_t, unsigned int, ptl_pid_t, const ptl_ni_limits_t *,
                          ptl_ni_limits_t *, ptl_handle_ni_t *);

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_dlclose PATH_TO_LIBPORTALS\n");
        return 2;
    }
    for (int round = 0; round < 2; round++) {
        void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            XP_TEST_SKIP("cannot load %s: %s", argv[1], dlerror());
        init_fn ptl_init = (init_fn)dlsym(lib, "PtlInit");
        ni_init_fn ni_init = (ni_init_fn)dlsym(lib, "PtlNIInit");
        XP_REQUIRE(ptl_init && ni_init);
        ptl_handle_ni_t ni;
        XP_REQUIRE(ptl_init() == PTL_OK);
        XP_REQUIRE(ni_init(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY,
                           NULL, NULL, &ni) == PTL_OK);
        XP_CHECK_EQ(dlclose(lib), 0);
        /* Long enough for the progress thread's nap and a few wake-ups. */
        usleep(50000);
    }
    printf("closed with Portals initialized, still running\n");
    return xp_test_result();
}
