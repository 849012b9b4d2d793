/* geometry.c -- a matmul node's GEMM, a permute node's view and a mul node's broadcast, from the graph's tensors, for the kernels of every backend */
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

/* atm_broadcast_of -- the dims b keeps and those it is repeated along in a (shape.c checks that
 * b broadcasts) */
atm_status atm_broadcast_of(const atm_graph *g, const atm_node *n, atm_broadcast *out)
{
	*out = (atm_broadcast){.rep_elems = 1};
	bool mul = n->op == ATM_OP_MUL, bwd = n->op == ATM_OP_MUL_BWD;
	const atm_tensor *a = mul || bwd ? atm_graph_tensor(g, n->in[0]) : NULL;
	const atm_tensor *b = mul ? atm_graph_tensor(g, n->in[1])
	                    : bwd ? atm_graph_tensor(g, n->out[0]) : NULL;
	if (!a || !b || b->ndim > a->ndim)
		return atm_err(ATM_E_USAGE, "atm_broadcast_of: node '%s' is no mul or mul_bwd of this "
		               "graph", n->name);
	int lead = a->ndim - b->ndim;
	int64_t stride = 1;
	for (int i = a->ndim - 1; i >= 0; i--) {
		int64_t d = a->dims[i], bd = i < lead ? 1 : b->dims[i - lead];
		if (d > 1 && bd == 1) {
			out->rep[out->n_rep] = d;
			out->rep_stride[out->n_rep++] = stride;
			out->rep_elems *= d;
		} else if (d > 1) {
			out->kept[out->n_kept] = d;
			out->kept_stride[out->n_kept++] = stride;
		}
		stride *= d;
	}
	return ATM_OK;
}
