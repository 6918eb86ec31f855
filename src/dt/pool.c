/* The datatype layer's state and its small thread pool for large copies.
 *
 * Workers are started on the first parallel job and then sleep on a
 * condition variable; the caller takes part in every job, so a pool of
 * XP_DT_THREADS threads has XP_DT_THREADS - 1 workers. */
#include <stdlib.h>

#include "dt/dt_internal.h"
#include "dt/state.h"
#include "util/context.h"
#include "util/log.h"

xp_dt_state_t *xp_dt_state(void)
{
    xp_dt_state_t *s = __atomic_load_n(&xp_ctx.dt, __ATOMIC_ACQUIRE);
    if (s)
        return s;
    s = calloc(1, sizeof *s);
    if (!s) {
        xp_error("datatype: out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->run_lock, NULL);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    pthread_mutex_init(&s->cuda_lock, NULL);
    s->llc = xp_dt_llc_bytes();
    xp_dt_state_t *expected = NULL;
    if (!__atomic_compare_exchange_n(&xp_ctx.dt, &expected, s, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        free(s); /* another thread won the race */
        return expected;
    }
    return s;
}

/* Claim and run tasks of the current job; called with s->lock held. */
static void run_tasks(xp_dt_state_t *s)
{
    while (s->next < s->ntasks) {
        unsigned i = s->next++;
        dt_task_fn fn = s->fn;
        void *arg = s->arg;
        pthread_mutex_unlock(&s->lock);
        fn(arg, i);
        pthread_mutex_lock(&s->lock);
        if (++s->done == s->ntasks)
            pthread_cond_broadcast(&s->done_cv);
    }
}

static void *worker(void *arg)
{
    xp_dt_state_t *s = arg;
    pthread_mutex_lock(&s->lock);
    unsigned long seen = s->gen;
    for (;;) {
        while (s->gen == seen)
            pthread_cond_wait(&s->work_cv, &s->lock);
        seen = s->gen;
        run_tasks(s);
    }
    return NULL;
}

static xp_status_t grow(xp_dt_state_t *s, unsigned want)
{
    while (s->nworkers < want) {
        pthread_t th;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&th, &attr, worker, s);
        pthread_attr_destroy(&attr);
        if (rc) {
            xp_warn("datatype: cannot start a pack thread (error %d); packing serially", rc);
            return XP_ERR_NO_RESOURCE;
        }
        s->nworkers++;
    }
    return XP_OK;
}

xp_status_t xp_dt_pool_run(unsigned n, dt_task_fn fn, void *arg)
{
    xp_dt_state_t *s = xp_dt_state();
    if (!s)
        return XP_ERR_NO_MEMORY;
    /* A second concurrent job runs serially rather than waiting. */
    if (pthread_mutex_trylock(&s->run_lock))
        return XP_ERR_BUSY;
    pthread_mutex_lock(&s->lock);
    if (grow(s, n - 1) != XP_OK && s->nworkers == 0) {
        pthread_mutex_unlock(&s->lock);
        pthread_mutex_unlock(&s->run_lock);
        return XP_ERR_NO_RESOURCE;
    }
    s->fn = fn;
    s->arg = arg;
    s->ntasks = n;
    s->next = 0;
    s->done = 0;
    s->gen++;
    pthread_cond_broadcast(&s->work_cv);
    run_tasks(s);
    while (s->done < s->ntasks)
        pthread_cond_wait(&s->done_cv, &s->lock);
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_unlock(&s->run_lock);
    return XP_OK;
}

unsigned xp_dt_pool_threads(void)
{
    xp_dt_state_t *s = xp_dt_state();
    return s ? s->nworkers + 1 : 1;
}
