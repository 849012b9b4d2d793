/* cuda_kernels.c -- GPU kernels of every graph op: cuDNN convolutions, batch norm and ReLU, cuBLAS inner products and matmuls, small CUDA kernels for the rest */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cudnn.h>

#include "cuda_kernels.h"
#include "elementwise.h"

/* cuBLAS's workspace, fixed so that its results do not depend on what it
 * could allocate (NVIDIA recommends 32 MiB on Hopper). */
#define CUBLAS_WORKSPACE ((size_t)32 << 20)

_Static_assert(ATM_MAX_DIMS <= ATM_CU_MAX_DIMS,
               "elementwise.h's permute holds fewer dims than a tensor has");

struct atm_cuda_ctx {
	int device;
	cudaStream_t stream;
	cudnnHandle_t dnn;
	cublasHandle_t blas;
	void *blas_ws;
};

/* One convolution algorithm cuDNN offers (deterministic ones only). */
struct algo {
	int id; /* cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t */
	int64_t ws;
};

struct atm_cuda_kernel {
	atm_cuda_ctx *c;
	const atm_graph *g;
	int32_t node;
	/* convolutions */
	cudnnTensorDescriptor_t xd, yd, bd;
	cudnnFilterDescriptor_t wd;
	cudnnConvolutionDescriptor_t cd;
	bool bias;
	int n_algos, algo;
	struct algo algos[ATM_CUDA_MAX_ALGOS];
	/* batch norm, ReLU: x described as [N, C, S, 1], per-channel [1, C, 1, 1] */
	cudnnTensorDescriptor_t bnd;
	cudnnActivationDescriptor_t act;
	/* inner product: y[N, O] = x[N, I] w[O, I]^T + b; the row ops: rows of cols */
	int64_t rows, cols, inner;
	atm_matmul_dims mm;
	atm_cu_perm perm;
	atm_cu_pool pool;
	atm_cu_bcast bcast; /* mul, mul_bwd: the broadcast operand's dims (n_kept -1: none) */
	int64_t ws_extra; /* workspace of non-convolutions (batch norm, layer norm's backward, the
	                   * losses) */
	/* a node with bf16 operands runs widened: its build and run see wide[i], operand i
	 * (inputs, then outputs) as f32, each bf16 one an f32 copy in the workspace past what the
	 * op itself uses, at wide_off[i] from there (-1: none), wide_bytes in all */
	atm_tensor *wide;
	int64_t *wide_off, wide_bytes;
	void **wide_ptr;
};

static const atm_node *knode(const atm_cuda_kernel *k)
{
	return atm_graph_node(k->g, k->node);
}

static const atm_tensor *tin(const atm_cuda_kernel *k, int i)
{
	return k->wide ? &k->wide[i] : atm_graph_tensor(k->g, knode(k)->in[i]);
}

static const atm_tensor *tout(const atm_cuda_kernel *k, int i)
{
	return k->wide ? &k->wide[knode(k)->n_in + i] : atm_graph_tensor(k->g, knode(k)->out[i]);
}

/* ---------------------------------------------------------------- errors */

static atm_status node_err(const atm_cuda_kernel *k, atm_status code, const char *what,
                           const char *why)
{
	return atm_err(code, "node '%s' (%s) on the GPU: %s: %s", knode(k)->name,
	               atm_op_name(knode(k)->op), what, why);
}

#define DNN_TRY(call, what)                                                        \
	do {                                                                           \
		cudnnStatus_t s_ = (call);                                                 \
		if (s_ != CUDNN_STATUS_SUCCESS)                                            \
			return node_err(k, s_ == CUDNN_STATUS_NOT_SUPPORTED ? ATM_E_UNSUPPORTED \
			                                                    : ATM_E_INTERNAL,   \
			                what, cudnnGetErrorString(s_));                        \
	} while (0)

#define CUDA_TRY(call, what)                                                        \
	do {                                                                            \
		cudaError_t e_ = (call);                                                    \
		if (e_ != cudaSuccess)                                                      \
			return node_err(k, ATM_E_INTERNAL, what, cudaGetErrorString(e_));       \
	} while (0)

#define BLAS_TRY(call, what)                                                        \
	do {                                                                            \
		cublasStatus_t b_ = (call);                                                 \
		if (b_ != CUBLAS_STATUS_SUCCESS)                                            \
			return node_err(k, ATM_E_INTERNAL, what, cublasGetStatusString(b_));    \
	} while (0)

/* ---------------------------------------------------------------- context */

atm_status atm_cuda_ctx_new(atm_cuda_ctx **out, int device)
{
	*out = NULL;
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess) {
		cudaGetLastError();
		return atm_err(ATM_E_UNSUPPORTED, "no usable GPU: %s", cudaGetErrorString(e));
	}
	if (device < 0 || device >= n)
		return atm_err(ATM_E_UNSUPPORTED, "no GPU %d: this machine has %d", device, n);
	atm_cuda_ctx *c = calloc(1, sizeof *c);
	if (!c)
		return atm_err(ATM_E_NOMEM, "out of memory opening the GPU");
	c->device = device;
	atm_status rc;
	const char *what = "selecting the GPU";
	if ((e = cudaSetDevice(device)) != cudaSuccess ||
	    (what = "creating the compute stream",
	     e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess ||
	    (what = "allocating cuBLAS's workspace", e = cudaMalloc(&c->blas_ws, CUBLAS_WORKSPACE)) !=
	        cudaSuccess) {
		cudaGetLastError();
		rc = atm_err(ATM_E_UNSUPPORTED, "GPU %d: %s: %s", device, what, cudaGetErrorString(e));
		goto fail;
	}
	/* handles are kept only once made, so that the clean-up never destroys a stray one */
	cudnnHandle_t dnn = NULL;
	cudnnStatus_t ds = cudnnCreate(&dnn);
	if (ds == CUDNN_STATUS_SUCCESS) {
		c->dnn = dnn;
		ds = cudnnSetStream(c->dnn, c->stream);
	}
	if (ds != CUDNN_STATUS_SUCCESS) {
		rc = atm_err(ATM_E_UNSUPPORTED, "GPU %d: cuDNN: %s", device, cudnnGetErrorString(ds));
		goto fail;
	}
	cublasHandle_t blas = NULL;
	cublasStatus_t bs = cublasCreate(&blas);
	if (bs == CUBLAS_STATUS_SUCCESS) {
		c->blas = blas;
		bs = cublasSetStream(c->blas, c->stream);
	}
	if (bs == CUBLAS_STATUS_SUCCESS)
		bs = cublasSetWorkspace(c->blas, c->blas_ws, CUBLAS_WORKSPACE);
	/* plain float32 products: no TF32, so results agree with the CPU's to float rounding */
	if (bs == CUBLAS_STATUS_SUCCESS)
		bs = cublasSetMathMode(c->blas, CUBLAS_PEDANTIC_MATH);
	if (bs != CUBLAS_STATUS_SUCCESS) {
		rc = atm_err(ATM_E_UNSUPPORTED, "GPU %d: cuBLAS: %s", device, cublasGetStatusString(bs));
		goto fail;
	}
	*out = c;
	return ATM_OK;
fail:
	atm_cuda_ctx_destroy(c);
	return rc;
}

void atm_cuda_ctx_destroy(atm_cuda_ctx *c)
{
	if (!c)
		return;
	if (c->stream)
		cudaStreamSynchronize(c->stream);
	if (c->blas)
		cublasDestroy(c->blas);
	if (c->dnn)
		cudnnDestroy(c->dnn);
	cudaFree(c->blas_ws);
	if (c->stream)
		cudaStreamDestroy(c->stream);
	free(c);
}

