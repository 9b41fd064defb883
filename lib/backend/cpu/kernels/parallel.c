/* Persistent pthread teams for tgk_parallel_for.
 *
 * A caller takes a free team (its `use` mutex, taken with trylock) and owns
 * its workers for the loop: on T threads it works with up to T-1 of them.
 * Concurrent callers (runs of a model from several host threads, an OpenMP
 * team's each calling in) share the T threads: a loop counts the threads
 * already inside this library's loops, its caller's included, and takes only
 * what is left of T, at least its caller, so the workers busy at once never
 * exceed T-1 however many threads call in, and a host running as many
 * threads as cores gets no worker at all (no oversubscription). A loop that
 * gets more than its caller takes a free team, started when first needed; a
 * caller that finds all MAX_TEAMS busy, or a task calling tgk_parallel_for
 * from inside a team, runs its loop inline instead of waiting, so concurrent
 * and nested calls never deadlock. T is the calling thread's
 * (tgk_set_run_threads) or else the process-wide count. Chunks are
 * handed out by an atomic counter, so uneven tasks (causal attention) balance
 * themselves. The caller never waits for a worker that has not joined: a
 * worker joins only while the job is open, the caller closes it once the last
 * chunk is handed out and then waits only for the workers inside. A worker
 * whose core is busy elsewhere (a descheduled vCPU) so costs nothing: the
 * others take its share.
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
#include "backend/cpu/kernels/kernels.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#define MAX_WORKERS 255
#define MAX_TEAMS 8
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

typedef struct {
    pthread_mutex_t use;        /* held by the caller that owns the workers */
    atomic_bool busy;           /* while `use` is held: for tgk_parallel_prime */
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
} team;

static team teams[MAX_TEAMS] = {
    [0 ... MAX_TEAMS - 1] = {
        .use = PTHREAD_MUTEX_INITIALIZER,
        .lock = PTHREAD_MUTEX_INITIALIZER,
        .wake = PTHREAD_COND_INITIALIZER,
        .done = PTHREAD_COND_INITIALIZER,
    },
};

static atomic_int nthreads;     /* 0: not chosen yet */
static atomic_int inside_loops; /* threads taken by the loops in flight, callers included */
static _Thread_local int run_threads;   /* this thread's count, 0: nthreads */
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

void tgk_set_run_threads(int n)
{
    run_threads = n < 0 ? 0 : n > MAX_WORKERS + 1 ? MAX_WORKERS + 1 : n;
}

int tgk_run_threads(void)
{
    return run_threads;
}

