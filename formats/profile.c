/* profile.c -- a profile in memory: one machine's kernel times by signature and configuration, and its move bandwidths */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "formats_internal.h"

/* machine_check -- the strings are terminated and the thread count sane */
static atm_status machine_check(const atm_profile_machine *m)
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

/* atm_profile_new -- an empty profile of m */
atm_status atm_profile_new(atm_profile **out, const atm_profile_machine *m, const char *path)
{
	atm_profile *p = NULL;
	atm_status rc;
	*out = NULL;
	if ((rc = machine_check(m)) < 0)
		return rc;
	p = calloc(1, sizeof *p);
	if (!p)
		return atm_err(ATM_E_NOMEM, "out of memory making a profile");
	p->m = *m;
	p->kernels = json_object();
	p->dirty = json_object();
	p->steps = json_object();
	p->steps_dirty = json_object();
	if (!p->kernels || !p->dirty || !p->steps || !p->steps_dirty || (path && !(p->path = strdup(path)))) {
		atm_profile_destroy(p);
		return atm_err(ATM_E_NOMEM, "out of memory making a profile");
	}
	*out = p;
	return ATM_OK;
}

/* atm_profile_destroy -- release the profile (nothing is saved) */
void atm_profile_destroy(atm_profile *p)
{
	if (!p)
		return;
	json_decref(p->kernels);
	json_decref(p->dirty);
	json_decref(p->steps);
	json_decref(p->steps_dirty);
	free(p->path);
	free(p);
}

/* atm_profile_machine_get -- the machine the profile is of */
const atm_profile_machine *atm_profile_machine_get(const atm_profile *p)
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

/* machine_summary -- "AMD EPYC, 2 threads, dram:0 / pmem-dir emulating optane, cpu-onednn-2.6.3" */
static const char *machine_summary(const atm_profile_machine *m, char *buf, size_t len)
{
	snprintf(buf, len, "%s, %d thread%s, %s / %s%s%s, %s%s", m->cpu, m->n_threads,
	         m->n_threads == 1 ? "" : "s", m->fast_tier, m->slow_tier,
	         m->emulation[0] ? " emulating " : "", m->emulation, m->backend,
	         m->estimated ? ", estimated" : "");
	return buf;
}

/* entry_of -- a checked entry object back into a struct */
static void entry_of(json_t *o, atm_profile_entry *e)
{
	e->min_s = json_number_value(json_object_get(o, "min_s"));
	e->median_s = json_number_value(json_object_get(o, "median_s"));
	e->count = (int32_t)json_integer_value(json_object_get(o, "count"));
	e->scratch_bytes = (int64_t)json_integer_value(json_object_get(o, "scratch_bytes"));
	e->estimated = json_is_true(json_object_get(o, "estimated"));
}

/* rounded -- x to ATM_PROFILE_TIME_DIGITS significant digits, what a save and a load give back */
static double rounded(double x)
{
	char buf[40];
	snprintf(buf, sizeof buf, "%.*g", ATM_PROFILE_TIME_DIGITS, x);
	return strtod(buf, NULL);
}

/* in_step_of -- a checked in-step object back into a struct */
static void in_step_of(json_t *o, atm_profile_in_step *s)
{
	s->step_s = json_number_value(json_object_get(o, "step_s"));
	s->isolated_s = json_number_value(json_object_get(o, "isolated_s"));
	s->n_nodes = (int32_t)json_integer_value(json_object_get(o, "n_nodes"));
}

/* in_step_current -- the signature's in-step object when it holds the statistic this autotm
 * measures (ATM_PROFILE_IN_STEP_STAT), else NULL */
static json_t *in_step_current(json_t *cfgs)
{
	json_t *st = json_object_get(cfgs, ATM_PROFILE_IN_STEP_KEY);
	const char *stat = json_string_value(json_object_get(st, "statistic"));
	return stat && !strcmp(stat, ATM_PROFILE_IN_STEP_STAT) ? st : NULL;
}

/* atm_profile_get -- look up node in config, naming the kernel when it is missing */
atm_status atm_profile_get(const atm_profile *p, const atm_graph *g, int32_t node, uint32_t config,
                           atm_profile_entry *out)
{
	return atm_profile_get_algo(p, g, node, config, 0, out);
}