cudaStream_t atm_cuda_ctx_stream(const atm_cuda_ctx *c)
{
	return c->stream;
}

void atm_cuda_ctx_versions(const atm_cuda_ctx *c, char *buf, size_t len)
{
	int rt = 0, drv = 0, bv = 0;
	size_t dv = cudnnGetVersion();
	cudaRuntimeGetVersion(&rt);
	cudaDriverGetVersion(&drv);
	cublasGetVersion(c->blas, &bv);
	snprintf(buf, len, "cuda-%d.%d driver-%d.%d cudnn-%zu.%zu.%zu cublas-%d.%d.%d", rt / 1000,
	         rt % 1000 / 10, drv / 1000, drv % 1000 / 10, dv / 10000, dv % 10000 / 100, dv % 100,
	         bv / 10000, bv % 10000 / 100, bv % 100);
}

/* ---------------------------------------------------------------- descriptors */

/* tensor4 -- a dense NCHW descriptor of dims (1 to 4 of them, padded with 1s) */
static cudnnStatus_t tensor4(cudnnTensorDescriptor_t *d, int64_t n, int64_t c, int64_t h, int64_t w)
{
	cudnnStatus_t s = cudnnCreateTensorDescriptor(d);
	if (s != CUDNN_STATUS_SUCCESS)
		return s;
	return cudnnSetTensor4dDescriptor(*d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)n, (int)c, (int)h,
	                                  (int)w);
}

static cudnnStatus_t tensor_of(cudnnTensorDescriptor_t *d, const atm_tensor *t)
{
	int64_t v[4] = {1, 1, 1, 1};
	for (int i = 0; i < t->ndim && i < 4; i++)
		v[i] = t->dims[i];
	return tensor4(d, v[0], v[1], v[2], v[3]);
}

/* algo_name -- cuDNN's algorithms by kind and number */
static const char *algo_name(atm_op op, int id)
{
	static const char *const fwd[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm", "direct",
	                                  "fft", "fft_tiling", "winograd", "winograd_nonfused"};
	static const char *const bwd_data[] = {"algo_0", "algo_1", "fft", "fft_tiling", "winograd",
	                                       "winograd_nonfused"};
	static const char *const bwd_filter[] = {"algo_0", "algo_1", "fft", "algo_3", "winograd",
	                                         "winograd_nonfused", "fft_tiling"};
	if (op == ATM_OP_CONV_FWD && id >= 0 && id < 8)
		return fwd[id];
	if (op == ATM_OP_CONV_BWD_DATA && id >= 0 && id < 6)
		return bwd_data[id];
	if (op == ATM_OP_CONV_BWD_WEIGHTS && id >= 0 && id < 7)
		return bwd_filter[id];
	return "default";
}

/* keep -- an algorithm cuDNN ranked, if it runs, is deterministic and is plain float32 */
static void keep(atm_cuda_kernel *k, int id, cudnnStatus_t st, cudnnDeterminism_t det,
                 cudnnMathType_t math, size_t ws)
{
	if (st != CUDNN_STATUS_SUCCESS || det != CUDNN_DETERMINISTIC ||
	    math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ||
	    k->n_algos >= ATM_CUDA_MAX_ALGOS)
		return;
	for (int i = 0; i < k->n_algos; i++)
		if (k->algos[i].id == id)
			return;
	k->algos[k->n_algos++] = (struct algo){id, (int64_t)ws};
}

/* build_conv -- descriptors and the deterministic algorithms, cuDNN's ranking order */
static atm_status build_conv(atm_cuda_kernel *k)
{
	const atm_node *n = knode(k);
	const atm_attrs *a = &n->attrs;
	const atm_tensor *x, *w, *y;
	k->n_algos = 0;
	if (n->op == ATM_OP_CONV_FWD) {
		x = tin(k, 0), w = tin(k, 1), y = tout(k, 0);
		k->bias = n->n_in > 2;
	} else if (n->op == ATM_OP_CONV_BWD_DATA) {
		y = tin(k, 0), w = tin(k, 1), x = tout(k, 0);
	} else {
		x = tin(k, 0), y = tin(k, 1), w = tout(k, 0);
		k->bias = n->n_out > 1;
	}
	if (x->ndim != 4 || a->pad[0] != a->pad[2] || a->pad[1] != a->pad[3])
		return node_err(k, ATM_E_UNSUPPORTED, "describing the convolution",
		                "cuDNN takes 2-d convolutions with equal padding on both sides");
	DNN_TRY(tensor_of(&k->xd, x), "describing x");
	DNN_TRY(tensor_of(&k->yd, y), "describing y");
	DNN_TRY(cudnnCreateFilterDescriptor(&k->wd), "describing w");
	DNN_TRY(cudnnSetFilter4dDescriptor(k->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, (int)w->dims[0],
	                                   (int)w->dims[1], (int)w->dims[2], (int)w->dims[3]),
	        "describing w");
	DNN_TRY(cudnnCreateConvolutionDescriptor(&k->cd), "describing the convolution");
	DNN_TRY(cudnnSetConvolution2dDescriptor(k->cd, a->pad[0], a->pad[1], a->stride[0] ? a->stride[0] : 1,
	                                        a->stride[1] ? a->stride[1] : 1, 1, 1,
	                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
	        "describing the convolution");
	if (a->groups > 1)
		DNN_TRY(cudnnSetConvolutionGroupCount(k->cd, a->groups), "grouping the channels");
	DNN_TRY(cudnnSetConvolutionMathType(k->cd, CUDNN_FMA_MATH), "choosing float32 math");
	if (k->bias)
		DNN_TRY(tensor4(&k->bd, 1, y->dims[1], 1, 1), "describing the bias");
	cudnnHandle_t h = k->c->dnn;
	int got = 0;
	if (n->op == ATM_OP_CONV_FWD) {
		cudnnConvolutionFwdAlgoPerf_t p[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
		DNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(h, k->xd, k->wd, k->cd, k->yd,
		                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, p),
		        "listing algorithms");
		for (int i = 0; i < got; i++)
			keep(k, p[i].algo, p[i].status, p[i].determinism, p[i].mathType, p[i].memory);
	} else if (n->op == ATM_OP_CONV_BWD_DATA) {
		cudnnConvolutionBwdDataAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
		DNN_TRY(cudnnGetConvolutionBackwardDataAlgorithm_v7(
		            h, k->wd, k->yd, k->cd, k->xd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, p),
		        "listing algorithms");
		for (int i = 0; i < got; i++)
			keep(k, p[i].algo, p[i].status, p[i].determinism, p[i].mathType, p[i].memory);
	} else {
		cudnnConvolutionBwdFilterAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
		DNN_TRY(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
		            h, k->xd, k->yd, k->cd, k->wd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, p),
		        "listing algorithms");
		for (int i = 0; i < got; i++)
			keep(k, p[i].algo, p[i].status, p[i].determinism, p[i].mathType, p[i].memory);
	}
	if (!k->n_algos)
		return node_err(k, ATM_E_UNSUPPORTED, "choosing an algorithm",
		                "cuDNN offers no deterministic float32 algorithm for this shape");
	/* the workspace cuDNN's listing reports can be a guess: ask for each */
	for (int i = 0; i < k->n_algos; i++) {
		size_t ws = 0;
		cudnnStatus_t s;
		if (n->op == ATM_OP_CONV_FWD)
			s = cudnnGetConvolutionForwardWorkspaceSize(h, k->xd, k->wd, k->cd, k->yd,
			                                            k->algos[i].id, &ws);
		else if (n->op == ATM_OP_CONV_BWD_DATA)
			s = cudnnGetConvolutionBackwardDataWorkspaceSize(h, k->wd, k->yd, k->cd, k->xd,
			                                                 k->algos[i].id, &ws);
		else
			s = cudnnGetConvolutionBackwardFilterWorkspaceSize(h, k->xd, k->yd, k->cd, k->wd,
			                                                   k->algos[i].id, &ws);
		if (s == CUDNN_STATUS_SUCCESS && (int64_t)ws > k->algos[i].ws)
			k->algos[i].ws = (int64_t)ws;
	}
	/* the default, index 0 (what a profile's and a plan's algorithm 0 mean), is the first in
	 * cuDNN's ranking whose workspace fits; the others keep their order after it */
	for (int i = 0; i < k->n_algos; i++)
		if (k->algos[i].ws <= ATM_CUDA_DEFAULT_WORKSPACE) {
			struct algo d = k->algos[i];
			memmove(&k->algos[1], &k->algos[0], (size_t)i * sizeof k->algos[0]);
			k->algos[0] = d;
			break;
		}
	k->algo = 0;
	return ATM_OK;
}