int tgk_num_threads(void)
{
    if (run_threads)
        return run_threads;
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

static void run_chunks(team *t)
{
    for (;;) {
        int64_t begin = atomic_fetch_add(&t->next, 1) * t->chunk;
        if (begin >= t->n)
            return;
        int64_t end = begin + t->chunk < t->n ? begin + t->chunk : t->n;
        t->fn(t->ctx, begin, end);
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
static uint64_t next_job(team *t, uint64_t seen)
{
    for (;;) {
        int polls = atomic_load_explicit(&t->no_spin, memory_order_relaxed) ? 0 : SPIN_POLLS;
        for (int i = 0; i < polls; i++) {
            uint64_t j = atomic_load_explicit(&t->job, memory_order_acquire);
            if (j != seen || atomic_load_explicit(&t->quit, memory_order_relaxed))
                return j;
            cpu_relax();
        }
        pthread_mutex_lock(&t->lock);
        unsigned primes = t->primes;
        t->sleepers++;
        while (atomic_load(&t->job) == seen && !atomic_load(&t->quit) &&
               t->primes == primes)
            pthread_cond_wait(&t->wake, &t->lock);
        t->sleepers--;
        uint64_t j = atomic_load(&t->job);
        pthread_mutex_unlock(&t->lock);
        if (j != seen || atomic_load(&t->quit))
            return j;
    }
}

/* The first free team: the one this caller's loops will likely take. */
void tgk_parallel_prime(void)
{
    if (tgk_num_threads() <= 1 || in_task)
        return;
    for (team *t = teams; t < teams + MAX_TEAMS; t++) {
        if (atomic_load_explicit(&t->busy, memory_order_relaxed))
            continue;
        pthread_mutex_lock(&t->lock);
        if (t->sleepers && !atomic_load_explicit(&t->no_spin, memory_order_relaxed)) {
            t->primes++;
            pthread_cond_broadcast(&t->wake);
        }
        pthread_mutex_unlock(&t->lock);
        return;
    }
}

/* arg: the team's index << 8 | the worker's */
static void *worker(void *arg)
{
    team *t = &teams[(intptr_t)arg >> 8];
    int id = (int)((intptr_t)arg & 0xff);
    in_task = true;
    /* Workers are created just before the job that needs them is posted, so
     * every job so far is new to them: start below any generation. */
    uint64_t seen = 0;
    for (;;) {
        seen = next_job(t, seen);
        if (atomic_load(&t->quit))
            break;
        if (id >= (int)(seen & 0xff))
            continue;
        /* seq_cst, against the caller's store of open then load of inside:
         * either it sees us inside and waits, or we see the job closed (or
         * gone: a later generation) and leave without reading it */
        atomic_fetch_add(&t->inside, 1);
        if (atomic_load(&t->open) && atomic_load(&t->job) == seen) {
            atomic_fetch_add_explicit(&t->joined, 1, memory_order_relaxed);
            run_chunks(t);
        }
        /* the same pairing with caller_sleeps: one of the two sees the other */
        if (atomic_fetch_sub(&t->inside, 1) == 1 && atomic_load(&t->caller_sleeps)) {
            pthread_mutex_lock(&t->lock);
            pthread_cond_signal(&t->done);
            pthread_mutex_unlock(&t->lock);
        }
    }
    return NULL;
}

/* Start workers up to `want`; returns how many exist (fewer if creation fails). */
static int ensure_workers(team *t, int want)
{
    while (t->nstarted < want) {
        if (pthread_create(&t->tid[t->nstarted], NULL, worker,
                           (void *)((t - teams) << 8 | t->nstarted)) != 0)
            break;
        t->nstarted++;
    }
    return t->nstarted < want ? t->nstarted : want;
}

/* A loop's threads: what other loops in flight leave of `want`, at least 1
 * (its caller). Reserving all of `want` first makes racing callers see each
 * other: each sees the others' reservations, so the threads granted to loops
 * with workers never add up past `want`. Given back by the loop's end. */
static int take_threads(int want)
{
    int others = atomic_fetch_add(&inside_loops, want);
    int got = want - others > 1 ? want - others : 1;
    if (got < want)
        atomic_fetch_sub(&inside_loops, want - got);
    return got;
}

void tgk_parallel_for(int64_t n, int64_t grain, tgk_task_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    if (in_task) {
        fn(ctx, 0, n);
        return;
    }
    int nt = take_threads(tgk_num_threads());
    int64_t nchunks = n / grain;
    if (nchunks > (int64_t)nt * CHUNKS_PER_THREAD)
        nchunks = (int64_t)nt * CHUNKS_PER_THREAD;
    team *t = teams;
    if (nt > 1 && nchunks > 1)
        while (t < teams + MAX_TEAMS && pthread_mutex_trylock(&t->use) != 0)
            t++;
    if (nt <= 1 || nchunks <= 1 || t == teams + MAX_TEAMS) {
        fn(ctx, 0, n);
        atomic_fetch_sub(&inside_loops, nt);
        return;
    }
    atomic_store_explicit(&t->busy, true, memory_order_relaxed);
    pthread_mutex_lock(&t->lock);
    int before = t->nstarted, nw = ensure_workers(t, nt - 1);
    /* the verdict on spinning below needs workers that were spinning: new
     * threads and sleeping ones start late anyway */
    bool judge = t->nstarted == before && t->sleepers == 0;
    t->fn = fn;
    t->ctx = ctx;
    t->n = n;
    t->chunk = (n + nchunks - 1) / nchunks;
    atomic_store(&t->next, 0);
    atomic_store(&t->joined, 0);
    atomic_store(&t->open, true);
    uint64_t gen = (atomic_load(&t->job) >> 8) + 1;
    atomic_store_explicit(&t->job, gen << 8 | (uint64_t)nw, memory_order_release);
    if (t->sleepers)
        pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);

    in_task = true;
    run_chunks(t);
    in_task = false;
    atomic_store(&t->open, false);    /* every chunk is handed out */

    /* a worker that did not join by now was late: score it (see SPIN_LATE) */
    int no_spin = atomic_load_explicit(&t->no_spin, memory_order_relaxed);
    int joined = atomic_load_explicit(&t->joined, memory_order_relaxed);
    if (no_spin)
        atomic_store_explicit(&t->no_spin, no_spin - 1, memory_order_relaxed);
    else if (judge && joined < nw && (t->vain += SPIN_LATE) >= SPIN_VAIN) {
        t->vain = 0;
        atomic_store_explicit(&t->no_spin, SPIN_BACKOFF, memory_order_relaxed);
    } else if (judge && joined == nw && t->vain > 0) {
        t->vain--;
    }
    /* the last chunks of the workers inside are in flight: spin, then sleep */
    for (int i = 0; i < SPIN_POLLS && atomic_load_explicit(&t->inside, memory_order_acquire);
         i++)
        cpu_relax();
    if (atomic_load(&t->inside)) {
        pthread_mutex_lock(&t->lock);
        atomic_store(&t->caller_sleeps, true);
        while (atomic_load(&t->inside))
            pthread_cond_wait(&t->done, &t->lock);
        atomic_store(&t->caller_sleeps, false);
        pthread_mutex_unlock(&t->lock);
    }
    atomic_store_explicit(&t->busy, false, memory_order_relaxed);
    pthread_mutex_unlock(&t->use);
    atomic_fetch_sub(&inside_loops, nt);
}

/* Stop the workers when the library is unloaded (a compiled model's .so is
 * dlclose'd), so no thread is left parked in unmapped code. */
static void team_stop(team *t)
{
    if (pthread_mutex_trylock(&t->use) != 0)
        return;                 /* a job still runs: leave the workers be */
    pthread_mutex_lock(&t->lock);
    atomic_store(&t->quit, true);
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
    for (int i = 0; i < t->nstarted; i++)
        pthread_join(t->tid[i], NULL);
    t->nstarted = 0;
    atomic_store(&t->quit, false);
    pthread_mutex_unlock(&t->use);
}

__attribute__((destructor)) static void pool_stop(void)
{
    for (team *t = teams; t < teams + MAX_TEAMS; t++)
        team_stop(t);
}

/* ---- row x panel chunks (tgk_parallel_panels) ------------------------------- */

#define PANEL_CHUNK 4

typedef struct {
    int64_t M, P, row_chunk;
    tgk_chunk_fn fn;
    const void *ctx;
} panel_job;

static void panel_tasks(void *ctx, int64_t begin, int64_t end)
{
    const panel_job *j = ctx;
    int64_t pchunks = (j->P + PANEL_CHUNK - 1) / PANEL_CHUNK;
    for (int64_t t = begin; t < end; t++) {
        int64_t r0 = t / pchunks * j->row_chunk, p0 = t % pchunks * PANEL_CHUNK;
        int64_t r1 = r0 + j->row_chunk < j->M ? r0 + j->row_chunk : j->M;
        int64_t p1 = p0 + PANEL_CHUNK < j->P ? p0 + PANEL_CHUNK : j->P;
        j->fn(j->ctx, r0, r1, p0, p1);
    }
}

void tgk_parallel_panels(int64_t M, int64_t P, int64_t mr, double work, tgk_chunk_fn fn,
                         const void *ctx)
{
    if (M <= 0 || P <= 0)
        return;
    int64_t tiles = (M + mr - 1) / mr, row_chunks = (tiles + 7) / 8;
    panel_job j = {M, P, (tiles + row_chunks - 1) / row_chunks * mr, fn, ctx};
    int64_t tasks = row_chunks * ((P + PANEL_CHUNK - 1) / PANEL_CHUNK);
    double per_task = work / (double)tasks;
    tgk_parallel_for(tasks, (int64_t)(TGK_TASK_MIN_MACS / (per_task > 1 ? per_task : 1)) + 1,
                     panel_tasks, &j);
}