/* atm_profile_get_algo -- the same with one of the node's algorithms */
atm_status atm_profile_get_algo(const atm_profile *p, const atm_graph *g, int32_t node,
                                uint32_t config, int algo, atm_profile_entry *out)
{
	char *sig = NULL, cfg[ATM_CONFIG_NAME_MAX], m[512];
	memset(out, 0, sizeof *out);
	atm_status rc = atm_node_key(g, node, config, algo, "atm_profile_get", &sig, cfg);
	if (rc < 0)
		return rc;
	json_t *cfgs = json_object_get(p->kernels, sig), *e = json_object_get(cfgs, cfg);
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
	json_t *st = p->isolated ? NULL : in_step_current(cfgs);
	if (st) {
		atm_profile_in_step s;
		in_step_of(st, &s);
		double shift = s.step_s - s.isolated_s;
		out->min_s = fmax(0, out->min_s + shift);
		out->median_s = fmax(out->min_s, out->median_s + shift);
	}
	free(sig);
	return ATM_OK;
}

/* in_step_sig -- node's signature, for its in-step calibration; the caller frees it */
static atm_status in_step_sig(const atm_graph *g, int32_t node, const char *who, char **sig)
{
	char cfg[ATM_CONFIG_NAME_MAX];
	return atm_node_key(g, node, 0, 0, who, sig, cfg);
}

/* atm_profile_put_in_step -- record the signature's in-step time, kept for the next save */
atm_status atm_profile_put_in_step(atm_profile *p, const atm_graph *g, int32_t node,
                                   const atm_profile_in_step *s)
{
	char *sig = NULL;
	if (!(s->step_s >= 0) || !(s->step_s <= ATM_PROFILE_MAX_S) || !(s->isolated_s >= 0) ||
	    !(s->isolated_s <= ATM_PROFILE_MAX_S) || s->n_nodes < 1)
		return atm_err(ATM_E_USAGE, "atm_profile_put_in_step: node %d: times must be from 0 to "
		               "%g s and n_nodes >= 1 (got %g, %g, %d)", node, ATM_PROFILE_MAX_S,
		               s->step_s, s->isolated_s, s->n_nodes);
	if (p->m.estimated)
		return atm_err(ATM_E_USAGE, "atm_profile_put_in_step: an estimated profile holds no "
		               "measured step");
	atm_status rc = in_step_sig(g, node, "atm_profile_put_in_step", &sig);
	if (rc < 0)
		return rc;
	json_t *o = json_pack("{s:f, s:f, s:i, s:s}", "step_s", rounded(s->step_s), "isolated_s",
	                      rounded(s->isolated_s), "n_nodes", (json_int_t)s->n_nodes,
	                      "statistic", ATM_PROFILE_IN_STEP_STAT);
	if (!o || atm_profile_set_entry(p->kernels, sig, ATM_PROFILE_IN_STEP_KEY, o) < 0 ||
	    atm_profile_set_entry(p->dirty, sig, ATM_PROFILE_IN_STEP_KEY, o) < 0)
		rc = atm_err(ATM_E_NOMEM, "out of memory recording an in-step time");
	json_decref(o);
	free(sig);
	return rc;
}

/* atm_profile_get_in_step -- the signature's in-step time, when measured by this autotm */
atm_status atm_profile_get_in_step(const atm_profile *p, const atm_graph *g, int32_t node,
                                   atm_profile_in_step *out)
{
	char *sig = NULL;
	memset(out, 0, sizeof *out);
	atm_status rc = in_step_sig(g, node, "atm_profile_get_in_step", &sig);
	if (rc < 0)
		return rc;
	json_t *st = in_step_current(json_object_get(p->kernels, sig));
	if (!st) {
		rc = atm_err(ATM_E_NOTFOUND, "kernel '%s' of '%s' has no in-step time in the profile",
		             atm_graph_node(g, node)->name, atm_graph_name(g));
	} else {
		in_step_of(st, out);
	}
	free(sig);
	return rc;
}

/* atm_profile_use_in_step -- turn the calibration on or off */
void atm_profile_use_in_step(atm_profile *p, bool on)
{
	p->isolated = !on;
}

/* atm_profile_uses_in_step -- is the calibration on */
bool atm_profile_uses_in_step(const atm_profile *p)
{
	return !p->isolated;
}

