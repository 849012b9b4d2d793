/* profile.c -- kernel signatures, IO configurations and the profile cache: one JSON file, many machines, merged under a lock */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "core_internal.h"

#define PF_FORMAT "autotm-profile"
#define PF_VERSION 1
/* "FFFFFFFF/" plus NUL fits; grouped names are shorter */
#define CFG_NAME_MAX 16
/* Times keep this many significant digits, in memory and in the file alike,
 * so that a profile read back is the profile that was written. */
#define TIME_DIGITS 10
/* an element of the file on one line */
#define PF_DUMP JSON_REAL_PRECISION(TIME_DIGITS)

struct atm_profile {
	char *path;          /* NULL: in memory only */
	atm_prof_machine m;
	json_t *kernels;     /* this machine: signature -> {config name -> entry} */
	json_t *dirty;       /* the same shape: what was put since the last save */
	int64_t n_entries;
	atm_prof_moves moves;
	bool has_moves, moves_dirty;
	bool replace;        /* rebuild: the next save drops the file's entries of this machine */
};

/* ---------------------------------------------------------------- signatures */

/* float_str -- the shortest decimal that reads back as f ("1e-05", not 9.99999975e-06) */
static const char *float_str(float f, char *buf, size_t len)
{
	for (int prec = 6; prec <= 9; prec++) {
		snprintf(buf, len, "%.*g", prec, (double)f);
		if (strtof(buf, NULL) == f)
			break;
	}
	return buf;
}

/* one_if_zero -- a stride of 0 means 1 */
static int one_if_zero(int32_t v)
{
	return v ? v : 1;
}

/* sig_tensors -- "f32[8,3,64,64],f32[64]" */
static void sig_tensors(atm_text *s, const atm_graph *g, int n, const int32_t *ids)
{
	for (int i = 0; i < n; i++) {
		const atm_tensor *t = atm_graph_tensor(g, ids[i]);
		atm_text_add(s, "%s%s[", i ? "," : "", atm_dtype_name(t->dtype));
		for (int d = 0; d < t->ndim; d++)
			atm_text_add(s, "%s%lld", d ? "," : "", (long long)t->dims[d]);
		atm_text_str(s, "]");
	}
}

/* sig_build -- op, the attributes that op reads (so that a field it ignores
 * cannot split identical kernels), then operand dtypes and shapes */
static void sig_build(atm_text *s, const atm_graph *g, const atm_node *n)
{
	const atm_attrs *a = &n->attrs;
	char f[32];
	atm_text_str(s, atm_op_name(n->op));
	switch (n->op) {
	case ATM_OP_CONV_FWD:
	case ATM_OP_CONV_BWD_DATA:
	case ATM_OP_CONV_BWD_WEIGHTS:
		atm_text_add(s, "/s%d,%d/p%d,%d,%d,%d", one_if_zero(a->stride[0]), one_if_zero(a->stride[1]),
		       a->pad[0], a->pad[1], a->pad[2], a->pad[3]);
		break;
	case ATM_OP_MAXPOOL_FWD:
	case ATM_OP_MAXPOOL_BWD:
	case ATM_OP_AVGPOOL_FWD:
	case ATM_OP_AVGPOOL_BWD:
		atm_text_add(s, "/k%d,%d/s%d,%d/p%d,%d,%d,%d", a->kernel[0], a->kernel[1],
		       one_if_zero(a->stride[0]), one_if_zero(a->stride[1]), a->pad[0], a->pad[1],
		       a->pad[2], a->pad[3]);
		if (n->op == ATM_OP_AVGPOOL_FWD || n->op == ATM_OP_AVGPOOL_BWD)
			atm_text_add(s, "/x%d", a->exclude_pad ? 1 : 0);
		break;
	case ATM_OP_BN_FWD:
	case ATM_OP_BN_BWD:
		atm_text_add(s, "/e%s", float_str(a->epsilon, f, sizeof f));
		break;
	case ATM_OP_CONCAT:
	case ATM_OP_SPLIT:
		atm_text_add(s, "/a%d", a->axis);
		break;
	case ATM_OP_SGD:
		atm_text_add(s, "/lr%s", float_str(a->lr, f, sizeof f));
		break;
	default:
		break;
	}
	atm_text_str(s, "/");
	sig_tensors(s, g, n->n_in, n->in);
	atm_text_str(s, "->");
	sig_tensors(s, g, n->n_out, n->out);
}

/* sig_alloc -- node's signature, malloc'd; NULL when out of memory */
static char *sig_alloc(const atm_graph *g, const atm_node *n)
{
	atm_text s = {0};
	char *sig = NULL;
	sig_build(&s, g, n);
	atm_text_finish(&s, &sig, NULL, "a kernel signature");
	return sig;
}

/* atm_prof_signature -- node's signature into buf */
atm_status atm_prof_signature(const atm_graph *g, int32_t node, char *buf, size_t len)
{
	const atm_node *n = atm_graph_node(g, node);
	if (len)
		buf[0] = '\0';
	if (!n)
		return atm_err(ATM_E_USAGE, "atm_prof_signature: node %d is out of range (graph '%s' has "
		               "%d nodes)", node, atm_graph_name(g), atm_graph_n_nodes(g));
	char *s = sig_alloc(g, n);
	if (!s)
		return atm_err(ATM_E_NOMEM, "out of memory making the signature of node '%s'", n->name);
	size_t need = strlen(s) + 1;
	if (need > len) {
		free(s);
		return atm_err(ATM_E_USAGE, "the signature of node '%s' needs %zu bytes, the buffer has %zu",
		               n->name, need, len);
	}
	memcpy(buf, s, need);
	free(s);
	return ATM_OK;
}

/* ---------------------------------------------------------------- configurations */

/* How a node's operands map to mask bits: each unit is one free choice (a
 * tensor that may be slow, or a group of them) and sets the bits in unit[]. */
struct layout {
	int n_in, n_out;
	bool grouped;
	int n_units;
	uint32_t unit[ATM_PROF_MAX_OPERANDS];
	uint32_t all; /* every bit some configuration may set */
};

/* operand -- tensor of operand i: inputs, then outputs */
static int32_t operand(const atm_node *n, int i)
{
	return i < n->n_in ? n->in[i] : n->out[i - n->n_in];
}

