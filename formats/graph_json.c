/* graph_json.c -- read, check and write the graph JSON format (docs/graph-format.md) */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "formats_internal.h"

#define GJ_FORMAT "autotm-graph"
#define GJ_VERSION 1

/* Bounds no real network reaches (ResNet-200 has about 10k tensors); they keep
 * a broken or hostile file from making the loader allocate or loop without end. */
#define GJ_MAX_ELEMS 1000000    /* tensors, or nodes, in one graph */
#define GJ_MAX_EDGES 4096       /* inputs, or outputs, of one node (the widest concat) */
#define GJ_MAX_NAME 1024        /* bytes in a name */
#define GJ_MAX_WINDOW (1 << 20) /* kernel, stride and padding of a sliding window */

/* Defaults of attrs a file leaves out; the writer always writes them. */
#define GJ_DEFAULT_EPSILON 1e-5f
#define GJ_DEFAULT_THETA 10000.0f /* rope: LLaMA 2's base */
#define GJ_DEFAULT_LR 0.01f
#define GJ_DEFAULT_BETA1 0.9f   /* adamw: PyTorch's */
#define GJ_DEFAULT_BETA2 0.999f
#define GJ_DEFAULT_AXIS 1

/* Element labels: "nodes[12] (\"conv3_2\")", and paths below them. */
#define GJ_LABEL 160
#define GJ_PATH 224

static const char *const gj_top_keys[] = {"format", "version", "name", "parameters",
                                          "tensors", "nodes", NULL};
static const char *const gj_tensor_keys[] = {"id", "name", "shape", "dtype", "kind",
                                             "locations", NULL};
static const char *const gj_node_keys[] = {"id", "name", "op", "inputs", "outputs", "attrs",
                                           "workspace_bytes", NULL};

/* gj_op_attrs -- the names of the attrs op takes into valid (NULL-terminated), in the order
 * the writer writes them; how many */
static int gj_op_attrs(atm_op op, const char *valid[ATM_N_ATTRS + 1])
{
	const atm_op_desc *d = atm_op_describe(op);
	int n = 0;
	for (int i = 0; d && i < ATM_N_ATTRS; i++)
		if (d->attrs & (1u << i))
			valid[n++] = atm_attr_name(1u << i);
	valid[n] = NULL;
	return n;
}

/* ---------------------------------------------------------------- messages */

/* gj_clip -- at most max bytes of s, cut on a UTF-8 character boundary, "..." when cut */
static const char *gj_clip(const char *s, size_t max, char *buf, size_t len)
{
	size_t n = strlen(s);
	if (n <= max && n < len) {
		memcpy(buf, s, n + 1);
		return buf;
	}
	if (max + 4 > len)
		max = len > 4 ? len - 4 : 0;
	n = max;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	memcpy(buf, s, n);
	memcpy(buf + n, "...", 4);
	return buf;
}

/* gj_describe -- what a JSON value is, for "expected X, got Y" messages */
static const char *gj_describe(const json_t *v, char *buf, size_t len)
{
	char clip[64];
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING:
		snprintf(buf, len, "a string \"%s\"", gj_clip(json_string_value(v), 40, clip, sizeof clip));
		return buf;
	case JSON_INTEGER:
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
		return buf;
	case JSON_REAL:
		snprintf(buf, len, "%g", json_real_value(v));
		return buf;
	case JSON_TRUE: return "true";
	case JSON_FALSE: return "false";
	default: return "null";
	}
}

