/* builder.c -- the layer builder: forward layers and their bookkeeping, then loss, backward pass, gradient sums and SGD */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"

/* What the backward pass needs per tensor, indexed by tensor id. The forward
 * nodes themselves are the tape: zb_finish walks them in reverse. */
struct zb_info {
	int32_t n_uses;  /* forward uses that send a gradient back to this tensor */
	int32_t n_named; /* gradient contributions created as tensors of their own */
	int32_t n_seen;  /* gradient contributions received so far */
	int32_t grad;    /* gradient summed so far; -1 before the first contribution */
	int32_t copy;    /* its copy in the other dtype (a cast's output, made once); -1: none */
	bool needs_grad; /* depends on a parameter, so its gradient is needed */
};

struct zb {
	atm_graph *g; /* NULL once zb_finish handed it out */
	atm_status status;
	int64_t batch;
	float lr;
	bool autocast; /* bf16 mixed precision, as torch.autocast runs it (zb_spec) */
	struct zb_info *info;
	int32_t cap_info;
	int32_t *scratch; /* a forward node's ids, copied while its backward is added */
	int32_t cap_scratch;
	char pname[2][ZB_NAME_MAX]; /* the next layer's parameter names (zb_param_names); "": own */
};

/* ---------------------------------------------------------------- plumbing */

/* fail -- remember the first failure (its message is already set); returns -1 */
static int32_t fail(zb *b, atm_status rc)
{
	if (b->status == ATM_OK)
		b->status = rc < 0 ? rc : ATM_E_INTERNAL;
	return -1;
}

/* failf -- set the message and remember the failure; returns -1 */
__attribute__((format(printf, 3, 4))) static int32_t failf(zb *b, atm_status rc, const char *fmt,
                                                           ...)
{
	char msg[1024];
	va_list ap;
	if (b->status < 0)
		return -1; /* keep the first message */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	atm_err(rc, "%s", msg);
	return fail(b, rc);
}

/* vname -- format a derived name into buf, failing when it does not fit */
static bool vname(zb *b, char *buf, const char *fmt, va_list ap)
{
	int len = vsnprintf(buf, ZB_NAME_MAX, fmt, ap);
	if (len < 0 || len >= ZB_NAME_MAX) {
		failf(b, ATM_E_USAGE, "name '%.60s...' is longer than %d characters", buf,
		      ZB_NAME_MAX - 1);
		return false;
	}
	return true;
}

/* grow -- array p (capacity *cap elements of elem bytes) with room for n elements;
 * NULL when out of memory, p still valid then */
static void *grow(void *p, int32_t *cap, int64_t n, size_t elem)
{
	if (n <= *cap)
		return p;
	int64_t ncap = *cap ? *cap : 64;
	while (ncap < n)
		ncap *= 2;
	if (ncap > INT32_MAX)
		return NULL;
	void *q = realloc(p, (size_t)ncap * elem);
	if (q)
		*cap = (int32_t)ncap;
	return q;
}

/* tensor -- add a tensor named by fmt; its id, or -1 */
__attribute__((format(printf, 6, 7))) static int32_t tensor(zb *b, atm_tensor_kind kind,
                                                            atm_dtype dtype, int ndim,
                                                            const int64_t *dims, const char *fmt,
                                                            ...)
{
	char name[ZB_NAME_MAX];
	int32_t id = -1;
	va_list ap;
	bool ok;
	if (b->status < 0)
		return -1;
	va_start(ap, fmt);
	ok = vname(b, name, fmt, ap);
	va_end(ap);
	if (!ok)
		return -1;
	int32_t n = atm_graph_n_tensors(b->g);
	struct zb_info *info = grow(b->info, &b->cap_info, (int64_t)n + 1, sizeof *info);
	if (!info)
		return failf(b, ATM_E_NOMEM, "out of memory adding tensor '%s'", name);
	b->info = info;
	atm_status rc = atm_graph_add_tensor(b->g, name, dtype, ndim, dims, kind, ATM_LOC_ANY, &id);
	if (rc < 0)
		return fail(b, rc);
	/* data and activations lead with the batch; a gradient follows what it is the
	 * gradient of (see batched_like), so a parameter's gradient never does */
	if ((kind == ATM_KIND_INPUT || kind == ATM_KIND_ACTIVATION) && ndim >= 2 &&
	    dims[0] == b->batch && (rc = atm_graph_mark_batched(b->g, id)) < 0)
		return fail(b, rc);
	b->info[id] = (struct zb_info){.grad = -1, .copy = -1};
	return id;
}

/* dt -- tensor x's dtype */
static atm_dtype dt(zb *b, int32_t x)
{
	return atm_graph_tensor(b->g, x)->dtype;
}

/* promoted -- the dtype of an op over x0 and x1: f32 when either is, as PyTorch promotes */
static atm_dtype promoted(zb *b, int32_t x0, int32_t x1)
{
	return dt(b, x0) == ATM_F32 || dt(b, x1) == ATM_F32 ? ATM_F32 : ATM_BF16;
}

/* first_reader -- the name of the first node that reads tensor t, or NULL */
static const char *first_reader(zb *b, int32_t t)
{
	for (int32_t i = 0; i < atm_graph_n_nodes(b->g); i++) {
		const atm_node *n = atm_graph_node(b->g, i);
		for (int k = 0; k < n->n_in; k++)
			if (n->in[k] == t)
				return n->name;
	}
	return NULL;
}

/* param -- the layer's parameter slot (0: weight or scale, 1: bias or shift) of dims. Named as
 * zb_param_names said, it is the tensor of that name when one exists (a module used twice, an
 * alias, tied weights: one tensor, its gradient summed over its uses by param_contrib), else a
 * new one; otherwise the new LAYER.suffix. Each call is one use. */
static int32_t param(zb *b, int slot, int ndim, const int64_t *dims, const char *layer,
                     const char *suffix)
{
	int32_t w = -1;
	if (b->status < 0)
		return -1;
	if (b->pname[slot][0] && (w = atm_graph_find_tensor(b->g, b->pname[slot])) >= 0) {
		const atm_tensor *t = atm_graph_tensor(b->g, w);
		char had[160], want[160];
		if (t->kind != ATM_KIND_PARAM)
			return failf(b, ATM_E_USAGE, "layer '%s': parameter '%s' names a tensor that is not "
			             "a parameter (its kind: %s)", layer, t->name, atm_kind_name(t->kind));
		if (t->ndim != ndim || memcmp(t->dims, dims, (size_t)ndim * sizeof *dims)) {
			const char *first = first_reader(b, w); /* none yet: this layer's other slot */
			return failf(b, ATM_E_USAGE, "layer '%s': parameter '%s' would be %s here but is "
			             "%s in layer '%s'; a parameter shared by two layers has one shape",
			             layer, t->name, atm_format_dims(ndim, dims, want, sizeof want),
			             atm_format_dims(t->ndim, t->dims, had, sizeof had), first ? first : layer);
		}
	} else if (b->pname[slot][0]) {
		w = tensor(b, ATM_KIND_PARAM, ATM_F32, ndim, dims, "%s", b->pname[slot]);
	} else {
		w = tensor(b, ATM_KIND_PARAM, ATM_F32, ndim, dims, "%s.%s", layer, suffix);
	}
	if (w >= 0)
		b->info[w].n_uses++; /* param_contrib counts a gradient part per use against it */
	return w;
}

/* node -- append a node named by fmt; its id, or -1 */
__attribute__((format(printf, 8, 9))) static int32_t node(zb *b, atm_op op, const atm_attrs *a,
                                                          int n_in, const int32_t *in, int n_out,
                                                          const int32_t *out, const char *fmt, ...)
{
	char name[ZB_NAME_MAX];
	int32_t id = -1;
	va_list ap;
	bool ok;
	if (b->status < 0)
		return -1;
	va_start(ap, fmt);
	ok = vname(b, name, fmt, ap);
	va_end(ap);
	if (!ok)
		return -1;
	atm_status rc = atm_graph_add_node(b->g, name, op, a, n_in, in, n_out, out, &id);
	if (rc < 0)
		return fail(b, rc);
	return id;
}

/* usable -- may a layer named layer read tensor x of rank ndim (0: any rank)? */
static bool usable(zb *b, const char *layer, int32_t x, int ndim)
{
	const atm_tensor *t;
	if (b->status < 0)
		return false;
	if (!b->g) {
		failf(b, ATM_E_USAGE, "layer '%s': the network is finished already", layer ? layer : "?");
		return false;
	}
	if (!layer || !*layer) {
		failf(b, ATM_E_USAGE, "a layer needs a non-empty name");
		return false;
	}
	t = atm_graph_tensor(b->g, x);
	if (!t) {
		failf(b, ATM_E_USAGE, "layer '%s': input tensor %d does not exist", layer, x);
		return false;
	}
	if (t->dtype != ATM_F32 && t->dtype != ATM_BF16) {
		failf(b, ATM_E_USAGE, "layer '%s': input '%s' is %s; layers take f32 or bf16", layer,
		      t->name, atm_dtype_name(t->dtype));
		return false;
	}
	if (ndim && t->ndim != ndim) {
		failf(b, ATM_E_USAGE, "layer '%s': input '%s' has %d dimensions; expected %d", layer,
		      t->name, t->ndim, ndim);
		return false;
	}
	return true;
}

/* use -- x feeds a forward node that will send it a gradient */
static void use(zb *b, int32_t x)
{
	if (b->info[x].needs_grad)
		b->info[x].n_uses++;
}

