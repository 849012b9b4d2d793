/* forward.c -- a network given by its forward pass alone (docs/graph-format.md, "Forward
 * graphs"), built into a full training step by the zoo's builder: what the PyTorch importer
 * writes
 *
 *     {"format": "autotm-forward", "version": 1, "name": "resnet18", "batch": 2,
 *      "input": {"shape": [3, 32, 32]},
 *      "layers": [{"name": "conv1", "op": "conv", "input": "input", "out_channels": 64,
 *                  "kernel": [7, 7], "stride": 2, "pad": [3, 3], "bias": false,
 *                  "params": ["conv1.weight"]}, ...],
 *      "output": "fc"}
 *
 * Every field is checked and a layer may only read the input or a layer before it, so the
 * builder sees straight-line code; its refusals (a window larger than its input, shapes that
 * do not add) are named with the layer. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "atm_zoo.h"
#include "builder.h"

#define FW_FORMAT "autotm-forward"
#define FW_VERSION 1
#define FW_MAX_LAYERS 1000000
#define FW_MAX_INPUTS 4096
#define FW_MAX_SIZE ((int64_t)1 << 24)  /* channels, features, image sides */
#define FW_MAX_WINDOW (1 << 16)

struct fw {
	const char *origin;
	char at[320];   /* the element being read, for messages */
	json_t *ids;    /* layer (and input) name -> tensor id */
	zb *b;
};

/* A layer as its op's parser gets it: its name and op, its input (x) or inputs (xs, n), and
 * where its output tensors go (ys, how many in *n_ys: one unless the op says). */
struct fw_op;
struct layer_args {
	const struct fw_op *d;
	const char *name;
	int32_t x;
	const int32_t *xs;
	int n;
	int32_t *ys;
	int *n_ys;
};

/* fw_parse -- read layer o's own fields (a) and add its nodes */
typedef atm_status fw_parse(struct fw *w, json_t *o, const struct layer_args *a);
static fw_parse p_conv, p_norm, p_unary, p_pool, p_flatten, p_linear, p_binary, p_concat,
	p_embedding, p_positions, p_gelu, p_scale, p_softmax, p_matmul, p_permute, p_reshape,
	p_narrow, p_split, p_rope;

/* What a layer's op reads, which fields it takes beside name, op, its input(s), and its parser
 * (for one-input ops with no fields, the builder call; for two-input ones, likewise). */
static const struct fw_op {
	const char *name;
	int n_params;          /* names in "params" (with a bias, where it may have none) */
	int n_inputs;          /* 0: none, 1: "input", 2: "inputs" of two, -1: of two or more */
	const char *fields[8]; /* the op's own fields */
	fw_parse *parse;
	int32_t (*unary)(zb *b, const char *name, int32_t x);
	int32_t (*binary)(zb *b, const char *name, int32_t x0, int32_t x1);
} fw_ops[] = {
	{"conv", 2, 1, {"out_channels", "kernel", "stride", "pad", "bias", "groups", NULL},
	 .parse = p_conv},
	{"batch_norm", 2, 1, {"epsilon", NULL}, .parse = p_norm},
	{"relu", 0, 1, {NULL}, .parse = p_unary, .unary = zb_relu},
	{"max_pool", 0, 1, {"kernel", "stride", "pad", "ceil_mode", NULL}, .parse = p_pool},
	{"avg_pool", 0, 1, {"kernel", "stride", "pad", "count_include_pad", "ceil_mode", NULL},
	 .parse = p_pool},
	{"global_avg_pool", 0, 1, {NULL}, .parse = p_unary, .unary = zb_global_avgpool},
	{"flatten", 0, 1, {NULL}, .parse = p_flatten},
	{"linear", 2, 1, {"out_features", "bias", "flatten", NULL}, .parse = p_linear},
	{"add", 0, 2, {NULL}, .parse = p_binary, .binary = zb_add},
	{"concat", 0, -1, {"axis", NULL}, .parse = p_concat},
	{"embedding", 1, 1, {"num_embeddings", "embedding_dim", NULL}, .parse = p_embedding},
	{"positions", 1, 0, {"table", "length", NULL}, .parse = p_positions},
	{"layer_norm", 2, 1, {"epsilon", NULL}, .parse = p_norm},
	{"rms_norm", 1, 1, {"epsilon", NULL}, .parse = p_norm},
	{"gelu", 0, 1, {"approximate", NULL}, .parse = p_gelu},
	{"tanh", 0, 1, {NULL}, .parse = p_unary, .unary = zb_tanh},
	{"silu", 0, 1, {NULL}, .parse = p_unary, .unary = zb_silu},
	{"sigmoid", 0, 1, {NULL}, .parse = p_unary, .unary = zb_sigmoid},
	{"hardswish", 0, 1, {NULL}, .parse = p_unary, .unary = zb_hardswish},
	{"hardsigmoid", 0, 1, {NULL}, .parse = p_unary, .unary = zb_hardsigmoid},
	{"relu6", 0, 1, {NULL}, .parse = p_unary, .unary = zb_relu6},
	{"mul", 0, 2, {NULL}, .parse = p_binary, .binary = zb_mul},
	{"scale", 1, 1, {"shape", NULL}, .parse = p_scale},
	{"softmax", 0, 1, {"causal", NULL}, .parse = p_softmax},
	{"matmul", 0, 2, {"trans_a", "trans_b", "scale", NULL}, .parse = p_matmul},
	{"permute", 0, 1, {"perm", "view", "shape", NULL}, .parse = p_permute},
	{"reshape", 0, 1, {"shape", NULL}, .parse = p_reshape},
	{"narrow", 0, 1, {"axis", "length", NULL}, .parse = p_narrow},
	{"split", 0, 1, {"axis", "parts", NULL}, .parse = p_split},
	{"rope", 0, 1, {"theta", NULL}, .parse = p_rope},
};
#define FW_N_OPS ((int)(sizeof fw_ops / sizeof fw_ops[0]))


