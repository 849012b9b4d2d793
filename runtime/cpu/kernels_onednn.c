/* kernels_onednn.c -- the oneDNN glue of the CPU kernels: memory descriptors, a kernel's
 * steps (one primitive each), and the builders of the ops oneDNN computes */
#include <dnnl.h>
#include <dnnl_debug.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_parts.h"

/* ---------------------------------------------------------------- errors */

/* cpu_node_err -- a message that starts with the node and its op */
atm_status cpu_node_err(const atm_kernel *k, atm_status code, const char *what)
{
	return atm_err(code, "node '%s' (%s): %s", knode(k)->name, atm_op_name(knode(k)->op), what);
}

/* cpu_dnnl_fail -- map a failed oneDNN call to a status. While building, an
 * unimplemented or rejected configuration is "unsupported" (oneDNN has no
 * kernel for a shape the graph allows); once built, a primitive that fails is
 * a bug of ours (an argument missing, say), so an internal error. */
atm_status cpu_dnnl_fail(const atm_kernel *k, const char *what, dnnl_status_t s)
{
	bool building = !k->built;
	atm_status code = ATM_E_INTERNAL;
	const char *why = "";
	if (s == dnnl_out_of_memory) {
		code = ATM_E_NOMEM;
	} else if (building && s == dnnl_unimplemented) {
		code = ATM_E_UNSUPPORTED;
		why = " (oneDNN has no CPU implementation for this configuration)";
	} else if (building && s == dnnl_invalid_arguments) {
		code = ATM_E_UNSUPPORTED;
		why = " (oneDNN rejects this configuration)";
	}
	return atm_err(code, "node '%s' (%s): %s failed: oneDNN status %s%s", knode(k)->name,
	               atm_op_name(knode(k)->op), what, dnnl_status2str(s), why);
}

/* ---------------------------------------------------------------- descriptors */

/* cpu_tensor_of -- the graph tensor behind a slot (in a widened kernel, its f32 view) */
const atm_tensor *cpu_tensor_of(const atm_kernel *k, enum slot slot, int index)
{
	if (k->wide)
		return &k->wide[slot == SLOT_IN ? index : knode(k)->n_in + index];
	const int32_t *ids = slot == SLOT_IN ? knode(k)->in : knode(k)->out;
	return atm_graph_tensor(k->g, ids[index]);
}

/* dt_of -- oneDNN's name of t's element type (f32 or bf16: a kernel sees nothing else as
 * data) */
static dnnl_data_type_t dt_of(const atm_tensor *t)
{
	return t->dtype == ATM_BF16 ? dnnl_bf16 : dnnl_f32;
}

/* md_dense_dt -- a plain row-major descriptor (abcd...) of type dt: no blocked layouts,
 * so a buffer means the same thing to every kernel and to the move engine */
static dnnl_status_t md_dense_dt(dnnl_memory_desc_t *md, int ndim, const int64_t *dims,
                                 dnnl_data_type_t dt)
{
	dnnl_dims_t d, strides;
	int64_t stride = 1;
	for (int i = ndim - 1; i >= 0; i--) {
		d[i] = dims[i];
		strides[i] = stride;
		stride *= dims[i];
	}
	return dnnl_memory_desc_init_by_strides(md, ndim, d, dt, strides);
}

/* md_dense -- md_dense_dt of f32 */
static dnnl_status_t md_dense(dnnl_memory_desc_t *md, int ndim, const int64_t *dims)
{
	return md_dense_dt(md, ndim, dims, dnnl_f32);
}

/* md_of -- the dense descriptor of a tensor in its own shape and type */
static dnnl_status_t md_of(dnnl_memory_desc_t *md, const atm_tensor *t)
{
	return md_dense_dt(md, t->ndim, t->dims, dt_of(t));
}

/* md_rows -- t seen as [N, rest]: inner product flattens its input that way */
static dnnl_status_t md_rows(dnnl_memory_desc_t *md, const atm_tensor *t)
{
	int64_t dims[2] = {t->dims[0], t->n_elems / t->dims[0]};
	return md_dense_dt(md, 2, dims, dt_of(t));
}

/* md_flat -- t as one dimension: element-wise ops on same-shaped dense
 * tensors do not care about the shape, and rank 1 has no rank limits */
static dnnl_status_t md_flat(dnnl_memory_desc_t *md, const atm_tensor *t)
{
	return md_dense_dt(md, 1, &t->n_elems, dt_of(t));
}

/* md_span_bytes -- bytes from the buffer start to the end of the last element
 * md touches (offset included), or -1 when md is not a plain strided layout */
static int64_t md_span_bytes(const dnnl_memory_desc_t *md)
{
	if (md->format_kind != dnnl_blocked || md->format_desc.blocking.inner_nblks != 0)
		return -1;
	int64_t last = md->offset0;
	for (int i = 0; i < md->ndims; i++)
		last += (md->padded_dims[i] - 1) * md->format_desc.blocking.strides[i];
	return (last + 1) * (int64_t)dnnl_data_type_size(md->data_type);
}

/* ---------------------------------------------------------------- steps */

/* cpu_step_release -- destroy what a step owns (partially built ones too) */
void cpu_step_release(struct step *s)
{
	for (int i = 0; s->args && i < s->n_args; i++)
		if (s->args[i].memory)
			dnnl_memory_destroy(s->args[i].memory);
	if (s->prim)
		dnnl_primitive_destroy(s->prim);
	free(s->binds);
	free(s->args);
	memset(s, 0, sizeof *s);
}

/* add_step -- make the primitive of pd and one bufferless memory object per
 * bound argument, taking each descriptor from the primitive itself so that it
 * matches what the primitive expects; check that every buffer is plain and
 * large enough, and add the primitive's scratchpad to the kernel's scratch */