/* ws_round -- workspace bytes rounded up to the 256 the runtime aligns buffers to */
static int64_t ws_round(int64_t bytes)
{
	return (bytes + 255) / 256 * 256;
}

/* build_bn -- x as [N, C, S, 1] and the per-channel [1, C, 1, 1] */
static atm_status build_bn(atm_cuda_kernel *k)
{
	const atm_tensor *x = tin(k, 0);
	int64_t s = x->n_elems / (x->dims[0] * x->dims[1]);
	DNN_TRY(tensor4(&k->xd, x->dims[0], x->dims[1], s, 1), "describing x");
	DNN_TRY(tensor4(&k->bnd, 1, x->dims[1], 1, 1), "describing the channels");
	/* the saved inverse standard deviation, in the workspace */
	k->ws_extra = ws_round(x->dims[1] * 4);
	return ATM_OK;
}

/* build_relu -- cuDNN's ReLU on the flat tensor */
static atm_status build_relu(atm_cuda_kernel *k)
{
	const atm_tensor *x = tin(k, 0);
	DNN_TRY(tensor4(&k->xd, 1, 1, 1, x->n_elems), "describing x");
	DNN_TRY(cudnnCreateActivationDescriptor(&k->act), "describing the ReLU");
	DNN_TRY(cudnnSetActivationDescriptor(k->act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0),
	        "describing the ReLU");
	return ATM_OK;
}

/* build_pool -- the window over x's planes */
static atm_status build_pool(atm_cuda_kernel *k)
{
	const atm_node *n = knode(k);
	const atm_attrs *a = &n->attrs;
	bool fwd = n->op == ATM_OP_MAXPOOL_FWD || n->op == ATM_OP_AVGPOOL_FWD;
	const atm_tensor *x = fwd ? tin(k, 0) : tout(k, 0), *y = fwd ? tout(k, 0) : tin(k, 0);
	if (x->ndim != 4)
		return node_err(k, ATM_E_UNSUPPORTED, "describing the pooling", "x is not 4-d");
	for (int i = 0; i < 4; i++)
		if (a->pad[i] >= a->kernel[i % 2])
			return node_err(k, ATM_E_UNSUPPORTED, "describing the pooling",
			                "padding as large as the window leaves windows with no element");
	k->pool = (atm_cu_pool){
		.planes = x->dims[0] * x->dims[1],
		.h = (int32_t)x->dims[2], .w = (int32_t)x->dims[3],
		.oh = (int32_t)y->dims[2], .ow = (int32_t)y->dims[3],
		.kh = a->kernel[0], .kw = a->kernel[1],
		.sh = a->stride[0] ? a->stride[0] : 1, .sw = a->stride[1] ? a->stride[1] : 1,
		.pt = a->pad[0], .pl = a->pad[1], .exclude_pad = a->exclude_pad,
	};
	return ATM_OK;
}

/* build_ip -- rows, outputs and inner size of y[N, O] = x[N, I] w[O, I]^T */
static atm_status build_ip(atm_cuda_kernel *k)
{
	const atm_node *n = knode(k);
	const atm_tensor *w = n->op == ATM_OP_IP_BWD_WEIGHTS ? tout(k, 0) : tin(k, 1);
	const atm_tensor *x = n->op == ATM_OP_IP_BWD_DATA ? tout(k, 0) : tin(k, 0);
	k->rows = x->dims[0];
	k->cols = w->dims[0];
	k->inner = w->dims[1];
	if (k->rows > INT32_MAX || k->cols > INT32_MAX || k->inner > INT32_MAX)
		return node_err(k, ATM_E_UNSUPPORTED, "describing the inner product",
		                "a dimension past cuBLAS's 32-bit sizes");
	return ATM_OK;
}

/* build_matmul -- the GEMM's sizes, each within cuBLAS's 32-bit ints */
static atm_status build_matmul(atm_cuda_kernel *k)
{
	atm_status rc = atm_matmul_dims_of(k->g, knode(k), &k->mm);
	if (rc < 0)
		return rc;
	if (k->mm.batch > INT32_MAX || k->mm.m > INT32_MAX || k->mm.n > INT32_MAX ||
	    k->mm.k > INT32_MAX)
		return node_err(k, ATM_E_UNSUPPORTED, "describing the matmul",
		                "a dimension past cuBLAS's 32-bit sizes");
	return ATM_OK;
}

/* build_reduce -- x as [rows, cols], cols the elements of y */
static atm_status build_reduce(atm_cuda_kernel *k)
{
	k->cols = tout(k, 0)->n_elems;
	k->rows = tin(k, 0)->n_elems / k->cols;
	return ATM_OK;
}

/* build_lead -- input 0 as [rows, cols], cols its last dim */
static atm_status build_lead(atm_cuda_kernel *k)
{
	const atm_tensor *t = tin(k, 0);
	k->cols = t->dims[t->ndim - 1];
	k->rows = t->n_elems / k->cols;
	return ATM_OK;
}

/* build_layer_norm -- the rows; the backward's partial parameter sums in the workspace */
static atm_status build_layer_norm(atm_cuda_kernel *k)
{
	build_lead(k);
	if (knode(k)->op == ATM_OP_LAYER_NORM_BWD)
		k->ws_extra = ws_round(atm_cu_layer_norm_bwd_chunks(k->rows) * 2 * k->cols * 4);
	return ATM_OK;
}

/* build_loss -- a loss's rows; a forward's per-row losses in the workspace */
static atm_status build_loss(atm_cuda_kernel *k)
{
	build_lead(k);
	atm_op op = knode(k)->op;
	if (op == ATM_OP_SOFTMAX_XENT_FWD || op == ATM_OP_TOKEN_XENT_FWD)
		k->ws_extra = ws_round(k->rows * 8);
	return ATM_OK;
}

/* build_permute -- y's dims and, for each, the stride of x's view axis it walks */
static atm_status build_permute(atm_cuda_kernel *k)
{
	const atm_node *n = knode(k);
	int64_t view[ATM_MAX_DIMS], permuted[ATM_MAX_DIMS], vstride[ATM_MAX_DIMS];
	atm_status rc = atm_permute_view(k->g, n, view, permuted);
	if (rc < 0)
		return rc;
	int r = n->attrs.n_perm;
	int64_t stride = 1;
	for (int i = r - 1; i >= 0; i--) {
		vstride[i] = stride;
		stride *= view[i];
	}
	k->perm.ndim = r;
	for (int i = 0; i < r; i++) {
		k->perm.dims[i] = permuted[i];
		k->perm.strides[i] = vstride[n->attrs.perm[i]];
	}
	return ATM_OK;
}