/* cast_to -- x as dtype to: x itself, or its copy, made by a cast node the first time it is
 * asked for and shared after (a weight several layers read is cast once, as autocast's cache
 * does). The copy's gradient goes back through the cast. For a parameter, param's count of
 * this use moves to the copy. */
static int32_t cast_to(zb *b, int32_t x, atm_dtype to)
{
	if (x < 0 || b->status < 0 || dt(b, x) == to)
		return x;
	bool param = atm_graph_tensor(b->g, x)->kind == ATM_KIND_PARAM;
	int32_t c = b->info[x].copy;
	if (c >= 0) {
		if (param)
			b->info[x].n_uses--; /* the cast is its one use */
		return c;
	}
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	int64_t dims[ATM_MAX_DIMS];
	int nd = t->ndim;
	char name[ZB_NAME_MAX];
	snprintf(name, sizeof name, "%s", t->name);
	memcpy(dims, t->dims, sizeof dims);
	c = tensor(b, ATM_KIND_ACTIVATION, to, nd, dims, "%s.%s", name, atm_dtype_name(to));
	if (c < 0 || node(b, ATM_OP_CAST, NULL, 1, &x, 1, &c, "%s.to_%s", name,
	                  atm_dtype_name(to)) < 0)
		return -1;
	if (!param)
		use(b, x);
	b->info[c].needs_grad = param || b->info[x].needs_grad;
	b->info[x].copy = c;
	return c;
}

/* lowered -- under autocast, what a convolution, linear layer or matrix product reads: x's
 * bf16 copy (the caller counts its use) */
static int32_t lowered(zb *b, int32_t x)
{
	return b->autocast ? cast_to(b, x, ATM_BF16) : x;
}

/* weight -- a layer's parameter w as it reads it: itself (param counted its use), or under
 * autocast its bf16 copy, whose use is counted here */
static int32_t weight(zb *b, int32_t w)
{
	int32_t c = lowered(b, w);
	if (c >= 0 && c != w)
		use(b, c);
	return c;
}


/* window -- output size of a kh x kw window over the H x W of x, or false */
static bool window(zb *b, const char *layer, int32_t x, int kh, int kw, int stride, int ph, int pw,
                   int64_t *oh, int64_t *ow)
{
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	if (kh < 1 || kw < 1 || stride < 1 || ph < 0 || pw < 0) {
		failf(b, ATM_E_USAGE, "layer '%s': window %dx%d, stride %d, padding %d,%d: the window "
		      "and stride must be >= 1 and the padding >= 0", layer, kh, kw, stride, ph, pw);
		return false;
	}
	int64_t span_h = t->dims[2] + 2 * (int64_t)ph - kh, span_w = t->dims[3] + 2 * (int64_t)pw - kw;
	if (span_h < 0 || span_w < 0) {
		failf(b, ATM_E_USAGE, "layer '%s': its %dx%d window (stride %d, padding %d,%d) does not "
		      "fit its %lldx%lld input '%s'; the image is too small for this network", layer, kh,
		      kw, stride, ph, pw, (long long)t->dims[2], (long long)t->dims[3], t->name);
		return false;
	}
	*oh = span_h / stride + 1;
	*ow = span_w / stride + 1;
	return true;
}

/* ---------------------------------------------------------------- life cycle */

atm_status zb_new(zb **out, const zb_spec *spec)
{
	atm_status rc;
	zb *b = NULL;
	*out = NULL;
	if (spec->batch < 1)
		return atm_err(ATM_E_USAGE, "%s: batch must be >= 1, got %lld", spec->name,
		               (long long)spec->batch);
	b = calloc(1, sizeof *b);
	if (!b)
		return atm_err(ATM_E_NOMEM, "out of memory building '%s'", spec->name);
	rc = atm_graph_new(&b->g, spec->name);
	if (rc < 0)
		goto fail;
	b->batch = spec->batch;
	b->lr = spec->lr;
	b->autocast = spec->autocast;
	*out = b;
	return ATM_OK;
fail:
	zb_destroy(b);
	return rc;
}

void zb_destroy(zb *b)
{
	if (!b)
		return;
	free(b->scratch);
	free(b->info);
	atm_graph_destroy(b->g);
	free(b);
}

void zb_param_names(zb *b, const char *first, const char *second)
{
	const char *names[2] = {first, second};
	for (int i = 0; i < 2; i++) {
		b->pname[i][0] = '\0';
		if (names[i] && strlen(names[i]) < ZB_NAME_MAX)
			memcpy(b->pname[i], names[i], strlen(names[i]) + 1);
		else if (names[i])
			failf(b, ATM_E_USAGE, "parameter name '%.60s...' is longer than %d characters",
			      names[i], ZB_NAME_MAX - 1);
	}
}

const char *zb_namef(char *buf, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, ZB_NAME_MAX, fmt, ap);
	va_end(ap);
	return buf;
}

/* ---------------------------------------------------------------- forward layers */

int32_t zb_image(zb *b, int64_t c, int64_t h, int64_t w)
{
	if (b->status < 0)
		return -1;
	if (!b->g)
		return failf(b, ATM_E_USAGE, "image: the network is finished already");
	int64_t dims[4] = {b->batch, c, h, w};
	return tensor(b, ATM_KIND_INPUT, ATM_F32, 4, dims, "image");
}

int32_t zb_conv(zb *b, const char *name, int32_t x, int64_t out_c, int kh, int kw, int stride,
                int ph, int pw, bool bias)
{
	return zb_conv_groups(b, name, x, out_c, kh, kw, stride, ph, pw, 1, bias);
}

int32_t zb_conv_groups(zb *b, const char *name, int32_t x, int64_t out_c, int kh, int kw,
                       int stride, int ph, int pw, int64_t groups, bool bias)
{
	int64_t oh, ow;
	if (!usable(b, name, x, 4))
		return -1;
	if (out_c < 1)
		return failf(b, ATM_E_USAGE, "layer '%s': %lld filters; a convolution needs >= 1", name,
		             (long long)out_c);
	if (!window(b, name, x, kh, kw, stride, ph, pw, &oh, &ow))
		return -1;
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	if (groups < 1 || groups > INT32_MAX || t->dims[1] % groups || out_c % groups)
		return failf(b, ATM_E_USAGE, "layer '%s': %lld groups must be >= 1 and divide both its "
		             "%lld input channels (from '%s') and its %lld output channels", name,
		             (long long)groups, (long long)t->dims[1], t->name, (long long)out_c);
	int64_t wd[4] = {out_c, t->dims[1] / groups, kh, kw}, bd[1] = {out_c};
	int64_t yd[4] = {t->dims[0], out_c, oh, ow};
	int32_t in[3];
	in[0] = x = lowered(b, x);
	in[1] = weight(b, param(b, 0, 4, wd, name, "w"));
	in[2] = bias ? weight(b, param(b, 1, 1, bd, name, "b")) : -1;
	zb_param_names(b, NULL, NULL);
	int32_t y = tensor(b, ATM_KIND_ACTIVATION, b->status ? ATM_F32 : dt(b, x), 4, yd, "%s.y", name);
	atm_attrs a = {.stride = {stride, stride}, .pad = {ph, pw, ph, pw}, .groups = (int32_t)groups};
	if (node(b, ATM_OP_CONV_FWD, &a, bias ? 3 : 2, in, 1, &y, "%s", name) < 0)
		return -1;
	use(b, x);
	b->info[y].needs_grad = true;
	return y;
}

int32_t zb_bn(zb *b, const char *name, int32_t x)
{
	return zb_bn_eps(b, name, x, ZB_EPSILON);
}

int32_t zb_bn_eps(zb *b, const char *name, int32_t x, float epsilon)
{
	if (!usable(b, name, x, 0))
		return -1;
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	int64_t xd[ATM_MAX_DIMS], cd[1];
	int nd = t->ndim;
	if (nd < 2)
		return failf(b, ATM_E_USAGE, "layer '%s': input '%s' has %d dimensions; batch norm "
		             "needs [N, C, ...]", name, t->name, nd);
	memcpy(xd, t->dims, sizeof xd);
	cd[0] = xd[1];
	int32_t in[3], out[3];
	in[0] = x;
	in[1] = param(b, 0, 1, cd, name, "gamma");
	in[2] = param(b, 1, 1, cd, name, "beta");
	zb_param_names(b, NULL, NULL);
	out[0] = tensor(b, ATM_KIND_ACTIVATION, dt(b, x), nd, xd, "%s.y", name);
	out[1] = tensor(b, ATM_KIND_ACTIVATION, ATM_F32, 1, cd, "%s.mean", name);
	out[2] = tensor(b, ATM_KIND_ACTIVATION, ATM_F32, 1, cd, "%s.var", name);
	if (!(epsilon > 0) || !(epsilon <= 1))
		return failf(b, ATM_E_USAGE, "layer '%s': epsilon %g; batch norm takes one above 0 and "
		             "at most 1", name, epsilon);
	atm_attrs a = {.epsilon = epsilon};
	if (node(b, ATM_OP_BN_FWD, &a, 3, in, 3, out, "%s", name) < 0)
		return -1;
	use(b, x);
	b->info[out[0]].needs_grad = true;
	return out[0];
}

static int32_t unary(zb *b, const char *name, int32_t x, atm_op op, const atm_attrs *a);

