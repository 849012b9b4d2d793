/* kernels.c -- CPU kernels of every graph op: oneDNN primitives built once per node, plain C for SGD and the loss */
#include <dnnl.h>
#include <dnnl_debug.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "kernels.h"

/* The oneDNN C API changed shape in 3.0 (operation descriptors are gone);
 * this file speaks the 2.x dialect and says so at build time. */
#if DNNL_VERSION_MAJOR != 2 || DNNL_VERSION_MINOR < 3
#error "runtime/cpu/kernels.c needs oneDNN 2.3 to 2.x (batch norm use_scale/use_shift flags, 2.x C API)"
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
};

/* knode -- the kernel's node as the graph holds it now */
static const atm_node *knode(const atm_kernel *k)
{
	return atm_graph_node(k->g, k->node_id);
}

/* ---------------------------------------------------------------- errors */

/* node_err -- a message that starts with the node and its op */
static atm_status node_err(const atm_kernel *k, atm_status code, const char *what)
{
	return atm_err(code, "node '%s' (%s): %s", knode(k)->name, atm_op_name(knode(k)->op), what);
}

/* dnnl_fail -- map a failed oneDNN call to a status. While building, an
 * unimplemented or rejected configuration is "unsupported" (oneDNN has no
 * kernel for a shape the graph allows); once built, a primitive that fails is
 * a bug of ours (an argument missing, say), so an internal error. */
static atm_status dnnl_fail(const atm_kernel *k, const char *what, dnnl_status_t s)
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

/* Every oneDNN call in a builder goes through this, so a failure names the
 * node and the call and jumps to the builder's one cleanup path. */
#define DNNL_TRY(call, what)                       \
	do {                                           \
		dnnl_status_t s_ = (call);                 \
		if (s_ != dnnl_success) {                  \
			rc = dnnl_fail(k, (what), s_);         \
			goto fail;                             \
		}                                          \
	} while (0)

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

/* ---------------------------------------------------------------- descriptors */

/* tensor_of -- the graph tensor behind a slot */
static const atm_tensor *tensor_of(const atm_kernel *k, enum slot slot, int index)
{
	const int32_t *ids = slot == SLOT_IN ? knode(k)->in : knode(k)->out;
	return atm_graph_tensor(k->g, ids[index]);
}

/* md_dense -- a plain row-major f32 descriptor (abcd...): no blocked layouts,
 * so a buffer means the same thing to every kernel and to the move engine */
static dnnl_status_t md_dense(dnnl_memory_desc_t *md, int ndim, const int64_t *dims)
{
	dnnl_dims_t d, strides;
	int64_t stride = 1;
	for (int i = ndim - 1; i >= 0; i--) {
		d[i] = dims[i];
		strides[i] = stride;
		stride *= dims[i];
	}
	return dnnl_memory_desc_init_by_strides(md, ndim, d, dnnl_f32, strides);
}

/* md_of -- the dense descriptor of a tensor in its own shape */
static dnnl_status_t md_of(dnnl_memory_desc_t *md, const atm_tensor *t)
{
	return md_dense(md, t->ndim, t->dims);
}

/* md_rows -- t seen as [N, rest]: inner product flattens its input that way */
static dnnl_status_t md_rows(dnnl_memory_desc_t *md, const atm_tensor *t)
{
	int64_t dims[2] = {t->dims[0], t->n_elems / t->dims[0]};
	return md_dense(md, 2, dims);
}

/* md_flat -- t as one dimension: element-wise ops on same-shaped dense
 * tensors do not care about the shape, and rank 1 has no rank limits */