void atm_cuda_kernel_destroy(atm_cuda_kernel *k)
{
	if (!k)
		return;
	if (k->xd)
		cudnnDestroyTensorDescriptor(k->xd);
	if (k->yd)
		cudnnDestroyTensorDescriptor(k->yd);
	if (k->bd)
		cudnnDestroyTensorDescriptor(k->bd);
	if (k->bnd)
		cudnnDestroyTensorDescriptor(k->bnd);
	if (k->wd)
		cudnnDestroyFilterDescriptor(k->wd);
	if (k->cd)
		cudnnDestroyConvolutionDescriptor(k->cd);
	free(k->wide);
	free(k->wide_off);
	free(k->wide_ptr);
	if (k->act)
		cudnnDestroyActivationDescriptor(k->act);
	free(k);
}

int atm_cuda_kernel_n_algos(const atm_cuda_kernel *k)
{
	return k->n_algos;
}

const char *atm_cuda_kernel_algo_name(const atm_cuda_kernel *k, int algo)
{
	if (algo < 0 || algo >= k->n_algos || !k->cd)
		return "default";
	return algo_name(knode(k)->op, k->algos[algo].id);
}

/* own_workspace -- what the op itself uses with algorithm algo, rounded up to 256 bytes */
static int64_t own_workspace(const atm_cuda_kernel *k, int algo)
{
	return ((k->cd ? k->algos[algo].ws : k->ws_extra) + 255) / 256 * 256;
}

int64_t atm_cuda_kernel_algo_workspace(const atm_cuda_kernel *k, int algo)
{
	if (algo < 0 || algo >= k->n_algos)
		return 0;
	return k->wide ? own_workspace(k, algo) + k->wide_bytes
	               : (k->cd ? k->algos[algo].ws : k->ws_extra);
}

int atm_cuda_kernel_algo(const atm_cuda_kernel *k)
{
	return k->algo;
}

atm_status atm_cuda_kernel_set_algo(atm_cuda_kernel *k, int algo)
{
	if (algo < 0 || algo >= k->n_algos)
		return atm_err(ATM_E_USAGE, "node '%s': algorithm %d does not exist (%d are offered)",
		               knode(k)->name, algo, k->n_algos);
	k->algo = algo;
	return ATM_OK;
}

int64_t atm_cuda_kernel_workspace_bytes(const atm_cuda_kernel *k)
{
	return atm_cuda_kernel_algo_workspace(k, k->algo);
}

/* ---------------------------------------------------------------- run */

static atm_status run_conv(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	const atm_node *n = knode(k);
	cudnnHandle_t h = k->c->dnn;
	const float one = 1, zero = 0;
	size_t wsb = (size_t)k->algos[k->algo].ws;
	int id = k->algos[k->algo].id;
	if (n->op == ATM_OP_CONV_FWD) {
		DNN_TRY(cudnnConvolutionForward(h, &one, k->xd, in[0], k->wd, in[1], k->cd,
		                                (cudnnConvolutionFwdAlgo_t)id, ws, wsb, &zero, k->yd,
		                                out[0]),
		        "convolution");
		if (k->bias)
			DNN_TRY(cudnnAddTensor(h, &one, k->bd, in[2], &one, k->yd, out[0]), "adding the bias");
	} else if (n->op == ATM_OP_CONV_BWD_DATA) {
		DNN_TRY(cudnnConvolutionBackwardData(h, &one, k->wd, in[1], k->yd, in[0], k->cd,
		                                     (cudnnConvolutionBwdDataAlgo_t)id, ws, wsb, &zero,
		                                     k->xd, out[0]),
		        "convolution backward data");
	} else {
		DNN_TRY(cudnnConvolutionBackwardFilter(h, &one, k->xd, in[0], k->yd, in[1], k->cd,
		                                       (cudnnConvolutionBwdFilterAlgo_t)id, ws, wsb, &zero,
		                                       k->wd, out[0]),
		        "convolution backward weights");
		if (k->bias)
			DNN_TRY(cudnnConvolutionBackwardBias(h, &one, k->yd, in[1], &zero, k->bd, out[1]),
			        "bias gradient");
	}
	return ATM_OK;
}

static atm_status run_bn(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	const atm_node *n = knode(k);
	cudnnHandle_t h = k->c->dnn;
	cudaStream_t s = k->c->stream;
	const float one = 1, zero = 0;
	double eps = n->attrs.epsilon;
	int64_t ch = tin(k, 0)->dims[1];
	if (n->op == ATM_OP_BN_FWD) {
		/* cuDNN saves the batch mean and the inverse standard deviation; the graph keeps
		 * the biased variance */
		DNN_TRY(cudnnBatchNormalizationForwardTraining(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
		                                               k->xd, in[0], k->xd, out[0], k->bnd, in[1],
		                                               in[2], 1.0, NULL, NULL, eps, out[1], ws),
		        "batch norm");
		CUDA_TRY(atm_cu_inv_to_var(s, ws, out[2], n->attrs.epsilon, ch), "batch norm variance");
		return ATM_OK;
	}
	CUDA_TRY(atm_cu_var_to_inv(s, in[4], ws, n->attrs.epsilon, ch), "batch norm inverse deviation");
	DNN_TRY(cudnnBatchNormalizationBackward(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero,
	                                        k->xd, in[0], k->xd, in[1], k->xd, out[0], k->bnd,
	                                        in[2], out[1], out[2], eps, in[3], ws),
	        "batch norm backward");
	return ATM_OK;
}

static atm_status run_ip(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	const atm_node *n = knode(k);
	cublasHandle_t h = k->c->blas;
	const float one = 1, zero = 0;
	int N = (int)k->rows, O = (int)k->cols, I = (int)k->inner;
	/* row-major X[N, I], W[O, I], Y[N, O] are column-major X^T, W^T, Y^T */
	if (n->op == ATM_OP_IP_FWD) {
		BLAS_TRY(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, O, N, I, &one, in[1], I, in[0], I, &zero,
		                     out[0], O),
		         "inner product");
		CUDA_TRY(atm_cu_add_bias_rows(k->c->stream, out[0], in[2], N, O), "adding the bias");
	} else if (n->op == ATM_OP_IP_BWD_DATA) {
		BLAS_TRY(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, I, N, O, &one, in[1], I, in[0], O, &zero,
		                     out[0], I),
		         "inner product backward data");
	} else {
		BLAS_TRY(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, I, O, N, &one, in[0], I, in[1], O, &zero,
		                     out[0], I),
		         "inner product backward weights");
		CUDA_TRY(atm_cu_sum_rows(k->c->stream, in[1], out[1], N, O), "bias gradient");
	}
	return ATM_OK;
}