int32_t zb_relu(zb *b, const char *name, int32_t x)
{
	return unary(b, name, x, ATM_OP_RELU_FWD, NULL);
}

/* ceil_extra -- the padding past the input's far side that PyTorch's ceil_mode adds along
 * one axis of n: the output rounds up, but its last window starts inside the input or the
 * near padding; *out becomes that output's size */
static int ceil_extra(int64_t n, int k, int stride, int pad, int64_t *out)
{
	int64_t span = n + 2 * (int64_t)pad - k;
	int64_t o = (span + stride - 1) / stride + 1;
	if ((o - 1) * stride >= n + pad)
		o--;
	*out = o;
	int64_t extra = (o - 1) * stride + k - (n + 2 * (int64_t)pad);
	return extra > 0 ? (int)extra : 0;
}

/* pool -- max or average pooling with a k x k window; ceil: PyTorch's ceil_mode, as padding on
 * the far sides that every window's maximum skips and an average that excludes padding does too */
static int32_t pool(zb *b, const char *name, int32_t x, int kh, int kw, int stride, int pad,
                    bool max, bool exclude_pad, bool ceil)
{
	int64_t oh, ow;
	int eh = 0, ew = 0;
	if (!usable(b, name, x, 4))
		return -1;
	if (!window(b, name, x, kh, kw, stride, pad, pad, &oh, &ow))
		return -1;
	if (pad >= kh || pad >= kw)
		return failf(b, ATM_E_USAGE, "layer '%s': padding %d must be smaller than the %dx%d "
		             "window (a window wholly in the padding has nothing to pool)", name, pad,
		             kh, kw);
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	if (ceil) {
		eh = ceil_extra(t->dims[2], kh, stride, pad, &oh);
		ew = ceil_extra(t->dims[3], kw, stride, pad, &ow);
	}
	/* PyTorch's divisor counts the near padding and the far padding up to pad, never the
	 * ceil's overhang: without padding that is the part inside x, exclude_pad's */
	if ((eh || ew) && !max && !exclude_pad && pad == 0)
		exclude_pad = true;
	if ((eh || ew) && !max && !exclude_pad)
		return failf(b, ATM_E_USAGE, "layer '%s': average pooling with ceil_mode, padding %d "
		             "and count_include_pad would divide its last windows by the part inside the "
		             "padding but not past it; autotm's counts all of the window or none of "
		             "the padding (give count_include_pad false)", name, pad);
	int64_t yd[4] = {t->dims[0], t->dims[1], oh, ow};
	int32_t out[2];
	out[0] = tensor(b, ATM_KIND_ACTIVATION, dt(b, x), 4, yd, "%s.y", name);
	out[1] = max ? tensor(b, ATM_KIND_ACTIVATION, ATM_I32, 4, yd, "%s.argmax", name) : -1;
	atm_attrs a = {
		.kernel = {kh, kw},
		.stride = {stride, stride},
		.pad = {pad, pad, pad + eh, pad + ew},
		.exclude_pad = exclude_pad,
	};
	if (node(b, max ? ATM_OP_MAXPOOL_FWD : ATM_OP_AVGPOOL_FWD, &a, 1, &x, max ? 2 : 1, out, "%s",
	         name) < 0)
		return -1;
	use(b, x);
	b->info[out[0]].needs_grad = b->info[x].needs_grad;
	return out[0];
}

int32_t zb_maxpool(zb *b, const char *name, int32_t x, int k, int stride, int pad)
{
	return pool(b, name, x, k, k, stride, pad, true, false, false);
}

int32_t zb_avgpool(zb *b, const char *name, int32_t x, int k, int stride, int pad,
                   bool exclude_pad)
{
	return pool(b, name, x, k, k, stride, pad, false, exclude_pad, false);
}

int32_t zb_pool_ceil(zb *b, const char *name, int32_t x, int k, int stride, int pad, bool max,
                     bool exclude_pad)
{
	return pool(b, name, x, k, k, stride, pad, max, exclude_pad, true);
}

int32_t zb_global_avgpool(zb *b, const char *name, int32_t x)
{
	if (!usable(b, name, x, 4))
		return -1;
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	if (t->dims[2] > INT32_MAX || t->dims[3] > INT32_MAX)
		return failf(b, ATM_E_USAGE, "layer '%s': input '%s' is too large to pool", name,
		             t->name);
	return pool(b, name, x, (int)t->dims[2], (int)t->dims[3], 1, 0, false, false, false);
}

int32_t zb_fc(zb *b, const char *name, int32_t x, int64_t out)
{
	if (!usable(b, name, x, 0))
		return -1;
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	if (t->ndim < 2)
		return failf(b, ATM_E_USAGE, "layer '%s': input '%s' has 1 dimension; expected [N, ...]",
		             name, t->name);
	if (out < 1)
		return failf(b, ATM_E_USAGE, "layer '%s': %lld outputs; an inner product needs >= 1",
		             name, (long long)out);
	int64_t n = t->dims[0], features = t->n_elems / t->dims[0];
	int64_t wd[2] = {out, features}, bd[1] = {out}, yd[2] = {n, out};
	int32_t in[3];
	in[0] = x = lowered(b, x);
	in[1] = weight(b, param(b, 0, 2, wd, name, "w"));
	in[2] = weight(b, param(b, 1, 1, bd, name, "b"));
	zb_param_names(b, NULL, NULL);
	int32_t y = tensor(b, ATM_KIND_ACTIVATION, b->status ? ATM_F32 : dt(b, x), 2, yd, "%s.y", name);
	if (node(b, ATM_OP_IP_FWD, NULL, 3, in, 1, &y, "%s", name) < 0)
		return -1;
	use(b, x);
	b->info[y].needs_grad = true;
	return y;
}

/* binary -- a parameterless op (x0, x1) -> y of x0's shape, once its shapes were checked; y
 * needs a gradient when either input does (a parameter always does) */
static int32_t binary(zb *b, const char *name, atm_op op, int32_t x0, int32_t x1)
{
	const atm_tensor *t0 = atm_graph_tensor(b->g, x0);
	int64_t yd[ATM_MAX_DIMS];
	int nd = t0->ndim;
	memcpy(yd, t0->dims, sizeof yd);
	int32_t in[2] = {x0, x1};
	int32_t y = tensor(b, ATM_KIND_ACTIVATION, promoted(b, x0, x1), nd, yd, "%s.y", name);
	if (node(b, op, NULL, 2, in, 1, &y, "%s", name) < 0)
		return -1;
	use(b, x0);
	use(b, x1);
	bool param = atm_graph_tensor(b->g, x0)->kind == ATM_KIND_PARAM ||
	             atm_graph_tensor(b->g, x1)->kind == ATM_KIND_PARAM;
	b->info[y].needs_grad = b->info[x0].needs_grad || b->info[x1].needs_grad || param;
	return y;
}

int32_t zb_add(zb *b, const char *name, int32_t x0, int32_t x1)
{
	if (!usable(b, name, x0, 0) || !usable(b, name, x1, 0))
		return -1;
	const atm_tensor *t0 = atm_graph_tensor(b->g, x0), *t1 = atm_graph_tensor(b->g, x1);
	if (t0->ndim != t1->ndim || memcmp(t0->dims, t1->dims, (size_t)t0->ndim * sizeof t0->dims[0]))
		return failf(b, ATM_E_USAGE, "layer '%s': inputs '%s' and '%s' differ in shape", name,
		             t0->name, t1->name);
	return binary(b, name, ATM_OP_ADD, x0, x1);
}

int32_t zb_mul(zb *b, const char *name, int32_t x0, int32_t x1)
{
	if (!usable(b, name, x0, 0) || !usable(b, name, x1, 0))
		return -1;
	const atm_tensor *t0 = atm_graph_tensor(b->g, x0), *t1 = atm_graph_tensor(b->g, x1);
	bool fits = t1->ndim <= t0->ndim;
	for (int i = 1; fits && i <= t1->ndim; i++)
		fits = t1->dims[t1->ndim - i] == t0->dims[t0->ndim - i] || t1->dims[t1->ndim - i] == 1;
	if (!fits)
		return failf(b, ATM_E_USAGE, "layer '%s': input '%s' does not broadcast to the shape of "
		             "'%s' (its dims must be the trailing ones of that shape, each equal or 1)",
		             name, t1->name, t0->name);
	return binary(b, name, ATM_OP_MUL, x0, x1);
}

int32_t zb_scale(zb *b, const char *name, int32_t x, int ndim, const int64_t *dims)
{
	if (!usable(b, name, x, 0))
		return -1;
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	if (ndim < 1 || ndim >= t->ndim)
		return failf(b, ATM_E_USAGE, "layer '%s': a scale of %d dims over '%s' of %d; it takes "
		             "1 to %d of the trailing ones", name, ndim, t->name, t->ndim, t->ndim - 1);
	int32_t w = param(b, 0, ndim, dims, name, "weight");
	zb_param_names(b, NULL, NULL);
	return w < 0 ? -1 : zb_mul(b, name, x, w);
}

int32_t zb_concat(zb *b, const char *name, int n, const int32_t *xs)
{
	return zb_concat_axis(b, name, n, xs, 1);
}

