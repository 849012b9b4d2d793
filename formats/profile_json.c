/* profile_json.c -- the profile cache's format: one JSON file of many machines' sections, read and checked whole, merged and written a line per entry */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "formats_internal.h"

#define PF_FORMAT "autotm-profile"
#define PF_VERSION 1
/* an element of the file on one line */
#define PF_DUMP JSON_REAL_PRECISION(ATM_PROFILE_TIME_DIGITS)

/* ---------------------------------------------------------------- machines */

/* atm_profile_machine_json -- the machine key as the file writes it */
json_t *atm_profile_machine_json(const atm_profile_machine *m)
{
	bool ok = true;
	json_t *o = json_object();
	atm_json_set_new(o, "cpu", json_string(m->cpu), &ok);
	atm_json_set_new(o, "n_threads", json_integer(m->n_threads), &ok);
	atm_json_set_new(o, "backend", json_string(m->backend), &ok);
	atm_json_set_new(o, "fast_tier", json_string(m->fast_tier), &ok);
	atm_json_set_new(o, "slow_tier", json_string(m->slow_tier), &ok);
	atm_json_set_new(o, "emulation", json_string(m->emulation), &ok);
	atm_json_set_new(o, "estimated", json_boolean(m->estimated), &ok);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* machine_equal -- every field the same: timings are comparable */
static bool machine_equal(const atm_profile_machine *a, const atm_profile_machine *b)
{
	return !strcmp(a->cpu, b->cpu) && a->n_threads == b->n_threads &&
	       !strcmp(a->backend, b->backend) && !strcmp(a->fast_tier, b->fast_tier) &&
	       !strcmp(a->slow_tier, b->slow_tier) && !strcmp(a->emulation, b->emulation) &&
	       a->estimated == b->estimated;
}

/* ---------------------------------------------------------------- reading */

/* Where a check is in the file, for messages: "machines[0].kernels[\"conv...\"]". */
struct where {
	const char *path;
	char at[ATM_SIGNATURE_MAX + 128];
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
	if (!w->at[0] && !field[0])
		return atm_err(ATM_E_INPUT, "%s: %s", w->path, msg);
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

/* get_number -- a number from lo to hi */
static atm_status get_number(const struct where *w, json_t *o, const char *key, double lo,
                             double hi, double *out)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return bad(w, key, "missing");
	if (!json_is_number(v))
		return bad(w, key, "must be a number, not %s", atm_json_type_name(v));
	double x = json_number_value(v);
	if (!(x >= lo))
		return bad(w, key, "must be at least %g, not %g", lo, x);
	if (!(x <= hi))
		return bad(w, key, "must be at most %g, not %g", hi, x);
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
static atm_status parse_machine(const struct where *w, json_t *o, atm_profile_machine *m)
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

/* The overlap by direction: all four or none (caches from before it was measured lack them). */
#define DIRECTION_FIELDS                                                                           \
	"kernel_loss_to_fast", "kernel_loss_to_slow", "copy_stretch_to_fast", "copy_stretch_to_slow"

/* parse_directions -- the moves object's overlap by direction, where it has it, and the
 * conditions it was measured in */
static atm_status parse_directions(const struct where *w, json_t *o, atm_profile_moves *mv)
{
	static const char *const names[] = {DIRECTION_FIELDS};
	int n = 0;
	int64_t threads = 0;
	atm_status rc;
	mv->copy_stretch[0] = mv->copy_stretch[1] = 1;
	for (int i = 0; i < 4; i++)
		n += json_object_get(o, names[i]) != NULL;
	if (n && !mv->overlap_measured)
		return bad(w, "", "has the overlap by direction but no overlap_loss");
	if (n && n < 4)
		for (int i = 0; i < 4; i++)
			if (!json_object_get(o, names[i]))
				return bad(w, names[i], "missing: the overlap by direction has all of %s, %s, "
				           "%s and %s or none", names[0], names[1], names[2], names[3]);
	if (n && ((rc = get_number(w, o, names[0], 0, 1, &mv->kernel_loss[0])) < 0 ||
	          (rc = get_number(w, o, names[1], 0, 1, &mv->kernel_loss[1])) < 0 ||
	          (rc = get_number(w, o, names[2], 1, ATM_PROFILE_MAX_STRETCH,
	                           &mv->copy_stretch[0])) < 0 ||
	          (rc = get_number(w, o, names[3], 1, ATM_PROFILE_MAX_STRETCH,
	                           &mv->copy_stretch[1])) < 0))
		return rc;
	mv->by_direction = n == 4;
	if (json_object_get(o, "overlap_threads") &&
	    (rc = get_integer(w, o, "overlap_threads", 1, 1 << 20, &threads)) < 0)
		return rc;
	mv->overlap_threads = (int)threads;
	if (json_object_get(o, "overlap_wait_policy") &&
	    (rc = get_text(w, o, "overlap_wait_policy", true, mv->overlap_wait_policy,
	                   sizeof mv->overlap_wait_policy)) < 0)
		return rc;
	return ATM_OK;
}

/* The slow tier's rates and the fast bandwidth (absent from older caches: unknown). */
#define RATE_FIELDS "slow_read_gbps", "slow_write_gbps", "fast_gbps"

/* parse_rates -- the moves object's rates, where it has them */
static atm_status parse_rates(const struct where *w, json_t *o, atm_profile_moves *mv)
{
	static const char *const names[] = {RATE_FIELDS};
	double *to[] = {&mv->slow_read_gbps, &mv->slow_write_gbps, &mv->fast_gbps};
	atm_status rc;
	for (int i = 0; i < 3; i++)
		if (json_object_get(o, names[i]) &&
		    (rc = get_number(w, o, names[i], ATM_PROFILE_MIN_GBPS, ATM_PROFILE_MAX_GBPS,
		                     to[i])) < 0)
			return rc;
	return ATM_OK;
}

/* parse_moves -- a moves object, bandwidths above 0 */
static atm_status parse_moves(const struct where *w, json_t *o, atm_profile_moves *mv)
{
	static const char *const fields[] = {"to_fast_gbps", "to_slow_gbps", "overlap_loss",
	                                     "estimated", DIRECTION_FIELDS, "overlap_threads",
	                                     "overlap_wait_policy", RATE_FIELDS, NULL};
	atm_status rc;
	memset(mv, 0, sizeof *mv);
	if (!json_is_object(o))
		return bad(w, "", "must be an object, not %s", atm_json_type_name(o));
	if ((rc = only_fields(w, o, fields)) < 0 ||
	    (rc = get_number(w, o, "to_fast_gbps", ATM_PROFILE_MIN_GBPS, ATM_PROFILE_MAX_GBPS,
	                     &mv->to_fast_gbps)) < 0 ||
	    (rc = get_number(w, o, "to_slow_gbps", ATM_PROFILE_MIN_GBPS, ATM_PROFILE_MAX_GBPS,
	                     &mv->to_slow_gbps)) < 0 ||
	    (rc = get_bool(w, o, "estimated", false, &mv->estimated)) < 0)
		return rc;
	/* caches from before it was measured lack it: the profiler measures it then */
	if (json_object_get(o, "overlap_loss")) {
		if ((rc = get_number(w, o, "overlap_loss", 0, 1, &mv->overlap_loss)) < 0)
			return rc;
		mv->overlap_measured = true;
	}
	if ((rc = parse_rates(w, o, mv)) < 0)
		return rc;
	return parse_directions(w, o, mv);
}

/* parse_entry -- one configuration's entry, every field checked */
static atm_status parse_entry(const struct where *w, json_t *o, bool machine_estimated,
                              atm_profile_entry *e)
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
	    (rc = get_number(w, o, "min_s", 0, ATM_PROFILE_MAX_S, &e->min_s)) < 0 ||
	    (rc = get_number(w, o, "median_s", 0, ATM_PROFILE_MAX_S, &e->median_s)) < 0 ||
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

/* parse_in_step -- a kernel's in-step calibration, every field checked */
static atm_status parse_in_step(const struct where *w, json_t *o)
{
	static const char *const fields[] = {"step_s", "isolated_s", "n_nodes", "statistic", NULL};
	double step, isolated;
	int64_t n;
	atm_status rc;
	if (!json_is_object(o))
		return bad(w, "", "must be an object {\"step_s\", \"isolated_s\", \"n_nodes\"}, not "
		           "%s", atm_json_type_name(o));
	if ((rc = only_fields(w, o, fields)) < 0 ||
	    (rc = get_number(w, o, "step_s", 0, ATM_PROFILE_MAX_S, &step)) < 0 ||
	    (rc = get_number(w, o, "isolated_s", 0, ATM_PROFILE_MAX_S, &isolated)) < 0 ||
	    (rc = get_integer(w, o, "n_nodes", 1, INT32_MAX, &n)) < 0)
		return rc;
	json_t *stat = json_object_get(o, "statistic");
	if (stat && (!json_is_string(stat) || strcmp(json_string_value(stat), ATM_PROFILE_IN_STEP_STAT)))
		return bad(w, "statistic", "must be \"%s\" (or absent: an earlier autotm's, "
		           "measured again at the next profile)", ATM_PROFILE_IN_STEP_STAT);
	return ATM_OK;
}

/* is_digest -- 16 lowercase hex digits, as atm_graph_digest writes */
static bool is_digest(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");
	return n == 16 && !s[n];
}

/* check_steps -- a section's calibration steps, every field checked */
static atm_status check_steps(struct where *w, json_t *steps, bool estimated)
{
	static const char *const fields[] = {"graph", "step_s", "measured_at", NULL};
	size_t base = strlen(w->at);
	const char *digest;
	json_t *o;
	atm_status rc;
	if (estimated)
		return bad(w, "", "an estimated profile holds no measured step");
	if (!json_is_object(steps))
		return bad(w, "", "must be an object (graph digest -> step), not %s",
		           atm_json_type_name(steps));
	json_object_foreach(steps, digest, o) {
		char graph[256], at[ATM_UTC_TEXT_MAX + 1];
		double step;
		snprintf(w->at + base, sizeof w->at - base, "[\"%.40s\"]", digest);
		if (!is_digest(digest))
			return bad(w, "", "not a graph digest (16 hexadecimal digits)");
		if (!json_is_object(o))
			return bad(w, "", "must be an object {\"graph\", \"step_s\", \"measured_at\"}, "
			           "not %s", atm_json_type_name(o));
		if ((rc = only_fields(w, o, fields)) < 0 ||
		    (rc = get_text(w, o, "graph", false, graph, sizeof graph)) < 0 ||
		    (rc = get_number(w, o, "step_s", 0, ATM_PROFILE_MAX_S, &step)) < 0 ||
		    (rc = get_text(w, o, "measured_at", false, at, sizeof at)) < 0)
			return rc;
		if (!(step > 0))
			return bad(w, "step_s", "must be more than 0");
		if (!atm_utc_valid(at))
			return bad(w, "measured_at", "must be a UTC time like \"2025-01-31T12:00:00Z\"");
	}
	w->at[base] = '\0';
	return ATM_OK;
}

/* where_key -- append [\"key\"] to w->at */
static void where_key(struct where *w, size_t base, const char *key)
{
	snprintf(w->at + base, sizeof w->at - base, "[\"%s\"]", key);
}

/* check_shift -- a signature's in-step calibration (step_s - isolated_s, added to every
 * configuration's time) must leave the configuration it was measured on, all fast with the
 * first algorithm, above 0 s: a larger isolated_s would predict the kernel at 0 s */
static atm_status check_shift(struct where *w, size_t base, json_t *cfgs)
{
	json_t *st = json_object_get(cfgs, ATM_PROFILE_IN_STEP_KEY), *e;
	const char *cfg;
	if (!st || !json_object_get(st, "statistic"))
		return ATM_OK; /* an earlier autotm's: not used, measured again */
	double step = json_number_value(json_object_get(st, "step_s"));
	double isolated = json_number_value(json_object_get(st, "isolated_s"));
	json_object_foreach(cfgs, cfg, e) {
		if (!strcmp(cfg, ATM_PROFILE_IN_STEP_KEY) || strpbrk(cfg, "S#"))
			continue;
		double t = json_number_value(json_object_get(e, "min_s"));
		if (step > 0 && !(t + step - isolated > 0)) {
			where_key(w, base, ATM_PROFILE_IN_STEP_KEY);
			return bad(w, "isolated_s", "%g s is more than step_s (%g s) plus the time of "
			           "configuration %s (%g s), so the kernel would be predicted at 0 s; "
			           "isolated_s is the kernel's time alone when its step was measured",
			           isolated, step, cfg, t);
		}
	}
	return ATM_OK;
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
		if (!sig[0] || strlen(sig) >= ATM_SIGNATURE_MAX)
			return bad(w, "", "a kernel signature must have 1 to %d characters",
			           ATM_SIGNATURE_MAX - 1);
		if (!json_is_object(cfgs))
			return bad(w, "", "must be an object (configuration -> entry), not %s", atm_json_type_name(cfgs));
		size_t base2 = strlen(w->at);
		json_object_foreach(cfgs, cfg, e) {
			where_key(w, base2, cfg);
			if (!strcmp(cfg, ATM_PROFILE_IN_STEP_KEY)) {
				atm_status rc = estimated ? bad(w, "", "an estimated profile holds no measured "
				                                "step")
				                          : parse_in_step(w, e);
				if (rc < 0)
					return rc;
				continue;
			}
			if (!atm_config_name_valid(cfg))
				return bad(w, "", "not a configuration name (F or S per input, '/', F or S per "
				           "output, like \"FS/F\"; \"S+/F+\" for a grouped node)");
			atm_profile_entry entry;
			atm_status rc = parse_entry(w, e, estimated, &entry);
			if (rc < 0)
				return rc;
		}
		atm_status rc = check_shift(w, base2, cfgs);
		if (rc < 0)
			return rc;
	}
	w->at[base] = '\0';
	return ATM_OK;
}

/* check_doc -- every field of a cache file, so that a broken one is refused
 * whole and named, never half-read and then overwritten */
static atm_status check_doc(json_t *root, const char *path)
{
	static const char *const top[] = {"format", "version", "machines", NULL};
	static const char *const sec_fields[] = {"machine", "moves", ATM_PROFILE_STEPS_KEY, "kernels",
	                                         NULL};
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
	atm_profile_machine *seen = calloc(json_array_size(ms) + 1, sizeof *seen);
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
			atm_profile_moves moves;
			snprintf(w.at, sizeof w.at, "machines[%zu].moves", i);
			if ((rc = parse_moves(&w, mv, &moves)) < 0)
				goto done;
		}
		json_t *steps = json_object_get(sec, ATM_PROFILE_STEPS_KEY);
		snprintf(w.at, sizeof w.at, "machines[%zu]." ATM_PROFILE_STEPS_KEY, i);
		if (steps && (rc = check_steps(&w, steps, seen[i].estimated)) < 0)
			goto done;
		snprintf(w.at, sizeof w.at, "machines[%zu].kernels", i);
		if ((rc = check_kernels(&w, k, seen[i].estimated)) < 0)
			goto done;
	}
	rc = ATM_OK;
