/* kernel_parts.h -- what the CPU kernels' files share (private to runtime/cpu): a kernel's
 * parts; the oneDNN glue and the errors (kernels_onednn.c), the plain C kernels (kernels_plain.c,
 * which use the glue's errors and operands) and the op table that names them (kernels.c) */
#ifndef ATM_KERNEL_PARTS_H
#define ATM_KERNEL_PARTS_H

#include <dnnl.h>

#include "kernels.h"

/* The oneDNN C API changed shape in 3.0 (operation descriptors are gone);
 * these files speak the 2.x dialect and say so at build time. */
#if DNNL_VERSION_MAJOR != 2 || DNNL_VERSION_MINOR < 3
#error "runtime/cpu's kernels need oneDNN 2.3 to 2.x (batch norm use_scale/use_shift flags, 2.x C API)"
#endif

struct atm_cpu {
	dnnl_engine_t engine;
	dnnl_stream_t stream;
};

/* Where a primitive argument finds its data at run time: the node's i-th
 * input, its i-th output, or the kernel's scratch buffer. */
enum slot { SLOT_IN, SLOT_OUT, SLOT_SCRATCH };

/* bind -- one argument of a primitive and the buffer that backs it (in scratch: the kernel's
 * region index, 0 the scratchpad at the start) */
struct bind {
	int arg; /* DNNL_ARG_* */
	enum slot slot;
	int index;
};

/* step -- one primitive of a kernel; memory objects are made once with no
 * buffer and pointed at the caller's data on every run, which is cheap and
 * lets the same kernel serve tensors wherever the plan put them. */
struct step {
	dnnl_primitive_t prim;
	int n_args;
	dnnl_exec_arg_t *args; /* args[i].memory is owned by the step */
	struct bind *binds;
};

struct atm_kernel {
	atm_cpu *cpu;
	const atm_graph *g;
	int32_t node_id; /* looked up on use: the graph's node array may grow after this */
	int n_steps;
	struct step *steps; /* run in order on the cpu's stream */
	int64_t scratch_bytes;
	bool built; /* atm_kernel_new is done */
	/* max pooling forward: bytes of the argmax tensor oneDNN leaves unwritten
	 * (it stores u8 indices for windows of up to 255 elements) */
	int64_t ws_used_bytes, ws_tail_bytes;
	/* plain C ops (SGD, softmax cross-entropy) */
	int64_t n_rows, n_cols;
	/* offsets in scratch of the regions steps bind (0: the scratchpad; convolutions: the
	 * blocked copies of their operands) */
	int64_t region[5];
	/* a node with bf16 operands that its op has no bf16 kernel for runs widened: its builder
	 * and run see wide[i], operand i (inputs, then outputs) as f32, and each bf16 operand has
	 * an f32 copy at wide_off[i] in scratch (-1: none), widened before the run and narrowed
	 * to nearest even after it, as PyTorch's CPU kernels without bf16 units do */
	atm_tensor *wide;
	int64_t *wide_off;
	void **wide_ptr; /* this run's buffers, the copies in place of the bf16 operands */
};

/* knode -- the kernel's node as the graph holds it now */
static inline const atm_node *knode(const atm_kernel *k)
{
	return atm_graph_node(k->g, k->node_id);
}

/* Errors (kernels_onednn.c): a message naming the node, and a failed oneDNN call's status. */
atm_status cpu_node_err(const atm_kernel *k, atm_status code, const char *what);
atm_status cpu_dnnl_fail(const atm_kernel *k, const char *what, dnnl_status_t s);

/* Every oneDNN call in a builder goes through this, so a failure names the
 * node and the call and jumps to the builder's one cleanup path. */
#define DNNL_TRY(call, what)                       \
	do {                                           \
		dnnl_status_t s_ = (call);                 \
		if (s_ != dnnl_success) {                  \
			rc = cpu_dnnl_fail(k, (what), s_);         \
			goto fail;                             \
		}                                          \
	} while (0)

/* oneDNN glue (kernels_onednn.c): a node's operand, a step's release, and the builders of the
 * ops oneDNN's primitives compute (each makes the kernel's steps). */
const atm_tensor *cpu_tensor_of(const atm_kernel *k, enum slot slot, int index);
void cpu_step_release(struct step *s);
atm_status cpu_build_conv(atm_kernel *k, const_dnnl_primitive_attr_t attr);
atm_status cpu_build_ip(atm_kernel *k, const_dnnl_primitive_attr_t attr);
atm_status cpu_build_eltwise(atm_kernel *k, const_dnnl_primitive_attr_t attr);
atm_status cpu_build_pool(atm_kernel *k, const_dnnl_primitive_attr_t attr);
atm_status cpu_build_concat(atm_kernel *k, const_dnnl_primitive_attr_t attr);
atm_status cpu_build_add(atm_kernel *k, const_dnnl_primitive_attr_t attr);
atm_status cpu_build_mul(atm_kernel *k, const_dnnl_primitive_attr_t attr);
atm_status cpu_build_matmul(atm_kernel *k, const_dnnl_primitive_attr_t attr);
atm_status cpu_build_layer_norm(atm_kernel *k, const_dnnl_primitive_attr_t attr);
atm_status cpu_build_softmax(atm_kernel *k, const_dnnl_primitive_attr_t attr);
atm_status cpu_build_token_xent_bwd(atm_kernel *k, const_dnnl_primitive_attr_t attr);
atm_status cpu_build_permute(atm_kernel *k, const_dnnl_primitive_attr_t attr);

/* Plain C kernels (kernels_plain.c): the builders that only size a plain C op, and the runs
 * that do its work after the primitives (all of it where there are none). */
atm_status cpu_build_bn(atm_kernel *k, const_dnnl_primitive_attr_t attr);
atm_status cpu_run_bn(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_bn_bwd(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_build_split(atm_kernel *k, const_dnnl_primitive_attr_t attr);
atm_status cpu_run_split(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_build_lead(atm_kernel *k, const_dnnl_primitive_attr_t attr);
atm_status cpu_build_flat(atm_kernel *k, const_dnnl_primitive_attr_t attr);
atm_status cpu_run_allreduce(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_sgd(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_sgd_momentum(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_adamw(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_softmax_xent(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_softmax_xent_bwd(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_reduce_sum(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_mul_bwd(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_rms_norm(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_rms_norm_bwd(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_hardsigmoid(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_rope(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_causal_softmax(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_embedding(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_narrow(const atm_kernel *k, void *const *in, void *const *out);
/* cpu_run_cast -- f32 <-> bf16: narrowed to nearest even (NaN stays NaN), widened exactly */
atm_status cpu_run_cast(const atm_kernel *k, void *const *in, void *const *out);
/* cpu_bf16_narrow, cpu_bf16_widen -- n values between f32 and bf16, as cpu_run_cast casts them
 * (the work shared among the threads) */
void cpu_bf16_narrow(const float *x, uint16_t *y, int64_t n);
void cpu_bf16_widen(const uint16_t *x, float *y, int64_t n);
atm_status cpu_run_token_xent(const atm_kernel *k, void *const *in, void *const *out);
atm_status cpu_run_token_xent_bwd(const atm_kernel *k, void *const *in, void *const *out);

#endif
