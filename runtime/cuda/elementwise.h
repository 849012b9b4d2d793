/* elementwise.h -- the few CUDA kernels no library has, callable from C (private to runtime/cuda/)
 *
 * Each launches on stream and returns cudaGetLastError(). Every kernel writes
 * each output element from one thread in a fixed order: no atomics, so the
 * same inputs give the same bits. The row kernels (softmax, layer norm, the
 * token loss) give each row to one warp: its lanes sum their columns in
 * index order, then combine the 32 partial sums by the same butterfly of
 * shuffles every time, so their order is fixed too.
 *
 * Token ids and labels are not checked against their bound before a kernel
 * reads them (they are on the device, where no error can be returned; the
 * executor and the kernel timer make them in range): an id outside the table
 * or a label outside the classes makes what it touches NaN (the embedding's
 * row, the whole table gradient, the loss, the label's gradient row), never a
 * read or write outside the tensors.
 */
#ifndef ATM_RUNTIME_CUDA_ELEMENTWISE_H
#define ATM_RUNTIME_CUDA_ELEMENTWISE_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most dims a permute has (ATM_MAX_DIMS; cuda_kernels.c checks they agree). */
#define ATM_CU_MAX_DIMS 6

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
/* PyTorch's SGD with weight decay and momentum (buf NULL: none), as the CPU's */
cudaError_t atm_cu_sgd_momentum(cudaStream_t s, float *w, const float *dw, float *buf, float lr,
                                float momentum, float weight_decay, int64_t n);
/* AdamW's factors, in double as PyTorch's Python holds them */
typedef struct {
	double lr, weight_decay, beta1, beta2;
	float eps;
} atm_cu_adamw_factors;
/* PyTorch's AdamW step at step + 1, as the CPU's; then step += 1 (a second launch, so that
 * every thread reads the step before it) */
cudaError_t atm_cu_adamw(cudaStream_t s, float *w, const float *dw, float *m, float *v,
                         float *step, const atm_cu_adamw_factors *a, int64_t n);
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

/* A permute: y, dense in dims (ndim of them), reads x at sum over d of index[d] * strides[d]. */
typedef struct {
	int32_t ndim;
	int64_t dims[ATM_CU_MAX_DIMS];
	int64_t strides[ATM_CU_MAX_DIMS];
} atm_cu_perm;

/* y = gelu(x): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) when tanh_form, else
 * 0.5 x (1 + erf(x / sqrt(2))) */
cudaError_t atm_cu_gelu_fwd(cudaStream_t s, const float *x, float *y, int tanh_form, int64_t n);
/* dx = dy * gelu'(x) */
cudaError_t atm_cu_gelu_bwd(cudaStream_t s, const float *x, const float *dy, float *dx,
                            int tanh_form, int64_t n);
/* y = tanh(x) */
cudaError_t atm_cu_tanh_fwd(cudaStream_t s, const float *x, float *y, int64_t n);
/* dx = dy * (1 - y^2), from the forward output y */
cudaError_t atm_cu_tanh_bwd(cudaStream_t s, const float *y, const float *dy, float *dx, int64_t n);
/* y = softmax of each row of x over its first valid entries, 0 past them: valid is cols, or
 * (r % cols) + 1 when causal (rows of square [T, T] matrices) */
cudaError_t atm_cu_softmax_fwd(cudaStream_t s, const float *x, float *y, int causal, int64_t rows,
                               int64_t cols);
/* dx = y * (dy - sum over the row of dy * y) */
cudaError_t atm_cu_softmax_bwd(cudaStream_t s, const float *y, const float *dy, float *dx,
                               int64_t rows, int64_t cols);
/* per row of x: mean, biased var; y = (x - mean) / sqrt(var + eps) * gamma + beta */
cudaError_t atm_cu_layer_norm_fwd(cudaStream_t s, const float *x, const float *gamma,
                                  const float *beta, float *y, float *mean, float *var, float eps,
                                  int64_t rows, int64_t cols);
/* atm_cu_layer_norm_bwd_chunks -- the partial sums atm_cu_layer_norm_bwd keeps in its
 * workspace: one per ATM_CU_LN_CHUNK rows, 2 * cols floats each */
#define ATM_CU_LN_CHUNK 64
int64_t atm_cu_layer_norm_bwd_chunks(int64_t rows);
/* dx of each row from the saved mean and var; dgamma[c] = sum over rows of dy * xhat,
 * dbeta[c] = sum of dy, by chunks of rows into part (atm_cu_layer_norm_bwd_chunks(rows) *
 * 2 * cols floats), then the chunks in order */
cudaError_t atm_cu_layer_norm_bwd(cudaStream_t s, const float *x, const float *dy,
                                  const float *gamma, const float *mean, const float *var,
                                  float *dx, float *dgamma, float *dbeta, float *part, float eps,
                                  int64_t rows, int64_t cols);
