/* A persistent pthread pool for tgk_parallel_for.
 *
 * One caller at a time owns the workers (the `use` mutex, taken with trylock):
 * a second thread calling while the pool is busy, or a task calling
 * tgk_parallel_for from inside the pool, runs its loop inline instead of
 * waiting, so concurrent and nested calls never deadlock. The caller works
 * too: with T threads set there are T-1 workers. Chunks are handed out by an
 * atomic counter, so uneven tasks (causal attention) balance themselves. The
 * caller never waits for a worker that has not joined: a worker joins only
 * while the job is open, the caller closes it once the last chunk is handed
 * out and then waits only for the workers inside. A worker whose core is
 * busy elsewhere (a descheduled vCPU) so costs nothing: the others take its
 * share.
 *
 * Workers spin for a while after each job before they sleep on the condition
 * variable, and the caller spins for the workers to finish: a model runs
 * dozens of short parallel loops back to back (tinygpt at batch 1: ~30 of
 * 10-100 us), and a futex wake-up costs 10-15 us on a small VM, where a
 * spinning worker sees the next job within a microsecond. Spinning pays only
 * while every thread has a core: when the scheduler puts a worker on the
 * caller's core, each spins away the time the other needs (tinygpt: 0.8 ->
 * 4 ms a run; a sleeping worker, woken, preempts the other program at
 * once). So when jobs often find a worker not even started by the time the
 * caller is done with its own share, spinning goes off for a while, for the
 * caller and the workers, and is tried again later. Now and then is no
 * sign: a worker can be descheduled for a moment. A model run starts with
 * tgk_parallel_prime, which wakes sleeping workers to spin: they wake while
 * the caller checks inputs and runs its serial kernels, not inside the
 * first parallel loop. */
#define _GNU_SOURCE
#include "kernels/cpu/kernels.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#define MAX_WORKERS 255
#define CHUNKS_PER_THREAD 4
/* A late worker adds SPIN_LATE to a score, a prompt one takes 1 off; at
 * SPIN_VAIN the next SPIN_BACKOFF jobs run without spinning (one job in
 * three late or more gets there). */
#define SPIN_LATE 2
#define SPIN_VAIN 24
#define SPIN_BACKOFF 256
/* Polls of a spinning thread before it sleeps: some tens of microseconds.
 * Long enough to catch the next loop of a model run; short, because a
 * spinning thread takes the core from the one it waits for when the
 * machine has more threads than cores. */
#define SPIN_POLLS 4000