static atm_status bad(const struct fw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static atm_status bad(const struct fw *w, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return atm_err(ATM_E_INPUT, "%s: %s%s%s", w->origin, w->at, w->at[0] ? ": " : "", msg);
}

/* a_an -- "an" before a name that starts with a vowel, else "a" */
static const char *a_an(const char *name)
{
	return strchr("aeiou", name[0]) ? "an" : "a";
}

static const char *op_list(char *buf, size_t len)
{
	size_t k = 0;
	buf[0] = '\0';
	for (int i = 0; i < FW_N_OPS && k < len; i++)
		k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? ", " : "", fw_ops[i].name);
	return buf;
}

/* only_fields -- o has no field outside the NULL-terminated lists a and b */
static atm_status only_fields(const struct fw *w, json_t *o, const char *const *a,
                              const char *const *b)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		bool ok = false;
		for (int i = 0; !ok && a && a[i]; i++)
			ok = !strcmp(k, a[i]);
		for (int i = 0; !ok && b && b[i]; i++)
			ok = !strcmp(k, b[i]);
		if (!ok)
			return bad(w, "unknown field '%s'", k);
	}
	return ATM_OK;
}

/* get_int -- field key of o, an integer from lo to hi (absent: def, or an error when def < lo) */
static atm_status get_int(const struct fw *w, json_t *o, const char *key, int64_t lo, int64_t hi,
                          int64_t def, int64_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!v) {
		if (def < lo)
			return bad(w, "'%s' is missing", key);
		*out = def;
		return ATM_OK;
	}
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return bad(w, "'%s' must be an integer from %lld to %lld", key, (long long)lo,
		           (long long)hi);
	*out = json_integer_value(v);
	return ATM_OK;
}

/* get_pair -- field key: an integer, or [a, b], each from lo to hi (absent: def, def) */
static atm_status get_pair(const struct fw *w, json_t *o, const char *key, int lo, int hi, int def,
                           int out[2])
{
	json_t *v = json_object_get(o, key);
	out[0] = out[1] = def;
	if (!v) {
		if (def < lo)
			return bad(w, "'%s' is missing", key);
		return ATM_OK;
	}
	if (json_is_integer(v))
		v = json_pack("[O, O]", v, v);
	else
		json_incref(v);
	bool ok = json_is_array(v) && json_array_size(v) == 2;
	for (int i = 0; ok && i < 2; i++) {
		json_t *x = json_array_get(v, (size_t)i);
		ok = json_is_integer(x) && json_integer_value(x) >= lo && json_integer_value(x) <= hi;
		if (ok)
			out[i] = (int)json_integer_value(x);
	}
	json_decref(v);
	if (!ok)
		return bad(w, "'%s' must be an integer or [height, width], each from %d to %d", key, lo,
		           hi);
	return ATM_OK;
}

static atm_status get_bool(const struct fw *w, json_t *o, const char *key, bool def, bool *out)
{
	json_t *v = json_object_get(o, key);
	if (v && !json_is_boolean(v))
		return bad(w, "'%s' must be true or false", key);
	*out = v ? json_is_true(v) : def;
	return ATM_OK;
}

/* ref -- the tensor id of an earlier layer (or the input) by name */
static atm_status ref(const struct fw *w, json_t *v, const char *what, int32_t *id)
{
	if (!json_is_string(v))
		return bad(w, "%s must be the name of the input or of an earlier layer", what);
	json_t *i = json_object_get(w->ids, json_string_value(v));
	if (!i)
		return bad(w, "%s '%s' is neither the input nor an earlier layer", what,
		           json_string_value(v));
	*id = (int32_t)json_integer_value(i);
	return ATM_OK;
}

/* params -- the layer's parameter names, want of them, handed to the builder; a name an
 * earlier layer gave (a module applied twice) is that layer's tensor, shared (zb_param_names) */
static atm_status params(struct fw *w, json_t *o, size_t want)
{
	json_t *p = json_object_get(o, "params");
	const char *names[2] = {NULL, NULL};
	if (!p) {
		zb_param_names(w->b, NULL, NULL);
		return ATM_OK;
	}
	if (!json_is_array(p) || json_array_size(p) != want)
		return bad(w, "'params' must name the layer's %zu parameter%s (%s)", want,
		           want == 1 ? "" : "s", want == 1 ? "its weight" : "weight, then bias");
	for (size_t i = 0; i < want; i++) {
		json_t *s = json_array_get(p, i);
		if (!json_is_string(s) || !json_string_value(s)[0])
			return bad(w, "'params'[%zu] must be a non-empty name", i);
		names[i] = json_string_value(s);
	}
	zb_param_names(w->b, names[0], names[1]);
	return ATM_OK;
}