/* y row r (rows of cols) = table row ids[r], or r % seq when ids is NULL; table has
 * table_rows rows */
cudaError_t atm_cu_embedding_fwd(cudaStream_t s, const float *table, const int32_t *ids,
                                 float *y, int64_t seq, int64_t table_rows, int64_t rows,
                                 int64_t cols);
/* dtable = 0 (by a kernel), then dy row r added to dtable row ids[r] (or r % seq), r
 * increasing */
cudaError_t atm_cu_embedding_bwd(cudaStream_t s, const float *dy, const int32_t *ids,
                                 float *dtable, int64_t seq, int64_t table_rows, int64_t rows,
                                 int64_t cols);
/* dst row r (rows of dst_len) = src row r (rows of src_len) cut to dst_len, or padded with
 * zeros to it: narrow's forward and backward */
cudaError_t atm_cu_narrow(cudaStream_t s, const float *src, float *dst, int64_t rows,
                          int64_t src_len, int64_t dst_len);
/* y = x cast (f32 -> bf16 to nearest even, NaN kept; bf16 -> f32 exactly; the same dtype
 * copied): from_bytes and to_bytes are 4 (f32) or 2 (bf16), the CPU's bits */
cudaError_t atm_cu_cast(cudaStream_t s, const void *x, void *y, int from_bytes, int to_bytes,
                        int64_t n);
/* y = x with its axes reordered as p says */
cudaError_t atm_cu_permute(cudaStream_t s, const atm_cu_perm *p, const float *x, float *y);
/* logp = log-softmax of each row of x; row_loss[r] = -logp[r][labels[r]] (in double) */
cudaError_t atm_cu_token_xent_rows(cudaStream_t s, const float *x, const int32_t *labels,
                                   float *logp, double *row_loss, int64_t rows, int64_t cols);
/* dx = (exp(logp) - onehot(labels)) / rows */
cudaError_t atm_cu_token_xent_bwd(cudaStream_t s, const float *logp, const int32_t *labels,
                                  float *dx, int64_t rows, int64_t cols);

/* rotary embeddings of rows of d (the row's position: r % seq), rotate-half pairs (i, i + d/2)
 * by r % seq * theta^(-2i/d), or back by it (inverse) */
cudaError_t atm_cu_rope(cudaStream_t s, const float *x, float *y, float theta, int inverse,
                        int64_t rows, int64_t seq, int64_t d);
/* y = x * rstd * w per row of cols, rstd = 1 / sqrt(mean of x^2 + eps) */
cudaError_t atm_cu_rms_norm_fwd(cudaStream_t s, const float *x, const float *w, float *y,
                                float *rstd, float eps, int64_t rows, int64_t cols);
/* dx = rstd * (g - xhat * mean(g * xhat)) with g = dy * w, xhat = x * rstd; dw = the sum over
 * rows of dy * xhat, rows in order */
cudaError_t atm_cu_rms_norm_bwd(cudaStream_t s, const float *x, const float *dy, const float *w,
                                const float *rstd, float *dx, float *dw, int64_t rows,
                                int64_t cols);
/* The element-wise activations atm_cu_act_* compute, by kind. */
enum { ATM_CU_SILU, ATM_CU_SIGMOID, ATM_CU_HARDSWISH, ATM_CU_HARDSIGMOID, ATM_CU_RELU6 };
/* y = kind(x) */
cudaError_t atm_cu_act_fwd(cudaStream_t s, int kind, const float *x, float *y, int64_t n);
/* dx = dy * kind'(...), from the forward output y (sigmoid, relu6) or input x (the others) */
cudaError_t atm_cu_act_bwd(cudaStream_t s, int kind, const float *fwd, const float *dy, float *dx,
                           int64_t n);
/* A broadcast operand b of a larger a (core's atm_broadcast): the dims of a that b keeps and
 * those it is repeated along, each with its stride in a, fastest first */
typedef struct {
	int32_t n_kept, n_rep;
	int64_t kept[ATM_CU_MAX_DIMS], kept_stride[ATM_CU_MAX_DIMS];
	int64_t rep[ATM_CU_MAX_DIMS], rep_stride[ATM_CU_MAX_DIMS];
	int64_t rep_elems;
} atm_cu_bcast;

/* y = a * b (n elements of a); b of a's shape when bc is NULL, else broadcast as bc says */
cudaError_t atm_cu_mul(cudaStream_t s, const float *a, const float *b, float *y,
                       const atm_cu_bcast *bc, int64_t n);
/* db (n elements) = dy * a summed over the dims bc repeats db along: one thread per element of
 * db, its terms in index order, in double */
cudaError_t atm_cu_mul_bwd(cudaStream_t s, const float *dy, const float *a, float *db,
                           const atm_cu_bcast *bc, int64_t n);

#ifdef __cplusplus
}
#endif

#endif /* ATM_RUNTIME_CUDA_ELEMENTWISE_H */
