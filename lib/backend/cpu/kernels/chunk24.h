/* The chunk function of the two 2:4 kernels (sparse24.c, qgemm24.c): rows
 * [r0, r1) x panels [p0, p1) of a job of type job_t through the register tile
 * T(mr, np, j, r, p) (mr <= MR, np constants at every call). A lone row takes
 * 4 panels at a time (independent chains while the weights stream in); more
 * rows, MR x NP tiles, rows outer so that the tile's rows of x stay in L1
 * while it sweeps the chunk's panels. */
#ifndef TGK_CHUNK24_H
#define TGK_CHUNK24_H

#include "backend/cpu/kernels/vecmath.h"    /* TGK_TILE_ROWS */

#define TGK_CHUNK24(name, attr, T, job_t, MR, NP)                                       \
    attr static void name(const void *ctx, int64_t r0, int64_t r1, int64_t p0,          \
                          int64_t p1)                                                   \
    {                                                                                   \
        const job_t *j = ctx;                                                           \
        int64_t p = p0;                                                                 \
        if (r1 - r0 == 1)                                                               \
            for (; p + 4 <= p1; p += 4)                                                 \
                T(1, 4, j, r0, p);                                                      \
        int64_t pe = p + (p1 - p) / NP * NP;                                            \
        for (int64_t r = r0; r < r1; r += MR) {                                         \
            int64_t mr = r1 - r < MR ? r1 - r : MR;                                     \
            for (int64_t q = p; q < pe; q += NP)                                        \
                TGK_TILE_ROWS(T, MR, NP, j, r, q, mr);                                  \
            for (int64_t q = pe; q < p1; q++)                                           \
                TGK_TILE_ROWS(T, MR, 1, j, r, q, mr);                                   \
        }                                                                               \
    }

#endif