int32_t zb_concat_axis(zb *b, const char *name, int n, const int32_t *xs, int axis)
{
	if (b->status < 0)
		return -1;
	if (n < 1)
		return failf(b, ATM_E_USAGE, "layer '%s': concatenation of %d tensors; needs >= 1",
		             name ? name : "?", n);
	int64_t yd[ATM_MAX_DIMS] = {0};
	int nd = 0;
	bool needs = false;
	for (int i = 0; i < n; i++) {
		if (!usable(b, name, xs[i], 0))
			return -1;
		const atm_tensor *t = atm_graph_tensor(b->g, xs[i]);
		bool same = i == 0 || t->ndim == nd;
		for (int d = 0; same && i > 0 && d < nd; d++)
			same = d == axis || t->dims[d] == yd[d];
		if (i == 0 && (axis < 0 || axis >= t->ndim))
			return failf(b, ATM_E_USAGE, "layer '%s': axis %d is out of range for '%s' with %d "
			             "dimensions", name, axis, t->name, t->ndim);
		if (!same)
			return failf(b, ATM_E_USAGE, "layer '%s': input %d '%s' differs from the first "
			             "input outside axis %d", name, i, t->name, axis);
		if (i == 0) {
			nd = t->ndim;
			memcpy(yd, t->dims, sizeof yd);
		} else {
			yd[axis] += t->dims[axis];
		}
		needs = needs || b->info[xs[i]].needs_grad;
	}
	if (n == 1)
		return xs[0]; /* nothing to join: no copy */
	atm_dtype d = ATM_BF16;
	for (int i = 0; i < n; i++)
		d = dt(b, xs[i]) == ATM_F32 ? ATM_F32 : d;
	int32_t y = tensor(b, ATM_KIND_ACTIVATION, d, nd, yd, "%s.y", name);
	atm_attrs a = {.axis = axis};
	if (node(b, ATM_OP_CONCAT, &a, n, xs, 1, &y, "%s", name) < 0)
		return -1;
	for (int i = 0; i < n; i++)
		use(b, xs[i]);
	b->info[y].needs_grad = needs;
	return y;
}

/* ---------------------------------------------------------------- transformer layers */

/* tparam -- a parameter of a transformer layer: named as zb_param_names said, else
 * LAYER.weight or LAYER.bias as PyTorch names them */
static int32_t tparam(zb *b, int slot, int ndim, const int64_t *dims, const char *layer)
{
	return param(b, slot, ndim, dims, layer, slot ? "bias" : "weight");
}

/* act_dt -- a new activation of layer: "LAYER.suffix" of dims and dtype d, its gradient needed
 * as said */
static int32_t act_dt(zb *b, const char *layer, const char *suffix, int ndim, const int64_t *dims,
                      bool needs_grad, atm_dtype d)
{
	int32_t y = tensor(b, ATM_KIND_ACTIVATION, d, ndim, dims, "%s.%s", layer, suffix);
	if (y >= 0)
		b->info[y].needs_grad = needs_grad;
	return y;
}

/* act -- act_dt in f32 */
static int32_t act(zb *b, const char *layer, const char *suffix, int ndim, const int64_t *dims,
                   bool needs_grad)
{
	return act_dt(b, layer, suffix, ndim, dims, needs_grad, ATM_F32);
}

int64_t zb_dim(zb *b, int32_t x, int i)
{
	const atm_tensor *t = b->g ? atm_graph_tensor(b->g, x) : NULL;
	return t && i >= 0 && i < t->ndim ? t->dims[i] : 0;
}

int32_t zb_tokens(zb *b, const char *name, int64_t seq)
{
	if (b->status < 0)
		return -1;
	if (!b->g)
		return failf(b, ATM_E_USAGE, "%s: the network is finished already", name);
	if (seq < 1)
		return failf(b, ATM_E_USAGE, "%s: sequence length %lld; it must be >= 1", name,
		             (long long)seq);
	int64_t dims[2] = {b->batch, seq};
	return tensor(b, ATM_KIND_INPUT, ATM_I32, 2, dims, "%s", name);
}

int32_t zb_embedding(zb *b, const char *name, int32_t ids, int64_t rows, int64_t dim)
{
	if (b->status < 0)
		return -1;
	const atm_tensor *t = atm_graph_tensor(b->g, ids);
	if (!t || t->dtype != ATM_I32)
		return failf(b, ATM_E_USAGE, "layer '%s': its ids must be an i32 tensor", name);
	if (rows < 1 || dim < 1)
		return failf(b, ATM_E_USAGE, "layer '%s': a table of %lld x %lld; both must be >= 1",
		             name, (long long)rows, (long long)dim);
	int64_t yd[ATM_MAX_DIMS], td[2] = {rows, dim};
	int nd = t->ndim + 1;
	memcpy(yd, t->dims, (size_t)t->ndim * sizeof *yd);
	yd[nd - 1] = dim;
	int32_t in[2] = {tparam(b, 0, 2, td, name), ids};
	zb_param_names(b, NULL, NULL);
	int32_t y = act(b, name, "y", nd, yd, true);
	if (node(b, ATM_OP_EMBEDDING_FWD, NULL, 2, in, 1, &y, "%s", name) < 0)
		return -1;
	return y;
}

int32_t zb_positions(zb *b, const char *name, const char *param, int64_t seq, int64_t rows,
                     int64_t dim, bool lead_one)
{
	if (b->status < 0)
		return -1;
	if (seq > rows)
		return failf(b, ATM_E_USAGE, "layer '%s': the sequence is %lld long but the position "
		             "table has %lld rows", name, (long long)seq, (long long)rows);
	if (seq < 1 || dim < 1)
		return failf(b, ATM_E_USAGE, "layer '%s': sequence %lld, width %lld; both must be >= 1",
		             name, (long long)seq, (long long)dim);
	int64_t td[3] = {1, rows, dim}, yd[3] = {b->batch, seq, dim};
	zb_param_names(b, param, NULL);
	int32_t table = lead_one ? tparam(b, 0, 3, td, name) : tparam(b, 0, 2, td + 1, name);
	zb_param_names(b, NULL, NULL);
	int32_t y = act(b, name, "y", 3, yd, true);
	atm_attrs a = {.positions = true};
	if (node(b, ATM_OP_EMBEDDING_FWD, &a, 1, &table, 1, &y, "%s", name) < 0)
		return -1;
	return y;
}

/* row_norm -- a normalisation over the last dim of x [..., C] (layer norm: a scale and a shift,
 * then y, mean, var; RMS norm: a scale, then y, rstd), each statistic one per row, all f32 (a
 * bf16 x is read widened, exactly as a cast to f32 would give it) */
static int32_t row_norm(zb *b, const char *name, int32_t x, float epsilon, atm_op op)
{
	const char *what = op == ATM_OP_LAYER_NORM_FWD ? "layer norm" : "RMS norm";
	if (!usable(b, name, x, 0))
		return -1;
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	int64_t xd[ATM_MAX_DIMS], cd[1] = {t->dims[t->ndim - 1]};
	int nd = t->ndim;
	if (nd < 2)
		return failf(b, ATM_E_USAGE, "layer '%s': input '%s' has 1 dimension; %s needs "
		             "[..., C]", name, t->name, what);
	if (!(epsilon > 0) || !(epsilon <= 1))
		return failf(b, ATM_E_USAGE, "layer '%s': epsilon %g; %s takes one above 0 and at most 1",
		             name, epsilon, what);
	memcpy(xd, t->dims, sizeof xd);
	bool ln = op == ATM_OP_LAYER_NORM_FWD;
	int32_t in[3] = {x, tparam(b, 0, 1, cd, name), ln ? tparam(b, 1, 1, cd, name) : -1}, out[3];
	zb_param_names(b, NULL, NULL);
	out[0] = act(b, name, "y", nd, xd, true);
	out[1] = act(b, name, ln ? "mean" : "rstd", nd - 1, xd, false);
	out[2] = ln ? act(b, name, "var", nd - 1, xd, false) : -1;
	atm_attrs a = {.epsilon = epsilon};
	if (node(b, op, &a, ln ? 3 : 2, in, ln ? 3 : 2, out, "%s", name) < 0)
		return -1;
	use(b, x);
	return out[0];
}

int32_t zb_layer_norm(zb *b, const char *name, int32_t x, float epsilon)
{
	return row_norm(b, name, x, epsilon, ATM_OP_LAYER_NORM_FWD);
}

int32_t zb_rms_norm(zb *b, const char *name, int32_t x, float epsilon)
{
	return row_norm(b, name, x, epsilon, ATM_OP_RMS_NORM_FWD);
}

/* matmul -- c = scale * op(a) op(w) (+ bias) as one node; the shape rule says what fits */
static int32_t matmul(zb *b, const char *name, int32_t a, int32_t w, int32_t bias,
                      const atm_attrs *at, int nd, const int64_t *cd)
{
	a = lowered(b, a);
	w = lowered(b, w);
	bias = weight(b, bias);
	int32_t in[3] = {a, w, bias};
	if (b->status < 0)
		return -1;
	int32_t c = act_dt(b, name, "y", nd, cd, true, promoted(b, a, w));
	if (node(b, ATM_OP_MATMUL, at, bias >= 0 ? 3 : 2, in, 1, &c, "%s", name) < 0)
		return -1;
	use(b, a);
	use(b, w);
	return c;
}

