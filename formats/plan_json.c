/* plan_json.c -- read and write the plan JSON format */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "formats_internal.h"

#define PJ_FORMAT "autotm-plan"
#define PJ_VERSION 1
/* elements of a plan file: one line each, keys in the order written */
#define PJ_DUMP (JSON_COMPACT | JSON_PRESERVE_ORDER)

/* ---------------------------------------------------------------- writing */

static json_t *real_or_null(double v)
{
	/* JSON has no infinity: a time that is not a number is not known */
	return v < 0 || !isfinite(v) ? json_null() : json_real(v);
}

static const char *loc_name(unsigned loc)
{
	return loc == ATM_LOC_FAST ? "fast" : "slow";
}

/* dump_places -- the plan's tensors, moves and recomputations, into t */
static void dump_places(const atm_plan *p, atm_text *t, bool *ok)
{
	const atm_graph *g = atm_plan_graph(p);
	int32_t nt = atm_graph_n_tensors(g);
	atm_text_str(t, ",\n  \"tensors\": [");
	for (int32_t i = 0; i < nt; i++) {
		json_t *o = json_object();
		atm_json_set_new(o, "name", json_string(atm_graph_tensor(g, i)->name), ok);
		atm_json_set_new(o, "location", json_string(loc_name(atm_plan_location(p, i))), ok);
		atm_text_str(t, i ? ",\n    " : "\n    ");
		atm_text_json_new(t, o, PJ_DUMP);
	}
	atm_text_str(t, nt ? "\n  ],\n  \"moves\": [" : "],\n  \"moves\": [");
	for (int32_t i = 0; i < atm_plan_n_moves(p); i++) {
		const atm_move *m = atm_plan_move(p, i);
		json_t *o = json_object();
		atm_json_set_new(o, "tensor", json_string(atm_graph_tensor(g, m->tensor)->name), ok);
		atm_json_set_new(o, "to", json_string(loc_name(m->to)), ok);
		atm_json_set_new(o, "after", json_integer(m->after), ok);
		atm_json_set_new(o, "after_node", m->after < 0 ? json_null()
		                                                : json_string(atm_graph_node(g, m->after)->name),
		                 ok);
		atm_json_set_new(o, "mode", json_string(m->async ? "async" : "sync"), ok);
		if (m->async)
			atm_json_set_new(o, "until", json_integer(m->until), ok);
		atm_text_str(t, i ? ",\n    " : "\n    ");
		atm_text_json_new(t, o, PJ_DUMP);
	}
	atm_text_str(t, atm_plan_n_moves(p) ? "\n  ]" : "]");
	/* recomputations, when there are any: a plan without them reads as before they existed */
	for (int32_t i = 0; i < atm_plan_n_recomputes(p); i++) {
		const atm_recompute *r = atm_plan_recompute(p, i);
		json_t *o = json_object();
		atm_json_set_new(o, "tensor", json_string(atm_graph_tensor(g, r->tensor)->name), ok);
		atm_json_set_new(o, "drop_after", json_integer(r->drop_after), ok);
		atm_json_set_new(o, "before", json_integer(r->before), ok);
		atm_text_str(t, i ? ",\n    " : ",\n  \"recomputes\": [\n    ");
		atm_text_json_new(t, o, PJ_DUMP);
	}
	if (atm_plan_n_recomputes(p))
		atm_text_str(t, "\n  ]");
}

/* dump_by_node -- ",\n  KEY": {node name: value} for the nodes whose of(p, node) is not 0;
 * nothing when none is */
static void dump_by_node(const atm_plan *p, atm_text *t, const char *key,
                         int64_t (*of)(const atm_plan *p, int32_t node), bool *ok)
{
	const atm_graph *g = atm_plan_graph(p);
	json_t *by = json_object();
	for (int32_t k = 0; by && k < atm_graph_n_nodes(g); k++)
		if (of(p, k))
			atm_json_set_new(by, atm_graph_node(g, k)->name, json_integer(of(p, k)), ok);
	if (!by) {
		t->failed = true;
	} else if (json_object_size(by)) {
		atm_text_str(t, ",\n  \"");
		atm_text_str(t, key);
		atm_text_str(t, "\": ");
		atm_text_json_new(t, by, PJ_DUMP); /* takes by */
	} else {
		json_decref(by);
	}
}