/* may_be_slow -- tensor t may live in slow memory */
static bool may_be_slow(const atm_graph *g, int32_t t)
{
	return (atm_graph_tensor(g, t)->locations & ATM_LOC_SLOW) != 0;
}

/* layout_of -- the units of n: one per distinct tensor that may be slow, or,
 * past ATM_PROF_MAX_OPERANDS operands, one for the inputs and one for the
 * outputs, each only when every tensor in it may be slow */
static void layout_of(const atm_graph *g, const atm_node *n, struct layout *L)
{
	memset(L, 0, sizeof *L);
	L->n_in = n->n_in;
	L->n_out = n->n_out;
	int n_ops = n->n_in + n->n_out;
	if (n_ops > ATM_PROF_MAX_OPERANDS) {
		L->grouped = true;
		for (int side = 0; side < 2; side++) {
			int lo = side ? n->n_in : 0, hi = side ? n_ops : n->n_in;
			bool free_ = hi > lo;
			for (int i = lo; i < hi; i++)
				free_ = free_ && may_be_slow(g, operand(n, i));
			if (free_)
				L->unit[L->n_units++] = 1u << side;
		}
	} else {
		/* operands that are one tensor share its unit (-1: it stays fast) */
		int unit_of[ATM_PROF_MAX_OPERANDS];
		for (int i = 0; i < n_ops; i++) {
			int32_t t = operand(n, i);
			int first = i;
			for (int j = 0; j < i && first == i; j++)
				if (operand(n, j) == t)
					first = j;
			if (first < i)
				unit_of[i] = unit_of[first];
			else
				unit_of[i] = may_be_slow(g, t) ? L->n_units++ : -1;
			if (unit_of[i] >= 0)
				L->unit[unit_of[i]] |= 1u << i;
		}
	}
	for (int u = 0; u < L->n_units; u++)
		L->all |= L->unit[u];
}

/* config_valid -- mask is a union of whole units */
static bool config_valid(const struct layout *L, uint32_t mask)
{
	if (mask & ~L->all)
		return false;
	for (int u = 0; u < L->n_units; u++)
		if ((mask & L->unit[u]) != 0 && (mask & L->unit[u]) != L->unit[u])
			return false;
	return true;
}

/* atm_prof_n_configs -- 2 to the number of units */
int atm_prof_n_configs(const atm_graph *g, int32_t node)
{
	const atm_node *n = atm_graph_node(g, node);
	struct layout L;
	if (!n)
		return 0;
	layout_of(g, n, &L);
	return 1 << L.n_units;
}

/* atm_prof_config_at -- the units set by the bits of i */
uint32_t atm_prof_config_at(const atm_graph *g, int32_t node, int i)
{
	const atm_node *n = atm_graph_node(g, node);
	struct layout L;
	uint32_t mask = 0;
	if (!n)
		return 0;
	layout_of(g, n, &L);
	if (i < 0 || i >= 1 << L.n_units)
		return 0;
	for (int u = 0; u < L.n_units; u++)
		if (i & (1 << u))
			mask |= L.unit[u];
	return mask;
}

static const char *config_name(const struct layout *L, uint32_t mask, char *buf, size_t len);

/* bit_of -- the mask bit that holds operand i */
static int bit_of(const struct layout *L, int i)
{
	return L->grouped ? (i < L->n_in ? 0 : 1) : i;
}

/* atm_prof_config_loc -- where operand op is in config */
unsigned atm_prof_config_loc(const atm_graph *g, int32_t node, uint32_t config, int op)
{
	const atm_node *n = atm_graph_node(g, node);
	struct layout L;
	if (!n || op < 0 || op >= n->n_in + n->n_out)
		return ATM_LOC_FAST;
	layout_of(g, n, &L);
	return (config >> bit_of(&L, op)) & 1u ? ATM_LOC_SLOW : ATM_LOC_FAST;
}

/* atm_prof_config_of -- the mask of per-operand locations, when the node has it */
atm_status atm_prof_config_of(const atm_graph *g, int32_t node, const unsigned *locs,
                              uint32_t *config)
{
	const atm_node *n = atm_graph_node(g, node);
	struct layout L;
	uint32_t mask = 0;
	*config = 0;
	if (!n)
		return atm_err(ATM_E_USAGE, "atm_prof_config_of: node %d is out of range", node);
	layout_of(g, n, &L);
	for (int i = 0; i < n->n_in + n->n_out; i++) {
		bool slow = locs[i] == ATM_LOC_SLOW;
		int b = bit_of(&L, i);
		if (L.grouped && i != 0 && i != n->n_in && slow != (((mask >> b) & 1u) != 0))
			return atm_err(ATM_E_NOTFOUND, "node '%s' (%s): its %d %s are profiled together, all "
			               "fast or all slow, not some of each", n->name, atm_op_name(n->op),
			               b ? n->n_out : n->n_in, b ? "outputs" : "inputs");
		if (slow && !may_be_slow(g, operand(n, i)))
			return atm_err(ATM_E_NOTFOUND, "node '%s' (%s): tensor '%s' may only be in fast "
			               "memory", n->name, atm_op_name(n->op),
			               atm_graph_tensor(g, operand(n, i))->name);
		if (slow)
			mask |= 1u << b;
	}
	if (!config_valid(&L, mask)) {
		char name[CFG_NAME_MAX];
		return atm_err(ATM_E_NOTFOUND, "node '%s' (%s) has no configuration %s: %s", n->name,
		               atm_op_name(n->op), config_name(&L, mask, name, sizeof name),
		               L.grouped ? "one of a group's tensors may only be in fast memory"
		                         : "a tensor it uses twice is given two locations");
	}
	*config = mask;
	return ATM_OK;
}

