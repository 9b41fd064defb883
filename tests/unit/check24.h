/* What the two 2:4 kernel tests (test_sparse, test_qgemm24) share: every
 * path of the kernel this CPU runs, and on each the same shapes: odd M and N
 * (partial tiles and panels), K with an odd number of groups (a half byte of
 * metadata), sizes split across the thread pool. */
#ifndef TG_CHECK24_H
#define TG_CHECK24_H

#include "kcheck.h"

/* check(M, N, K) on the shapes above (check draws the rest: bias, ...) */
static inline void kc_shapes24(void (*check)(int64_t M, int64_t N, int64_t K))
{
    static const int64_t Ms[] = {1, 2, 3, 5, 6, 7, 13}, Ns[] = {1, 15, 16, 17, 33, 70};
    static const int64_t Ks[] = {4, 8, 12, 36, 260};
    for (size_t i = 0; i < sizeof Ms / sizeof *Ms; i++)
        check(Ms[i], Ns[kc_int(0, 5)], Ks[kc_int(0, 4)]);
    for (size_t i = 0; i < sizeof Ns / sizeof *Ns; i++)
        for (size_t k = 0; k < sizeof Ks / sizeof *Ks; k++)
            check(kc_int(1, 9), Ns[i], Ks[k]);
    check(64, 300, 516);
    check(1, 1000, 1028);
}

/* test() on each of names[0, n) that set_path takes (this CPU runs it),
 * then the best path (path() before) again; how many ran. */
static inline int kc_paths24(const char *const *names, size_t n, const char *(*path)(void),
                             int (*set_path)(const char *), void (*test)(void))
{
    const char *best = path();
    int ran = 0;
    for (size_t i = 0; i < n; i++)
        if (set_path(names[i]) == 0) {
            ran++;
            test();
        }
    CHECK(set_path("none") == -1);
    CHECK(set_path(best) == 0);
    return ran;
}

#endif