/* plan_algo -- atm_plan_algo as dump_by_node takes it */
static int64_t plan_algo(const atm_plan *p, int32_t node)
{
	return atm_plan_algo(p, node);
}

atm_status atm_plan_dump(const atm_plan *p, char **out)
{
	const atm_graph *g = atm_plan_graph(p);
	const atm_plan_info *info = atm_plan_info_get(p);
	int32_t nt = atm_graph_n_tensors(g), nn = atm_graph_n_nodes(g);
	atm_text t = {0};
	char digest[17];
	bool ok = true; /* every field set: a failed allocation fails the dump, it drops nothing */
	*out = NULL;
	atm_graph_digest(g, digest);

	json_t *gr = json_object();
	atm_json_set_new(gr, "name", json_string(atm_graph_name(g)), &ok);
	atm_json_set_new(gr, "digest", json_string(digest), &ok);
	atm_json_set_new(gr, "n_tensors", json_integer(nt), &ok);
	atm_json_set_new(gr, "n_nodes", json_integer(nn), &ok);
	atm_text_str(&t, "{\n  \"format\": \"" PJ_FORMAT "\",\n  \"version\": 1,\n  \"graph\": ");
	atm_text_json_new(&t, gr, PJ_DUMP);
	atm_text_str(&t, ",\n  \"formulation\": ");
	atm_text_json_new(&t, json_string(info->formulation), PJ_DUMP);
	atm_text_str(&t, ",\n  \"fast_limit_bytes\": ");
	atm_text_json_new(&t, json_integer(info->fast_limit_bytes), PJ_DUMP);
	atm_text_str(&t, ",\n  \"predicted_runtime_s\": ");
	atm_text_json_new(&t, real_or_null(info->predicted_runtime_s), PJ_DUMP);
	/* added later, and only where a plan recomputes: older readers refuse unknown keys */
	if (info->predicted_recompute_s > 0) {
		atm_text_str(&t, ",\n  \"predicted_recompute_s\": ");
		atm_text_json_new(&t, json_real(info->predicted_recompute_s), PJ_DUMP);
	}
	json_t *solver = json_object();
	/* which solver made the plan; null for baselines and built-in placements */
	atm_json_set_new(solver, "name", info->solver[0] ? json_string(info->solver) : json_null(),
	                 &ok);
	atm_json_set_new(solver, "status", json_string(info->solver_status), &ok);
	atm_json_set_new(solver, "creation_s", real_or_null(info->creation_s), &ok);
	atm_json_set_new(solver, "solve_s", real_or_null(info->solve_s), &ok);
	atm_json_set_new(solver, "mip_gap", real_or_null(info->mip_gap), &ok);
	/* each defragmentation round's times, so that a plan run later reports them */
	json_t *rounds = json_array();
	for (int i = 0; i < info->n_rounds && i < ATM_PLAN_MAX_ROUNDS; i++)
		if (json_array_append_new(rounds, json_pack("{s:o, s:o}", "creation_s",
		                                            real_or_null(info->round_creation_s[i]),
		                                            "solve_s",
		                                            real_or_null(info->round_solve_s[i]))) < 0)
			ok = false;
	atm_json_set_new(solver, "rounds", rounds, &ok);
	atm_text_str(&t, ",\n  \"ratio\": ");
	atm_text_json_new(&t, info->ratio_slow + info->ratio_fast > 0
	                 ? json_pack("{s:f, s:f}", "slow", info->ratio_slow, "fast", info->ratio_fast)
	                 : json_null(), PJ_DUMP);
	atm_text_str(&t, ",\n  \"estimated\": ");
	atm_text_json_new(&t, json_boolean(info->estimated), PJ_DUMP);
	atm_text_str(&t, ",\n  \"solver\": ");
	atm_text_json_new(&t, solver, PJ_DUMP);
	dump_places(p, &t, &ok);
	/* algorithms other than the default (GPU plans); workspaces inside the fast arena (GPU
	 * plans that count them in the limit): by node name */
	dump_by_node(p, &t, "algorithms", plan_algo, &ok);
	dump_by_node(p, &t, "workspace_bytes", atm_plan_workspace, &ok);
	atm_text_str(&t, "\n}\n");
	if (!ok)
		t.failed = true;
	return atm_text_finish(&t, out, NULL, "a plan");
}

