/* GPU pack / unpack: device buffers with device, pinned (zero copy) and
 * pageable host packed buffers, random windows, against the CPU engine on
 * host copies. Skips (77) without a GPU or without the xpdt_cuda plugin. */
#include <cuda_runtime.h>
#include <stdio.h>

#include "dt_ref.h"

#define ARENA (1 << 20)

typedef struct gpu_bufs {
    unsigned char *h_nc, *d_nc;  /* typed data: host copy, device */
    unsigned char *h_pk, *d_pk;  /* packed: host result, device */
    unsigned char *pinned, *pageable;
} gpu_bufs_t;

static void check_type(gpu_bufs_t *g, xp_dt_t t, size_t count, ptrdiff_t origin)
{
    size_t size;
    XP_REQUIRE(xp_dt_size(t, &size) == XP_OK);
    size_t total = size * count;
    if (total > ARENA / 2)
        return;
    unsigned char *ref = malloc(total + 1), *got = malloc(total + 1);
    for (size_t i = 0; i < ARENA; i++)
        g->h_nc[i] = (unsigned char)rnd();
    XP_REQUIRE(cudaMemcpy(g->d_nc, g->h_nc, ARENA, cudaMemcpyHostToDevice) == cudaSuccess);
    XP_CHECK_EQ(xp_dt_pack_all(t, count, g->h_nc + origin, ref), XP_OK);
    for (int w = 0; w < 6; w++) {
        size_t off = w == 0 ? 0 : rndn(total + 1);
        size_t len = w == 0 ? total : rndn(total - off + 1);
        /* device -> device */
        XP_CHECK_EQ(xp_dt_pack(t, count, g->d_nc + origin, g->d_pk, off, len), XP_OK);
        XP_REQUIRE(cudaMemcpy(got, g->d_pk, len, cudaMemcpyDeviceToHost) == cudaSuccess);
        XP_CHECK(!len || !memcmp(got, ref + off, len));
        /* device -> pinned host (zero copy) and pageable host (staged) */
        XP_CHECK_EQ(xp_dt_pack(t, count, g->d_nc + origin, g->pinned, off, len), XP_OK);
        XP_CHECK(!len || !memcmp(g->pinned, ref + off, len));
        XP_CHECK_EQ(xp_dt_pack(t, count, g->d_nc + origin, g->pageable, off, len), XP_OK);
        XP_CHECK(!len || !memcmp(g->pageable, ref + off, len));
    }
    /* unpack the reference stream into a device buffer cleared to zero, compare with the CPU */
    unsigned char *h_exp = calloc(ARENA, 1);
    XP_CHECK_EQ(xp_dt_unpack_all(t, count, ref, h_exp + origin), XP_OK);
    XP_REQUIRE(cudaMemset(g->d_nc, 0, ARENA) == cudaSuccess);
    size_t half = total / 2;
    memcpy(g->pinned, ref, half);
    XP_CHECK_EQ(xp_dt_unpack(t, count, g->pinned, g->d_nc + origin, 0, half), XP_OK);
    XP_CHECK_EQ(xp_dt_unpack(t, count, ref + half, g->d_nc + origin, half, total - half), XP_OK);
    XP_REQUIRE(cudaMemcpy(g->h_nc, g->d_nc, ARENA, cudaMemcpyDeviceToHost) == cudaSuccess);
    XP_CHECK(!memcmp(g->h_nc, h_exp, ARENA));
    free(h_exp);
    free(ref);
    free(got);
}

int main(int argc, char **argv)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1)
        XP_TEST_SKIP("no GPU");
    if (!xp_dt_cuda_available())
        XP_TEST_SKIP("xpdt_cuda plugin not usable");
    gpu_bufs_t g;
    g.h_nc = malloc(ARENA);
    g.pageable = malloc(ARENA);
    XP_REQUIRE(cudaMalloc((void **)&g.d_nc, ARENA) == cudaSuccess);
    XP_REQUIRE(cudaMalloc((void **)&g.d_pk, ARENA) == cudaSuccess);
    XP_REQUIRE(cudaMallocHost((void **)&g.pinned, ARENA) == cudaSuccess);

    /* The paper's shapes, small: vector, lower triangle, transpose. */
    enum { M = 128 };
    xp_dt_t v, tri, tr1, tr;
    XP_REQUIRE(xp_dt_vector(M, M, 2 * M, XP_DT_DOUBLE, &v) == XP_OK && xp_dt_commit(v) == XP_OK);
    size_t bl[M];
    ptrdiff_t d[M];
    for (int j = 0; j < M; j++)
        bl[j] = M - j, d[j] = j * M + j;
    XP_REQUIRE(xp_dt_indexed(M, bl, d, XP_DT_DOUBLE, &tri) == XP_OK && xp_dt_commit(tri) == XP_OK);
    XP_REQUIRE(xp_dt_vector(M, 1, M, XP_DT_DOUBLE, &tr1) == XP_OK);
    XP_REQUIRE(xp_dt_resized(tr1, 0, 8, &tr) == XP_OK && xp_dt_commit(tr) == XP_OK);
    check_type(&g, v, 1, 0);
    check_type(&g, tri, 1, 8);
    check_type(&g, tr, M, 0);
    check_type(&g, XP_DT_DOUBLE, 1000, 3);
    xp_dt_free(&v);
    xp_dt_free(&tri);
    xp_dt_free(&tr1);
    xp_dt_free(&tr);

    /* Random nested types (odd alignments exercise the byte paths). */
    int ntypes = argc > 1 ? atoi(argv[1]) : 300;
    for (int i = 0; i < ntypes; i++) {
        rnode_t *n = rand_type(1 + (int)rndn(4), -1);
        XP_REQUIRE(xp_dt_commit(n->h) == XP_OK);
        ptrdiff_t tlb;
        size_t text, ext;
        xp_dt_true_extent(n->h, &tlb, &text);
        xp_dt_extent(n->h, &ext);
        size_t count = 1 + rndn(3);
        if (text + 2 * ext * count < ARENA / 4)
            check_type(&g, n->h, count, ARENA / 2 - tlb);
        rnode_free(n);
    }
    cudaFree(g.d_nc);
    cudaFree(g.d_pk);
    cudaFreeHost(g.pinned);
    free(g.h_nc);
    free(g.pageable);
    return xp_test_result();
}
