/* test_cuda_kernels.c -- every GPU kernel against the CPU's on the same inputs (CNNs and transformers), every convolution algorithm, bitwise repeatable; skipped (77) without a GPU */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "atm_zoo.h"
#include "cuda_kernels.h"
#include "data.h"
#include "kernels.h"

/* relative L2 error the GPU may have against the CPU: float32 sums in other orders */
#define TOLERANCE 1e-4
/* and on bf16 outputs: both round f32 results to bf16 (2^-8 apart), which other sums' orders,
 * or oneDNN's bf16 kernels on the CPU, put on the other side of a rounding now and then */
#define BF16_TOLERANCE 1e-2

static atm_cuda_ctx *ctx;
static atm_cpu *cpu;

/* host -- zeroed host memory, 64-byte aligned as the CPU kernels want */
static void *host_buf(int64_t bytes)
{
	size_t n = (size_t)(bytes + 63) / 64 * 64;
	void *p = aligned_alloc(64, n ? n : 64);
	assert_non_null(p);
	memset(p, 0, n ? n : 64);
	return p;
}

static void *dev(int64_t bytes)
{
	void *p = NULL;
	assert_int_equal(cudaMalloc(&p, (size_t)(bytes > 0 ? bytes : 256)), cudaSuccess);
	return p;
}

/* Operands of one node on both sides: host copies for the CPU, device copies for the GPU. */
struct io {
	int n;
	void **host, **devp, **gpu_out; /* gpu_out: outputs copied back */
};

/* make_argmax -- the max-pooling forward of t's producer on each side from the same x */
static void make_argmax(const atm_graph *g, int32_t t, void *host, void *devbuf, uint64_t seed)
{
	int32_t pk = atm_graph_producer(g, t);
	assert_true(pk >= 0 && atm_graph_node(g, pk)->op == ATM_OP_MAXPOOL_FWD);
	const atm_node *p = atm_graph_node(g, pk);
	const atm_tensor *x = atm_graph_tensor(g, p->in[0]), *y = atm_graph_tensor(g, p->out[0]);
	float *hx = host_buf(x->bytes), *hy = host_buf(y->bytes);
	atm_bk_fill_positive(hx, x->n_elems, seed);
	atm_kernel *ck = NULL;
	assert_int_equal(atm_kernel_new(&ck, cpu, g, pk), ATM_OK);
	void *scratch = host_buf(atm_kernel_scratch_bytes(ck));
	void *in[1] = {hx}, *out[2] = {hy, host};
	if (atm_kernel_run(ck, in, out, scratch) < 0)
		fail_msg("%s", atm_errmsg());
	free(scratch);
	atm_kernel_destroy(ck);
	atm_cuda_kernel *gk = NULL;
	assert_int_equal(atm_cuda_kernel_new(&gk, ctx, g, pk), ATM_OK);
	void *dx = dev(x->bytes), *dy = dev(y->bytes);
	assert_int_equal(cudaMemcpy(dx, hx, (size_t)x->bytes, cudaMemcpyHostToDevice), cudaSuccess);
	assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
	void *gin[1] = {dx}, *gout[2] = {dy, devbuf};
	assert_int_equal(atm_cuda_kernel_run(gk, gin, gout, NULL), ATM_OK);
	assert_int_equal(cudaStreamSynchronize(atm_cuda_ctx_stream(ctx)), cudaSuccess);
	atm_cuda_kernel_destroy(gk);
	cudaFree(dx);
	cudaFree(dy);
	free(hx);
	free(hy);
}

/* fill_tokens -- n ids below limit from stream seed, the same on both sides */
static void fill_tokens(int32_t *ids, int64_t n, int64_t limit, uint64_t seed)
{
	for (int64_t i = 0; i < n; i++)
		ids[i] = (int32_t)(atm_bk_mix(&seed) % (uint64_t)limit);
}

/* rel_err -- ||a - b|| / ||b|| over n floats (NaN anywhere: infinity) */
static double rel_err(const float *a, const float *b, int64_t n)
{
	double num = 0, den = 0;
	for (int64_t i = 0; i < n; i++) {
		if (isnan(a[i]) || isnan(b[i]))
			return INFINITY;
		num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		den += (double)b[i] * b[i];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* to_bf16, from_bf16 -- n values rounded to bf16 (nearest even; the fills are finite), and
 * widened back */
static void to_bf16(const float *x, uint16_t *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &x[i], sizeof u);
		y[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
	}
}

static float *from_bf16(const void *x, int64_t n)
{
	const uint16_t *h = x;
	float *y = host_buf(n * 4);
	for (int64_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)h[i] << 16;
		memcpy(&y[i], &u, sizeof u);
	}
	return y;
}