atm_status atm_plan_save(const atm_plan *p, const char *path)
{
	char *text = NULL;
	atm_status rc = atm_plan_dump(p, &text);
	if (rc < 0)
		return rc;
	rc = atm_write_file_atomic(path, text, strlen(text));
	free(text);
	return rc;
}

/* ---------------------------------------------------------------- reading */

#define BAD(...) atm_err(ATM_E_INPUT, __VA_ARGS__)

/* get -- member key of o with type check; NULL member allowed when optional */
static atm_status get(json_t *o, const char *where, const char *key, json_type type, bool optional,
                      json_t **v)
{
	static const char *const names[] = {"an object", "an array", "a string", "an integer",
	                                    "a number", "true or false", "true or false", "null"};
	*v = json_object_get(o, key);
	if (!*v)
		return optional ? ATM_OK : BAD("%s: missing \"%s\"", where, key);
	bool ok = json_typeof(*v) == type || (type == JSON_REAL && json_is_number(*v)) ||
	          (type == JSON_TRUE && json_is_boolean(*v)) || (optional && json_is_null(*v));
	if (!ok)
		return BAD("%s: \"%s\" must be %s", where, key, names[type]);
	if (json_is_null(*v))
		*v = NULL;
	return ATM_OK;
}

static atm_status parse_loc(const char *where, const char *s, unsigned *loc)
{
	if (!strcmp(s, "fast"))
		*loc = ATM_LOC_FAST;
	else if (!strcmp(s, "slow"))
		*loc = ATM_LOC_SLOW;
	else
		return BAD("%s: location '%s' is not valid (valid: fast, slow)", where, s);
	return ATM_OK;
}

/* check_keys -- every member of o is one of keys */
static atm_status check_keys(json_t *o, const char *where, const char *const *keys)
{
	char valid[256];
	const char *k = atm_json_unknown_key(o, keys, valid, sizeof valid);
	return k ? BAD("%s: unknown key \"%s\" (valid: %s)", where, k, valid) : ATM_OK;
}

/* read_rounds -- the solver's "rounds": each defragmentation round's creation and solve time */
static atm_status read_rounds(json_t *solver, atm_plan_info *info)
{
	json_t *arr, *el, *v;
	size_t i;
	char where[48];
	atm_status rc = get(solver, "solver", "rounds", JSON_ARRAY, true, &arr);
	if (rc < 0 || !arr)
		return rc;
	if (json_array_size(arr) > ATM_PLAN_MAX_ROUNDS)
		return BAD("solver: \"rounds\" lists %zu rounds; a plan records at most %d",
		           json_array_size(arr), ATM_PLAN_MAX_ROUNDS);
	json_array_foreach(arr, i, el) {
		static const char *const keys[] = {"creation_s", "solve_s", NULL};
		double *dst[] = {&info->round_creation_s[i], &info->round_solve_s[i]};
		snprintf(where, sizeof where, "solver.rounds[%zu]", i);
		if (!json_is_object(el))
			return BAD("%s: must be an object", where);
		if ((rc = check_keys(el, where, keys)) < 0)
			return rc;
		for (int k = 0; k < 2; k++) {
			if ((rc = get(el, where, keys[k], JSON_REAL, true, &v)) < 0)
				return rc;
			*dst[k] = v ? json_number_value(v) : -1;
		}
	}
	info->n_rounds = (int)json_array_size(arr);
	return ATM_OK;
}