/* config_name -- the name of mask under layout L */
static const char *config_name(const struct layout *L, uint32_t mask, char *buf, size_t len)
{
	char s[CFG_NAME_MAX];
	int k = 0;
	if (L->grouped) {
		if (L->n_in) {
			s[k++] = mask & 1u ? 'S' : 'F';
			s[k++] = '+';
		}
		s[k++] = '/';
		if (L->n_out) {
			s[k++] = mask & 2u ? 'S' : 'F';
			s[k++] = '+';
		}
	} else {
		for (int i = 0; i < L->n_in + L->n_out; i++) {
			if (i == L->n_in)
				s[k++] = '/';
			s[k++] = (mask >> i) & 1u ? 'S' : 'F';
		}
		if (L->n_in + L->n_out == L->n_in)
			s[k++] = '/';
	}
	s[k] = '\0';
	snprintf(buf, len, "%s", s);
	return buf;
}

/* atm_prof_config_name -- "FS/F" for config of node */
const char *atm_prof_config_name(const atm_graph *g, int32_t node, uint32_t config, char *buf,
                                 size_t len)
{
	const atm_node *n = atm_graph_node(g, node);
	struct layout L;
	if (!n) {
		snprintf(buf, len, "?");
		return buf;
	}
	layout_of(g, n, &L);
	return config_name(&L, config, buf, len);
}

/* config_name_ok -- a name config_name could have written: per-operand letters
 * (at most ATM_PROF_MAX_OPERANDS) around one '/', or the grouped form */
static bool config_name_ok(const char *full)
{
	/* an algorithm other than the default: "FF/F#2" */
	char s[CFG_NAME_MAX];
	const char *hash = strchr(full, '#');
	size_t n = hash ? (size_t)(hash - full) : strlen(full);
	if (n >= sizeof s)
		return false;
	if (hash) {
		char *end = NULL;
		long a = strtol(hash + 1, &end, 10);
		if (end == hash + 1 || *end || a < 1 || a >= ATM_PROF_MAX_ALGOS || hash[1] == '0')
			return false;
	}
	memcpy(s, full, n);
	s[n] = '\0';
	const char *slash = strchr(s, '/');
	if (!slash || strchr(slash + 1, '/'))
		return false;
	size_t a = (size_t)(slash - s), b = strlen(slash + 1);
	bool grouped = (a == 2 && s[1] == '+') || (b == 2 && slash[2] == '+');
	if (grouped) {
		if ((a != 0 && a != 2) || (b != 0 && b != 2) || (a == 2 && s[1] != '+') ||
		    (b == 2 && slash[2] != '+'))
			return false;
		return (a == 0 || s[0] == 'F' || s[0] == 'S') &&
		       (b == 0 || slash[1] == 'F' || slash[1] == 'S');
	}
	if (a + b > ATM_PROF_MAX_OPERANDS || a + b == 0)
		return false;
	for (const char *c = s; *c; c++)
		if (*c != 'F' && *c != 'S' && c != slash)
			return false;
	return true;
}

/* ---------------------------------------------------------------- machines */

/* machine_json -- the machine key as the file writes it */
static json_t *machine_json(const atm_prof_machine *m)
{
	json_t *o = json_object();
	json_object_set_new(o, "cpu", json_string(m->cpu));
	json_object_set_new(o, "n_threads", json_integer(m->n_threads));
	json_object_set_new(o, "backend", json_string(m->backend));
	json_object_set_new(o, "fast_tier", json_string(m->fast_tier));
	json_object_set_new(o, "slow_tier", json_string(m->slow_tier));
	json_object_set_new(o, "emulation", json_string(m->emulation));
	json_object_set_new(o, "estimated", json_boolean(m->estimated));
	return o;
}

/* machine_equal -- every field the same: timings are comparable */
static bool machine_equal(const atm_prof_machine *a, const atm_prof_machine *b)
{
	return !strcmp(a->cpu, b->cpu) && a->n_threads == b->n_threads &&
	       !strcmp(a->backend, b->backend) && !strcmp(a->fast_tier, b->fast_tier) &&
	       !strcmp(a->slow_tier, b->slow_tier) && !strcmp(a->emulation, b->emulation) &&
	       a->estimated == b->estimated;
}

/* machine_summary -- "AMD EPYC, 2 threads, dram:0 / pmem-dir emulating optane, cpu-onednn-2.6.3" */
static const char *machine_summary(const atm_prof_machine *m, char *buf, size_t len)
{
	snprintf(buf, len, "%s, %d thread%s, %s / %s%s%s, %s%s", m->cpu, m->n_threads,
	         m->n_threads == 1 ? "" : "s", m->fast_tier, m->slow_tier,
	         m->emulation[0] ? " emulating " : "", m->emulation, m->backend,
	         m->estimated ? ", estimated" : "");
	return buf;
}

/* ---------------------------------------------------------------- reading */

/* Where a check is in the file, for messages: "machines[0].kernels[\"conv...\"]". */
struct where {
	const char *path;
	char at[ATM_PROF_SIG_MAX + 128];
};

/* bad -- ATM_E_INPUT naming the file, the place and the field */
__attribute__((format(printf, 3, 4))) static atm_status bad(const struct where *w, const char *field,
                                                            const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return atm_err(ATM_E_INPUT, "%s: %s%s%s: %s", w->path, w->at, w->at[0] && field[0] ? "." : "",
	               field, msg);
}

/* only_fields -- every key of o is one of names (NULL-terminated) */
static atm_status only_fields(const struct where *w, json_t *o, const char *const *names)
{
	char valid[256];
	const char *key = atm_json_unknown_key(o, names, valid, sizeof valid);
	return key ? bad(w, "", "unknown field '%s' (valid: %s)", key, valid) : ATM_OK;
}

/* get_text -- a string field into buf; empty allowed when may_be_empty */
static atm_status get_text(const struct where *w, json_t *o, const char *key, bool may_be_empty,
                           char *buf, size_t len)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return bad(w, key, "missing");
	if (!json_is_string(v))
		return bad(w, key, "must be a string, not %s", atm_json_type_name(v));
	size_t n = json_string_length(v);
	if ((!n && !may_be_empty) || n >= len || strlen(json_string_value(v)) != n)
		return bad(w, key, "must be a string of %d to %zu characters", may_be_empty ? 0 : 1,
		           len - 1);
	memcpy(buf, json_string_value(v), n + 1);
	return ATM_OK;
}