/* atm_profile_put_calibration -- record g's calibration step, kept for the next save */
atm_status atm_profile_put_calibration(atm_profile *p, const atm_graph *g,
                                       const atm_profile_calibration *c)
{
	char digest[17];
	if (!(c->step_s > 0) || !(c->step_s <= ATM_PROFILE_MAX_S))
		return atm_err(ATM_E_USAGE, "atm_profile_put_calibration: the step must take more than "
		               "0 and at most %g s (got %g)", ATM_PROFILE_MAX_S, c->step_s);
	if (!memchr(c->measured_at, '\0', sizeof c->measured_at) || !atm_utc_valid(c->measured_at))
		return atm_err(ATM_E_USAGE, "atm_profile_put_calibration: measured_at is not a UTC time "
		               "like 2025-01-31T12:00:00Z");
	if (p->m.estimated)
		return atm_err(ATM_E_USAGE, "atm_profile_put_calibration: an estimated profile holds no "
		               "measured step");
	atm_graph_digest(g, digest);
	json_t *o = json_pack("{s:s, s:f, s:s}", "graph", atm_graph_name(g), "step_s",
	                      rounded(c->step_s), "measured_at", c->measured_at);
	if (!o || json_object_set(p->steps, digest, o) < 0 ||
	    json_object_set(p->steps_dirty, digest, o) < 0) {
		json_decref(o);
		return atm_err(ATM_E_NOMEM, "out of memory recording a calibration step");
	}
	json_decref(o);
	return ATM_OK;
}

/* atm_profile_get_calibration -- g's calibration step, when the profile holds one */
atm_status atm_profile_get_calibration(const atm_profile *p, const atm_graph *g,
                                       atm_profile_calibration *out)
{
	char digest[17];
	memset(out, 0, sizeof *out);
	atm_graph_digest(g, digest);
	json_t *o = json_object_get(p->steps, digest);
	if (!o)
		return atm_err(ATM_E_NOTFOUND, "the profile holds no calibration step of '%s' (digest %s)",
		               atm_graph_name(g), digest);
	out->step_s = json_number_value(json_object_get(o, "step_s"));
	snprintf(out->measured_at, sizeof out->measured_at, "%s",
	         json_string_value(json_object_get(o, "measured_at")));
	return ATM_OK;
}

/* atm_profile_has -- is node in config held */
bool atm_profile_has(const atm_profile *p, const atm_graph *g, int32_t node, uint32_t config)
{
	char *sig = NULL, cfg[ATM_CONFIG_NAME_MAX];
	if (atm_node_key(g, node, config, 0, "atm_profile_has", &sig, cfg) < 0)
		return false;
	bool has = json_object_get(json_object_get(p->kernels, sig), cfg) != NULL;
	free(sig);
	return has;
}


/* atm_profile_set_entry -- kernels[sig][cfg] = e (a new reference is taken) */
int atm_profile_set_entry(json_t *kernels, const char *sig, const char *cfg, json_t *e)
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
                           const atm_profile_entry *e)
{
	return atm_profile_put_algo(p, g, node, config, 0, e);
}