/* fill_input -- input t's values on the host and the device: an argmax its pooling made,
 * token ids and labels below their table's rows or their classes, positive values else (bf16
 * ones rounded) */
static void fill_input(const atm_graph *g, int32_t t, void *host, void *devp)
{
	const atm_tensor *x = atm_graph_tensor(g, t);
	uint64_t seed = 1000003u * (uint64_t)t + 7;
	if (x->dtype == ATM_I32 && atm_tensor_token_limit(g, t) == 0) {
		make_argmax(g, t, host, devp, seed);
		return;
	}
	if (x->dtype == ATM_I32) {
		fill_tokens(host, x->n_elems, atm_tensor_token_limit(g, t), seed);
	} else if (x->dtype == ATM_BF16) {
		float *f = host_buf(x->n_elems * 4);
		atm_bk_fill_positive(f, x->n_elems, seed);
		to_bf16(f, host, x->n_elems);
		free(f);
	} else {
		atm_bk_fill_positive(host, x->n_elems, seed);
	}
	assert_int_equal(cudaMemcpy(devp, host, (size_t)x->bytes, cudaMemcpyHostToDevice),
	                 cudaSuccess);
}

/* check_node -- node k on the CPU and the GPU (every algorithm), outputs compared (bf16 ones
 * widened), each GPU run repeated bitwise; returns the algorithms checked */
