/* dt_pack_mpi: MPI_Pack / MPI_Unpack bandwidth on the same matrices and types
 * as bench/dt_pack.c (see there), for comparison in the same run. Built by
 * bench/dt_compare.sh with mpicc.mpich and mpicc.openmpi; run as a singleton
 * (no mpirun). vector_contig uses MPI_Sendrecv on MPI_COMM_SELF from the
 * vector type to a contiguous receive type (and back), the way an MPI program
 * exchanges them. Prints
 *   bench=dt_pack type=vector impl=<impl> op=pack cached=1 GBs=19.0
 * Usage: dt_pack_mpi <impl name> [reps] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 2048

enum { T_VECTOR, T_TRIANGLE, T_TRANSPOSE, T_VECTOR_CONTIG, T_COUNT };
static const char *const type_names[T_COUNT] = {"vector", "triangle", "transpose", "vector_contig"};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static MPI_Datatype make_type(int id, int *count)
{
    MPI_Datatype t, tmp;
    *count = 1;
    if (id == T_TRIANGLE) {
        int *bl = malloc(N * sizeof *bl), *d = malloc(N * sizeof *d);
        for (int j = 0; j < N; j++) {
            bl[j] = N - j;
            d[j] = j * N + j;
        }
        MPI_Type_indexed(N, bl, d, MPI_DOUBLE, &t);
        free(bl);
        free(d);
    } else if (id == T_TRANSPOSE) {
        MPI_Type_vector(N, 1, N, MPI_DOUBLE, &tmp);
        MPI_Type_create_resized(tmp, 0, sizeof(double), &t);
        MPI_Type_free(&tmp);
        *count = N;
    } else {
        MPI_Type_vector(N, N, 2 * N, MPI_DOUBLE, &t);
    }
    MPI_Type_commit(&t);
    return t;
}

static void run_op(int id, MPI_Datatype t, int count, int unpack, double *big, double *packed)
{
    int pos = 0, bytes = N * N * (int)sizeof(double);
    if (id == T_TRIANGLE)
        bytes = N * (N + 1) / 2 * (int)sizeof(double);
    if (id == T_VECTOR_CONTIG) {
        if (unpack)
            MPI_Sendrecv(packed, N * N, MPI_DOUBLE, 0, 1, big, 1, t, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE);
        else
            MPI_Sendrecv(big, 1, t, 0, 1, packed, N * N, MPI_DOUBLE, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    } else if (unpack) {
        MPI_Unpack(packed, bytes, &pos, big, count, t, MPI_COMM_SELF);
    } else {
        MPI_Pack(big, count, t, packed, bytes, &pos, MPI_COMM_SELF);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *impl = argc > 1 ? argv[1] : "mpi";
    int reps = argc > 2 ? atoi(argv[2]) : 9;
    if (reps < 1)
        reps = 1;
    size_t big_n = (size_t)4 * N * N;
    double *big = malloc(big_n * sizeof *big), *packed = malloc((size_t)N * N * sizeof *packed);
    double *samples = malloc((size_t)reps * sizeof *samples);
    for (size_t i = 0; i < big_n; i++)
        big[i] = (double)i;
    memset(packed, 0, (size_t)N * N * sizeof *packed);
    for (int id = 0; id < T_COUNT; id++) {
        int count, size;
        MPI_Datatype t = make_type(id, &count);
        MPI_Type_size(t, &size);
        double bytes = (double)size * count;
        for (int unpack = 0; unpack < 2; unpack++) {
            const char *op = unpack ? "unpack" : "pack";
            run_op(id, t, count, unpack, big, packed);
            for (int r = 0; r < reps; r++) {
                double t0 = MPI_Wtime();
                run_op(id, t, count, unpack, big, packed);
                samples[r] = bytes / (MPI_Wtime() - t0) / 1e9;
            }
            printf("bench=dt_pack type=%s impl=%s op=%s cached=1 GBs=%.2f\n", type_names[id], impl, op,
                   median(samples, reps));
            for (int r = 0; r < reps; r++) {
                double t0 = MPI_Wtime();
                int cnt;
                MPI_Datatype ft = make_type(id, &cnt);
                run_op(id, ft, cnt, unpack, big, packed);
                samples[r] = bytes / (MPI_Wtime() - t0) / 1e9;
                MPI_Type_free(&ft);
            }
            printf("bench=dt_pack type=%s impl=%s op=%s cached=0 GBs=%.2f\n", type_names[id], impl, op,
                   median(samples, reps));
        }
        MPI_Type_free(&t);
    }
    fflush(stdout);
    free(big);
    free(packed);
    free(samples);
    MPI_Finalize();
    return 0;
}