/* run_concat -- each part is a 2-d block of the whole: rows are the dims before the axis */
static atm_status run_concat(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	const atm_node *n = knode(k);
	bool cat = n->op == ATM_OP_CONCAT;
	const atm_tensor *whole = cat ? tout(k, 0) : tin(k, 0);
	int axis = n->attrs.axis, parts = cat ? n->n_in : n->n_out;
	int64_t rows = 1;
	for (int d = 0; d < axis; d++)
		rows *= whole->dims[d];
	size_t pitch = (size_t)(whole->bytes / rows), at = 0;
	for (int i = 0; i < parts; i++) {
		const atm_tensor *t = cat ? tin(k, i) : tout(k, i);
		size_t width = (size_t)(t->bytes / rows);
		char *w = cat ? out[0] : in[0];
		void *part = cat ? in[i] : out[i];
		cudaError_t e = cat ? cudaMemcpy2DAsync(w + at, pitch, part, width, width, (size_t)rows,
		                                        cudaMemcpyDefault, k->c->stream)
		                    : cudaMemcpy2DAsync(part, width, w + at, pitch, width, (size_t)rows,
		                                        cudaMemcpyDefault, k->c->stream);
		CUDA_TRY(e, cat ? "concatenating" : "splitting");
		at += width;
	}
	return ATM_OK;
}

/* run_relu_fwd -- cuDNN's ReLU */
static atm_status run_relu_fwd(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	const float one = 1, zero = 0;
	DNN_TRY(cudnnActivationForward(k->c->dnn, k->act, &one, k->xd, in[0], &zero, k->xd, out[0]),
	        "ReLU");
	return ATM_OK;
}

/* run_relu_bwd -- dx = dy where y > 0: y stands for x too, since y > 0 exactly where x > 0 */
static atm_status run_relu_bwd(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	const float one = 1, zero = 0;
	DNN_TRY(cudnnActivationBackward(k->c->dnn, k->act, &one, k->xd, in[0], k->xd, in[1], k->xd,
	                                in[0], &zero, k->xd, out[0]),
	        "ReLU backward");
	return ATM_OK;
}

/* run_maxpool_fwd -- each window's maximum and its argmax */
static atm_status run_maxpool_fwd(atm_cuda_kernel *k, void *const *in, void *const *out,
                                  void *ws)
{
	(void)ws;
	CUDA_TRY(atm_cu_maxpool_fwd(k->c->stream, &k->pool, in[0], out[0], out[1]), "max pooling");
	return ATM_OK;
}

/* run_maxpool_bwd -- dy gathered at the argmax positions */
static atm_status run_maxpool_bwd(atm_cuda_kernel *k, void *const *in, void *const *out,
                                  void *ws)
{
	(void)ws;
	CUDA_TRY(atm_cu_maxpool_bwd(k->c->stream, &k->pool, in[0], in[1], out[0]),
	         "max pooling backward");
	return ATM_OK;
}

/* run_avgpool_fwd -- each window's mean */
static atm_status run_avgpool_fwd(atm_cuda_kernel *k, void *const *in, void *const *out,
                                  void *ws)
{
	(void)ws;
	CUDA_TRY(atm_cu_avgpool_fwd(k->c->stream, &k->pool, in[0], out[0]), "average pooling");
	return ATM_OK;
}

/* run_avgpool_bwd -- dy spread evenly over each window */
static atm_status run_avgpool_bwd(atm_cuda_kernel *k, void *const *in, void *const *out,
                                  void *ws)
{
	(void)ws;
	CUDA_TRY(atm_cu_avgpool_bwd(k->c->stream, &k->pool, in[0], out[0]),
	         "average pooling backward");
	return ATM_OK;
}

/* run_add -- y = a + b */
static atm_status run_add(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	CUDA_TRY(atm_cu_add(k->c->stream, in[0], in[1], out[0], tout(k, 0)->n_elems), "add");
	return ATM_OK;
}

/* build_mul -- mul and mul_bwd: how the broadcast operand lines up with the larger one
 * (bcast.n_kept -1 for a mul of one shape) */
static atm_status build_mul(atm_cuda_kernel *k)
{
	atm_broadcast bc;
	atm_status rc = atm_broadcast_of(k->g, knode(k), &bc);
	if (rc < 0)
		return rc;
	if (knode(k)->op == ATM_OP_MUL && tin(k, 0)->n_elems == tin(k, 1)->n_elems) {
		k->bcast.n_kept = -1;
		return ATM_OK;
	}
	k->bcast.n_kept = bc.n_kept;
	k->bcast.n_rep = bc.n_rep;
	k->bcast.rep_elems = bc.rep_elems;
	for (int i = 0; i < bc.n_kept; i++)
		k->bcast.kept[i] = bc.kept[i], k->bcast.kept_stride[i] = bc.kept_stride[i];
	for (int i = 0; i < bc.n_rep; i++)
		k->bcast.rep[i] = bc.rep[i], k->bcast.rep_stride[i] = bc.rep_stride[i];
	return ATM_OK;
}

/* run_mul -- y = a * b (b broadcast), or db = dy * a summed over b's repeats */
static atm_status run_mul(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	const atm_cu_bcast *bc = k->bcast.n_kept < 0 ? NULL : &k->bcast;
	if (knode(k)->op == ATM_OP_MUL)
		CUDA_TRY(atm_cu_mul(k->c->stream, in[0], in[1], out[0], bc, tout(k, 0)->n_elems),
		         "multiply");
	else
		CUDA_TRY(atm_cu_mul_bwd(k->c->stream, in[0], in[1], out[0], bc, tout(k, 0)->n_elems),
		         "multiply backward");
	return ATM_OK;
}

/* run_rms_norm -- RMS norm over the last dim, forward or backward (rows and cols from
 * build_lead) */
static atm_status run_rms_norm(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	const atm_node *n = knode(k);
	cudaStream_t s = k->c->stream;
	if (n->op == ATM_OP_RMS_NORM_FWD)
		CUDA_TRY(atm_cu_rms_norm_fwd(s, in[0], in[1], out[0], out[1], n->attrs.epsilon, k->rows,
		                             k->cols),
		         "RMS norm");
	else
		CUDA_TRY(atm_cu_rms_norm_bwd(s, in[0], in[1], in[2], in[3], out[0], out[1], k->rows,
		                             k->cols),
		         "RMS norm backward");
	return ATM_OK;
}

/* run_rope -- rotary embeddings, or their backward (rows and cols from build_lead) */
static atm_status run_rope(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	const atm_node *n = knode(k);
	const atm_tensor *x = tin(k, 0);
	CUDA_TRY(atm_cu_rope(k->c->stream, in[0], out[0], n->attrs.theta, n->op == ATM_OP_ROPE_BWD,
	                     k->rows, x->dims[x->ndim - 2], k->cols),
	         "rotary embeddings");
	return ATM_OK;
}

/* run_act -- SiLU, sigmoid, hardswish, hardsigmoid or relu6, forward or backward */
static atm_status run_act(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	atm_op op = knode(k)->op;
	int kind = op == ATM_OP_SILU_FWD || op == ATM_OP_SILU_BWD               ? ATM_CU_SILU
	         : op == ATM_OP_SIGMOID_FWD || op == ATM_OP_SIGMOID_BWD         ? ATM_CU_SIGMOID
	         : op == ATM_OP_HARDSWISH_FWD || op == ATM_OP_HARDSWISH_BWD     ? ATM_CU_HARDSWISH
	         : op == ATM_OP_HARDSIGMOID_FWD || op == ATM_OP_HARDSIGMOID_BWD ? ATM_CU_HARDSIGMOID
	                                                                          : ATM_CU_RELU6;
	int64_t len = tout(k, 0)->n_elems;
	if (knode(k)->n_in == 1)
		CUDA_TRY(atm_cu_act_fwd(k->c->stream, kind, in[0], out[0], len), atm_op_name(op));
	else
		CUDA_TRY(atm_cu_act_bwd(k->c->stream, kind, in[0], in[1], out[0], len), atm_op_name(op));
	return ATM_OK;
}

