/* shape.c -- each op's rule relating input and output shapes, named by its entry in ops.c and run on a node's operands by atm_graph_validate */
#include <math.h>
#include <string.h>

#include "core_internal.h"

/* Checks below return through this macro so every failure names the tensor. */
#define CHECK(cond, ...)                                       \
	do {                                                       \
		if (!(cond))                                           \
			return atm_err(ATM_E_INPUT, __VA_ARGS__);          \
	} while (0)

/* shape_str -- "[16, 3, 224, 224]" */
static const char *shape_str(const atm_tensor *t, char *buf, size_t len)
{
	size_t used = (size_t)snprintf(buf, len, "[");
	for (int i = 0; i < t->ndim && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? ", " : "",
		                         (long long)t->dims[i]);
	if (used < len)
		snprintf(buf + used, len - used, "]");
	return buf;
}

static bool same_shape(const atm_tensor *a, const atm_tensor *b)
{
	return a->ndim == b->ndim && memcmp(a->dims, b->dims, (size_t)a->ndim * sizeof a->dims[0]) == 0;
}

/* expect_same -- tensor b must have a's shape */
static atm_status expect_same(const char *what_a, const atm_tensor *a, const char *what_b,
                              const atm_tensor *b)
{
	char sa[128], sb[128];
	CHECK(same_shape(a, b), "%s '%s' has shape %s but %s '%s' has shape %s; they must match",
	      what_b, b->name, shape_str(b, sb, sizeof sb), what_a, a->name, shape_str(a, sa, sizeof sa));
	return ATM_OK;
}

static atm_status expect_rank(const char *what, const atm_tensor *t, int ndim)
{
	char s[128];
	CHECK(t->ndim == ndim, "%s '%s' has shape %s; expected %d dimensions", what, t->name,
	      shape_str(t, s, sizeof s), ndim);
	return ATM_OK;
}

/* expect_vec -- t must be a vector of length c (per-channel parameters) */
static atm_status expect_vec(const char *what, const atm_tensor *t, int64_t c)
{
	char s[128];
	CHECK(t->ndim == 1 && t->dims[0] == c, "%s '%s' has shape %s; expected [%lld]", what, t->name,
	      shape_str(t, s, sizeof s), (long long)c);
	return ATM_OK;
}

/* expect_dims4 -- t must be [a, b, c, d] */
static atm_status expect_dims4(const char *what, const atm_tensor *t, int64_t a, int64_t b,
                               int64_t c, int64_t d)
{
	char s[128];
	CHECK(t->ndim == 4 && t->dims[0] == a && t->dims[1] == b && t->dims[2] == c &&
	              t->dims[3] == d,
	      "%s '%s' has shape %s; expected [%lld, %lld, %lld, %lld]", what, t->name,
	      shape_str(t, s, sizeof s), (long long)a, (long long)b, (long long)c, (long long)d);
	return ATM_OK;
}

/* window -- validate stride, pad and kernel of a sliding window op */
static atm_status window(const atm_attrs *a, int64_t kh, int64_t kw)
{
	CHECK(a->stride[0] >= 0 && a->stride[1] >= 0, "stride must be >= 1 (0 means 1), got [%d, %d]",
	      a->stride[0], a->stride[1]);
	for (int i = 0; i < 4; i++)
		CHECK(a->pad[i] >= 0, "pad must be >= 0, got [%d, %d, %d, %d] (top, left, bottom, right)",
		      a->pad[0], a->pad[1], a->pad[2], a->pad[3]);
	CHECK(kh >= 1 && kw >= 1, "kernel must be >= 1, got [%lld, %lld]", (long long)kh,
	      (long long)kw);
	return ATM_OK;
}

/* out_dim -- floor((in + pad_lo + pad_hi - k) / stride) + 1, or 0 when the window does not fit */
static int64_t out_dim(int64_t in, int64_t k, int32_t stride, int32_t lo, int32_t hi)
{
	int64_t span = in + lo + hi - k;
	if (span < 0)
		return 0;
	return span / (stride ? stride : 1) + 1;
}

/* spatial -- output H, W of a window over x, or an error when it is empty */
static atm_status spatial(const atm_attrs *a, const atm_tensor *x, int64_t kh, int64_t kw,
                          int64_t *oh, int64_t *ow)
{
	char s[128];
	*oh = out_dim(x->dims[2], kh, a->stride[0], a->pad[0], a->pad[2]);
	*ow = out_dim(x->dims[3], kw, a->stride[1], a->pad[1], a->pad[3]);
	CHECK(*oh >= 1 && *ow >= 1, "a %lldx%lld window does not fit input '%s' of shape %s",
	      (long long)kh, (long long)kw, x->name, shape_str(x, s, sizeof s));
	return ATM_OK;
}

static int64_t inner(const atm_tensor *t)
{
	int64_t n = 1;
	for (int i = 1; i < t->ndim; i++)
		n *= t->dims[i];
	return n;
}