int32_t zb_linear(zb *b, const char *name, int32_t x, int64_t out, bool bias)
{
	if (!usable(b, name, x, 0))
		return -1;
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	if (t->ndim < 2 || out < 1)
		return failf(b, ATM_E_USAGE, "layer '%s': a linear layer takes [..., features] to %lld "
		             "outputs; '%s' has %d dimensions", name, (long long)out, t->name, t->ndim);
	int64_t wd[2] = {out, t->dims[t->ndim - 1]}, bd[1] = {out}, yd[ATM_MAX_DIMS];
	int nd = t->ndim;
	memcpy(yd, t->dims, sizeof yd);
	yd[nd - 1] = out;
	int32_t w = tparam(b, 0, 2, wd, name);
	int32_t bb = bias ? tparam(b, 1, 1, bd, name) : -1;
	zb_param_names(b, NULL, NULL);
	atm_attrs a = {.trans_b = true, .scale = 1.0f};
	return matmul(b, name, x, w, bb, &a, nd, yd);
}

int32_t zb_matmul(zb *b, const char *name, int32_t x, int32_t y, bool trans_a, bool trans_b,
                  float scale)
{
	if (!usable(b, name, x, 0) || !usable(b, name, y, 0))
		return -1;
	const atm_tensor *ta = atm_graph_tensor(b->g, x), *tb = atm_graph_tensor(b->g, y);
	int nd = ta->ndim;
	if (nd < 3 || tb->ndim != nd)
		return failf(b, ATM_E_USAGE, "layer '%s': a batched matmul takes two tensors of one "
		             "rank >= 3; '%s' has %d dimensions and '%s' %d", name, ta->name, nd, tb->name,
		             tb->ndim);
	int64_t cd[ATM_MAX_DIMS];
	memcpy(cd, ta->dims, sizeof cd);
	cd[nd - 2] = trans_a ? ta->dims[nd - 1] : ta->dims[nd - 2];
	cd[nd - 1] = trans_b ? tb->dims[nd - 2] : tb->dims[nd - 1];
	atm_attrs a = {.trans_a = trans_a, .trans_b = trans_b, .scale = scale};
	return matmul(b, name, x, y, -1, &a, nd, cd);
}

/* one_in_as -- a parameterless op x -> y of ndim dims and dtype d, y's gradient needed as x's
 * is */
static int32_t one_in_as(zb *b, const char *name, int32_t x, atm_op op, const atm_attrs *a,
                         int ndim, const int64_t *dims, atm_dtype d)
{
	int32_t y = act_dt(b, name, "y", ndim, dims, b->info[x].needs_grad, d);
	if (node(b, op, a, 1, &x, 1, &y, "%s", name) < 0)
		return -1;
	use(b, x);
	return y;
}

/* one_in -- one_in_as in x's dtype */
static int32_t one_in(zb *b, const char *name, int32_t x, atm_op op, const atm_attrs *a,
                      int ndim, const int64_t *dims)
{
	return one_in_as(b, name, x, op, a, ndim, dims, dt(b, x));
}

/* unary -- a parameterless op x -> y of x's shape */
static int32_t unary(zb *b, const char *name, int32_t x, atm_op op, const atm_attrs *a)
{
	if (!usable(b, name, x, 0))
		return -1;
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	int64_t xd[ATM_MAX_DIMS];
	int nd = t->ndim;
	memcpy(xd, t->dims, sizeof xd);
	return one_in(b, name, x, op, a, nd, xd);
}

int32_t zb_gelu(zb *b, const char *name, int32_t x, bool tanh_form)
{
	atm_attrs a = {.tanh = tanh_form};
	return unary(b, name, x, ATM_OP_GELU_FWD, &a);
}

int32_t zb_tanh(zb *b, const char *name, int32_t x)
{
	return unary(b, name, x, ATM_OP_TANH_FWD, NULL);
}

int32_t zb_rope(zb *b, const char *name, int32_t x, float theta)
{
	if (!usable(b, name, x, 0))
		return -1;
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	if (t->ndim < 2 || t->dims[t->ndim - 1] % 2)
		return failf(b, ATM_E_USAGE, "layer '%s': input '%s' needs [..., T, D] with D even for "
		             "rotary embeddings", name, t->name);
	atm_attrs a = {.theta = theta};
	return unary(b, name, x, ATM_OP_ROPE_FWD, &a);
}

int32_t zb_silu(zb *b, const char *name, int32_t x)
{
	return unary(b, name, x, ATM_OP_SILU_FWD, NULL);
}

int32_t zb_sigmoid(zb *b, const char *name, int32_t x)
{
	return unary(b, name, x, ATM_OP_SIGMOID_FWD, NULL);
}

int32_t zb_hardswish(zb *b, const char *name, int32_t x)
{
	return unary(b, name, x, ATM_OP_HARDSWISH_FWD, NULL);
}

int32_t zb_hardsigmoid(zb *b, const char *name, int32_t x)
{
	return unary(b, name, x, ATM_OP_HARDSIGMOID_FWD, NULL);
}

int32_t zb_relu6(zb *b, const char *name, int32_t x)
{
	return unary(b, name, x, ATM_OP_RELU6_FWD, NULL);
}

int32_t zb_softmax(zb *b, const char *name, int32_t x, bool causal)
{
	atm_attrs a = {.causal = causal};
	if (!usable(b, name, x, 0))
		return -1;
	/* under autocast f32 out of bf16 in: read widened, as exactly as a cast would */
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	int64_t xd[ATM_MAX_DIMS];
	memcpy(xd, t->dims, sizeof xd);
	return one_in_as(b, name, x, ATM_OP_SOFTMAX_FWD, &a, t->ndim, xd,
	                 b->autocast ? ATM_F32 : t->dtype);
}

int32_t zb_permute(zb *b, const char *name, int32_t x, int n_perm, const int32_t *perm, int ndim,
                   const int64_t *dims)
{
	if (!usable(b, name, x, 0))
		return -1;
	if (n_perm < 1 || n_perm > ATM_MAX_DIMS)
		return failf(b, ATM_E_USAGE, "layer '%s': a perm of %d axes; 1 to %d", name, n_perm,
		             ATM_MAX_DIMS);
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	int64_t n = 1;
	for (int i = 0; i < ndim; i++)
		n *= dims[i];
	if (ndim < 1 || ndim > ATM_MAX_DIMS || n != t->n_elems)
		return failf(b, ATM_E_USAGE, "layer '%s': '%s' has %lld elements; the %d-dimensional "
		             "output would have %lld", name, t->name, (long long)t->n_elems, ndim,
		             (long long)n);
	atm_attrs a = {.n_perm = n_perm};
	memcpy(a.perm, perm, (size_t)n_perm * sizeof *perm);
	return one_in(b, name, x, ATM_OP_PERMUTE, &a, ndim, dims);
}

int32_t zb_narrow(zb *b, const char *name, int32_t x, int axis, int64_t len)
{
	if (!usable(b, name, x, 0))
		return -1;
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	if (axis < 0 || axis >= t->ndim || len < 1 || len > t->dims[axis])
		return failf(b, ATM_E_USAGE, "layer '%s': cannot take %lld along axis %d of '%s'", name,
		             (long long)len, axis, t->name);
	int64_t yd[ATM_MAX_DIMS];
	int nd = t->ndim;
	memcpy(yd, t->dims, sizeof yd);
	yd[axis] = len;
	atm_attrs a = {.axis = axis};
	return one_in(b, name, x, ATM_OP_NARROW_FWD, &a, nd, yd);
}

void zb_split(zb *b, const char *name, int32_t x, int axis, int n, int32_t *ys)
{
	for (int i = 0; i < n; i++)
		ys[i] = -1;
	if (!usable(b, name, x, 0))
		return;
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	if (n < 1 || axis < 0 || axis >= t->ndim || t->dims[axis] % n) {
		failf(b, ATM_E_USAGE, "layer '%s': cannot split '%s' in %d equal parts along axis %d",
		      name, t->name, n, axis);
		return;
	}
	int64_t yd[ATM_MAX_DIMS];
	int nd = t->ndim;
	bool needs = b->info[x].needs_grad;
	memcpy(yd, t->dims, sizeof yd);
	yd[axis] /= n;
	for (int i = 0; i < n; i++) {
		char suffix[32];
		snprintf(suffix, sizeof suffix, "y%d", i);
		ys[i] = act_dt(b, name, suffix, nd, yd, needs, dt(b, x));
	}
	atm_attrs a = {.axis = axis};
	if (node(b, ATM_OP_SPLIT, &a, 1, &x, n, ys, "%s", name) < 0)
		return;
	use(b, x);
}

int32_t zb_conv_bn(zb *b, const char *prefix, int32_t x, int64_t out_c, int kh, int kw, int stride,
                   int ph, int pw)
{
	char nm[ZB_NAME_MAX];
	x = zb_conv(b, zb_namef(nm, "%s.conv", prefix), x, out_c, kh, kw, stride, ph, pw, false);
	return zb_bn(b, zb_namef(nm, "%s.bn", prefix), x);
}

int32_t zb_conv_bn_relu(zb *b, const char *prefix, int32_t x, int64_t out_c, int kh, int kw,
                        int stride, int ph, int pw)
{
	char nm[ZB_NAME_MAX];
	x = zb_conv_bn(b, prefix, x, out_c, kh, kw, stride, ph, pw);
	return zb_relu(b, zb_namef(nm, "%s.relu", prefix), x);
}

/* ---------------------------------------------------------------- backward pass */

/* batched_like -- mark gradient dx batched when x is; dx is returned */
static int32_t batched_like(zb *b, int32_t dx, int32_t x)
{
	if (dx >= 0 && atm_graph_tensor(b->g, x)->batched) {
		atm_status rc = atm_graph_mark_batched(b->g, dx);
		if (rc < 0)
			return fail(b, rc);
	}
	return dx;
}