/* gj_fail -- an ATM_E_INPUT message "where: what" (just "what" when where is empty) */
static atm_status gj_fail(const char *where, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static atm_status gj_fail(const char *where, const char *fmt, ...)
{
	char what[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (where && where[0])
		return atm_err(ATM_E_INPUT, "%s: %s", where, what);
	return atm_err(ATM_E_INPUT, "%s", what);
}

/* gj_expected -- "where: expected what, got <v>" */
static atm_status gj_expected(const char *where, const char *what, const json_t *v)
{
	char d[96];
	return gj_fail(where, "expected %s, got %s", what, gj_describe(v, d, sizeof d));
}

/* gj_sub -- path of a field below an element: "tensors[2] (\"x\").shape" */
static const char *gj_sub(char *buf, size_t len, const char *where, const char *field)
{
	snprintf(buf, len, "%s%s%s", where, where[0] ? "." : "", field);
	return buf;
}

/* ---------------------------------------------------------------- typed getters */

/* gj_keys -- every key of obj is one of valid; else an error naming the key
 * ("unknown <what> \"k\"<context> (valid: ...)") */
static atm_status gj_keys(const json_t *obj, const char *where, const char *what,
                          const char *context, const char *const *valid)
{
	char list[256], clip[80];
	const char *key = atm_json_unknown_key(obj, valid, list, sizeof list);
	if (!key)
		return ATM_OK;
	return gj_fail(where, "unknown %s \"%s\"%s (valid: %s)", what, gj_clip(key, 60, clip, sizeof clip),
	               context, list);
}

/* gj_need -- obj[key], or an error saying it is missing */
static atm_status gj_need(const json_t *obj, const char *key, const char *where, json_t **out)
{
	*out = json_object_get(obj, key);
	if (!*out)
		return gj_fail(where, "missing required key \"%s\"", key);
	return ATM_OK;
}

/* gj_int -- v as an integer in [lo, hi]; what says so in messages ("a non-negative integer") */
static atm_status gj_int(const json_t *v, const char *where, int64_t lo, int64_t hi,
                         const char *what, int64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return gj_expected(where, what, v);
	*out = json_integer_value(v);
	return ATM_OK;
}

/* gj_name -- v as a non-empty string of at most GJ_MAX_NAME bytes */
static atm_status gj_name(const json_t *v, const char *where, const char **out)
{
	if (!json_is_string(v) || json_string_length(v) == 0)
		return gj_expected(where, "a non-empty string", v);
	if (json_string_length(v) > GJ_MAX_NAME)
		return gj_fail(where, "the name is %zu bytes long; at most %d are allowed",
		               json_string_length(v), GJ_MAX_NAME);
	*out = json_string_value(v);
	return ATM_OK;
}

/* ---------------------------------------------------------------- reader */

/* A file id and the position of the element that carries it. */
typedef struct {
	int64_t id;
	int32_t index;
} gj_id;

typedef struct {
	const json_t *params; /* the "parameters" object, or NULL */
	int64_t batch;        /* > 0: overrides parameters.batch */
	bool batch_used;      /* some dimension is "batch" */
	const json_t *nodes;  /* the "nodes" array */
	gj_id *tids;          /* tensor ids sorted by id */
	int32_t n_tensors;
	int32_t *producer;    /* per tensor: index of the node producing it, or -1 */
	int32_t *in, *out;    /* scratch for one node's edges, GJ_MAX_EDGES each */
	int64_t *in_ids, *out_ids;
	atm_graph *g;
} gj_reader;

/* gj_id_cmp -- order by id, then by position */
static int gj_id_cmp(const void *a, const void *b)
{
	const gj_id *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* gj_check_unique -- sort ids; a duplicate is reported at its second occurrence in file order */
static atm_status gj_check_unique(gj_id *ids, int32_t n, const char *array)
{
	int32_t first = -1, second = -1;
	int64_t dup = 0;
	qsort(ids, (size_t)n, sizeof *ids, gj_id_cmp);
	for (int32_t i = 1; i < n; i++)
		if (ids[i].id == ids[i - 1].id && (second < 0 || ids[i].index < second)) {
			first = ids[i - 1].index;
			second = ids[i].index;
			dup = ids[i].id;
		}
	if (second >= 0)
		return atm_err(ATM_E_INPUT, "%s[%d].id: duplicate id %lld (%s[%d] has it too)", array,
		               second, (long long)dup, array, first);
	return ATM_OK;
}

/* gj_tensor_index -- the position of the tensor with file id, or -1 */
static int32_t gj_tensor_index(const gj_reader *r, int64_t id)
{
	int32_t lo = 0, hi = r->n_tensors;
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		if (r->tids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->n_tensors && r->tids[lo].id == id ? r->tids[lo].index : -1;
}

/* gj_symbol -- the value of a parameter named in a shape */
static atm_status gj_symbol(gj_reader *r, const char *sym, const char *where, int64_t *out)
{
	const json_t *p = r->params ? json_object_get(r->params, sym) : NULL;
	char clip[80];
	if (strcmp(sym, "batch") == 0) {
		r->batch_used = true;
		if (r->batch > 0) {
			*out = r->batch;
			return ATM_OK;
		}
	}
	if (p) {
		*out = json_integer_value(p); /* checked when the parameters were read */
		return ATM_OK;
	}
	char known[512];
	size_t used = 0;
	const char *key;
	json_t *val;
	known[0] = '\0';
	if (r->params)
		json_object_foreach((json_t *)r->params, key, val)
			if (used < sizeof known)
				used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
				                         used ? ", " : "", key);
	if (r->batch > 0 && !json_object_get(r->params, "batch") && used < sizeof known)
		snprintf(known + used, sizeof known - used, "%sbatch", used ? ", " : "");
	if (!known[0])
		return gj_fail(where, "unknown parameter \"%s\": the file defines no \"parameters\"",
		               gj_clip(sym, 60, clip, sizeof clip));
	return gj_fail(where, "unknown parameter \"%s\" (parameters: %s)",
	               gj_clip(sym, 60, clip, sizeof clip), known);
}

/* gj_read_params -- check "parameters": an object of positive integers */
static atm_status gj_read_params(gj_reader *r, const json_t *root)
{
	const json_t *p = json_object_get(root, "parameters");
	const char *key;
	json_t *val;
	if (!p)
		return ATM_OK;
	if (!json_is_object(p))
		return gj_expected("parameters", "an object such as {\"batch\": 16}", p);
	json_object_foreach((json_t *)p, key, val) {
		char where[GJ_PATH], clip[80];
		int64_t x;
		snprintf(where, sizeof where, "parameters.%s", gj_clip(key, 60, clip, sizeof clip));
		if (!key[0])
			return gj_fail("parameters", "a parameter needs a non-empty name");
		atm_status rc = gj_int(val, where, 1, ATM_MAX_DIM, "a positive integer", &x);
		if (rc < 0)
			return rc;
	}
	r->params = p;
	return ATM_OK;
}

/* gj_read_dims -- the dims of a "shape" array */
static atm_status gj_read_dims(gj_reader *r, const json_t *shape, const char *label, int *ndim,
                               int64_t *dims)
{
	char where[GJ_PATH];
	gj_sub(where, sizeof where, label, "shape");
	if (!json_is_array(shape))
		return gj_expected(where, "an array of dimensions such as [\"batch\", 784]", shape);
	size_t n = json_array_size(shape);
	if (n < 1 || n > ATM_MAX_DIMS)
		return gj_fail(where, "a shape has 1 to %d dimensions, got %zu%s", ATM_MAX_DIMS, n,
		               n ? "" : " (write [1] for a scalar)");
	for (size_t d = 0; d < n; d++) {
		const json_t *v = json_array_get(shape, d);
		char w[GJ_PATH + 32];
		snprintf(w, sizeof w, "%s[%zu]", where, d);
		if (json_is_string(v)) {
			atm_status rc = gj_symbol(r, json_string_value(v), w, &dims[d]);
			if (rc < 0)
				return rc;
		} else if (json_is_integer(v) && json_integer_value(v) > ATM_MAX_DIM) {
			return gj_fail(w, "dimension %lld is larger than the limit %lld (2^40)",
			               (long long)json_integer_value(v), (long long)ATM_MAX_DIM);
		} else if (json_is_integer(v) && json_integer_value(v) >= 1) {
			dims[d] = json_integer_value(v);
		} else {
			char desc[96];
			return gj_fail(w, "dimension must be a positive integer or a parameter name, got %s",
			               gj_describe(v, desc, sizeof desc));
		}
	}
	*ndim = (int)n;
	return ATM_OK;
}

/* gj_read_locations -- "locations": a non-empty array of "fast" and "slow" */
static atm_status gj_read_locations(const json_t *v, const char *label, unsigned *out)
{
	char where[GJ_PATH];
	unsigned loc = 0;
	gj_sub(where, sizeof where, label, "locations");
	if (!json_is_array(v))
		return gj_expected(where, "an array such as [\"fast\", \"slow\"]", v);
	if (json_array_size(v) == 0)
		return gj_fail(where, "a tensor needs at least one location (fast, slow)");
	for (size_t i = 0; i < json_array_size(v); i++) {
		const json_t *s = json_array_get(v, i);
		char w[GJ_PATH + 32], clip[80];
		unsigned bit;
		snprintf(w, sizeof w, "%s[%zu]", where, i);
		if (!json_is_string(s))
			return gj_expected(w, "\"fast\" or \"slow\"", s);
		if (strcmp(json_string_value(s), "fast") == 0)
			bit = ATM_LOC_FAST;
		else if (strcmp(json_string_value(s), "slow") == 0)
			bit = ATM_LOC_SLOW;
		else
			return gj_fail(w, "unknown location \"%s\" (valid: fast, slow)",
			               gj_clip(json_string_value(s), 60, clip, sizeof clip));
		if (loc & bit)
			return gj_fail(w, "\"%s\" is listed twice", json_string_value(s));
		loc |= bit;
	}
	*out = loc;
	return ATM_OK;
}

/* gj_shape_text -- "[16, 3, 224, 224] f32" for messages */
static const char *gj_shape_text(int ndim, const int64_t *dims, atm_dtype dt, char *buf,
                                 size_t len)
{
	atm_format_dims(ndim, dims, buf, len);
	size_t used = strlen(buf);
	if (used + 1 < len)
		snprintf(buf + used, len - used, " %s", atm_dtype_name(dt));
	return buf;
}

/* gj_read_tensor -- tensors[i]: check it and add it to the graph */
static atm_status gj_read_tensor(gj_reader *r, const json_t *t, int32_t i)
{
	char label[GJ_LABEL], where[GJ_PATH], clip[80];
	json_t *v;
	const char *name;
	int64_t id, dims[ATM_MAX_DIMS];
	int ndim = 0;
	atm_dtype dtype = ATM_F32;
	atm_tensor_kind kind;
	unsigned loc = ATM_LOC_ANY;
	int32_t got;
	atm_status rc;

	snprintf(label, sizeof label, "tensors[%d]", i);
	if (!json_is_object(t))
		return gj_expected(label, "an object", t);
	if ((rc = gj_keys(t, label, "key", "", gj_tensor_keys)) < 0)
		return rc;
	if ((rc = gj_need(t, "id", label, &v)) < 0 ||
	    (rc = gj_int(v, gj_sub(where, sizeof where, label, "id"), 0, INT64_MAX,
	                 "a non-negative integer", &id)) < 0)
		return rc;
	if ((rc = gj_need(t, "name", label, &v)) < 0 ||
	    (rc = gj_name(v, gj_sub(where, sizeof where, label, "name"), &name)) < 0)
		return rc;
	snprintf(label, sizeof label, "tensors[%d] (\"%s\")", i, gj_clip(name, 64, clip, sizeof clip));

	if ((rc = gj_need(t, "shape", label, &v)) < 0 ||
	    (rc = gj_read_dims(r, v, label, &ndim, dims)) < 0)
		return rc;
	if ((v = json_object_get(t, "dtype"))) {
		gj_sub(where, sizeof where, label, "dtype");
		if (!json_is_string(v))
			return gj_expected(where, "a dtype name such as \"f32\"", v);
		if ((rc = atm_dtype_from_name(json_string_value(v), &dtype)) < 0)
			return atm_err_prefix(rc, "%s: ", where);
	}
	if ((rc = gj_need(t, "kind", label, &v)) < 0)
		return rc;
	gj_sub(where, sizeof where, label, "kind");
	if (!json_is_string(v))
		return gj_expected(where, "a kind name such as \"activation\"", v);
	if ((rc = atm_kind_from_name(json_string_value(v), &kind)) < 0)
		return atm_err_prefix(rc, "%s: ", where);
	if ((v = json_object_get(t, "locations")) && (rc = gj_read_locations(v, label, &loc)) < 0)
		return rc;

	/* checked here as well as in the graph, to name the shape in the message */
	int64_t elems = 1;
	for (int d = 0; d < ndim; d++) {
		if (elems > ATM_MAX_BYTES / dims[d] / atm_dtype_bytes(dtype)) {
			char s[192];
			return gj_fail(label, "the tensor is too large: %s is more than 2^62 bytes",
			               gj_shape_text(ndim, dims, dtype, s, sizeof s));
		}
		elems *= dims[d];
	}
	if ((rc = atm_graph_add_tensor(r->g, name, dtype, ndim, dims, kind, loc, &got)) < 0)
		return atm_err_prefix(rc, "%s: ", label);
	/* a leading "batch" is what lets the graph be saved and loaded at another batch */
	v = json_array_get(json_object_get(t, "shape"), 0);
	if (json_is_string(v) && strcmp(json_string_value(v), "batch") == 0 &&
	    (rc = atm_graph_mark_batched(r->g, got)) < 0)
		return atm_err_prefix(rc, "%s: ", label);
	r->tids[i].id = id;
	r->tids[i].index = got;
	return ATM_OK;
}

/* gj_pair -- a kernel or stride: n (both) or [h, w], each positive */
static atm_status gj_pair(const json_t *v, const char *where, int32_t out[2])
{
	int64_t x;
	if (json_is_integer(v)) {
		if (gj_int(v, where, 1, GJ_MAX_WINDOW,
		           "a positive integer or [h, w] of positive integers", &x) < 0)
			return ATM_E_INPUT;
		out[0] = out[1] = (int32_t)x;
		return ATM_OK;
	}
	if (!json_is_array(v) || json_array_size(v) != 2)
		return gj_expected(where, "a positive integer or [h, w] of positive integers", v);
	for (size_t i = 0; i < 2; i++) {
		char w[GJ_PATH + 64];
		snprintf(w, sizeof w, "%s[%zu]", where, i);
		if (gj_int(json_array_get(v, i), w, 1, GJ_MAX_WINDOW, "a positive integer", &x) < 0)
			return ATM_E_INPUT;
		out[i] = (int32_t)x;
	}
	return ATM_OK;
}

/* gj_pad -- padding: n (all sides), [h, w] (symmetric) or [top, left, bottom, right] */
static atm_status gj_pad(const json_t *v, const char *where, int32_t out[4])
{
	const char *what = "a non-negative integer, [h, w] or [top, left, bottom, right]";
	int64_t x;
	if (json_is_integer(v)) {
		if (gj_int(v, where, 0, GJ_MAX_WINDOW, "a non-negative integer", &x) < 0)
			return ATM_E_INPUT;
		out[0] = out[1] = out[2] = out[3] = (int32_t)x;
		return ATM_OK;
	}
	if (!json_is_array(v) || (json_array_size(v) != 2 && json_array_size(v) != 4))
		return gj_expected(where, what, v);
	size_t n = json_array_size(v);
	for (size_t i = 0; i < n; i++) {
		char w[GJ_PATH + 64];
		snprintf(w, sizeof w, "%s[%zu]", where, i);
		if (gj_int(json_array_get(v, i), w, 0, GJ_MAX_WINDOW, "a non-negative integer", &x) < 0)
			return ATM_E_INPUT;
		out[i] = (int32_t)x;
	}
	if (n == 2) {
		out[2] = out[0];
		out[3] = out[1];
	}
	return ATM_OK;
}

/* gj_float -- a finite number that fits a float, at least lo (strictly above it if open) */
static atm_status gj_float(const json_t *v, const char *where, double lo, bool open,
                           const char *what, float *out)
{
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return gj_expected(where, what, v);
	/* checked as the float it becomes: the writer's shortest spelling of FLT_MAX,
	 * 3.4028235e+38, is a double just above FLT_MAX that still rounds to it */
	float f = (float)json_number_value(v);
	if (!isfinite(f) || f < lo || (open && f <= lo))
		return gj_expected(where, what, v);
	*out = f;
	return ATM_OK;
}

/* gj_attr_values -- the values of attrs object obj (its keys already checked), over a's
 * defaults */
static atm_status gj_attr_values(const json_t *obj, const char *where, atm_attrs *a)
{
	char w[GJ_PATH + 32];
	const json_t *v;
	atm_status rc;

	if ((v = json_object_get(obj, "kernel")) &&
	    (rc = gj_pair(v, gj_sub(w, sizeof w, where, "kernel"), a->kernel)) < 0)
		return rc;
	if ((v = json_object_get(obj, "stride")) &&
	    (rc = gj_pair(v, gj_sub(w, sizeof w, where, "stride"), a->stride)) < 0)
		return rc;
	if ((v = json_object_get(obj, "pad")) &&
	    (rc = gj_pad(v, gj_sub(w, sizeof w, where, "pad"), a->pad)) < 0)
		return rc;
	struct {
		const char *key;
		bool *flag;
	} flags[] = {{"exclude_pad", &a->exclude_pad}, {"trans_a", &a->trans_a},
	             {"trans_b", &a->trans_b},         {"causal", &a->causal},
	             {"tanh", &a->tanh},               {"positions", &a->positions}};
	for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++) {
		if (!(v = json_object_get(obj, flags[f].key)))
			continue;
		if (!json_is_boolean(v))
			return gj_expected(gj_sub(w, sizeof w, where, flags[f].key), "true or false", v);
		*flags[f].flag = json_is_true(v);
	}
	if ((v = json_object_get(obj, "scale")) &&
	    (rc = gj_float(v, gj_sub(w, sizeof w, where, "scale"), -FLT_MAX, false,
	                   "a finite number", &a->scale)) < 0)
		return rc;
	if ((v = json_object_get(obj, "perm"))) {
		gj_sub(w, sizeof w, where, "perm");
		if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > ATM_MAX_DIMS)
			return gj_expected(w, "an array of 1 to 6 axes", v);
		a->n_perm = (int32_t)json_array_size(v);
		for (size_t i = 0; i < json_array_size(v); i++) {
			char wi[GJ_PATH + 64];
			int64_t x;
			snprintf(wi, sizeof wi, "%s[%zu]", w, i);
			if ((rc = gj_int(json_array_get(v, i), wi, 0, ATM_MAX_DIMS - 1, "an axis from 0 to 5",
			                 &x)) < 0)
				return rc;
			a->perm[i] = (int32_t)x;
		}
	}
	if ((v = json_object_get(obj, "axis"))) {
		int64_t x;
		if ((rc = gj_int(v, gj_sub(w, sizeof w, where, "axis"), 0, ATM_MAX_DIMS - 1,
		                 "an axis from 0 to 5", &x)) < 0)
			return rc;
		a->axis = (int32_t)x;
	}
	if ((v = json_object_get(obj, "epsilon")) &&
	    (rc = gj_float(v, gj_sub(w, sizeof w, where, "epsilon"), 0, true, "a positive number",
	                   &a->epsilon)) < 0)
		return rc;
	if ((v = json_object_get(obj, "lr")) &&
	    (rc = gj_float(v, gj_sub(w, sizeof w, where, "lr"), 0, false, "a number >= 0",
	                   &a->lr)) < 0)
		return rc;
	if ((v = json_object_get(obj, "theta")) &&
	    (rc = gj_float(v, gj_sub(w, sizeof w, where, "theta"), 1, true, "a number above 1",
	                   &a->theta)) < 0)
		return rc;
	struct {
		const char *key;
		float *to;
	} factors[] = {{"momentum", &a->momentum}, {"beta1", &a->beta1}, {"beta2", &a->beta2},
	               {"weight_decay", &a->weight_decay}};
	for (size_t f = 0; f < sizeof factors / sizeof factors[0]; f++)
		if ((v = json_object_get(obj, factors[f].key)) &&
		    (rc = gj_float(v, gj_sub(w, sizeof w, where, factors[f].key), 0, false,
		                   "a number >= 0", factors[f].to)) < 0)
			return rc;
	if ((v = json_object_get(obj, "ranks"))) {
		int64_t x;
		if ((rc = gj_int(v, gj_sub(w, sizeof w, where, "ranks"), 1, 1 << 20,
		                 "a number of ranks from 1 to 1048576", &x)) < 0)
			return rc;
		a->ranks = (int32_t)x;
	}
	if ((v = json_object_get(obj, "groups"))) {
		int64_t x;
		if ((rc = gj_int(v, gj_sub(w, sizeof w, where, "groups"), 1, INT32_MAX,
		                 "a positive integer", &x)) < 0)
			return rc;
		a->groups = (int32_t)x;
	}
	return ATM_OK;
}


/* gj_read_attrs -- "attrs" of a node: only the ones its op takes, with defaults */
static atm_status gj_read_attrs(const json_t *obj, atm_op op, const char *label, atm_attrs *a)
{
	const char *valid[ATM_N_ATTRS + 1];
	const atm_op_desc *d = atm_op_describe(op);
	char where[GJ_PATH];
	atm_status rc;

	memset(a, 0, sizeof *a);
	a->stride[0] = a->stride[1] = 1;
	a->axis = GJ_DEFAULT_AXIS;
	a->epsilon = GJ_DEFAULT_EPSILON;
	a->lr = GJ_DEFAULT_LR;
	a->theta = GJ_DEFAULT_THETA;
	a->beta1 = GJ_DEFAULT_BETA1;
	a->beta2 = GJ_DEFAULT_BETA2;
	a->scale = 1.0f;
	a->ranks = d && (d->attrs & ATM_ATTR_RANKS) ? 1 : 0; /* 0 elsewhere: digests stay as they were */
	gj_sub(where, sizeof where, label, "attrs");
	if (obj && !json_is_object(obj))
		return gj_expected(where, "an object", obj);
	gj_op_attrs(op, valid);
	if (obj && !valid[0] && json_object_size(obj)) {
		char clip[80];
		return gj_fail(where, "op %s takes no attrs, got \"%s\"", atm_op_name(op),
		               gj_clip(json_object_iter_key(json_object_iter((json_t *)obj)), 60, clip,
		                       sizeof clip));
	}
	if (obj) {
		char context[64];
		snprintf(context, sizeof context, " for op %s", atm_op_name(op));
		if ((rc = gj_keys(obj, where, "attr", context, valid)) < 0)
			return rc;
	}
	if (d && (d->attrs & ATM_ATTR_KERNEL) && !(obj && json_object_get(obj, "kernel")))
		return gj_fail(where, "op %s needs \"kernel\": [h, w]", atm_op_name(op));
	if (d && (d->attrs & ATM_ATTR_PERM) && !(obj && json_object_get(obj, "perm")))
		return gj_fail(where, "op %s needs \"perm\": [axes]", atm_op_name(op));
	return obj ? gj_attr_values(obj, where, a) : ATM_OK;
}

/* gj_read_refs -- an "inputs" or "outputs" array of tensor ids, as graph positions */
static atm_status gj_read_refs(const gj_reader *r, const json_t *arr, const char *where,
                               int32_t *ids, int *n)
{
	if (!json_is_array(arr))
		return gj_expected(where, "an array of tensor ids", arr);
	if (json_array_size(arr) > GJ_MAX_EDGES)
		return gj_fail(where, "%zu tensors; a node takes at most %d", json_array_size(arr),
		               GJ_MAX_EDGES);
	for (size_t k = 0; k < json_array_size(arr); k++) {
		char w[GJ_PATH + 32];
		int64_t id = 0;
		atm_status rc;
		snprintf(w, sizeof w, "%s[%zu]", where, k);
		if ((rc = gj_int(json_array_get(arr, k), w, 0, INT64_MAX, "a tensor id", &id)) < 0)
			return rc;
		if ((ids[k] = gj_tensor_index(r, id)) < 0)
			return gj_fail(w, "no tensor has id %lld", (long long)id);
	}
	*n = (int)json_array_size(arr);
	return ATM_OK;
}

/* gj_exists_before_step -- kinds a node may read without a producer (atm_graph_validate's rule) */
static bool gj_exists_before_step(const atm_tensor *t)
{
	return atm_tensor_is_persistent(t) && t->kind != ATM_KIND_OUTPUT;
}

/* gj_later_producer -- the first node after i whose outputs name tensor t, or -1 */
static int32_t gj_later_producer(const gj_reader *r, int32_t i, int32_t t)
{
	for (size_t j = (size_t)i + 1; j < json_array_size(r->nodes); j++) {
		const json_t *outs = json_object_get(json_array_get(r->nodes, j), "outputs");
		for (size_t k = 0; k < json_array_size(outs); k++) {
			const json_t *v = json_array_get(outs, k);
			if (json_is_integer(v) && gj_tensor_index(r, json_integer_value(v)) == t)
				return (int32_t)j;
		}
	}
	return -1;
}

/* gj_node_label -- "nodes[5] (\"fc2\")" from the JSON (it may be malformed) */
static const char *gj_node_label(const json_t *nodes, int32_t j, char *buf, size_t len)
{
	const json_t *name = json_object_get(json_array_get(nodes, (size_t)j), "name");
	char clip[80];
	if (json_is_string(name))
		snprintf(buf, len, "nodes[%d] (\"%s\")", j,
		         gj_clip(json_string_value(name), 64, clip, sizeof clip));
	else
		snprintf(buf, len, "nodes[%d]", j);
	return buf;
}

/* gj_check_flow -- node i reads only what exists and produces what nobody produced yet.
 * atm_graph_validate checks the same; here the message speaks the file's ids. */
static atm_status gj_check_flow(gj_reader *r, int32_t i, const char *label, const int64_t *in_ids,
                                const int32_t *in, int n_in, const int64_t *out_ids,
                                const int32_t *out, int n_out)
{
	char other[GJ_LABEL], clip[80];
	for (int k = 0; k < n_in; k++) {
		const atm_tensor *t = atm_graph_tensor(r->g, in[k]);
		if (gj_exists_before_step(t) || r->producer[in[k]] >= 0)
			continue;
		int32_t later = gj_later_producer(r, i, in[k]);
		if (later >= 0)
			return gj_fail(label, "input %lld (\"%s\") is used before it is produced (by %s)",
			               (long long)in_ids[k], gj_clip(t->name, 64, clip, sizeof clip),
			               gj_node_label(r->nodes, later, other, sizeof other));
		return gj_fail(label, "input %lld (\"%s\", kind %s) is never produced by any node; only "
		               "input, param, constant and optimizer_state tensors exist before the step",
		               (long long)in_ids[k], gj_clip(t->name, 64, clip, sizeof clip),
		               atm_kind_name(t->kind));
	}
	for (int k = 0; k < n_out; k++) {
		const atm_tensor *t = atm_graph_tensor(r->g, out[k]);
		int32_t p = r->producer[out[k]];
		if (p == i)
			return gj_fail(label, "output %lld (\"%s\") is listed twice", (long long)out_ids[k],
			               gj_clip(t->name, 64, clip, sizeof clip));
		if (p >= 0)
			return gj_fail(label, "output %lld (\"%s\") is already produced by %s",
			               (long long)out_ids[k], gj_clip(t->name, 64, clip, sizeof clip),
			               gj_node_label(r->nodes, p, other, sizeof other));
		if (gj_exists_before_step(t))
			return gj_fail(label, "output %lld (\"%s\") is a %s tensor, which exists before the "
			               "step; no node may produce it", (long long)out_ids[k],
			               gj_clip(t->name, 64, clip, sizeof clip), atm_kind_name(t->kind));
		r->producer[out[k]] = i;
	}
	return ATM_OK;
}

/* gj_read_node -- nodes[i]: check it and append it to the schedule */
static atm_status gj_read_node(gj_reader *r, const json_t *nd, int32_t i, gj_id *nid)
{
	char label[GJ_LABEL], where[GJ_PATH], clip[80];
	int32_t *in = r->in, *out = r->out;
	int64_t *in_ids = r->in_ids, *out_ids = r->out_ids;
	int n_in = 0, n_out = 0;
	json_t *v;
	const char *name;
	int64_t id, ws = 0;
	atm_op op;
	atm_attrs attrs;
	int32_t got;
	atm_status rc;

	snprintf(label, sizeof label, "nodes[%d]", i);
	if (!json_is_object(nd))
		return gj_expected(label, "an object", nd);
	if ((rc = gj_keys(nd, label, "key", "", gj_node_keys)) < 0)
		return rc;
	if ((rc = gj_need(nd, "id", label, &v)) < 0 ||
	    (rc = gj_int(v, gj_sub(where, sizeof where, label, "id"), 0, INT64_MAX,
	                 "a non-negative integer", &id)) < 0)
		return rc;
	if ((rc = gj_need(nd, "name", label, &v)) < 0 ||
	    (rc = gj_name(v, gj_sub(where, sizeof where, label, "name"), &name)) < 0)
		return rc;
	snprintf(label, sizeof label, "nodes[%d] (\"%s\")", i, gj_clip(name, 64, clip, sizeof clip));

	if ((rc = gj_need(nd, "op", label, &v)) < 0)
		return rc;
	gj_sub(where, sizeof where, label, "op");
	if (!json_is_string(v))
		return gj_expected(where, "an op name such as \"conv_fwd\"", v);
	if ((rc = atm_op_from_name(json_string_value(v), &op)) < 0)
		return atm_err_prefix(rc, "%s: ", where);
	if ((rc = gj_need(nd, "inputs", label, &v)) < 0 ||
	    (rc = gj_read_refs(r, v, gj_sub(where, sizeof where, label, "inputs"), in, &n_in)) < 0)
		return rc;
	for (int k = 0; k < n_in; k++)
		in_ids[k] = json_integer_value(json_array_get(v, (size_t)k));
	if ((rc = gj_need(nd, "outputs", label, &v)) < 0 ||
	    (rc = gj_read_refs(r, v, gj_sub(where, sizeof where, label, "outputs"), out, &n_out)) < 0)
		return rc;
	for (int k = 0; k < n_out; k++)
		out_ids[k] = json_integer_value(json_array_get(v, (size_t)k));
	if ((rc = gj_read_attrs(json_object_get(nd, "attrs"), op, label, &attrs)) < 0)
		return rc;
	if ((v = json_object_get(nd, "workspace_bytes")) &&
	    (rc = gj_int(v, gj_sub(where, sizeof where, label, "workspace_bytes"), 0, ATM_MAX_BYTES,
	                 "a byte count >= 0", &ws)) < 0)
		return rc;

	if ((rc = atm_graph_add_node(r->g, name, op, &attrs, n_in, in, n_out, out, &got)) < 0)
		return atm_err_prefix(rc, "%s: ", label);
	if (ws && (rc = atm_graph_set_workspace(r->g, got, ws)) < 0)
		return atm_err_prefix(rc, "%s: ", label);
	if ((rc = gj_check_flow(r, i, label, in_ids, in, n_in, out_ids, out, n_out)) < 0)
		return rc;
	nid->id = id;
	nid->index = i;
	return ATM_OK;
}

/* gj_default_name -- the file's stem ("nets/mlp.json" -> "mlp") when the file names no graph */
static void gj_default_name(const char *origin, char *buf, size_t len)
{
	const char *base = strrchr(origin, '/');
	base = base ? base + 1 : origin;
	snprintf(buf, len, "%s", base);
	char *dot = strrchr(buf, '.');
	if (dot && dot != buf)
		*dot = '\0';
	if (!buf[0])
		snprintf(buf, len, "graph");
}

/* gj_is_blank -- only white space */
static bool gj_is_blank(const char *data, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!strchr(" \t\r\n", data[i]) || !data[i])
			return false;
	return true;
}