/* get_dims -- field key: an array of lo_n to hi_n integers, each from lo to FW_MAX_SIZE (absent,
 * when optional: *n = 0) */
static atm_status get_dims(const struct fw *w, json_t *o, const char *key, int lo_n, int hi_n,
                           int64_t lo, bool optional, int64_t *out, int *n)
{
	json_t *v = json_object_get(o, key);
	*n = 0;
	if (!v && optional)
		return ATM_OK;
	bool ok = json_is_array(v) && (int)json_array_size(v) >= lo_n &&
	          (int)json_array_size(v) <= hi_n;
	for (size_t i = 0; ok && i < json_array_size(v); i++) {
		json_t *d = json_array_get(v, i);
		ok = json_is_integer(d) && json_integer_value(d) >= lo &&
		     json_integer_value(d) <= FW_MAX_SIZE;
		out[i] = ok ? json_integer_value(d) : 0;
	}
	if (!ok)
		return bad(w, "'%s' must be %d to %d integers, each from %lld to %lld", key, lo_n, hi_n,
		           (long long)lo, (long long)FW_MAX_SIZE);
	*n = (int)json_array_size(v);
	return ATM_OK;
}

/* get_epsilon -- field "epsilon": above 0 and at most 1 (absent: def) */
static atm_status get_epsilon(const struct fw *w, json_t *o, float def, float *out)
{
	json_t *e = json_object_get(o, "epsilon");
	if (e && (!json_is_number(e) || !(json_number_value(e) > 0) || !(json_number_value(e) <= 1)))
		return bad(w, "'epsilon' must be a number above 0 and at most 1");
	*out = e ? (float)json_number_value(e) : def;
	return ATM_OK;
}

/* with_batch -- [batch, dims...]: a shape given without its batch */
static int with_batch(zb *b, int32_t x, const int64_t *dims, int n, int64_t *out)
{
	out[0] = zb_dim(b, x, 0);
	memcpy(out + 1, dims, (size_t)n * sizeof *dims);
	return n + 1;
}

/* permute -- a permute layer: perm over every axis, the batch's first; the input read as
 * [batch, view...] or the output written as [batch, shape...] where one is given */
static atm_status permute(struct fw *w, json_t *o, const char *name, int32_t x, int32_t *y)
{
	int64_t perm[ATM_MAX_DIMS], view[ATM_MAX_DIMS], shape[ATM_MAX_DIMS], dims[ATM_MAX_DIMS];
	int n_perm, n_view, n_shape, nd = 0;
	atm_status rc;
	if ((rc = get_dims(w, o, "perm", 2, ATM_MAX_DIMS, 0, false, perm, &n_perm)) < 0 ||
	    (rc = get_dims(w, o, "view", 1, ATM_MAX_DIMS - 1, 1, true, view, &n_view)) < 0 ||
	    (rc = get_dims(w, o, "shape", 1, ATM_MAX_DIMS - 1, 1, true, shape, &n_shape)) < 0)
		return rc;
	if (perm[0] != 0)
		return bad(w, "'perm' must keep the batch first (perm[0] = 0): autotm's activations "
		           "lead with the batch");
	if (n_view && n_shape)
		return bad(w, "give 'view' (the input read as) or 'shape' (the output written as), "
		           "not both");
	if (n_view && n_view + 1 != n_perm)
		return bad(w, "'view' has %d dimensions past the batch; 'perm' has %d axes", n_view,
		           n_perm);
	int32_t p[ATM_MAX_DIMS];
	for (int i = 0; i < n_perm; i++)
		p[i] = (int32_t)perm[i];
	if (n_shape) {
		nd = with_batch(w->b, x, shape, n_shape, dims);
	} else {
		int64_t in[ATM_MAX_DIMS];
		int n_in = n_view ? with_batch(w->b, x, view, n_view, in) : n_perm;
		for (int i = 0; !n_view && i < n_in; i++)
			in[i] = zb_dim(w->b, x, i);
		for (int i = 0; i < n_perm; i++)
			dims[i] = perm[i] < n_in ? in[perm[i]] : 0;
		nd = n_perm;
	}
	*y = zb_permute(w->b, name, x, n_perm, p, nd, dims);
	return ATM_OK;
}

/* p_conv -- a convolution: out_channels, kernel, stride (one for both sides), pad, bias,
 * groups */
static atm_status p_conv(struct fw *w, json_t *o, const struct layer_args *a)
{
	int64_t v = 0, groups = 1;
	int k[2] = {0, 0}, s[2] = {0, 0}, p[2] = {0, 0};
	bool bias = true;
	atm_status rc;
	if ((rc = get_int(w, o, "out_channels", 1, FW_MAX_SIZE, -1, &v)) < 0 ||
	    (rc = get_pair(w, o, "kernel", 1, FW_MAX_WINDOW, -1, k)) < 0 ||
	    (rc = get_pair(w, o, "stride", 1, FW_MAX_WINDOW, 1, s)) < 0 ||
	    (rc = get_pair(w, o, "pad", 0, FW_MAX_WINDOW, 0, p)) < 0 ||
	    (rc = get_bool(w, o, "bias", true, &bias)) < 0 ||
	    (rc = get_int(w, o, "groups", 1, FW_MAX_SIZE, 1, &groups)) < 0)
		return rc;
	if (s[0] != s[1])
		return bad(w, "a stride of [%d, %d]: autotm's convolutions take one stride for "
		           "both sides", s[0], s[1]);
	if ((rc = params(w, o, bias ? 2 : 1)) < 0)
		return rc;
	a->ys[0] = zb_conv_groups(w->b, a->name, a->x, v, k[0], k[1], s[0], p[0], p[1], groups,
	                          bias);
	return ATM_OK;
}