/* like -- a new gradient tensor of x's shape, named x's name + suffix */
static int32_t like(zb *b, int32_t x, const char *suffix)
{
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	int64_t dims[ATM_MAX_DIMS];
	int nd = t->ndim;
	memcpy(dims, t->dims, sizeof dims);
	return batched_like(b, tensor(b, ATM_KIND_GRAD, t->dtype, nd, dims, "%s%s", t->name, suffix),
	                    x);
}

/* unused_grad -- the gradient a kernel must write for input slot of layer but
 * nobody wants (the image's): named after the layer, so it stays unique */
static int32_t unused_grad(zb *b, int32_t x, const char *layer, int slot)
{
	const atm_tensor *t = atm_graph_tensor(b->g, x);
	int64_t dims[ATM_MAX_DIMS];
	int nd = t->ndim;
	memcpy(dims, t->dims, sizeof dims);
	return batched_like(b, tensor(b, ATM_KIND_GRAD, t->dtype, nd, dims, "%s.d%d.unused", layer,
	                              slot), x);
}

/* new_grad -- a fresh tensor for the next gradient contribution to x: "x.grad"
 * when x has one consumer, else "x.grad.K" for the K-th, summed by accumulate */
static int32_t new_grad(zb *b, int32_t x)
{
	char suffix[32];
	if (b->status < 0)
		return -1;
	if (b->info[x].n_uses == 1)
		snprintf(suffix, sizeof suffix, ".grad");
	else
		snprintf(suffix, sizeof suffix, ".grad.%d", ++b->info[x].n_named);
	return like(b, x, suffix);
}

/* accumulate -- g is one more contribution to x's gradient; sums as they come so
 * each partial gradient dies right away. The last sum is named "x.grad". */
static void accumulate(zb *b, int32_t x, int32_t g)
{
	char suffix[32];
	if (b->status < 0)
		return;
	int32_t k = ++b->info[x].n_seen;
	if (k > b->info[x].n_uses) {
		failf(b, ATM_E_INTERNAL, "tensor '%s' received %d gradients but has %d uses",
		      atm_graph_tensor(b->g, x)->name, k, b->info[x].n_uses);
		return;
	}
	if (k == 1) {
		b->info[x].grad = g;
		return;
	}
	if (k == b->info[x].n_uses)
		snprintf(suffix, sizeof suffix, ".grad");
	else
		snprintf(suffix, sizeof suffix, ".grad.sum%d", k);
	int32_t in[2] = {b->info[x].grad, g};
	int32_t s = like(b, x, suffix);
	if (node(b, ATM_OP_ADD, NULL, 2, in, 1, &s, "%s.grad.acc%d", atm_graph_tensor(b->g, x)->name,
	         k) < 0)
		return;
	b->info[x].grad = s;
}

/* sgd -- update param w with its gradient dw */
static void sgd(zb *b, int32_t w, int32_t dw)
{
	if (b->status < 0)
		return;
	atm_attrs a = {.lr = b->lr};
	int32_t in[2] = {w, dw};
	node(b, ATM_OP_SGD, &a, 2, in, 0, NULL, "%s.sgd", atm_graph_tensor(b->g, w)->name);
}

/* param_contrib -- g is one more contribution to parameter w's gradient; once all have
 * come (one per use, tparam), the sum is complete and w's SGD follows it */
static void param_contrib(zb *b, int32_t w, int32_t g)
{
	accumulate(b, w, g);
	if (b->status == ATM_OK && b->info[w].n_seen == b->info[w].n_uses)
		sgd(b, w, b->info[w].grad);
}

static void deliver(zb *b, int32_t x, int32_t g);

/* param_grads -- the weights-gradient node of a conv or inner product (x, dy -> dw, db)
 * and the SGD of each parameter right after it (under autocast: the gradients of their bf16
 * copies, which their casts' backward takes on) */
static void param_grads(zb *b, atm_op op, const atm_attrs *a, const char *layer, int32_t x,
                        int32_t dy, int32_t w, int32_t bias)
{
	int32_t in[2] = {x, dy}, out[2];
	out[0] = new_grad(b, w);
	out[1] = bias >= 0 ? new_grad(b, bias) : -1;
	if (node(b, op, a, 2, in, bias >= 0 ? 2 : 1, out, "%s.bwd_weights", layer) < 0)
		return;
	deliver(b, w, out[0]);
	if (bias >= 0)
		deliver(b, bias, out[1]);
}

/* data_grad -- op (dy, w) -> dx for x when x needs a gradient */
static void data_grad(zb *b, atm_op op, const atm_attrs *a, const char *layer, int32_t x,
                      int32_t dy, int32_t w)
{
	if (!b->info[x].needs_grad)
		return; /* the image: nobody wants its gradient */
	int32_t in[2] = {dy, w};
	int32_t dx = new_grad(b, x);
	if (node(b, op, a, 2, in, 1, &dx, "%s.bwd_data", layer) < 0)
		return;
	accumulate(b, x, dx);
}

/* unary_grad -- op (in...) -> dx for the single data input x of a parameterless layer */
static void unary_grad(zb *b, atm_op op, const atm_attrs *a, const char *layer, int32_t x,
                       int n_in, const int32_t *in)
{
	if (!b->info[x].needs_grad)
		return;
	int32_t dx = new_grad(b, x);
	if (node(b, op, a, n_in, in, 1, &dx, "%s.bwd", layer) < 0)
		return;
	accumulate(b, x, dx);
}

/* grad_of -- where a contribution to x's gradient goes: a fresh tensor, or -1 when x needs
 * none (a parameter always does) */
static int32_t grad_of(zb *b, int32_t x)
{
	bool param = atm_graph_tensor(b->g, x)->kind == ATM_KIND_PARAM;
	return param || b->info[x].needs_grad ? new_grad(b, x) : -1;
}

/* deliver -- g, written by the node just added, joins x's gradient */
static void deliver(zb *b, int32_t x, int32_t g)
{
	if (atm_graph_tensor(b->g, x)->kind == ATM_KIND_PARAM)
		param_contrib(b, x, g);
	else
		accumulate(b, x, g);
}

/* matmul_grads -- c = s op(A) op(B) (+ bias): dA and dB are matmuls of dC with the other
 * operand, transposed as the forward one was (for a 2-d B, dB folds the rows: a weight
 * gradient), and the bias gradient sums dC over its leading dims */
static void matmul_grads(zb *b, const atm_attrs *a, const char *layer, const int32_t *in, int n_in,
                         int32_t dc)
{
	int32_t A = in[0], B = in[1];
	float s = a->scale ? a->scale : 1.0f;
	int32_t dA = grad_of(b, A);
	if (dA >= 0) {
		/* A: dC op(B)^T, or for A^T: op(B) dC^T */
		atm_attrs g = a->trans_a ? (atm_attrs){.trans_a = a->trans_b, .trans_b = true, .scale = s}
		                         : (atm_attrs){.trans_b = !a->trans_b, .scale = s};
		int32_t gin[2] = {a->trans_a ? B : dc, a->trans_a ? dc : B};
		if (node(b, ATM_OP_MATMUL, &g, 2, gin, 1, &dA, "%s.bwd_a", layer) < 0)
			return;
		deliver(b, A, dA);
	}
	int32_t dB = grad_of(b, B);
	if (dB >= 0) {
		/* B: op(A)^T dC, or for B^T: dC^T op(A) */
		atm_attrs g = a->trans_b ? (atm_attrs){.trans_a = true, .trans_b = a->trans_a, .scale = s}
		                         : (atm_attrs){.trans_a = !a->trans_a, .scale = s};
		int32_t gin[2] = {a->trans_b ? dc : A, a->trans_b ? A : dc};
		if (node(b, ATM_OP_MATMUL, &g, 2, gin, 1, &dB, "%s.bwd_b", layer) < 0)
			return;
		deliver(b, B, dB);
	}
	if (n_in == 3) {
		int32_t db = new_grad(b, in[2]);
		if (node(b, ATM_OP_REDUCE_SUM, NULL, 1, &dc, 1, &db, "%s.bwd_bias", layer) < 0)
			return;
		deliver(b, in[2], db);
	}
}

/* mul_grads -- y = a * b: dA = dy * b (b broadcast as in the forward pass); dB = dy * a where
 * b has a's shape, else that product summed over b's repeats (mul_bwd) */
static void mul_grads(zb *b, const char *layer, const int32_t *in, int32_t dy)
{
	int32_t A = in[0], B = in[1];
	int32_t dA = grad_of(b, A);
	if (dA >= 0) {
		if (node(b, ATM_OP_MUL, NULL, 2, (int32_t[]){dy, B}, 1, &dA, "%s.bwd_a", layer) < 0)
			return;
		deliver(b, A, dA);
	}
	int32_t dB = grad_of(b, B);
	if (dB >= 0) {
		bool same = atm_graph_tensor(b->g, A)->n_elems == atm_graph_tensor(b->g, B)->n_elems;
		if (node(b, same ? ATM_OP_MUL : ATM_OP_MUL_BWD, NULL, 2, (int32_t[]){dy, A}, 1, &dB,
		         "%s.bwd_b", layer) < 0)
			return;
		deliver(b, B, dB);
	}
}