#define TRY(expr)                      \
	do {                               \
		atm_status rc_ = (expr);       \
		if (rc_ < 0)                   \
			return rc_;                \
	} while (0)

/* atm_shape_conv -- x, w and y of a convolution, whichever of the three is computed */
atm_status atm_shape_conv(const atm_node *n, const atm_tensor *const *in,
                          const atm_tensor *const *out)
{
	const atm_attrs *a = &n->attrs;
	const atm_tensor *x, *w, *y;
	int64_t oh, ow;
	switch (n->op) {
	case ATM_OP_CONV_FWD:
		x = in[0], w = in[1], y = out[0];
		break;
	case ATM_OP_CONV_BWD_DATA:
		y = in[0], w = in[1], x = out[0];
		break;
	default: /* weights: x, dy -> dw, (db) */
		x = in[0], y = in[1], w = out[0];
		break;
	}
	TRY(expect_rank("data", x, 4));
	TRY(expect_rank("weights", w, 4));
	TRY(window(a, w->dims[2], w->dims[3]));
	TRY(spatial(a, x, w->dims[2], w->dims[3], &oh, &ow));
	int64_t g = a->groups > 1 ? a->groups : 1;
	CHECK(a->groups >= 0, "groups must be >= 1 (0 means 1), got %d", a->groups);
	CHECK(x->dims[1] % g == 0 && w->dims[0] % g == 0,
	      "%lld groups do not divide the %lld input channels of '%s' and the %lld output channels "
	      "of '%s'", (long long)g, (long long)x->dims[1], x->name, (long long)w->dims[0], w->name);
	CHECK(g > 1 || w->dims[1] == x->dims[1],
	      "weights '%s' expect %lld input channels but '%s' has %lld", w->name,
	      (long long)w->dims[1], x->name, (long long)x->dims[1]);
	CHECK(w->dims[1] == x->dims[1] / g,
	      "weights '%s' expect %lld input channels per group but '%s' has %lld in %lld groups",
	      w->name, (long long)w->dims[1], x->name, (long long)x->dims[1], (long long)g);
	TRY(expect_dims4(n->op == ATM_OP_CONV_FWD ? "output" : "gradient", y, x->dims[0],
	                 w->dims[0], oh, ow));
	if (n->op == ATM_OP_CONV_FWD && n->n_in == 3)
		TRY(expect_vec("bias", in[2], w->dims[0]));
	if (n->op == ATM_OP_CONV_BWD_WEIGHTS && n->n_out == 2)
		TRY(expect_vec("bias gradient", out[1], w->dims[0]));
	return ATM_OK;
}

/* atm_shape_ip -- x [N, ...], w [O, I] and y [N, O] of an inner product */
atm_status atm_shape_ip(const atm_node *n, const atm_tensor *const *in,
                        const atm_tensor *const *out)
{
	const atm_tensor *x, *w, *y;
	char s[128];
	switch (n->op) {
	case ATM_OP_IP_FWD:
		x = in[0], w = in[1], y = out[0];
		break;
	case ATM_OP_IP_BWD_DATA:
		y = in[0], w = in[1], x = out[0];
		break;
	default:
		x = in[0], y = in[1], w = out[0];
		break;
	}
	CHECK(x->ndim >= 2, "data '%s' has shape %s; expected [N, ...] with at least 2 dimensions",
	      x->name, shape_str(x, s, sizeof s));
	TRY(expect_rank("weights", w, 2));
	CHECK(w->dims[1] == inner(x), "weights '%s' have shape %s but data '%s' has %lld features per "
	      "sample; expected [%lld, %lld]", w->name, shape_str(w, s, sizeof s), x->name,
	      (long long)inner(x), (long long)w->dims[0], (long long)inner(x));
	CHECK(y->ndim == 2 && y->dims[0] == x->dims[0] && y->dims[1] == w->dims[0],
	      "'%s' has shape %s; expected [%lld, %lld]", y->name, shape_str(y, s, sizeof s),
	      (long long)x->dims[0], (long long)w->dims[0]);
	if (n->op == ATM_OP_IP_FWD)
		TRY(expect_vec("bias", in[2], w->dims[0]));
	if (n->op == ATM_OP_IP_BWD_WEIGHTS)
		TRY(expect_vec("bias gradient", out[1], w->dims[0]));
	return ATM_OK;
}