/* atm_profile_put_algo -- the same for one of the node's algorithms */
atm_status atm_profile_put_algo(atm_profile *p, const atm_graph *g, int32_t node, uint32_t config,
                                int algo, const atm_profile_entry *e)
{
	char *sig = NULL, cfg[ATM_CONFIG_NAME_MAX];
	json_t *o = NULL;
	atm_status rc;
	if (!(e->min_s >= 0) || !(e->median_s >= e->min_s) || !(e->median_s <= ATM_PROFILE_MAX_S) ||
	    e->count < 1 || e->scratch_bytes < 0)
		return atm_err(ATM_E_USAGE, "atm_profile_put: node %d: times must be 0 <= min_s <= "
		               "median_s <= %g s, count >= 1 (got %g, %g, %d)", node, ATM_PROFILE_MAX_S,
		               e->min_s, e->median_s, e->count);
	if (e->estimated != p->m.estimated)
		return atm_err(ATM_E_USAGE, "atm_profile_put: an %s entry in a %s profile",
		               e->estimated ? "estimated" : "measured",
		               p->m.estimated ? "estimated" : "measured");
	if ((rc = atm_node_key(g, node, config, algo, "atm_profile_put", &sig, cfg)) < 0)
		return rc;
	o = json_object();
	if (!o || json_object_set_new(o, "min_s", json_real(rounded(e->min_s))) < 0 ||
	    json_object_set_new(o, "median_s", json_real(rounded(e->median_s))) < 0 ||
	    json_object_set_new(o, "count", json_integer(e->count)) < 0 ||
	    json_object_set_new(o, "scratch_bytes", json_integer(e->scratch_bytes)) < 0 ||
	    (e->estimated && json_object_set_new(o, "estimated", json_true()) < 0))
		goto nomem;
	bool had = json_object_get(json_object_get(p->kernels, sig), cfg) != NULL;
	if (atm_profile_set_entry(p->kernels, sig, cfg, o) < 0 ||
	    atm_profile_set_entry(p->dirty, sig, cfg, o) < 0)
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
atm_status atm_profile_get_moves(const atm_profile *p, atm_profile_moves *out)
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
atm_status atm_profile_set_moves(atm_profile *p, const atm_profile_moves *m)
{
	if (!(m->to_fast_gbps >= ATM_PROFILE_MIN_GBPS) || !(m->to_fast_gbps <= ATM_PROFILE_MAX_GBPS) ||
	    !(m->to_slow_gbps >= ATM_PROFILE_MIN_GBPS) || !(m->to_slow_gbps <= ATM_PROFILE_MAX_GBPS))
		return atm_err(ATM_E_USAGE, "atm_profile_set_moves: bandwidths must be from %g to %g "
		               "GB/s (got %g, %g)", ATM_PROFILE_MIN_GBPS, ATM_PROFILE_MAX_GBPS,
		               m->to_fast_gbps, m->to_slow_gbps);
	if (!(m->overlap_loss >= 0) || !(m->overlap_loss <= 1))
		return atm_err(ATM_E_USAGE, "atm_profile_set_moves: overlap_loss must be from 0 to 1 "
		               "(got %g)", m->overlap_loss);
	for (int d = 0; m->by_direction && d < 2; d++)
		if (!(m->kernel_loss[d] >= 0) || !(m->kernel_loss[d] <= 1) ||
		    !(m->copy_stretch[d] >= 1) || !(m->copy_stretch[d] <= ATM_PROFILE_MAX_STRETCH))
			return atm_err(ATM_E_USAGE, "atm_profile_set_moves: copies to %s: kernel_loss must "
			               "be from 0 to 1 and copy_stretch from 1 to %g (got %g, %g)",
			               d ? "slow" : "fast", ATM_PROFILE_MAX_STRETCH, m->kernel_loss[d],
			               m->copy_stretch[d]);
	const double rates[3] = {m->slow_read_gbps, m->slow_write_gbps, m->fast_gbps};
	for (int i = 0; i < 3; i++)
		if (rates[i] != 0 && !(rates[i] >= ATM_PROFILE_MIN_GBPS && rates[i] <= ATM_PROFILE_MAX_GBPS))
			return atm_err(ATM_E_USAGE, "atm_profile_set_moves: the slow tier's rates and the "
			               "fast bandwidth must be 0 (unknown) or from %g to %g GB/s (got %g, "
			               "%g, %g)", ATM_PROFILE_MIN_GBPS, ATM_PROFILE_MAX_GBPS, rates[0],
			               rates[1], rates[2]);
	if (m->estimated != p->m.estimated)
		return atm_err(ATM_E_USAGE, "atm_profile_set_moves: %s bandwidths in a %s profile",
		               m->estimated ? "estimated" : "measured",
		               p->m.estimated ? "estimated" : "measured");
	p->moves = *m;
	p->moves.to_fast_gbps = rounded(m->to_fast_gbps);
	p->moves.to_slow_gbps = rounded(m->to_slow_gbps);
	p->moves.overlap_loss = rounded(m->overlap_loss);
	p->moves.slow_read_gbps = rounded(m->slow_read_gbps);
	p->moves.slow_write_gbps = rounded(m->slow_write_gbps);
	p->moves.fast_gbps = rounded(m->fast_gbps);
	for (int d = 0; d < 2; d++) {
		p->moves.kernel_loss[d] = m->by_direction ? rounded(m->kernel_loss[d]) : 0;
		p->moves.copy_stretch[d] = m->by_direction ? rounded(m->copy_stretch[d]) : 1;
	}
	p->has_moves = p->moves_dirty = true;
	return ATM_OK;
}

void atm_profile_overlap(const atm_profile_moves *m, unsigned loc, double *kernel_loss,
                         double *copy_stretch)
{
	int d = loc == ATM_LOC_SLOW;
	*kernel_loss = m->by_direction ? m->kernel_loss[d] : m->overlap_loss;
	*copy_stretch = m->by_direction ? m->copy_stretch[d] : 1;
}

/* atm_profile_unsaved -- anything put since the last save, or a rebuild pending */
bool atm_profile_unsaved(const atm_profile *p)
{
	return json_object_size(p->dirty) || json_object_size(p->steps_dirty) || p->moves_dirty ||
	       p->replace;
}

/* atm_profile_saved -- what was merged is in the file now */
void atm_profile_saved(atm_profile *p)
{
	json_object_clear(p->dirty);
	json_object_clear(p->steps_dirty);
	p->moves_dirty = false;
	p->replace = false;
}