static atm_status add_step(atm_kernel *k, const_dnnl_primitive_desc_t pd, int n_binds,
                           const struct bind *binds)
{
	struct step s = {0};
	struct step *grown;
	atm_status rc = ATM_OK;
	const dnnl_memory_desc_t *md;
	bool ws_bound = false;
	char msg[256];

	s.args = calloc((size_t)n_binds + 1, sizeof *s.args);
	s.binds = calloc((size_t)n_binds + 1, sizeof *s.binds);
	if (!s.args || !s.binds) {
		rc = cpu_node_err(k, ATM_E_NOMEM, "out of memory building the kernel");
		goto fail;
	}
	for (int i = 0; i < n_binds; i++) {
		md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, binds[i].arg);
		if (binds[i].slot == SLOT_SCRATCH) { /* a blocked copy the kernel laid out itself */
			s.binds[i] = binds[i];
			s.args[i].arg = binds[i].arg;
			DNNL_TRY(dnnl_memory_create(&s.args[i].memory, md, k->cpu->engine,
			                            DNNL_MEMORY_NONE),
			         "creating a memory object");
			s.n_args++;
			continue;
		}
		const atm_tensor *t = cpu_tensor_of(k, binds[i].slot, binds[i].index);
		int64_t span = md ? md_span_bytes(md) : -1;
		/* A blocked or oversized descriptor would make the buffer mean something
		 * else than the graph says, or write past it: a bug here, not bad input. */
		if (!md || md->ndims == 0 || span < 0 || span > t->bytes) {
			snprintf(msg, sizeof msg, "oneDNN wants %lld bytes in a %s layout for argument %d "
			         "but tensor '%s' has %lld bytes", (long long)span,
			         span < 0 ? "non-plain" : "plain", binds[i].arg, t->name,
			         (long long)t->bytes);
			rc = cpu_node_err(k, ATM_E_INTERNAL, msg);
			goto fail;
		}
		ws_bound |= binds[i].arg == DNNL_ARG_WORKSPACE;
		s.binds[i] = binds[i];
		s.args[i].arg = binds[i].arg;
		DNNL_TRY(dnnl_memory_create(&s.args[i].memory, md, k->cpu->engine, DNNL_MEMORY_NONE),
		         "creating a memory object");
		s.n_args++;
	}
	md = dnnl_primitive_desc_query_md(pd, dnnl_query_workspace_md, 0);
	if (md && dnnl_memory_desc_get_size(md) > 0 && !ws_bound) {
		rc = cpu_node_err(k, ATM_E_INTERNAL, "the oneDNN primitive wants a workspace this op has no "
		              "tensor for");
		goto fail;
	}
	/* User scratchpad mode: the runtime owns the scratch buffer and places it
	 * like a tensor; kernels run one at a time, so they share one buffer and
	 * the kernel needs the largest of its primitives' scratchpads. */
	md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	if (md && dnnl_memory_desc_get_size(md) > 0) {
		int i = s.n_args;
		s.binds[i] = (struct bind){DNNL_ARG_SCRATCHPAD, SLOT_SCRATCH, 0};
		s.args[i].arg = DNNL_ARG_SCRATCHPAD;
		DNNL_TRY(dnnl_memory_create(&s.args[i].memory, md, k->cpu->engine, DNNL_MEMORY_NONE),
		         "creating the scratchpad memory object");
		s.n_args++;
		if ((int64_t)dnnl_memory_desc_get_size(md) > k->scratch_bytes)
			k->scratch_bytes = (int64_t)dnnl_memory_desc_get_size(md);
	}
	DNNL_TRY(dnnl_primitive_create(&s.prim, pd), "creating the primitive");
	grown = realloc(k->steps, (size_t)(k->n_steps + 1) * sizeof *grown);
	if (!grown) {
		rc = cpu_node_err(k, ATM_E_NOMEM, "out of memory building the kernel");
		goto fail;
	}
	k->steps = grown;
	k->steps[k->n_steps++] = s;
	return ATM_OK;
fail:
	cpu_step_release(&s);
	return rc;
}

/* ---------------------------------------------------------------- op builders */

/* pds_release -- a builder's one way out: its primitive descriptors (NULL: none) destroyed,
 * its status returned */
static atm_status pds_release(atm_status rc, dnnl_primitive_desc_t pd, dnnl_primitive_desc_t hint)
{
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (hint)
		dnnl_primitive_desc_destroy(hint);
	return rc;
}

/* window -- strides and paddings of a convolution or pooling node */
struct window {
	dnnl_dims_t strides, pad_l, pad_r, kernel;
};

/* window_of -- the node's attributes in oneDNN's terms (stride 0 means 1) */
static struct window window_of(const atm_attrs *a)
{
	struct window w;
	memset(&w, 0, sizeof w);
	for (int i = 0; i < 2; i++) {
		w.strides[i] = a->stride[i] ? a->stride[i] : 1;
		w.kernel[i] = a->kernel[i];
	}
	w.pad_l[0] = a->pad[0];
	w.pad_l[1] = a->pad[1];
	w.pad_r[0] = a->pad[2];
	w.pad_r[1] = a->pad[3];
	return w;
}

/* Convolutions run in the layouts oneDNN's fast kernels want (blocked channels: jit:avx2,
 * jit_1x1), with the graph's plain tensors reordered into the kernel's scratch before and out
 * of it after, as PyTorch's oneDNN convolutions do: on this machine's DenseNet shapes the plain
 * layout's gemm kernels took 1.5 to 2.9 times as long as reorders and blocked kernels together.
 * The tensors stay plain, so a placement never sees the layout, and the kernels are the same
 * whatever the placement. The copies live in the backend's scratch, fast memory outside the plan's
 * arena (results: scratch_bytes), so they are made only for operands of up to CONV_BLOCKED_MAX
 * together. */

#define CONV_BLOCKED_MAX ((int64_t)256 << 20) /* bytes of a convolution's operands */

/* conv_arg -- one tensor argument of a convolution: its plain descriptor, what the primitive
 * wants, the reorder between them (none when they are the same) and where the copy lies */
struct conv_arg {
	int arg;               /* DNNL_ARG_* of the convolution */
	enum slot slot;        /* the tensor: SLOT_IN or SLOT_OUT */
	int index;
	dnnl_memory_desc_t plain;
	const dnnl_memory_desc_t *want;
	dnnl_primitive_desc_t reorder;
	int region;            /* the blocked copy's region of scratch (0: none) */
};

/* conv_steps -- the reorders in, the convolution pd, the reorders out, as kernel steps; the
 * kernel's scratch: the largest scratchpad, then every blocked copy */
static atm_status conv_steps(atm_kernel *k, const_dnnl_primitive_desc_t pd, int n,
                             struct conv_arg *a)
{
	atm_status rc = ATM_OK;
	int64_t at = 0;
	struct bind bs[4];
	const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	if (sp)
		at = (int64_t)dnnl_memory_desc_get_size(sp);
	for (int i = 0; i < n; i++) {
		a[i].want = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, a[i].arg);
		if (dnnl_memory_desc_equal(a[i].want, &a[i].plain))
			continue;
		bool in = a[i].slot == SLOT_IN;
		DNNL_TRY(dnnl_reorder_primitive_desc_create(&a[i].reorder, in ? &a[i].plain : a[i].want,
		                                            k->cpu->engine, in ? a[i].want : &a[i].plain,
		                                            k->cpu->engine, NULL),
		         "creating a layout reorder");
		sp = dnnl_primitive_desc_query_md(a[i].reorder, dnnl_query_scratchpad_md, 0);
		if (sp && (int64_t)dnnl_memory_desc_get_size(sp) > at)
			at = (int64_t)dnnl_memory_desc_get_size(sp);
	}
	for (int i = 0; i < n; i++) {
		if (!a[i].reorder)
			continue;
		at = (at + 63) / 64 * 64;
		a[i].region = i + 1;
		k->region[i + 1] = at;
		at += (int64_t)dnnl_memory_desc_get_size(a[i].want);
	}
	for (int i = 0; i < n; i++) /* the inputs into their copies */
		if (a[i].reorder && a[i].slot == SLOT_IN &&
		    (rc = add_step(k, a[i].reorder, 2,
		                   (struct bind[]){{DNNL_ARG_FROM, SLOT_IN, a[i].index},
		                                   {DNNL_ARG_TO, SLOT_SCRATCH, a[i].region}})) < 0)
			goto fail;
	for (int i = 0; i < n; i++)
		bs[i] = a[i].reorder ? (struct bind){a[i].arg, SLOT_SCRATCH, a[i].region}
		                     : (struct bind){a[i].arg, a[i].slot, a[i].index};
	if ((rc = add_step(k, pd, n, bs)) < 0)
		goto fail;
	for (int i = 0; i < n; i++) /* the outputs out of theirs */
		if (a[i].reorder && a[i].slot == SLOT_OUT &&
		    (rc = add_step(k, a[i].reorder, 2,
		                   (struct bind[]){{DNNL_ARG_FROM, SLOT_SCRATCH, a[i].region},
		                                   {DNNL_ARG_TO, SLOT_OUT, a[i].index}})) < 0)
			goto fail;
	if (at > k->scratch_bytes)
		k->scratch_bytes = at;