/* get_bool -- a boolean field (false when optional and missing) */
static atm_status get_bool(const struct where *w, json_t *o, const char *key, bool required,
                           bool *out)
{
	json_t *v = json_object_get(o, key);
	*out = false;
	if (!v)
		return required ? bad(w, key, "missing") : ATM_OK;
	if (!json_is_boolean(v))
		return bad(w, key, "must be true or false, not %s", atm_json_type_name(v));
	*out = json_is_true(v);
	return ATM_OK;
}

/* get_number -- a finite number >= lo (> lo when strict) */
static atm_status get_number(const struct where *w, json_t *o, const char *key, double lo,
                             bool strict, double *out)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return bad(w, key, "missing");
	if (!json_is_number(v))
		return bad(w, key, "must be a number, not %s", atm_json_type_name(v));
	double x = json_number_value(v);
	if (!isfinite(x) || x < lo || (strict && x == lo))
		return bad(w, key, "must be %s %g, not %g", strict ? "above" : "at least", lo, x);
	*out = x;
	return ATM_OK;
}

/* get_integer -- an integer field in [lo, hi] */
static atm_status get_integer(const struct where *w, json_t *o, const char *key, int64_t lo,
                              int64_t hi, int64_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return bad(w, key, "missing");
	if (!json_is_integer(v))
		return bad(w, key, "must be an integer, not %s",
		           json_is_real(v) ? "a fraction" : atm_json_type_name(v));
	json_int_t x = json_integer_value(v);
	if (x < lo || x > hi)
		return bad(w, key, "must be from %lld to %lld, not %lld", (long long)lo, (long long)hi,
		           (long long)x);
	*out = x;
	return ATM_OK;
}

/* parse_machine -- a machine object, every field checked */
static atm_status parse_machine(const struct where *w, json_t *o, atm_prof_machine *m)
{
	static const char *const fields[] = {"cpu", "n_threads", "backend", "fast_tier", "slow_tier",
	                                     "emulation", "estimated", NULL};
	int64_t threads = 0;
	atm_status rc;
	memset(m, 0, sizeof *m);
	if (!json_is_object(o))
		return bad(w, "", "must be an object, not %s", atm_json_type_name(o));
	if ((rc = only_fields(w, o, fields)) < 0 ||
	    (rc = get_text(w, o, "cpu", false, m->cpu, sizeof m->cpu)) < 0 ||
	    (rc = get_integer(w, o, "n_threads", 1, 1 << 20, &threads)) < 0 ||
	    (rc = get_text(w, o, "backend", false, m->backend, sizeof m->backend)) < 0 ||
	    (rc = get_text(w, o, "fast_tier", false, m->fast_tier, sizeof m->fast_tier)) < 0 ||
	    (rc = get_text(w, o, "slow_tier", false, m->slow_tier, sizeof m->slow_tier)) < 0 ||
	    (rc = get_text(w, o, "emulation", true, m->emulation, sizeof m->emulation)) < 0 ||
	    (rc = get_bool(w, o, "estimated", true, &m->estimated)) < 0)
		return rc;
	m->n_threads = (int)threads;
	return ATM_OK;
}

/* parse_moves -- a moves object, bandwidths above 0 */
static atm_status parse_moves(const struct where *w, json_t *o, atm_prof_moves *mv)
{
	static const char *const fields[] = {"to_fast_gbps", "to_slow_gbps", "estimated", NULL};
	atm_status rc;
	memset(mv, 0, sizeof *mv);
	if (!json_is_object(o))
		return bad(w, "", "must be an object, not %s", atm_json_type_name(o));
	if ((rc = only_fields(w, o, fields)) < 0 ||
	    (rc = get_number(w, o, "to_fast_gbps", 0, true, &mv->to_fast_gbps)) < 0 ||
	    (rc = get_number(w, o, "to_slow_gbps", 0, true, &mv->to_slow_gbps)) < 0 ||
	    (rc = get_bool(w, o, "estimated", false, &mv->estimated)) < 0)
		return rc;
	return ATM_OK;
}

/* parse_entry -- one configuration's entry, every field checked */
static atm_status parse_entry(const struct where *w, json_t *o, bool machine_estimated,
                              atm_prof_entry *e)
{
	static const char *const fields[] = {"min_s", "median_s", "count", "scratch_bytes",
	                                     "estimated", NULL};
	int64_t count = 0, scratch = 0;
	atm_status rc;
	memset(e, 0, sizeof *e);
	if (!json_is_object(o))
		return bad(w, "", "must be an object {\"min_s\", \"median_s\", \"count\", "
		           "\"scratch_bytes\"}, not %s", atm_json_type_name(o));
	if ((rc = only_fields(w, o, fields)) < 0 ||
	    (rc = get_number(w, o, "min_s", 0, false, &e->min_s)) < 0 ||
	    (rc = get_number(w, o, "median_s", 0, false, &e->median_s)) < 0 ||
	    (rc = get_integer(w, o, "count", 1, INT32_MAX, &count)) < 0 ||
	    (rc = get_integer(w, o, "scratch_bytes", 0, ATM_MAX_BYTES, &scratch)) < 0 ||
	    (rc = get_bool(w, o, "estimated", false, &e->estimated)) < 0)
		return rc;
	if (e->median_s < e->min_s)
		return bad(w, "median_s", "%g is below min_s %g", e->median_s, e->min_s);
	if (e->estimated != machine_estimated)
		return bad(w, "estimated", "an %s entry in a %s profile", e->estimated ? "estimated" :
		           "measured", machine_estimated ? "estimated" : "measured");
	e->count = (int32_t)count;
	e->scratch_bytes = scratch;
	return ATM_OK;
}

/* where_key -- append [\"key\"] to w->at */
static void where_key(struct where *w, size_t base, const char *key)
{
	snprintf(w->at + base, sizeof w->at - base, "[\"%s\"]", key);
}