/* atm_shape_pool -- the window over x, y and max pooling's argmax */
atm_status atm_shape_pool(const atm_node *n, const atm_tensor *const *in,
                          const atm_tensor *const *out)
{
	const atm_attrs *a = &n->attrs;
	bool fwd = n->op == ATM_OP_MAXPOOL_FWD || n->op == ATM_OP_AVGPOOL_FWD;
	const atm_tensor *x = fwd ? in[0] : out[0];
	const atm_tensor *y = fwd ? out[0] : in[0];
	int64_t oh, ow;
	TRY(expect_rank("data", x, 4));
	TRY(window(a, a->kernel[0], a->kernel[1]));
	/* a window that can lie wholly in the padding has nothing to pool */
	CHECK(a->pad[0] < a->kernel[0] && a->pad[2] < a->kernel[0] && a->pad[1] < a->kernel[1] &&
	              a->pad[3] < a->kernel[1],
	      "pad [%d, %d, %d, %d] must be smaller than the %dx%d window", a->pad[0], a->pad[1],
	      a->pad[2], a->pad[3], a->kernel[0], a->kernel[1]);
	TRY(spatial(a, x, a->kernel[0], a->kernel[1], &oh, &ow));
	TRY(expect_dims4(fwd ? "output" : "gradient", y, x->dims[0], x->dims[1], oh, ow));
	if (n->op == ATM_OP_MAXPOOL_FWD || n->op == ATM_OP_MAXPOOL_BWD) {
		const atm_tensor *ws = fwd ? out[1] : in[1];
		TRY(expect_same("output", y, "argmax workspace", ws));
		CHECK(ws->dtype == ATM_I32, "argmax workspace '%s' must be i32, got %s", ws->name,
		      atm_dtype_name(ws->dtype));
	}
	return ATM_OK;
}

/* atm_shape_bn -- x and the per-channel vectors of batch norm */
atm_status atm_shape_bn(const atm_node *n, const atm_tensor *const *in,
                        const atm_tensor *const *out)
{
	const atm_tensor *x = in[0];
	char s[128];
	CHECK(x->ndim >= 2, "data '%s' has shape %s; expected [N, C, ...]", x->name,
	      shape_str(x, s, sizeof s));
	CHECK(n->attrs.epsilon > 0 && isfinite(n->attrs.epsilon),
	      "epsilon must be a positive number, got %g", (double)n->attrs.epsilon);
	int64_t ch = x->dims[1];
	if (n->op == ATM_OP_BN_FWD) {
		TRY(expect_vec("gamma", in[1], ch));
		TRY(expect_vec("beta", in[2], ch));
		TRY(expect_same("input", x, "output", out[0]));
		TRY(expect_vec("saved mean", out[1], ch));
		TRY(expect_vec("saved variance", out[2], ch));
	} else {
		TRY(expect_same("input", x, "gradient", in[1]));
		TRY(expect_vec("gamma", in[2], ch));
		TRY(expect_vec("saved mean", in[3], ch));
		TRY(expect_vec("saved variance", in[4], ch));
		TRY(expect_same("input", x, "input gradient", out[0]));
		TRY(expect_vec("gamma gradient", out[1], ch));
		TRY(expect_vec("beta gradient", out[2], ch));
	}
	return ATM_OK;
}

/* atm_shape_concat -- the parts add up to the whole along the axis (concat, split) */
atm_status atm_shape_concat(const atm_node *n, const atm_tensor *const *in,
                            const atm_tensor *const *out)
{
	bool cat = n->op == ATM_OP_CONCAT;
	const atm_tensor *whole = cat ? out[0] : in[0];
	int n_parts = cat ? n->n_in : n->n_out;
	int axis = n->attrs.axis;
	int64_t sum = 0;
	char s[128], sw[128];
	CHECK(axis >= 0 && axis < whole->ndim, "axis %d is out of range for '%s' with %d dimensions",
	      axis, whole->name, whole->ndim);
	for (int i = 0; i < n_parts; i++) {
		const atm_tensor *p = cat ? in[i] : out[i];
		bool ok = p->ndim == whole->ndim;
		for (int d = 0; ok && d < p->ndim; d++)
			ok = d == axis || p->dims[d] == whole->dims[d];
		CHECK(ok, "part %d '%s' has shape %s, which does not match '%s' of shape %s outside axis %d",
		      i, p->name, shape_str(p, s, sizeof s), whole->name, shape_str(whole, sw, sizeof sw),
		      axis);
		sum += p->dims[axis];
	}
	CHECK(sum == whole->dims[axis], "the parts add up to %lld along axis %d but '%s' has %lld",
	      (long long)sum, axis, whole->name, (long long)whole->dims[axis]);
	return ATM_OK;
}

/* atm_shape_loss -- [N, classes] logits or probabilities, labels and the loss */
atm_status atm_shape_loss(const atm_node *n, const atm_tensor *const *in,
                          const atm_tensor *const *out)
{
	const atm_tensor *p = in[0];
	char s[128];
	CHECK(p->ndim == 2, "'%s' has shape %s; expected [N, classes]", p->name,
	      shape_str(p, s, sizeof s));
	TRY(expect_same(n->op == ATM_OP_SOFTMAX_XENT_FWD ? "logits" : "probabilities", p, "labels",
	                in[1]));
	TRY(expect_same("input", p, n->op == ATM_OP_SOFTMAX_XENT_FWD ? "probabilities" : "gradient",
	                out[0]));
	if (n->op == ATM_OP_SOFTMAX_XENT_FWD)
		TRY(expect_vec("loss", out[1], 1));
	return ATM_OK;
}