/* The forward node whose gradient nodes a rule adds: copies of its operands (adding nodes may
 * move the graph's node array), and its output's complete gradient dy. */
struct fwd {
	const char *layer;
	atm_op op;
	atm_attrs a;
	const int32_t *in, *out;
	int n_in, n_out;
	int32_t y, dy;
};

/* What a unary rule's backward node reads beside the gradient: */
enum grad_from {
	FROM_DY,         /* dy alone */
	FROM_Y_DY,       /* the forward output, dy */
	FROM_X_DY,       /* the forward input, dy */
	FROM_DY_OUT1,    /* dy, the forward's second output (max pooling's argmax) */
};

/* A forward op's gradient rule: the function that adds its gradient nodes (one per op or per
 * family of ops), the backward op it adds, and for unary rules what that op reads and whether
 * it takes the forward node's attributes. */
struct grad_rule {
	void (*add)(zb *b, const struct fwd *f, const struct grad_rule *r);
	atm_op bwd, bwd2;
	enum grad_from from;
	bool attrs;
};

/* grad_unary -- dx from one backward node over dy and what r names */
static void grad_unary(zb *b, const struct fwd *f, const struct grad_rule *r)
{
	int32_t in[2] = {f->dy, -1};
	int n = 2;
	switch (r->from) {
	case FROM_DY: n = 1; break;
	case FROM_Y_DY: in[0] = f->y; in[1] = f->dy; break;
	case FROM_X_DY: in[0] = f->in[0]; in[1] = f->dy; break;
	case FROM_DY_OUT1: in[1] = f->out[1]; break;
	}
	unary_grad(b, r->bwd, r->attrs ? &f->a : NULL, f->layer, f->in[0], n, in);
}

/* grad_weighted -- a convolution or linear layer: dx (r->bwd), then dw and db (r->bwd2) */
static void grad_weighted(zb *b, const struct fwd *f, const struct grad_rule *r)
{
	data_grad(b, r->bwd, &f->a, f->layer, f->in[0], f->dy, f->in[1]);
	param_grads(b, r->bwd2, &f->a, f->layer, f->in[0], f->dy, f->in[1],
	            f->n_in == 3 ? f->in[2] : -1);
}

/* grad_norm -- a batch, layer or RMS norm: one backward node from x, dy, the scale and the
 * saved statistics, out dx and the parameters' gradients (scale; and shift but for RMS norm) */
static void grad_norm(zb *b, const struct fwd *f, const struct grad_rule *r)
{
	int32_t x = f->in[0];
	int n_par = f->op == ATM_OP_RMS_NORM_FWD ? 1 : 2;
	int32_t bin[5] = {x, f->dy, f->in[1], f->out[1], n_par == 2 ? f->out[2] : -1}, bout[3];
	bool want = b->info[x].needs_grad;
	bout[0] = want ? new_grad(b, x) : unused_grad(b, x, f->layer, 0);
	for (int i = 1; i <= n_par; i++)
		bout[i] = new_grad(b, f->in[i]);
	if (node(b, r->bwd, &f->a, 3 + n_par, bin, 1 + n_par, bout, "%s.bwd", f->layer) < 0)
		return;
	for (int i = 1; i <= n_par; i++)
		param_contrib(b, f->in[i], bout[i]);
	if (want)
		accumulate(b, x, bout[0]);
}

/* grad_parts -- room for the n gradient parts of f's backward, or NULL (failed: no memory) */
static int32_t *grad_parts(zb *b, const struct fwd *f, int n)
{
	int32_t *parts = malloc((size_t)n * sizeof *parts);
	if (!parts)
		failf(b, ATM_E_NOMEM, "out of memory adding the backward pass of '%s'", f->layer);
	return parts;
}

/* grad_concat -- a concatenation's gradient is dy split back into its parts */
static void grad_concat(zb *b, const struct fwd *f, const struct grad_rule *r)
{
	(void)r;
	int32_t *parts = grad_parts(b, f, f->n_in);
	if (!parts)
		return;
	for (int i = 0; i < f->n_in; i++)
		parts[i] = b->info[f->in[i]].needs_grad ? new_grad(b, f->in[i])
		                                        : unused_grad(b, f->in[i], f->layer, i);
	if (node(b, ATM_OP_SPLIT, &f->a, 1, &f->dy, f->n_in, parts, "%s.bwd", f->layer) >= 0)
		for (int i = 0; i < f->n_in; i++)
			if (b->info[f->in[i]].needs_grad)
				accumulate(b, f->in[i], parts[i]);
	free(parts);
}

/* grad_split -- a forward split (q, k, v): its backward joins the parts' gradients */
static void grad_split(zb *b, const struct fwd *f, const struct grad_rule *r)
{
	(void)r;
	int32_t *parts = grad_parts(b, f, f->n_out);
	if (!parts)
		return;
	for (int i = 0; i < f->n_out && b->status == ATM_OK; i++) {
		parts[i] = b->info[f->out[i]].grad;
		if (parts[i] < 0 || b->info[f->out[i]].n_seen != b->info[f->out[i]].n_uses)
			failf(b, ATM_E_USAGE, "layer '%s': part %d '%s' does not reach the loss; "
			      "every part of a split must", f->layer, i,
			      atm_graph_tensor(b->g, f->out[i])->name);
	}
	if (b->status == ATM_OK)
		unary_grad(b, ATM_OP_CONCAT, &f->a, f->layer, f->in[0], f->n_out, parts);
	free(parts);
}

/* grad_add -- d(a + b) is dy for both: no kernel, the same tensor feeds both sums; an input
 * of another dtype than the sum's (a bf16 one promoted) gets dy cast to its own */
static void grad_add(zb *b, const struct fwd *f, const struct grad_rule *r)
{
	(void)r;
	for (int i = 0; i < 2; i++) {
		int32_t x = f->in[i], g = f->dy;
		if (!b->info[x].needs_grad)
			continue;
		if (dt(b, x) != dt(b, g)) {
			g = new_grad(b, x);
			if (node(b, ATM_OP_CAST, NULL, 1, &f->dy, 1, &g, "%s.bwd%d", f->layer, i) < 0)
				return;
		}
		accumulate(b, x, g);
	}
}

/* grad_cast -- dy cast back to the input's dtype (a parameter's: its gradient) */
static void grad_cast(zb *b, const struct fwd *f, const struct grad_rule *r)
{
	(void)r;
	int32_t x = f->in[0], dx = grad_of(b, x);
	if (dx < 0 || node(b, ATM_OP_CAST, NULL, 1, &f->dy, 1, &dx, "%s.bwd", f->layer) < 0)
		return;
	deliver(b, x, dx);
}

/* grad_matmul, grad_mul -- matmul_grads and mul_grads as rules */
static void grad_matmul(zb *b, const struct fwd *f, const struct grad_rule *r)
{
	(void)r;
	matmul_grads(b, &f->a, f->layer, f->in, f->n_in, f->dy);
}

static void grad_mul(zb *b, const struct fwd *f, const struct grad_rule *r)
{
	(void)r;
	mul_grads(b, f->layer, f->in, f->dy);
}

/* grad_permute -- dy permuted back by the inverse permutation */
static void grad_permute(zb *b, const struct fwd *f, const struct grad_rule *r)
{
	(void)r;
	atm_attrs inv = f->a;
	for (int i = 0; i < f->a.n_perm; i++)
		inv.perm[f->a.perm[i]] = i;
	unary_grad(b, ATM_OP_PERMUTE, &inv, f->layer, f->in[0], 1, &f->dy);
}

/* grad_embedding -- the table's gradient, scattered from dy by the ids */
static void grad_embedding(zb *b, const struct fwd *f, const struct grad_rule *r)
{
	int32_t g = new_grad(b, f->in[0]);
	int32_t bin[2] = {f->dy, f->n_in == 2 ? f->in[1] : -1};
	if (node(b, r->bwd, &f->a, f->n_in, bin, 1, &g, "%s.bwd", f->layer) < 0)
		return;
	param_contrib(b, f->in[0], g);
}

#define UNARY(BWD, FROM, ATTRS) {grad_unary, BWD, 0, FROM, ATTRS}