static dnnl_status_t md_flat(dnnl_memory_desc_t *md, const atm_tensor *t)
{
	return md_dense(md, 1, &t->n_elems);
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

/* step_release -- destroy what a step owns (partially built ones too) */
static void step_release(struct step *s)
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
		rc = node_err(k, ATM_E_NOMEM, "out of memory building the kernel");
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
		const atm_tensor *t = tensor_of(k, binds[i].slot, binds[i].index);
		int64_t span = md ? md_span_bytes(md) : -1;
		/* A blocked or oversized descriptor would make the buffer mean something
		 * else than the graph says, or write past it: a bug here, not bad input. */
		if (!md || md->ndims == 0 || span < 0 || span > t->bytes) {
			snprintf(msg, sizeof msg, "oneDNN wants %lld bytes in a %s layout for argument %d "
			         "but tensor '%s' has %lld bytes", (long long)span,
			         span < 0 ? "non-plain" : "plain", binds[i].arg, t->name,
			         (long long)t->bytes);
			rc = node_err(k, ATM_E_INTERNAL, msg);
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
		rc = node_err(k, ATM_E_INTERNAL, "the oneDNN primitive wants a workspace this op has no "
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
		rc = node_err(k, ATM_E_NOMEM, "out of memory building the kernel");
		goto fail;
	}
	k->steps = grown;
	k->steps[k->n_steps++] = s;
	return ATM_OK;
fail:
	step_release(&s);
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
	return dnnl_memory_desc_init_by_tag(md, t->ndim, d, dnnl_f32, dnnl_format_tag_any);
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
	return dnnl_memory_desc_init_by_tag(md, 5, d, dnnl_f32,
	                                    any ? dnnl_format_tag_any : dnnl_goihw);
}

/* build_conv -- forward (training), backward data or backward weights (+bias);
 * the backward ones need the forward descriptor as a hint */
static atm_status build_conv(atm_kernel *k, const_dnnl_primitive_attr_t attr)
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
		x = tensor_of(k, SLOT_IN, 0), wt = tensor_of(k, SLOT_IN, 1), y = tensor_of(k, SLOT_OUT, 0);
		if (n->n_in == 3)
			b = tensor_of(k, SLOT_IN, 2);
		args[0] = (struct conv_arg){.arg = DNNL_ARG_SRC, .slot = SLOT_IN, .index = 0};
		args[1] = (struct conv_arg){.arg = DNNL_ARG_WEIGHTS, .slot = SLOT_IN, .index = 1};
		args[2] = (struct conv_arg){.arg = DNNL_ARG_DST, .slot = SLOT_OUT, .index = 0};
		args[3] = (struct conv_arg){.arg = DNNL_ARG_BIAS, .slot = SLOT_IN, .index = 2};
		break;
	case ATM_OP_CONV_BWD_DATA:
		y = tensor_of(k, SLOT_IN, 0), wt = tensor_of(k, SLOT_IN, 1), x = tensor_of(k, SLOT_OUT, 0);
		args[0] = (struct conv_arg){.arg = DNNL_ARG_DIFF_DST, .slot = SLOT_IN, .index = 0};
		args[1] = (struct conv_arg){.arg = DNNL_ARG_WEIGHTS, .slot = SLOT_IN, .index = 1};
		args[2] = (struct conv_arg){.arg = DNNL_ARG_DIFF_SRC, .slot = SLOT_OUT, .index = 0};
		break;
	default:
		x = tensor_of(k, SLOT_IN, 0), y = tensor_of(k, SLOT_IN, 1), wt = tensor_of(k, SLOT_OUT, 0);
		if (n->n_out == 2)
			b = tensor_of(k, SLOT_OUT, 1);
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
		                : md_of(&args[i].plain, tensor_of(k, args[i].slot, args[i].index)),
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
	/* direct, not auto: Winograd would change the numbers with the shape */
	DNNL_TRY(dnnl_convolution_forward_desc_init(&fwd_d, dnnl_forward_training,
	                                            dnnl_convolution_direct, &x_md, &w_md,
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

/* build_ip -- inner product forward (training), backward data, backward
 * weights; x of any rank is [N, I] in memory already, so it is described so */
static atm_status build_ip(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_node *n = knode(k);
	dnnl_memory_desc_t x_md, w_md, b_md, y_md;
	dnnl_inner_product_desc_t fwd_d, bwd_d;
	dnnl_primitive_desc_t hint = NULL, pd = NULL;
	const atm_tensor *x, *wt, *y;
	atm_status rc = ATM_OK;

	switch (n->op) {
	case ATM_OP_IP_FWD:
		x = tensor_of(k, SLOT_IN, 0), wt = tensor_of(k, SLOT_IN, 1), y = tensor_of(k, SLOT_OUT, 0);
		break;
	case ATM_OP_IP_BWD_DATA:
		y = tensor_of(k, SLOT_IN, 0), wt = tensor_of(k, SLOT_IN, 1), x = tensor_of(k, SLOT_OUT, 0);
		break;
	default:
		x = tensor_of(k, SLOT_IN, 0), y = tensor_of(k, SLOT_IN, 1), wt = tensor_of(k, SLOT_OUT, 0);
		break;
	}
	DNNL_TRY(md_rows(&x_md, x), "describing the data");
	DNNL_TRY(md_of(&w_md, wt), "describing the weights");
	DNNL_TRY(md_of(&y_md, y), "describing the output");
	/* the bias is [O] in every direction (input, gradient, or absent from bwd_data
	 * where it only shapes the forward hint) */
	DNNL_TRY(md_dense(&b_md, 1, &wt->dims[0]), "describing the bias");
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

/* build_eltwise -- ReLU, GELU, tanh, SiLU, sigmoid, hardswish or ReLU6: forward (one input), or
 * backward from the forward tensor and dy */
static atm_status build_eltwise(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	dnnl_memory_desc_t md;
	dnnl_eltwise_desc_t fwd_d, bwd_d;
	dnnl_primitive_desc_t hint = NULL, pd = NULL;
	atm_status rc = ATM_OK;
	struct eltwise_alg alg = eltwise_alg_of(knode(k));

	DNNL_TRY(md_flat(&md, tensor_of(k, SLOT_IN, 0)), "describing the data");
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

/* build_pool -- max pooling keeps oneDNN's workspace (the argmax in u8 or s32,
 * laid out like y) in the graph's i32 tensor of y's shape; average pooling
 * counts or skips the padding as exclude_pad says */
static atm_status build_pool(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_node *n = knode(k);
	bool fwd = n->op == ATM_OP_MAXPOOL_FWD || n->op == ATM_OP_AVGPOOL_FWD;
	bool max = n->op == ATM_OP_MAXPOOL_FWD || n->op == ATM_OP_MAXPOOL_BWD;
	struct window w = window_of(&n->attrs);
	const atm_tensor *x = fwd ? tensor_of(k, SLOT_IN, 0) : tensor_of(k, SLOT_OUT, 0);
	const atm_tensor *y = fwd ? tensor_of(k, SLOT_OUT, 0) : tensor_of(k, SLOT_IN, 0);
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
		return node_err(k, ATM_E_UNSUPPORTED, msg);
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
			k->ws_tail_bytes = tensor_of(k, SLOT_OUT, 1)->bytes - k->ws_used_bytes;
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

/* Batch norm in plain C, over x as [N, C, S] (S the product of the dims past C). oneDNN 2.6's
 * batch norm on this plain layout took 1.6 times PyTorch's own kernel in a ResNet-50 step (its
 * fast kernels want blocked layouts, which would need reorders at every tier boundary); these
 * loops stream x (and dy) twice per channel, the channels shared among the threads. Each
 * channel's sums run in one fixed order whatever the thread count: LANES float partial sums
 * per row of S, the rows added in double, so a step's weights are the same bitwise. */
#define BN_LANES 16

/* bn_row_sum -- sum of x[0..n) (minus shift, squared when sq), in BN_LANES float lanes */
static double bn_row_sum(const float *x, int64_t n, float shift, bool sq)
{
	float lane[BN_LANES] = {0};
	int64_t i = 0;
	for (; i + BN_LANES <= n; i += BN_LANES)
		for (int j = 0; j < BN_LANES; j++) {
			float d = x[i + j] - shift;
			lane[j] += sq ? d * d : d;
		}
	double sum = 0;
	for (; i < n; i++) {
		float d = x[i] - shift;
		sum += sq ? d * d : d;
	}
	for (int j = 0; j < BN_LANES; j++)
		sum += lane[j];
	return sum;
}

/* bn_row_dot -- the sums of dy and of dy * (x - mean) over a row, in BN_LANES float lanes */
static void bn_row_dot(const float *x, const float *dy, int64_t n, float mean, double *sum_dy,
                       double *sum_dyx)
{
	float a[BN_LANES] = {0}, b[BN_LANES] = {0};
	int64_t i = 0;
	for (; i + BN_LANES <= n; i += BN_LANES)
		for (int j = 0; j < BN_LANES; j++) {
			a[j] += dy[i + j];
			b[j] += dy[i + j] * (x[i + j] - mean);
		}
	double sa = 0, sb = 0;
	for (; i < n; i++) {
		sa += dy[i];
		sb += dy[i] * (x[i] - mean);
	}
	for (int j = 0; j < BN_LANES; j++) {
		sa += a[j];
		sb += b[j];
	}
	*sum_dy += sa;
	*sum_dyx += sb;
}

/* bn_shape -- a batch norm's x as [n, c, sp], the count of values per channel, its epsilon */
struct bn_shape {
	int64_t n, c, sp;
	double count;
	float eps;
};

static struct bn_shape bn_shape_of(const atm_kernel *k)
{
	int64_t n = k->n_rows, c = k->n_cols, sp = tensor_of(k, SLOT_IN, 0)->n_elems / (n * c);
	return (struct bn_shape){n, c, sp, (double)(n * sp), knode(k)->attrs.epsilon};
}

/* build_bn -- the batch norm's [N, C, S] */
static atm_status build_bn(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	(void)attr;
	const atm_tensor *x = tensor_of(k, SLOT_IN, 0);
	k->n_rows = x->dims[0];
	k->n_cols = x->dims[1];
	return ATM_OK;
}

/* run_bn -- training batch norm: the batch mean and biased variance of each channel (two
 * passes), y = (x - mean) / sqrt(var + eps) * gamma + beta */
static atm_status run_bn(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *x = in[0], *gamma = in[1], *beta = in[2];
	float *y = out[0], *mean = out[1], *var = out[2];
	const struct bn_shape sh = bn_shape_of(k);
	const int64_t n = sh.n, c = sh.c, sp = sh.sp;
#pragma omp parallel for schedule(static)
	for (int64_t ch = 0; ch < c; ch++) {
		double sum = 0, sq = 0;
		for (int64_t b = 0; b < n; b++)
			sum += bn_row_sum(x + (b * c + ch) * sp, sp, 0.0f, false);
		float m = (float)(sum / sh.count);
		for (int64_t b = 0; b < n; b++)
			sq += bn_row_sum(x + (b * c + ch) * sp, sp, m, true);
		float v = (float)(sq / sh.count);
		float scale = gamma[ch] / sqrtf(v + sh.eps), shift = beta[ch];
		for (int64_t b = 0; b < n; b++) {
			const float *xr = x + (b * c + ch) * sp;
			float *yr = y + (b * c + ch) * sp;
			for (int64_t i = 0; i < sp; i++)
				yr[i] = (xr[i] - m) * scale + shift;
		}
		mean[ch] = m;
		var[ch] = v;
	}
	return ATM_OK;
}

/* run_bn_bwd -- dbeta = sum dy, dgamma = sum dy * xhat, dx = gamma / sqrt(var + eps) *
 * (dy - dbeta / M - xhat * dgamma / M), xhat = (x - mean) / sqrt(var + eps), M = N * S */
static atm_status run_bn_bwd(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *x = in[0], *dy = in[1], *gamma = in[2], *mean = in[3], *var = in[4];
	float *dx = out[0], *dgamma = out[1], *dbeta = out[2];
	const struct bn_shape sh = bn_shape_of(k);
	const int64_t n = sh.n, c = sh.c, sp = sh.sp;
#pragma omp parallel for schedule(static)
	for (int64_t ch = 0; ch < c; ch++) {
		double sum_dy = 0, sum_dyx = 0;
		float m = mean[ch], rstd = 1.0f / sqrtf(var[ch] + sh.eps);
		for (int64_t b = 0; b < n; b++)
			bn_row_dot(x + (b * c + ch) * sp, dy + (b * c + ch) * sp, sp, m, &sum_dy, &sum_dyx);
		float db = (float)sum_dy, dg = (float)(sum_dyx * rstd);
		float a = gamma[ch] * rstd, mdg = (float)(dg / sh.count) * rstd;
		float mdb = (float)(db / sh.count);
		for (int64_t b = 0; b < n; b++) {
			const float *xr = x + (b * c + ch) * sp, *dyr = dy + (b * c + ch) * sp;
			float *dxr = dx + (b * c + ch) * sp;
			for (int64_t i = 0; i < sp; i++)
				dxr[i] = a * (dyr[i] - mdb - (xr[i] - m) * mdg);
		}
		dgamma[ch] = dg;
		dbeta[ch] = db;
	}
	return ATM_OK;
}

/* build_concat -- oneDNN's concat of the inputs along attrs.axis */
static atm_status build_concat(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_node *n = knode(k);
	dnnl_memory_desc_t y_md, *x_mds = NULL;
	struct bind *bs = NULL;
	dnnl_primitive_desc_t pd = NULL;
	atm_status rc = ATM_OK;

	x_mds = calloc((size_t)n->n_in, sizeof *x_mds);
	bs = calloc((size_t)n->n_in + 1, sizeof *bs);
	if (!x_mds || !bs) {
		rc = node_err(k, ATM_E_NOMEM, "out of memory building the kernel");
		goto fail;
	}
	for (int i = 0; i < n->n_in; i++) {
		DNNL_TRY(md_of(&x_mds[i], tensor_of(k, SLOT_IN, i)), "describing an input");
		bs[i] = (struct bind){DNNL_ARG_MULTIPLE_SRC + i, SLOT_IN, i};
	}
	bs[n->n_in] = (struct bind){DNNL_ARG_DST, SLOT_OUT, 0};
	DNNL_TRY(md_of(&y_md, tensor_of(k, SLOT_OUT, 0)), "describing the output");
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

/* build_split -- the parts of dy along attrs.axis, as [outer, C, inner] blocks copied in plain
 * C: oneDNN's reorder per part took twice PyTorch's cat backward on DenseNet-264 */
static atm_status build_split(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	(void)attr;
	const atm_tensor *dy = tensor_of(k, SLOT_IN, 0);
	int axis = knode(k)->attrs.axis;
	k->n_rows = 1; /* the dims before the axis */
	for (int d = 0; d < axis; d++)
		k->n_rows *= dy->dims[d];
	k->n_cols = dy->n_elems / k->n_rows; /* one block: the axis and the dims after it */
	return ATM_OK;
}

/* run_split -- every part's rows of every block, the blocks shared by the threads */
static atm_status run_split(const atm_kernel *k, void *const *in, void *const *out)
{
	const atm_node *n = knode(k);
	const char *dy = in[0];
	int64_t block = k->n_cols * (int64_t)sizeof(float), outer = k->n_rows;
#pragma omp parallel for schedule(static)
	for (int64_t b = 0; b < outer; b++) {
		int64_t at = 0;
		for (int i = 0; i < n->n_out; i++) {
			int64_t len = tensor_of(k, SLOT_OUT, i)->bytes / outer;
			memcpy((char *)out[i] + b * len, dy + b * block + at, (size_t)len);
			at += len;
		}
	}
	return ATM_OK;
}

/* build_add -- y = a + b with oneDNN's binary add on flat dense tensors */
static atm_status build_add(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	dnnl_memory_desc_t md;
	dnnl_binary_desc_t d;
	dnnl_primitive_desc_t pd = NULL;
	atm_status rc = ATM_OK;

	DNNL_TRY(md_flat(&md, tensor_of(k, SLOT_OUT, 0)), "describing the data");
	DNNL_TRY(dnnl_binary_desc_init(&d, dnnl_binary_add, &md, &md, &md), "describing the add");
	DNNL_TRY(dnnl_primitive_desc_create(&pd, &d, attr, k->cpu->engine, NULL), "creating the add");
	struct bind bs[] = {{DNNL_ARG_SRC_0, SLOT_IN, 0}, {DNNL_ARG_SRC_1, SLOT_IN, 1},
	                    {DNNL_ARG_DST, SLOT_OUT, 0}};
	rc = add_step(k, pd, 3, bs);
fail:
	return pds_release(rc, pd, NULL);
}

/* build_mul -- y = a * b with oneDNN's binary mul: flat when the shapes agree, else in a's
 * shape with b's dims padded in front by ones, which oneDNN broadcasts */
static atm_status build_mul(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_tensor *a = tensor_of(k, SLOT_IN, 0), *b = tensor_of(k, SLOT_IN, 1);
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
		DNNL_TRY(md_dense(&b_md, a->ndim, bd), "describing the broadcast operand");
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

/* md_strided -- an f32 descriptor of ndim dims with the given element strides */
static dnnl_status_t md_strided(dnnl_memory_desc_t *md, int ndim, const int64_t *dims,
                                const int64_t *strides)
{
	dnnl_dims_t d, st;
	for (int i = 0; i < ndim; i++)
		d[i] = dims[i], st[i] = strides[i];
	return dnnl_memory_desc_init_by_strides(md, ndim, d, dnnl_f32, st);
}

/* md_matrix -- a batch of rows x cols matrices stored row-major ([batch, r, c] when not
 * transposed, [batch, c, r] when it is), described as [batch, r, c] for the matmul; a batch
 * of 1 that every entry shares broadcasts */
static dnnl_status_t md_matrix(dnnl_memory_desc_t *md, int64_t batch, int64_t rows, int64_t cols,
                               bool trans)
{
	int64_t dims[3] = {batch, rows, cols};
	int64_t strides[3] = {rows * cols, trans ? 1 : cols, trans ? rows : 1};
	return md_strided(md, 3, dims, strides);
}

/* md_lead -- t as [rows, last]: its leading dims folded */
static dnnl_status_t md_lead(dnnl_memory_desc_t *md, const atm_tensor *t)
{
	int64_t last = t->dims[t->ndim - 1];
	int64_t dims[2] = {t->n_elems / last, last};
	return md_dense(md, 2, dims);
}

/* build_matmul -- one oneDNN matmul over [batch, m, k] x [batch or 1, k, n]; transposes are
 * strides, the scale an output scale, the bias [1, 1, n]. oneDNN scales the bias with the
 * product, so a scaled matmul adds its bias after the scale, as a binary post-op. */
static atm_status build_matmul(atm_kernel *k, const_dnnl_primitive_attr_t attr)
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
	DNNL_TRY(md_matrix(&a_md, d.batch, d.m, d.k, n->attrs.trans_a), "describing a");
	DNNL_TRY(md_matrix(&b_md, d.b_batched ? d.batch : 1, d.k, d.n, n->attrs.trans_b),
	         "describing b");
	DNNL_TRY(md_matrix(&c_md, d.batch, d.m, d.n, false), "describing c");
	DNNL_TRY(md_matrix(&bias_md, 1, 1, d.n, false), "describing the bias");
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

/* build_layer_norm -- oneDNN's layer normalization over x as [rows, C], statistics [rows];
 * the backward pass binds norm_bwd_binds */
static atm_status build_layer_norm(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_node *n = knode(k);
	const atm_tensor *x = tensor_of(k, SLOT_IN, 0);
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

/* build_softmax -- oneDNN's softmax over the last dim (backward: from y), or its log form
 * into the token loss's log-probabilities. A causal forward softmax has no oneDNN primitive
 * (it takes no mask): plain C (run_causal_softmax) does it, and its backward is the plain
 * one, since a masked entry's y is zero and so is its gradient. */
static atm_status build_softmax(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_node *n = knode(k);
	dnnl_memory_desc_t md;
	dnnl_softmax_desc_t fwd_d, bwd_d;
	dnnl_logsoftmax_desc_t log_d;
	dnnl_primitive_desc_t hint = NULL, pd = NULL;
	atm_status rc = ATM_OK;

	if (n->op == ATM_OP_SOFTMAX_FWD && n->attrs.causal)
		return ATM_OK;
	DNNL_TRY(md_lead(&md, tensor_of(k, SLOT_IN, 0)), "describing the data");
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

/* build_token_xent_bwd -- dlogits = exp(logp) / rows by two oneDNN element-wise steps; the
 * run then takes 1 / rows off each row's label (run_token_xent_bwd) */
static atm_status build_token_xent_bwd(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	const atm_tensor *lp = tensor_of(k, SLOT_IN, 0);
	float inv = 1.0f / (float)(lp->n_elems / lp->dims[lp->ndim - 1]);
	atm_status rc = eltwise_step(k, attr, lp, dnnl_eltwise_exp, 0.f, 0.f,
	                             (struct bind){0, SLOT_IN, 0}, (struct bind){0, SLOT_OUT, 0});
	if (rc < 0)
		return rc;
	return eltwise_step(k, attr, lp, dnnl_eltwise_linear, inv, 0.f, (struct bind){0, SLOT_OUT, 0},
	                    (struct bind){0, SLOT_OUT, 0});
}

/* build_permute -- one oneDNN reorder that reads x through strides in the output's axis
 * order: y[i...] = view(x)[perm...] */
static atm_status build_permute(atm_kernel *k, const_dnnl_primitive_attr_t attr)
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
	DNNL_TRY(md_strided(&x_md, r, permuted, st), "describing the input");
	DNNL_TRY(md_dense(&y_md, r, permuted), "describing the output");
	DNNL_TRY(dnnl_reorder_primitive_desc_create(&pd, &x_md, k->cpu->engine, &y_md,
	                                            k->cpu->engine, attr),
	         "creating the reorder");
	struct bind bs[] = {{DNNL_ARG_FROM, SLOT_IN, 0}, {DNNL_ARG_TO, SLOT_OUT, 0}};
	rc = add_step(k, pd, 2, bs);
fail:
	return pds_release(rc, pd, NULL);
}

/* ---------------------------------------------------------------- plain C ops */

/* build_lead -- a plain C op over input 0 as [rows, last] (the losses' [N, K]) */
static atm_status build_lead(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	(void)attr;
	const atm_tensor *t = tensor_of(k, SLOT_IN, 0);
	k->n_cols = t->dims[t->ndim - 1];
	k->n_rows = t->n_elems / k->n_cols;
	return ATM_OK;
}

/* build_flat -- a plain C op over the elements of input 0 */
static atm_status build_flat(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	(void)attr;
	k->n_rows = tensor_of(k, SLOT_IN, 0)->n_elems;
	return ATM_OK;
}

/* run_allreduce -- each gradient copied into its mean's buffer, then the bucket of means
 * averaged over the ranks in place (atm_bk_allreduce: the communicator's fixed order) */
static atm_status run_allreduce(const atm_kernel *k, void *const *in, void *const *out)
{
	const atm_node *n = knode(k);
	float *bufs[ATM_ALLREDUCE_BUCKET_TENSORS];
	int64_t counts[ATM_ALLREDUCE_BUCKET_TENSORS];
	for (int i = 0; i < n->n_in; i++) {
		const atm_tensor *t = tensor_of(k, SLOT_IN, i);
		memcpy(out[i], in[i], (size_t)t->bytes);
		bufs[i] = out[i];
		counts[i] = t->n_elems;
	}
	atm_status rc = atm_bk_allreduce(bufs, counts, n->n_in, n->attrs.ranks);
	if (rc < 0) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", atm_errmsg());
		return node_err(k, rc, msg);
	}
	return ATM_OK;
}

/* run_sgd -- w -= lr * dw, one element at a time in index order */
static atm_status run_sgd(const atm_kernel *k, void *const *in, void *const *out)
{
	(void)out;
	float *w = in[0];
	const float *dw = in[1];
	float lr = knode(k)->attrs.lr;
	for (int64_t i = 0; i < k->n_rows; i++)
		w[i] -= lr * dw[i];
	return ATM_OK;
}

/* run_sgd_momentum -- PyTorch's SGD step with weight decay and momentum, element by element
 * (elements in parallel): g = dw + weight_decay * w; buf = momentum * buf + g (a zero buffer
 * gives PyTorch's first step, buf = g); w -= lr * buf. Without a buffer, w -= lr * g. */
static atm_status run_sgd_momentum(const atm_kernel *k, void *const *in, void *const *out)
{
	(void)out;
	const atm_node *n = knode(k);
	float *w = in[0], *buf = n->n_in > 2 ? in[2] : NULL;
	const float *dw = in[1];
	float lr = n->attrs.lr, wd = n->attrs.weight_decay, mom = n->attrs.momentum;
#pragma omp parallel for schedule(static)
	for (int64_t i = 0; i < k->n_rows; i++) {
		float g = wd != 0 ? dw[i] + wd * w[i] : dw[i];
		if (buf) {
			buf[i] = buf[i] * mom + g;
			g = buf[i];
		}
		w[i] = w[i] - lr * g;
	}
	return ATM_OK;
}

/* run_adamw -- PyTorch's AdamW step (torch.optim.AdamW, its single-tensor form), element by
 * element (elements in parallel): t = step + 1; w *= 1 - lr * weight_decay; m = beta1 * m +
 * (1 - beta1) g; v = beta2 * v + (1 - beta2) g^2; w -= lr / (1 - beta1^t) * m / (sqrt(v) /
 * sqrt(1 - beta2^t) + eps); step = t. The scalars are taken in double, as PyTorch's Python
 * does, and applied in float. */
static atm_status run_adamw(const atm_kernel *k, void *const *in, void *const *out)
{
	(void)out;
	const atm_attrs *a = &knode(k)->attrs;
	float *w = in[0], *m = in[2], *v = in[3], *step = in[4];
	const float *dw = in[1];
	double t = (double)step[0] + 1.0;
	float decay = (float)(1.0 - (double)a->lr * (double)a->weight_decay);
	float step_size = (float)((double)a->lr / (1.0 - pow((double)a->beta1, t)));
	float bc2 = (float)sqrt(1.0 - pow((double)a->beta2, t));
	float b1 = a->beta1, b2 = a->beta2, eps = a->epsilon;
	float c1 = (float)(1.0 - (double)a->beta1), c2 = (float)(1.0 - (double)a->beta2);
#pragma omp parallel for schedule(static)
	for (int64_t i = 0; i < k->n_rows; i++) {
		float g = dw[i];
		w[i] *= decay;
		m[i] = m[i] * b1 + c1 * g;
		v[i] = v[i] * b2 + c2 * g * g;
		float denom = sqrtf(v[i]) / bc2 + eps;
		w[i] = w[i] - step_size * (m[i] / denom);
	}
	step[0] = (float)t;
	return ATM_OK;
}

/* run_softmax_xent -- probs = softmax(logits) per row and loss = mean over rows of
 * -sum(labels * log(probs)); log(probs) is taken as (x - max) - log(sum), which
 * is finite for finite logits (sum >= 1), so log(0) never happens; sums are in
 * double and in index order, so the result is reproducible */
static atm_status run_softmax_xent(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *logits = in[0], *labels = in[1];
	float *probs = out[0], *loss = out[1];
	double total = 0;
	for (int64_t r = 0; r < k->n_rows; r++) {
		const float *x = logits + r * k->n_cols;
		const float *l = labels + r * k->n_cols;
		float *p = probs + r * k->n_cols;
		float max = x[0];
		double sum = 0;
		for (int64_t c = 1; c < k->n_cols; c++)
			max = x[c] > max ? x[c] : max;
		for (int64_t c = 0; c < k->n_cols; c++)
			sum += exp((double)x[c] - max);
		double log_sum = log(sum);
		for (int64_t c = 0; c < k->n_cols; c++) {
			double log_p = (double)x[c] - max - log_sum;
			p[c] = (float)exp(log_p);
			/* skip zero labels: 0 * log_p is 0 but 0 * -inf would be NaN */
			if (l[c] != 0)
				total -= l[c] * log_p;
		}
	}
	loss[0] = (float)(total / (double)k->n_rows);
	return ATM_OK;
}

/* run_softmax_xent_bwd -- dlogits = (probs - labels) / N */
static atm_status run_softmax_xent_bwd(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *probs = in[0], *labels = in[1];
	float *dlogits = out[0];
	int64_t n = k->n_rows * k->n_cols;
	float inv = 1.0f / (float)k->n_rows;
	for (int64_t i = 0; i < n; i++)
		dlogits[i] = (probs[i] - labels[i]) * inv;
	return ATM_OK;
}

/* run_reduce_sum -- y = the sum of x's rows ([rows, y's elements]), row by row in order. oneDNN
 * 2.6 has a sum reduction, but over the leading dim it runs its reference kernel here: 6 ms for
 * a [256, 3072] bias gradient, 15% of a GPT-2 step; this loop streams x once. */
static atm_status run_reduce_sum(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *x = in[0];
	float *y = out[0];
	int64_t cols = tensor_of(k, SLOT_OUT, 0)->n_elems, rows = k->n_rows / cols;
	memcpy(y, x, (size_t)cols * sizeof *y);
	for (int64_t r = 1; r < rows; r++) {
		const float *xr = x + r * cols;
		for (int64_t c = 0; c < cols; c++)
			y[c] += xr[c];
	}
	return ATM_OK;
}

/* run_mul_bwd -- db = dy * a summed over the dims db is repeated along (atm_broadcast_of):
 * each element of db sums its elements of dy * a in index order, in double, so that the
 * result does not depend on the threads */
static atm_status run_mul_bwd(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *dy = in[0], *a = in[1];
	float *db = out[0];
	atm_broadcast bc;
	atm_status rc = atm_broadcast_of(k->g, knode(k), &bc);
	if (rc < 0)
		return rc;
	int64_t n = tensor_of(k, SLOT_OUT, 0)->n_elems;
#pragma omp parallel for schedule(static)
	for (int64_t j = 0; j < n; j++) {
		int64_t rem = j, off = 0, idx[ATM_MAX_DIMS] = {0};
		for (int d = 0; d < bc.n_kept; d++) {
			off += rem % bc.kept[d] * bc.kept_stride[d];
			rem /= bc.kept[d];
		}
		double acc = 0;
		for (int64_t r = 0; r < bc.rep_elems; r++) {
			acc += (double)dy[off] * (double)a[off];
			for (int d = 0; d < bc.n_rep; d++) {
				if (++idx[d] < bc.rep[d]) {
					off += bc.rep_stride[d];
					break;
				}
				off -= (bc.rep[d] - 1) * bc.rep_stride[d];
				idx[d] = 0;
			}
		}
		db[j] = (float)acc;
	}
	return ATM_OK;
}

/* run_rms_norm -- y = x * rstd * w per row, rstd = 1 / sqrt(mean of x^2 + epsilon), the mean
 * summed in double in index order; rows in parallel, each alone */
static atm_status run_rms_norm(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *x = in[0], *w = in[1];
	float *y = out[0], *rstd = out[1];
	int64_t c = k->n_cols;
	double eps = knode(k)->attrs.epsilon;
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < k->n_rows; r++) {
		const float *xr = x + r * c;
		double ss = 0;
		for (int64_t i = 0; i < c; i++)
			ss += (double)xr[i] * xr[i];
		float s = (float)(1.0 / sqrt(ss / (double)c + eps));
		rstd[r] = s;
		for (int64_t i = 0; i < c; i++)
			y[r * c + i] = xr[i] * s * w[i];
	}
	return ATM_OK;
}

/* run_rms_norm_bwd -- g = dy * w, xhat = x * rstd: dx = rstd * (g - xhat * mean of g * xhat)
 * per row (rows in parallel), dw = the sum over rows of dy * xhat (columns in parallel, rows in
 * order); sums in double */
static atm_status run_rms_norm_bwd(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *x = in[0], *dy = in[1], *w = in[2], *rstd = in[3];
	float *dx = out[0], *dw = out[1];
	int64_t c = k->n_cols, rows = k->n_rows;
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = x + r * c, *dyr = dy + r * c;
		double s = rstd[r], dot = 0;
		for (int64_t i = 0; i < c; i++)
			dot += (double)dyr[i] * w[i] * xr[i] * s;
		double m = dot / (double)c;
		for (int64_t i = 0; i < c; i++)
			dx[r * c + i] = (float)(s * ((double)dyr[i] * w[i] - (double)xr[i] * s * m));
	}
#pragma omp parallel for schedule(static)
	for (int64_t i = 0; i < c; i++) {
		double acc = 0;
		for (int64_t r = 0; r < rows; r++)
			acc += (double)dy[r * c + i] * x[r * c + i] * rstd[r];
		dw[i] = (float)acc;
	}
	return ATM_OK;
}

/* run_hardsigmoid -- y = min(max(x / 6 + 1/2, 0), 1), or dx = dy / 6 where -3 < x < 3 (PyTorch's
 * gradient, 0 at the kinks); oneDNN 2.6 has no hardsigmoid */
static atm_status run_hardsigmoid(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *x = in[0];
	float *y = out[0];
	if (knode(k)->op == ATM_OP_HARDSIGMOID_FWD) {
#pragma omp parallel for schedule(static)
		for (int64_t i = 0; i < k->n_rows; i++)
			y[i] = fminf(fmaxf(x[i] / 6.0f + 0.5f, 0.0f), 1.0f);
		return ATM_OK;
	}
	const float *dy = in[1];
#pragma omp parallel for schedule(static)
	for (int64_t i = 0; i < k->n_rows; i++)
		y[i] = x[i] > -3.0f && x[i] < 3.0f ? dy[i] / 6.0f : 0.0f;
	return ATM_OK;
}

/* run_rope -- rotary embeddings over x [..., T, D] in the rotate-half form: with h = D/2 and
 * a = t * theta^(-2i/D) at position t (the row's place along T), y_i = x_i cos a - x_{i+h} sin a
 * and y_{i+h} = x_{i+h} cos a + x_i sin a; the backward rotates by -a. Angles in double. */
static atm_status run_rope(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *x = in[0];
	float *y = out[0];
	const atm_tensor *t = tensor_of(k, SLOT_IN, 0);
	int64_t d = k->n_cols, h = d / 2, seq = t->dims[t->ndim - 2];
	double theta = knode(k)->attrs.theta, sign = knode(k)->op == ATM_OP_ROPE_BWD ? -1.0 : 1.0;
	enum { FREQS = 64 };
	/* the frequencies of FREQS pairs at a time, taken once by each thread, not once per row */
#pragma omp parallel
	{
		double freq[FREQS];
		for (int64_t i0 = 0; i0 < h; i0 += FREQS) {
			int64_t nf = h - i0 < FREQS ? h - i0 : FREQS;
			for (int64_t j = 0; j < nf; j++)
				freq[j] = pow(theta, -2.0 * (double)(i0 + j) / (double)d);
#pragma omp for schedule(static)
			for (int64_t r = 0; r < k->n_rows; r++) {
				double pos = (double)(r % seq);
				const float *xr = x + r * d;
				float *yr = y + r * d;
				for (int64_t j = 0; j < nf; j++) {
					int64_t i = i0 + j;
					double a = pos * freq[j];
					float c = (float)cos(a), s = (float)(sign * sin(a));
					float x0 = xr[i], x1 = xr[i + h];
					yr[i] = x0 * c - x1 * s;
					yr[i + h] = x1 * c + x0 * s;
				}
			}
		}
	}
	return ATM_OK;
}

/* run_causal_softmax -- for a causal softmax (the others ran as a primitive): softmax of each row of x over its first i + 1 entries, where i is the
 * row's place in its [T, T] matrix; the masked entries are 0. The sum is in double, in index
 * order. */
static atm_status run_causal_softmax(const atm_kernel *k, void *const *in, void *const *out)
{
	if (!knode(k)->attrs.causal)
		return ATM_OK; /* oneDNN's primitive did it */
	const float *x = in[0];
	float *y = out[0];
	int64_t t = k->n_cols;
	for (int64_t r = 0; r < k->n_rows; r++) {
		const float *xr = x + r * t;
		float *yr = y + r * t;
		int64_t valid = r % t + 1;
		float max = xr[0];
		for (int64_t c = 1; c < valid; c++)
			max = xr[c] > max ? xr[c] : max;
		double sum = 0;
		for (int64_t c = 0; c < valid; c++) {
			yr[c] = expf(xr[c] - max);
			sum += yr[c];
		}
		float inv = (float)(1.0 / sum);
		for (int64_t c = 0; c < valid; c++)
			yr[c] *= inv;
		for (int64_t c = valid; c < t; c++)
			yr[c] = 0.0f;
	}
	return ATM_OK;
}

/* bad_id -- the message for a token id or label outside [0, limit) */
static atm_status bad_id(const atm_kernel *k, const char *what, int64_t at, int32_t id,
                         int64_t limit)
{
	char msg[256];
	snprintf(msg, sizeof msg, "%s %d at position %lld is outside the %lld %s", what, id,
	         (long long)at, (long long)limit, strcmp(what, "label") == 0 ? "classes" : "rows of "
	         "the table");
	return node_err(k, ATM_E_INPUT, msg);
}

/* embedding_row -- the table row position r of y reads: its id, or its place in the
 * sequence; -1 (after the message) for an id outside the table */
static int64_t embedding_row(const atm_kernel *k, const int32_t *ids, int64_t r, int64_t seq,
                             int64_t rows)
{
	if (!ids)
		return r % seq;
	if (ids[r] < 0 || ids[r] >= rows) {
		bad_id(k, "token id", r, ids[r], rows);
		return -1;
	}
	return ids[r];
}

/* run_embedding -- y's rows copied from the table, by id or by position */
static atm_status run_embedding(const atm_kernel *k, void *const *in, void *const *out)
{
	const atm_node *n = knode(k);
	const atm_tensor *tab = tensor_of(k, SLOT_IN, 0), *y = tensor_of(k, SLOT_OUT, 0);
	const float *table = in[0];
	const int32_t *ids = n->n_in == 2 ? in[1] : NULL;
	float *dst = out[0];
	int64_t c = y->dims[y->ndim - 1], rows = tab->dims[tab->ndim - 2];
	int64_t seq = y->dims[y->ndim - 2];
	for (int64_t r = 0; r < y->n_elems / c; r++) {
		int64_t row = embedding_row(k, ids, r, seq, rows);
		if (row < 0)
			return ATM_E_INPUT;
		memcpy(dst + r * c, table + row * c, (size_t)c * sizeof *dst);
	}
	return ATM_OK;
}

/* run_embedding_bwd -- dtable = 0, then each position's dy row added to its table row in
 * position order: a fixed order of sums, so the gradient is the same on every run */
static atm_status run_embedding_bwd(const atm_kernel *k, void *const *in, void *const *out)
{
	const atm_node *n = knode(k);
	const atm_tensor *dy = tensor_of(k, SLOT_IN, 0), *tab = tensor_of(k, SLOT_OUT, 0);
	const float *g = in[0];
	const int32_t *ids = n->n_in == 2 ? in[1] : NULL;
	float *dtable = out[0];
	int64_t c = dy->dims[dy->ndim - 1], rows = tab->dims[tab->ndim - 2];
	int64_t seq = dy->dims[dy->ndim - 2];
	memset(dtable, 0, (size_t)tab->bytes);
	for (int64_t r = 0; r < dy->n_elems / c; r++) {
		int64_t row = embedding_row(k, ids, r, seq, rows);
		if (row < 0)
			return ATM_E_INPUT;
		float *d = dtable + row * c;
		const float *s = g + r * c;
		for (int64_t j = 0; j < c; j++)
			d[j] += s[j];
	}
	return ATM_OK;
}

/* run_narrow -- copy the part of whole along axis (first part_len of whole_len) to or from
 * part; backward zeroes the rest of whole. memcpy of contiguous blocks: no oneDNN primitive
 * is needed for that. */
static atm_status run_narrow(const atm_kernel *k, void *const *in, void *const *out)
{
	const atm_node *n = knode(k);
	bool fwd = n->op == ATM_OP_NARROW_FWD;
	const atm_tensor *whole = fwd ? tensor_of(k, SLOT_IN, 0) : tensor_of(k, SLOT_OUT, 0);
	const atm_tensor *part = fwd ? tensor_of(k, SLOT_OUT, 0) : tensor_of(k, SLOT_IN, 0);
	int axis = n->attrs.axis;
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < axis; d++)
		outer *= whole->dims[d];
	for (int d = axis + 1; d < whole->ndim; d++)
		inner *= whole->dims[d];
	int64_t wlen = whole->dims[axis] * inner, plen = part->dims[axis] * inner;
	for (int64_t o = 0; o < outer; o++) {
		if (fwd) {
			memcpy((float *)out[0] + o * plen, (const float *)in[0] + o * wlen,
			       (size_t)plen * sizeof(float));
		} else {
			float *w = (float *)out[0] + o * wlen;
			memcpy(w, (const float *)in[0] + o * plen, (size_t)plen * sizeof(float));
			memset(w + plen, 0, (size_t)(wlen - plen) * sizeof(float));
		}
	}
	return ATM_OK;
}

/* run_token_xent -- after the log-softmax step: loss = -mean over rows of logp[label], summed
 * in double in row order */
static atm_status run_token_xent(const atm_kernel *k, void *const *in, void *const *out)
{
	const int32_t *labels = in[1];
	const float *logp = out[0];
	float *loss = out[1];
	double total = 0;
	for (int64_t r = 0; r < k->n_rows; r++) {
		if (labels[r] < 0 || labels[r] >= k->n_cols)
			return bad_id(k, "label", r, labels[r], k->n_cols);
		total -= logp[r * k->n_cols + labels[r]];
	}
	loss[0] = (float)(total / (double)k->n_rows);
	return ATM_OK;
}

/* run_token_xent_bwd -- after exp(logp) / rows: take 1 / rows off each row's label */
static atm_status run_token_xent_bwd(const atm_kernel *k, void *const *in, void *const *out)
{
	const int32_t *labels = in[1];
	float *d = out[0];
	float inv = 1.0f / (float)k->n_rows;
	for (int64_t r = 0; r < k->n_rows; r++) {
		if (labels[r] < 0 || labels[r] >= k->n_cols)
			return bad_id(k, "label", r, labels[r], k->n_cols);
		d[r * k->n_cols + labels[r]] -= inv;
	}
	return ATM_OK;
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
	atm_status rc = build_lead(k, attr);
	if (rc < 0)
		return rc;
	return knode(k)->op == ATM_OP_TOKEN_XENT_FWD ? build_softmax(k, attr)
	                                             : build_token_xent_bwd(k, attr);
}

/* build_softmax_op -- oneDNN's softmax, or the sizes of the causal one's plain C */
static atm_status build_softmax_op(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	atm_status rc = build_lead(k, attr);
	return rc < 0 ? rc : build_softmax(k, attr);
}

static const struct cpu_op cpu_ops[ATM_N_OPS] = {
	[ATM_OP_CONV_FWD] = {build_conv, NULL},
	[ATM_OP_CONV_BWD_DATA] = {build_conv, NULL},
	[ATM_OP_CONV_BWD_WEIGHTS] = {build_conv, NULL},
	[ATM_OP_IP_FWD] = {build_ip, NULL},
	[ATM_OP_IP_BWD_DATA] = {build_ip, NULL},
	[ATM_OP_IP_BWD_WEIGHTS] = {build_ip, NULL},
	[ATM_OP_RELU_FWD] = {build_eltwise, NULL},
	[ATM_OP_RELU_BWD] = {build_eltwise, NULL},
	[ATM_OP_MAXPOOL_FWD] = {build_pool, NULL},
	[ATM_OP_MAXPOOL_BWD] = {build_pool, NULL},
	[ATM_OP_AVGPOOL_FWD] = {build_pool, NULL},
	[ATM_OP_AVGPOOL_BWD] = {build_pool, NULL},
	[ATM_OP_BN_FWD] = {build_bn, run_bn},
	[ATM_OP_BN_BWD] = {build_bn, run_bn_bwd},
	[ATM_OP_CONCAT] = {build_concat, NULL},
	[ATM_OP_SPLIT] = {build_split, run_split},
	[ATM_OP_ADD] = {build_add, NULL},
	[ATM_OP_SOFTMAX_XENT_FWD] = {build_lead, run_softmax_xent},
	[ATM_OP_SOFTMAX_XENT_BWD] = {build_lead, run_softmax_xent_bwd},
	[ATM_OP_SGD] = {build_flat, run_sgd},
	[ATM_OP_MATMUL] = {build_matmul, NULL},
	[ATM_OP_REDUCE_SUM] = {build_flat, run_reduce_sum},
	[ATM_OP_LAYER_NORM_FWD] = {build_layer_norm, NULL},
	[ATM_OP_LAYER_NORM_BWD] = {build_layer_norm, NULL},
	[ATM_OP_GELU_FWD] = {build_eltwise, NULL},
	[ATM_OP_GELU_BWD] = {build_eltwise, NULL},
	[ATM_OP_TANH_FWD] = {build_eltwise, NULL},
	[ATM_OP_TANH_BWD] = {build_eltwise, NULL},
	[ATM_OP_SOFTMAX_FWD] = {build_softmax_op, run_causal_softmax},
	[ATM_OP_SOFTMAX_BWD] = {build_softmax_op, NULL},
	[ATM_OP_EMBEDDING_FWD] = {build_flat, run_embedding},
	[ATM_OP_EMBEDDING_BWD] = {build_flat, run_embedding_bwd},
	[ATM_OP_PERMUTE] = {build_permute, NULL},
	[ATM_OP_NARROW_FWD] = {build_flat, run_narrow},
	[ATM_OP_NARROW_BWD] = {build_flat, run_narrow},
	[ATM_OP_TOKEN_XENT_FWD] = {build_token_xent, run_token_xent},
	[ATM_OP_TOKEN_XENT_BWD] = {build_token_xent, run_token_xent_bwd},
	[ATM_OP_SILU_FWD] = {build_eltwise, NULL},
	[ATM_OP_SILU_BWD] = {build_eltwise, NULL},
	[ATM_OP_MUL] = {build_mul, NULL},
	[ATM_OP_MUL_BWD] = {build_flat, run_mul_bwd},
	[ATM_OP_RMS_NORM_FWD] = {build_lead, run_rms_norm},
	[ATM_OP_RMS_NORM_BWD] = {build_lead, run_rms_norm_bwd},
	[ATM_OP_ROPE_FWD] = {build_lead, run_rope},
	[ATM_OP_ROPE_BWD] = {build_lead, run_rope},
	[ATM_OP_SIGMOID_FWD] = {build_eltwise, NULL},
	[ATM_OP_SIGMOID_BWD] = {build_eltwise, NULL},
	[ATM_OP_HARDSWISH_FWD] = {build_eltwise, NULL},
	[ATM_OP_HARDSWISH_BWD] = {build_eltwise, NULL},
	[ATM_OP_HARDSIGMOID_FWD] = {build_flat, run_hardsigmoid},
	[ATM_OP_HARDSIGMOID_BWD] = {build_flat, run_hardsigmoid},
	[ATM_OP_RELU6_FWD] = {build_eltwise, NULL},
	[ATM_OP_RELU6_BWD] = {build_eltwise, NULL},
	[ATM_OP_SGD_MOMENTUM] = {build_flat, run_sgd_momentum},
	[ATM_OP_ADAMW] = {build_flat, run_adamw},
	[ATM_OP_ALLREDUCE] = {build_flat, run_allreduce},
};

/* atm_cpu_supports -- op has a CPU kernel */
bool atm_cpu_supports(atm_op op)
{
	return (unsigned)op < ATM_N_OPS && cpu_ops[op].build;
}

/* ---------------------------------------------------------------- kernels */

/* kernel_release -- destroy a kernel's steps and the kernel */
static void kernel_release(atm_kernel *k)
{
	for (int i = 0; i < k->n_steps; i++)
		step_release(&k->steps[i]);
	free(k->steps);
	free(k);
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
		rc = cpu_ops[n->op].build(k, attr);
	else
		rc = node_err(k, ATM_E_UNSUPPORTED, "no CPU kernel for this op");
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
				return dnnl_fail(k, "pointing a memory object at its buffer", s);
		}
		s = dnnl_primitive_execute(st->prim, k->cpu->stream, st->n_args, st->args);
		if (s != dnnl_success)
			return dnnl_fail(k, "executing the primitive", s);
	}
	s = dnnl_stream_wait(k->cpu->stream);
	if (s != dnnl_success)
		return dnnl_fail(k, "waiting for the stream", s);
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
	for (int i = 0; i < n->n_in + n->n_out; i++) {
		void *p = i < n->n_in ? in[i] : out[i - n->n_in];
		if (!p) {
			char msg[64];
			snprintf(msg, sizeof msg, "%s %d has no buffer", i < n->n_in ? "input" : "output",
			         i < n->n_in ? i : i - n->n_in);
			return node_err(k, ATM_E_USAGE, msg);
		}
	}
	if (k->scratch_bytes > 0 && !scratch)
		return node_err(k, ATM_E_USAGE, "the kernel needs scratch memory but got none");
	atm_status rc = k->n_steps > 0 ? run_steps(k, in, out, scratch) : ATM_OK;
	if (rc == ATM_OK && cpu_ops[n->op].run)
		rc = cpu_ops[n->op].run(k, in, out);
	return rc;
}