/* run_softmax_xent -- probabilities and each row's loss, then their mean */
static atm_status run_softmax_xent(atm_cuda_kernel *k, void *const *in, void *const *out,
                                   void *ws)
{
	cudaStream_t s = k->c->stream;
	CUDA_TRY(atm_cu_softmax_xent_rows(s, in[0], in[1], out[0], ws, k->rows, k->cols),
	         "softmax cross-entropy");
	CUDA_TRY(atm_cu_mean_loss(s, ws, out[1], k->rows), "the loss");
	return ATM_OK;
}

/* run_softmax_xent_bwd -- dlogits = (probs - labels) / N */
static atm_status run_softmax_xent_bwd(atm_cuda_kernel *k, void *const *in, void *const *out,
                                       void *ws)
{
	(void)ws;
	CUDA_TRY(atm_cu_softmax_xent_bwd(k->c->stream, in[0], in[1], out[0], k->rows, k->cols),
	         "softmax cross-entropy backward");
	return ATM_OK;
}

/* run_sgd -- w -= lr * dw in place */
static atm_status run_sgd(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)out, (void)ws;
	CUDA_TRY(atm_cu_sgd(k->c->stream, in[0], in[1], knode(k)->attrs.lr, tin(k, 0)->n_elems),
	         "SGD");
	return ATM_OK;
}

/* run_sgd_momentum -- PyTorch's SGD with weight decay and momentum in place */
static atm_status run_sgd_momentum(atm_cuda_kernel *k, void *const *in, void *const *out,
                                   void *ws)
{
	(void)out, (void)ws;
	const atm_node *n = knode(k);
	CUDA_TRY(atm_cu_sgd_momentum(k->c->stream, in[0], in[1], n->n_in > 2 ? in[2] : NULL,
	                             n->attrs.lr, n->attrs.momentum, n->attrs.weight_decay,
	                             tin(k, 0)->n_elems),
	         "SGD with momentum");
	return ATM_OK;
}

/* run_adamw -- PyTorch's AdamW in place, its step counted on the device */
static atm_status (*host_allreduce)(float *const *, const int64_t *, int, int);

void atm_cuda_set_allreduce(atm_status (*fn)(float *const *bufs, const int64_t *counts, int n,
                                             int ranks))
{
	host_allreduce = fn;
}

/* run_allreduce -- the bucket's gradients copied to the host once the stream has made them,
 * averaged over the ranks there (no CUDA-aware MPI needed), copied into their means */
static atm_status run_allreduce(atm_cuda_kernel *k, void *const *in, void *const *out,
                                void *ws)
{
	(void)ws;
	const atm_node *n = knode(k);
	float *bufs[ATM_ALLREDUCE_BUCKET_TENSORS];
	int64_t counts[ATM_ALLREDUCE_BUCKET_TENSORS], total = 0;
	for (int i = 0; i < n->n_in; i++)
		total += tin(k, i)->bytes;
	char *host = malloc((size_t)(total ? total : 1));
	if (!host)
		return node_err(k, ATM_E_NOMEM, "staging the gradients", "out of host memory");
	atm_status rc = ATM_OK;
	cudaError_t e = cudaStreamSynchronize(k->c->stream);
	for (int64_t i = 0, at = 0; i < n->n_in && e == cudaSuccess; at += tin(k, (int)i)->bytes, i++) {
		bufs[i] = (float *)(host + at);
		counts[i] = tin(k, (int)i)->n_elems;
		e = cudaMemcpy(bufs[i], in[i], (size_t)tin(k, (int)i)->bytes, cudaMemcpyDefault);
	}
	if (e == cudaSuccess && host_allreduce)
		rc = host_allreduce(bufs, counts, n->n_in, n->attrs.ranks);
	else if (e == cudaSuccess && n->attrs.ranks > 1)
		rc = node_err(k, ATM_E_UNSUPPORTED, "averaging the gradients", "this process has no "
		              "communicator; an allreduce over several ranks runs under mpirun");
	for (int i = 0; i < n->n_in && e == cudaSuccess && rc == ATM_OK; i++)
		e = cudaMemcpy(out[i], bufs[i], (size_t)tin(k, i)->bytes, cudaMemcpyDefault);
	free(host);
	if (e != cudaSuccess)
		return node_err(k, ATM_E_INTERNAL, "staging the gradients", cudaGetErrorString(e));
	return rc;
}

static atm_status run_adamw(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)out, (void)ws;
	const atm_attrs *a = &knode(k)->attrs;
	atm_cu_adamw_factors f = {.lr = a->lr, .weight_decay = a->weight_decay, .beta1 = a->beta1,
	                  .beta2 = a->beta2, .eps = a->epsilon};
	CUDA_TRY(atm_cu_adamw(k->c->stream, in[0], in[1], in[2], in[3], in[4], &f,
	                      tin(k, 0)->n_elems),
	         "AdamW");
	return ATM_OK;
}

/* run_matmul -- one strided batched GEMM: row-major c = op(a) op(b) is column-major
 * c^T = op(b)^T op(a)^T, and a row-major matrix read as column-major is already its
 * transpose, so b goes first and each keeps its own op; a shared b has stride 0 */
static atm_status run_matmul(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	const atm_node *n = knode(k);
	const atm_matmul_dims *d = &k->mm;
	bool ta = n->attrs.trans_a, tb = n->attrs.trans_b;
	const float scale = n->attrs.scale ? n->attrs.scale : 1.0f, zero = 0;
	int M = (int)d->m, N = (int)d->n, K = (int)d->k;
	BLAS_TRY(cublasSgemmStridedBatched(k->c->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
	                                   ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &scale, in[1],
	                                   tb ? K : N, d->b_batched ? (long long)K * N : 0, in[0],
	                                   ta ? M : K, (long long)M * K, &zero, out[0], N,
	                                   (long long)M * N, (int)d->batch),
	         "matmul");
	if (n->n_in == 3)
		CUDA_TRY(atm_cu_add_bias_rows(k->c->stream, out[0], in[2], d->batch * d->m, d->n),
		         "adding the bias");
	return ATM_OK;
}

/* run_reduce -- y = the sum of x's rows, in row order */
static atm_status run_reduce(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	CUDA_TRY(atm_cu_sum_rows(k->c->stream, in[0], out[0], k->rows, k->cols), "sum");
	return ATM_OK;
}

/* run_layer_norm -- forward: y and each row's mean and variance; backward: dx, dgamma, dbeta */
static atm_status run_layer_norm(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	const atm_node *n = knode(k);
	cudaStream_t s = k->c->stream;
	float eps = n->attrs.epsilon;
	if (n->op == ATM_OP_LAYER_NORM_FWD)
		CUDA_TRY(atm_cu_layer_norm_fwd(s, in[0], in[1], in[2], out[0], out[1], out[2], eps,
		                               k->rows, k->cols),
		         "layer norm");
	else
		CUDA_TRY(atm_cu_layer_norm_bwd(s, in[0], in[1], in[2], in[3], in[4], out[0], out[1],
		                               out[2], ws, eps, k->rows, k->cols),
		         "layer norm backward");
	return ATM_OK;
}

/* run_gelu -- y = gelu(x), or dx = dy * gelu'(x), in the form attrs.tanh names */
static atm_status run_gelu(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	const atm_node *n = knode(k);
	int64_t len = tout(k, 0)->n_elems;
	if (n->op == ATM_OP_GELU_FWD)
		CUDA_TRY(atm_cu_gelu_fwd(k->c->stream, in[0], out[0], n->attrs.tanh, len), "GELU");
	else
		CUDA_TRY(atm_cu_gelu_bwd(k->c->stream, in[0], in[1], out[0], n->attrs.tanh, len),
		         "GELU backward");
	return ATM_OK;
}