/* The gradient rule of every forward op, indexed by op: adding a forward op adds its row. */
static const struct grad_rule grad_rules[ATM_N_OPS] = {
	[ATM_OP_CONV_FWD] = {grad_weighted, ATM_OP_CONV_BWD_DATA, ATM_OP_CONV_BWD_WEIGHTS},
	[ATM_OP_IP_FWD] = {grad_weighted, ATM_OP_IP_BWD_DATA, ATM_OP_IP_BWD_WEIGHTS},
	[ATM_OP_RELU_FWD] = UNARY(ATM_OP_RELU_BWD, FROM_Y_DY, true),
	[ATM_OP_MAXPOOL_FWD] = UNARY(ATM_OP_MAXPOOL_BWD, FROM_DY_OUT1, true),
	[ATM_OP_AVGPOOL_FWD] = UNARY(ATM_OP_AVGPOOL_BWD, FROM_DY, true),
	[ATM_OP_BN_FWD] = {grad_norm, ATM_OP_BN_BWD},
	[ATM_OP_LAYER_NORM_FWD] = {grad_norm, ATM_OP_LAYER_NORM_BWD},
	[ATM_OP_RMS_NORM_FWD] = {grad_norm, ATM_OP_RMS_NORM_BWD},
	[ATM_OP_CONCAT] = {grad_concat},
	[ATM_OP_SPLIT] = {grad_split},
	[ATM_OP_ADD] = {grad_add},
	[ATM_OP_MATMUL] = {grad_matmul},
	[ATM_OP_MUL] = {grad_mul},
	[ATM_OP_SILU_FWD] = UNARY(ATM_OP_SILU_BWD, FROM_X_DY, false),
	[ATM_OP_SIGMOID_FWD] = UNARY(ATM_OP_SIGMOID_BWD, FROM_Y_DY, false),
	[ATM_OP_HARDSWISH_FWD] = UNARY(ATM_OP_HARDSWISH_BWD, FROM_X_DY, false),
	[ATM_OP_HARDSIGMOID_FWD] = UNARY(ATM_OP_HARDSIGMOID_BWD, FROM_X_DY, false),
	[ATM_OP_RELU6_FWD] = UNARY(ATM_OP_RELU6_BWD, FROM_Y_DY, false),
	[ATM_OP_ROPE_FWD] = UNARY(ATM_OP_ROPE_BWD, FROM_DY, true),
	[ATM_OP_GELU_FWD] = UNARY(ATM_OP_GELU_BWD, FROM_X_DY, true),
	[ATM_OP_TANH_FWD] = UNARY(ATM_OP_TANH_BWD, FROM_Y_DY, false),
	[ATM_OP_SOFTMAX_FWD] = UNARY(ATM_OP_SOFTMAX_BWD, FROM_Y_DY, false),
	[ATM_OP_NARROW_FWD] = UNARY(ATM_OP_NARROW_BWD, FROM_DY, true),
	[ATM_OP_PERMUTE] = {grad_permute},
	[ATM_OP_EMBEDDING_FWD] = {grad_embedding, ATM_OP_EMBEDDING_BWD},
	[ATM_OP_CAST] = {grad_cast},
};

/* backward -- the gradient nodes of forward node id, whose output gradient is complete: its
 * op's rule */
static void backward(zb *b, int32_t id)
{
	const atm_node *n = atm_graph_node(b->g, id);
	char layer[ZB_NAME_MAX];
	int n_in = n->n_in, n_out = n->n_out;

	/* Adding nodes may move the graph's node array: keep copies. */
	snprintf(layer, sizeof layer, "%s", n->name);
	int32_t *scratch = grow(b->scratch, &b->cap_scratch, (int64_t)n_in + n_out, sizeof *scratch);
	if (!scratch) {
		failf(b, ATM_E_NOMEM, "out of memory adding the backward pass of '%s'", layer);
		return;
	}
	b->scratch = scratch;
	memcpy(b->scratch, n->in, (size_t)n_in * sizeof *n->in);
	memcpy(b->scratch + n_in, n->out, (size_t)n_out * sizeof *n->out);
	struct fwd f = {layer, n->op, n->attrs, b->scratch, b->scratch + n_in, n_in, n_out,
	                b->scratch[n_in], -1};

	if (!b->info[f.y].needs_grad)
		return; /* depends on no parameter */
	f.dy = b->info[f.y].grad;
	if (f.dy < 0) {
		failf(b, ATM_E_USAGE, "layer '%s': its output '%s' does not reach the loss", layer,
		      atm_graph_tensor(b->g, f.y)->name);
		return;
	}
	if (b->info[f.y].n_seen != b->info[f.y].n_uses) {
		failf(b, ATM_E_INTERNAL, "layer '%s': the gradient of '%s' has %d of %d parts", layer,
		      atm_graph_tensor(b->g, f.y)->name, b->info[f.y].n_seen, b->info[f.y].n_uses);
		return;
	}
	const struct grad_rule *r = (unsigned)f.op < ATM_N_OPS ? &grad_rules[f.op] : NULL;
	if (!r || !r->add) {
		failf(b, ATM_E_INTERNAL, "layer '%s': no backward rule for %s", layer,
		      atm_op_name(f.op));
		return;
	}
	r->add(b, &f, r);
}

/* walk_back -- the backward pass of the first n_forward nodes in reverse, then the graph is
 * handed out */
static atm_status walk_back(zb *b, int32_t n_forward, atm_graph **out)
{
	for (int32_t i = n_forward - 1; i >= 0 && b->status == ATM_OK; i--) {
		/* a million layers take seconds: Ctrl-C ends them too */
		if (i % 4096 == 0 && atm_stopped()) {
			fail(b, atm_err(ATM_E_INTERRUPTED, "interrupted building the backward pass (%d of "
			                "%d forward nodes left)", i, n_forward));
			return b->status;
		}
		backward(b, i);
	}
	for (int32_t t = 0; t < atm_graph_n_tensors(b->g) && b->status == ATM_OK; t++)
		if (b->info[t].n_seen != b->info[t].n_uses &&
		    atm_graph_tensor(b->g, t)->kind == ATM_KIND_PARAM)
			failf(b, ATM_E_USAGE, "parameter '%s' got %d of its %d gradients: a layer that "
			      "reads it does not reach the loss", atm_graph_tensor(b->g, t)->name,
			      b->info[t].n_seen, b->info[t].n_uses);
	if (b->status < 0)
		return b->status;
	*out = b->g;
	b->g = NULL;
	return ATM_OK;
}

atm_status zb_finish(zb *b, int32_t logits, atm_graph **out)
{
	*out = NULL;
	if (!usable(b, "loss", logits, 2))
		return b->status;
	if (!b->info[logits].needs_grad) {
		failf(b, ATM_E_USAGE, "the logits '%s' depend on no parameter: nothing to train",
		      atm_graph_tensor(b->g, logits)->name);
		return b->status;
	}
	int32_t n_forward = atm_graph_n_nodes(b->g);
	const atm_tensor *t = atm_graph_tensor(b->g, logits);
	int64_t ld[2] = {t->dims[0], t->dims[1]}, one[1] = {1};
	int32_t labels = tensor(b, ATM_KIND_INPUT, ATM_F32, 2, ld, "labels");
	int32_t fo[2];
	fo[0] = tensor(b, ATM_KIND_ACTIVATION, ATM_F32, 2, ld, "loss.probs");
	fo[1] = tensor(b, ATM_KIND_OUTPUT, ATM_F32, 1, one, "loss");
	if (node(b, ATM_OP_SOFTMAX_XENT_FWD, NULL, 2, (int32_t[]){logits, labels}, 2, fo, "loss") < 0)
		return b->status;
	b->info[logits].n_uses++;
	int32_t dl = new_grad(b, logits);
	if (node(b, ATM_OP_SOFTMAX_XENT_BWD, NULL, 2, (int32_t[]){fo[0], labels}, 1, &dl,
	         "loss.bwd") < 0)
		return b->status;
	accumulate(b, logits, dl);
	return walk_back(b, n_forward, out);
}

atm_status zb_build_image(atm_graph **g, const zb_spec *spec, int64_t channels,
                          zb_forward forward, const void *arg)
{
	zb *b = NULL;
	atm_status rc;
	*g = NULL;
	rc = zb_new(&b, spec);
	if (rc < 0)
		return rc;
	int32_t x = zb_image(b, channels, spec->image, spec->image);
	rc = zb_finish(b, forward(b, x, spec, arg), g);
	zb_destroy(b);
	return rc;
}

/* token_loss -- the token cross-entropy of logits [..., V] against i32 labels named
 * labels, its loss output named loss; the gradient starts logits' backward pass */
static void token_loss(zb *b, int32_t logits, const char *labels, const char *loss)
{
	const atm_tensor *t = atm_graph_tensor(b->g, logits);
	int64_t ld[ATM_MAX_DIMS], one[1] = {1};
	int nd = t->ndim;
	memcpy(ld, t->dims, sizeof ld);
	int32_t lab = tensor(b, ATM_KIND_INPUT, ATM_I32, nd - 1, ld, "%s", labels);
	int32_t fo[2];
	fo[0] = tensor(b, ATM_KIND_ACTIVATION, ATM_F32, nd, ld, "%s.logp", loss);
	fo[1] = tensor(b, ATM_KIND_OUTPUT, ATM_F32, 1, one, "%s", loss);
	if (node(b, ATM_OP_TOKEN_XENT_FWD, NULL, 2, (int32_t[]){logits, lab}, 2, fo, "%s", loss) < 0)
		return;
	b->info[logits].n_uses++;
	int32_t dl = new_grad(b, logits);
	if (node(b, ATM_OP_TOKEN_XENT_BWD, NULL, 2, (int32_t[]){fo[0], lab}, 1, &dl, "%s.bwd",
	         loss) < 0)
		return;
	accumulate(b, logits, dl);
}

atm_status zb_finish_tokens(zb *b, int n, const int32_t *logits, const char *const *labels,
                            const char *const *losses, atm_graph **out)
{
	*out = NULL;
	for (int i = 0; i < n; i++) {
		if (!usable(b, losses[i], logits[i], 0))
			return b->status;
		if (atm_graph_tensor(b->g, logits[i])->ndim < 2) {
			failf(b, ATM_E_USAGE, "loss '%s': logits '%s' need [..., classes]", losses[i],
			      atm_graph_tensor(b->g, logits[i])->name);
			return b->status;
		}
	}
	int32_t n_forward = atm_graph_n_nodes(b->g);
	/* every loss is counted as a use of its logits before any gradient arrives */
	for (int i = 0; i < n; i++)
		token_loss(b, logits[i], labels[i], losses[i]);
	return walk_back(b, n_forward, out);
}