fail:
	for (int i = 0; i < n; i++)
		if (a[i].reorder)
			dnnl_primitive_desc_destroy(a[i].reorder);
	return rc;
}

/* md_any -- the descriptor of a tensor's shape in the layout the primitive chooses */
static dnnl_status_t md_any(dnnl_memory_desc_t *md, const atm_tensor *t)
{
	dnnl_dims_t d;
	for (int i = 0; i < t->ndim; i++)
		d[i] = t->dims[i];
	return dnnl_memory_desc_init_by_tag(md, t->ndim, d, dt_of(t), dnnl_format_tag_any);
}

/* md_weights -- a convolution's weights [O, C/g, KH, KW]: as they are when ungrouped, else as
 * oneDNN's grouped [g, O/g, C/g, KH, KW], which is the same memory; any: the layout the
 * primitive chooses */
static dnnl_status_t md_weights(dnnl_memory_desc_t *md, const atm_tensor *w, int32_t groups,
                                bool any)
{
	if (groups <= 1)
		return any ? md_any(md, w) : md_of(md, w);
	dnnl_dims_t d = {groups, w->dims[0] / groups, w->dims[1], w->dims[2], w->dims[3]};
	return dnnl_memory_desc_init_by_tag(md, 5, d, dt_of(w),
	                                    any ? dnnl_format_tag_any : dnnl_goihw);
}

/* cpu_build_conv -- forward (training), backward data or backward weights (+bias);
 * the backward ones need the forward descriptor as a hint */
atm_status cpu_build_conv(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_node *n = knode(k);
	struct window w = window_of(&n->attrs);
	dnnl_memory_desc_t x_md, w_md, b_md, y_md;
	dnnl_convolution_desc_t fwd_d, bwd_d;
	dnnl_primitive_desc_t hint = NULL, pd = NULL;
	const atm_tensor *x, *wt, *y, *b = NULL;
	atm_status rc = ATM_OK;
	struct conv_arg args[4] = {{0}};
	int n_args = 3;

	switch (n->op) {
	case ATM_OP_CONV_FWD:
		x = cpu_tensor_of(k, SLOT_IN, 0), wt = cpu_tensor_of(k, SLOT_IN, 1), y = cpu_tensor_of(k, SLOT_OUT, 0);
		if (n->n_in == 3)
			b = cpu_tensor_of(k, SLOT_IN, 2);
		args[0] = (struct conv_arg){.arg = DNNL_ARG_SRC, .slot = SLOT_IN, .index = 0};
		args[1] = (struct conv_arg){.arg = DNNL_ARG_WEIGHTS, .slot = SLOT_IN, .index = 1};
		args[2] = (struct conv_arg){.arg = DNNL_ARG_DST, .slot = SLOT_OUT, .index = 0};
		args[3] = (struct conv_arg){.arg = DNNL_ARG_BIAS, .slot = SLOT_IN, .index = 2};
		break;
	case ATM_OP_CONV_BWD_DATA:
		y = cpu_tensor_of(k, SLOT_IN, 0), wt = cpu_tensor_of(k, SLOT_IN, 1), x = cpu_tensor_of(k, SLOT_OUT, 0);
		args[0] = (struct conv_arg){.arg = DNNL_ARG_DIFF_DST, .slot = SLOT_IN, .index = 0};
		args[1] = (struct conv_arg){.arg = DNNL_ARG_WEIGHTS, .slot = SLOT_IN, .index = 1};
		args[2] = (struct conv_arg){.arg = DNNL_ARG_DIFF_SRC, .slot = SLOT_OUT, .index = 0};
		break;
	default:
		x = cpu_tensor_of(k, SLOT_IN, 0), y = cpu_tensor_of(k, SLOT_IN, 1), wt = cpu_tensor_of(k, SLOT_OUT, 0);
		if (n->n_out == 2)
			b = cpu_tensor_of(k, SLOT_OUT, 1);
		args[0] = (struct conv_arg){.arg = DNNL_ARG_SRC, .slot = SLOT_IN, .index = 0};
		args[1] = (struct conv_arg){.arg = DNNL_ARG_DIFF_DST, .slot = SLOT_IN, .index = 1};
		args[2] = (struct conv_arg){.arg = DNNL_ARG_DIFF_WEIGHTS, .slot = SLOT_OUT, .index = 0};
		args[3] = (struct conv_arg){.arg = DNNL_ARG_DIFF_BIAS, .slot = SLOT_OUT, .index = 1};
		break;
	}
	if (b)
		n_args = 4;
	for (int i = 0; i < n_args; i++)
		DNNL_TRY(args[i].arg == DNNL_ARG_WEIGHTS || args[i].arg == DNNL_ARG_DIFF_WEIGHTS
		                 ? md_weights(&args[i].plain, wt, n->attrs.groups, false)
		                : md_of(&args[i].plain, cpu_tensor_of(k, args[i].slot, args[i].index)),
		         "describing an operand");
	/* past CONV_BLOCKED_MAX the copies would hold too much fast memory outside the arena: the
	 * plain layout, whose kernels need no copies, runs there; and a 1x1 convolution over few
	 * channels gains less from the blocked kernel than its copies cost (measured on ResNet-50
	 * and DenseNet-121 shapes: a loss below 384 channels in and out together, a gain above) */
	bool one_by_one = wt->dims[2] == 1 && wt->dims[3] == 1;
	bool blocked = x->bytes + wt->bytes + y->bytes <= CONV_BLOCKED_MAX &&
	               (!one_by_one || wt->dims[0] + wt->dims[1] >= 384);
	DNNL_TRY(blocked ? md_any(&x_md, x) : md_of(&x_md, x), "describing the data");
	DNNL_TRY(md_weights(&w_md, wt, n->attrs.groups, blocked), "describing the weights");
	DNNL_TRY(blocked ? md_any(&y_md, y) : md_of(&y_md, y), "describing the output");
	if (b)
		DNNL_TRY(md_of(&b_md, b), "describing the bias");
	/* the forward hint of a bf16 weight gradient written in f32 describes bf16 weights: the
	 * forward convolution it stands for has them */
	dnnl_memory_desc_t wf_md = w_md;
	wf_md.data_type = x_md.data_type;
	/* direct, not auto: Winograd would change the numbers with the shape */
	DNNL_TRY(dnnl_convolution_forward_desc_init(&fwd_d, dnnl_forward_training,
	                                            dnnl_convolution_direct, &x_md,
	                                            n->op == ATM_OP_CONV_BWD_WEIGHTS ? &wf_md : &w_md,
	                                            b ? &b_md : NULL, &y_md, w.strides, w.pad_l,
	                                            w.pad_r),
	         "describing the forward convolution");
	if (n->op == ATM_OP_CONV_FWD) {
		DNNL_TRY(dnnl_primitive_desc_create(&pd, &fwd_d, attr, k->cpu->engine, NULL),
		         "creating the convolution");
	} else {
		DNNL_TRY(dnnl_primitive_desc_create(&hint, &fwd_d, NULL, k->cpu->engine, NULL),
		         "creating the forward convolution hint");
		if (n->op == ATM_OP_CONV_BWD_DATA)
			DNNL_TRY(dnnl_convolution_backward_data_desc_init(&bwd_d, dnnl_convolution_direct,
			                                                  &x_md, &w_md, &y_md, w.strides,
			                                                  w.pad_l, w.pad_r),
			         "describing the backward-data convolution");
		else
			DNNL_TRY(dnnl_convolution_backward_weights_desc_init(
			                 &bwd_d, dnnl_convolution_direct, &x_md, &w_md, b ? &b_md : NULL,
			                 &y_md, w.strides, w.pad_l, w.pad_r),
			         "describing the backward-weights convolution");
		DNNL_TRY(dnnl_primitive_desc_create(&pd, &bwd_d, attr, k->cpu->engine, hint),
		         "creating the backward convolution");
	}
	rc = conv_steps(k, pd, n_args, args);
fail:
	return pds_release(rc, pd, hint);
}