/* run_tanh -- y = tanh(x), or dx = dy * (1 - y^2) from the forward output */
static atm_status run_tanh(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	int64_t len = tout(k, 0)->n_elems;
	if (knode(k)->op == ATM_OP_TANH_FWD)
		CUDA_TRY(atm_cu_tanh_fwd(k->c->stream, in[0], out[0], len), "tanh");
	else
		CUDA_TRY(atm_cu_tanh_bwd(k->c->stream, in[0], in[1], out[0], len), "tanh backward");
	return ATM_OK;
}

/* run_softmax -- softmax over each row (causal by attr), or its gradient from y */
static atm_status run_softmax(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	const atm_node *n = knode(k);
	if (n->op == ATM_OP_SOFTMAX_FWD)
		CUDA_TRY(atm_cu_softmax_fwd(k->c->stream, in[0], out[0], n->attrs.causal, k->rows,
		                            k->cols),
		         "softmax");
	else
		CUDA_TRY(atm_cu_softmax_bwd(k->c->stream, in[0], in[1], out[0], k->rows, k->cols),
		         "softmax backward");
	return ATM_OK;
}

/* run_embedding -- y's rows gathered from the table, or dy's rows added into a zeroed
 * dtable in row order; by id, or by position when there are no ids */
static atm_status run_embedding(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	const atm_node *n = knode(k);
	bool fwd = n->op == ATM_OP_EMBEDDING_FWD;
	const atm_tensor *tab = fwd ? tin(k, 0) : tout(k, 0), *y = fwd ? tout(k, 0) : tin(k, 0);
	const int32_t *ids = n->n_in == 2 ? in[1] : NULL;
	int64_t cols = y->dims[y->ndim - 1], rows = y->n_elems / cols, seq = y->dims[y->ndim - 2];
	int64_t table_rows = tab->dims[tab->ndim - 2];
	if (fwd)
		CUDA_TRY(atm_cu_embedding_fwd(k->c->stream, in[0], ids, out[0], seq, table_rows, rows,
		                              cols),
		         "embedding");
	else
		CUDA_TRY(atm_cu_embedding_bwd(k->c->stream, in[0], ids, out[0], seq, table_rows, rows,
		                              cols),
		         "embedding backward");
	return ATM_OK;
}

/* run_permute -- y = x with its axes reordered */
static atm_status run_permute(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	CUDA_TRY(atm_cu_permute(k->c->stream, &k->perm, in[0], out[0]), "permute");
	return ATM_OK;
}

/* run_narrow -- whole and part as rows (the dims before the axis) of their lengths from the
 * axis on: the part is the head of each row of the whole; backward zeroes the rest (a kernel,
 * not cudaMemset, which may not reach a tensor in mapped host memory) */
static atm_status run_narrow(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	const atm_node *n = knode(k);
	bool fwd = n->op == ATM_OP_NARROW_FWD;
	const atm_tensor *whole = fwd ? tin(k, 0) : tout(k, 0), *part = fwd ? tout(k, 0) : tin(k, 0);
	int64_t rows = 1;
	for (int d = 0; d < n->attrs.axis; d++)
		rows *= whole->dims[d];
	int64_t wlen = whole->n_elems / rows, plen = part->n_elems / rows;
	CUDA_TRY(atm_cu_narrow(k->c->stream, in[0], out[0], rows, fwd ? wlen : plen,
	                       fwd ? plen : wlen),
	         fwd ? "narrowing" : "widening the gradient");
	return ATM_OK;
}

/* run_cast -- f32 <-> bf16, as the CPU casts (atm_cu_cast) */
static atm_status run_cast(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	(void)ws;
	CUDA_TRY(atm_cu_cast(k->c->stream, in[0], out[0], (int)atm_dtype_bytes(tin(k, 0)->dtype),
	                     (int)atm_dtype_bytes(tout(k, 0)->dtype), tin(k, 0)->n_elems), "cast");
	return ATM_OK;
}

/* run_token_xent -- forward: log-probabilities and each row's loss, then their mean;
 * backward: dlogits = (exp(logp) - onehot(labels)) / rows */
static atm_status run_token_xent(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws)
{
	cudaStream_t s = k->c->stream;
	if (knode(k)->op == ATM_OP_TOKEN_XENT_BWD) {
		CUDA_TRY(atm_cu_token_xent_bwd(s, in[0], in[1], out[0], k->rows, k->cols),
		         "token cross-entropy backward");
		return ATM_OK;
	}
	CUDA_TRY(atm_cu_token_xent_rows(s, in[0], in[1], out[0], ws, k->rows, k->cols),
	         "token cross-entropy");
	CUDA_TRY(atm_cu_mean_loss(s, ws, out[1], k->rows), "the loss");
	return ATM_OK;
}

/* ---------------------------------------------------------------- the op table */

/* What this backend does for each op: build prepares a node's kernel (descriptors,
 * algorithms, sizes; NULL: nothing to prepare), run enqueues it. An op without run has no
 * GPU kernel. */
struct cuda_op {
	atm_status (*build)(atm_cuda_kernel *k);
	atm_status (*run)(atm_cuda_kernel *k, void *const *in, void *const *out, void *ws);
};

