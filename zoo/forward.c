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

/* What a layer's op reads and which fields it takes beside name, op, its input(s). */
static const struct fw_op {
	const char *name;
	int n_params;          /* names in "params" */
	bool many;             /* "inputs": [...] rather than "input" */
	const char *fields[6]; /* the op's own fields */
} fw_ops[] = {
	{"conv", 2, false, {"out_channels", "kernel", "stride", "pad", "bias", NULL}},
	{"batch_norm", 2, false, {"epsilon", NULL}},
	{"relu", 0, false, {NULL}},
	{"max_pool", 0, false, {"kernel", "stride", "pad", NULL}},
	{"avg_pool", 0, false, {"kernel", "stride", "pad", "count_include_pad", NULL}},
	{"global_avg_pool", 0, false, {NULL}},
	{"flatten", 0, false, {NULL}},
	{"linear", 2, false, {"out_features", NULL}},
	{"add", 0, true, {NULL}},
	{"concat", 0, true, {NULL}},
};
#define FW_N_OPS ((int)(sizeof fw_ops / sizeof fw_ops[0]))

struct fw {
	const char *origin;
	char at[320];   /* the element being read, for messages */
	json_t *ids;    /* layer (and input) name -> tensor id */
	zb *b;
};

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

/* params -- the layer's parameter names, n of them, handed to the builder */
static atm_status params(struct fw *w, json_t *o, int n, bool second)
{
	json_t *p = json_object_get(o, "params");
	const char *names[2] = {NULL, NULL};
	size_t want = (size_t)(second ? n : n - 1);
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

/* layer -- one layer added by the builder; its output id in *y */
static atm_status layer(struct fw *w, json_t *o, int32_t *y)
{
	static const char *const common[] = {"name", "op", "input", "inputs", "params", NULL};
	char ops[200];
	json_t *opv = json_object_get(o, "op");
	const char *name = json_string_value(json_object_get(o, "name"));
	const struct fw_op *d = NULL;
	atm_status rc;
	for (int i = 0; json_is_string(opv) && i < FW_N_OPS; i++)
		if (!strcmp(json_string_value(opv), fw_ops[i].name))
			d = &fw_ops[i];
	if (!d)
		return bad(w, "'op' must be one of %s", op_list(ops, sizeof ops));
	if ((rc = only_fields(w, o, common, d->fields)) < 0)
		return rc;
	if (!d->n_params && json_object_get(o, "params"))
		return bad(w, "a %s layer has no parameters", d->name);
	int32_t x = -1, xs[FW_MAX_INPUTS];
	int n = 0;
	if (d->many) {
		json_t *in = json_object_get(o, "inputs");
		if (json_object_get(o, "input") || !json_is_array(in) || json_array_size(in) < 2 ||
		    json_array_size(in) > FW_MAX_INPUTS)
			return bad(w, "a %s layer takes 'inputs': [2 to %d names]", d->name, FW_MAX_INPUTS);
		if (!strcmp(d->name, "add") && json_array_size(in) != 2)
			return bad(w, "an add layer takes 'inputs': [two names]");
		for (n = 0; n < (int)json_array_size(in); n++)
			if ((rc = ref(w, json_array_get(in, (size_t)n), "each of 'inputs'", &xs[n])) < 0)
				return rc;
	} else {
		if (json_object_get(o, "inputs"))
			return bad(w, "a %s layer takes one 'input'", d->name);
		if ((rc = ref(w, json_object_get(o, "input"), "'input'", &x)) < 0)
			return rc;
	}
	int64_t v = 0;
	int k[2] = {0, 0}, s[2] = {0, 0}, p[2] = {0, 0};
	bool flag = false;
	if (!strcmp(d->name, "conv")) {
		if ((rc = get_int(w, o, "out_channels", 1, FW_MAX_SIZE, -1, &v)) < 0 ||
		    (rc = get_pair(w, o, "kernel", 1, FW_MAX_WINDOW, -1, k)) < 0 ||
		    (rc = get_pair(w, o, "stride", 1, FW_MAX_WINDOW, 1, s)) < 0 ||
		    (rc = get_pair(w, o, "pad", 0, FW_MAX_WINDOW, 0, p)) < 0 ||
		    (rc = get_bool(w, o, "bias", true, &flag)) < 0)
			return rc;
		if (s[0] != s[1])
			return bad(w, "a stride of [%d, %d]: autotm's convolutions take one stride for "
			           "both sides", s[0], s[1]);
		if ((rc = params(w, o, 2, flag)) < 0)
			return rc;
		*y = zb_conv(w->b, name, x, v, k[0], k[1], s[0], p[0], p[1], flag);
	} else if (!strcmp(d->name, "batch_norm")) {
		json_t *e = json_object_get(o, "epsilon");
		if (e && (!json_is_number(e) || !(json_number_value(e) > 0) ||
		          !(json_number_value(e) <= 1)))
			return bad(w, "'epsilon' must be a number above 0 and at most 1");
		if ((rc = params(w, o, 2, true)) < 0)
			return rc;
		*y = zb_bn_eps(w->b, name, x, e ? (float)json_number_value(e) : ZB_EPSILON);
	} else if (!strcmp(d->name, "relu")) {
		*y = zb_relu(w->b, name, x);
	} else if (!strcmp(d->name, "max_pool") || !strcmp(d->name, "avg_pool")) {
		bool avg = d->name[0] == 'a', include = true;
		if ((rc = get_pair(w, o, "kernel", 1, FW_MAX_WINDOW, -1, k)) < 0 ||
		    (rc = get_pair(w, o, "stride", 1, FW_MAX_WINDOW, k[0], s)) < 0 ||
		    (rc = get_pair(w, o, "pad", 0, FW_MAX_WINDOW, 0, p)) < 0 ||
		    (avg && (rc = get_bool(w, o, "count_include_pad", true, &include)) < 0))
			return rc;
		if (k[0] != k[1] || s[0] != s[1] || p[0] != p[1])
			return bad(w, "a %dx%d window, stride [%d, %d], pad [%d, %d]: autotm's pooling "
			           "takes square windows, one stride and one padding", k[0], k[1], s[0],
			           s[1], p[0], p[1]);
		*y = avg ? zb_avgpool(w->b, name, x, k[0], s[0], p[0], !include)
		         : zb_maxpool(w->b, name, x, k[0], s[0], p[0]);
	} else if (!strcmp(d->name, "global_avg_pool")) {
		*y = zb_global_avgpool(w->b, name, x);
	} else if (!strcmp(d->name, "flatten")) {
		*y = x; /* the next linear layer reads every dimension past the batch */
	} else if (!strcmp(d->name, "linear")) {
		if ((rc = get_int(w, o, "out_features", 1, FW_MAX_SIZE, -1, &v)) < 0 ||
		    (rc = params(w, o, 2, true)) < 0)
			return rc;
		*y = zb_fc(w->b, name, x, v);
	} else if (!strcmp(d->name, "add")) {
		*y = zb_add(w->b, name, xs[0], xs[1]);
	} else {
		*y = zb_concat(w->b, name, n, xs);
	}
	if (*y < 0)
		return bad(w, "%s", atm_errmsg());
	return ATM_OK;
}

/* build -- the document's network into b; the logits' id in *logits */
static atm_status build(struct fw *w, json_t *doc, int32_t *logits)
{
	json_t *in = json_object_get(doc, "input"), *layers = json_object_get(doc, "layers");
	static const char *const in_fields[] = {"shape", NULL};
	atm_status rc;
	strcpy(w->at, "input");
	if (!json_is_object(in))
		return bad(w, "must be an object {\"shape\": [channels, height, width]}");
	if ((rc = only_fields(w, in, in_fields, NULL)) < 0)
		return rc;
	json_t *shape = json_object_get(in, "shape");
	int64_t dims[3];
	if (!json_is_array(shape) || json_array_size(shape) != 3)
		return bad(w, "'shape' must be [channels, height, width], without the batch");
	for (int i = 0; i < 3; i++) {
		json_t *d = json_array_get(shape, (size_t)i);
		if (!json_is_integer(d) || json_integer_value(d) < 1 ||
		    json_integer_value(d) > FW_MAX_SIZE)
			return bad(w, "'shape'[%d] must be an integer from 1 to %lld", i,
			           (long long)FW_MAX_SIZE);
		dims[i] = json_integer_value(d);
	}
	int32_t x = zb_image(w->b, dims[0], dims[1], dims[2]);
	if (x < 0)
		return bad(w, "%s", atm_errmsg());
	if (json_object_set_new(w->ids, "input", json_integer(x)) < 0)
		return atm_err(ATM_E_NOMEM, "out of memory reading %s", w->origin);
	w->at[0] = '\0';
	if (!json_is_array(layers) || !json_array_size(layers) ||
	    json_array_size(layers) > FW_MAX_LAYERS)
		return bad(w, "'layers' must be an array of 1 to %d layers", FW_MAX_LAYERS);
	size_t i;
	json_t *o;
	json_array_foreach(layers, i, o) {
		const char *name = json_string_value(json_object_get(o, "name"));
		snprintf(w->at, sizeof w->at, "layers[%zu]", i);
		if (!json_is_object(o))
			return bad(w, "must be an object {\"name\", \"op\", ...}");
		if (!name || !name[0] || strlen(name) > 200)
			return bad(w, "'name' must be a name of 1 to 200 characters");
		snprintf(w->at, sizeof w->at, "layers[%zu] (\"%s\")", i, name);
		if (json_object_get(w->ids, name))
			return bad(w, "the name is taken by %s",
			           strcmp(name, "input") ? "an earlier layer" : "the input");
		int32_t y = -1;
		if ((rc = layer(w, o, &y)) < 0)
			return rc;
		if (json_object_set_new(w->ids, name, json_integer(y)) < 0)
			return atm_err(ATM_E_NOMEM, "out of memory reading %s", w->origin);
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

atm_status atm_zoo_forward_load_buffer(atm_graph **g, const char *text, size_t len,
                                       const char *origin, int64_t batch)
{
	static const char *const top[] = {"format", "version", "name", "batch", "lr", "input",
	                                  "layers", "output", NULL};
	struct fw w = {.origin = origin ? origin : "forward graph"};
	json_error_t je;
	atm_status rc;
	int64_t file_batch = 1;
	*g = NULL;
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return atm_err(ATM_E_INPUT, "%s:%d:%d: JSON error: %s", w.origin, je.line, je.column,
		               je.text);
	if (!json_is_object(doc)) {
		rc = bad(&w, "a forward graph is a JSON object {\"format\": \"%s\", ...}", FW_FORMAT);
		goto out;
	}
	json_t *f = json_object_get(doc, "format"), *name = json_object_get(doc, "name"),
	       *lr = json_object_get(doc, "lr");
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
	if (batch < 0 || batch > 1000000) {
		rc = atm_err(ATM_E_USAGE, "batch %lld: expected 1 to 1000000", (long long)batch);
		goto out;
	}
	zb_spec spec = {.name = json_string_value(name), .batch = batch ? batch : file_batch,
	                .n_classes = 1, .image = 1,
	                .lr = lr ? (float)json_number_value(lr) : 0.01f};
	if (!(w.ids = json_object()) || (rc = zb_new(&w.b, &spec)) < 0) {
		rc = w.ids ? rc : atm_err(ATM_E_NOMEM, "out of memory reading %s", w.origin);
		goto out;
	}
	int32_t logits = -1;
	if ((rc = build(&w, doc, &logits)) < 0)
		goto out;
	if ((rc = zb_finish(w.b, logits, g)) < 0)
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
	atm_status rc = atm_read_file(path, &text, &len);
	*g = NULL;
	if (rc < 0)
		return rc;
	if (atm_zoo_is_forward(text, len))
		rc = atm_zoo_forward_load_buffer(g, text, len, path, o ? o->batch : 0);
	else
		rc = atm_graph_load_buffer(g, text, len, path, o);
	free(text);
	return rc;
}
