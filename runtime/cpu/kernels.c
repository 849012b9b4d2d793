/* kernels.c -- CPU kernels of every graph op: the engine, the op table, and a kernel's life
 * (built once per node, run as often as the schedule says); the oneDNN glue is in
 * kernels_onednn.c, the plain C kernels in kernels_plain.c */
#include <dnnl.h>
#include <dnnl_debug.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "kernel_parts.h"

/* ---------------------------------------------------------------- engine */

/* atm_cpu_new -- the oneDNN CPU engine and one in-order stream */
atm_status atm_cpu_new(atm_cpu **cpu)
{
	atm_cpu *c = NULL;
	dnnl_status_t s;
	*cpu = NULL;
	c = calloc(1, sizeof *c);
	if (!c)
		return atm_err(ATM_E_NOMEM, "out of memory creating the CPU engine");
	s = dnnl_engine_create(&c->engine, dnnl_cpu, 0);
	if (s != dnnl_success)
		goto fail;
	/* in-order: kernels of one graph run one after another, like the schedule */
	s = dnnl_stream_create(&c->stream, c->engine, dnnl_stream_in_order);
	if (s != dnnl_success)
		goto fail;
	*cpu = c;
	return ATM_OK;
fail:
	if (c->engine)
		dnnl_engine_destroy(c->engine);
	free(c);
	return atm_err(s == dnnl_out_of_memory ? ATM_E_NOMEM : ATM_E_UNSUPPORTED,
	               "cannot create the oneDNN CPU engine and stream: oneDNN status %s",
	               dnnl_status2str(s));
}

/* atm_cpu_destroy -- release the stream and engine (kernels made on it first) */
void atm_cpu_destroy(atm_cpu *cpu)
{
	if (!cpu)
		return;
	dnnl_stream_destroy(cpu->stream);
	dnnl_engine_destroy(cpu->engine);
	free(cpu);
}

/* ---------------------------------------------------------------- the op table */

/* What this backend does for each op: build makes the kernel of a node (oneDNN's primitives,
 * or a plain C op's sizes); run is plain C that runs after the primitives (all of a plain C
 * op's work, or what no primitive does), NULL where the primitives are all. An op without
 * build has no CPU kernel. */
struct cpu_op {
	atm_status (*build)(atm_kernel *k, const_dnnl_primitive_attr_t attr);
	atm_status (*run)(const atm_kernel *k, void *const *in, void *const *out);
};

/* build_token_xent -- the log-softmax step, and the sizes its run needs */
static atm_status build_token_xent(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	atm_status rc = cpu_build_lead(k, attr);
	if (rc < 0)
		return rc;
	return knode(k)->op == ATM_OP_TOKEN_XENT_FWD ? cpu_build_softmax(k, attr)
	                                             : cpu_build_token_xent_bwd(k, attr);
}

/* build_softmax_op -- oneDNN's softmax, or the sizes of the causal one's plain C */
static atm_status build_softmax_op(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	atm_status rc = cpu_build_lead(k, attr);
	return rc < 0 ? rc : cpu_build_softmax(k, attr);
}