/* cpu_build_ip -- inner product forward (training), backward data, backward
 * weights; x of any rank is [N, I] in memory already, so it is described so */
atm_status cpu_build_ip(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_node *n = knode(k);
	dnnl_memory_desc_t x_md, w_md, b_md, y_md;
	dnnl_inner_product_desc_t fwd_d, bwd_d;
	dnnl_primitive_desc_t hint = NULL, pd = NULL;
	const atm_tensor *x, *wt, *y;
	atm_status rc = ATM_OK;

	switch (n->op) {
	case ATM_OP_IP_FWD:
		x = cpu_tensor_of(k, SLOT_IN, 0), wt = cpu_tensor_of(k, SLOT_IN, 1), y = cpu_tensor_of(k, SLOT_OUT, 0);
		break;
	case ATM_OP_IP_BWD_DATA:
		y = cpu_tensor_of(k, SLOT_IN, 0), wt = cpu_tensor_of(k, SLOT_IN, 1), x = cpu_tensor_of(k, SLOT_OUT, 0);
		break;
	default:
		x = cpu_tensor_of(k, SLOT_IN, 0), y = cpu_tensor_of(k, SLOT_IN, 1), wt = cpu_tensor_of(k, SLOT_OUT, 0);
		break;
	}
	DNNL_TRY(md_rows(&x_md, x), "describing the data");
	DNNL_TRY(md_of(&w_md, wt), "describing the weights");
	DNNL_TRY(md_of(&y_md, y), "describing the output");
	/* the bias is [O] in every direction (input, gradient, or absent from bwd_data
	 * where it only shapes the forward hint) */
	const atm_tensor *bias = n->op == ATM_OP_IP_FWD       ? cpu_tensor_of(k, SLOT_IN, 2)
	                       : n->op == ATM_OP_IP_BWD_WEIGHTS ? cpu_tensor_of(k, SLOT_OUT, 1)
	                                                        : NULL;
	DNNL_TRY(md_dense_dt(&b_md, 1, &wt->dims[0], bias ? dt_of(bias) : dnnl_f32),
	         "describing the bias");
	DNNL_TRY(dnnl_inner_product_forward_desc_init(&fwd_d, dnnl_forward_training, &x_md, &w_md,
	                                              &b_md, &y_md),
	         "describing the forward inner product");
	if (n->op == ATM_OP_IP_FWD) {
		DNNL_TRY(dnnl_primitive_desc_create(&pd, &fwd_d, attr, k->cpu->engine, NULL),
		         "creating the inner product");
		struct bind bs[] = {{DNNL_ARG_SRC, SLOT_IN, 0}, {DNNL_ARG_WEIGHTS, SLOT_IN, 1},
		                    {DNNL_ARG_BIAS, SLOT_IN, 2}, {DNNL_ARG_DST, SLOT_OUT, 0}};
		rc = add_step(k, pd, 4, bs);
		goto fail;
	}
	DNNL_TRY(dnnl_primitive_desc_create(&hint, &fwd_d, NULL, k->cpu->engine, NULL),
	         "creating the forward inner product hint");
	if (n->op == ATM_OP_IP_BWD_DATA) {
		DNNL_TRY(dnnl_inner_product_backward_data_desc_init(&bwd_d, &x_md, &w_md, &y_md),
		         "describing the backward-data inner product");
		DNNL_TRY(dnnl_primitive_desc_create(&pd, &bwd_d, attr, k->cpu->engine, hint),
		         "creating the backward-data inner product");
		struct bind bs[] = {{DNNL_ARG_DIFF_DST, SLOT_IN, 0}, {DNNL_ARG_WEIGHTS, SLOT_IN, 1},
		                    {DNNL_ARG_DIFF_SRC, SLOT_OUT, 0}};
		rc = add_step(k, pd, 3, bs);
	} else {
		DNNL_TRY(dnnl_inner_product_backward_weights_desc_init(&bwd_d, &x_md, &w_md, &b_md, &y_md),
		         "describing the backward-weights inner product");
		DNNL_TRY(dnnl_primitive_desc_create(&pd, &bwd_d, attr, k->cpu->engine, hint),
		         "creating the backward-weights inner product");
		struct bind bs[] = {{DNNL_ARG_SRC, SLOT_IN, 0}, {DNNL_ARG_DIFF_DST, SLOT_IN, 1},
		                    {DNNL_ARG_DIFF_WEIGHTS, SLOT_OUT, 0}, {DNNL_ARG_DIFF_BIAS, SLOT_OUT, 1}};
		rc = add_step(k, pd, 4, bs);
	}
fail:
	return pds_release(rc, pd, hint);
}

/* The element-wise ops as oneDNN algorithms: the forward one, and the one the backward pass
 * and its forward hint use. ReLU and tanh differentiate from the forward OUTPUT (the
 * *_use_dst_for_bwd forms), which lets the graph drop x after the forward pass; GELU from x. */
struct eltwise_alg {
	dnnl_alg_kind_t fwd, bwd;
	bool bwd_from_dst;
	float alpha; /* the algorithm's parameter (swish's beta: 1 for SiLU; clip's lower bound) */
	float beta;  /* its second (clip's upper bound) */
};