static int check_node(const atm_graph *g, int32_t k)
{
	const atm_node *n = atm_graph_node(g, k);
	int ops = n->n_in + n->n_out;
	void **host = calloc((size_t)ops, sizeof *host), **devp = calloc((size_t)ops, sizeof *devp);
	assert_non_null(host);
	assert_non_null(devp);
	for (int i = 0; i < ops; i++) {
		int32_t t = i < n->n_in ? n->in[i] : n->out[i - n->n_in];
		const atm_tensor *x = atm_graph_tensor(g, t);
		host[i] = host_buf(x->bytes);
		devp[i] = dev(x->bytes);
		if (i < n->n_in)
			fill_input(g, t, host[i], devp[i]);
	}
	/* the CPU's answer; an update writes inputs in place (SGD its parameter, AdamW its states
	 * too), so each side starts from a copy of them */
	void *start[8] = {0};
	for (int i = 0; i < n->n_in && i < 8; i++)
		if (atm_op_writes_input(n->op, i)) {
			int64_t b = atm_graph_tensor(g, n->in[i])->bytes;
			start[i] = host_buf(b);
			memcpy(start[i], host[i], (size_t)b);
		}
	atm_kernel *ck = NULL;
	assert_int_equal(atm_kernel_new(&ck, cpu, g, k), ATM_OK);
	void *scratch = host_buf(atm_kernel_scratch_bytes(ck));
	if (atm_kernel_run(ck, host, host + n->n_in, scratch) < 0)
		fail_msg("%s", atm_errmsg());
	free(scratch);
	atm_kernel_destroy(ck);

	atm_cuda_kernel *gk = NULL;
	if (atm_cuda_kernel_new(&gk, ctx, g, k) < 0)
		fail_msg("%s", atm_errmsg());
	int n_algos = atm_cuda_kernel_n_algos(gk);
	assert_true(n_algos >= 1);
	for (int a = 0; a < n_algos; a++) {
		assert_int_equal(atm_cuda_kernel_set_algo(gk, a), ATM_OK);
		int64_t wsb = atm_cuda_kernel_workspace_bytes(gk);
		if (wsb > ((int64_t)1 << 30))
			continue; /* an algorithm no plan would give that much room */
		void *ws = wsb ? dev(wsb) : NULL;
		void *first[8] = {0};
		for (int rep = 0; rep < 2; rep++) {
			for (int i = 0; i < n->n_in && i < 8; i++)
				if (start[i])
					assert_int_equal(cudaMemcpy(devp[i], start[i],
					                            (size_t)atm_graph_tensor(g, n->in[i])->bytes,
					                            cudaMemcpyHostToDevice), cudaSuccess);
			/* poison: an output element the kernel does not write fails the comparison */
			for (int i = n->n_in; i < ops; i++)
				assert_int_equal(cudaMemset(devp[i], 0xff,
				                            (size_t)atm_graph_tensor(g, n->out[i - n->n_in])->bytes),
				                 cudaSuccess);
			/* cudaMemcpy and cudaMemset run on the default stream, which the kernels'
			 * non-blocking stream does not wait for */
			assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
			if (atm_cuda_kernel_run(gk, devp, devp + n->n_in, ws) < 0)
				fail_msg("%s", atm_errmsg());
			cudaError_t e = cudaStreamSynchronize(atm_cuda_ctx_stream(ctx));
			if (e != cudaSuccess)
				fail_msg("node '%s' (%s): %s", n->name, atm_op_name(n->op), cudaGetErrorString(e));
			/* compare what the node writes: its outputs, and the inputs it updates */
			int lo = atm_op_is_inplace(n->op) ? 0 : n->n_in, hi = ops;
			for (int i = lo; i < hi && i - lo < 8; i++) {
				if (i < n->n_in && !atm_op_writes_input(n->op, i))
					continue;
				int32_t t = i < n->n_in ? n->in[i] : n->out[i - n->n_in];
				const atm_tensor *x = atm_graph_tensor(g, t);
				void *got = malloc((size_t)x->bytes);
				assert_int_equal(cudaMemcpy(got, devp[i], (size_t)x->bytes, cudaMemcpyDeviceToHost),
				                 cudaSuccess);
				if (rep == 0) {
					first[i - lo] = got;
					/* argmax encodings differ by design; the backward's dx is compared */
					if (x->dtype == ATM_I32)
						continue;
					bool half = x->dtype == ATM_BF16;
					float *wg = half ? from_bf16(got, x->n_elems) : got,
					      *wc = half ? from_bf16(host[i], x->n_elems) : host[i];
					double err = rel_err(wg, wc, x->n_elems);
					if (half) {
						free(wg);
						free(wc);
					}
					if (!(err < (half ? BF16_TOLERANCE : TOLERANCE)))
						fail_msg("node '%s' (%s), algorithm %s: '%s' differs from the CPU by %g",
						         n->name, atm_op_name(n->op), atm_cuda_kernel_algo_name(gk, a),
						         x->name, err);
				} else {
					if (memcmp(got, first[i - lo], (size_t)x->bytes))
						fail_msg("node '%s' (%s), algorithm %s: '%s' is not bitwise repeatable",
						         n->name, atm_op_name(n->op), atm_cuda_kernel_algo_name(gk, a),
						         x->name);
					free(got);
					free(first[i - lo]);
				}
			}
		}
		cudaFree(ws);
	}
	atm_cuda_kernel_destroy(gk);
	for (int i = 0; i < ops; i++) {
		free(host[i]);
		cudaFree(devp[i]);
	}
	free(host);
	free(devp);
	for (int i = 0; i < 8; i++)
		free(start[i]);
	return n_algos;
}

/* check_network -- every node of a zoo network, its step ending in update u (NULL: SGD); every
 * op it has is seen */
static void check_network_with(const char *model, int64_t batch, int64_t image,
                               const atm_update *u, bool bf16)
{
	atm_graph *g = NULL;
	atm_zoo_opts o = {.batch = batch, .image = image, .bf16 = bf16};
	assert_int_equal(atm_zoo_build(&g, model, &o), ATM_OK);
	if (u) {
		atm_graph *c = NULL;
		assert_int_equal(atm_graph_with_update(g, u, &c), ATM_OK);
		atm_graph_destroy(g);
		g = c;
	}
	int algos = 0;
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++)
		algos += check_node(g, k);
	assert_true(algos >= atm_graph_n_nodes(g));
	printf("  %s%s%s%s: %d nodes, %d kernel/algorithm pairs agree with the CPU\n", model,
	       bf16 ? " in bf16" : "", u ? " with " : "", u ? atm_update_kind_name(u->kind) : "",
	       atm_graph_n_nodes(g), algos);
	atm_graph_destroy(g);
}

static void check_network(const char *model, int64_t batch, int64_t image)
{
	check_network_with(model, batch, image, NULL, false);
}

static void test_cuda_kernels_tiny_cnn(void **state)
{
	(void)state;
	check_network("tiny_cnn", 4, 0);
}

static void test_cuda_kernels_tiny_mlp(void **state)
{
	(void)state;
	check_network("tiny_mlp", 4, 0);
}