const struct cpu_op cpu_ops[ATM_N_OPS] = {
	[ATM_OP_CONV_FWD] = {cpu_build_conv, NULL},
	[ATM_OP_CONV_BWD_DATA] = {cpu_build_conv, NULL},
	[ATM_OP_CONV_BWD_WEIGHTS] = {cpu_build_conv, NULL},
	[ATM_OP_IP_FWD] = {cpu_build_ip, NULL},
	[ATM_OP_IP_BWD_DATA] = {cpu_build_ip, NULL},
	[ATM_OP_IP_BWD_WEIGHTS] = {cpu_build_ip, NULL},
	[ATM_OP_RELU_FWD] = {cpu_build_eltwise, NULL},
	[ATM_OP_RELU_BWD] = {cpu_build_eltwise, NULL},
	[ATM_OP_MAXPOOL_FWD] = {cpu_build_pool, NULL},
	[ATM_OP_MAXPOOL_BWD] = {cpu_build_pool, NULL},
	[ATM_OP_AVGPOOL_FWD] = {cpu_build_pool, NULL},
	[ATM_OP_AVGPOOL_BWD] = {cpu_build_pool, NULL},
	[ATM_OP_BN_FWD] = {cpu_build_bn, cpu_run_bn},
	[ATM_OP_BN_BWD] = {cpu_build_bn, cpu_run_bn_bwd},
	[ATM_OP_CONCAT] = {cpu_build_concat, NULL},
	[ATM_OP_SPLIT] = {cpu_build_split, cpu_run_split},
	[ATM_OP_ADD] = {cpu_build_add, NULL},
	[ATM_OP_SOFTMAX_XENT_FWD] = {cpu_build_lead, cpu_run_softmax_xent},
	[ATM_OP_SOFTMAX_XENT_BWD] = {cpu_build_lead, cpu_run_softmax_xent_bwd},
	[ATM_OP_SGD] = {cpu_build_flat, cpu_run_sgd},
	[ATM_OP_MATMUL] = {cpu_build_matmul, NULL},
	[ATM_OP_REDUCE_SUM] = {cpu_build_flat, cpu_run_reduce_sum},
	[ATM_OP_LAYER_NORM_FWD] = {cpu_build_layer_norm, NULL},
	[ATM_OP_LAYER_NORM_BWD] = {cpu_build_layer_norm, NULL},
	[ATM_OP_GELU_FWD] = {cpu_build_eltwise, NULL},
	[ATM_OP_GELU_BWD] = {cpu_build_eltwise, NULL},
	[ATM_OP_TANH_FWD] = {cpu_build_eltwise, NULL},
	[ATM_OP_TANH_BWD] = {cpu_build_eltwise, NULL},
	[ATM_OP_SOFTMAX_FWD] = {build_softmax_op, cpu_run_causal_softmax},
	[ATM_OP_SOFTMAX_BWD] = {build_softmax_op, NULL},
	[ATM_OP_EMBEDDING_FWD] = {cpu_build_flat, cpu_run_embedding},
	[ATM_OP_EMBEDDING_BWD] = {cpu_build_flat, cpu_run_embedding},
	[ATM_OP_PERMUTE] = {cpu_build_permute, NULL},
	[ATM_OP_NARROW_FWD] = {cpu_build_flat, cpu_run_narrow},
	[ATM_OP_NARROW_BWD] = {cpu_build_flat, cpu_run_narrow},
	[ATM_OP_TOKEN_XENT_FWD] = {build_token_xent, cpu_run_token_xent},
	[ATM_OP_TOKEN_XENT_BWD] = {build_token_xent, cpu_run_token_xent_bwd},
	[ATM_OP_SILU_FWD] = {cpu_build_eltwise, NULL},
	[ATM_OP_SILU_BWD] = {cpu_build_eltwise, NULL},
	[ATM_OP_MUL] = {cpu_build_mul, NULL},
	[ATM_OP_MUL_BWD] = {cpu_build_flat, cpu_run_mul_bwd},
	[ATM_OP_RMS_NORM_FWD] = {cpu_build_lead, cpu_run_rms_norm},
	[ATM_OP_RMS_NORM_BWD] = {cpu_build_lead, cpu_run_rms_norm_bwd},
	[ATM_OP_ROPE_FWD] = {cpu_build_lead, cpu_run_rope},
	[ATM_OP_ROPE_BWD] = {cpu_build_lead, cpu_run_rope},
	[ATM_OP_SIGMOID_FWD] = {cpu_build_eltwise, NULL},
	[ATM_OP_SIGMOID_BWD] = {cpu_build_eltwise, NULL},
	[ATM_OP_HARDSWISH_FWD] = {cpu_build_eltwise, NULL},
	[ATM_OP_HARDSWISH_BWD] = {cpu_build_eltwise, NULL},
	[ATM_OP_HARDSIGMOID_FWD] = {cpu_build_flat, cpu_run_hardsigmoid},
	[ATM_OP_HARDSIGMOID_BWD] = {cpu_build_flat, cpu_run_hardsigmoid},
	[ATM_OP_RELU6_FWD] = {cpu_build_eltwise, NULL},
	[ATM_OP_RELU6_BWD] = {cpu_build_eltwise, NULL},
	[ATM_OP_SGD_MOMENTUM] = {cpu_build_flat, cpu_run_sgd_momentum},
	[ATM_OP_ADAMW] = {cpu_build_flat, cpu_run_adamw},
	[ATM_OP_ALLREDUCE] = {cpu_build_flat, cpu_run_allreduce},
	[ATM_OP_CAST] = {cpu_build_flat, cpu_run_cast},
};

