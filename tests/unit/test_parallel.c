/* tgk_parallel_for: every index runs exactly once, whatever n, grain and
 * thread count; nested calls run inline; several threads may call at once;
 * a lone caller gets its thread count's worth of threads (the process-wide
 * count, or the one it set for itself, which changes nobody else's), and
 * callers at once share that count: the workers inside their loops at once
 * never exceed it less one, however many call; tgk_parallel_prime, from any
 * thread at any time, changes none of that. */
#include "kcheck.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "backend/cpu/kernels/kernels.h"

typedef struct {
    atomic_int *hits;
    atomic_int nested_ok;
    bool nest;
} job;

static void count_inner(void *ctx, int64_t begin, int64_t end)
{
    atomic_int *hits = ctx;
    for (int64_t i = begin; i < end; i++)
        atomic_fetch_add(&hits[i], 1);
}

static void count(void *ctx, int64_t begin, int64_t end)
{
    job *j = ctx;
    for (int64_t i = begin; i < end; i++) {
        if (j->nest) {
            /* inside a task: must run inline, right now, without deadlock */
            atomic_int local[5] = {0};
            tgk_parallel_for(5, 1, count_inner, local);
            int ok = 1;
            for (int k = 0; k < 5; k++)
                ok &= local[k] == 1;
            atomic_fetch_add(&j->nested_ok, ok);
        }
        atomic_fetch_add(&j->hits[i], 1);
    }
}

static int run_and_check(int64_t n, int64_t grain, bool nest)
{
    atomic_int *hits = calloc((size_t)(n + 1), sizeof *hits);
    job j = {.hits = hits, .nest = nest};
    tgk_parallel_for(n, grain, count, &j);
    int ok = 1;
    for (int64_t i = 0; i < n; i++)
        ok &= hits[i] == 1;
    if (nest)
        ok &= j.nested_ok == n;
    free(hits);
    return ok;
}

#define ROUNDS 200

typedef struct {
    int64_t n[ROUNDS], grain[ROUNDS]; /* drawn up front: the PRNG is not shared */
    int ok;
} caller_arg;

static void *caller(void *arg)
{
    caller_arg *a = arg;
    for (int r = 0; r < ROUNDS; r++) {
        if (r % 3 == 0)
            tgk_parallel_prime();
        a->ok &= run_and_check(a->n[r], a->grain[r], r % 2);
    }
    return NULL;
}

/* A loop whose every chunk waits until `want` threads are inside the loop at
 * once: only a loop given `want` threads finishes its chunks before the
 * deadline (one thread that ran a loop inline would wait in its first chunk). */
typedef struct {
    int want;
    atomic_int inside, met;
    int ok;
} meet_job;

static void meet(void *ctx, int64_t begin, int64_t end)
{
    meet_job *m = ctx;
    atomic_fetch_add(&m->inside, 1);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (atomic_load(&m->inside) >= m->want) {
            atomic_fetch_add(&m->met, 1);
            return;
        }
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec - t0.tv_sec < 30);
}

static void *meet_caller(void *arg)
{
    meet_job *m = arg;
    tgk_set_run_threads(m->want);
    tgk_parallel_for(m->want, 1, meet, m);
    m->ok = atomic_load(&m->met) == m->want && tgk_num_threads() == m->want;
    tgk_set_run_threads(0);
    m->ok &= tgk_num_threads() == 3;
    return NULL;
}

/* A lone caller on 2, then 4 threads of its own choosing while the
 * process-wide count is 3: each loop gets its caller's count of threads. */
static void test_lone_caller_gets_its_threads(void)
{
    tgk_set_num_threads(3);
    for (int want = 2; want <= 4; want += 2) {
        meet_job m = {.want = want};
        pthread_t t;
        CHECK(pthread_create(&t, NULL, meet_caller, &m) == 0);
        pthread_join(t, NULL);
        CHECK(m.ok);
        if (!m.ok)
            fprintf(stderr, "  a loop on %d threads: %d chunks met them\n", want,
                    atomic_load(&m.met));
    }
    CHECK(tgk_num_threads() == 3);
}

/* Callers at once (a host's own threads, an OpenMP team's each calling in):
 * their chunks count the pool's workers among them (a caller's thread is
 * marked), each chunk lasting long enough for loops to overlap. */
static _Thread_local bool is_caller;
static atomic_int workers_in, workers_most;

static void busy_chunk(void *ctx, int64_t begin, int64_t end)
{
    (void)ctx;
    bool worker = !is_caller;
    if (worker) {
        int now = atomic_fetch_add(&workers_in, 1) + 1;
        for (int most = atomic_load(&workers_most);
             now > most && !atomic_compare_exchange_weak(&workers_most, &most, now);)
            ;
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec <
           500000L * (end - begin));
    if (worker)
        atomic_fetch_sub(&workers_in, 1);
}

typedef struct {
    pthread_barrier_t *start;
    int loops;
} share_arg;

static void *share_caller(void *arg)
{
    share_arg *a = arg;
    is_caller = true;
    pthread_barrier_wait(a->start);
    for (int i = 0; i < a->loops; i++)
        tgk_parallel_for(12, 1, busy_chunk, NULL);
    return NULL;
}

/* 1, 2, 4 and 6 callers at once on a process count of 3: never more than 2
 * workers busy at once (that a lone caller gets them: the test above). */
static void test_concurrent_callers_share_the_threads(void)
{
    tgk_set_num_threads(3);
    for (int callers = 1; callers <= 6; callers += callers < 2 ? 1 : 2) {
        atomic_store(&workers_most, 0);
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, (unsigned)callers);
        pthread_t t[6];
        share_arg a = {&start, 4};
        for (int i = 0; i < callers; i++)
            CHECK(pthread_create(&t[i], NULL, share_caller, &a) == 0);
        for (int i = 0; i < callers; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&start);
        int most = atomic_load(&workers_most);
        CHECK(most <= 2);
        if (most > 2)
            fprintf(stderr, "  %d callers on 3 threads: %d workers busy at once\n", callers,
                    most);
    }
}

int main(void)
{
    unit_seed("test_parallel");
    for (int nt = 1; nt <= 4; nt++) {
        tgk_set_num_threads(nt);
        CHECK(tgk_num_threads() == nt);
        static const int64_t ns[] = {0, 1, 2, 3, 7, 64, 1000, 4097};
        for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
            for (int64_t grain = 1; grain <= 1000; grain *= 10) {
                CHECK(run_and_check(ns[i], grain, false));
                CHECK(run_and_check(ns[i], grain, true));
            }
    }
    /* workers asleep (past their spin), woken by a prime, then given a loop */
    tgk_set_num_threads(3);
    for (int r = 0; r < 3; r++) {
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
        tgk_parallel_prime();
        if (r == 2)
            nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);   /* asleep again */
        CHECK(run_and_check(1000, 1, false));
    }
    tgk_set_num_threads(1);
    tgk_parallel_prime();       /* nothing to wake */
    CHECK(run_and_check(100, 1, false));

    tgk_set_num_threads(0);
    CHECK(tgk_num_threads() >= 1);
    CHECK(!tgk_in_task());

    tgk_set_num_threads(3);
    pthread_t t[4];
    static caller_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i].ok = 1;
        for (int r = 0; r < ROUNDS; r++)
            args[i].n[r] = kc_int(1, 3000), args[i].grain[r] = kc_int(1, 50);
    }
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, caller, &args[i]) == 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK(args[i].ok);
    }
    test_lone_caller_gets_its_threads();
    test_concurrent_callers_share_the_threads();
    return unit_report();
}