/* p_norm -- a batch, layer or RMS norm: epsilon */
static atm_status p_norm(struct fw *w, json_t *o, const struct layer_args *a)
{
	float eps = ZB_EPSILON;
	bool rms = !strcmp(a->d->name, "rms_norm");
	atm_status rc;
	if ((rc = get_epsilon(w, o, ZB_EPSILON, &eps)) < 0 || (rc = params(w, o, rms ? 1 : 2)) < 0)
		return rc;
	a->ys[0] = rms ? zb_rms_norm(w->b, a->name, a->x, eps)
	           : a->d->name[0] == 'b' ? zb_bn_eps(w->b, a->name, a->x, eps)
	                             : zb_layer_norm(w->b, a->name, a->x, eps);
	return ATM_OK;
}

/* p_unary, p_binary -- an op of no fields over one input or two: its builder call */
static atm_status p_unary(struct fw *w, json_t *o, const struct layer_args *a)
{
	(void)o;
	a->ys[0] = a->d->unary(w->b, a->name, a->x);
	return ATM_OK;
}

static atm_status p_binary(struct fw *w, json_t *o, const struct layer_args *a)
{
	(void)o;
	a->ys[0] = a->d->binary(w->b, a->name, a->xs[0], a->xs[1]);
	return ATM_OK;
}

/* p_pool -- max or average pooling: a square kernel, stride (default the kernel), pad,
 * ceil_mode, and for averages count_include_pad */
static atm_status p_pool(struct fw *w, json_t *o, const struct layer_args *a)
{
	bool avg = a->d->name[0] == 'a', include = true, ceil = false;
	int k[2] = {0, 0}, s[2] = {0, 0}, p[2] = {0, 0};
	atm_status rc;
	if ((rc = get_pair(w, o, "kernel", 1, FW_MAX_WINDOW, -1, k)) < 0 ||
	    (rc = get_pair(w, o, "stride", 1, FW_MAX_WINDOW, k[0], s)) < 0 ||
	    (rc = get_pair(w, o, "pad", 0, FW_MAX_WINDOW, 0, p)) < 0 ||
	    (rc = get_bool(w, o, "ceil_mode", false, &ceil)) < 0 ||
	    (avg && (rc = get_bool(w, o, "count_include_pad", true, &include)) < 0))
		return rc;
	if (k[0] != k[1] || s[0] != s[1] || p[0] != p[1])
		return bad(w, "a %dx%d window, stride [%d, %d], pad [%d, %d]: autotm's pooling "
		           "takes square windows, one stride and one padding", k[0], k[1], s[0],
		           s[1], p[0], p[1]);
	a->ys[0] = ceil  ? zb_pool_ceil(w->b, a->name, a->x, k[0], s[0], p[0], !avg, !include)
	           : avg ? zb_avgpool(w->b, a->name, a->x, k[0], s[0], p[0], !include)
	                 : zb_maxpool(w->b, a->name, a->x, k[0], s[0], p[0]);
	return ATM_OK;
}

/* p_flatten -- no node: the next linear layer reads every dimension past the batch */
static atm_status p_flatten(struct fw *w, json_t *o, const struct layer_args *a)
{
	(void)w, (void)o;
	a->ys[0] = a->x;
	return ATM_OK;
}

/* p_linear -- out_features, bias, flatten (over every dimension past the batch, or the last) */
static atm_status p_linear(struct fw *w, json_t *o, const struct layer_args *a)
{
	int64_t v = 0;
	bool bias = true, flatten = true;
	atm_status rc;
	if ((rc = get_int(w, o, "out_features", 1, FW_MAX_SIZE, -1, &v)) < 0 ||
	    (rc = get_bool(w, o, "bias", true, &bias)) < 0 ||
	    (rc = get_bool(w, o, "flatten", true, &flatten)) < 0 ||
	    (rc = params(w, o, bias ? 2 : 1)) < 0)
		return rc;
	if (flatten && !bias)
		return bad(w, "a flattening linear layer has a bias; give \"flatten\": false for "
		           "one over the last dimension without it");
	a->ys[0] = flatten ? zb_fc(w->b, a->name, a->x, v) : zb_linear(w->b, a->name, a->x, v, bias);
	return ATM_OK;
}

/* p_concat -- the inputs joined along axis (default 1, the channels) */
static atm_status p_concat(struct fw *w, json_t *o, const struct layer_args *a)
{
	int64_t axis = 1;
	atm_status rc = get_int(w, o, "axis", 1, ATM_MAX_DIMS - 1, 1, &axis);
	if (rc < 0)
		return rc;
	a->ys[0] = zb_concat_axis(w->b, a->name, a->n, a->xs, (int)axis);
	return ATM_OK;
}