/* read_ratio -- "ratio": the slow:fast ratio the limit came from, or null */
static atm_status read_ratio(json_t *root, atm_plan_info *info)
{
	static const char *const keys[] = {"slow", "fast", NULL};
	json_t *r, *sv, *fv;
	atm_status rc = get(root, "top level", "ratio", JSON_OBJECT, true, &r);
	if (rc < 0 || !r)
		return rc;
	if ((rc = check_keys(r, "ratio", keys)) < 0 ||
	    (rc = get(r, "ratio", "slow", JSON_REAL, false, &sv)) < 0 ||
	    (rc = get(r, "ratio", "fast", JSON_REAL, false, &fv)) < 0)
		return rc;
	double s = json_number_value(sv), f = json_number_value(fv);
	if (!(s >= 0 && f >= 0 && s + f > 0 && isfinite(s + f)))
		return BAD("ratio: slow %g and fast %g must be non-negative and not both 0", s, f);
	info->ratio_slow = s;
	info->ratio_fast = f;
	return ATM_OK;
}

static atm_status read_header(json_t *root, const atm_graph *g, atm_plan_info *info)
{
	static const char *const top[] = {"format", "version", "graph", "formulation",
	                                  "fast_limit_bytes", "predicted_runtime_s",
	                                  "predicted_recompute_s", "estimated",
	                                  "ratio", "solver",
	                                  "tensors", "moves", "recomputes", "algorithms",
	                                  "workspace_bytes", NULL};
	json_t *v, *gr;
	char digest[17];
	atm_status rc;
	if (!json_is_object(root))
		return BAD("the top level must be an object");
	if ((rc = check_keys(root, "top level", top)) < 0)
		return rc;
	if ((rc = get(root, "top level", "format", JSON_STRING, false, &v)) < 0)
		return rc;
	if (strcmp(json_string_value(v), PJ_FORMAT))
		return BAD("\"format\" is \"%s\"; a plan file has \"" PJ_FORMAT "\"", json_string_value(v));
	if ((rc = get(root, "top level", "version", JSON_INTEGER, false, &v)) < 0)
		return rc;
	if (json_integer_value(v) != PJ_VERSION)
		return BAD("version %lld is not supported (this autotm reads version %d)",
		           (long long)json_integer_value(v), PJ_VERSION);
	if ((rc = get(root, "top level", "graph", JSON_OBJECT, false, &gr)) < 0)
		return rc;
	if ((rc = get(gr, "graph", "name", JSON_STRING, false, &v)) < 0)
		return rc;
	if (strcmp(json_string_value(v), atm_graph_name(g)))
		return BAD("the plan is for graph '%s', not '%s'", json_string_value(v), atm_graph_name(g));
	if ((rc = get(gr, "graph", "digest", JSON_STRING, false, &v)) < 0)
		return rc;
	atm_graph_digest(g, digest);
	if (strcmp(json_string_value(v), digest))
		return BAD("the plan was made for another version of graph '%s' (digest %s, this graph "
		           "has %s: different sizes, batch or structure)", atm_graph_name(g),
		           json_string_value(v), digest);
	if ((rc = get(root, "top level", "formulation", JSON_STRING, false, &v)) < 0)
		return rc;
	snprintf(info->formulation, sizeof info->formulation, "%s", json_string_value(v));
	if ((rc = get(root, "top level", "fast_limit_bytes", JSON_INTEGER, true, &v)) < 0)
		return rc;
	info->fast_limit_bytes = v ? json_integer_value(v) : 0;
	if (info->fast_limit_bytes < 0)
		return BAD("\"fast_limit_bytes\" must be >= 0 (0: no limit)");
	if ((rc = get(root, "top level", "predicted_runtime_s", JSON_REAL, true, &v)) < 0)
		return rc;
	info->predicted_runtime_s = v ? json_number_value(v) : -1;
	if ((rc = get(root, "top level", "predicted_recompute_s", JSON_REAL, true, &v)) < 0)
		return rc;
	info->predicted_recompute_s = v ? json_number_value(v) : -1;
	if (v && !(info->predicted_recompute_s >= 0 && isfinite(info->predicted_recompute_s)))
		return BAD("\"predicted_recompute_s\" must be a number of seconds >= 0");
	if ((rc = get(root, "top level", "estimated", JSON_TRUE, true, &v)) < 0)
		return rc;
	info->estimated = v && json_is_true(v);
	if ((rc = get(root, "top level", "solver", JSON_OBJECT, true, &gr)) < 0)
		return rc;
	if (gr) {
		const char *keys[] = {"creation_s", "solve_s", "mip_gap"};
		double *dst[] = {&info->creation_s, &info->solve_s, &info->mip_gap};
		for (int i = 0; i < 3; i++) {
			if ((rc = get(gr, "solver", keys[i], JSON_REAL, true, &v)) < 0)
				return rc;
			*dst[i] = v ? json_number_value(v) : -1;
		}
		if ((rc = get(gr, "solver", "status", JSON_STRING, true, &v)) < 0)
			return rc;
		snprintf(info->solver_status, sizeof info->solver_status, "%s",
		         v ? json_string_value(v) : "");
		/* "name" came with the choice of solver: plans written before lack it */
		if ((rc = get(gr, "solver", "name", JSON_STRING, true, &v)) < 0)
			return rc;
		if (v && strlen(json_string_value(v)) >= sizeof info->solver)
			return BAD("solver: \"name\" '%.40s' is too long for a solver's name (at most %zu "
			           "characters)", json_string_value(v), sizeof info->solver - 1);
		snprintf(info->solver, sizeof info->solver, "%s", v ? json_string_value(v) : "");
		if ((rc = read_rounds(gr, info)) < 0)
			return rc;
	}
	return read_ratio(root, info);
}

