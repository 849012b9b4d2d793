/* work.c -- each op's work: FLOPs and bytes from its shapes, what the roofline estimate divides by its rates
 *
 * The work of an op is arithmetic on its operands' shapes and attributes, read in the operand
 * order its shape rule (shape.c) checks, so it sits in core beside that rule and is named by
 * the op's entry in ops.c: a new op brings its work with it, and profiler/ loops over ops
 * without knowing any. What the work costs on a machine (each op's measured rates) is the
 * profiler's (profiler/roofline.c). */
#include "core_internal.h"

/* atm_work_io_bytes -- every operand once, and the inputs an op writes in place twice (read
 * and written): the bytes a kernel must move at the least */
double atm_work_io_bytes(const atm_op_desc *d, const atm_node *n, const atm_tensor *const *in,
                         const atm_tensor *const *out)
{
	double b = 0;
	for (int i = 0; i < n->n_in; i++)
		b += (double)in[i]->bytes;
	for (int i = 0; i < n->n_out; i++)
		b += (double)out[i]->bytes;
	for (int i = 0; i < n->n_in && i < 32; i++)
		if (d->inplace >> i & 1u)
			b += (double)in[i]->bytes;
	return b;
}

/* atm_work_conv -- 2 FLOPs per multiply-add: every output pixel of every output channel sums
 * C * KH * KW products, whichever of the three is computed */
void atm_work_conv(const atm_node *n, const atm_tensor *const *in,
                   const atm_tensor *const *out, atm_work *w)
{
	const atm_tensor *wt = n->op == ATM_OP_CONV_BWD_WEIGHTS ? out[0] : in[1];
	const atm_tensor *y = n->op == ATM_OP_CONV_FWD ? out[0]
	                      : in[n->op == ATM_OP_CONV_BWD_DATA ? 0 : 1];
	w->flops = 2.0 * (double)y->n_elems * (double)(wt->n_elems / wt->dims[0]);
	w->pointwise = wt->ndim == 4 && wt->dims[2] == 1 && wt->dims[3] == 1;
}

/* atm_work_ip -- 2 FLOPs per multiply-add of x[N, I] by w[O, I] */
void atm_work_ip(const atm_node *n, const atm_tensor *const *in,
                 const atm_tensor *const *out, atm_work *w)
{
	const atm_tensor *wt = n->op == ATM_OP_IP_BWD_WEIGHTS ? out[0] : in[1];
	const atm_tensor *x = n->op == ATM_OP_IP_BWD_DATA ? out[0] : in[0];
	w->flops = 2.0 * (double)x->dims[0] * (double)wt->n_elems;
}

/* atm_work_per_out_elem -- one operation per element of output 0 (ReLU, add) */
void atm_work_per_out_elem(const atm_node *n, const atm_tensor *const *in,
                           const atm_tensor *const *out, atm_work *w)
{
	w->flops = (double)out[0]->n_elems;
}

/* atm_work_pool -- the window's elements for every element of the pooled side */
void atm_work_pool(const atm_node *n, const atm_tensor *const *in,
                   const atm_tensor *const *out, atm_work *w)
{
	bool fwd = n->op == ATM_OP_MAXPOOL_FWD || n->op == ATM_OP_AVGPOOL_FWD;
	double y = (double)(fwd ? out[0] : in[0])->n_elems;
	w->flops = y * n->attrs.kernel[0] * n->attrs.kernel[1];
}

/* atm_work_bn_fwd -- statistics, then normalisation: two passes over x */
void atm_work_bn_fwd(const atm_node *n, const atm_tensor *const *in,
                     const atm_tensor *const *out, atm_work *w)
{
	w->flops = 6.0 * (double)in[0]->n_elems;
	w->traffic_bytes += (double)in[0]->bytes;
}

/* atm_work_bn_bwd -- reductions of dy and dy * x, then dx: two passes over x and dy */
void atm_work_bn_bwd(const atm_node *n, const atm_tensor *const *in,
                     const atm_tensor *const *out, atm_work *w)
{
	w->flops = 10.0 * (double)in[0]->n_elems;
	w->traffic_bytes += (double)(in[0]->bytes + in[1]->bytes);
}

/* atm_work_copy -- a copy (concat, split): one "operation" per element read, so that the op
 * has a rate */
void atm_work_copy(const atm_node *n, const atm_tensor *const *in,
                   const atm_tensor *const *out, atm_work *w)
{
	double elems = 0;
	for (int i = 0; i < n->n_in; i++)
		elems += (double)in[i]->n_elems;
	w->flops = elems;
}

/* atm_work_softmax_xent_fwd -- exp and log in double, a few passes per row (plain C, one
 * thread) */
void atm_work_softmax_xent_fwd(const atm_node *n, const atm_tensor *const *in,
                               const atm_tensor *const *out, atm_work *w)
{
	w->flops = 20.0 * (double)in[0]->n_elems;
}

/* atm_work_two_per_in_elem -- two operations per element of input 0 (SGD's multiply-add, the
 * loss gradient's subtract and scale) */
void atm_work_two_per_in_elem(const atm_node *n, const atm_tensor *const *in,
                              const atm_tensor *const *out, atm_work *w)
{
	w->flops = 2.0 * (double)in[0]->n_elems;
}

/* atm_work_matmul -- 2 FLOPs per multiply-add of every GEMM of the batch */
void atm_work_matmul(const atm_node *n, const atm_tensor *const *in,
                     const atm_tensor *const *out, atm_work *w)
{
	/* c has batch * m * n elements, each a sum of k products; k is a's or b's contracted
	 * dim, which the shape rule has checked */
	const atm_tensor *a = in[0];
	int64_t k = n->attrs.trans_a ? (out[0]->ndim == 2 ? a->n_elems / a->dims[a->ndim - 1]
	                                                  : a->dims[a->ndim - 2])
	                             : a->dims[a->ndim - 1];
	w->flops = 2.0 * (double)out[0]->n_elems * (double)k;
}

/* atm_work_transcendental -- an exp, erf or tanh and a few operations per element of input 0
 * (GELU, softmax, the token loss) */
void atm_work_transcendental(const atm_node *n, const atm_tensor *const *in,
                             const atm_tensor *const *out, atm_work *w)
{
	w->flops = 10.0 * (double)in[0]->n_elems;
}

/* atm_work_update -- the updates with state: SGD with momentum (a multiply-add for the weight
 * decay, one for the buffer, one for the step) and AdamW (about a dozen operations and a
 * square root per element) */
void atm_work_update(const atm_node *n, const atm_tensor *const *in,
                     const atm_tensor *const *out, atm_work *w)
{
	(void)out;
	w->flops = (n->op == ATM_OP_ADAMW ? 12.0 : 6.0) * (double)in[0]->n_elems;
}

/* atm_work_allreduce -- a sum per element and rank: the arithmetic of the mean; the network's
 * time is what a profile measures */
void atm_work_allreduce(const atm_node *n, const atm_tensor *const *in,
                        const atm_tensor *const *out, atm_work *w)
{
	(void)out;
	double e = 0;
	for (int i = 0; i < n->n_in; i++)
		e += (double)in[i]->n_elems;
	w->flops = e * (n->attrs.ranks > 1 ? n->attrs.ranks : 1);
}