/* p_embedding -- num_embeddings, embedding_dim */
static atm_status p_embedding(struct fw *w, json_t *o, const struct layer_args *a)
{
	int64_t rows = 0, dim = 0;
	atm_status rc;
	if ((rc = get_int(w, o, "num_embeddings", 1, FW_MAX_SIZE, -1, &rows)) < 0 ||
	    (rc = get_int(w, o, "embedding_dim", 1, FW_MAX_SIZE, -1, &dim)) < 0 ||
	    (rc = params(w, o, 1)) < 0)
		return rc;
	a->ys[0] = zb_embedding(w->b, a->name, a->x, rows, dim);
	return ATM_OK;
}

/* p_positions -- a learned position table: table [rows, dim] or [1, rows, dim], length */
static atm_status p_positions(struct fw *w, json_t *o, const struct layer_args *a)
{
	json_t *pn = json_object_get(o, "params");
	char pname[ZB_NAME_MAX];
	int64_t dims[ATM_MAX_DIMS], v = 0;
	int nd = 0;
	atm_status rc;
	if ((rc = get_dims(w, o, "table", 2, 3, 1, false, dims, &nd)) < 0)
		return rc;
	if (nd == 3 && dims[0] != 1)
		return bad(w, "'table' must be [rows, dim] or [1, rows, dim]");
	if ((rc = get_int(w, o, "length", 1, dims[nd - 2], dims[nd - 2], &v)) < 0)
		return rc;
	if (pn && (!json_is_array(pn) || json_array_size(pn) != 1 ||
	           !json_is_string(json_array_get(pn, 0)) ||
	           !json_string_value(json_array_get(pn, 0))[0]))
		return bad(w, "'params' must name the layer's 1 parameter (its table)");
	if (pn)
		zb_namef(pname, "%s", json_string_value(json_array_get(pn, 0)));
	else
		zb_namef(pname, "%s.weight", a->name);
	a->ys[0] = zb_positions(w->b, a->name, pname, v, dims[nd - 2], dims[nd - 1], nd == 3);
	return ATM_OK;
}

/* p_gelu -- approximate: "none" (the erf form) or "tanh" */
static atm_status p_gelu(struct fw *w, json_t *o, const struct layer_args *a)
{
	json_t *ap = json_object_get(o, "approximate");
	const char *form = ap ? json_string_value(ap) : "none";
	if (!form || (strcmp(form, "none") && strcmp(form, "tanh")))
		return bad(w, "'approximate' must be \"none\" (the erf form) or \"tanh\"");
	a->ys[0] = zb_gelu(w->b, a->name, a->x, !strcmp(form, "tanh"));
	return ATM_OK;
}

/* p_scale -- a learned product of the given shape, broadcast */
static atm_status p_scale(struct fw *w, json_t *o, const struct layer_args *a)
{
	int64_t dims[ATM_MAX_DIMS];
	int nd = 0;
	atm_status rc;
	if ((rc = get_dims(w, o, "shape", 1, ATM_MAX_DIMS - 1, 1, false, dims, &nd)) < 0 ||
	    (rc = params(w, o, 1)) < 0)
		return rc;
	a->ys[0] = zb_scale(w->b, a->name, a->x, nd, dims);
	return ATM_OK;
}

/* p_softmax -- causal or not */
static atm_status p_softmax(struct fw *w, json_t *o, const struct layer_args *a)
{
	bool causal = false;
	atm_status rc = get_bool(w, o, "causal", false, &causal);
	if (rc < 0)
		return rc;
	a->ys[0] = zb_softmax(w->b, a->name, a->x, causal);
	return ATM_OK;
}

/* p_matmul -- trans_a, trans_b, scale (finite, not 0) */
static atm_status p_matmul(struct fw *w, json_t *o, const struct layer_args *a)
{
	json_t *sc = json_object_get(o, "scale");
	bool ta = false, tb = false;
	atm_status rc;
	if ((rc = get_bool(w, o, "trans_a", false, &ta)) < 0 ||
	    (rc = get_bool(w, o, "trans_b", false, &tb)) < 0)
		return rc;
	if (sc && (!json_is_number(sc) || !isfinite(json_number_value(sc)) ||
	           json_number_value(sc) == 0 || fabs(json_number_value(sc)) > 1e30))
		return bad(w, "'scale' must be a finite number other than 0");
	a->ys[0] = zb_matmul(w->b, a->name, a->xs[0], a->xs[1], ta, tb,
	                     sc ? (float)json_number_value(sc) : 1.0f);
	return ATM_OK;
}

/* p_permute -- permute's own reader */
static atm_status p_permute(struct fw *w, json_t *o, const struct layer_args *a)
{
	return permute(w, o, a->name, a->x, &a->ys[0]);
}

/* p_reshape -- a view of another shape past the batch */
static atm_status p_reshape(struct fw *w, json_t *o, const struct layer_args *a)
{
	int32_t same[ATM_MAX_DIMS] = {0, 1, 2, 3, 4, 5};
	int64_t dims[ATM_MAX_DIMS], full[ATM_MAX_DIMS];
	int n_in = 0, nd = 0;
	atm_status rc;
	while (n_in < ATM_MAX_DIMS && zb_dim(w->b, a->x, n_in))
		n_in++;
	if ((rc = get_dims(w, o, "shape", 1, ATM_MAX_DIMS - 1, 1, false, dims, &nd)) < 0)
		return rc;
	a->ys[0] = zb_permute(w->b, a->name, a->x, n_in, same,
	                      with_batch(w->b, a->x, dims, nd, full), full);
	return ATM_OK;
}