/* atm_shape_relu -- an element-wise op (ReLU, GELU, tanh) and its gradient keep the shape */
atm_status atm_shape_relu(const atm_node *n, const atm_tensor *const *in,
                          const atm_tensor *const *out)
{
	if (n->n_in == 1)
		return expect_same("input", in[0], "output", out[0]);
	TRY(expect_same("forward tensor", in[0], "gradient", in[1]));
	return expect_same("forward tensor", in[0], "input gradient", out[0]);
}

/* atm_shape_add -- a, b and y of one shape */
atm_status atm_shape_add(const atm_node *n, const atm_tensor *const *in,
                         const atm_tensor *const *out)
{
	TRY(expect_same("input", in[0], "input", in[1]));
	return expect_same("input", in[0], "output", out[0]);
}

/* expect_broadcast -- b must broadcast to a's shape: no more dims than a, each of its dims
 * equal to a's trailing one or 1 (numpy's rule, with a the larger) */
static atm_status expect_broadcast(const char *what_a, const atm_tensor *a, const char *what_b,
                                   const atm_tensor *b)
{
	char sa[128], sb[128];
	bool ok = b->ndim <= a->ndim;
	for (int i = 1; ok && i <= b->ndim; i++) {
		int64_t d = b->dims[b->ndim - i];
		ok = d == a->dims[a->ndim - i] || d == 1;
	}
	CHECK(ok, "%s '%s' has shape %s, which does not broadcast to %s '%s' of shape %s: its dims "
	      "must be the trailing ones of that shape, each equal or 1", what_b, b->name,
	      shape_str(b, sb, sizeof sb), what_a, a->name, shape_str(a, sa, sizeof sa));
	return ATM_OK;
}

/* atm_shape_mul -- y = a * b: y of a's shape, b broadcast to it */
atm_status atm_shape_mul(const atm_node *n, const atm_tensor *const *in,
                         const atm_tensor *const *out)
{
	TRY(expect_broadcast("input", in[0], "input", in[1]));
	return expect_same("input", in[0], "output", out[0]);
}

/* atm_shape_mul_bwd -- dy and a of one shape; db broadcast to it */
atm_status atm_shape_mul_bwd(const atm_node *n, const atm_tensor *const *in,
                             const atm_tensor *const *out)
{
	TRY(expect_same("gradient", in[0], "forward input", in[1]));
	return expect_broadcast("gradient", in[0], "input gradient", out[0]);
}

/* atm_shape_sgd -- w and dw of one shape, a usable learning rate */
atm_status atm_shape_sgd(const atm_node *n, const atm_tensor *const *in,
                         const atm_tensor *const *out)
{
	CHECK(isfinite(n->attrs.lr) && n->attrs.lr >= 0,
	      "learning rate must be a finite number >= 0, got %g", (double)n->attrs.lr);
	return expect_same("parameter", in[0], "gradient", in[1]);
}

/* atm_shape_update -- the updates with state (sgd_momentum, adamw): the parameter, its
 * gradient and its states of one shape, AdamW's step one element, every factor usable */
atm_status atm_shape_update(const atm_node *n, const atm_tensor *const *in,
                            const atm_tensor *const *out)
{
	(void)out;
	const atm_attrs *a = &n->attrs;
	bool adamw = n->op == ATM_OP_ADAMW;
	const char *const *role = adamw ? (const char *const[]){"parameter", "gradient", "exp_avg",
	                                                         "exp_avg_sq"}
	                                : (const char *const[]){"parameter", "gradient",
	                                                         "momentum_buffer"};
	CHECK(isfinite(a->lr) && a->lr >= 0, "learning rate must be a finite number >= 0, got %g",
	      (double)a->lr);
	CHECK(isfinite(a->weight_decay) && a->weight_decay >= 0,
	      "weight decay must be a finite number >= 0, got %g", (double)a->weight_decay);
	if (adamw) {
		CHECK(a->beta1 >= 0 && a->beta1 < 1 && a->beta2 >= 0 && a->beta2 < 1,
		      "betas must be in [0, 1), got %g and %g", (double)a->beta1, (double)a->beta2);
		CHECK(isfinite(a->epsilon) && a->epsilon > 0,
		      "epsilon must be a finite number > 0, got %g", (double)a->epsilon);
		CHECK(in[4]->n_elems == 1, "step '%s' must have one element, not %lld", in[4]->name,
		      (long long)in[4]->n_elems);
	} else {
		CHECK(isfinite(a->momentum) && a->momentum >= 0,
		      "momentum must be a finite number >= 0, got %g", (double)a->momentum);
	}
	for (int i = 1; i < n->n_in && i < 4; i++) {
		atm_status rc = expect_same(role[0], in[0], role[i], in[i]);
		if (rc < 0)
			return rc;
	}
	return ATM_OK;
}

