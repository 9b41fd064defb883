/* A persistent pthread pool for tgk_parallel_for.
 *
 * One caller at a time owns the workers (the `use` mutex, taken with trylock):
 * a second thread calling while the pool is busy, or a task calling
 * tgk_parallel_for from inside the pool, runs its loop inline instead of
 * waiting, so concurrent and nested calls never deadlock. The caller works
 * too: with T threads set there are T-1 workers. Chunks are handed out by an
 * atomic counter, so uneven tasks (causal attention) balance themselves. */
#define _GNU_SOURCE
#include "kernels/cpu/kernels.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#define MAX_WORKERS 255
#define CHUNKS_PER_THREAD 4

static struct {
    pthread_mutex_t use;        /* held by the caller that owns the workers */
    pthread_mutex_t lock;       /* guards everything below but `next` */
    pthread_cond_t wake, done;
    pthread_t tid[MAX_WORKERS];
    int nstarted;
    uint64_t gen;               /* bumped once per job */
    int nactive;                /* workers taking part in the current job */
    int pending;                /* of those, how many have not finished */
    bool quit;
    tgk_task_fn fn;
    void *ctx;
    int64_t n, chunk;
    atomic_int_fast64_t next;   /* next chunk to hand out */
} pool = {
    .use = PTHREAD_MUTEX_INITIALIZER,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};

static atomic_int nthreads;     /* 0: not chosen yet */
static _Thread_local bool in_task;

static int cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void tgk_set_num_threads(int n)
{
    if (n <= 0)
        n = cores();
    if (n > MAX_WORKERS + 1)
        n = MAX_WORKERS + 1;
    atomic_store(&nthreads, n);
}

int tgk_num_threads(void)
{
    int n = atomic_load(&nthreads);
    if (n == 0) {
        tgk_set_num_threads(0);
        n = atomic_load(&nthreads);
    }
    return n;
}

bool tgk_in_task(void)
{
    return in_task;
}

static void run_chunks(void)
{
    for (;;) {
        int64_t begin = atomic_fetch_add(&pool.next, 1) * pool.chunk;
        if (begin >= pool.n)
            return;
        int64_t end = begin + pool.chunk < pool.n ? begin + pool.chunk : pool.n;
        pool.fn(pool.ctx, begin, end);
    }
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    in_task = true;
    /* Workers are created just before the job that needs them is posted, so
     * every job so far is new to them: start below any generation. */
    uint64_t seen = 0;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        while (pool.gen == seen && !pool.quit)
            pthread_cond_wait(&pool.wake, &pool.lock);
        if (pool.quit)
            break;
        seen = pool.gen;
        if (id >= pool.nactive)
            continue;
        pthread_mutex_unlock(&pool.lock);
        run_chunks();
        pthread_mutex_lock(&pool.lock);
        if (--pool.pending == 0)
            pthread_cond_signal(&pool.done);
    }
    pthread_mutex_unlock(&pool.lock);
    return NULL;
}

/* Start workers up to `want`; returns how many exist (fewer if creation fails). */
static int ensure_workers(int want)
{
    while (pool.nstarted < want) {
        if (pthread_create(&pool.tid[pool.nstarted], NULL, worker,
                           (void *)(intptr_t)pool.nstarted) != 0)
            break;
        pool.nstarted++;
    }
    return pool.nstarted < want ? pool.nstarted : want;
}

void tgk_parallel_for(int64_t n, int64_t grain, tgk_task_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    int nt = tgk_num_threads();
    int64_t nchunks = n / grain;
    if (nchunks > (int64_t)nt * CHUNKS_PER_THREAD)
        nchunks = (int64_t)nt * CHUNKS_PER_THREAD;
    if (nt <= 1 || nchunks <= 1 || in_task || pthread_mutex_trylock(&pool.use) != 0) {
        fn(ctx, 0, n);
        return;
    }
    pthread_mutex_lock(&pool.lock);
    int nw = ensure_workers(nt - 1);
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.chunk = (n + nchunks - 1) / nchunks;
    atomic_store(&pool.next, 0);
    pool.nactive = nw;
    pool.pending = nw;
    pool.gen++;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);

    in_task = true;
    run_chunks();
    in_task = false;

    pthread_mutex_lock(&pool.lock);
    while (pool.pending > 0)
        pthread_cond_wait(&pool.done, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
    pthread_mutex_unlock(&pool.use);
}

/* Stop the workers when the library is unloaded (a compiled model's .so is
 * dlclose'd), so no thread is left parked in unmapped code. */
__attribute__((destructor)) static void pool_stop(void)
{
    if (pthread_mutex_trylock(&pool.use) != 0)
        return;                 /* a job still runs: leave the workers be */
    pthread_mutex_lock(&pool.lock);
    pool.quit = true;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    for (int i = 0; i < pool.nstarted; i++)
        pthread_join(pool.tid[i], NULL);
    pool.nstarted = 0;
    pool.quit = false;
    pthread_mutex_unlock(&pool.use);
}