/* p_narrow -- the first length entries along axis */
static atm_status p_narrow(struct fw *w, json_t *o, const struct layer_args *a)
{
	int64_t axis = 0, len = 0;
	atm_status rc;
	if ((rc = get_int(w, o, "axis", 1, ATM_MAX_DIMS - 1, -1, &axis)) < 0 ||
	    (rc = get_int(w, o, "length", 1, FW_MAX_SIZE, -1, &len)) < 0)
		return rc;
	a->ys[0] = zb_narrow(w->b, a->name, a->x, (int)axis, len);
	return ATM_OK;
}

/* p_split -- parts equal parts along axis: parts outputs */
static atm_status p_split(struct fw *w, json_t *o, const struct layer_args *a)
{
	int64_t axis = 0, parts = 0;
	atm_status rc;
	if ((rc = get_int(w, o, "axis", 1, ATM_MAX_DIMS - 1, -1, &axis)) < 0 ||
	    (rc = get_int(w, o, "parts", 2, 64, -1, &parts)) < 0)
		return rc;
	zb_split(w->b, a->name, a->x, (int)axis, (int)parts, a->ys);
	*a->n_ys = (int)parts;
	return ATM_OK;
}

/* p_rope -- rotary embeddings, theta (the graph's rule, core/shape.c, checked here to name the
 * layer) */
static atm_status p_rope(struct fw *w, json_t *o, const struct layer_args *a)
{
	json_t *th = json_object_get(o, "theta");
	if (th && (!json_is_number(th) || !isfinite(json_number_value(th)) ||
	           !(json_number_value(th) > 1) || json_number_value(th) > 1e30))
		return bad(w, "'theta' must be a finite number above 1");
	a->ys[0] = zb_rope(w->b, a->name, a->x, th ? (float)json_number_value(th) : 10000.0f);
	return ATM_OK;
}

/* layer -- one layer of the "layers" array: its op, its inputs, then its op's parser */
static atm_status layer(struct fw *w, json_t *o, int32_t *ys, int *n_ys)
{
	static const char *const common[] = {"name", "op", "input", "inputs", "params", NULL};
	char ops[300];
	json_t *opv = json_object_get(o, "op");
	const char *name = json_string_value(json_object_get(o, "name"));
	const struct fw_op *d = NULL;
	atm_status rc;
	*n_ys = 1;
	for (int i = 0; json_is_string(opv) && i < FW_N_OPS; i++)
		if (!strcmp(json_string_value(opv), fw_ops[i].name))
			d = &fw_ops[i];
	if (!d)
		return bad(w, "'op' must be one of %s", op_list(ops, sizeof ops));
	if ((rc = only_fields(w, o, common, d->fields)) < 0)
		return rc;
	if (!d->n_params && json_object_get(o, "params"))
		return bad(w, "%s %s layer has no parameters", a_an(d->name), d->name);
	int32_t x = -1, xs[FW_MAX_INPUTS];
	int n = 0;
	if (d->n_inputs == 0) {
		if (json_object_get(o, "input") || json_object_get(o, "inputs"))
			return bad(w, "%s %s layer reads no other layer", a_an(d->name), d->name);
	} else if (d->n_inputs != 1) {
		json_t *in = json_object_get(o, "inputs");
		size_t most = d->n_inputs == 2 ? 2 : FW_MAX_INPUTS;
		if (json_object_get(o, "input") || !json_is_array(in) || json_array_size(in) < 2 ||
		    json_array_size(in) > most)
			return d->n_inputs == 2
			               ? bad(w, "%s %s layer takes 'inputs': [two names]", a_an(d->name),
			                     d->name)
			               : bad(w, "%s %s layer takes 'inputs': [2 to %d names]",
			                     a_an(d->name), d->name, FW_MAX_INPUTS);
		for (n = 0; n < (int)json_array_size(in); n++)
			if ((rc = ref(w, json_array_get(in, (size_t)n), "each of 'inputs'", &xs[n])) < 0)
				return rc;
	} else {
		if (json_object_get(o, "inputs"))
			return bad(w, "%s %s layer takes one 'input'", a_an(d->name), d->name);
		if ((rc = ref(w, json_object_get(o, "input"), "'input'", &x)) < 0)
			return rc;
	}
	ys[0] = -1;
	const struct layer_args a = {d, name, x, xs, n, ys, n_ys};
	if ((rc = d->parse(w, o, &a)) < 0)
		return rc;
	if (ys[0] < 0)
		return bad(w, "%s", atm_errmsg());
	return ATM_OK;
}

