/* The counts the stand-in CUDA plugin (fake_cuda_plugin.c) keeps, read by
 * test_cuda_quiesce through the plugin's fake_cuda_stats(). */
#ifndef XP_TEST_FAKE_CUDA_H
#define XP_TEST_FAKE_CUDA_H

typedef struct fake_stats {
    int violations;   /* CUDA memory calls made while a kernel ran */
    int bad_state;    /* pause of a paused kernel, resume of a running one */
    int pauses, resumes, starts, stops;
    int running;      /* kernels running now */
} fake_stats_t;

#endif