static atm_status read_tensors(json_t *root, atm_plan *p)
{
	const atm_graph *g = atm_plan_graph(p);
	int32_t nt = atm_graph_n_tensors(g);
	json_t *arr, *el;
	size_t i;
	char where[96];
	atm_status rc = get(root, "top level", "tensors", JSON_ARRAY, false, &arr);
	if (rc < 0)
		return rc;
	if ((int64_t)json_array_size(arr) != nt)
		return BAD("\"tensors\" lists %zu tensors but graph '%s' has %d", json_array_size(arr),
		           atm_graph_name(g), nt);
	json_array_foreach(arr, i, el) {
		static const char *const keys[] = {"name", "location", NULL};
		json_t *name, *loc;
		unsigned l = 0;
		snprintf(where, sizeof where, "tensors[%zu]", i);
		if (!json_is_object(el))
			return BAD("%s: must be an object", where);
		if ((rc = check_keys(el, where, keys)) < 0 ||
		    (rc = get(el, where, "name", JSON_STRING, false, &name)) < 0 ||
		    (rc = get(el, where, "location", JSON_STRING, false, &loc)) < 0 ||
		    (rc = parse_loc(where, json_string_value(loc), &l)) < 0)
			return rc;
		if (strcmp(json_string_value(name), atm_graph_tensor(g, (int32_t)i)->name))
			return BAD("%s: tensor '%s' where the graph has '%s' (tensors are listed in graph "
			           "order)", where, json_string_value(name), atm_graph_tensor(g, (int32_t)i)->name);
		if ((rc = atm_plan_set_location(p, (int32_t)i, l)) < 0)
			return atm_err_prefix(rc, "%s: ", where);
	}
	return ATM_OK;
}

