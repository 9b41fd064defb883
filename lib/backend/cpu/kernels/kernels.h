/* CPU kernels: plain C over pointers and sizes, float32 unless the name says
 * otherwise. No IR types here: the same code serves the interpreter (linked into
 * libtgraph) and compiled models (libtgkernels.a, linked into every .so that
 * tcompile writes). Layouts are PyTorch's: row-major, NCHW, weights [out, in].
 * Every kernel is unit-tested against a float64 reference (tests/unit/). */
#ifndef TGK_KERNELS_H
#define TGK_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Marks a kernel's definition in its file under kernels/ as its declaration: the
 * build copies each TGK_DECL signature, up to its line that ends in ")", into
 * kernels_decl.h (Makefile.am), so a kernel of its own file needs no line in
 * a header. Such a file may also hold its op's glue (tg_run_<family>,
 * cg_node_<family>) inside #ifndef TGK_KERNELS_ONLY, which the build of
 * libtgkernels.a defines (kernels/cumsum.c). */
#define TGK_DECL

/* ---- threads (parallel.c): a persistent pthread pool ---------------------- */
typedef void (*tgk_task_fn)(void *ctx, int64_t begin, int64_t end);
/* Split [0, n) into chunks of at least `grain` and run fn on tgk_num_threads()
 * threads, the caller's and a team of workers; returns when all are done. Runs
 * inline when n is small or one thread is set. Safe to call from several
 * threads at once: concurrent callers share the count (each takes what the
 * loops in flight leave of it, at least its own thread), so the workers busy
 * at once stay below it however many threads call in. */
void tgk_parallel_for(int64_t n, int64_t grain, tgk_task_fn fn, void *ctx);
/* Below this many multiply-adds a task costs more to hand out than it saves
 * (a 256 x 784 GEMV runs faster on one thread than split in two): the grain
 * of the GEMM-like kernels is this over a task's multiply-adds. */
#define TGK_TASK_MIN_MACS (1 << 18)
/* A product of rows [0, M) x column panels [0, P) (the 2:4 kernels') on the
 * pool, in chunks of at most 8 register tiles of mr rows x 4 panels:
 * fn(ctx, r0, r1, p0, p1) for each; rows outer inside a chunk, so its panels
 * stay in cache while its rows sweep them. work: the product's multiply-adds
 * (too little per chunk runs fewer tasks). */
typedef void (*tgk_chunk_fn)(const void *ctx, int64_t r0, int64_t r1, int64_t p0, int64_t p1);
void tgk_parallel_panels(int64_t M, int64_t P, int64_t mr, double work, tgk_chunk_fn fn,
                         const void *ctx);
void tgk_set_num_threads(int n);   /* process-wide; <= 0: all cores (the default) */
/* The calling thread's own count for its loops, n <= 0: none (the process-wide
 * count applies); an executor's run sets it and puts the caller's back. */
void tgk_set_run_threads(int n);
int tgk_run_threads(void);
int tgk_num_threads(void);         /* the calling thread's, else the process-wide */
/* True on a pool thread running a task: nested parallel work runs inline. */
bool tgk_in_task(void);
/* Parallel loops follow soon (a model run starts): wake sleeping workers now,
 * so they are spinning by the first loop instead of waking inside it. */
void tgk_parallel_prime(void);

/* ---- GEMM (gemm_packed.c; linear and matmul in gemm.c) --------------------- */
/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major. */
void tgk_gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                  float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                  float beta, float *C, int64_t ldc);
/* NumPy matmul of a [..., M, K] (or [K]) and b [..., K, N] (or [K]), both
 * contiguous, into contiguous y: the batch dims broadcast. */
void tgk_matmul_f32(int ra, const int64_t *ad, const float *a, int rb, const int64_t *bd,
                    const float *b, float *y);
/* y[M,N] = x[M,K] * w[N,K]^T + b[N] (b may be NULL). */
void tgk_linear_f32(const float *x, const float *w, const float *b, float *y,
                    int64_t M, int64_t N, int64_t K);

