/* work.c -- each op's work: FLOPs and bytes from its shapes, what the roofline estimate divides by its rates
 *
 * The work of an op is arithmetic on its operands' shapes and attributes, read in the operand
 * order its shape rule (shape.c) checks, so it sits in core beside that rule and is named by
 * the op's entry in ops.c: a new op brings its work with it, and profiler/ loops over ops
 * without knowing any. What the work costs on a machine (each op's measured rates) is the
 * profiler's (profiler/roofline.c). */
#include <string.h>

#include "core_internal.h"

/* in_t -- input i of n */
static const atm_tensor *in_t(const atm_graph *g, const atm_node *n, int i)
{
	return atm_graph_tensor(g, n->in[i]);
}

/* out_t -- output i of n */
static const atm_tensor *out_t(const atm_graph *g, const atm_node *n, int i)
{
	return atm_graph_tensor(g, n->out[i]);
}

/* io_bytes -- every operand once, and an in-place op's input 0 twice (read
 * and written): the bytes a kernel must move at the least */
static double io_bytes(const atm_graph *g, const atm_node *n)
{
	double b = 0;
	for (int i = 0; i < n->n_in; i++)
		b += (double)in_t(g, n, i)->bytes;
	for (int i = 0; i < n->n_out; i++)
		b += (double)out_t(g, n, i)->bytes;
	if (atm_op_is_inplace(n->op))
		b += (double)in_t(g, n, 0)->bytes;
	return b;
}

/* atm_work_conv -- 2 FLOPs per multiply-add: every output pixel of every output channel sums
 * C * KH * KW products, whichever of the three is computed */
void atm_work_conv(const atm_graph *g, const atm_node *n, atm_work *w)
{
	const atm_tensor *wt = n->op == ATM_OP_CONV_BWD_WEIGHTS ? out_t(g, n, 0) : in_t(g, n, 1);
	const atm_tensor *y = n->op == ATM_OP_CONV_FWD ? out_t(g, n, 0)
	                      : in_t(g, n, n->op == ATM_OP_CONV_BWD_DATA ? 0 : 1);
	w->flops = 2.0 * (double)y->n_elems * (double)(wt->n_elems / wt->dims[0]);
	w->pointwise = wt->ndim == 4 && wt->dims[2] == 1 && wt->dims[3] == 1;
}

/* atm_work_ip -- 2 FLOPs per multiply-add of x[N, I] by w[O, I] */
void atm_work_ip(const atm_graph *g, const atm_node *n, atm_work *w)
{
	const atm_tensor *wt = n->op == ATM_OP_IP_BWD_WEIGHTS ? out_t(g, n, 0) : in_t(g, n, 1);
	const atm_tensor *x = n->op == ATM_OP_IP_BWD_DATA ? out_t(g, n, 0) : in_t(g, n, 0);
	w->flops = 2.0 * (double)x->dims[0] * (double)wt->n_elems;
}

/* atm_work_per_out_elem -- one operation per element of output 0 (ReLU, add) */
void atm_work_per_out_elem(const atm_graph *g, const atm_node *n, atm_work *w)
{
	w->flops = (double)out_t(g, n, 0)->n_elems;
}

/* atm_work_pool -- the window's elements for every element of the pooled side */
void atm_work_pool(const atm_graph *g, const atm_node *n, atm_work *w)
{
	bool fwd = n->op == ATM_OP_MAXPOOL_FWD || n->op == ATM_OP_AVGPOOL_FWD;
	double y = (double)(fwd ? out_t(g, n, 0) : in_t(g, n, 0))->n_elems;
	w->flops = y * n->attrs.kernel[0] * n->attrs.kernel[1];
}

/* atm_work_bn_fwd -- statistics, then normalisation: two passes over x */
void atm_work_bn_fwd(const atm_graph *g, const atm_node *n, atm_work *w)
{
	w->flops = 6.0 * (double)in_t(g, n, 0)->n_elems;
	w->traffic_bytes += (double)in_t(g, n, 0)->bytes;
}

/* atm_work_bn_bwd -- reductions of dy and dy * x, then dx: two passes over x and dy */
void atm_work_bn_bwd(const atm_graph *g, const atm_node *n, atm_work *w)
{
	w->flops = 10.0 * (double)in_t(g, n, 0)->n_elems;
	w->traffic_bytes += (double)(in_t(g, n, 0)->bytes + in_t(g, n, 1)->bytes);
}

/* atm_work_copy -- a copy (concat, split): one "operation" per element read, so that the op
 * has a rate */
void atm_work_copy(const atm_graph *g, const atm_node *n, atm_work *w)
{
	double elems = 0;
	for (int i = 0; i < n->n_in; i++)
		elems += (double)in_t(g, n, i)->n_elems;
	w->flops = elems;
}

/* atm_work_softmax_xent_fwd -- exp and log in double, a few passes per row (plain C, one
 * thread) */
void atm_work_softmax_xent_fwd(const atm_graph *g, const atm_node *n, atm_work *w)
{
	w->flops = 20.0 * (double)in_t(g, n, 0)->n_elems;
}

/* atm_work_two_per_in_elem -- two operations per element of input 0 (SGD's multiply-add, the
 * loss gradient's subtract and scale) */
void atm_work_two_per_in_elem(const atm_graph *g, const atm_node *n, atm_work *w)
{
	w->flops = 2.0 * (double)in_t(g, n, 0)->n_elems;
}

/* atm_node_work -- the traffic every op has, then the rule of the node's op */
atm_status atm_node_work(const atm_graph *g, int32_t node, atm_work *w)
{
	const atm_node *n = atm_graph_node(g, node);
	memset(w, 0, sizeof *w);
	if (!n)
		return atm_err(ATM_E_USAGE, "atm_node_work: node %d is out of range (graph '%s' has %d "
		               "nodes)", node, atm_graph_name(g), atm_graph_n_nodes(g));
	const struct atm_op_entry *e = atm_op_entry(n->op);
	if (!e || !e->work)
		return atm_err(ATM_E_UNSUPPORTED, "node '%s': no work model for op %s", n->name,
		               atm_op_name(n->op));
	w->traffic_bytes = io_bytes(g, n);
	e->work(g, n, w);
	return ATM_OK;
}