static const struct cuda_op cuda_ops[ATM_N_OPS] = {
	[ATM_OP_CONV_FWD] = {build_conv, run_conv},
	[ATM_OP_CONV_BWD_DATA] = {build_conv, run_conv},
	[ATM_OP_CONV_BWD_WEIGHTS] = {build_conv, run_conv},
	[ATM_OP_IP_FWD] = {build_ip, run_ip},
	[ATM_OP_IP_BWD_DATA] = {build_ip, run_ip},
	[ATM_OP_IP_BWD_WEIGHTS] = {build_ip, run_ip},
	[ATM_OP_RELU_FWD] = {build_relu, run_relu_fwd},
	[ATM_OP_RELU_BWD] = {build_relu, run_relu_bwd},
	[ATM_OP_MAXPOOL_FWD] = {build_pool, run_maxpool_fwd},
	[ATM_OP_MAXPOOL_BWD] = {build_pool, run_maxpool_bwd},
	[ATM_OP_AVGPOOL_FWD] = {build_pool, run_avgpool_fwd},
	[ATM_OP_AVGPOOL_BWD] = {build_pool, run_avgpool_bwd},
	[ATM_OP_BN_FWD] = {build_bn, run_bn},
	[ATM_OP_BN_BWD] = {build_bn, run_bn},
	[ATM_OP_CONCAT] = {NULL, run_concat},
	[ATM_OP_SPLIT] = {NULL, run_concat},
	[ATM_OP_ADD] = {NULL, run_add},
	[ATM_OP_SOFTMAX_XENT_FWD] = {build_loss, run_softmax_xent},
	[ATM_OP_SOFTMAX_XENT_BWD] = {build_lead, run_softmax_xent_bwd},
	[ATM_OP_SGD] = {NULL, run_sgd},
	[ATM_OP_MATMUL] = {build_matmul, run_matmul},
	[ATM_OP_REDUCE_SUM] = {build_reduce, run_reduce},
	[ATM_OP_LAYER_NORM_FWD] = {build_layer_norm, run_layer_norm},
	[ATM_OP_LAYER_NORM_BWD] = {build_layer_norm, run_layer_norm},
	[ATM_OP_GELU_FWD] = {NULL, run_gelu},
	[ATM_OP_GELU_BWD] = {NULL, run_gelu},
	[ATM_OP_TANH_FWD] = {NULL, run_tanh},
	[ATM_OP_TANH_BWD] = {NULL, run_tanh},
	[ATM_OP_SOFTMAX_FWD] = {build_lead, run_softmax},
	[ATM_OP_SOFTMAX_BWD] = {build_lead, run_softmax},
	[ATM_OP_EMBEDDING_FWD] = {NULL, run_embedding},
	[ATM_OP_EMBEDDING_BWD] = {NULL, run_embedding},
	[ATM_OP_PERMUTE] = {build_permute, run_permute},
	[ATM_OP_NARROW_FWD] = {NULL, run_narrow},
	[ATM_OP_NARROW_BWD] = {NULL, run_narrow},
	[ATM_OP_TOKEN_XENT_FWD] = {build_loss, run_token_xent},
	[ATM_OP_TOKEN_XENT_BWD] = {build_loss, run_token_xent},
	[ATM_OP_SILU_FWD] = {NULL, run_act},
	[ATM_OP_SILU_BWD] = {NULL, run_act},
	[ATM_OP_MUL] = {build_mul, run_mul},
	[ATM_OP_MUL_BWD] = {build_mul, run_mul},
	[ATM_OP_RMS_NORM_FWD] = {build_lead, run_rms_norm},
	[ATM_OP_RMS_NORM_BWD] = {build_lead, run_rms_norm},
	[ATM_OP_ROPE_FWD] = {build_lead, run_rope},
	[ATM_OP_ROPE_BWD] = {build_lead, run_rope},
	[ATM_OP_SIGMOID_FWD] = {NULL, run_act},
	[ATM_OP_SIGMOID_BWD] = {NULL, run_act},
	[ATM_OP_HARDSWISH_FWD] = {NULL, run_act},
	[ATM_OP_HARDSWISH_BWD] = {NULL, run_act},
	[ATM_OP_HARDSIGMOID_FWD] = {NULL, run_act},
	[ATM_OP_HARDSIGMOID_BWD] = {NULL, run_act},
	[ATM_OP_RELU6_FWD] = {NULL, run_act},
	[ATM_OP_RELU6_BWD] = {NULL, run_act},
	[ATM_OP_SGD_MOMENTUM] = {NULL, run_sgd_momentum},
	[ATM_OP_ADAMW] = {NULL, run_adamw},
	[ATM_OP_ALLREDUCE] = {NULL, run_allreduce},
	[ATM_OP_CAST] = {NULL, run_cast},
};

/* atm_cuda_supports -- op has an entry with a run */
bool atm_cuda_supports(atm_op op)
{
	return (unsigned)op < ATM_N_OPS && cuda_ops[op].run;
}

/* widen -- k's operands as f32 for its build and run, each bf16 one with a copy in the
 * workspace: the GPU kernels other than cast read and write f32, so a bf16 node runs on
 * widened copies and rounds its bf16 outputs once, as the CPU's widened kernels do */
static atm_status widen(atm_cuda_kernel *k)
{
	const atm_node *n = knode(k);
	int ops = n->n_in + n->n_out;
	k->wide = malloc((size_t)ops * sizeof *k->wide);
	k->wide_off = malloc((size_t)ops * sizeof *k->wide_off);
	k->wide_ptr = malloc((size_t)ops * sizeof *k->wide_ptr);
	if (!k->wide || !k->wide_off || !k->wide_ptr)
		return atm_err(ATM_E_NOMEM, "node '%s': out of memory widening its bf16 operands",
		               n->name);
	for (int i = 0; i < ops; i++) {
		k->wide[i] = *atm_graph_tensor(k->g, i < n->n_in ? n->in[i] : n->out[i - n->n_in]);
		k->wide_off[i] = -1;
		if (k->wide[i].dtype != ATM_BF16)
			continue;
		k->wide[i].dtype = ATM_F32;
		k->wide[i].bytes = k->wide[i].n_elems * (int64_t)sizeof(float);
		k->wide_off[i] = k->wide_bytes;
		k->wide_bytes += (k->wide[i].bytes + 255) / 256 * 256;
	}
	return ATM_OK;
}

/* atm_cuda_kernel_new -- the node's kernel, prepared by its op's build */
atm_status atm_cuda_kernel_new(atm_cuda_kernel **out, atm_cuda_ctx *c, const atm_graph *g,
                               int32_t node)
{
	*out = NULL;
	const atm_node *n = atm_graph_node(g, node);
	if (!n)
		return atm_err(ATM_E_USAGE, "atm_cuda_kernel_new: node %d is out of range (graph '%s' "
		               "has %d nodes)", node, atm_graph_name(g), atm_graph_n_nodes(g));
	atm_cuda_kernel *k = calloc(1, sizeof *k);
	if (!k)
		return atm_err(ATM_E_NOMEM, "out of memory building node '%s' for the GPU", n->name);
	k->c = c;
	k->g = g;
	k->node = node;
	k->n_algos = 1;
	atm_status rc = ATM_OK;
	if (!atm_cuda_supports(n->op))
		rc = atm_err(ATM_E_UNSUPPORTED, "node '%s': op %s has no GPU kernel", n->name,
		             atm_op_name(n->op));
	else if (atm_node_runs_bf16(g, node))
		rc = widen(k);
	if (rc == ATM_OK && cuda_ops[n->op].build)
		rc = cuda_ops[n->op].build(k);
	if (rc < 0) {
		atm_cuda_kernel_destroy(k);
		return rc;
	}
	*out = k;
	return ATM_OK;
}

atm_status atm_cuda_kernel_run(atm_cuda_kernel *k, void *const *in, void *const *out,
                               void *workspace)
{
	const atm_node *n = knode(k);
	for (int i = 0; i < n->n_in; i++)
		if (!in[i])
			return node_err(k, ATM_E_USAGE, "running", "an input has no buffer");
	for (int i = 0; i < n->n_out; i++)
		if (!out[i])
			return node_err(k, ATM_E_USAGE, "running", "an output has no buffer");
	if (atm_cuda_kernel_workspace_bytes(k) > 0 && !workspace)
		return node_err(k, ATM_E_USAGE, "running", "the workspace is missing");
	if (!k->wide)
		return cuda_ops[n->op].run(k, in, out, workspace);
	/* the bf16 operands' f32 copies in their place, on the same stream: inputs widened before,
	 * outputs narrowed after */
	char *copies = (char *)workspace + own_workspace(k, k->algo);
	for (int i = 0; i < n->n_in + n->n_out; i++) {
		void *p = i < n->n_in ? in[i] : out[i - n->n_in];
		k->wide_ptr[i] = k->wide_off[i] < 0 ? p : copies + k->wide_off[i];
		if (k->wide_off[i] >= 0 && i < n->n_in)
			CUDA_TRY(atm_cu_cast(k->c->stream, p, k->wide_ptr[i], 2, 4, k->wide[i].n_elems),
			         "widening a bf16 input");
	}
	atm_status rc = cuda_ops[n->op].run(k, k->wide_ptr, k->wide_ptr + n->n_in, workspace);
	for (int i = n->n_in; rc == ATM_OK && i < n->n_in + n->n_out; i++)
		if (k->wide_off[i] >= 0)
			CUDA_TRY(atm_cu_cast(k->c->stream, k->wide_ptr[i], out[i - n->n_in], 4, 2,
			                     k->wide[i].n_elems), "narrowing a bf16 output");
	return rc;
}