/* atm_cpu_supports -- op has a CPU kernel */
bool atm_cpu_supports(atm_op op)
{
	return (unsigned)op < ATM_N_OPS && cpu_ops[op].build;
}

/* ---------------------------------------------------------------- kernels */

/* kernel_clear -- a kernel's steps and widened operands released, its sizes forgotten: as
 * new, on the same node */
static void kernel_clear(atm_kernel *k)
{
	for (int i = 0; i < k->n_steps; i++)
		cpu_step_release(&k->steps[i]);
	free(k->steps);
	free(k->wide);
	free(k->wide_off);
	free(k->wide_ptr);
	*k = (atm_kernel){.cpu = k->cpu, .g = k->g, .node_id = k->node_id};
}

/* kernel_release -- destroy a kernel's steps and the kernel */
static void kernel_release(atm_kernel *k)
{
	kernel_clear(k);
	free(k);
}

/* ---------------------------------------------------------------- bf16 */

/* operand -- node n's operand i (inputs, then outputs) */
static const atm_tensor *operand(const atm_graph *g, const atm_node *n, int i)
{
	return atm_graph_tensor(g, i < n->n_in ? n->in[i] : n->out[i - n->n_in]);
}

/* How an op takes bf16 operands on oneDNN's own bf16 kernels (f32 inside, rounded once):
 * NATIVE_MIXED with bf16 and f32 operands side by side (its builder describes each operand in
 * its own dtype: a bf16 convolution's f32 bias), NATIVE_UNIFORM only where every float operand is
 * bf16 (one descriptor serves them all), NATIVE_NONE not (its C code reads f32; a convolution's
 * weight gradient reads bf16 but writes f32, see build). Where oneDNN has no bf16 kernel for a configuration
 * on this CPU the node runs widened too. */
enum native { NATIVE_NONE, NATIVE_MIXED, NATIVE_UNIFORM };

static enum native native_bf16(atm_op op)
{
	switch (op) {
	case ATM_OP_CONV_FWD: case ATM_OP_CONV_BWD_DATA:
	case ATM_OP_IP_FWD: case ATM_OP_IP_BWD_DATA: case ATM_OP_IP_BWD_WEIGHTS: case ATM_OP_MATMUL:
	case ATM_OP_PERMUTE:
		return NATIVE_MIXED;
	case ATM_OP_RELU_FWD: case ATM_OP_RELU_BWD: case ATM_OP_GELU_FWD: case ATM_OP_GELU_BWD:
	case ATM_OP_TANH_FWD: case ATM_OP_TANH_BWD: case ATM_OP_SILU_FWD: case ATM_OP_SILU_BWD:
	case ATM_OP_SIGMOID_FWD: case ATM_OP_SIGMOID_BWD: case ATM_OP_HARDSWISH_FWD:
	case ATM_OP_HARDSWISH_BWD: case ATM_OP_RELU6_FWD: case ATM_OP_RELU6_BWD: case ATM_OP_ADD:
	case ATM_OP_MAXPOOL_FWD: case ATM_OP_MAXPOOL_BWD: case ATM_OP_AVGPOOL_FWD:
	case ATM_OP_AVGPOOL_BWD: case ATM_OP_CONCAT:
		return NATIVE_UNIFORM;
	default:
		return NATIVE_NONE;
	}
}

/* all_bf16 -- every operand of n but its i32 ones is bf16 */
static bool all_bf16(const atm_graph *g, const atm_node *n)
{
	for (int i = 0; i < n->n_in + n->n_out; i++)
		if (operand(g, n, i)->dtype != ATM_BF16 && operand(g, n, i)->dtype != ATM_I32)
			return false;
	return true;
}

/* widen -- k's bf16 operands (outputs only: its outputs) as f32 for its builder (wide), before
 * it builds */
static atm_status widen(atm_kernel *k, bool outputs_only)
{
	const atm_node *n = knode(k);
	int ops = n->n_in + n->n_out;
	k->wide = malloc((size_t)ops * sizeof *k->wide);
	k->wide_off = malloc((size_t)ops * sizeof *k->wide_off);
	k->wide_ptr = malloc((size_t)ops * sizeof *k->wide_ptr);
	if (!k->wide || !k->wide_off || !k->wide_ptr)
		return cpu_node_err(k, ATM_E_NOMEM, "out of memory widening its bf16 operands");
	for (int i = 0; i < ops; i++) {
		k->wide[i] = *operand(k->g, n, i);
		k->wide_off[i] = -1;
		if (k->wide[i].dtype == ATM_BF16 && (!outputs_only || i >= n->n_in)) {
			k->wide[i].dtype = ATM_F32;
			k->wide[i].bytes = k->wide[i].n_elems * (int64_t)sizeof(float);
		}
	}
	return ATM_OK;
}

