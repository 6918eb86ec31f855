/*
 * test_launchers SCENARIO ...: xprun and foreign launchers together.
 *   mpich   XPRUN MPICC SOURCE  build an MPI_Allreduce program with Debian's
 *                               MPICH compiler and run it under xprun -n 4;
 *   hydra   MPIEXEC PROGRAM     run an Xportals program under mpiexec.hydra;
 *   openmpi MPIRUN PROGRAM      ... under Open MPI's mpirun (PMIx);
 *   mpi_portals KIND LAUNCHER MPICC SOURCE INCDIR INCDIR2 LIBDIR FLAGS
 *                               build an MPI + Portals program (mpi_portals.c)
 *                               with MPICC against libportals in LIBDIR and run
 *                               it on 3 ranks under LAUNCHER, of KIND xprun,
 *                               hydra or openmpi: both libraries bootstrap
 *                               through the same launcher in one process.
 * A missing tool ("...-NOTFOUND", "none", or a path that is not an executable
 * any more, as when a build tree runs on another machine) skips the test
 * (exit 77).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xp_test.h"

static char dir[64], outfile[96];

static int missing(const char *tool)
{
    return !*tool || strstr(tool, "NOTFOUND") || !strcmp(tool, "none") ||
           (strchr(tool, '/') && access(tool, X_OK) != 0);
}

/* Run a shell command with output into outfile; returns its exit code. */
static int run(const char *cmd)
{
    char full[4096];
    snprintf(full, sizeof full, "%s > '%s' 2>&1", cmd, outfile);
    int st = system(full);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *output(void)
{
    static char buf[16384];
    FILE *f = fopen(outfile, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    return buf;
}

static void expect_lines(const char *fmt, int n, const char *tail)
{
    const char *out = output();
    for (int r = 0; r < n; r++) {
        char want[128];
        snprintf(want, sizeof want, fmt, r, n);
        size_t len = strlen(want);
        snprintf(want + len, sizeof want - len, "%s", tail);
        if (!strstr(out, want)) {
            fprintf(stderr, "missing \"%s\" in the output:\n%s\n", want, out);
            xp_test_failures_++;
        }
    }
}

static void scenario_mpich(const char *xprun, const char *mpicc, const char *src)
{
    if (missing(mpicc))
        XP_TEST_SKIP("mpicc.mpich not found (install libmpich-dev)");
    char cmd[1024], prog[128];
    snprintf(prog, sizeof prog, "%s/mpi_allreduce", dir);
    snprintf(cmd, sizeof cmd, "'%s' -O1 -o '%s' '%s'", mpicc, prog, src);
    if (run(cmd) != 0) {
        fprintf(stderr, "cannot build the MPI program:\n%s\n", output());
        xp_test_failures_++;
        return;
    }
    snprintf(cmd, sizeof cmd, "'%s' -n 4 --timeout 60 '%s' 4", xprun, prog);
    int rc = run(cmd);
    printf("%s", output());
    XP_CHECK_EQ(rc, 0);
    expect_lines("allreduce ok rank %d of %d sum 10 max 4", 4, "\n");
    unlink(prog);
}

static void scenario_hydra(const char *mpiexec, const char *prog)
{
    if (missing(mpiexec))
        XP_TEST_SKIP("mpiexec.hydra not found (install mpich)");
    char cmd[1024];
    for (int n = 1; n <= 3; n++) {
        snprintf(cmd, sizeof cmd, "'%s' -n %d '%s' %d pmi1", mpiexec, n, prog, n);
        int rc = run(cmd);
        printf("%s", output());
        XP_CHECK_EQ(rc, 0);
        expect_lines("identity: rank %d of %d bootstrap pmi1", n, " node 0/1");
    }
}

static void scenario_openmpi(const char *mpirun, const char *prog, const char *have_pmix)
{
    if (missing(mpirun))
        XP_TEST_SKIP("Open MPI's mpirun not found (install openmpi-bin)");
    if (strcmp(have_pmix, "ON") && strcmp(have_pmix, "1"))
        XP_TEST_SKIP("built without PMIx (install libpmix-dev), cannot run under mpirun");
    const char *root = geteuid() == 0 ? "--allow-run-as-root" : "";
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s --oversubscribe -n 1 true", mpirun, root);
    if (run(cmd) != 0)
        XP_TEST_SKIP("Open MPI's mpirun cannot start processes here:\n%s", output());
    snprintf(cmd, sizeof cmd, "'%s' %s --oversubscribe -n 3 '%s' 3 pmix", mpirun, root, prog);
    int rc = run(cmd);
    printf("%s", output());
    XP_CHECK_EQ(rc, 0);
    expect_lines("identity: rank %d of %d bootstrap pmix", 3, " node 0/1");
}

static void scenario_mpi_portals(char **a)
{
    const char *kind = a[0], *launcher = a[1], *mpicc = a[2], *src = a[3];
    if (missing(launcher) || missing(mpicc))
        XP_TEST_SKIP("%s or %s not found (install the MPI packages)", launcher, mpicc);
    char cmd[2048], prog[128];
    snprintf(prog, sizeof prog, "%s/mpi_portals", dir);
    snprintf(cmd, sizeof cmd, "'%s' -O1 %s -I'%s' -I'%s' -o '%s' '%s' -L'%s' -lportals -Wl,-rpath,'%s'",
             mpicc, a[7], a[4], a[5], prog, src, a[6], a[6]);
    if (run(cmd) != 0) {
        fprintf(stderr, "cannot build the MPI + Portals program:\n%s\n", output());
        xp_test_failures_++;
        return;
    }
    if (!strcmp(kind, "xprun"))
        snprintf(cmd, sizeof cmd, "'%s' -n 3 --timeout 60 '%s'", launcher, prog);
    else if (!strcmp(kind, "hydra"))
        snprintf(cmd, sizeof cmd, "timeout 60 '%s' -n 3 '%s'", launcher, prog);
    else
        snprintf(cmd, sizeof cmd, "timeout 60 '%s' %s --oversubscribe -n 3 '%s'", launcher,
                 geteuid() == 0 ? "--allow-run-as-root" : "", prog);
    /* Then without PtlFini (Open MPI's osc/portals4): the launcher must
     * still see three normal exits (libportals gives back at exit what it
     * holds of the launcher's client library). */
    for (int keep = 0; keep < 2; keep++) {
        size_t len = strlen(cmd);
        if (keep)
            snprintf(cmd + len, sizeof cmd - len, " keep");
        int rc = run(cmd);
        printf("%s", output());
        XP_CHECK_EQ(rc, 0);
        expect_lines("mpi+portals rank %d of %d ok", 3, "\n");
        XP_CHECK(strstr(output(), "improperly") == NULL);
    }
    unlink(prog);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: test_launchers SCENARIO ARGS...\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "/tmp/test_launchers.XXXXXX");
    XP_REQUIRE(mkdtemp(dir) != NULL);
    snprintf(outfile, sizeof outfile, "%s/out", dir);
    if (!strcmp(argv[1], "mpich") && argc == 5)
        scenario_mpich(argv[2], argv[3], argv[4]);
    else if (!strcmp(argv[1], "hydra"))
        scenario_hydra(argv[2], argv[3]);
    else if (!strcmp(argv[1], "openmpi") && argc == 5)
        scenario_openmpi(argv[2], argv[3], argv[4]);
    else if (!strcmp(argv[1], "mpi_portals") && argc == 10)
        scenario_mpi_portals(argv + 2);
    else
        XP_CHECK(!"unknown scenario or wrong arguments");
    unlink(outfile);
    rmdir(dir);
    return xp_test_result();
}