static void test_cuda_kernels_inception_v4(void **state)
{
	(void)state;
	/* asymmetric 1x7 and 7x1 convolutions, valid pooling, concatenations of four branches */
	check_network("inception_v4", 1, 75);
}

static void test_cuda_kernels_densenet121(void **state)
{
	(void)state;
	check_network("densenet121", 1, 32);
}

/* the transformer ops: matmuls (attention's batched ones, transposed and scaled; linear layers
 * over [batch, seq, C] with a bias; weight gradients folding the rows), layer norm, GELU,
 * softmax (causal in GPT), embeddings by id and by position, permutes, token losses */
static void test_cuda_kernels_tiny_gpt(void **state)
{
	(void)state;
	check_network("tiny_gpt", 2, 0);
}

static void test_cuda_kernels_tiny_bert(void **state)
{
	(void)state;
	/* post-norm, tanh pooler over the first token (narrow), two losses */
	check_network("tiny_bert", 2, 0);
}

static void test_cuda_kernels_tiny_vit(void **state)
{
	(void)state;
	/* patches by a strided convolution and a permute, the class token and the positions as
	 * position embeddings, the head on the class token (narrow) */
	check_network("tiny_vit", 2, 0);
}

static void test_cuda_kernels_tiny_se(void **state)
{
	(void)state;
	/* SiLU forward and backward, a per-channel scale (mul broadcast over H and W, mul_bwd
	 * summing its gradient) and a gate of one shape */
	check_network("tiny_se", 2, 0);
}

static void test_cuda_kernels_tiny_llama(void **state)
{
	(void)state;
	/* RMS norms, rotary embeddings on q and k, key/value heads repeated by a concat, the
	 * causal softmax, a SwiGLU MLP, an untied output projection */
	check_network("tiny_llama", 2, 0);
}

static void test_cuda_kernels_optimizers(void **state)
{
	(void)state;
	/* SGD with weight decay alone, with momentum, and AdamW: the parameter and every state
	 * they update compared with the CPU's */
	atm_update sgd = atm_update_defaults(ATM_UPDATE_SGD);
	atm_update mom = atm_update_defaults(ATM_UPDATE_MOMENTUM);
	atm_update adamw = atm_update_defaults(ATM_UPDATE_ADAMW);
	sgd.weight_decay = 1e-2f;
	mom.weight_decay = 1e-4f;
	check_network_with("tiny_mlp", 4, 0, &sgd, false);
	check_network_with("tiny_mlp", 4, 0, &mom, false);
	check_network_with("tiny_llama", 2, 0, &adamw, false);
}

/* gpu_run -- node k of g on the GPU from host inputs in; its outputs copied back into
 * out (host buffers of the tensors' sizes) */
static void gpu_run(const atm_graph *g, int32_t k, void *const *in, void *const *out)
{
	const atm_node *n = atm_graph_node(g, k);
	void *devp[8] = {0};
	assert_true(n->n_in + n->n_out <= 8);
	for (int i = 0; i < n->n_in + n->n_out; i++) {
		const atm_tensor *x = atm_graph_tensor(g, i < n->n_in ? n->in[i] : n->out[i - n->n_in]);
		devp[i] = dev(x->bytes);
		if (i < n->n_in)
			assert_int_equal(cudaMemcpy(devp[i], in[i], (size_t)x->bytes, cudaMemcpyHostToDevice),
			                 cudaSuccess);
	}
	atm_cuda_kernel *gk = NULL;
	assert_int_equal(atm_cuda_kernel_new(&gk, ctx, g, k), ATM_OK);
	int64_t wsb = atm_cuda_kernel_workspace_bytes(gk);
	void *ws = wsb ? dev(wsb) : NULL;
	assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
	assert_int_equal(atm_cuda_kernel_run(gk, devp, devp + n->n_in, ws), ATM_OK);
	assert_int_equal(cudaStreamSynchronize(atm_cuda_ctx_stream(ctx)), cudaSuccess);
	for (int i = 0; i < n->n_out; i++)
		assert_int_equal(cudaMemcpy(out[i], devp[n->n_in + i],
		                            (size_t)atm_graph_tensor(g, n->out[i])->bytes,
		                            cudaMemcpyDeviceToHost),
		                 cudaSuccess);
	atm_cuda_kernel_destroy(gk);
	cudaFree(ws);
	for (int i = 0; i < n->n_in + n->n_out; i++)
		cudaFree(devp[i]);
}

