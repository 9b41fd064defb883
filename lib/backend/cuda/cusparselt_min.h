/* The few cuSPARSELt declarations sparselt.c needs when configure found no
 * cusparseLt.h: its types and entry points as cuSPARSELt 0.6-0.8 declare
 * them (cusparseLt.h and cusparse.h; enum values copied), so the backend
 * builds without the library. The opaque structs are passed by pointer
 * only: declared at least as large as any version's (512 bytes in 0.8,
 * 1024 in earlier ones). sparselt.c dlopens the functions by name. */
#ifndef TG_BACKEND_CUDA_CUSPARSELT_MIN_H
#define TG_BACKEND_CUDA_CUSPARSELT_MIN_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include <library_types.h>

typedef enum { CUSPARSE_STATUS_SUCCESS = 0, CUSPARSE_STATUS_NOT_SUPPORTED = 10 } cusparseStatus_t;
typedef enum { CUSPARSE_OPERATION_NON_TRANSPOSE = 0, CUSPARSE_OPERATION_TRANSPOSE = 1 }
    cusparseOperation_t;
typedef enum { CUSPARSE_ORDER_COL = 1, CUSPARSE_ORDER_ROW = 2 } cusparseOrder_t;
typedef enum { CUSPARSE_COMPUTE_32I, CUSPARSE_COMPUTE_16F, CUSPARSE_COMPUTE_32F }
    cusparseComputeType;
typedef enum { CUSPARSELT_SPARSITY_50_PERCENT } cusparseLtSparsity_t;
typedef enum { CUSPARSELT_MATMUL_ALG_DEFAULT } cusparseLtMatmulAlg_t;
typedef enum {
    CUSPARSELT_MATMUL_ALG_CONFIG_ID, CUSPARSELT_MATMUL_ALG_CONFIG_MAX_ID,
    CUSPARSELT_MATMUL_SEARCH_ITERATIONS, CUSPARSELT_MATMUL_SPLIT_K
} cusparseLtMatmulAlgAttribute_t;

typedef struct { _Alignas(16) uint8_t data[1024]; } cusparseLtHandle_t;
typedef struct { _Alignas(16) uint8_t data[1024]; } cusparseLtMatDescriptor_t;
typedef struct { _Alignas(16) uint8_t data[1024]; } cusparseLtMatmulDescriptor_t;
typedef struct { _Alignas(16) uint8_t data[1024]; } cusparseLtMatmulAlgSelection_t;
typedef struct { _Alignas(16) uint8_t data[1024]; } cusparseLtMatmulPlan_t;

typedef const cusparseLtHandle_t *lt_h;
cusparseStatus_t cusparseLtInit(cusparseLtHandle_t *handle);
const char *cusparseLtGetErrorString(cusparseStatus_t status);
cusparseStatus_t cusparseLtDenseDescriptorInit(lt_h h, cusparseLtMatDescriptor_t *m, int64_t rows,
                                               int64_t cols, int64_t ld, uint32_t alignment,
                                               cudaDataType t, cusparseOrder_t order);
cusparseStatus_t cusparseLtStructuredDescriptorInit(lt_h h, cusparseLtMatDescriptor_t *m,
                                                    int64_t rows, int64_t cols, int64_t ld,
                                                    uint32_t alignment, cudaDataType t,
                                                    cusparseOrder_t order,
                                                    cusparseLtSparsity_t sparsity);
cusparseStatus_t cusparseLtMatDescriptorDestroy(const cusparseLtMatDescriptor_t *m);
cusparseStatus_t cusparseLtMatmulDescriptorInit(lt_h h, cusparseLtMatmulDescriptor_t *mm,
                                                cusparseOperation_t opA, cusparseOperation_t opB,
                                                const cusparseLtMatDescriptor_t *a,
                                                const cusparseLtMatDescriptor_t *b,
                                                const cusparseLtMatDescriptor_t *c,
                                                const cusparseLtMatDescriptor_t *d,
                                                cusparseComputeType compute);
cusparseStatus_t cusparseLtMatmulAlgSelectionInit(lt_h h, cusparseLtMatmulAlgSelection_t *sel,
                                                  const cusparseLtMatmulDescriptor_t *mm,
                                                  cusparseLtMatmulAlg_t alg);
cusparseStatus_t cusparseLtMatmulAlgSelectionDestroy(const cusparseLtMatmulAlgSelection_t *sel);
cusparseStatus_t cusparseLtMatmulAlgGetAttribute(lt_h h, const cusparseLtMatmulAlgSelection_t *sel,
                                                 cusparseLtMatmulAlgAttribute_t attr, void *data,
                                                 size_t size);
cusparseStatus_t cusparseLtMatmulGetWorkspace(lt_h h, const cusparseLtMatmulPlan_t *plan,
                                              size_t *size);
cusparseStatus_t cusparseLtMatmulPlanInit(lt_h h, cusparseLtMatmulPlan_t *plan,
                                          const cusparseLtMatmulDescriptor_t *mm,
                                          const cusparseLtMatmulAlgSelection_t *sel);
cusparseStatus_t cusparseLtMatmulPlanDestroy(const cusparseLtMatmulPlan_t *plan);
cusparseStatus_t cusparseLtMatmul(lt_h h, const cusparseLtMatmulPlan_t *plan, const void *alpha,
                                  const void *a, const void *b, const void *beta, const void *c,
                                  void *d, void *workspace, cudaStream_t *streams, int32_t nstreams);
cusparseStatus_t cusparseLtMatmulSearch(lt_h h, cusparseLtMatmulPlan_t *plan, const void *alpha,
                                        const void *a, const void *b, const void *beta,
                                        const void *c, void *d, void *workspace,
                                        cudaStream_t *streams, int32_t nstreams);
cusparseStatus_t cusparseLtSpMMACompressedSize2(lt_h h, const cusparseLtMatDescriptor_t *m,
                                                size_t *size, size_t *buffer_size);
cusparseStatus_t cusparseLtSpMMACompress2(lt_h h, const cusparseLtMatDescriptor_t *m,
                                          int is_sparse_a, cusparseOperation_t op,
                                          const void *dense, void *compressed, void *buffer,
                                          cudaStream_t stream);

#endif