/* ---------------------------------------------------------------- transformer ops */

/* lead -- product of t's dims before the last `keep` ones */
static int64_t lead(const atm_tensor *t, int keep)
{
	int64_t p = 1;
	for (int i = 0; i < t->ndim - keep; i++)
		p *= t->dims[i];
	return p;
}

/* atm_shape_matmul_dims -- the GEMM of a, b -> c under n's transposes, or an error naming the
 * tensors */
atm_status atm_shape_matmul_dims(const atm_node *n, const atm_tensor *a, const atm_tensor *b,
                                 const atm_tensor *c, atm_matmul_dims *d)
{
	char sa[128], sb[128], sc[128];
	bool ta = n->attrs.trans_a, tb = n->attrs.trans_b;
	int64_t ar, ac, br, bc; /* a and b as the matrices the GEMM reads */
	CHECK(a->ndim >= 2 && b->ndim >= 2 && c->ndim >= 2,
	      "matmul operands need at least 2 dimensions: a '%s' %s, b '%s' %s, c '%s' %s", a->name,
	      shape_str(a, sa, sizeof sa), b->name, shape_str(b, sb, sizeof sb), c->name,
	      shape_str(c, sc, sizeof sc));
	memset(d, 0, sizeof *d);
	d->batch = 1;
	if (c->ndim == 2 || b->ndim == 2) {
		/* one GEMM over rows: the leading dims fold into the rows */
		CHECK(c->ndim == 2 || (!ta && a->ndim == c->ndim),
		      "matmul with a 2-d b '%s' and a %d-d c '%s' takes a of c's rank without trans_a; "
		      "a '%s' is %s%s", b->name, c->ndim, c->name, a->name, shape_str(a, sa, sizeof sa),
		      ta ? " with trans_a" : "");
		ar = lead(a, 1), ac = a->dims[a->ndim - 1];
		br = lead(b, 1), bc = b->dims[b->ndim - 1];
	} else {
		bool same = a->ndim == b->ndim && b->ndim == c->ndim;
		for (int i = 0; same && i < a->ndim - 2; i++)
			same = a->dims[i] == b->dims[i] && b->dims[i] == c->dims[i];
		CHECK(same, "batched matmul: a '%s' %s, b '%s' %s and c '%s' %s must have one rank and "
		      "the same leading dims", a->name, shape_str(a, sa, sizeof sa), b->name,
		      shape_str(b, sb, sizeof sb), c->name, shape_str(c, sc, sizeof sc));
		d->batch = lead(c, 2);
		d->b_batched = true;
		ar = a->dims[a->ndim - 2], ac = a->dims[a->ndim - 1];
		br = b->dims[b->ndim - 2], bc = b->dims[b->ndim - 1];
	}
	d->m = ta ? ac : ar;
	d->k = ta ? ar : ac;
	d->n = tb ? br : bc;
	CHECK((tb ? bc : br) == d->k,
	      "matmul inner dimensions differ: a '%s' %s%s gives k = %lld but b '%s' %s%s gives %lld",
	      a->name, shape_str(a, sa, sizeof sa), ta ? " (transposed)" : "", (long long)d->k,
	      b->name, shape_str(b, sb, sizeof sb), tb ? " (transposed)" : "",
	      (long long)(tb ? bc : br));
	bool ok = c->dims[c->ndim - 1] == d->n;
	if (c->ndim == 2 || d->b_batched)
		ok = ok && c->dims[c->ndim - 2] == d->m;
	else
		for (int i = 0; ok && i < c->ndim - 1; i++)
			ok = c->dims[i] == a->dims[i];
	CHECK(ok, "matmul output '%s' has shape %s; a '%s' %s times b '%s' %s makes %lld x %lld "
	      "per matrix%s", c->name, shape_str(c, sc, sizeof sc), a->name,
	      shape_str(a, sa, sizeof sa), b->name, shape_str(b, sb, sizeof sb), (long long)d->m,
	      (long long)d->n, c->ndim > 2 && !d->b_batched ? " (a's leading dims kept)" : "");
	return ATM_OK;
}

/* atm_shape_matmul -- a, b, c of one of the three forms, the bias [n] */
atm_status atm_shape_matmul(const atm_node *n, const atm_tensor *const *in,
                            const atm_tensor *const *out)
{
	atm_matmul_dims d;
	CHECK(isfinite(n->attrs.scale), "scale must be a finite number (0 means 1), got %g",
	      (double)n->attrs.scale);
	TRY(atm_shape_matmul_dims(n, in[0], in[1], out[0], &d));
	if (n->n_in == 3)
		TRY(expect_vec("bias", in[2], d.n));
	return ATM_OK;
}