/* place_copies -- after the build, the f32 copies of a widened kernel's bf16 operands in
 * scratch past what its primitives use, 64-byte aligned */
static void place_copies(atm_kernel *k)
{
	const atm_node *n = knode(k);
	int64_t at = (k->scratch_bytes + 63) / 64 * 64;
	for (int i = 0; i < n->n_in + n->n_out; i++)
		if (operand(k->g, n, i)->dtype == ATM_BF16 && k->wide[i].dtype == ATM_F32) {
			k->wide_off[i] = at;
			at += (k->wide[i].bytes + 63) / 64 * 64;
		}
	k->scratch_bytes = at;
}

/* build -- the node's kernel: as it is, or widened (a bf16 operand its op has no bf16 kernel
 * for, or oneDNN none for this configuration) */
static atm_status build(atm_kernel *k, const atm_node *n, const_dnnl_primitive_attr_t attr)
{
	bool bf16 = atm_node_runs_bf16(k->g, k->node_id);
	enum native nat = native_bf16(n->op);
	atm_status rc;
	if (!bf16 || nat == NATIVE_MIXED || (nat == NATIVE_UNIFORM && all_bf16(k->g, n))) {
		rc = cpu_ops[n->op].build(k, attr);
		if (!bf16 || rc != ATM_E_UNSUPPORTED)
			return rc;
		atm_err_clear();
		kernel_clear(k);
	}
	/* a convolution's weight gradient reads bf16 but writes f32 (its AMX kernel writing bf16
	 * took 3x f32's time on ResNet-50), then rounded; where that too fails, all of it widened */
	if (n->op == ATM_OP_CONV_BWD_WEIGHTS) {
		if ((rc = widen(k, true)) < 0)
			return rc;
		if ((rc = cpu_ops[n->op].build(k, attr)) != ATM_E_UNSUPPORTED) {
			if (rc == ATM_OK)
				place_copies(k);
			return rc;
		}
		atm_err_clear();
		kernel_clear(k);
	}
	if ((rc = widen(k, false)) < 0 || (rc = cpu_ops[n->op].build(k, attr)) < 0)
		return rc;
	place_copies(k);
	return ATM_OK;
}

/* atm_kernel_widened -- k runs in f32 between copies of all its bf16 operands */
bool atm_kernel_widened(const atm_kernel *k)
{
	const atm_node *n = knode(k);
	for (int i = 0; k->wide && i < n->n_in + n->n_out; i++)
		if (k->wide[i].dtype == ATM_BF16)
			return false; /* read as bf16 by oneDNN's kernel */
	return k->wide != NULL;
}

/* atm_kernel_new -- build the primitives of one node with a user-owned scratchpad */
atm_status atm_kernel_new(atm_kernel **kp, atm_cpu *cpu, const atm_graph *g, int32_t node)
{
	atm_kernel *k = NULL;
	dnnl_primitive_attr_t attr = NULL;
	const atm_node *n;
	atm_status rc = ATM_OK;

	*kp = NULL;
	n = g ? atm_graph_node(g, node) : NULL;
	if (!cpu || !g)
		return atm_err(ATM_E_USAGE, "atm_kernel_new: no %s", !cpu ? "CPU engine" : "graph");
	if (!n)
		return atm_err(ATM_E_USAGE, "atm_kernel_new: node %d is out of range (graph '%s' has %d "
		               "nodes)", node, atm_graph_name(g), atm_graph_n_nodes(g));
	k = calloc(1, sizeof *k);
	if (!k)
		return atm_err(ATM_E_NOMEM, "node '%s' (%s): out of memory", n->name, atm_op_name(n->op));
	k->cpu = cpu;
	k->g = g;
	k->node_id = node;
	DNNL_TRY(dnnl_primitive_attr_create(&attr), "creating primitive attributes");
	DNNL_TRY(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user),
	         "asking for a user scratchpad");
	if (atm_cpu_supports(n->op))
		rc = build(k, n, attr);
	else
		rc = cpu_node_err(k, ATM_E_UNSUPPORTED, "no CPU kernel for this op");
	if (rc < 0)
		goto fail;
	dnnl_primitive_attr_destroy(attr);
	k->built = true;
	*kp = k;
	return ATM_OK;
