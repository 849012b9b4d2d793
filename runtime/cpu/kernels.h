/* kernels.h -- CPU kernels of every op on oneDNN (private to runtime/)
 *
 * A kernel is made once per graph node: oneDNN primitives are created in
 * atm_kernel_new and reused by every atm_kernel_run. Tensors are dense,
 * row-major (NCHW for 4-d, [N, C] for 2-d) with the shapes the graph gives;
 * pointers are 64-byte aligned. Results depend only on the input bytes and the
 * thread count, never on where the buffers live, so a step is bitwise
 * reproducible across placements.
 *
 *     atm_cpu *cpu = NULL;
 *     atm_kernel *k = NULL;
 *     atm_cpu_new(&cpu);
 *     atm_kernel_new(&k, cpu, g, node);          // g validated
 *     void *scratch = aligned_alloc(64, round_up(atm_kernel_scratch_bytes(k), 64));
 *     atm_kernel_run(k, in, out, scratch);       // as often as the schedule says
 *     atm_kernel_destroy(k);
 *     atm_cpu_destroy(cpu);
 *
 * What each op computes (inputs and outputs as in atm_op):
 *  - conv, inner product: oneDNN direct convolution / inner product, forward
 *    training, backward data, backward weights (+bias). Inner product reads
 *    x [N, ...] as [N, I].
 *  - relu_bwd uses the forward output y: dx = dy where y > 0, else 0.
 *  - maxpool_fwd stores oneDNN's workspace (argmax indices: u8 for windows of
 *    up to 255 elements, else s32, laid out like y) at the start of the i32
 *    argmax tensor and zeroes the rest; only maxpool_bwd reads it. Padding
 *    must be smaller than the window on every side (ATM_E_UNSUPPORTED
 *    otherwise: a window wholly in the padding has no max or average).
 *  - avgpool divides by the whole window, or by the elements inside x when
 *    attrs.exclude_pad.
 *  - bn_fwd: batch mean and biased (population) variance over N and the
 *    dims past C; bn_bwd gives dx, dgamma, dbeta from those statistics.
 *  - concat / split: oneDNN concat; split is one reorder per output from a
 *    sub-memory view of dy.
 *  - add: oneDNN binary add; mul: oneDNN binary mul, b broadcast over a's leading dims and
 *    its own dims of 1; mul_bwd: plain C, each element of db the sum of its dy * a in index
 *    order, in double.
 *  - silu: oneDNN's swish with alpha 1 (x * sigmoid(x)), its backward from x; sigmoid
 *    (logistic) and relu6 (clip to [0, 6]) differentiate from y, hardswish from x;
 *    hardsigmoid is plain C.
 *  - rope_fwd/bwd: plain C, the rotate-half form, angles in double, rows in parallel.
 *  - rms_norm_fwd/bwd: plain C over the rows of [..., C] (rows in parallel, sums in double in
 *    index order); the scale's gradient sums the rows in order, a column per thread.
 *  - sgd_momentum, adamw: plain C, elements in parallel, PyTorch's formulas (the scalars
 *    in double, the elements in float);
 *  - sgd, softmax_xent_fwd/bwd: plain C, single-threaded, in index order;
 *    the loss is summed in double and log(probs) is taken as
 *    (x - max) - log(sum exp(x - max)), finite for finite logits.
 *
 * Threading: oneDNN runs on OpenMP with omp_get_max_threads() threads; the
 * count must not change between atm_kernel_new and atm_kernel_run. A kernel
 * keeps its memory objects between runs, so one kernel must not run on two
 * threads at once; different kernels on one atm_cpu run one after another.
 */
#ifndef ATM_RUNTIME_KERNELS_H
#define ATM_RUNTIME_KERNELS_H

#include "atm_core.h"

typedef struct atm_kernel atm_kernel;
typedef struct atm_cpu atm_cpu; /* the oneDNN engine and stream shared by kernels */

/* atm_cpu_new -- a CPU engine and an in-order stream */
atm_status atm_cpu_new(atm_cpu **cpu);
/* atm_cpu_destroy -- after every kernel made on it; NULL is fine */
void atm_cpu_destroy(atm_cpu *cpu);

/* atm_cpu_supports -- op has a CPU kernel (an entry in kernels.c's op table) */
bool atm_cpu_supports(atm_op op);

/* atm_kernel_new -- primitives for node of g (g must be valid and outlive k;
 * nodes may be appended to g later). Errors: ATM_E_USAGE for a node id out of
 * range, ATM_E_UNSUPPORTED naming the node and op for a configuration oneDNN
 * (or this file) has no kernel for, ATM_E_NOMEM, ATM_E_INTERNAL naming the
 * oneDNN status. *k is NULL on failure. */
atm_status atm_kernel_new(atm_kernel **k, atm_cpu *cpu, const atm_graph *g, int32_t node);
/* atm_kernel_destroy -- NULL is fine */
void atm_kernel_destroy(atm_kernel *k);

/* atm_kernel_scratch_bytes -- scratch memory the kernel needs while it runs
 * (oneDNN's scratchpad in user mode: the runtime owns and places it); 0 for
 * most kernels. Its content need not survive between runs. */
int64_t atm_kernel_scratch_bytes(const atm_kernel *k);

/* atm_kernel_widened -- k runs in f32 on copies of all its bf16 operands (widened before, the
 * outputs narrowed to nearest even after): its op has no bf16 kernel here (a convolution's
 * weight gradient reads bf16 and has only its output widened: false) */
bool atm_kernel_widened(const atm_kernel *k);

/* atm_kernel_run -- run once and wait for it: in[i] and out[i] point at the
 * node's i-th input and output tensor (SGD writes in[0]); scratch, 64-byte
 * aligned, has atm_kernel_scratch_bytes (may be NULL when that is 0). Every
 * output byte is written. ATM_E_USAGE for a missing buffer. */
atm_status atm_kernel_run(atm_kernel *k, void *const *in, void *const *out, void *scratch);

#endif /* ATM_RUNTIME_KERNELS_H */
