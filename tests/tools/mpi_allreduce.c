/*
 * mpi_allreduce SIZE: an MPI program (built by test_launchers with Debian's
 * mpicc.mpich) that xprun must be able to run: it checks MPI_COMM_WORLD's
 * size and the results of a few MPI_Allreduce calls.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && size != atoi(argv[1]))
        bad = 1;
    long mine = rank + 1, sum = 0, max = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &max, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (sum != (long)size * (size + 1) / 2 || max != size)
        bad = 1;
    enum { N = 10000 };
    static double v[N], r[N];
    for (int i = 0; i < N; i++)
        v[i] = rank * 0.5 + i;
    MPI_Allreduce(v, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        if (r[i] != 0.25 * size * (size - 1) + (double)i * size)
            bad = 1;
    printf("allreduce %s rank %d of %d sum %ld max %ld\n", bad ? "BAD" : "ok", rank, size, sum,
           max);
    MPI_Finalize();
    return bad;
}