/* check_kernels -- every kernel and configuration of a machine's section */
static atm_status check_kernels(struct where *w, json_t *kernels, bool estimated)
{
	size_t base = strlen(w->at);
	const char *sig, *cfg;
	json_t *cfgs, *e;
	if (!json_is_object(kernels))
		return bad(w, "", "must be an object (signature -> configurations), not %s",
		           atm_json_type_name(kernels));
	json_object_foreach(kernels, sig, cfgs) {
		where_key(w, base, sig);
		if (!sig[0] || strlen(sig) >= ATM_PROF_SIG_MAX)
			return bad(w, "", "a kernel signature must have 1 to %d characters",
			           ATM_PROF_SIG_MAX - 1);
		if (!json_is_object(cfgs))
			return bad(w, "", "must be an object (configuration -> entry), not %s", atm_json_type_name(cfgs));
		size_t base2 = strlen(w->at);
		json_object_foreach(cfgs, cfg, e) {
			where_key(w, base2, cfg);
			if (!config_name_ok(cfg))
				return bad(w, "", "not a configuration name (F or S per input, '/', F or S per "
				           "output, like \"FS/F\"; \"S+/F+\" for a grouped node)");
			atm_prof_entry entry;
			atm_status rc = parse_entry(w, e, estimated, &entry);
			if (rc < 0)
				return rc;
		}
	}
	w->at[base] = '\0';
	return ATM_OK;
}

/* check_doc -- every field of a cache file, so that a broken one is refused
 * whole and named, never half-read and then overwritten */
static atm_status check_doc(json_t *root, const char *path)
{
	static const char *const top[] = {"format", "version", "machines", NULL};
	static const char *const sec_fields[] = {"machine", "moves", "kernels", NULL};
	struct where w = {.path = path};
	atm_status rc;
	if (!json_is_object(root))
		return bad(&w, "", "a profile cache is a JSON object {\"format\": \"%s\", ...}, not %s",
		           PF_FORMAT, atm_json_type_name(root));
	json_t *f = json_object_get(root, "format");
	if (!json_is_string(f) || strcmp(json_string_value(f), PF_FORMAT))
		return bad(&w, "format", "must be \"%s\": this is not an autotm profile cache", PF_FORMAT);
	int64_t version = 0;
	if ((rc = get_integer(&w, root, "version", 0, INT32_MAX, &version)) < 0)
		return rc;
	if (version != PF_VERSION)
		return bad(&w, "version", "%lld is not supported (this autotm reads version %d)",
		           (long long)version, PF_VERSION);
	if ((rc = only_fields(&w, root, top)) < 0)
		return rc;
	json_t *ms = json_object_get(root, "machines");
	if (!ms)
		return bad(&w, "machines", "missing");
	if (!json_is_array(ms))
		return bad(&w, "machines", "must be an array, not %s", atm_json_type_name(ms));
	atm_prof_machine *seen = calloc(json_array_size(ms) + 1, sizeof *seen);
	if (!seen)
		return atm_err(ATM_E_NOMEM, "out of memory reading %s", path);
	size_t i;
	json_t *sec;
	json_array_foreach(ms, i, sec) {
		snprintf(w.at, sizeof w.at, "machines[%zu]", i);
		if (!json_is_object(sec)) {
			rc = bad(&w, "", "must be an object {\"machine\", \"kernels\"}, not %s", atm_json_type_name(sec));
			goto done;
		}
		if ((rc = only_fields(&w, sec, sec_fields)) < 0)
			goto done;
		json_t *m = json_object_get(sec, "machine"), *k = json_object_get(sec, "kernels");
		json_t *mv = json_object_get(sec, "moves");
		if (!m || !k) {
			rc = bad(&w, m ? "kernels" : "machine", "missing");
			goto done;
		}
		snprintf(w.at, sizeof w.at, "machines[%zu].machine", i);
		if ((rc = parse_machine(&w, m, &seen[i])) < 0)
			goto done;
		for (size_t j = 0; j < i; j++)
			if (machine_equal(&seen[j], &seen[i])) {
				rc = bad(&w, "", "the same machine as machines[%zu]", j);
				goto done;
			}
		if (mv) {
			atm_prof_moves moves;
			snprintf(w.at, sizeof w.at, "machines[%zu].moves", i);
			if ((rc = parse_moves(&w, mv, &moves)) < 0)
				goto done;
		}
		snprintf(w.at, sizeof w.at, "machines[%zu].kernels", i);
		if ((rc = check_kernels(&w, k, seen[i].estimated)) < 0)
			goto done;
	}
	rc = ATM_OK;
done:
	free(seen);
	return rc;
}