/* ---- GEMM on pre-packed weights (gemm_packed.c) ---------------------------- */
/* A linear weight w [N,K] (rows ldw apart) packed: ceil(N/16) panels of
 * [K][16] (zero past N), tgk_packed_size(N, K) floats. */
#define TGK_PANEL 16
int64_t tgk_packed_size(int64_t N, int64_t K);
void tgk_pack_weight_f32(const float *w, int64_t ldw, int64_t N, int64_t K, float *packed);
/* The same layout from a [K,N] operand (rows ldb apart): the w^T of a matmul. */
void tgk_pack_kn_f32(const float *b, int64_t ldb, int64_t K, int64_t N, float *packed);
/* y[M,N] = x[M,K] * w^T + b[N] (b may be NULL), wp = w packed. */
void tgk_linear_packed_f32(const float *x, const float *wp, const float *b, float *y,
                           int64_t M, int64_t N, int64_t K);
/* An activation over n floats, in place allowed: a tgk_vec_*_f32. */
typedef void (*tgk_vec_fn)(int64_t n, const float *x, float *y);
/* y = act(x * w^T + b + res), the epilogue applied to each block of y as it
 * is computed (in cache, on the thread that computed it): res [M,N] (a
 * residual, not overlapping y) and act may be NULL. */
void tgk_linear_packed_ex_f32(const float *x, const float *wp, const float *b, const float *res,
                              float *y, int64_t M, int64_t N, int64_t K, tgk_vec_fn act);
/* The same with rows ldx and ldy apart; accumulate: y += x w^T (b unused).
 * Causal cuts for attention, TGK_NO_DIAG for none: y_diag, row r of y is
 * needed only in columns n < r + y_diag (whole tiles past it are skipped,
 * the rest of the row is undefined); x_diag, row r of x is zero from column
 * r + x_diag on (a tile's products stop at its last row's cut). */
#define TGK_NO_DIAG (INT64_MAX / 4)
void tgk_gemm_packed_f32(int64_t M, int64_t N, int64_t K, const float *x, int64_t ldx,
                         const float *wp, const float *b, bool accumulate, float *y, int64_t ldy,
                         int64_t y_diag, int64_t x_diag);
/* A 1x1 convolution (stride 1, no padding, one group) over n images of P
 * pixels: y[i] = act(w[K, C] x[i][C, P] + b + res[i]) per image, b [K]
 * (one value an output channel), res (n x [K, P], not overlapping y) and act
 * may be NULL; y[i] at y + i * y_stride (0: K * P, contiguous). The images
 * are read in place (the packed GEMM's register tiles with pixels as
 * panels). 0, or -1 when scratch cannot be allocated. */
int tgk_pointwise_f32(int64_t n, int64_t C, int64_t K, int64_t P, const float *x,
                      const float *w, const float *b, const float *res, float *y,
                      int64_t y_stride, tgk_vec_fn act);
/* A convolution as a GEMM over its pixels, n of them (images x groups: GEMM
 * i is image i / groups, group i % groups): y[i] = act(w[g][M, K] cols_i[K, P]
 * + b[g] + res[i]), g = i % groups; w [groups][M][K], b [groups * M] (one
 * value an output channel; may be NULL), res and y [n][M][P] (res not
 * overlapping y; res and act may be NULL). cols(ctx, i, p0, p1, buf) writes
 * pixels [p0, p1) (at most 64) of cols_i into buf as panels of TGK_PANEL
 * pixels, [panel][K][TGK_PANEL], the last panel's columns past p1 zeros.
 * whole_rows (for cols costly to pack: im2col): a task takes all M rows
 * unless the threads would go idle even with 16 pixels a task (then the
 * pixels are packed once, up front, and rows split); else at most 64 rows,
 * each task packing its pixels. Or, cols NULL (an implicit im2col: a stride-1
 * convolution over a zero-padded image), nothing packed: row k of cols_i is
 * read in place at src + i * src_stride + koff[k], its P pixels a grid of
 * rows wp long of which the first ow are y's (the rest computed and
 * dropped; y and res then hold P / wp * ow pixels an output channel), and
 * src readable a panel chunk (64 floats) past any pixel's last tap.
 * y_stride: elements from one image's y (groups GEMMs) to the next's, 0 for
 * groups * M * (y's pixels): y contiguous (res always is). merged (groups 1,
 * with cols): one GEMM over the n images' pixels in a row of n * P, cols
 * called with i = 0 and pixels of that row (a chunk may span images), y and
 * res still written per image: small maps, whose own register tiles would
 * leave lanes idle. 0, or -1 when scratch cannot be allocated (or merged
 * without cols or with groups). */