static struct eltwise_alg eltwise_alg_of(const atm_node *n)
{
	switch (n->op) {
	case ATM_OP_GELU_FWD:
	case ATM_OP_GELU_BWD: {
		dnnl_alg_kind_t g = n->attrs.tanh ? dnnl_eltwise_gelu_tanh : dnnl_eltwise_gelu_erf;
		return (struct eltwise_alg){g, g, false, 0.f, 0.f};
	}
	case ATM_OP_TANH_FWD:
	case ATM_OP_TANH_BWD:
		return (struct eltwise_alg){dnnl_eltwise_tanh, dnnl_eltwise_tanh_use_dst_for_bwd, true,
		                            0.f, 0.f};
	case ATM_OP_SILU_FWD:
	case ATM_OP_SILU_BWD: /* x * sigmoid(alpha * x) */
		return (struct eltwise_alg){dnnl_eltwise_swish, dnnl_eltwise_swish, false, 1.f, 0.f};
	case ATM_OP_SIGMOID_FWD:
	case ATM_OP_SIGMOID_BWD:
		return (struct eltwise_alg){dnnl_eltwise_logistic, dnnl_eltwise_logistic_use_dst_for_bwd,
		                            true, 0.f, 0.f};
	case ATM_OP_HARDSWISH_FWD:
	case ATM_OP_HARDSWISH_BWD:
		return (struct eltwise_alg){dnnl_eltwise_hardswish, dnnl_eltwise_hardswish, false, 0.f, 0.f};
	case ATM_OP_RELU6_FWD:
	case ATM_OP_RELU6_BWD: /* clip to [alpha, beta] = [0, 6] */
		return (struct eltwise_alg){dnnl_eltwise_clip_v2, dnnl_eltwise_clip_v2_use_dst_for_bwd,
		                            true, 0.f, 6.f};
	default:
		return (struct eltwise_alg){dnnl_eltwise_relu, dnnl_eltwise_relu_use_dst_for_bwd, true,
		                            0.f, 0.f};
	}
}

/* cpu_build_eltwise -- ReLU, GELU, tanh, SiLU, sigmoid, hardswish or ReLU6: forward (one input), or
 * backward from the forward tensor and dy */
atm_status cpu_build_eltwise(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	dnnl_memory_desc_t md;
	dnnl_eltwise_desc_t fwd_d, bwd_d;
	dnnl_primitive_desc_t hint = NULL, pd = NULL;
	atm_status rc = ATM_OK;
	struct eltwise_alg alg = eltwise_alg_of(knode(k));

	DNNL_TRY(md_flat(&md, cpu_tensor_of(k, SLOT_IN, 0)), "describing the data");
	if (knode(k)->n_in == 1) {
		DNNL_TRY(dnnl_eltwise_forward_desc_init(&fwd_d, dnnl_forward_training, alg.fwd, &md,
		                                        alg.alpha, alg.beta),
		         "describing the element-wise op");
		DNNL_TRY(dnnl_primitive_desc_create(&pd, &fwd_d, attr, k->cpu->engine, NULL),
		         "creating the element-wise op");
		struct bind bs[] = {{DNNL_ARG_SRC, SLOT_IN, 0}, {DNNL_ARG_DST, SLOT_OUT, 0}};
		rc = add_step(k, pd, 2, bs);
		goto fail;
	}
	DNNL_TRY(dnnl_eltwise_forward_desc_init(&fwd_d, dnnl_forward_training, alg.bwd, &md, alg.alpha,
	                                        alg.beta),
	         "describing the forward element-wise hint");
	DNNL_TRY(dnnl_primitive_desc_create(&hint, &fwd_d, NULL, k->cpu->engine, NULL),
	         "creating the forward element-wise hint");
	DNNL_TRY(dnnl_eltwise_backward_desc_init(&bwd_d, alg.bwd, &md, &md, alg.alpha, alg.beta),
	         "describing the backward element-wise op");
	DNNL_TRY(dnnl_primitive_desc_create(&pd, &bwd_d, attr, k->cpu->engine, hint),
	         "creating the backward element-wise op");
	struct bind bs[] = {{alg.bwd_from_dst ? DNNL_ARG_DST : DNNL_ARG_SRC, SLOT_IN, 0},
	                    {DNNL_ARG_DIFF_DST, SLOT_IN, 1}, {DNNL_ARG_DIFF_SRC, SLOT_OUT, 0}};
	rc = add_step(k, pd, 3, bs);
fail:
	return pds_release(rc, pd, hint);
}

/* cpu_build_pool -- max pooling keeps oneDNN's workspace (the argmax in u8 or s32,
 * laid out like y) in the graph's i32 tensor of y's shape; average pooling
 * counts or skips the padding as exclude_pad says */
atm_status cpu_build_pool(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_node *n = knode(k);
	bool fwd = n->op == ATM_OP_MAXPOOL_FWD || n->op == ATM_OP_AVGPOOL_FWD;
	bool max = n->op == ATM_OP_MAXPOOL_FWD || n->op == ATM_OP_MAXPOOL_BWD;
	struct window w = window_of(&n->attrs);
	const atm_tensor *x = fwd ? cpu_tensor_of(k, SLOT_IN, 0) : cpu_tensor_of(k, SLOT_OUT, 0);
	const atm_tensor *y = fwd ? cpu_tensor_of(k, SLOT_OUT, 0) : cpu_tensor_of(k, SLOT_IN, 0);
	dnnl_alg_kind_t alg = max ? dnnl_pooling_max
	                    : n->attrs.exclude_pad ? dnnl_pooling_avg_exclude_padding
	                                           : dnnl_pooling_avg_include_padding;
	dnnl_memory_desc_t x_md, y_md;
	dnnl_pooling_desc_t fwd_d, bwd_d;
	dnnl_primitive_desc_t hint = NULL, pd = NULL;
	atm_status rc = ATM_OK;

	/* A window lying wholly in the padding has no maximum and no average;
	 * the graph's shape rule allows it, so refuse it here by name. */
	if (n->attrs.pad[0] >= w.kernel[0] || n->attrs.pad[2] >= w.kernel[0] ||
	    n->attrs.pad[1] >= w.kernel[1] || n->attrs.pad[3] >= w.kernel[1]) {
		char msg[192];
		snprintf(msg, sizeof msg, "padding [%d, %d, %d, %d] must be smaller than the %lldx%lld "
		         "window", n->attrs.pad[0], n->attrs.pad[1], n->attrs.pad[2], n->attrs.pad[3],
		         (long long)w.kernel[0], (long long)w.kernel[1]);
		return cpu_node_err(k, ATM_E_UNSUPPORTED, msg);
	}
	DNNL_TRY(md_of(&x_md, x), "describing the data");
	DNNL_TRY(md_of(&y_md, y), "describing the output");
	DNNL_TRY(dnnl_pooling_forward_desc_init(&fwd_d, dnnl_forward_training, alg, &x_md, &y_md,
	                                        w.strides, w.kernel, w.pad_l, w.pad_r),
	         "describing the forward pooling");
	if (fwd) {
		DNNL_TRY(dnnl_primitive_desc_create(&pd, &fwd_d, attr, k->cpu->engine, NULL),
		         "creating the pooling");
		struct bind bs[] = {{DNNL_ARG_SRC, SLOT_IN, 0}, {DNNL_ARG_DST, SLOT_OUT, 0},
		                    {DNNL_ARG_WORKSPACE, SLOT_OUT, 1}};
		rc = add_step(k, pd, max ? 3 : 2, bs);
		if (rc == ATM_OK && max) {
			/* add_step checked that the workspace fits the argmax tensor */
			const dnnl_memory_desc_t *ws;
			ws = dnnl_primitive_desc_query_md(pd, dnnl_query_workspace_md, 0);
			k->ws_used_bytes = md_span_bytes(ws);
			k->ws_tail_bytes = cpu_tensor_of(k, SLOT_OUT, 1)->bytes - k->ws_used_bytes;
		}
		goto fail;
	}
	DNNL_TRY(dnnl_primitive_desc_create(&hint, &fwd_d, NULL, k->cpu->engine, NULL),
	         "creating the forward pooling hint");
	DNNL_TRY(dnnl_pooling_backward_desc_init(&bwd_d, alg, &x_md, &y_md, w.strides, w.kernel,
	                                         w.pad_l, w.pad_r),
	         "describing the backward pooling");
	DNNL_TRY(dnnl_primitive_desc_create(&pd, &bwd_d, attr, k->cpu->engine, hint),
	         "creating the backward pooling");
	struct bind bs[] = {{DNNL_ARG_DIFF_DST, SLOT_IN, 0}, {DNNL_ARG_DIFF_SRC, SLOT_OUT, 0},
	                    {DNNL_ARG_WORKSPACE, SLOT_IN, 1}};
	rc = add_step(k, pd, max ? 3 : 2, bs);
fail:
	return pds_release(rc, pd, hint);
}