/* atm_shape_reduce -- y is x's trailing dims, fewer of them */
atm_status atm_shape_reduce(const atm_node *n, const atm_tensor *const *in,
                            const atm_tensor *const *out)
{
	const atm_tensor *x = in[0], *y = out[0];
	char sx[128], sy[128];
	bool ok = y->ndim < x->ndim;
	for (int i = 0; ok && i < y->ndim; i++)
		ok = y->dims[i] == x->dims[x->ndim - y->ndim + i];
	CHECK(ok, "sum '%s' has shape %s; it must be the trailing dims of '%s' %s, fewer of them",
	      y->name, shape_str(y, sy, sizeof sy), x->name, shape_str(x, sx, sizeof sx));
	return ATM_OK;
}

/* expect_stats -- t must be x's shape without its last dim (layer norm's mean and variance) */
static atm_status expect_stats(const char *what, const atm_tensor *t, const atm_tensor *x)
{
	char st[128], sx[128];
	bool ok = t->ndim == x->ndim - 1;
	for (int i = 0; ok && i < t->ndim; i++)
		ok = t->dims[i] == x->dims[i];
	CHECK(ok, "%s '%s' has shape %s; expected the shape of '%s' %s without its last dim", what,
	      t->name, shape_str(t, st, sizeof st), x->name, shape_str(x, sx, sizeof sx));
	return ATM_OK;
}

/* expect_rows -- x is [..., C] of at least 2 dims and epsilon is usable: what a normalisation
 * over the last dim (what names it) needs */
static atm_status expect_rows(const atm_node *n, const atm_tensor *x, const char *what)
{
	char s[128];
	CHECK(x->ndim >= 2, "data '%s' has shape %s; %s expects [..., C] with at least 2 "
	      "dimensions", x->name, shape_str(x, s, sizeof s), what);
	CHECK(n->attrs.epsilon > 0 && isfinite(n->attrs.epsilon),
	      "epsilon must be a positive number, got %g", (double)n->attrs.epsilon);
	return ATM_OK;
}

/* atm_shape_layer_norm -- x [..., C], gamma, beta [C], mean and variance per row */
atm_status atm_shape_layer_norm(const atm_node *n, const atm_tensor *const *in,
                                const atm_tensor *const *out)
{
	const atm_tensor *x = in[0];
	TRY(expect_rows(n, x, "layer norm"));
	int64_t ch = x->dims[x->ndim - 1];
	if (n->op == ATM_OP_LAYER_NORM_FWD) {
		TRY(expect_vec("gamma (the normalised shape)", in[1], ch));
		TRY(expect_vec("beta (the normalised shape)", in[2], ch));
		TRY(expect_same("input", x, "output", out[0]));
		TRY(expect_stats("saved mean", out[1], x));
		TRY(expect_stats("saved variance", out[2], x));
	} else {
		TRY(expect_same("input", x, "gradient", in[1]));
		TRY(expect_vec("gamma (the normalised shape)", in[2], ch));
		TRY(expect_stats("saved mean", in[3], x));
		TRY(expect_stats("saved variance", in[4], x));
		TRY(expect_same("input", x, "input gradient", out[0]));
		TRY(expect_vec("gamma gradient", out[1], ch));
		TRY(expect_vec("beta gradient", out[2], ch));
	}
	return ATM_OK;
}

/* atm_shape_rms_norm -- x [..., C], its scale w [C], the reciprocal root mean square per row */
atm_status atm_shape_rms_norm(const atm_node *n, const atm_tensor *const *in,
                              const atm_tensor *const *out)
{
	const atm_tensor *x = in[0];
	TRY(expect_rows(n, x, "RMS norm"));
	int64_t ch = x->dims[x->ndim - 1];
	if (n->op == ATM_OP_RMS_NORM_FWD) {
		TRY(expect_vec("scale (the normalised shape)", in[1], ch));
		TRY(expect_same("input", x, "output", out[0]));
		return expect_stats("saved reciprocal RMS", out[1], x);
	}
	TRY(expect_same("input", x, "gradient", in[1]));
	TRY(expect_vec("scale (the normalised shape)", in[2], ch));
	TRY(expect_stats("saved reciprocal RMS", in[3], x));
	TRY(expect_same("input", x, "input gradient", out[0]));
	return expect_vec("scale gradient", out[1], ch);
}

/* atm_shape_rope -- x [..., T, D] with D even, y of its shape, a usable theta */
atm_status atm_shape_rope(const atm_node *n, const atm_tensor *const *in,
                          const atm_tensor *const *out)
{
	const atm_tensor *x = in[0];
	char s[128];
	CHECK(x->ndim >= 2 && x->dims[x->ndim - 1] % 2 == 0,
	      "data '%s' has shape %s; rotary embeddings expect [..., T, D] with D even", x->name,
	      shape_str(x, s, sizeof s));
	CHECK(isfinite(n->attrs.theta) && n->attrs.theta > 1,
	      "theta must be a finite number above 1, got %g", (double)n->attrs.theta);
	return expect_same("input", x, "output", out[0]);
}