/* gj_read -- the graph described by root; file (may be "") names it when the file does not */
static atm_status gj_read(gj_reader *r, const json_t *root, const char *file)
{
	json_t *v, *tensors, *nodes;
	char gname[GJ_MAX_NAME + 1];
	gj_id *nids = NULL;
	atm_status rc;

	if (!json_is_object(root))
		return gj_expected("", "a JSON object at the top level", root);
	/* format first: a file of another kind should say so, not list unknown keys */
	if (!(v = json_object_get(root, "format")))
		return gj_fail("", "missing \"format\": \"" GJ_FORMAT "\"; is this an autotm graph file?");
	if (!json_is_string(v) || strcmp(json_string_value(v), GJ_FORMAT) != 0) {
		char d[96];
		return gj_fail("format", "expected \"" GJ_FORMAT "\", got %s; this is not an autotm "
		               "graph file", gj_describe(v, d, sizeof d));
	}
	if (!(v = json_object_get(root, "version")))
		return gj_fail("", "missing \"version\": %d", GJ_VERSION);
	if (!json_is_integer(v))
		return gj_expected("version", "the integer 1", v);
	if (json_integer_value(v) != GJ_VERSION)
		return gj_fail("version", "unsupported version %lld; this autotm reads version %d",
		               (long long)json_integer_value(v), GJ_VERSION);
	if ((rc = gj_keys(root, "", "top-level key", "", gj_top_keys)) < 0)
		return rc;
	if ((v = json_object_get(root, "name"))) {
		const char *s;
		if ((rc = gj_name(v, "name", &s)) < 0)
			return rc;
		snprintf(gname, sizeof gname, "%s", s);
	} else {
		gj_default_name(file, gname, sizeof gname);
	}
	if ((rc = gj_read_params(r, root)) < 0)
		return rc;
	if ((rc = gj_need(root, "tensors", "", &tensors)) < 0 ||
	    (rc = gj_need(root, "nodes", "", &nodes)) < 0)
		return rc;
	if (!json_is_array(tensors))
		return gj_expected("tensors", "an array of tensor objects", tensors);
	if (!json_is_array(nodes))
		return gj_expected("nodes", "an array of node objects", nodes);
	if (json_array_size(tensors) > GJ_MAX_ELEMS || json_array_size(nodes) > GJ_MAX_ELEMS)
		return gj_fail(json_array_size(tensors) > GJ_MAX_ELEMS ? "tensors" : "nodes",
		               "%zu elements; at most %d are supported",
		               json_array_size(json_array_size(tensors) > GJ_MAX_ELEMS ? tensors : nodes),
		               GJ_MAX_ELEMS);
	if (json_array_size(nodes) == 0)
		return gj_fail("nodes", "the graph has no nodes; it needs at least one");
	r->nodes = nodes;

	if ((rc = atm_graph_new(&r->g, gname)) < 0)
		return rc;
	r->n_tensors = (int32_t)json_array_size(tensors);
	r->tids = malloc((json_array_size(tensors) + 1) * sizeof *r->tids);
	r->producer = malloc((json_array_size(tensors) + 1) * sizeof *r->producer);
	nids = malloc(json_array_size(nodes) * sizeof *nids);
	r->in = malloc(GJ_MAX_EDGES * sizeof *r->in);
	r->out = malloc(GJ_MAX_EDGES * sizeof *r->out);
	r->in_ids = malloc(GJ_MAX_EDGES * sizeof *r->in_ids);
	r->out_ids = malloc(GJ_MAX_EDGES * sizeof *r->out_ids);
	if (!r->tids || !r->producer || !nids || !r->in || !r->out || !r->in_ids || !r->out_ids) {
		rc = atm_err(ATM_E_NOMEM, "out of memory reading %zu tensors and %zu nodes",
		             json_array_size(tensors), json_array_size(nodes));
		goto fail;
	}
	for (int32_t i = 0; i < r->n_tensors; i++) {
		r->producer[i] = -1;
		if ((rc = gj_read_tensor(r, json_array_get(tensors, (size_t)i), i)) < 0)
			goto fail;
	}
	if (r->batch > 0 && !r->batch_used) {
		rc = atm_err(ATM_E_USAGE, "batch %lld was requested, but no dimension of this graph is "
		             "\"batch\"; its sizes are fixed", (long long)r->batch);
		goto fail;
	}
	if ((rc = gj_check_unique(r->tids, r->n_tensors, "tensors")) < 0)
		goto fail;
	for (int32_t i = 0; i < (int32_t)json_array_size(nodes); i++)
		if ((rc = gj_read_node(r, json_array_get(nodes, (size_t)i), i, &nids[i])) < 0)
			goto fail;
	if ((rc = gj_check_unique(nids, (int32_t)json_array_size(nodes), "nodes")) < 0)
		goto fail;
	for (int32_t i = 0; i < r->n_tensors; i++) {
		const atm_tensor *t = atm_graph_tensor(r->g, i);
		if (!gj_exists_before_step(t) && r->producer[i] < 0) {
			char clip[80];
			rc = gj_fail("", "tensors[%d] (\"%s\"): no node produces this %s tensor", i,
			             gj_clip(t->name, 64, clip, sizeof clip), atm_kind_name(t->kind));
			goto fail;
		}
	}
	rc = atm_graph_validate(r->g);
fail:
	free(nids);
	return rc;
}