/* test_cuda_kernels_bad_token_is_nan -- an id past the table or a label past the classes,
 * which the CPU refuses, makes what it touches NaN on the GPU (no read outside the table):
 * the embedding's row and the whole table gradient, the loss and the label's gradient row */
static void test_cuda_kernels_bad_token_is_nan(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	atm_zoo_opts o = {.batch = 1};
	assert_int_equal(atm_zoo_build(&g, "tiny_gpt", &o), ATM_OK);
	int seen = 0;
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		const atm_node *n = atm_graph_node(g, k);
		bool emb = (n->op == ATM_OP_EMBEDDING_FWD || n->op == ATM_OP_EMBEDDING_BWD) &&
		           n->n_in == 2;
		if (!emb && n->op != ATM_OP_TOKEN_XENT_FWD && n->op != ATM_OP_TOKEN_XENT_BWD)
			continue;
		const atm_tensor *x = atm_graph_tensor(g, n->in[0]), *ids = atm_graph_tensor(g, n->in[1]);
		const atm_tensor *y = atm_graph_tensor(g, n->out[0]);
		float *hx = host_buf(x->bytes);
		int32_t *hids = host_buf(ids->bytes);
		void *out[2] = {host_buf(y->bytes), n->n_out > 1 ? host_buf(4) : NULL};
		atm_bk_fill_positive(hx, x->n_elems, 11);
		fill_tokens(hids, ids->n_elems, atm_tensor_token_limit(g, n->in[1]), 13);
		hids[1] = (int32_t)atm_tensor_token_limit(g, n->in[1]); /* row 1: one past the end */
		gpu_run(g, k, (void *[]){hx, hids}, out);
		const float *got = out[0];
		int64_t cols = y->dims[y->ndim - 1];
		if (n->op == ATM_OP_EMBEDDING_BWD) {
			for (int64_t i = 0; i < y->n_elems; i++)
				assert_true(isnan(got[i]));
		} else {
			/* y or the gradient: row 1 NaN, the others not */
			for (int64_t i = 0; i < y->n_elems; i++)
				assert_int_equal(!!isnan(got[i]),
				                 n->op != ATM_OP_TOKEN_XENT_FWD && i / cols == 1);
		}
		if (n->op == ATM_OP_TOKEN_XENT_FWD)
			assert_true(isnan(*(float *)out[1]));
		free(out[1]);
		free(out[0]);
		free(hids);
		free(hx);
		seen |= 1 << (n->op == ATM_OP_EMBEDDING_FWD ? 0 : n->op == ATM_OP_EMBEDDING_BWD ? 1
		              : n->op == ATM_OP_TOKEN_XENT_FWD ? 2 : 3);
	}
	assert_int_equal(seen, 15);
	atm_graph_destroy(g);
}

/* test_cuda_kernels_cast -- f32 -> bf16 -> f32 and a copy on the GPU give the CPU's bits: every
 * f32 bit pattern's neighbourhood of ties, infinities and NaN among random values */