typedef struct {
    int64_t n, groups, M, K, P;
    const float *w, *b, *res;
    float *y;
    int64_t y_stride;
    tgk_vec_fn act;
    void (*cols)(const void *ctx, int64_t i, int64_t p0, int64_t p1, float *buf);
    const void *ctx;
    bool whole_rows;
    const float *src;
    const int64_t *koff;
    int64_t src_stride, wp, ow;
    bool merged;
} tgk_conv_gemm;
int tgk_conv_gemm_f32(const tgk_conv_gemm *c);
/* An indirect GEMM (conv_nhwc.c: a convolution over channels-last pixels,
 * no im2col): y[m, n] = act(b[n] + sum over taps t < taps and c < C of
 * xr(m, t)[c] w[n][t * C + c] + res[m, n]) for rows m < M, columns n < N,
 * in groups GEMMs side by side: GEMM g reads xr(m, t) + g * C, its weight
 * is the panels from g * N / 16 on, its y, b and res columns start at g * N
 * (groups > 1: N a multiple of 16). rows(ctx, r0, n, ptr) writes ptr[t *
 * TGK_IGEMM_ROWS + i] = xr(r0 + i, t) for i < n <= TGK_IGEMM_ROWS, each C
 * floats readable (a tap's pixel; a zero vector for padding), once a
 * register tile of rows. wp: the weight packed as tgk_pack_weight_f32 packs
 * [groups * N][taps * C]; b may be NULL; y rows ldy apart; res rows ldres
 * apart (or NULL; not overlapping y); act may be NULL (relu, relu6 and
 * hardswish on the tile's registers). 0, or -1 when scratch cannot be
 * allocated or N does not split into groups' panels. */
#define TGK_IGEMM_ROWS 8
typedef struct tgk_igemm {
    int64_t M, N, taps, C, groups;
    void (*rows)(const void *ctx, int64_t r0, int64_t n, const float **ptr);
    const void *ctx;
    const float *wp, *b, *res;
    float *y;
    int64_t ldy, ldres;
    tgk_vec_fn act;
} tgk_igemm;
int tgk_igemm_f32(const tgk_igemm *g);
/* Task t of a packed GEMM split into chunks of row_chunk rows x panel_chunk
 * panels, panel chunks fastest: b = rows [b[0], b[1]), panels [b[2], b[3]). */
void tgk_gemm_task(int64_t t, int64_t M, int64_t N, int64_t row_chunk, int64_t panel_chunk,
                   int64_t b[4]);
/* Rows [r0, r1) x columns [c0, c1) of a GEMM's y just computed (rows ldy
 * apart): the residual res (the same layout; NULL: none) added, then act
 * (NULL: none), while the block is in cache. */
void tgk_gemm_epilogue(float *y, int64_t ldy, const float *res, tgk_vec_fn act, int64_t r0,
                       int64_t r1, int64_t c0, int64_t c1);
/* Tests: run the packed GEMM with one instruction set's register tile,
 * "base" (SSE2, 2 x 16), "avx2" (6 x 16) or "avx512" (8 x 32), instead of
 * the widest the CPU has; NULL: the widest again. false: the CPU lacks it. */
bool tgk_gemm_packed_isa(const char *isa);

/* ---- bf16 GEMM on pre-packed weights (gemm_bf16.c) -------------------------- */
/* A linear weight w [N,K] (rows ldw apart) rounded to bf16 (nearest even) and
 * packed: ceil(N/16) panels of [KPAD/2][16][2], k in pairs, KPAD = K rounded
 * up to a multiple of 32 (zero past N and K), tgk_packed_bf16_size(N, K) bf16. */
