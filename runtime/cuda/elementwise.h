/* elementwise.h -- the few CUDA kernels no library has, callable from C (private to runtime/cuda/)
 *
 * Each launches on stream and returns cudaGetLastError(). Every kernel writes
 * each output element from one thread in a fixed order: no atomics, so the
 * same inputs give the same bits.
 */
#ifndef ATM_RUNTIME_CUDA_ELEMENTWISE_H
#define ATM_RUNTIME_CUDA_ELEMENTWISE_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A pooling window over planes of x ([N*C] planes of H x W) giving y ([N*C] of OH x OW). */
typedef struct {
	int64_t planes;
	int32_t h, w, oh, ow;
	int32_t kh, kw, sh, sw, pt, pl; /* window, strides, top and left padding */
	int32_t exclude_pad;
} atm_cu_pool;

/* y = a + b */
cudaError_t atm_cu_add(cudaStream_t s, const float *a, const float *b, float *y, int64_t n);
/* w -= lr * dw */
cudaError_t atm_cu_sgd(cudaStream_t s, float *w, const float *dw, float lr, int64_t n);
/* y[r][c] += b[c] for rows x cols */
cudaError_t atm_cu_add_bias_rows(cudaStream_t s, float *y, const float *b, int64_t rows,
                                 int64_t cols);
/* db[c] = sum over r of dy[r][c], r in order */
cudaError_t atm_cu_sum_rows(cudaStream_t s, const float *dy, float *db, int64_t rows, int64_t cols);
/* y, argmax (flat h * W + w in x's plane, the first maximum in window order) */
cudaError_t atm_cu_maxpool_fwd(cudaStream_t s, const atm_cu_pool *p, const float *x, float *y,
                               int32_t *argmax);
/* dx gathered from dy over the windows whose argmax is each position */
cudaError_t atm_cu_maxpool_bwd(cudaStream_t s, const atm_cu_pool *p, const float *dy,
                               const int32_t *argmax, float *dx);
cudaError_t atm_cu_avgpool_fwd(cudaStream_t s, const atm_cu_pool *p, const float *x, float *y);
cudaError_t atm_cu_avgpool_bwd(cudaStream_t s, const atm_cu_pool *p, const float *dy, float *dx);
/* probs = softmax per row; row_loss[r] = -sum labels * log(probs) (in double) */
cudaError_t atm_cu_softmax_xent_rows(cudaStream_t s, const float *x, const float *labels,
                                     float *probs, double *row_loss, int64_t rows, int64_t cols);
/* loss[0] = mean of row_loss, summed in order */
cudaError_t atm_cu_mean_loss(cudaStream_t s, const double *row_loss, float *loss, int64_t rows);
/* dx = (probs - labels) / rows */
cudaError_t atm_cu_softmax_xent_bwd(cudaStream_t s, const float *probs, const float *labels,
                                    float *dx, int64_t rows, int64_t cols);
/* var[c] = 1 / inv[c]^2 - eps (cuDNN saves the inverse standard deviation) */
cudaError_t atm_cu_inv_to_var(cudaStream_t s, const float *inv, float *var, float eps, int64_t n);
/* inv[c] = 1 / sqrt(var[c] + eps) */
cudaError_t atm_cu_var_to_inv(cudaStream_t s, const float *var, float *inv, float eps, int64_t n);

#ifdef __cplusplus
}
#endif

#endif /* ATM_RUNTIME_CUDA_ELEMENTWISE_H */
