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
	CHECK(w->dims[1] == x->dims[1], "weights '%s' expect %lld input channels but '%s' has %lld",
	      w->name, (long long)w->dims[1], x->name, (long long)x->dims[1]);
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

/* atm_shape_relu -- ReLU and its gradient keep the shape */
atm_status atm_shape_relu(const atm_node *n, const atm_tensor *const *in,
                          const atm_tensor *const *out)
{
	if (n->op == ATM_OP_RELU_FWD)
		return expect_same("input", in[0], "output", out[0]);
	TRY(expect_same("forward output", in[0], "gradient", in[1]));
	return expect_same("forward output", in[0], "input gradient", out[0]);
}

/* atm_shape_add -- a, b and y of one shape */
atm_status atm_shape_add(const atm_node *n, const atm_tensor *const *in,
                         const atm_tensor *const *out)
{
	TRY(expect_same("input", in[0], "input", in[1]));
	return expect_same("input", in[0], "output", out[0]);
}

/* atm_shape_sgd -- w and dw of one shape, a usable learning rate */
atm_status atm_shape_sgd(const atm_node *n, const atm_tensor *const *in,
                         const atm_tensor *const *out)
{
	CHECK(isfinite(n->attrs.lr) && n->attrs.lr >= 0,
	      "learning rate must be a finite number >= 0, got %g", (double)n->attrs.lr);
	return expect_same("parameter", in[0], "gradient", in[1]);
}

/* role -- operand i's role among roles, data past the roles an entry gives */
static atm_op_role role(const atm_op_role *roles, int i)
{
	return i < ATM_OP_MAX_ROLES ? roles[i] : ATM_ROLE_DATA;
}

/* atm_shape_dtypes -- every operand is f32 but those d's roles give as indices (i32, checked
 * by the op's rule) */
atm_status atm_shape_dtypes(const atm_op_desc *d, const atm_node *n, const atm_tensor *const *in,
                            const atm_tensor *const *out)
{
	for (int i = 0; i < n->n_in + n->n_out; i++) {
		bool is_in = i < n->n_in;
		const atm_tensor *t = is_in ? in[i] : out[i - n->n_in];
		if (role(is_in ? d->in_role : d->out_role, is_in ? i : i - n->n_in) != ATM_ROLE_INDEX)
			CHECK(t->dtype == ATM_F32, "tensor '%s' is %s; %s works on f32", t->name,
			      atm_dtype_name(t->dtype), d->name);
	}
	return ATM_OK;
}