/* atm_graph_load_buffer -- parse, check and build; every message starts with origin */
atm_status atm_graph_load_buffer(atm_graph **g, const char *data, size_t len, const char *origin,
                                 const atm_graph_load_opts *opts)
{
	gj_reader r;
	json_t *root = NULL;
	json_error_t jerr;
	atm_status rc;

	if (!g)
		return atm_err(ATM_E_USAGE, "atm_graph_load_buffer: g is NULL");
	*g = NULL;
	const char *file = origin ? origin : "";
	if (!origin || !*origin)
		origin = "<memory>";
	if (!data && len)
		return atm_err(ATM_E_USAGE, "%s: data is NULL but len is %zu", origin, len);
	if (opts && opts->batch > ATM_MAX_DIM)
		return atm_err(ATM_E_USAGE, "%s: batch %lld is larger than the limit %lld", origin,
		               (long long)opts->batch, (long long)ATM_MAX_DIM);
	memset(&r, 0, sizeof r);
	r.batch = opts && opts->batch > 0 ? opts->batch : 0;

	if (gj_is_blank(data, len)) {
		rc = atm_err(ATM_E_INPUT, "the file is empty");
		goto fail;
	}
	root = json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	/* jansson fails with no message at all when its first allocation fails */
	if (!root && (json_error_code(&jerr) == json_error_out_of_memory || !jerr.text[0])) {
		rc = atm_err(ATM_E_NOMEM, "out of memory reading the graph");
		goto fail;
	}
	if (!root) {
		if (jerr.line > 0)
			rc = atm_err(ATM_E_INPUT, "line %d column %d: JSON syntax error: %s", jerr.line,
			             jerr.column, jerr.text);
		else
			rc = atm_err(ATM_E_INPUT, "JSON syntax error: %s", jerr.text);
		goto fail;
	}
	if ((rc = gj_read(&r, root, file)) < 0)
		goto fail;
	*g = r.g;
	r.g = NULL;
fail:
	free(r.out_ids);
	free(r.in_ids);
	free(r.out);
	free(r.in);
	free(r.producer);
	free(r.tids);
	atm_graph_destroy(r.g);
	json_decref(root);
	if (rc < 0)
		atm_err_prefix(rc, "%s: ", origin);
	return rc;
}