/* load_doc -- the checked cache file; *doc NULL when the file does not exist */
static atm_status load_doc(const char *path, json_t **doc)
{
	struct stat st;
	char *text = NULL;
	size_t len = 0;
	json_error_t jerr;
	atm_status rc;
	*doc = NULL;
	if (stat(path, &st) < 0 && errno == ENOENT)
		return ATM_OK;
	if ((rc = atm_read_file(path, &text, &len)) < 0)
		return rc;
	if (len == 0) {
		free(text);
		return atm_err(ATM_E_INPUT, "%s: the file is empty, not a profile cache", path);
	}
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (!root)
		return atm_err(ATM_E_INPUT, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
	if ((rc = check_doc(root, path)) < 0) {
		json_decref(root);
		return rc;
	}
	*doc = root;
	return ATM_OK;
}

/* find_section -- the machines[] element of m in doc, NULL when none */
static json_t *find_section(json_t *doc, const atm_prof_machine *m)
{
	size_t i;
	json_t *sec;
	struct where w = {.path = ""};
	json_array_foreach(json_object_get(doc, "machines"), i, sec) {
		atm_prof_machine other;
		/* the document was checked: parsing cannot fail here */
		if (parse_machine(&w, json_object_get(sec, "machine"), &other) == ATM_OK &&
		    machine_equal(&other, m))
			return sec;
	}
	return NULL;
}

/* count_entries -- configurations held in a kernels object */
static int64_t count_entries(json_t *kernels)
{
	const char *sig;
	json_t *cfgs;
	int64_t n = 0;
	json_object_foreach(kernels, sig, cfgs)
		n += (int64_t)json_object_size(cfgs);
	return n;
}

/* ---------------------------------------------------------------- writing */

/* cmp_str -- qsort order of strings */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* key_text -- a quoted key and its colon (signatures hold no quotes, but a file may) */
static void key_text(atm_text *s, const char *key)
{
	atm_text_json_new(s, json_string(key), PF_DUMP);
	atm_text_str(s, ": ");
}

/* emit_kernels -- one line per configuration, kernels in sorted order so that
 * the file diffs well and two saves of the same data are the same bytes */
static void emit_kernels(atm_text *s, json_t *kernels)
{
	size_t n = json_object_size(kernels), i = 0;
	const char **keys = malloc((n ? n : 1) * sizeof *keys);
	const char *sig;
	json_t *cfgs;
	if (!keys) {
		s->failed = true;
		return;
	}
	json_object_foreach(kernels, sig, cfgs)
		keys[i++] = sig;
	qsort(keys, n, sizeof *keys, cmp_str);
	atm_text_str(s, "{");
	for (i = 0; i < n; i++) {
		atm_text_str(s, i ? ",\n    " : "\n    ");
		key_text(s, keys[i]);
		atm_text_str(s, "{");
		const char *cfg;
		json_t *e;
		bool first = true;
		json_object_foreach(json_object_get(kernels, keys[i]), cfg, e) {
			atm_text_str(s, first ? "\n      " : ",\n      ");
			first = false;
			key_text(s, cfg);
			atm_text_json(s, e, PF_DUMP);
		}
		atm_text_str(s, "\n    }");
	}
	atm_text_str(s, n ? "\n   }" : "}");
	free(keys);
}

/* emit_doc -- the cache file's text: the top level indented, one entry a line */
static atm_status emit_doc(json_t *doc, char **text, size_t *len)
{
	atm_text s = {0};
	size_t i;
	json_t *sec;
	atm_text_add(&s, "{\n \"format\": \"%s\",\n \"version\": %d,\n \"machines\": [", PF_FORMAT, PF_VERSION);
	json_array_foreach(json_object_get(doc, "machines"), i, sec) {
		atm_text_str(&s, i ? ",\n  {\n   \"machine\": " : "\n  {\n   \"machine\": ");
		atm_text_json(&s, json_object_get(sec, "machine"), PF_DUMP);
		if (json_object_get(sec, "moves")) {
			atm_text_str(&s, ",\n   \"moves\": ");
			atm_text_json(&s, json_object_get(sec, "moves"), PF_DUMP);
		}
		atm_text_str(&s, ",\n   \"kernels\": ");
		emit_kernels(&s, json_object_get(sec, "kernels"));
		atm_text_str(&s, "\n  }");
	}
	atm_text_str(&s, json_array_size(json_object_get(doc, "machines")) ? "\n ]\n}\n" : "]\n}\n");
	return atm_text_finish(&s, text, len, "the profile cache");
}

/* new_doc -- an empty cache document */
static json_t *new_doc(void)
{
	json_t *doc = json_object();
	json_object_set_new(doc, "format", json_string(PF_FORMAT));
	json_object_set_new(doc, "version", json_integer(PF_VERSION));
	json_object_set_new(doc, "machines", json_array());
	return doc;
}

/* moves_json -- the moves object of a section */
static json_t *moves_json(const atm_prof_moves *m)
{
	json_t *o = json_object();
	json_object_set_new(o, "to_fast_gbps", json_real(m->to_fast_gbps));
	json_object_set_new(o, "to_slow_gbps", json_real(m->to_slow_gbps));
	json_object_set_new(o, "estimated", json_boolean(m->estimated));
	return o;
}

/* ---------------------------------------------------------------- the profile */

/* machine_check -- the strings are terminated and the thread count sane */
static atm_status machine_check(const atm_prof_machine *m)
{
	const struct { const char *name; const char *s; size_t len; } f[] = {
		{"cpu", m->cpu, sizeof m->cpu},
		{"backend", m->backend, sizeof m->backend},
		{"fast_tier", m->fast_tier, sizeof m->fast_tier},
		{"slow_tier", m->slow_tier, sizeof m->slow_tier},
		{"emulation", m->emulation, sizeof m->emulation},
	};
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
		if (!memchr(f[i].s, '\0', f[i].len))
			return atm_err(ATM_E_USAGE, "profile machine: %s is not terminated", f[i].name);
		if (!f[i].s[0] && strcmp(f[i].name, "emulation"))
			return atm_err(ATM_E_USAGE, "profile machine: %s is empty", f[i].name);
	}
	if (m->n_threads < 1)
		return atm_err(ATM_E_USAGE, "profile machine: %d threads", m->n_threads);
	return ATM_OK;
}

/* take_section -- make sec's entries and moves the profile's own */
static void take_section(atm_profile *p, json_t *sec)
{
	json_t *k = json_object_get(sec, "kernels"), *mv = json_object_get(sec, "moves");
	json_decref(p->kernels);
	p->kernels = json_incref(k);
	p->n_entries = count_entries(k);
	if (mv && !p->moves_dirty) {
		struct where w = {.path = ""};
		p->has_moves = parse_moves(&w, mv, &p->moves) == ATM_OK;
	}
}

/* atm_profile_open -- this machine's section of the cache, checked whole */
atm_status atm_profile_open(atm_profile **out, const char *path, const atm_prof_machine *m,
                            bool rebuild)
{
	atm_profile *p = NULL;
	json_t *doc = NULL;
	atm_status rc;
	*out = NULL;
	if ((rc = machine_check(m)) < 0)
		return rc;
	p = calloc(1, sizeof *p);
	if (!p)
		return atm_err(ATM_E_NOMEM, "out of memory opening a profile");
	p->m = *m;
	p->kernels = json_object();
	p->dirty = json_object();
	if (!p->kernels || !p->dirty) {
		rc = atm_err(ATM_E_NOMEM, "out of memory opening a profile");
		goto fail;
	}
	if (!path)
		goto done;
	if (!(p->path = strdup(path))) {
		rc = atm_err(ATM_E_NOMEM, "out of memory opening a profile");
		goto fail;
	}
	/* the folder must take the temporary file of every save: find out now */
	if ((rc = atm_check_writable(path)) < 0)
		goto fail;
	rc = load_doc(path, &doc);
	if (rc == ATM_E_INPUT && rebuild) {
		/* rebuilding on purpose: the broken file is replaced at the first save */
		atm_err_clear();
	} else if (rc < 0) {
		if (rc == ATM_E_INPUT)
			atm_err_prefix(rc, "corrupt profile cache, left as it is (remove it or rebuild it): ");
		goto fail;
	} else if (doc && !rebuild) {
		json_t *sec = find_section(doc, m);
		if (sec)
			take_section(p, sec);
	}
	p->replace = rebuild;
done:
	json_decref(doc);
	*out = p;
	return ATM_OK;
fail:
	json_decref(doc);
	atm_profile_destroy(p);
	return rc;
}