static void test_cuda_kernels_cast(void **state)
{
	(void)state;
	enum { N = 4096 };
	atm_graph *g = NULL;
	int32_t x, h, y, z, nodes[3];
	assert_int_equal(atm_graph_new(&g, "cast"), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "x", ATM_F32, 1, (int64_t[]){N}, ATM_KIND_INPUT,
	                                      ATM_LOC_ANY, &x), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "h", ATM_BF16, 1, (int64_t[]){N},
	                                      ATM_KIND_ACTIVATION, ATM_LOC_ANY, &h), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "y", ATM_F32, 1, (int64_t[]){N},
	                                      ATM_KIND_ACTIVATION, ATM_LOC_ANY, &y), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "z", ATM_F32, 1, (int64_t[]){N},
	                                      ATM_KIND_ACTIVATION, ATM_LOC_ANY, &z), ATM_OK);
	assert_int_equal(atm_graph_add_node(g, "down", ATM_OP_CAST, NULL, 1, &x, 1, &h, &nodes[0]),
	                 ATM_OK);
	assert_int_equal(atm_graph_add_node(g, "up", ATM_OP_CAST, NULL, 1, &h, 1, &y, &nodes[1]),
	                 ATM_OK);
	assert_int_equal(atm_graph_add_node(g, "same", ATM_OP_CAST, NULL, 1, &y, 1, &z, &nodes[2]),
	                 ATM_OK);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	uint32_t *in = host_buf(N * 4);
	uint64_t s = 88172645463325252ull;
	for (int i = 0; i < N; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		in[i] = (uint32_t)s;
		if (i % 4 == 1) /* ties and their neighbours */
			in[i] = (in[i] & 0xffff0000u) | (0x8000u + (uint32_t)(i % 3) - 1);
	}
	in[0] = 0x7f800000u, in[4] = 0xff800000u, in[8] = 0x7fc00001u, in[12] = 0x7f7fffffu;
	void *cpu_in[3] = {in, host_buf(N * 2), host_buf(N * 4)}, *gpu_out[3];
	for (int k = 0; k < 3; k++) {
		atm_kernel *ck = NULL;
		void *cpu_out = k == 0 ? cpu_in[1] : k == 1 ? cpu_in[2] : host_buf(N * 4);
		gpu_out[k] = host_buf(k == 0 ? N * 2 : N * 4);
		assert_int_equal(atm_kernel_new(&ck, cpu, g, nodes[k]), ATM_OK);
		assert_int_equal(atm_kernel_run(ck, &cpu_in[k], &cpu_out, NULL), ATM_OK);
		atm_kernel_destroy(ck);
		gpu_run(g, nodes[k], &cpu_in[k], &gpu_out[k]);
		if (memcmp(cpu_out, gpu_out[k], k == 0 ? N * 2 : N * 4))
			fail_msg("cast node '%s': the GPU's bits differ from the CPU's",
			         atm_graph_node(g, nodes[k])->name);
		if (k == 2)
			free(cpu_out);
	}
	for (int k = 0; k < 3; k++)
		free(gpu_out[k]), free(cpu_in[k]);
	atm_graph_destroy(g);
}

/* test_cuda_kernels_bf16 -- networks in bf16 mixed precision: every node on bf16 operands (the
 * GPU's run widened to f32, rounded once) within bf16's rounding of the CPU's */
static void test_cuda_kernels_bf16(void **state)
{
	(void)state;
	check_network_with("tiny_cnn", 4, 0, NULL, true);
	check_network_with("tiny_llama", 2, 0, NULL, true);
}

static void test_cuda_kernels_bad_device(void **state)
{
	(void)state;
	atm_cuda_ctx *c = (atm_cuda_ctx *)1;
	assert_int_equal(atm_cuda_ctx_new(&c, 4096), ATM_E_UNSUPPORTED);
	assert_null(c);
	assert_non_null(strstr(atm_errmsg(), "no GPU 4096"));
}

/* test_cuda_kernels_every_op_has_a_kernel -- the GPU backend runs every op: the op table of
 * cuda_kernels.c has an entry for each */
static void test_cuda_kernels_every_op_has_a_kernel(void **state)
{
	(void)state;
	for (int op = 0; op < ATM_N_OPS; op++)
		if (!atm_cuda_supports((atm_op)op))
			fail_msg("op %s has no GPU kernel (runtime/cuda/cuda_kernels.c)",
			         atm_op_name((atm_op)op));
	assert_false(atm_cuda_supports(ATM_N_OPS));
}

int main(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		printf("skipped: no CUDA device\n");
		return 77;
	}
	if (atm_cuda_ctx_new(&ctx, 0) < 0 || atm_cpu_new(&cpu) < 0) {
		printf("cannot open the GPU or the CPU: %s\n", atm_errmsg());
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cuda_kernels_every_op_has_a_kernel),
		cmocka_unit_test(test_cuda_kernels_bad_device),
		cmocka_unit_test(test_cuda_kernels_tiny_mlp),
		cmocka_unit_test(test_cuda_kernels_tiny_cnn),
		cmocka_unit_test(test_cuda_kernels_inception_v4),
		cmocka_unit_test(test_cuda_kernels_densenet121),
		cmocka_unit_test(test_cuda_kernels_tiny_gpt),
		cmocka_unit_test(test_cuda_kernels_tiny_bert),
		cmocka_unit_test(test_cuda_kernels_tiny_vit),
		cmocka_unit_test(test_cuda_kernels_tiny_se),
		cmocka_unit_test(test_cuda_kernels_tiny_llama),
		cmocka_unit_test(test_cuda_kernels_optimizers),
		cmocka_unit_test(test_cuda_kernels_bad_token_is_nan),
		cmocka_unit_test(test_cuda_kernels_bf16),
		cmocka_unit_test(test_cuda_kernels_cast),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	atm_cpu_destroy(cpu);
	atm_cuda_ctx_destroy(ctx);
	return rc;
}