#define TGK_BF16_KPAD(K) (((K) + 31) / 32 * 32)
int64_t tgk_packed_bf16_size(int64_t N, int64_t K);
void tgk_pack_weight_bf16(const float *w, int64_t ldw, int64_t N, int64_t K, uint16_t *packed);
/* y[M,N] = act(bf16(x)[M,K] * w^T + b + res) in float32 (b, res [M,N] not
 * overlapping y, and act may be NULL), wp = w packed. 0, or -1 when scratch
 * cannot be allocated. */
int tgk_linear_packed_bf16(const float *x, const uint16_t *wp, const float *b, const float *res,
                           float *y, int64_t M, int64_t N, int64_t K, tgk_vec_fn act);
/* Tests: "avx512bf16" (vdpbf16ps) or "base" (portable); NULL: the best the
 * CPU has. false: the CPU lacks it. TGRAPH_CPU_BF16=base at start picks the
 * portable one. tgk_gemm_bf16_path names the one in use. */
bool tgk_gemm_bf16_isa(const char *isa);
const char *tgk_gemm_bf16_path(void);

/* ---- 2:4 sparse linear (sparse24.c) ---------------------------------------- */
/* A weight w [N,K] (K a multiple of 4) with at most two nonzeros in each group
 * of four along k, in the TG layout (tgraph-format(5)): values [N, K/2] f32, the
 * two kept weights of each group in k order, and meta [N, ceil(K/8)] u8, 4 bits
 * a group, the index in the group of its first kept weight in bits 0-1 and of
 * its second in bits 2-3, group 2h in the low nibble of byte h and group
 * 2h + 1 in the high one. Packed for the kernel (tgk_sparse24_packed_size
 * bytes) by tgk_sparse24_pack, or once (tgk_qpack_once) for a compiled model. */
size_t tgk_sparse24_packed_size(int64_t N, int64_t K);
void tgk_sparse24_pack(int64_t N, int64_t K, const void *values, const uint8_t *meta,
                       void *packed);  /* values: float */
void *tgk_sparse24_pack_once(void **slot, int64_t N, int64_t K, const float *values,
                             const uint8_t *meta);
/* Shared with the int8 2:4 kernel (qgemm24.c): the metadata of each panel of
 * 16 columns as [ceil(K/8)][16] bytes, the TG byte of each column next to
 * its neighbours' (zero past N), into pm; packing once; the paths. */
void tgk_sparse24_pack_meta(int64_t N, int64_t K, const uint8_t *meta, uint8_t *pm);
typedef void (*tgk_pack24_fn)(int64_t N, int64_t K, const void *values, const uint8_t *meta,
                              void *packed);
void *tgk_pack24_once(void **slot, size_t size, tgk_pack24_fn pack, int64_t N, int64_t K,
                      const void *values, const uint8_t *meta);
typedef struct {
    const char *name;
    tgk_chunk_fn fn;            /* rows x panels (tgk_parallel_panels) */
    int64_t mr;                 /* rows of its register tile */
    bool (*has)(void);          /* whether this CPU runs it */
} tgk_path24;
/* A kernel's paths and the one it takes: tgk_paths24_set chooses the path named
 * name if this CPU runs it (else -1, and the choice stays), with name NULL the
 * first this CPU runs (list the portable one last, its has tgk_cpu_any). */
typedef struct {
    const tgk_path24 *paths;
    size_t n;
    const tgk_path24 *chosen;
} tgk_paths24;
int tgk_paths24_set(tgk_paths24 *s, const char *name);
bool tgk_cpu_any(void);
/* y[M,N] = x[M,K] * w^T + b[N] (b may be NULL), w packed. */
void tgk_linear24_f32(const float *x, const void *packed, const float *b, float *y,
                      int64_t M, int64_t N, int64_t K);
/* Which path it takes: "avx512", "avx2" or "scalar", the widest the CPU has
 * unless set (tests); setting one the CPU lacks gives -1. */
const char *tgk_sparse24_path(void);
int tgk_sparse24_set_path(const char *name);