/* input -- the graph's input: an image {"shape": [c, h, w]} or token ids {"tokens": seq} */
static atm_status input(struct fw *w, json_t *in, int32_t *x)
{
	static const char *const in_fields[] = {"shape", "tokens", NULL};
	int64_t dims[3], seq = 0;
	int nd = 0;
	atm_status rc;
	strcpy(w->at, "input");
	if (!json_is_object(in) || !json_object_get(in, "shape") == !json_object_get(in, "tokens"))
		return bad(w, "must be an object {\"shape\": [channels, height, width]} (an image) or "
		           "{\"tokens\": sequence length} (token ids)");
	if ((rc = only_fields(w, in, in_fields, NULL)) < 0)
		return rc;
	if (json_object_get(in, "tokens")) {
		if ((rc = get_int(w, in, "tokens", 1, FW_MAX_SIZE, -1, &seq)) < 0)
			return rc;
		*x = zb_tokens(w->b, "input_ids", seq);
	} else {
		if ((rc = get_dims(w, in, "shape", 3, 3, 1, false, dims, &nd)) < 0)
			return bad(w, "'shape' must be [channels, height, width] without the batch, each "
			           "from 1 to %lld", (long long)FW_MAX_SIZE);
		*x = zb_image(w->b, dims[0], dims[1], dims[2]);
	}
	if (*x < 0)
		return bad(w, "%s", atm_errmsg());
	return ATM_OK;
}

/* name_id -- ids[name] = id, the name new */
static atm_status name_id(struct fw *w, const char *name, int32_t id)
{
	if (json_object_get(w->ids, name))
		return bad(w, "the name '%s' is taken by %s", name,
		           strcmp(name, "input") ? "an earlier layer" : "the input");
	if (json_object_set_new(w->ids, name, json_integer(id)) < 0)
		return atm_err(ATM_E_NOMEM, "out of memory reading %s", w->origin);
	return ATM_OK;
}

/* build -- the document's network into b; the logits' id in *logits */
static atm_status build(struct fw *w, json_t *doc, int32_t *logits)
{
	json_t *layers = json_object_get(doc, "layers");
	atm_status rc;
	int32_t x = -1;
	if ((rc = input(w, json_object_get(doc, "input"), &x)) < 0 ||
	    (rc = name_id(w, "input", x)) < 0)
		return rc;
	w->at[0] = '\0';
	if (!json_is_array(layers) || !json_array_size(layers) ||
	    json_array_size(layers) > FW_MAX_LAYERS)
		return bad(w, "'layers' must be an array of 1 to %d layers", FW_MAX_LAYERS);
	size_t i;
	json_t *o;
	json_array_foreach(layers, i, o) {
		const char *name = json_string_value(json_object_get(o, "name"));
		/* a million layers take seconds: Ctrl-C ends them too */
		if (i % 4096 == 0 && atm_stopped())
			return atm_err(ATM_E_INTERRUPTED, "%s: interrupted reading layer %zu of %zu",
			               w->origin, i, json_array_size(layers));
		snprintf(w->at, sizeof w->at, "layers[%zu]", i);
		if (!json_is_object(o))
			return bad(w, "must be an object {\"name\", \"op\", ...}");
		if (!name || !name[0] || strlen(name) > 200)
			return bad(w, "'name' must be a name of 1 to 200 characters");
		snprintf(w->at, sizeof w->at, "layers[%zu] (\"%s\")", i, name);
		int32_t ys[64];
		int n_ys = 1;
		char part[ZB_NAME_MAX];
		if (json_object_get(w->ids, name))
			return name_id(w, name, -1);
		if ((rc = layer(w, o, ys, &n_ys)) < 0)
			return rc;
		/* a split's parts are NAME.0, NAME.1, ... */
		for (int k = 0; k < n_ys; k++)
			if ((rc = name_id(w, n_ys > 1 ? zb_namef(part, "%s.%d", name, k) : name, ys[k])) < 0)
				return rc;
	}
	strcpy(w->at, "output");
	if ((rc = ref(w, json_object_get(doc, "output"), "'output'", logits)) < 0)
		return rc;
	return ATM_OK;
}

bool atm_zoo_is_forward(const char *text, size_t len)
{
	/* a graph file of the other format can be large: parsed only when the name is there */
	if (!memmem(text, len, FW_FORMAT, strlen(FW_FORMAT)))
		return false;
	json_t *doc = json_loadb(text, len, 0, NULL);
	bool is = doc && json_is_string(json_object_get(doc, "format")) &&
	          !strcmp(json_string_value(json_object_get(doc, "format")), FW_FORMAT);
	json_decref(doc);
	return is;
}

static atm_status forward_load_doc(atm_graph **g, json_t *doc, const char *origin,
                                   int64_t batch, const char *precision);

atm_status atm_zoo_forward_load_buffer(atm_graph **g, const char *text, size_t len,
                                       const char *origin, int64_t batch)
{
	json_error_t je;
	*g = NULL;
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return atm_err(ATM_E_INPUT, "%s:%d:%d: JSON error: %s",
		               origin ? origin : "forward graph", je.line, je.column, je.text);
	return forward_load_doc(g, doc, origin, batch, NULL);
}

/* forward_load_doc -- atm_zoo_forward_load_buffer of the parsed document doc (in precision,
 * "f32" or "bf16"; NULL: the document's own, f32 without one), whose reference it takes:
 * released once the layers are read, before the backward pass is built beside them */