static atm_status read_moves(json_t *root, atm_plan *p)
{
	const atm_graph *g = atm_plan_graph(p);
	json_t *arr, *el, *v;
	size_t i;
	char where[64];
	atm_status rc = get(root, "top level", "moves", JSON_ARRAY, false, &arr);
	if (rc < 0)
		return rc;
	json_array_foreach(arr, i, el) {
		static const char *const keys[] = {"tensor", "to", "after", "after_node", "mode", "until",
		                                   NULL};
		atm_move m = {0};
		snprintf(where, sizeof where, "moves[%zu]", i);
		if (!json_is_object(el))
			return BAD("%s: must be an object", where);
		if ((rc = check_keys(el, where, keys)) < 0 ||
		    (rc = get(el, where, "tensor", JSON_STRING, false, &v)) < 0)
			return rc;
		m.tensor = atm_graph_find_tensor(g, json_string_value(v));
		if (m.tensor < 0)
			return BAD("%s: graph '%s' has no tensor '%s'", where, atm_graph_name(g),
			           json_string_value(v));
		if ((rc = get(el, where, "to", JSON_STRING, false, &v)) < 0 ||
		    (rc = parse_loc(where, json_string_value(v), &m.to)) < 0 ||
		    (rc = get(el, where, "after", JSON_INTEGER, false, &v)) < 0)
			return rc;
		json_int_t after = json_integer_value(v);
		if (after < -1 || after >= atm_graph_n_nodes(g))
			return BAD("%s: \"after\" is %lld; valid: -1 (before the first node) to %d", where,
			           (long long)after, atm_graph_n_nodes(g) - 1);
		m.after = (int32_t)after;
		if ((rc = get(el, where, "after_node", JSON_STRING, true, &v)) < 0)
			return rc;
		if (v && (m.after < 0 || strcmp(json_string_value(v), atm_graph_node(g, m.after)->name)))
			return BAD("%s: \"after_node\" '%s' is not node %d", where, json_string_value(v),
			           m.after);
		if ((rc = get(el, where, "mode", JSON_STRING, false, &v)) < 0)
			return rc;
		if (!strcmp(json_string_value(v), "async"))
			m.async = true;
		else if (strcmp(json_string_value(v), "sync"))
			return BAD("%s: mode '%s' is not valid (valid: sync, async)", where,
			           json_string_value(v));
		if ((rc = get(el, where, "until", JSON_INTEGER, !m.async, &v)) < 0)
			return rc;
		if (v && (json_integer_value(v) < 0 || json_integer_value(v) > atm_graph_n_nodes(g)))
			return BAD("%s: \"until\" is %lld; valid: 0 to %d", where,
			           (long long)json_integer_value(v), atm_graph_n_nodes(g));
		m.until = v ? (int32_t)json_integer_value(v) : m.after + 1;
		if ((rc = atm_plan_add_move(p, &m)) < 0)
			return atm_err_prefix(rc, "%s: ", where);
	}
	return ATM_OK;
}

/* read_node_index -- el's integer key, a node index of g: 0 to n_nodes - 1 */
static atm_status read_node_index(json_t *el, const char *where, const char *key,
                                  const atm_graph *g, int32_t *node)
{
	json_t *v;
	atm_status rc = get(el, where, key, JSON_INTEGER, false, &v);
	if (rc < 0)
		return rc;
	json_int_t k = json_integer_value(v);
	if (k < 0 || k >= atm_graph_n_nodes(g))
		return BAD("%s: \"%s\" is %lld; valid: 0 to %d (a node's index)", where, key, (long long)k,
		           atm_graph_n_nodes(g) - 1);
	*node = (int32_t)k;
	return ATM_OK;
}

/* read_recomputes -- the optional "recomputes": each tensor dropped after one node and made
 * again before another */
static atm_status read_recomputes(json_t *root, atm_plan *p)
{
	const atm_graph *g = atm_plan_graph(p);
	json_t *arr, *el, *v;
	size_t i;
	char where[64];
	atm_status rc = get(root, "top level", "recomputes", JSON_ARRAY, true, &arr);
	if (rc < 0 || !arr)
		return rc;
	json_array_foreach(arr, i, el) {
		static const char *const keys[] = {"tensor", "drop_after", "before", NULL};
		atm_recompute r = {0};
		snprintf(where, sizeof where, "recomputes[%zu]", i);
		if (!json_is_object(el))
			return BAD("%s: must be an object", where);
		if ((rc = check_keys(el, where, keys)) < 0 ||
		    (rc = get(el, where, "tensor", JSON_STRING, false, &v)) < 0)
			return rc;
		r.tensor = atm_graph_find_tensor(g, json_string_value(v));
		if (r.tensor < 0)
			return BAD("%s: graph '%s' has no tensor '%s'", where, atm_graph_name(g),
			           json_string_value(v));
		if ((rc = read_node_index(el, where, "drop_after", g, &r.drop_after)) < 0 ||
		    (rc = read_node_index(el, where, "before", g, &r.before)) < 0)
			return rc;
		if ((rc = atm_plan_add_recompute(p, &r)) < 0)
			return atm_err_prefix(rc, "%s: ", where);
	}
	return ATM_OK;
}