done:
	free(seen);
	return rc;
}

/* parse_doc -- the checked cache document of text; origin names it in messages */
static atm_status parse_doc(const char *text, size_t len, const char *origin, json_t **doc)
{
	json_error_t jerr;
	atm_status rc;
	*doc = NULL;
	if (len == 0)
		return atm_err(ATM_E_INPUT, "%s: the file is empty, not a profile cache", origin);
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	/* jansson fails with no message at all when its first allocation fails */
	if (!root && (json_error_code(&jerr) == json_error_out_of_memory || !jerr.text[0]))
		return atm_err(ATM_E_NOMEM, "out of memory reading %s", origin);
	if (!root)
		return atm_err(ATM_E_INPUT, "%s:%d:%d: %s", origin, jerr.line, jerr.column, jerr.text);
	if ((rc = check_doc(root, origin)) < 0) {
		json_decref(root);
		return rc;
	}
	*doc = root;
	return ATM_OK;
}

/* find_section -- the machines[] element of m in doc, NULL when none */
static json_t *find_section(json_t *doc, const atm_profile_machine *m)
{
	size_t i;
	json_t *sec;
	struct where w = {.path = ""};
	json_array_foreach(json_object_get(doc, "machines"), i, sec) {
		atm_profile_machine other;
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
		n += (int64_t)json_object_size(cfgs) -
		     (json_object_get(cfgs, ATM_PROFILE_IN_STEP_KEY) ? 1 : 0);
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

/* sorted_keys -- o's keys in sorted order (malloc'd; NULL when out of memory, s failed) */
static const char **sorted_keys(atm_text *s, json_t *o)
{
	size_t n = json_object_size(o), i = 0;
	const char **keys = malloc((n ? n : 1) * sizeof *keys);
	const char *key;
	json_t *v;
	if (!keys) {
		s->failed = true;
		return NULL;
	}
	json_object_foreach(o, key, v)
		keys[i++] = key;
	qsort(keys, n, sizeof *keys, cmp_str);
	return keys;
}

/* emit_steps -- the calibration steps, one line per graph in digest order */
static void emit_steps(atm_text *s, json_t *steps)
{
	size_t n = json_object_size(steps);
	const char **keys = sorted_keys(s, steps);
	if (!keys)
		return;
	atm_text_str(s, "{");
	for (size_t i = 0; i < n; i++) {
		atm_text_str(s, i ? ",\n    " : "\n    ");
		key_text(s, keys[i]);
		atm_text_json(s, json_object_get(steps, keys[i]), PF_DUMP);
	}
	atm_text_str(s, n ? "\n   }" : "}");
	free(keys);
}

/* emit_kernels -- one line per configuration, kernels in sorted order so that
 * the file diffs well and two saves of the same data are the same bytes */
static void emit_kernels(atm_text *s, json_t *kernels)
{
	size_t n = json_object_size(kernels), i;
	const char **keys = sorted_keys(s, kernels);
	if (!keys)
		return;
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
		if (json_object_size(json_object_get(sec, ATM_PROFILE_STEPS_KEY))) {
			atm_text_str(&s, ",\n   \"" ATM_PROFILE_STEPS_KEY "\": ");
			emit_steps(&s, json_object_get(sec, ATM_PROFILE_STEPS_KEY));
		}
		atm_text_str(&s, ",\n   \"kernels\": ");
		emit_kernels(&s, json_object_get(sec, "kernels"));
		atm_text_str(&s, "\n  }");
	}
	atm_text_str(&s, json_array_size(json_object_get(doc, "machines")) ? "\n ]\n}\n" : "]\n}\n");
	return atm_text_finish(&s, text, len, "the profile cache");
}

/* new_doc -- an empty cache document; NULL when out of memory */
static json_t *new_doc(void)
{
	bool ok = true;
	json_t *doc = json_object();
	atm_json_set_new(doc, "format", json_string(PF_FORMAT), &ok);
	atm_json_set_new(doc, "version", json_integer(PF_VERSION), &ok);
	atm_json_set_new(doc, "machines", json_array(), &ok);
	if (!ok) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* moves_json -- the moves object of a section; NULL when out of memory */
static json_t *moves_json(const atm_profile_moves *m)
{
	json_t *o = json_pack("{s:f, s:f, s:b}", "to_fast_gbps", m->to_fast_gbps, "to_slow_gbps",
	                      m->to_slow_gbps, "estimated", m->estimated);
	bool ok = o != NULL;
	if (o && m->overlap_measured)
		atm_json_set_new(o, "overlap_loss", json_real(m->overlap_loss), &ok);
	if (o && m->overlap_measured && m->by_direction) {
		atm_json_set_new(o, "kernel_loss_to_fast", json_real(m->kernel_loss[0]), &ok);
		atm_json_set_new(o, "kernel_loss_to_slow", json_real(m->kernel_loss[1]), &ok);
		atm_json_set_new(o, "copy_stretch_to_fast", json_real(m->copy_stretch[0]), &ok);
		atm_json_set_new(o, "copy_stretch_to_slow", json_real(m->copy_stretch[1]), &ok);
	}
	if (o && m->overlap_measured && m->overlap_threads > 0)
		atm_json_set_new(o, "overlap_threads", json_integer(m->overlap_threads), &ok);
	if (o && m->overlap_measured && m->overlap_wait_policy[0])
		atm_json_set_new(o, "overlap_wait_policy", json_string(m->overlap_wait_policy), &ok);
	static const char *const rates[] = {RATE_FIELDS};
	const double rate[] = {m->slow_read_gbps, m->slow_write_gbps, m->fast_gbps};
	for (int i = 0; o && i < 3; i++)
		if (rate[i] > 0)
			atm_json_set_new(o, rates[i], json_real(rate[i]), &ok);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* add_section -- a new, empty section of m at the end of doc; NULL when out of memory */
static json_t *add_section(json_t *doc, const atm_profile_machine *m)
{
	json_t *sec = json_pack("{s:o, s:o}", "machine", atm_profile_machine_json(m), "kernels",
	                        json_object());
	if (!sec || json_array_append_new(json_object_get(doc, "machines"), sec) < 0)
		return NULL;
	return sec;
}

/* ---------------------------------------------------------------- the profile and its file */

/* take_section -- make sec's entries and moves the profile's own */
static void take_section(atm_profile *p, json_t *sec)
{
	json_t *k = json_object_get(sec, "kernels"), *mv = json_object_get(sec, "moves");
	json_t *steps = json_object_get(sec, ATM_PROFILE_STEPS_KEY);
	json_decref(p->kernels);
	p->kernels = json_incref(k);
	if (steps) {
		json_decref(p->steps);
		p->steps = json_incref(steps);
	} else {
		json_object_clear(p->steps); /* a section without steps holds none */
	}
	p->n_entries = count_entries(k);
	if (mv && !p->moves_dirty) {
		struct where w = {.path = ""};
		p->has_moves = parse_moves(&w, mv, &p->moves) == ATM_OK;
	}
}

/* atm_profile_read_cache -- the section of p's machine in a cache file's text */
atm_status atm_profile_read_cache(atm_profile *p, const char *text, size_t len, bool rebuild)
{
	json_t *doc = NULL;
	const char *origin = p->path ? p->path : "profile cache";
	p->replace = rebuild;
	if (!text)
		return ATM_OK;
	atm_status rc = parse_doc(text, len, origin, &doc);
	if (rc == ATM_E_INPUT && rebuild) {
		/* rebuilding on purpose: the broken file is replaced at the first save */
		atm_err_clear();
		return ATM_OK;
	}
	if (rc < 0)
		return rc;
	json_t *sec = rebuild ? NULL : find_section(doc, &p->m);
	if (sec)
		take_section(p, sec);
	json_decref(doc);
	return ATM_OK;
}

/* merge -- what was put since the last save into sec */
static atm_status merge(atm_profile *p, json_t *sec)
{
	const char *sig, *cfg;
	json_t *cfgs, *e;
	if (p->replace) {
		if (json_object_set_new(sec, "kernels", json_object()) < 0)
			return atm_err(ATM_E_NOMEM, "out of memory merging a profile");
		json_object_del(sec, "moves");
		json_object_del(sec, ATM_PROFILE_STEPS_KEY);
	}
	json_t *kernels = json_object_get(sec, "kernels");
	json_t *steps = json_object_get(sec, ATM_PROFILE_STEPS_KEY);
	if (json_object_size(p->steps_dirty) && !steps &&
	    json_object_set_new(sec, ATM_PROFILE_STEPS_KEY, steps = json_object()) < 0)
		return atm_err(ATM_E_NOMEM, "out of memory merging a profile");
	json_object_foreach(p->steps_dirty, sig, e)
		if (json_object_set(steps, sig, e) < 0)
			return atm_err(ATM_E_NOMEM, "out of memory merging a profile");
	json_object_foreach(p->dirty, sig, cfgs)
		json_object_foreach(cfgs, cfg, e)
			if (atm_profile_set_entry(kernels, sig, cfg, e) < 0)
				return atm_err(ATM_E_NOMEM, "out of memory merging a profile");
	if (p->moves_dirty && json_object_set_new(sec, "moves", moves_json(&p->moves)) < 0)
		return atm_err(ATM_E_NOMEM, "out of memory merging a profile");
	return ATM_OK;
}

/* atm_profile_merge_cache -- the cache file's text with what p holds unsaved merged in */
atm_status atm_profile_merge_cache(atm_profile *p, const char *text, size_t len, char **out,
                                   size_t *out_len)
{
	json_t *doc = NULL;
	const char *origin = p->path ? p->path : "profile cache";
	atm_status rc = text ? parse_doc(text, len, origin, &doc) : ATM_OK;
	*out = NULL;
	*out_len = 0;
	if (rc == ATM_E_INPUT && p->replace) {
		/* rebuilding on purpose: the broken file is replaced */
		atm_err_clear();
		rc = ATM_OK;
	} else if (rc < 0) {
		return rc;
	}
	if (!doc && !(doc = new_doc()))
		return atm_err(ATM_E_NOMEM, "out of memory merging a profile");
	json_t *sec = find_section(doc, &p->m);
	if (!sec && !(sec = add_section(doc, &p->m)))
		rc = atm_err(ATM_E_NOMEM, "out of memory merging a profile");
	if (rc == ATM_OK)
		rc = merge(p, sec);
	if (rc == ATM_OK)
		rc = emit_doc(doc, out, out_len);
	/* the file will hold ours and everyone else's: take theirs in too */
	if (rc == ATM_OK)
		take_section(p, sec);
	json_decref(doc);
	return rc;
}