/* atm_shape_softmax -- one shape throughout; a causal mask needs square rows x columns */
atm_status atm_shape_softmax(const atm_node *n, const atm_tensor *const *in,
                             const atm_tensor *const *out)
{
	const atm_tensor *x = in[0];
	char s[128];
	TRY(atm_shape_relu(n, in, out));
	if (n->attrs.causal)
		CHECK(x->ndim >= 2 && x->dims[x->ndim - 1] == x->dims[x->ndim - 2],
		      "a causal mask needs square scores [..., T, T]; '%s' has shape %s", x->name,
		      shape_str(x, s, sizeof s));
	return ATM_OK;
}

/* expect_ids -- ids must be i32 of shape y's dims but the last (one per row of y) */
static atm_status expect_ids(const char *what, const atm_tensor *ids, const atm_tensor *y)
{
	CHECK(ids->dtype == ATM_I32, "%s '%s' is %s; token ids and labels are i32", what, ids->name,
	      atm_dtype_name(ids->dtype));
	return expect_stats(what, ids, y);
}

/* atm_shape_embedding -- table [V, C] (or [1, V, C]), y or dy [..., C], ids i32 [...]; with
 * positions no ids, and the sequence (y's next-to-last dim) no longer than the table */
atm_status atm_shape_embedding(const atm_node *n, const atm_tensor *const *in,
                               const atm_tensor *const *out)
{
	bool fwd = n->op == ATM_OP_EMBEDDING_FWD;
	const atm_tensor *table = fwd ? in[0] : out[0], *y = fwd ? out[0] : in[0];
	const atm_tensor *ids = n->n_in == 2 ? in[1] : NULL;
	char st[128], sy[128];
	bool tok = table->ndim == 2 || (table->ndim == 3 && table->dims[0] == 1);
	CHECK(tok, "table '%s' has shape %s; expected [rows, C] or [1, rows, C]", table->name,
	      shape_str(table, st, sizeof st));
	int64_t rows = table->dims[table->ndim - 2], ch = table->dims[table->ndim - 1];
	CHECK(y->ndim >= 2 && y->dims[y->ndim - 1] == ch,
	      "'%s' has shape %s; expected [..., %lld] (the table '%s' is %s)", y->name,
	      shape_str(y, sy, sizeof sy), (long long)ch, table->name, shape_str(table, st, sizeof st));
	if (n->attrs.positions) {
		CHECK(!ids, "a position embedding takes no ids (input '%s')", ids ? ids->name : "");
		CHECK(y->dims[y->ndim - 2] <= rows, "the sequence of '%s' %s is %lld long but the "
		      "position table '%s' has %lld rows", y->name, shape_str(y, sy, sizeof sy),
		      (long long)y->dims[y->ndim - 2], table->name, (long long)rows);
		return ATM_OK;
	}
	CHECK(ids, "a token embedding takes i32 ids as input 1 (or set \"positions\": true)");
	return expect_ids("ids", ids, y);
}

/* atm_shape_permute_view -- the shape permute reads x in (view) and the shape it writes
 * (permuted) */
atm_status atm_shape_permute_view(const atm_attrs *a, const atm_tensor *x, const atm_tensor *y,
                                  int64_t *view, int64_t *permuted)
{
	int r = a->n_perm;
	char sx[128], sy[128];
	bool seen[ATM_MAX_DIMS] = {false};
	CHECK(r >= 1 && r <= ATM_MAX_DIMS, "perm has %d entries; it needs 1 to %d", r, ATM_MAX_DIMS);
	for (int i = 0; i < r; i++) {
		CHECK(a->perm[i] >= 0 && a->perm[i] < r && !seen[a->perm[i]],
		      "perm must list each axis 0 to %d once; entry %d is %d", r - 1, i, a->perm[i]);
		seen[a->perm[i]] = true;
	}
	/* the side of perm's rank is read as it is; the other side may be a reshape of it */
	if (x->ndim == r) {
		memcpy(view, x->dims, (size_t)r * sizeof *view);
	} else {
		CHECK(y->ndim == r, "perm has %d entries but input '%s' %s and output '%s' %s have "
		      "%d and %d dimensions; one of them must have %d", r, x->name,
		      shape_str(x, sx, sizeof sx), y->name, shape_str(y, sy, sizeof sy), x->ndim,
		      y->ndim, r);
		for (int i = 0; i < r; i++)
			view[a->perm[i]] = y->dims[i];
	}
	for (int i = 0; i < r; i++)
		permuted[i] = view[a->perm[i]];
	bool ok = x->n_elems == y->n_elems;
	if (ok && y->ndim == r)
		ok = memcmp(y->dims, permuted, (size_t)r * sizeof *permuted) == 0;
	CHECK(ok, "output '%s' has shape %s, which is not input '%s' %s with its axes in the order "
	      "of perm", y->name, shape_str(y, sy, sizeof sy), x->name, shape_str(x, sx, sizeof sx));
	return ATM_OK;
}