/* atm_graph_load -- read the file, then load it with its path as the origin */
atm_status atm_graph_load(atm_graph **g, const char *path, const atm_graph_load_opts *opts)
{
	char *data = NULL;
	size_t len = 0;
	atm_status rc;
	if (!g || !path)
		return atm_err(ATM_E_USAGE, "atm_graph_load: g and path must not be NULL");
	*g = NULL;
	if ((rc = atm_read_file_max(path, ATM_GRAPH_FILE_MAX_BYTES, "graph file", &data, &len)) < 0)
		return rc;
	rc = atm_graph_load_buffer(g, data, len, path, opts);
	free(data);
	return rc;
}

/* ---------------------------------------------------------------- writer */

/* Every element on one line; 9 significant digits: every float the writer emits was made
 * exact at that precision */
#define GJ_DUMP (JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9))

/* gj_ints -- a JSON array of n integers */
static json_t *gj_ints(const int32_t *v, int n)
{
	json_t *a = json_array();
	for (int i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_integer(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* gj_attrs_json -- the attrs node's op takes, with a stride of 0 written as the 1 it means */
static json_t *gj_attrs_json(const atm_node *n, bool *ok)
{
	const atm_attrs *a = &n->attrs;
	const char *valid[ATM_N_ATTRS + 1];
	int32_t stride[2] = {a->stride[0] ? a->stride[0] : 1, a->stride[1] ? a->stride[1] : 1};
	json_t *o = json_object();
	if (!o) {
		*ok = false;
		return NULL;
	}
	gj_op_attrs(n->op, valid);
	for (int i = 0; valid[i]; i++) {
		const char *k = valid[i];
		if (strcmp(k, "groups") == 0) { /* only when above 1: ungrouped files stay as they were */
			if (a->groups > 1)
				atm_json_set_new(o, k, json_integer(a->groups), ok);
		} else if (strcmp(k, "ranks") == 0) {
			atm_json_set_new(o, k, json_integer(a->ranks), ok);
		} else if (strcmp(k, "kernel") == 0)
			atm_json_set_new(o, k, gj_ints(a->kernel, 2), ok);
		else if (strcmp(k, "stride") == 0)
			atm_json_set_new(o, k, gj_ints(stride, 2), ok);
		else if (strcmp(k, "pad") == 0)
			atm_json_set_new(o, k, gj_ints(a->pad, 4), ok);
		else if (strcmp(k, "exclude_pad") == 0)
			atm_json_set_new(o, k, json_boolean(a->exclude_pad), ok);
		else if (strcmp(k, "axis") == 0)
			atm_json_set_new(o, k, json_integer(a->axis), ok);
		else if (strcmp(k, "epsilon") == 0)
			atm_json_set_new(o, k, atm_json_float(a->epsilon), ok);
		else if (strcmp(k, "lr") == 0)
			atm_json_set_new(o, k, atm_json_float(a->lr), ok);
		else if (strcmp(k, "theta") == 0)
			atm_json_set_new(o, k, atm_json_float(a->theta), ok);
		else if (strcmp(k, "momentum") == 0)
			atm_json_set_new(o, k, atm_json_float(a->momentum), ok);
		else if (strcmp(k, "beta1") == 0)
			atm_json_set_new(o, k, atm_json_float(a->beta1), ok);
		else if (strcmp(k, "beta2") == 0)
			atm_json_set_new(o, k, atm_json_float(a->beta2), ok);
		else if (strcmp(k, "weight_decay") == 0)
			atm_json_set_new(o, k, atm_json_float(a->weight_decay), ok);
		else if (strcmp(k, "scale") == 0)
			atm_json_set_new(o, k, atm_json_float(a->scale ? a->scale : 1.0f), ok);
		else if (strcmp(k, "perm") == 0)
			atm_json_set_new(o, k, gj_ints(a->perm, a->n_perm), ok);
		else /* the flags */
			atm_json_set_new(o, k, json_boolean(strcmp(k, "trans_a") == 0   ? a->trans_a
			                                    : strcmp(k, "trans_b") == 0 ? a->trans_b
			                                    : strcmp(k, "causal") == 0  ? a->causal
			                                    : strcmp(k, "tanh") == 0    ? a->tanh
			                                                                : a->positions),
			                 ok);
	}
	return o;
}

/* gj_tensor_json -- one tensor; a batched first dimension as "batch", locations only when
 * restricted */
static json_t *gj_tensor_json(const atm_tensor *t, int64_t batch)
{
	bool ok = true;
	json_t *o = json_object(), *shape = json_array();
	for (int d = 0; shape && d < t->ndim; d++) {
		bool sym = d == 0 && t->batched && batch > 0 && t->dims[0] == batch;
		if (json_array_append_new(shape, sym ? json_string("batch") : json_integer(t->dims[d])) < 0)
			ok = false;
	}
	if (!o) {
		json_decref(shape);
		return NULL;
	}
	atm_json_set_new(o, "id", json_integer(t->id), &ok);
	atm_json_set_new(o, "name", json_string(t->name), &ok);
	atm_json_set_new(o, "shape", shape, &ok);
	atm_json_set_new(o, "dtype", json_string(atm_dtype_name(t->dtype)), &ok);
	atm_json_set_new(o, "kind", json_string(atm_kind_name(t->kind)), &ok);
	if ((t->locations & ATM_LOC_ANY) != ATM_LOC_ANY) {
		json_t *loc = json_array();
		if (loc && (t->locations & ATM_LOC_FAST))
			json_array_append_new(loc, json_string("fast"));
		if (loc && (t->locations & ATM_LOC_SLOW))
			json_array_append_new(loc, json_string("slow"));
		atm_json_set_new(o, "locations", loc, &ok);
	}
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* gj_node_json -- one node; attrs when its op takes any, workspace when it has one */
static json_t *gj_node_json(const atm_node *n)
{
	bool ok = true;
	json_t *o = json_object();
	if (!o)
		return NULL;
	atm_json_set_new(o, "id", json_integer(n->id), &ok);
	atm_json_set_new(o, "name", json_string(n->name), &ok);
	atm_json_set_new(o, "op", json_string(atm_op_name(n->op)), &ok);
	atm_json_set_new(o, "inputs", gj_ints(n->in, n->n_in), &ok);
	atm_json_set_new(o, "outputs", gj_ints(n->out, n->n_out), &ok);
	const char *valid[ATM_N_ATTRS + 1];
	if (gj_op_attrs(n->op, valid))
		atm_json_set_new(o, "attrs", gj_attrs_json(n, &ok), &ok);
	if (n->workspace_bytes)
		atm_json_set_new(o, "workspace_bytes", json_integer(n->workspace_bytes), &ok);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* atm_graph_dump -- the canonical text: the header keys one per line, then one
 * line per tensor and per node, so a file reads (and diffs) element by element
 * (jansson's own indenting puts every number of every shape on its own line) */
atm_status atm_graph_dump(const atm_graph *g, char **text)
{
	atm_text b = {0};
	atm_status rc = ATM_OK;
	if (!text)
		return atm_err(ATM_E_USAGE, "atm_graph_dump: text is NULL");
	*text = NULL;
	if (!g)
		return atm_err(ATM_E_USAGE, "atm_graph_dump: g is NULL");
	int64_t batch = atm_graph_batch(g);

	atm_text_str(&b, "{\n  \"format\": \"" GJ_FORMAT "\",\n  \"version\": 1,\n  \"name\": ");
	json_t *name = json_string(atm_graph_name(g));
	if (!name) {
		rc = atm_err(ATM_E_INPUT, "the graph's name is not valid UTF-8, which JSON cannot hold");
		goto fail;
	}
	atm_text_json_new(&b, name, GJ_DUMP);
	if (batch > 0)
		atm_text_add(&b, ",\n  \"parameters\": {\"batch\": %lld}", (long long)batch);
	atm_text_str(&b, ",\n  \"tensors\": [");
	for (int32_t i = 0; i < atm_graph_n_tensors(g); i++) {
		json_t *t = gj_tensor_json(atm_graph_tensor(g, i), batch);
		if (!t) {
			rc = atm_err(ATM_E_INPUT, "tensor %d ('%s') cannot be written: out of memory, or a "
			             "name that is not valid UTF-8", i, atm_graph_tensor(g, i)->name);
			goto fail;
		}
		atm_text_str(&b, i ? ",\n    " : "\n    ");
		atm_text_json_new(&b, t, GJ_DUMP);
	}
	atm_text_str(&b, atm_graph_n_tensors(g) ? "\n  ],\n  \"nodes\": [" : "],\n  \"nodes\": [");
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++) {
		json_t *n = gj_node_json(atm_graph_node(g, i));
		if (!n) {
			rc = atm_err(ATM_E_INPUT, "node %d ('%s') cannot be written: out of memory, a name "
			             "that is not valid UTF-8, or an attr that is not a finite number", i,
			             atm_graph_node(g, i)->name);
			goto fail;
		}
		atm_text_str(&b, i ? ",\n    " : "\n    ");
		atm_text_json_new(&b, n, GJ_DUMP);
	}
	atm_text_str(&b, atm_graph_n_nodes(g) ? "\n  ]\n}\n" : "]\n}\n");
	return atm_text_finish(&b, text, NULL, "a graph as JSON");
fail:
	free(b.buf);
	return rc;
}

/* atm_graph_save -- the canonical text, written atomically */
atm_status atm_graph_save(const atm_graph *g, const char *path)
{
	char *text = NULL;
	atm_status rc;
	if (!path)
		return atm_err(ATM_E_USAGE, "atm_graph_save: path is NULL");
	if ((rc = atm_graph_dump(g, &text)) < 0)
		return atm_err_prefix(rc, "cannot save %s: ", path);
	rc = atm_write_file_atomic(path, text, strlen(text));
	free(text);
	return rc;
}