/* norm_bwd_binds -- the backward of layer norm: x, dy, gamma, mean, var -> dx,
 * dgamma, dbeta. oneDNN 2.x counts the shift among the backward pass's inputs whenever
 * use_shift is set and refuses to run without one, yet no gradient depends on beta, so the
 * graph's backward nodes do not carry it: gamma's buffer, of the same [C] shape, stands in; it
 * is only ever read as the scale. */
static const struct bind norm_bwd_binds[9] = {
	{DNNL_ARG_SRC, SLOT_IN, 0},       {DNNL_ARG_DIFF_DST, SLOT_IN, 1},
	{DNNL_ARG_SCALE, SLOT_IN, 2},     {DNNL_ARG_SHIFT, SLOT_IN, 2},
	{DNNL_ARG_MEAN, SLOT_IN, 3},      {DNNL_ARG_VARIANCE, SLOT_IN, 4},
	{DNNL_ARG_DIFF_SRC, SLOT_OUT, 0}, {DNNL_ARG_DIFF_SCALE, SLOT_OUT, 1},
	{DNNL_ARG_DIFF_SHIFT, SLOT_OUT, 2},
};


/* cpu_build_concat -- oneDNN's concat of the inputs along attrs.axis */
atm_status cpu_build_concat(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_node *n = knode(k);
	dnnl_memory_desc_t y_md, *x_mds = NULL;
	struct bind *bs = NULL;
	dnnl_primitive_desc_t pd = NULL;
	atm_status rc = ATM_OK;

	x_mds = calloc((size_t)n->n_in, sizeof *x_mds);
	bs = calloc((size_t)n->n_in + 1, sizeof *bs);
	if (!x_mds || !bs) {
		rc = cpu_node_err(k, ATM_E_NOMEM, "out of memory building the kernel");
		goto fail;
	}
	for (int i = 0; i < n->n_in; i++) {
		DNNL_TRY(md_of(&x_mds[i], cpu_tensor_of(k, SLOT_IN, i)), "describing an input");
		bs[i] = (struct bind){DNNL_ARG_MULTIPLE_SRC + i, SLOT_IN, i};
	}
	bs[n->n_in] = (struct bind){DNNL_ARG_DST, SLOT_OUT, 0};
	DNNL_TRY(md_of(&y_md, cpu_tensor_of(k, SLOT_OUT, 0)), "describing the output");
	DNNL_TRY(dnnl_concat_primitive_desc_create(&pd, &y_md, n->n_in, n->attrs.axis, x_mds, attr,
	                                           k->cpu->engine),
	         "creating the concat");
	rc = add_step(k, pd, n->n_in + 1, bs);
fail:
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	free(bs);
	free(x_mds);
	return rc;
}


/* cpu_build_add -- y = a + b with oneDNN's binary add on flat dense tensors */
atm_status cpu_build_add(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	dnnl_memory_desc_t md;
	dnnl_binary_desc_t d;
	dnnl_primitive_desc_t pd = NULL;
	atm_status rc = ATM_OK;

	DNNL_TRY(md_flat(&md, cpu_tensor_of(k, SLOT_OUT, 0)), "describing the data");
	DNNL_TRY(dnnl_binary_desc_init(&d, dnnl_binary_add, &md, &md, &md), "describing the add");
	DNNL_TRY(dnnl_primitive_desc_create(&pd, &d, attr, k->cpu->engine, NULL), "creating the add");
	struct bind bs[] = {{DNNL_ARG_SRC_0, SLOT_IN, 0}, {DNNL_ARG_SRC_1, SLOT_IN, 1},
	                    {DNNL_ARG_DST, SLOT_OUT, 0}};
	rc = add_step(k, pd, 3, bs);
fail:
	return pds_release(rc, pd, NULL);
}

/* cpu_build_mul -- y = a * b with oneDNN's binary mul: flat when the shapes agree, else in a's
 * shape with b's dims padded in front by ones, which oneDNN broadcasts */
atm_status cpu_build_mul(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_tensor *a = cpu_tensor_of(k, SLOT_IN, 0), *b = cpu_tensor_of(k, SLOT_IN, 1);
	dnnl_memory_desc_t a_md, b_md;
	dnnl_binary_desc_t d;
	dnnl_primitive_desc_t pd = NULL;
	atm_status rc = ATM_OK;

	if (a->n_elems == b->n_elems) {
		DNNL_TRY(md_flat(&a_md, a), "describing the data");
		b_md = a_md;
	} else {
		int64_t bd[ATM_MAX_DIMS];
		int lead = a->ndim - b->ndim;
		for (int i = 0; i < a->ndim; i++)
			bd[i] = i < lead ? 1 : b->dims[i - lead];
		DNNL_TRY(md_of(&a_md, a), "describing the data");
		DNNL_TRY(md_dense_dt(&b_md, a->ndim, bd, dt_of(b)), "describing the broadcast operand");
	}
	DNNL_TRY(dnnl_binary_desc_init(&d, dnnl_binary_mul, &a_md, &b_md, &a_md),
	         "describing the multiply");
	DNNL_TRY(dnnl_primitive_desc_create(&pd, &d, attr, k->cpu->engine, NULL),
	         "creating the multiply");
	struct bind bs[] = {{DNNL_ARG_SRC_0, SLOT_IN, 0}, {DNNL_ARG_SRC_1, SLOT_IN, 1},
	                    {DNNL_ARG_DST, SLOT_OUT, 0}};
	rc = add_step(k, pd, 3, bs);
fail:
	return pds_release(rc, pd, NULL);
}