/* atm_profile_destroy -- release the profile (nothing is saved) */
void atm_profile_destroy(atm_profile *p)
{
	if (!p)
		return;
	json_decref(p->kernels);
	json_decref(p->dirty);
	free(p->path);
	free(p);
}

/* atm_profile_machine -- the machine the profile is of */
const atm_prof_machine *atm_profile_machine(const atm_profile *p)
{
	return &p->m;
}

/* atm_profile_path -- the cache file, NULL in memory */
const char *atm_profile_path(const atm_profile *p)
{
	return p->path;
}

/* atm_profile_n_entries -- configurations held for this machine */
int64_t atm_profile_n_entries(const atm_profile *p)
{
	return p->n_entries;
}

/* key_of -- node's signature and the name of config with algorithm algo ("FF/F", "FF/F#2"),
 * checking all three */
static atm_status key_of(const atm_graph *g, int32_t node, uint32_t config, int algo,
                         const char *who, char **sig, char cfg[CFG_NAME_MAX])
{
	const atm_node *n = atm_graph_node(g, node);
	struct layout L;
	*sig = NULL;
	if (!n)
		return atm_err(ATM_E_USAGE, "%s: node %d is out of range (graph '%s' has %d nodes)", who,
		               node, atm_graph_name(g), atm_graph_n_nodes(g));
	layout_of(g, n, &L);
	if (!config_valid(&L, config))
		return atm_err(ATM_E_USAGE, "%s: configuration 0x%x is not one of node '%s' (%s), which "
		               "has %d", who, (unsigned)config, n->name, atm_op_name(n->op), 1 << L.n_units);
	if (algo < 0 || algo >= ATM_PROF_MAX_ALGOS)
		return atm_err(ATM_E_USAGE, "%s: algorithm %d of node '%s' is out of range (0 to %d)", who,
		               algo, n->name, ATM_PROF_MAX_ALGOS - 1);
	config_name(&L, config, cfg, CFG_NAME_MAX);
	if (algo)
		snprintf(cfg + strlen(cfg), CFG_NAME_MAX - strlen(cfg), "#%d", algo);
	if (!(*sig = sig_alloc(g, n)))
		return atm_err(ATM_E_NOMEM, "out of memory making the signature of node '%s'", n->name);
	return ATM_OK;
}

/* entry_of -- a checked entry object back into a struct */
static void entry_of(json_t *o, atm_prof_entry *e)
{
	e->min_s = json_number_value(json_object_get(o, "min_s"));
	e->median_s = json_number_value(json_object_get(o, "median_s"));
	e->count = (int32_t)json_integer_value(json_object_get(o, "count"));
	e->scratch_bytes = (int64_t)json_integer_value(json_object_get(o, "scratch_bytes"));
	e->estimated = json_is_true(json_object_get(o, "estimated"));
}

/* atm_profile_get -- look up node in config, naming the kernel when it is missing */
atm_status atm_profile_get(const atm_profile *p, const atm_graph *g, int32_t node, uint32_t config,
                           atm_prof_entry *out)
{
	return atm_profile_get_algo(p, g, node, config, 0, out);
}

/* atm_profile_get_algo -- the same with one of the node's algorithms */
atm_status atm_profile_get_algo(const atm_profile *p, const atm_graph *g, int32_t node,
                                uint32_t config, int algo, atm_prof_entry *out)
{
	char *sig = NULL, cfg[CFG_NAME_MAX], m[512];
	memset(out, 0, sizeof *out);
	atm_status rc = key_of(g, node, config, algo, "atm_profile_get", &sig, cfg);
	if (rc < 0)
		return rc;
	json_t *e = json_object_get(json_object_get(p->kernels, sig), cfg);
	if (!e) {
		const atm_node *n = atm_graph_node(g, node);
		rc = atm_err(ATM_E_NOTFOUND, "kernel '%s' (node %d of '%s', %s) in configuration %s is not "
		             "in the profile of %s%s%s; profile this network first (autotm profile) "
		             "with the same memory options", n->name, node, atm_graph_name(g), sig, cfg,
		             machine_summary(&p->m, m, sizeof m), p->path ? " in " : "",
		             p->path ? p->path : "");
		free(sig);
		return rc;
	}
	entry_of(e, out);
	free(sig);
	return ATM_OK;
}

/* atm_profile_has -- is node in config held */
bool atm_profile_has(const atm_profile *p, const atm_graph *g, int32_t node, uint32_t config)
{
	char *sig = NULL, cfg[CFG_NAME_MAX];
	if (key_of(g, node, config, 0, "atm_profile_has", &sig, cfg) < 0)
		return false;
	bool has = json_object_get(json_object_get(p->kernels, sig), cfg) != NULL;
	free(sig);
	return has;
}

/* rounded -- x to TIME_DIGITS significant digits, what a save and a load give back */
static double rounded(double x)
{
	char buf[40];
	snprintf(buf, sizeof buf, "%.*g", TIME_DIGITS, x);
	return strtod(buf, NULL);
}

/* set_entry -- kernels[sig][cfg] = e (a new reference is taken) */
static int set_entry(json_t *kernels, const char *sig, const char *cfg, json_t *e)
{
	json_t *cfgs = json_object_get(kernels, sig);
	if (!cfgs) {
		cfgs = json_object();
		if (!cfgs || json_object_set_new(kernels, sig, cfgs) < 0)
			return -1;
	}
	return json_object_set(cfgs, cfg, e);
}

/* atm_profile_put -- record an entry, kept for the next save */
atm_status atm_profile_put(atm_profile *p, const atm_graph *g, int32_t node, uint32_t config,
                           const atm_prof_entry *e)
{
	return atm_profile_put_algo(p, g, node, config, 0, e);
}