/* ---- convolution (conv.c): im2col + GEMM, groups, dilation, transposed ----- */
typedef struct {
    int nsp;                    /* spatial dims: 1, 2 or 3 */
    int64_t n, c, k, groups;    /* batch, in channels, out channels, groups */
    int64_t in[3], out[3];      /* spatial sizes */
    int64_t kernel[3], stride[3], pad[3], dil[3];
    bool transposed;            /* weight [C, K/groups, *kernel] instead of [K, C/groups, *kernel] */
    bool relu;                  /* then y = y < 0 ? 0 : y (the direct path as it stores;
                                 * with res, after it: relu(y + res)) */
    /* > 1 (2-D only): then the max over each pool x pool window, stride pool,
     * no padding, rows and columns past the last whole window dropped; y is
     * [n, k, out[0] / pool, out[1] / pool]. The direct path pools each block
     * of rows while it is in cache; the others pool a full result. */
    int64_t pool;
    /* Then y = act(y + res) (either may be NULL; neither with pool, act not
     * with relu): res of
     * y's shape, not overlapping it. A pointwise convolution applies them
     * to each block of y while it is in cache, the others in a pass after. */
    const float *res;
    tgk_vec_fn act;
    /* Elements from one image's y to the next's; 0: one image's size (y
     * contiguous). Larger: y is the images' part of a wider result (a
     * concat along the channels written in place); res stays contiguous.
     * tgk_conv_f32's alone (the quantized kernels take 0). */
    int64_t y_stride;
} tgk_conv_desc;
/* b may be NULL. out[] must be filled in by the caller. Scratch is bounded
 * (a few MiB of im2col columns, or 32 MiB of padded images, whatever the
 * image size). Returns 0, or -1
 * when the descriptor is invalid or scratch cannot be allocated (y undefined). */
int tgk_conv_f32(const tgk_conv_desc *d, const float *x, const float *w, const float *b, float *y);
/* Tests: run depthwise convolutions with one instruction set's vectors,
 * "base" (SSE2), "avx2" or "avx512", instead of the widest the CPU has;
 * NULL: the widest again. false: the CPU lacks it. */
bool tgk_conv_dw_isa(const char *isa);

/* ---- channels-last convolution (conv_nhwc.c, conv_dw_nhwc.c) ------------- */
/* x [n, in[0], in[1], c] -> y [n, out[0], out[1], k], 2-D only, not transposed.
 * Weight packed by tgk_pack_conv_nhwc_f32 at compile time: panels of 16 output
 * channels, [ceil(k/16)][kernel[0]*kernel[1]*(c/groups)][16], panel row
 * (kh*kernel[1] + kw)*(c/groups) + ic. groups: 1; or depthwise (groups == c == k);
 * or k/groups and c/groups multiples of 16 (tgk_conv_nhwc_supported says). */
typedef struct {
    int64_t n, c, k, groups;
    int64_t in[2], out[2], kernel[2], stride[2], pad[2], dil[2];
    int64_t y_ld;        /* elements from one pixel of y to the next (>= k: y is a channel
                          * slice of a wider concat written in place); 0: k */
    const float *res;    /* added, [n, out0, out1, k] contiguous, or NULL */
    bool relu;           /* then max(y, 0) (after res) */
    tgk_vec_fn act;      /* or this (not with relu), or NULL */
} tgk_conv_nhwc_desc;
bool tgk_conv_nhwc_supported(int64_t c, int64_t k, int64_t groups);
int64_t tgk_conv_nhwc_packed_size(int64_t c, int64_t k, int64_t groups,
                                  int64_t kh, int64_t kw);          /* floats */
/* w in the conv op's layout [k, c/groups, kh, kw] (OIHW) -> packed. */
void tgk_pack_conv_nhwc_f32(const float *w, int64_t c, int64_t k, int64_t groups,
                            int64_t kh, int64_t kw, float *packed);
/* b may be NULL. Returns 0, or -1 when the descriptor is invalid or scratch
 * cannot be allocated. Threads: the kernels' pool (tgk_parallel_*), as tgk_conv_f32. */
int tgk_conv_nhwc_f32(const tgk_conv_nhwc_desc *d, const float *x, const float *wp,
                      const float *b, float *y);