/* ---------------------------------------------------------------- transformer ops */

/* md_strided -- a descriptor of type dt and ndim dims with the given element strides */
static dnnl_status_t md_strided(dnnl_memory_desc_t *md, int ndim, const int64_t *dims,
                                const int64_t *strides, dnnl_data_type_t dt)
{
	dnnl_dims_t d, st;
	for (int i = 0; i < ndim; i++)
		d[i] = dims[i], st[i] = strides[i];
	return dnnl_memory_desc_init_by_strides(md, ndim, d, dt, st);
}

/* md_matrix -- a batch of rows x cols matrices stored row-major ([batch, r, c] when not
 * transposed, [batch, c, r] when it is), described as [batch, r, c] for the matmul; a batch
 * of 1 that every entry shares broadcasts */
static dnnl_status_t md_matrix(dnnl_memory_desc_t *md, int64_t batch, int64_t rows, int64_t cols,
                               bool trans, dnnl_data_type_t dt)
{
	int64_t dims[3] = {batch, rows, cols};
	int64_t strides[3] = {rows * cols, trans ? 1 : cols, trans ? rows : 1};
	return md_strided(md, 3, dims, strides, dt);
}

/* md_lead -- t as [rows, last]: its leading dims folded */
static dnnl_status_t md_lead(dnnl_memory_desc_t *md, const atm_tensor *t)
{
	int64_t last = t->dims[t->ndim - 1];
	int64_t dims[2] = {t->n_elems / last, last};
	return md_dense_dt(md, 2, dims, dt_of(t));
}

/* cpu_build_matmul -- one oneDNN matmul over [batch, m, k] x [batch or 1, k, n]; transposes are
 * strides, the scale an output scale, the bias [1, 1, n]. oneDNN scales the bias with the
 * product, so a scaled matmul adds its bias after the scale, as a binary post-op. */
atm_status cpu_build_matmul(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_node *n = knode(k);
	atm_matmul_dims d;
	dnnl_memory_desc_t a_md, b_md, c_md, bias_md;
	dnnl_matmul_desc_t md_d;
	dnnl_primitive_attr_t scaled = NULL;
	dnnl_post_ops_t post = NULL;
	dnnl_primitive_desc_t pd = NULL;
	atm_status rc = atm_matmul_dims_of(k->g, n, &d);
	if (rc < 0)
		return rc;
	float scale = n->attrs.scale ? n->attrs.scale : 1.0f;
	bool bias = n->n_in == 3, bias_after = bias && scale != 1.0f;
	DNNL_TRY(md_matrix(&a_md, d.batch, d.m, d.k, n->attrs.trans_a,
	                   dt_of(cpu_tensor_of(k, SLOT_IN, 0))), "describing a");
	DNNL_TRY(md_matrix(&b_md, d.b_batched ? d.batch : 1, d.k, d.n, n->attrs.trans_b,
	                   dt_of(cpu_tensor_of(k, SLOT_IN, 1))), "describing b");
	DNNL_TRY(md_matrix(&c_md, d.batch, d.m, d.n, false, dt_of(cpu_tensor_of(k, SLOT_OUT, 0))),
	         "describing c");
	DNNL_TRY(md_matrix(&bias_md, 1, 1, d.n, false,
	                   bias ? dt_of(cpu_tensor_of(k, SLOT_IN, 2)) : dnnl_f32),
	         "describing the bias");
	DNNL_TRY(dnnl_matmul_desc_init(&md_d, &a_md, &b_md, bias && !bias_after ? &bias_md : NULL,
	                               &c_md),
	         "describing the matmul");
	if (scale != 1.0f) {
		DNNL_TRY(dnnl_primitive_attr_clone(&scaled, attr), "copying the attributes");
		DNNL_TRY(dnnl_primitive_attr_set_output_scales(scaled, 1, 0, &scale),
		         "setting the scale");
	}
	if (bias_after) {
		DNNL_TRY(dnnl_post_ops_create(&post), "making the bias post-op");
		DNNL_TRY(dnnl_post_ops_append_binary(post, dnnl_binary_add, &bias_md),
		         "adding the bias post-op");
		DNNL_TRY(dnnl_primitive_attr_set_post_ops(scaled, post), "setting the bias post-op");
	}
	DNNL_TRY(dnnl_primitive_desc_create(&pd, &md_d, scaled ? scaled : attr, k->cpu->engine, NULL),
	         "creating the matmul");
	struct bind bs[] = {{DNNL_ARG_SRC, SLOT_IN, 0}, {DNNL_ARG_WEIGHTS, SLOT_IN, 1},
	                    {DNNL_ARG_DST, SLOT_OUT, 0},
	                    {bias_after ? DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1
	                                : DNNL_ARG_BIAS, SLOT_IN, 2}};
	rc = add_step(k, pd, bias ? 4 : 3, bs);
fail:
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (post)
		dnnl_post_ops_destroy(post);
	if (scaled)
		dnnl_primitive_attr_destroy(scaled);
	return rc;
}

/* cpu_build_layer_norm -- oneDNN's layer normalization over x as [rows, C], statistics [rows];
 * the backward pass binds norm_bwd_binds */
atm_status cpu_build_layer_norm(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_node *n = knode(k);
	const atm_tensor *x = cpu_tensor_of(k, SLOT_IN, 0);
	unsigned flags = dnnl_use_scale | dnnl_use_shift;
	dnnl_memory_desc_t x_md, s_md;
	dnnl_layer_normalization_desc_t fwd_d, bwd_d;
	dnnl_primitive_desc_t hint = NULL, pd = NULL;
	atm_status rc = ATM_OK;
	int64_t rows = x->n_elems / x->dims[x->ndim - 1];

	DNNL_TRY(md_lead(&x_md, x), "describing the data");
	DNNL_TRY(md_dense(&s_md, 1, &rows), "describing the statistics");
	DNNL_TRY(dnnl_layer_normalization_forward_desc_init(&fwd_d, dnnl_forward_training, &x_md,
	                                                    &s_md, n->attrs.epsilon, flags),
	         "describing the forward layer norm");
	if (n->op == ATM_OP_LAYER_NORM_FWD) {
		DNNL_TRY(dnnl_primitive_desc_create(&pd, &fwd_d, attr, k->cpu->engine, NULL),
		         "creating the layer norm");
		struct bind bs[] = {{DNNL_ARG_SRC, SLOT_IN, 0},   {DNNL_ARG_SCALE, SLOT_IN, 1},
		                    {DNNL_ARG_SHIFT, SLOT_IN, 2}, {DNNL_ARG_DST, SLOT_OUT, 0},
		                    {DNNL_ARG_MEAN, SLOT_OUT, 1}, {DNNL_ARG_VARIANCE, SLOT_OUT, 2}};
		rc = add_step(k, pd, 6, bs);
		goto fail;
	}
	DNNL_TRY(dnnl_primitive_desc_create(&hint, &fwd_d, NULL, k->cpu->engine, NULL),
	         "creating the forward layer norm hint");
	DNNL_TRY(dnnl_layer_normalization_backward_desc_init(&bwd_d, dnnl_backward, &x_md, &x_md,
	                                                     &s_md, n->attrs.epsilon, flags),
	         "describing the backward layer norm");
	DNNL_TRY(dnnl_primitive_desc_create(&pd, &bwd_d, attr, k->cpu->engine, hint),
	         "creating the backward layer norm");
	rc = add_step(k, pd, 9, norm_bwd_binds);
fail:
	return pds_release(rc, pd, hint);
}