/* atm_profile_put_algo -- the same for one of the node's algorithms */
atm_status atm_profile_put_algo(atm_profile *p, const atm_graph *g, int32_t node, uint32_t config,
                                int algo, const atm_prof_entry *e)
{
	char *sig = NULL, cfg[CFG_NAME_MAX];
	json_t *o = NULL;
	atm_status rc;
	if (!(e->min_s >= 0) || !isfinite(e->min_s) || !(e->median_s >= e->min_s) ||
	    !isfinite(e->median_s) || e->count < 1 || e->scratch_bytes < 0)
		return atm_err(ATM_E_USAGE, "atm_profile_put: node %d: times must be finite with 0 <= "
		               "min_s <= median_s, count >= 1 (got %g, %g, %d)", node, e->min_s,
		               e->median_s, e->count);
	if (e->estimated != p->m.estimated)
		return atm_err(ATM_E_USAGE, "atm_profile_put: an %s entry in a %s profile",
		               e->estimated ? "estimated" : "measured",
		               p->m.estimated ? "estimated" : "measured");
	if ((rc = key_of(g, node, config, algo, "atm_profile_put", &sig, cfg)) < 0)
		return rc;
	o = json_object();
	if (!o || json_object_set_new(o, "min_s", json_real(rounded(e->min_s))) < 0 ||
	    json_object_set_new(o, "median_s", json_real(rounded(e->median_s))) < 0 ||
	    json_object_set_new(o, "count", json_integer(e->count)) < 0 ||
	    json_object_set_new(o, "scratch_bytes", json_integer(e->scratch_bytes)) < 0 ||
	    (e->estimated && json_object_set_new(o, "estimated", json_true()) < 0))
		goto nomem;
	bool had = json_object_get(json_object_get(p->kernels, sig), cfg) != NULL;
	if (set_entry(p->kernels, sig, cfg, o) < 0 || set_entry(p->dirty, sig, cfg, o) < 0)
		goto nomem;
	p->n_entries += had ? 0 : 1;
	json_decref(o);
	free(sig);
	return ATM_OK;
nomem:
	json_decref(o);
	free(sig);
	return atm_err(ATM_E_NOMEM, "out of memory recording a profile entry");
}

/* atm_profile_get_moves -- the move bandwidths, when measured */
atm_status atm_profile_get_moves(const atm_profile *p, atm_prof_moves *out)
{
	char m[512];
	memset(out, 0, sizeof *out);
	if (!p->has_moves)
		return atm_err(ATM_E_NOTFOUND, "the move bandwidths of %s are not in the profile%s%s; "
		               "profile a network first (autotm profile)",
		               machine_summary(&p->m, m, sizeof m), p->path ? " " : "",
		               p->path ? p->path : "");
	*out = p->moves;
	return ATM_OK;
}

/* atm_profile_set_moves -- record the move bandwidths */
atm_status atm_profile_set_moves(atm_profile *p, const atm_prof_moves *m)
{
	if (!(m->to_fast_gbps > 0) || !(m->to_slow_gbps > 0) || !isfinite(m->to_fast_gbps) ||
	    !isfinite(m->to_slow_gbps))
		return atm_err(ATM_E_USAGE, "atm_profile_set_moves: bandwidths must be above 0 (got %g, %g)",
		               m->to_fast_gbps, m->to_slow_gbps);
	if (m->estimated != p->m.estimated)
		return atm_err(ATM_E_USAGE, "atm_profile_set_moves: %s bandwidths in a %s profile",
		               m->estimated ? "estimated" : "measured",
		               p->m.estimated ? "estimated" : "measured");
	p->moves = *m;
	p->moves.to_fast_gbps = rounded(m->to_fast_gbps);
	p->moves.to_slow_gbps = rounded(m->to_slow_gbps);
	p->has_moves = p->moves_dirty = true;
	return ATM_OK;
}

/* atm_profile_save -- merge what was put into the file, under the lock */
atm_status atm_profile_save(atm_profile *p)
{
	json_t *doc = NULL;
	char *text = NULL;
	size_t len = 0;
	int fd = -1;
	atm_status rc;
	if (!p->path) {
		json_object_clear(p->dirty);
		p->moves_dirty = false;
		return ATM_OK;
	}
	if (!json_object_size(p->dirty) && !p->moves_dirty && !p->replace)
		return ATM_OK;
	if ((rc = atm_file_lock(p->path, &fd)) < 0)
		return rc;
	/* read again under the lock: another profiler may have saved since */
	rc = load_doc(p->path, &doc);
	if (rc == ATM_E_INPUT && p->replace) {
		atm_err_clear();
	} else if (rc < 0) {
		if (rc == ATM_E_INPUT)
			atm_err_prefix(rc, "the profile cache became corrupt and was left as it is; "
			               "nothing saved: ");
		goto fail;
	}
	if (!doc && !(doc = new_doc())) {
		rc = atm_err(ATM_E_NOMEM, "out of memory saving %s", p->path);
		goto fail;
	}
	json_t *sec = find_section(doc, &p->m);
	if (!sec) {
		sec = json_object();
		json_object_set_new(sec, "machine", machine_json(&p->m));
		json_object_set_new(sec, "kernels", json_object());
		json_array_append_new(json_object_get(doc, "machines"), sec);
	}
	if (p->replace) {
		json_object_set_new(sec, "kernels", json_object());
		json_object_del(sec, "moves");
	}
	json_t *kernels = json_object_get(sec, "kernels");
	const char *sig, *cfg;
	json_t *cfgs, *e;
	json_object_foreach(p->dirty, sig, cfgs)
		json_object_foreach(cfgs, cfg, e)
			if (set_entry(kernels, sig, cfg, e) < 0) {
				rc = atm_err(ATM_E_NOMEM, "out of memory saving %s", p->path);
				goto fail;
			}
	if (p->moves_dirty)
		json_object_set_new(sec, "moves", moves_json(&p->moves));
	if ((rc = emit_doc(doc, &text, &len)) < 0)
		goto fail;
	if ((rc = atm_write_file_atomic(p->path, text, len)) < 0)
		goto fail;
	/* the file now holds ours and everyone else's: take theirs in too */
	p->moves_dirty = false;
	take_section(p, sec);
	json_object_clear(p->dirty);
	p->replace = false;
	rc = ATM_OK;
fail:
	free(text);
	json_decref(doc);
	atm_file_unlock(fd);
	return rc;
}