/* set_algo -- atm_plan_set_algo with a file's integer: one out of range is refused there */
static atm_status set_algo(atm_plan *p, int32_t node, json_int_t v)
{
	return atm_plan_set_algo(p, node, v < 0 || v > 1000 ? -1 : (int)v);
}

/* set_workspace -- atm_plan_set_workspace with a file's integer */
static atm_status set_workspace(atm_plan *p, int32_t node, json_int_t v)
{
	return atm_plan_set_workspace(p, node, v);
}

/* read_by_node -- an optional {node name: integer} object under key, each integer given to
 * set for its node ("algorithms", "workspace_bytes") */
static atm_status read_by_node(json_t *root, atm_plan *p, const char *key,
                               atm_status (*set)(atm_plan *p, int32_t node, json_int_t v))
{
	const atm_graph *g = atm_plan_graph(p);
	json_t *obj, *v;
	const char *name;
	atm_status rc = get(root, "top level", key, JSON_OBJECT, true, &obj);
	if (rc < 0 || !obj)
		return rc;
	json_object_foreach(obj, name, v) {
		int32_t k = -1;
		for (int32_t i = 0; i < atm_graph_n_nodes(g) && k < 0; i++)
			if (!strcmp(atm_graph_node(g, i)->name, name))
				k = i;
		if (k < 0)
			return BAD("%s: graph '%s' has no node '%s'", key, atm_graph_name(g), name);
		if (!json_is_integer(v))
			return BAD("%s: '%s' must be an integer, not %s", key, name, atm_json_type_name(v));
		if ((rc = set(p, k, json_integer_value(v))) < 0)
			return atm_err_prefix(rc, "%s: ", key);
	}
	return ATM_OK;
}

/* check_rules -- the rules a plan's moves and recomputations keep across the step (a move of a
 * dead tensor, a tensor that ends the step elsewhere than it starts, a recomputation whose
 * node's input is gone, a layout that overflows its limit), as the schedule checks them: here,
 * so that the message names the file */
static atm_status check_rules(const atm_plan *p)
{
	atm_schedule *s = NULL;
	atm_status rc = atm_schedule_new(&s, p);
	atm_schedule_destroy(s);
	return rc;
}

atm_status atm_plan_load_buffer(atm_plan **out, const atm_graph *g, const char *data, size_t len,
                                const char *origin)
{
	json_error_t e;
	atm_plan *p = NULL;
	atm_status rc;
	*out = NULL;
	json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &e);
	/* jansson fails with no message at all when its first allocation fails */
	if (!root && (json_error_code(&e) == json_error_out_of_memory || !e.text[0]))
		return atm_err(ATM_E_NOMEM, "out of memory reading %s", origin);
	if (!root)
		return atm_err(ATM_E_INPUT, "%s: line %d column %d: JSON syntax error: %s", origin, e.line,
		               e.column, e.text);
	if ((rc = atm_plan_new(&p, g)) < 0)
		goto fail;
	if ((rc = read_header(root, g, atm_plan_info_of(p))) < 0 || (rc = read_tensors(root, p)) < 0 ||
	    (rc = read_moves(root, p)) < 0 || (rc = read_recomputes(root, p)) < 0 ||
	    (rc = read_by_node(root, p, "algorithms", set_algo)) < 0 ||
	    (rc = read_by_node(root, p, "workspace_bytes", set_workspace)) < 0 ||
	    (rc = check_rules(p)) < 0) {
		atm_err_prefix(rc, "%s: ", origin);
		goto fail;
	}
	json_decref(root);
	*out = p;
	return ATM_OK;
fail:
	json_decref(root);
	atm_plan_destroy(p);
	return rc;
}

atm_status atm_plan_load(atm_plan **out, const atm_graph *g, const char *path)
{
	char *data = NULL;
	size_t len = 0;
	*out = NULL;
	atm_status rc = atm_read_file_max(path, ATM_PLAN_FILE_MAX_BYTES, "plan file", &data, &len);
	if (rc < 0)
		return rc;
	rc = atm_plan_load_buffer(out, g, data, len, path);
	free(data);
	return rc;
}
