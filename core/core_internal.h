/* core_internal.h -- helpers shared by the core sources, not part of the public contract */
#ifndef ATM_CORE_INTERNAL_H
#define ATM_CORE_INTERNAL_H

#include "atm_core.h"

/* ---------------------------------------------------------------- ops */

/* A rule of an op's entry: its shapes (shape.c; the message names the tensor) and its work
 * (work.c; the traffic every op has is set already, the rule adds FLOPs and any extra passes).
 * A rule reads the node's op and attributes and its operands, in[i] the tensor of input i and
 * out[i] that of output i, resolved by the caller (graph.c); it calls nothing in graph.c or
 * ops.c, which sit above it. Both run on nodes whose arity fits the op. */
typedef atm_status atm_shape_rule(const atm_node *n, const atm_tensor *const *in,
                                  const atm_tensor *const *out);
typedef void atm_work_rule(const atm_node *n, const atm_tensor *const *in,
                           const atm_tensor *const *out, atm_work *w);

/* One op's entry in core/ops.c: what atm_op_describe hands out and what only core uses. */
struct atm_op_entry {
	atm_op_desc d;
	/* the number the graph digest hashes for the op: fixed once given (plans hold digests),
	 * never reused, unlike the enum's values */
	int32_t digest_id;
	atm_shape_rule *shape;
	atm_work_rule *work;
};

/* atm_op_entry -- op's entry; NULL for a value that is no op */
const struct atm_op_entry *atm_op_entry(atm_op op);

/* atm_name_lookup -- *out the index of s among names[0..n), or ATM_E_INPUT naming what was
 * looked up and listing every valid name (names.c) */
atm_status atm_name_lookup(const char *what, const char *const *names, int n, const char *s,
                           int *out);

/* Shape rules (shape.c), each for the ops its name says. */
atm_shape_rule atm_shape_conv, atm_shape_ip, atm_shape_relu, atm_shape_pool, atm_shape_bn,
	atm_shape_concat, atm_shape_add, atm_shape_loss, atm_shape_sgd, atm_shape_matmul,
	atm_shape_reduce, atm_shape_layer_norm, atm_shape_softmax, atm_shape_embedding,
	atm_shape_permute, atm_shape_narrow, atm_shape_token_loss, atm_shape_mul, atm_shape_mul_bwd,
	atm_shape_rms_norm, atm_shape_rope, atm_shape_update, atm_shape_allreduce;

/* atm_shape_matmul_dims, atm_shape_permute_view -- the geometry the matmul and permute rules
 * check, for atm_matmul_dims_of and atm_permute_view (geometry.c) */
atm_status atm_shape_matmul_dims(const atm_node *n, const atm_tensor *a, const atm_tensor *b,
                                 const atm_tensor *c, atm_matmul_dims *d);
atm_status atm_shape_permute_view(const atm_attrs *a, const atm_tensor *x, const atm_tensor *y,
                                  int64_t *view, int64_t *permuted);

/* atm_shape_dtypes -- every operand is f32 but those d's roles give as indices (i32, checked by
 * the op's rule) or as f32 or bf16 (a cast's): the check every op has, before its rule */
atm_status atm_shape_dtypes(const atm_op_desc *d, const atm_node *n, const atm_tensor *const *in,
                            const atm_tensor *const *out);

/* Work rules (work.c). */
atm_work_rule atm_work_conv, atm_work_ip, atm_work_per_out_elem, atm_work_pool, atm_work_bn_fwd,
	atm_work_bn_bwd, atm_work_copy, atm_work_softmax_xent_fwd, atm_work_two_per_in_elem,
	atm_work_matmul, atm_work_transcendental, atm_work_update, atm_work_allreduce;

/* atm_work_io_bytes -- every operand once, and the inputs an op writes in place twice (read
 * and written): the traffic every op has, before its rule */
double atm_work_io_bytes(const atm_op_desc *d, const atm_node *n, const atm_tensor *const *in,
                         const atm_tensor *const *out);

/* atm_shape_elems -- product of dims with overflow and range checks */
atm_status atm_shape_elems(int ndim, const int64_t *dims, int64_t *elems);

/* atm_graph_copy_tensors -- a new graph of g's name holding g's tensors (and batched marks),
 * no nodes yet: where a rewrite of g's nodes starts (update.c, data_parallel.c) */
atm_status atm_graph_copy_tensors(const atm_graph *g, atm_graph **out);
/* atm_graph_copy_node -- node n of a graph whose tensors c copied into c, as it is, reading in
 * instead of its own inputs where in is not NULL (n->n_in of them) */
atm_status atm_graph_copy_node(atm_graph *c, const atm_node *n, const int32_t *in);
/* atm_graph_rewritten -- the end of a rewrite into c that reached rc: c validated and handed
 * out in *out, or destroyed and the failure returned */
atm_status atm_graph_rewritten(atm_graph *c, atm_status rc, atm_graph **out);

#endif /* ATM_CORE_INTERNAL_H */