/* Its depthwise case (groups == c == k), which it hands on (conv_dw_nhwc.c):
 * the same contract, any kernel size, stride, padding and dilation. */
int tgk_conv_dw_nhwc_f32(const tgk_conv_nhwc_desc *d, const float *x, const float *wp,
                         const float *b, float *y);
/* Tests: run it with one instruction set's vectors, "base" (SSE2), "avx2"
 * or "avx512", instead of the widest the CPU has; NULL: the widest again.
 * false: the CPU lacks it. */
bool tgk_conv_dw_nhwc_isa(const char *isa);

/* ---- attention (sdpa.c): FlashAttention-2 style, tiled, online softmax ------ */
typedef struct {
    int64_t batch;              /* product of leading dims */
    int64_t hq, hk;             /* query heads, key/value heads (hq % hk == 0: GQA) */
    int64_t L, S, E, Ev;        /* query len, key len, qk head dim, v head dim */
    float scale;
    bool causal;                /* upper-left aligned, like torch is_causal */
    const float *mask;          /* additive, or NULL; element (b,h,l,s) at */
    int64_t mask_stride[4];     /* b*st[0] + h*st[1] + l*st[2] + s*st[3] (0 = broadcast) */
    /* Element strides of batch, head and row of q, k, v and o, whose rows
     * are contiguous; all three 0: the tensor is contiguous. Lets q, k and v
     * be slices of one qkv projection, read in place, and o be written heads
     * interleaved ([batch, L, hq, Ev]) for the output projection. */
    int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3];
} tgk_sdpa_desc;
/* q [batch,hq,L,E], k [batch,hk,S,E], v [batch,hk,S,Ev] -> o [batch,hq,L,Ev].
 * Extra memory O(tile), never O(L*S). Fully masked rows give 0. Returns 0, or
 * -1 when the descriptor is invalid or scratch cannot be allocated. */
int tgk_sdpa_f32(const tgk_sdpa_desc *d, const float *q, const float *k, const float *v, float *o);

/* ---- pooling (pool.c), NC + 1 or 2 spatial dims ------------------------------ */
typedef struct {
    int nsp;
    int64_t n, c;
    int64_t in[2], out[2], kernel[2], stride[2], pad[2], dil[2];
    bool count_include_pad;     /* avg only */
    bool channels_last;         /* x [n, in..., c] -> y [n, out..., c] */
} tgk_pool_desc;
void tgk_max_pool_f32(const tgk_pool_desc *d, const float *x, float *y);
void tgk_avg_pool_f32(const tgk_pool_desc *d, const float *x, float *y);
/* x [nc, in_h, in_w] -> y [nc, out_h, out_w], PyTorch's adaptive bins. */
void tgk_adaptive_avg_pool_f32(int64_t nc, int64_t in_h, int64_t in_w,
                               int64_t out_h, int64_t out_w, const float *x, float *y);
/* x [n, in_h, in_w, c] -> y [n, out_h, out_w, c], the same bins. */
void tgk_adaptive_avg_pool_nhwc_f32(int64_t n, int64_t c, int64_t in_h, int64_t in_w,
                                    int64_t out_h, int64_t out_w, const float *x, float *y);

/* ---- resizing (resize.c), NC + 1 or 2 spatial dims ------------------------- */
typedef enum { TGK_RESIZE_NEAREST, TGK_RESIZE_LINEAR, TGK_RESIZE_CUBIC } tgk_resize_mode;
/* Output coordinate o -> source coordinate, with r = 1/scale rounded to float
 * (r = in/out when no scale is given) and all arithmetic in float, as PyTorch:
 * HALF_PIXEL (o + 0.5) r - 0.5; PYTORCH_HALF_PIXEL the same, 0 when out is 1;
 * ALIGN_CORNERS o (in - 1)/(len - 1), 0 when out is 1, len = out (with a scale,
 * ONNX's in * scale, >= out); ASYMMETRIC o r;
 * TF_HALF_PIXEL_FOR_NN (o + 0.5) r; HALF_PIXEL_SYMMETRIC ONNX's: half_pixel
 * shifted by in/2 (1 - out r / in). */
