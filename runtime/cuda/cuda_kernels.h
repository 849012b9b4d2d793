/* cuda_kernels.h -- GPU kernels of every graph op: cuDNN, cuBLAS and a few CUDA kernels (private to runtime/cuda/)
 *
 *     atm_cuda_ctx *c = NULL;
 *     atm_cuda_kernel *k = NULL;
 *     atm_cuda_ctx_new(&c, 0);                          // device 0: a compute stream, cuDNN and cuBLAS handles
 *     atm_cuda_kernel_new(&k, c, g, node);              // g validated; descriptors and the algorithm
 *     void *ws = NULL;                                  // device memory of atm_cuda_kernel_workspace_bytes(k)
 *     atm_cuda_kernel_run(k, in, out, ws);              // enqueued on the compute stream, not waited for
 *     cudaStreamSynchronize(atm_cuda_ctx_stream(c));
 *     atm_cuda_kernel_destroy(k);
 *     atm_cuda_ctx_destroy(c);
 *
 * Tensors are dense and row-major (NCHW, [N, C]) with the graph's shapes, as
 * on the CPU (runtime/cpu/kernels.h says what each op computes); the pointers are
 * device-accessible (device memory, or pinned host memory mapped into the
 * device's address space) and 256-byte aligned. Every output byte is written.
 *
 * Determinism: every kernel computes the same bits from the same input bits,
 * whatever the pointers and whatever ran before: convolutions use only
 * algorithms cuDNN reports as deterministic, reductions have a fixed order (no
 * atomics on floats), cuBLAS runs with a fixed workspace on one stream. So a
 * step's losses and weights are bitwise the same under every placement. They
 * need not equal the CPU's bits (different summation orders), only agree with
 * them to float32 rounding.
 *
 * Max pooling: the forward writes the flat index (h * W + w within its (n, c)
 * plane of x) of each window's maximum, first one on ties, into the i32 argmax
 * tensor (shape of y); the backward gathers: dx at a position is the sum, in
 * a fixed order, of dy over the windows whose argmax is that position.
 *
 * Token ids and labels (embeddings, the token loss) are read on the device
 * and not checked there, where no error can be returned: the executor and the
 * kernel timer make them below their bound, and one outside it turns what it
 * touches NaN (elementwise.h says what; never a read or write outside a
 * tensor) where the CPU refuses it with ATM_E_INPUT.
 *
 * Matmuls are one cuBLAS strided batched GEMM each, in plain float32 (the
 * handle's pedantic math: no TF32), then the bias added to every row:
 * c = scale * op(a) op(b) + bias.
 *
 * Convolutions offer several algorithms (atm_cuda_kernel_n_algos); the
 * default, index 0, is the deterministic algorithm cuDNN ranks fastest that
 * needs no more than ATM_CUDA_DEFAULT_WORKSPACE bytes, the others follow in
 * cuDNN's order. The profiler times each and the optimizer picks one per node
 * (atm_cuda_kernel_set_algo).
 */
#ifndef ATM_RUNTIME_CUDA_KERNELS_H
#define ATM_RUNTIME_CUDA_KERNELS_H

#include <cuda_runtime_api.h>

#include "atm_core.h"
#include "atm_formats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Workspace a convolution's default algorithm may take (256 MiB). */
#define ATM_CUDA_DEFAULT_WORKSPACE ATM_GPU_WORKSPACE_BYTES
#define ATM_CUDA_MAX_ALGOS 16

typedef struct atm_cuda_ctx atm_cuda_ctx;
typedef struct atm_cuda_kernel atm_cuda_kernel;

/* atm_cuda_ctx_new -- make device current, create an in-order (non-blocking)
 * compute stream and cuDNN/cuBLAS handles bound to it. ATM_E_UNSUPPORTED
 * with the CUDA error string when there is no such device or no driver. */
atm_status atm_cuda_ctx_new(atm_cuda_ctx **c, int device);
void atm_cuda_ctx_destroy(atm_cuda_ctx *c); /* NULL is fine */
cudaStream_t atm_cuda_ctx_stream(const atm_cuda_ctx *c);
/* atm_cuda_ctx_versions -- "cudnn-9.19.0 cublas-13.0.0 cuda-13.0 driver-13.0" into buf */
void atm_cuda_ctx_versions(const atm_cuda_ctx *c, char *buf, size_t len);

/* atm_cuda_supports -- op has a GPU kernel (an entry in cuda_kernels.c's op table) */
bool atm_cuda_supports(atm_op op);

/* atm_cuda_kernel_new -- descriptors for node of g (g valid, outlives k).
 * Errors as atm_kernel_new: ATM_E_USAGE (node out of range),
 * ATM_E_UNSUPPORTED naming node and op, ATM_E_NOMEM, ATM_E_INTERNAL naming
 * the cuDNN/cuBLAS/CUDA status. */
/* atm_cuda_set_allreduce -- what the allreduce kernels average a bucket with, on the host
 * (the runtime's atm_bk_allreduce): each gradient is copied to host memory, averaged there
 * and copied into its mean; without it an allreduce over one rank only copies. */
void atm_cuda_set_allreduce(atm_status (*fn)(float *const *bufs, const int64_t *counts, int n,
                                             int ranks));

atm_status atm_cuda_kernel_new(atm_cuda_kernel **k, atm_cuda_ctx *c, const atm_graph *g,
                               int32_t node);
void atm_cuda_kernel_destroy(atm_cuda_kernel *k); /* NULL is fine */

/* Algorithms: 1 for every op but convolutions. Deterministic ones only. */
int atm_cuda_kernel_n_algos(const atm_cuda_kernel *k);
/* atm_cuda_kernel_algo_name -- "implicit_gemm", "fft", ... ("default" for non-convolutions) */
const char *atm_cuda_kernel_algo_name(const atm_cuda_kernel *k, int algo);
/* atm_cuda_kernel_algo_workspace -- device bytes algo needs while it runs */
int64_t atm_cuda_kernel_algo_workspace(const atm_cuda_kernel *k, int algo);
int atm_cuda_kernel_algo(const atm_cuda_kernel *k); /* the one in use */
/* atm_cuda_kernel_set_algo -- ATM_E_USAGE when algo is out of range */
atm_status atm_cuda_kernel_set_algo(atm_cuda_kernel *k, int algo);
/* atm_cuda_kernel_workspace_bytes -- of the algorithm in use (0 for most ops) */
int64_t atm_cuda_kernel_workspace_bytes(const atm_cuda_kernel *k);

/* atm_cuda_kernel_run -- enqueue the kernel on the context's compute stream:
 * in[i], out[i] are the node's i-th input and output (SGD writes in[0]),
 * workspace has atm_cuda_kernel_workspace_bytes (may be NULL when 0). Launch
 * errors are checked (ATM_E_INTERNAL naming the node and the CUDA error);
 * faults inside the kernel surface at the next synchronisation. */
atm_status atm_cuda_kernel_run(atm_cuda_kernel *k, void *const *in, void *const *out,
                               void *workspace);

#ifdef __cplusplus
}
#endif

#endif /* ATM_RUNTIME_CUDA_KERNELS_H */