static atm_status forward_load_doc(atm_graph **g, json_t *doc, const char *origin, int64_t batch,
                                   const char *precision)
{
	static const char *const top[] = {"format", "version", "name", "batch", "lr", "precision",
	                                  "input", "layers", "output", NULL};
	struct fw w = {.origin = origin ? origin : "forward graph"};
	atm_status rc;
	int64_t file_batch = 1;
	*g = NULL;
	if (!json_is_object(doc)) {
		rc = bad(&w, "a forward graph is a JSON object {\"format\": \"%s\", ...}", FW_FORMAT);
		goto out;
	}
	json_t *f = json_object_get(doc, "format"), *name = json_object_get(doc, "name"),
	       *lr = json_object_get(doc, "lr"), *pr = json_object_get(doc, "precision");
	int64_t version = 0;
	if (!json_is_string(f) || strcmp(json_string_value(f), FW_FORMAT)) {
		rc = bad(&w, "'format' must be \"%s\"", FW_FORMAT);
		goto out;
	}
	if ((rc = only_fields(&w, doc, top, NULL)) < 0 ||
	    (rc = get_int(&w, doc, "version", FW_VERSION, FW_VERSION, -1, &version)) < 0 ||
	    (rc = get_int(&w, doc, "batch", 1, 1000000, 1, &file_batch)) < 0)
		goto out;
	if (!json_is_string(name) || !json_string_value(name)[0] ||
	    strlen(json_string_value(name)) > 200) {
		rc = bad(&w, "'name' must be a name of 1 to 200 characters");
		goto out;
	}
	if (lr && (!json_is_number(lr) || !(json_number_value(lr) > 0) ||
	           !isfinite(json_number_value(lr)) || json_number_value(lr) > 1e6)) {
		rc = bad(&w, "'lr' must be a learning rate above 0 and at most 1e6");
		goto out;
	}
	if (pr && (!json_is_string(pr) || (strcmp(json_string_value(pr), "f32") &&
	                                   strcmp(json_string_value(pr), "bf16")))) {
		rc = bad(&w, "'precision' must be \"f32\" or \"bf16\" (bf16 mixed precision, as "
		         "torch.autocast runs it)");
		goto out;
	}
	if (batch < 0 || batch > 1000000) {
		rc = atm_err(ATM_E_USAGE, "batch %lld: expected 1 to 1000000", (long long)batch);
		goto out;
	}
	if (!precision)
		precision = pr ? json_string_value(pr) : "f32";
	zb_spec spec = {.name = json_string_value(name), .batch = batch ? batch : file_batch,
	                .n_classes = 1, .image = 1,
	                .lr = lr ? (float)json_number_value(lr) : 0.01f,
	                .autocast = !strcmp(precision, "bf16")};
	if (!(w.ids = json_object()) || (rc = zb_new(&w.b, &spec)) < 0) {
		rc = w.ids ? rc : atm_err(ATM_E_NOMEM, "out of memory reading %s", w.origin);
		goto out;
	}
	int32_t logits = -1;
	if ((rc = build(&w, doc, &logits)) < 0)
		goto out;
	/* the document's names and values are in the graph now: a large one's memory goes */
	json_decref(w.ids);
	json_decref(doc);
	w.ids = doc = NULL;
	/* logits [batch, classes]: a class per sample; [batch, ..., classes]: one per position */
	rc = zb_dim(w.b, logits, 2) ? zb_finish_tokens(w.b, 1, &logits, (const char *[]){"labels"},
	                                               (const char *[]){"loss"}, g)
	                            : zb_finish(w.b, logits, g);
	if (rc == ATM_OK && (rc = atm_graph_validate(*g)) < 0) {
		atm_graph_destroy(*g);
		*g = NULL;
	}
	if (rc < 0 && rc != ATM_E_INTERRUPTED)
		rc = bad(&w, "%s", atm_errmsg());
out:
	zb_destroy(w.b);
	json_decref(w.ids);
	json_decref(doc);
	return rc;
}

atm_status atm_zoo_load(atm_graph **g, const char *path, const atm_graph_load_opts *o)
{
	char *text = NULL;
	size_t len = 0;
	atm_status rc = atm_read_file_max(path, ATM_GRAPH_FILE_MAX_BYTES, "graph file", &text, &len);
	*g = NULL;
	if (rc < 0)
		return rc;
	/* a forward file is parsed once: a million layers' document takes a second and hundreds
	 * of megabytes (one that does not parse is told apart as before, and says why) */
	json_t *doc = memmem(text, len, FW_FORMAT, strlen(FW_FORMAT))
	                      ? json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL) : NULL;
	json_t *f = doc ? json_object_get(doc, "format") : NULL;
	if (json_is_string(f) && !strcmp(json_string_value(f), FW_FORMAT)) {
		free(text);
		return forward_load_doc(g, doc, path, o ? o->batch : 0, o ? o->precision : NULL);
	}
	json_decref(doc);
	if (atm_zoo_is_forward(text, len))
		rc = atm_zoo_forward_load_buffer(g, text, len, path, o ? o->batch : 0);
	else if (o && o->precision && !strcmp(o->precision, "bf16"))
		rc = atm_err(ATM_E_USAGE, "%s is an autotm-graph, whose tensors have their dtypes: "
		             "--precision bf16 builds zoo networks and forward files (the importer's) in "
		             "mixed precision", path);
	else
		rc = atm_graph_load_buffer(g, text, len, path, o);
	free(text);
	return rc;
}