typedef enum {
    TGK_COORD_HALF_PIXEL, TGK_COORD_PYTORCH_HALF_PIXEL, TGK_COORD_ALIGN_CORNERS,
    TGK_COORD_ASYMMETRIC, TGK_COORD_TF_HALF_PIXEL_FOR_NN, TGK_COORD_HALF_PIXEL_SYMMETRIC,
    TGK_COORD_TF_CROP_AND_RESIZE,
} tgk_resize_coord;
/* nearest: source coordinate -> index (then clamped to [0, in - 1]) */
typedef enum {
    TGK_NEAREST_ROUND_PREFER_FLOOR, TGK_NEAREST_ROUND_PREFER_CEIL, TGK_NEAREST_FLOOR,
    TGK_NEAREST_CEIL,
} tgk_resize_nearest;
typedef struct {
    int nsp;
    int64_t nc;                 /* planes: batch times channels */
    int64_t in[2], out[2];
    double scale[2];            /* out/in of the coordinate mapping; 0: out/in itself */
    tgk_resize_mode mode;
    tgk_resize_coord coord;
    tgk_resize_nearest nearest;
    float cubic_a;              /* cubic: Keys' a (PyTorch and ONNX: -0.75) */
    bool exclude_outside;       /* cubic: taps outside the input weigh 0, the rest renormalized */
    /* linear and cubic on an axis that shrinks: ONNX's antialiasing filter, its
     * support widened by 1/scale, taps and weights as ONNX's reference picks them */
    bool antialias;
    /* TF_CROP_AND_RESIZE: ONNX's, in double, from roi [start, end] (fractions of
     * in - 1) per axis; an element whose source lies outside [0, in - 1] on some
     * axis is extrapolation */
    double roi[2][2];
    float extrapolation;
} tgk_resize_desc;
/* x [nc, in...] -> y [nc, out...]. Linear clamps a negative source coordinate
 * to 0 and cubic reads past the edges as the edge value (both PyTorch's and
 * ONNX's rules). 0, or -1 when the descriptor is invalid or out of memory. */
int tgk_resize_f32(const tgk_resize_desc *d, const float *x, float *y);

/* ---- normalization and softmax (norm.c, softmax.c) ---------------------------- */
/* rows of `cols` elements; w, b [cols] may be NULL. */
void tgk_layer_norm_f32(const float *x, const float *w, const float *b, float *y,
                        int64_t rows, int64_t cols, float eps);
/* x [n, c, spatial]; w, b [c] may be NULL. */
void tgk_group_norm_f32(const float *x, const float *w, const float *b, float *y,
                        int64_t n, int64_t c, int64_t spatial, int64_t groups, float eps);
/* inference form; w, b may be NULL. */
void tgk_batch_norm_f32(const float *x, const float *mean, const float *var,
                        const float *w, const float *b, float *y,
                        int64_t n, int64_t c, int64_t spatial, float eps);
/* softmax over the middle axis of [outer, len, inner]; log: log_softmax. */
void tgk_softmax_f32(const float *x, float *y, int64_t outer, int64_t len, int64_t inner,
                     bool log);

/* ---- vector primitives (vec.c): y[i] = f(x[i]); x == y allowed ---------------- */
void tgk_vec_exp_f32(int64_t n, const float *x, float *y);
void tgk_vec_tanh_f32(int64_t n, const float *x, float *y);
void tgk_vec_sigmoid_f32(int64_t n, const float *x, float *y);
void tgk_vec_gelu_f32(int64_t n, const float *x, float *y);       /* erf form */
void tgk_vec_gelu_tanh_f32(int64_t n, const float *x, float *y);
void tgk_vec_silu_f32(int64_t n, const float *x, float *y);
void tgk_vec_erf_f32(int64_t n, const float *x, float *y);
void tgk_vec_relu_f32(int64_t n, const float *x, float *y);      /* NaN and -0 stay */
void tgk_vec_hardswish_f32(int64_t n, const float *x, float *y);
void tgk_vec_relu6_f32(int64_t n, const float *x, float *y);     /* clamp(x, 0, 6) */

#endif