static struct {
    pthread_mutex_t use;        /* held by the caller that owns the workers */
    pthread_mutex_t lock;       /* guards the job, sleepers and quit */
    pthread_cond_t wake, done;
    pthread_t tid[MAX_WORKERS];
    int nstarted;
    int sleepers;               /* workers waiting on `wake` */
    unsigned primes;            /* tgk_parallel_prime calls that woke sleepers */
    /* (generation << 8) | workers taking part, set once per job under lock:
     * one word, so a worker reads whether it takes part in the same load
     * that tells it the job is new */
    atomic_uint_fast64_t job;
    atomic_bool open;           /* the current job takes workers */
    atomic_int inside;          /* workers inside a job (joining, or joined) */
    atomic_int joined;          /* workers that joined the current job */
    atomic_bool caller_sleeps;  /* on `done` */
    atomic_int no_spin;         /* jobs left to run without spinning */
    int vain;                   /* the late-worker score (under `use`) */
    atomic_bool quit;
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

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* The job word after `seen` (or `seen` when quitting): spin, then sleep;
 * woken by tgk_parallel_prime, spin again. */
static uint64_t next_job(uint64_t seen)
{
    for (;;) {
        int polls = atomic_load_explicit(&pool.no_spin, memory_order_relaxed) ? 0 : SPIN_POLLS;
        for (int i = 0; i < polls; i++) {
            uint64_t j = atomic_load_explicit(&pool.job, memory_order_acquire);
            if (j != seen || atomic_load_explicit(&pool.quit, memory_order_relaxed))
                return j;
            cpu_relax();
        }
        pthread_mutex_lock(&pool.lock);
        unsigned primes = pool.primes;
        pool.sleepers++;
        while (atomic_load(&pool.job) == seen && !atomic_load(&pool.quit) &&
               pool.primes == primes)
            pthread_cond_wait(&pool.wake, &pool.lock);
        pool.sleepers--;
        uint64_t j = atomic_load(&pool.job);
        pthread_mutex_unlock(&pool.lock);
        if (j != seen || atomic_load(&pool.quit))
            return j;
    }
}

void tgk_parallel_prime(void)
{
    if (tgk_num_threads() <= 1 || in_task ||
        atomic_load_explicit(&pool.no_spin, memory_order_relaxed))
        return;
    pthread_mutex_lock(&pool.lock);
    if (pool.sleepers) {
        pool.primes++;
        pthread_cond_broadcast(&pool.wake);
    }
    pthread_mutex_unlock(&pool.lock);
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    in_task = true;
    /* Workers are created just before the job that needs them is posted, so
     * every job so far is new to them: start below any generation. */
    uint64_t seen = 0;
    for (;;) {
        seen = next_job(seen);
        if (atomic_load(&pool.quit))
            break;
        if (id >= (int)(seen & 0xff))
            continue;
        /* seq_cst, against the caller's store of open then load of inside:
         * either it sees us inside and waits, or we see the job closed (or
         * gone: a later generation) and leave without reading it */
        atomic_fetch_add(&pool.inside, 1);
        if (atomic_load(&pool.open) && atomic_load(&pool.job) == seen) {
            atomic_fetch_add_explicit(&pool.joined, 1, memory_order_relaxed);
            run_chunks();
        }
        /* the same pairing with caller_sleeps: one of the two sees the other */
        if (atomic_fetch_sub(&pool.inside, 1) == 1 && atomic_load(&pool.caller_sleeps)) {
            pthread_mutex_lock(&pool.lock);
            pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.lock);
        }
    }
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
    int before = pool.nstarted, nw = ensure_workers(nt - 1);
    /* the verdict on spinning below needs workers that were spinning: new
     * threads and sleeping ones start late anyway */
    bool judge = pool.nstarted == before && pool.sleepers == 0;
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.chunk = (n + nchunks - 1) / nchunks;
    atomic_store(&pool.next, 0);
    atomic_store(&pool.joined, 0);
    atomic_store(&pool.open, true);
    uint64_t gen = (atomic_load(&pool.job) >> 8) + 1;
    atomic_store_explicit(&pool.job, gen << 8 | (uint64_t)nw, memory_order_release);
    if (pool.sleepers)
        pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);

    in_task = true;
    run_chunks();
    in_task = false;
    atomic_store(&pool.open, false);    /* every chunk is handed out */

    /* a worker that did not join by now was late: score it (see SPIN_LATE) */
    int no_spin = atomic_load_explicit(&pool.no_spin, memory_order_relaxed);
    int joined = atomic_load_explicit(&pool.joined, memory_order_relaxed);
    if (no_spin)
        atomic_store_explicit(&pool.no_spin, no_spin - 1, memory_order_relaxed);
    else if (judge && joined < nw && (pool.vain += SPIN_LATE) >= SPIN_VAIN) {
        pool.vain = 0;
        atomic_store_explicit(&pool.no_spin, SPIN_BACKOFF, memory_order_relaxed);
    } else if (judge && joined == nw && pool.vain > 0) {
        pool.vain--;
    }
    /* the last chunks of the workers inside are in flight: spin, then sleep */
    for (int i = 0; i < SPIN_POLLS && atomic_load_explicit(&pool.inside, memory_order_acquire);
         i++)
        cpu_relax();
    if (atomic_load(&pool.inside)) {
        pthread_mutex_lock(&pool.lock);
        atomic_store(&pool.caller_sleeps, true);
        while (atomic_load(&pool.inside))
            pthread_cond_wait(&pool.done, &pool.lock);
        atomic_store(&pool.caller_sleeps, false);
        pthread_mutex_unlock(&pool.lock);
    }
    pthread_mutex_unlock(&pool.use);
}

/* Stop the workers when the library is unloaded (a compiled model's .so is
 * dlclose'd), so no thread is left parked in unmapped code. */
__attribute__((destructor)) static void pool_stop(void)
{
    if (pthread_mutex_trylock(&pool.use) != 0)
        return;                 /* a job still runs: leave the workers be */
    pthread_mutex_lock(&pool.lock);
    atomic_store(&pool.quit, true);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    for (int i = 0; i < pool.nstarted; i++)
        pthread_join(pool.tid[i], NULL);
    pool.nstarted = 0;
    atomic_store(&pool.quit, false);
    pthread_mutex_unlock(&pool.use);
}