fail:
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	kernel_release(k);
	return rc;
}

/* atm_kernel_destroy -- release primitives and memory objects; NULL is fine */
void atm_kernel_destroy(atm_kernel *k)
{
	if (k)
		kernel_release(k);
}

/* atm_kernel_scratch_bytes -- the largest scratchpad of the kernel's primitives */
int64_t atm_kernel_scratch_bytes(const atm_kernel *k)
{
	return k->scratch_bytes;
}

/* ---------------------------------------------------------------- run */

/* run_steps -- point every memory object at this run's buffers and execute
 * the primitives in order, waiting for the stream at the end */
static atm_status run_steps(atm_kernel *k, void *const *in, void *const *out, void *scratch)
{
	dnnl_status_t s;
	for (int i = 0; i < k->n_steps; i++) {
		struct step *st = &k->steps[i];
		for (int a = 0; a < st->n_args; a++) {
			const struct bind *b = &st->binds[a];
			void *p = b->slot == SLOT_IN    ? in[b->index]
			        : b->slot == SLOT_OUT ? out[b->index]
			                              : (char *)scratch + k->region[b->index];
			s = dnnl_memory_set_data_handle(st->args[a].memory, p);
			if (s != dnnl_success)
				return cpu_dnnl_fail(k, "pointing a memory object at its buffer", s);
		}
		s = dnnl_primitive_execute(st->prim, k->cpu->stream, st->n_args, st->args);
		if (s != dnnl_success)
			return cpu_dnnl_fail(k, "executing the primitive", s);
	}
	s = dnnl_stream_wait(k->cpu->stream);
	if (s != dnnl_success)
		return cpu_dnnl_fail(k, "waiting for the stream", s);
	/* every output byte is defined, so a step's tensors are bitwise the same
	 * wherever they live, the argmax tensor's unused tail included */
	if (k->ws_tail_bytes > 0)
		memset((char *)out[1] + k->ws_used_bytes, 0, (size_t)k->ws_tail_bytes);
	return ATM_OK;
}

/* atm_kernel_run -- check the buffers are there, then run the C code or the primitives */
atm_status atm_kernel_run(atm_kernel *k, void *const *in, void *const *out, void *scratch)
{
	const atm_node *n = knode(k);
	void *const *orig_out = out;
	for (int i = 0; i < n->n_in + n->n_out; i++) {
		void *p = i < n->n_in ? in[i] : out[i - n->n_in];
		if (!p) {
			char msg[64];
			snprintf(msg, sizeof msg, "%s %d has no buffer", i < n->n_in ? "input" : "output",
			         i < n->n_in ? i : i - n->n_in);
			return cpu_node_err(k, ATM_E_USAGE, msg);
		}
	}
	if (k->scratch_bytes > 0 && !scratch)
		return cpu_node_err(k, ATM_E_USAGE, "the kernel needs scratch memory but got none");
	if (k->wide) {
		/* the bf16 operands' f32 copies in their place: inputs widened first */
		for (int i = 0; i < n->n_in + n->n_out; i++) {
			void *p = i < n->n_in ? in[i] : out[i - n->n_in];
			k->wide_ptr[i] = k->wide_off[i] < 0 ? p : (char *)scratch + k->wide_off[i];
			if (k->wide_off[i] >= 0 && i < n->n_in)
				cpu_bf16_widen(p, k->wide_ptr[i], k->wide[i].n_elems);
		}
		in = k->wide_ptr;
		out = k->wide_ptr + n->n_in;
	}
	atm_status rc = k->n_steps > 0 ? run_steps(k, in, out, scratch) : ATM_OK;
	if (rc == ATM_OK && cpu_ops[n->op].run)
		rc = cpu_ops[n->op].run(k, in, out);
	/* outputs narrowed back, to nearest even */
	for (int i = n->n_in; rc == ATM_OK && k->wide && i < n->n_in + n->n_out; i++)
		if (k->wide_off[i] >= 0)
			cpu_bf16_narrow(k->wide_ptr[i], (uint16_t *)orig_out[i - n->n_in],
			                k->wide[i].n_elems);
	return rc;
}