/* atm_shape_permute -- y is x (or a reshape of it) with its axes reordered */
atm_status atm_shape_permute(const atm_node *n, const atm_tensor *const *in,
                             const atm_tensor *const *out)
{
	int64_t view[ATM_MAX_DIMS], permuted[ATM_MAX_DIMS];
	return atm_shape_permute_view(&n->attrs, in[0], out[0], view, permuted);
}

/* atm_shape_narrow -- the narrow side is the whole side cut along the axis */
atm_status atm_shape_narrow(const atm_node *n, const atm_tensor *const *in,
                            const atm_tensor *const *out)
{
	bool fwd = n->op == ATM_OP_NARROW_FWD;
	const atm_tensor *whole = fwd ? in[0] : out[0], *part = fwd ? out[0] : in[0];
	int axis = n->attrs.axis;
	char sw[128], sp[128];
	CHECK(axis >= 0 && axis < whole->ndim, "axis %d is out of range for '%s' with %d dimensions",
	      axis, whole->name, whole->ndim);
	bool ok = part->ndim == whole->ndim;
	for (int d = 0; ok && d < part->ndim; d++)
		ok = d == axis ? part->dims[d] <= whole->dims[d] : part->dims[d] == whole->dims[d];
	CHECK(ok, "'%s' has shape %s; expected '%s' %s cut to at most its length along axis %d",
	      part->name, shape_str(part, sp, sizeof sp), whole->name, shape_str(whole, sw, sizeof sw),
	      axis);
	return ATM_OK;
}

/* atm_shape_token_loss -- logits [..., V], labels i32 [...], log-probabilities, the loss */
atm_status atm_shape_token_loss(const atm_node *n, const atm_tensor *const *in,
                                const atm_tensor *const *out)
{
	const atm_tensor *p = in[0];
	char s[128];
	CHECK(p->ndim >= 2, "'%s' has shape %s; expected [..., classes]", p->name,
	      shape_str(p, s, sizeof s));
	TRY(expect_ids("labels", in[1], p));
	TRY(expect_same("input", p, n->op == ATM_OP_TOKEN_XENT_FWD ? "log-probabilities" : "gradient",
	                out[0]));
	if (n->op == ATM_OP_TOKEN_XENT_FWD)
		TRY(expect_vec("loss", out[1], 1));
	return ATM_OK;
}

/* role -- operand i's role among roles, data past the roles an entry gives */
static atm_op_role role(const atm_op_role *roles, int i)
{
	return i < ATM_OP_MAX_ROLES ? roles[i] : ATM_ROLE_DATA;
}

/* atm_shape_dtypes -- every operand is f32 or bf16 (the graph keeps bf16 to activations and
 * gradients) but those d's roles give as indices (i32, checked by the op's rule) */
atm_status atm_shape_dtypes(const atm_op_desc *d, const atm_node *n, const atm_tensor *const *in,
                            const atm_tensor *const *out)
{
	for (int i = 0; i < n->n_in + n->n_out; i++) {
		bool is_in = i < n->n_in;
		const atm_tensor *t = is_in ? in[i] : out[i - n->n_in];
		atm_op_role r = role(is_in ? d->in_role : d->out_role, is_in ? i : i - n->n_in);
		if (r != ATM_ROLE_INDEX && r != ATM_ROLE_TOKENS)
			CHECK(t->dtype == ATM_F32 || t->dtype == ATM_BF16, "tensor '%s' is %s; %s takes "
			      "f32 or bf16", t->name, atm_dtype_name(t->dtype), d->name);
	}
	return ATM_OK;
}

/* atm_shape_allreduce -- each output the shape of its input, as many of them, ranks >= 1 */
atm_status atm_shape_allreduce(const atm_node *n, const atm_tensor *const *in,
                               const atm_tensor *const *out)
{
	char sx[128], sy[128];
	CHECK(n->attrs.ranks >= 1, "ranks must be >= 1, got %d", n->attrs.ranks);
	CHECK(n->n_in == n->n_out, "%d gradients in but %d means out; one mean each", n->n_in,
	      n->n_out);
	for (int i = 0; i < n->n_in; i++) {
		bool same = in[i]->ndim == out[i]->ndim &&
		            !memcmp(in[i]->dims, out[i]->dims, (size_t)in[i]->ndim * sizeof in[i]->dims[0]);
		CHECK(same, "mean '%s' has shape %s; expected '%s' %s", out[i]->name,
		      shape_str(out[i], sy, sizeof sy), in[i]->name, shape_str(in[i], sx, sizeof sx));
	}
	return ATM_OK;
}
