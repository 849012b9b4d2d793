/* geometry.c -- a matmul node's GEMM and a permute node's view, from the graph's tensors, for the kernels of every backend */
#include "core_internal.h"

/* atm_matmul_dims_of -- the GEMM of a matmul node (shape.c checks it the same way) */
atm_status atm_matmul_dims_of(const atm_graph *g, const atm_node *n, atm_matmul_dims *d)
{
	const atm_tensor *a = atm_graph_tensor(g, n->in[0]), *b = atm_graph_tensor(g, n->in[1]);
	const atm_tensor *c = atm_graph_tensor(g, n->out[0]);
	if (n->op != ATM_OP_MATMUL || !a || !b || !c)
		return atm_err(ATM_E_USAGE, "atm_matmul_dims_of: node '%s' is no matmul of this graph",
		               n->name);
	return atm_shape_matmul_dims(n, a, b, c, d);
}

/* atm_permute_view -- the shapes of a permute node */
atm_status atm_permute_view(const atm_graph *g, const atm_node *n, int64_t *view,
                            int64_t *permuted)
{
	const atm_tensor *x = atm_graph_tensor(g, n->in[0]), *y = atm_graph_tensor(g, n->out[0]);
	if (n->op != ATM_OP_PERMUTE || !x || !y)
		return atm_err(ATM_E_USAGE, "atm_permute_view: node '%s' is no permute of this graph",
		               n->name);
	return atm_shape_permute_view(&n->attrs, x, y, view, permuted);
}