/* cpu_build_softmax -- oneDNN's softmax over the last dim (backward: from y), or its log form
 * into the token loss's log-probabilities. A causal forward softmax has no oneDNN primitive
 * (it takes no mask): plain C (cpu_run_causal_softmax) does it, and its backward is the plain
 * one, since a masked entry's y is zero and so is its gradient. */
atm_status cpu_build_softmax(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_node *n = knode(k);
	dnnl_memory_desc_t md;
	dnnl_softmax_desc_t fwd_d, bwd_d;
	dnnl_logsoftmax_desc_t log_d;
	dnnl_primitive_desc_t hint = NULL, pd = NULL;
	atm_status rc = ATM_OK;

	if (n->op == ATM_OP_SOFTMAX_FWD && n->attrs.causal)
		return ATM_OK;
	DNNL_TRY(md_lead(&md, cpu_tensor_of(k, SLOT_IN, 0)), "describing the data");
	if (n->op == ATM_OP_TOKEN_XENT_FWD) {
		DNNL_TRY(dnnl_logsoftmax_forward_desc_init(&log_d, dnnl_forward_training, &md, 1),
		         "describing the log-softmax");
		DNNL_TRY(dnnl_primitive_desc_create(&pd, &log_d, attr, k->cpu->engine, NULL),
		         "creating the log-softmax");
		struct bind bs[] = {{DNNL_ARG_SRC, SLOT_IN, 0}, {DNNL_ARG_DST, SLOT_OUT, 0}};
		rc = add_step(k, pd, 2, bs);
		goto fail;
	}
	DNNL_TRY(dnnl_softmax_forward_desc_init(&fwd_d, dnnl_forward_training, &md, 1),
	         "describing the softmax");
	if (n->op == ATM_OP_SOFTMAX_FWD) {
		DNNL_TRY(dnnl_primitive_desc_create(&pd, &fwd_d, attr, k->cpu->engine, NULL),
		         "creating the softmax");
		struct bind bs[] = {{DNNL_ARG_SRC, SLOT_IN, 0}, {DNNL_ARG_DST, SLOT_OUT, 0}};
		rc = add_step(k, pd, 2, bs);
		goto fail;
	}
	DNNL_TRY(dnnl_primitive_desc_create(&hint, &fwd_d, NULL, k->cpu->engine, NULL),
	         "creating the forward softmax hint");
	DNNL_TRY(dnnl_softmax_backward_desc_init(&bwd_d, &md, &md, 1),
	         "describing the backward softmax");
	DNNL_TRY(dnnl_primitive_desc_create(&pd, &bwd_d, attr, k->cpu->engine, hint),
	         "creating the backward softmax");
	struct bind bs[] = {{DNNL_ARG_DST, SLOT_IN, 0}, {DNNL_ARG_DIFF_DST, SLOT_IN, 1},
	                    {DNNL_ARG_DIFF_SRC, SLOT_OUT, 0}};
	rc = add_step(k, pd, 3, bs);
fail:
	return pds_release(rc, pd, hint);
}

/* eltwise_step -- one oneDNN element-wise forward primitive alg(alpha, beta) from one
 * buffer to another (the same one: in place) */
static atm_status eltwise_step(atm_kernel *k, const_dnnl_primitive_attr_t attr,
                               const atm_tensor *t, dnnl_alg_kind_t alg, float alpha, float beta,
                               struct bind from, struct bind to)
{
	dnnl_memory_desc_t md;
	dnnl_eltwise_desc_t d;
	dnnl_primitive_desc_t pd = NULL;
	atm_status rc = ATM_OK;
	DNNL_TRY(md_flat(&md, t), "describing the data");
	DNNL_TRY(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, alg, &md, alpha, beta),
	         "describing an element-wise step");
	DNNL_TRY(dnnl_primitive_desc_create(&pd, &d, attr, k->cpu->engine, NULL),
	         "creating an element-wise step");
	from.arg = DNNL_ARG_SRC;
	to.arg = DNNL_ARG_DST;
	rc = add_step(k, pd, 2, (struct bind[]){from, to});
fail:
	return pds_release(rc, pd, NULL);
}

/* cpu_build_token_xent_bwd -- dlogits = exp(logp) / rows by two oneDNN element-wise steps; the
 * run then takes 1 / rows off each row's label (cpu_run_token_xent_bwd) */
atm_status cpu_build_token_xent_bwd(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_tensor *lp = cpu_tensor_of(k, SLOT_IN, 0);
	float inv = 1.0f / (float)(lp->n_elems / lp->dims[lp->ndim - 1]);
	atm_status rc = eltwise_step(k, attr, lp, dnnl_eltwise_exp, 0.f, 0.f,
	                             (struct bind){0, SLOT_IN, 0}, (struct bind){0, SLOT_OUT, 0});
	if (rc < 0)
		return rc;
	return eltwise_step(k, attr, lp, dnnl_eltwise_linear, inv, 0.f, (struct bind){0, SLOT_OUT, 0},
	                    (struct bind){0, SLOT_OUT, 0});
}

/* cpu_build_permute -- one oneDNN reorder that reads x through strides in the output's axis
 * order: y[i...] = view(x)[perm...] */
atm_status cpu_build_permute(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_node *n = knode(k);
	int64_t view[ATM_MAX_DIMS], permuted[ATM_MAX_DIMS], vstride[ATM_MAX_DIMS], st[ATM_MAX_DIMS];
	dnnl_memory_desc_t x_md, y_md;
	dnnl_primitive_desc_t pd = NULL;
	int r = n->attrs.n_perm;
	atm_status rc = atm_permute_view(k->g, n, view, permuted);
	if (rc < 0)
		return rc;
	int64_t stride = 1;
	for (int i = r - 1; i >= 0; i--) {
		vstride[i] = stride;
		stride *= view[i];
	}
	for (int i = 0; i < r; i++)
		st[i] = vstride[n->attrs.perm[i]];
	DNNL_TRY(md_strided(&x_md, r, permuted, st, dt_of(cpu_tensor_of(k, SLOT_IN, 0))),
	         "describing the input");
	DNNL_TRY(md_dense_dt(&y_md, r, permuted, dt_of(cpu_tensor_of(k, SLOT_OUT, 0))),
	         "describing the output");
	DNNL_TRY(dnnl_reorder_primitive_desc_create(&pd, &x_md, k->cpu->engine, &y_md,
	                                            k->cpu->engine, attr),
	         "creating the reorder");
	struct bind bs[] = {{DNNL_ARG_FROM, SLOT_IN, 0}, {DNNL_ARG_TO, SLOT_OUT, 0}};
	rc = add_step(k, pd, 2, bs);
fail:
	return pds_release(rc, pd, NULL);
}

