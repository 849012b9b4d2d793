/* profiler.c -- profile a graph: unique kernels, their configurations, what the cache lacks measured or estimated, saved in batches */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "atm_profiler.h"

/* Progress is redrawn at most this often. */
#define PROGRESS_EVERY_S 0.25
/* A batch save is skipped while the time since the last one is below this
 * many times what that save took: on a large cache (tens of MB) saving every
 * 50 fast configurations would otherwise cost more than measuring them. */
#define SAVE_COST_FACTOR 10.0

struct atm_prof {
	const atm_graph *g;
	atm_prof_opts o;
	atm_kbench *kb;
	atm_backend_caps caps; /* what the backend o.gpu chooses can do */
	atm_profile_machine m;
	atm_prof_roofline rf; /* estimating: the model, once calibrated */
	bool have_rf;
	atm_tier_desc slow;   /* the kernel timer's slow tier, as it was first opened */
	bool has_slow;
};

/* One (signature, configuration) pair to have in the profile: node is the
 * first node with that signature that has the configuration. */
struct task {
	int32_t node;
	uint32_t config;
	int32_t uniq;   /* index of the signature */
	double weight;  /* a rough cost, for the time-left estimate */
};

/* The graph's work list. */
struct work {
	int32_t n_unique;
	struct task *tasks;
	int64_t n_tasks;
};

/* build_work -- every distinct (signature, configuration) pair of g, in node order; on a
 * GPU (device_only) the all-fast configuration alone: kernels read device memory only */
static atm_status build_work(const atm_graph *g, bool device_only, struct work *w)
{
	int32_t nn = atm_graph_n_nodes(g);
	json_t *sigs = json_object(), *pairs = json_object();
	char sig[ATM_SIGNATURE_MAX], key[ATM_SIGNATURE_MAX + 32], name[32];
	atm_prof_roofline rf;
	int64_t cap = 0;
	atm_status rc = ATM_OK;
	memset(w, 0, sizeof *w);
	atm_prof_roofline_default(&rf, 1);
	if (!sigs || !pairs)
		goto nomem;
	for (int32_t k = 0; k < nn; k++) {
		if ((rc = atm_node_signature(g, k, sig, sizeof sig)) < 0)
			goto fail;
		json_t *u = json_object_get(sigs, sig);
		if (!u) {
			u = json_integer(w->n_unique++);
			if (!u || json_object_set_new(sigs, sig, u) < 0)
				goto nomem;
		}
		atm_prof_work pw;
		if ((rc = atm_prof_kernel_work(g, k, &pw)) < 0)
			goto fail;
		for (int i = 0; i < (device_only ? 1 : atm_node_n_configs(g, k)); i++) {
			uint32_t c = atm_node_config_at(g, k, i);
			snprintf(key, sizeof key, "%s %s", sig, atm_node_config_name(g, k, c, name, sizeof name));
			if (json_object_get(pairs, key))
				continue;
			if (json_object_set_new(pairs, key, json_true()) < 0)
				goto nomem;
			if (w->n_tasks == cap) {
				cap = cap ? 2 * cap : 256;
				struct task *t = realloc(w->tasks, (size_t)cap * sizeof *t);
				if (!t)
					goto nomem;
				w->tasks = t;
			}
			atm_profile_entry e;
			atm_prof_estimate(&rf, g, k, c, &e);
			w->tasks[w->n_tasks++] = (struct task){k, c, (int32_t)json_integer_value(u), e.min_s};
		}
	}
	json_decref(sigs);
	json_decref(pairs);
	return ATM_OK;
nomem:
	rc = atm_err(ATM_E_NOMEM, "out of memory listing the kernels of '%s'", atm_graph_name(g));
fail:
	json_decref(sigs);
	json_decref(pairs);
	free(w->tasks);
	memset(w, 0, sizeof *w);
	return rc;
}

/* atm_prof_count -- the work list's figures without running anything */
atm_status atm_prof_count(const atm_graph *g, atm_prof_report *r)
{
	struct work w;
	memset(r, 0, sizeof *r);
	atm_status rc = build_work(g, false, &w);
	if (rc < 0)
		return rc;
	r->n_kernels = atm_graph_n_nodes(g);
	r->n_unique_kernels = w.n_unique;
	r->n_configs = w.n_tasks;
	free(w.tasks);
	return ATM_OK;
}

static atm_status open_bench(atm_prof *pr);
static atm_status model_machine(atm_prof *pr);

/* atm_prof_new -- a profiler with the tiers of a run open */
atm_status atm_prof_new(atm_prof **out, const atm_graph *g, const atm_prof_opts *o)
{
	atm_prof *pr = NULL;
	atm_status rc;
	*out = NULL;
	pr = calloc(1, sizeof *pr);
	if (!pr)
		return atm_err(ATM_E_NOMEM, "out of memory making a profiler");
	pr->g = g;
	if (o)
		pr->o = *o;
	if (pr->o.reps <= 0)
		pr->o.reps = 5;
	if (pr->o.flush_configs <= 0)
		pr->o.flush_configs = 50;
	if (!(pr->o.flush_s > 0))
		pr->o.flush_s = 30;
	/* the tiers are opened in estimate mode too: they are part of the machine
	 * key, and opening them allocates nothing of the graph */
	if ((rc = atm_backend_caps_get(pr->o.gpu.mode, &pr->caps)) < 0)
		goto fail;
	if (pr->caps.modelled) {
		if ((rc = model_machine(pr)) < 0)
			goto fail;
	} else {
		if ((rc = open_bench(pr)) < 0)
			goto fail;
		atm_kbench_machine(pr->kb, &pr->m);
	}
	pr->m.estimated = pr->o.estimate;
	*out = pr;
	return ATM_OK;
fail:
	atm_prof_destroy(pr);
	return rc;
}

/* model_machine -- the machine key of a GPU model (nothing is opened): estimated only */
static atm_status model_machine(atm_prof *pr)
{
	const atm_gpu_model *m;
	atm_status rc = atm_gpu_model_get(pr->o.gpu.model, &m);
	if (rc < 0)
		return rc;
	if (!pr->o.estimate)
		return atm_err(ATM_E_USAGE, "the %s is a GPU model: its kernels are estimated, never "
		               "measured (give --estimate)", m->title);
	memset(&pr->m, 0, sizeof pr->m);
	snprintf(pr->m.cpu, sizeof pr->m.cpu, "%s (GPU model)", m->title);
	pr->m.n_threads = 1;
	snprintf(pr->m.backend, sizeof pr->m.backend, "gpu-model-%s", m->name);
	snprintf(pr->m.fast_tier, sizeof pr->m.fast_tier, "gpu-device");
	snprintf(pr->m.slow_tier, sizeof pr->m.slow_tier, "pinned-host");
	return ATM_OK;
}

/* open_bench -- the kernel timer and its tiers, opened again after an in-step measurement
 * closed them (two backends with live memkind kinds in one process are not safe); none for a
 * GPU model */
static atm_status open_bench(atm_prof *pr)
{
	if (pr->caps.modelled)
		return ATM_OK;
	atm_kbench_opts ko = {.tiers = pr->o.tiers, .emulate = pr->o.emulate, .gpu = pr->o.gpu,
	                      .reps = pr->o.reps, .seed = pr->o.seed, .stop = pr->o.stop};
	if (pr->kb)
		return ATM_OK;
	atm_status rc = atm_kbench_new(&pr->kb, pr->g, &ko);
	if (rc == ATM_OK && !pr->has_slow) {
		atm_tier_desc fast;
		atm_kbench_tiers(pr->kb, &fast, &pr->slow);
		pr->has_slow = true;
	}
	return rc;
}

/* atm_prof_destroy -- release the profiler; NULL is fine */
void atm_prof_destroy(atm_prof *pr)
{
	if (!pr)
		return;
	atm_kbench_destroy(pr->kb);
	free(pr);
}

/* atm_prof_slow_tier -- the slow tier kernels are timed with */
const atm_tier_desc *atm_prof_slow_tier(const atm_prof *pr)
{
	return pr->has_slow ? &pr->slow : NULL;
}

/* atm_prof_get_machine -- the machine key its entries will carry */
void atm_prof_get_machine(const atm_prof *pr, atm_profile_machine *m)
{
	*m = pr->m;
}

/* atm_prof_get_roofline -- the model an estimating run used */
atm_status atm_prof_get_roofline(const atm_prof *pr, atm_prof_roofline *rf)
{
	if (!pr->have_rf) {
		memset(rf, 0, sizeof *rf);
		return atm_err(ATM_E_NOTFOUND, "no roofline: this profiler has estimated nothing");
	}
	*rf = pr->rf;
	return ATM_OK;
}

/* calibrated -- pr->rf's calibrated side: kept in the machine file for this machine, else
 * measured (seconds) and kept there; note says which, and why a kept one could not be used (a
 * file that cannot be read, written or parsed costs a calibration, never the run) */
static atm_status calibrated(atm_prof *pr, const atm_kbench_opts *ko, char *note, size_t len)
{
	char path[PATH_MAX] = "";
	atm_status rc;
	if (pr->o.machine_file) {
		snprintf(path, sizeof path, "%s", pr->o.machine_file);
		if ((rc = atm_machine_file_check(path)) < 0)
			return rc;
	} else if ((rc = atm_machine_file_path(path, sizeof path)) < 0) { /* checks it too */
		return rc;
	}
	if (path[0]) {
		rc = atm_prof_calibration_load(path, &pr->m, &pr->rf);
		if (rc == ATM_OK) {
			snprintf(note, len, "the roofline calibrated before, kept in %s", path);
			return ATM_OK;
		}
		if (rc == ATM_E_INPUT)
			snprintf(note, len, "%s; calibrated again", atm_errmsg());
		atm_err_clear();
	}
	if ((rc = atm_prof_roofline_calibrate(&pr->rf, ko)) < 0)
		return rc;
	if (!path[0])
		return ATM_OK;
	size_t n = strlen(note);
	if (atm_prof_calibration_save(path, &pr->m, &pr->rf) < 0)
		snprintf(note + n, len - n, "%sthe calibration could not be kept: %s", n ? "; " : "",
		         atm_errmsg());
	else if (!n)
		snprintf(note, len, "the roofline calibrated and kept in %s", path);
	atm_err_clear();
	return ATM_OK;
}

/* roofline_for -- the model of this run: the caller's, or calibrated here
 * (once per profiler) with slow figures from the emulation spec, or from the
 * real slow tier (as fast as fast memory when hwloc does not know its speed) */
static atm_status roofline_for(atm_prof *pr, char *note, size_t note_len)
{
	atm_prof_roofline *rf = &pr->rf;
	atm_kbench_opts ko = {.tiers = pr->o.tiers, .reps = pr->o.reps, .seed = pr->o.seed,
	                      .stop = pr->o.stop};
	atm_tier_desc fast, slow;
	atm_status rc;
	if (pr->o.roofline) {
		*rf = *pr->o.roofline;
		pr->have_rf = true;
		return ATM_OK;
	}
	if (pr->caps.modelled) {
		const atm_gpu_model *m;
		if ((rc = atm_gpu_model_get(pr->o.gpu.model, &m)) < 0)
			return rc;
		atm_prof_roofline_gpu(rf, m);
		pr->have_rf = true;
		return ATM_OK;
	}
	atm_prof_roofline_default(rf, pr->m.n_threads);
	if ((rc = calibrated(pr, &ko, note, note_len)) < 0)
		return rc;
	atm_kbench_tiers(pr->kb, &fast, &slow);
	if (pr->o.emulate) {
		atm_emu_spec spec;
		if ((rc = atm_emu_spec_resolve_scaled(pr->o.emulate, pr->o.machine_file, pr->o.stop,
		                                      &spec, NULL, 0)) < 0)
			return rc;
		rf->emulated = true;
		rf->slow_read_gbps = spec.read_gbps;
		rf->slow_write_gbps = spec.write_gbps;
		rf->ref_fast_gbps = spec.fast_gbps > 0 ? spec.fast_gbps : ATM_EMU_REFERENCE_FAST_GBPS;
	} else {
		rf->slow_read_gbps = slow.read_gbps > 0 ? slow.read_gbps : rf->fast_gbps;
		rf->slow_write_gbps = slow.write_gbps > 0 ? slow.write_gbps : rf->fast_gbps;
		rf->ref_fast_gbps = rf->fast_gbps;
	}
	pr->have_rf = true;
	return ATM_OK;
}

/* estimate_moves -- a synchronous copy in the model: read and write at the
 * fast bandwidth, then what the slow side adds */
static void estimate_moves(const atm_prof_roofline *rf, atm_profile_moves *m)
{
	double per_byte_fast = 1.0 / (rf->fast_gbps * 1e9);
	double to_slow, to_fast;
	if (rf->emulated) {
		double ref = 1.0 / (rf->ref_fast_gbps * 1e9);
		to_slow = per_byte_fast + fmax(1.0 / (rf->slow_write_gbps * 1e9) - ref, 0);
		to_fast = per_byte_fast + fmax(1.0 / (rf->slow_read_gbps * 1e9) - ref, 0);
	} else {
		to_slow = 0.5 * per_byte_fast + 1.0 / (fmin(rf->slow_write_gbps, rf->fast_gbps) * 1e9);
		to_fast = 0.5 * per_byte_fast + 1.0 / (fmin(rf->slow_read_gbps, rf->fast_gbps) * 1e9);
	}
	m->to_slow_gbps = 1.0 / to_slow / 1e9;
	m->to_fast_gbps = 1.0 / to_fast / 1e9;
	m->slow_read_gbps = rf->slow_read_gbps;
	m->slow_write_gbps = rf->slow_write_gbps;
	m->fast_gbps = rf->emulated ? rf->ref_fast_gbps : rf->fast_gbps;
	m->estimated = true;
}

/* hms -- "1:02:03" or "2:03" */
static const char *hms(double s, char *buf, size_t len)
{
	long t = s > 0 && isfinite(s) ? (long)(s + 0.5) : 0;
	if (t >= 3600)
		snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
	return buf;
}

/* State of one run, for progress and batch saves. */
struct run {
	const struct work *w;
	int32_t *left;         /* per signature: configurations still to do */
	int32_t n_unique_done;
	int64_t n_done, n_cached, n_todo;
	double t_start, t_measure, weight_done, weight_todo;
	double last_draw, last_save, save_cost;
	int since_save;
};

/* draw -- the progress line on stderr, at most every PROGRESS_EVERY_S (and the last) */
static void draw(const atm_prof *pr, struct run *st, bool last)
{
	double t = atm_now_s();
	char a[32], b[32];
	if (!pr->o.progress || (!last && t - st->last_draw < PROGRESS_EVERY_S))
		return;
	st->last_draw = t;
	double spent = t - st->t_measure;
	double left = st->weight_done > 0 ? spent * (st->weight_todo - st->weight_done) / st->weight_done
	                                  : 0;
	fprintf(stderr, "\r  %s kernels %d/%d, configurations %lld/%lld (%lld cached), %s elapsed",
	        pr->o.estimate ? "estimating" : "profiling", st->n_unique_done, st->w->n_unique,
	        (long long)(st->n_cached + st->n_done), (long long)st->w->n_tasks,
	        (long long)st->n_cached, hms(t - st->t_start, a, sizeof a));
	if (!last && st->n_done > 0)
		fprintf(stderr, ", about %s left", hms(left, b, sizeof b));
	fprintf(stderr, "   %s", last ? "\n" : "");
}

/* time_algos -- on a GPU, node's other algorithms (the default one is timed as the
 * configuration), each whose workspace fits ATM_GPU_WORKSPACE_BYTES, into the profile */
static atm_status time_algos(atm_prof *pr, atm_profile *p, int32_t node, uint32_t config)
{
	int n = 0;
	atm_status rc = atm_kbench_algos(pr->kb, node, &n);
	for (int a = 1; rc >= 0 && a < n && a < ATM_MAX_ALGOS; a++) {
		atm_profile_entry e;
		int64_t ws = 0;
		if ((rc = atm_kbench_algo_workspace(pr->kb, node, a, &ws)) < 0)
			break;
		if (ws > ATM_GPU_WORKSPACE_BYTES)
			continue;
		if ((rc = atm_kbench_time_algo(pr->kb, node, config, a, &e)) >= 0)
			rc = atm_profile_put_algo(p, pr->g, node, config, a, &e);
	}
	return rc;
}

/* maybe_save -- a batch save: every flush_configs new entries or flush_s
 * seconds, unless the last save was so recent that saving would dominate */
static atm_status maybe_save(const atm_prof *pr, atm_profile *p, struct run *st)
{
	double t = atm_now_s();
	bool due = st->since_save >= pr->o.flush_configs || t - st->last_save >= pr->o.flush_s;
	if (!due || t - st->last_save < SAVE_COST_FACTOR * st->save_cost)
		return ATM_OK;
	atm_status rc = atm_prof_cache_save(p);
	st->last_save = atm_now_s();
	st->save_cost = st->last_save - t;
	st->since_save = 0;
	return rc;
}

/* measure_overlap -- what an asynchronous copy costs the kernel beside it, measured on g's
 * longest all-fast kernel that computes (not an allreduce, which waits on the network and
 * which every rank would have to run as often: under mpirun each rank picks by its own times) */
static atm_status measure_overlap(atm_prof *pr, const atm_profile *p, atm_profile_moves *mv)
{
	int32_t node = -1;
	double most = -1;
	for (int32_t k = 0; k < atm_graph_n_nodes(pr->g); k++) {
		atm_profile_entry e;
		if (atm_graph_node(pr->g, k)->op == ATM_OP_ALLREDUCE)
			continue;
		if (atm_profile_get(p, pr->g, k, 0, &e) == ATM_OK && e.min_s > most) {
			most = e.min_s;
			node = k;
		}
	}
	atm_err_clear();
	if (node < 0)
		return ATM_OK;
	return atm_kbench_overlap(pr->kb, node, mv);
}

/* in_step_missing -- a signature of g has no in-step time */
static bool in_step_missing(const atm_graph *g, const atm_profile *p)
{
	atm_profile_in_step st;
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++)
		if (atm_profile_get_in_step(p, g, k, &st) < 0) {
			atm_err_clear();
			return true;
		}
	return false;
}

/* step_fits -- the all-fast step of plan fits the memory at hand: on a CPU within half of
 * what is available (a step that does not would swap, or meet the OOM killer, rather than
 * fail); a GPU's executor refuses a plan over its device memory itself */
static bool step_fits(const atm_prof *pr, const atm_plan *plan, char *why, size_t len)
{
	atm_schedule *s = NULL;
	if (pr->caps.device_memory)
		return true;
	if (atm_schedule_new(&s, plan) < 0) {
		snprintf(why, len, "%s", atm_errmsg());
		return false;
	}
	const atm_schedule_stats *st = atm_schedule_stats_get(s);
	int64_t need = st->fast_arena_bytes + st->persistent_fast_bytes, avail = atm_mem_available_bytes();
	atm_schedule_destroy(s);
	if (avail >= 0 && need > avail / 2) {
		char a[32], b[32];
		snprintf(why, len, "its all-fast step takes %s, over half of the %s of memory available",
		         atm_format_bytes(need, a, sizeof a), atm_format_bytes(avail, b, sizeof b));
		return false;
	}
	return true;
}

/* put_in_step -- each signature's mean over its nodes of their times in the fastest measured
 * step, for the signatures the profile lacks. The fastest step is what a run reports, and its
 * kernels are what the prediction is compared with: each kernel's own fastest over the steps
 * would sum below any real step (on DenseNet-264's 6,251 kernels, by 9%). */
static atm_status put_in_step(atm_prof *pr, atm_profile *p, const double *step_s, int32_t *n_put)
{
	const atm_graph *g = pr->g;
	int32_t nn = atm_graph_n_nodes(g);
	char sig[ATM_SIGNATURE_MAX];
	json_t *acc = json_object(); /* signature -> [sum of times, nodes, first node] */
	atm_status rc = acc ? ATM_OK : atm_err(ATM_E_NOMEM, "out of memory timing kernels in a step");
	*n_put = 0;
	for (int32_t k = 0; rc >= 0 && k < nn; k++) {
		if ((rc = atm_node_signature(g, k, sig, sizeof sig)) < 0)
			break;
		json_t *a = json_object_get(acc, sig);
		if (!a && json_object_set_new(acc, sig, a = json_pack("[f, i, i]", 0.0, 0, (int)k)) < 0)
			rc = atm_err(ATM_E_NOMEM, "out of memory timing kernels in a step");
		else if (json_array_set_new(a, 0, json_real(json_real_value(json_array_get(a, 0)) + step_s[k])) < 0 ||
		         json_array_set_new(a, 1, json_integer(json_integer_value(json_array_get(a, 1)) + 1)) < 0)
			rc = atm_err(ATM_E_NOMEM, "out of memory timing kernels in a step");
	}
	bool use = atm_profile_uses_in_step(p);
	atm_profile_use_in_step(p, false); /* the isolated time, as measured */
	const char *key;
	json_t *a;
	if (rc >= 0)
		json_object_foreach(acc, key, a) {
			int32_t k = (int32_t)json_integer_value(json_array_get(a, 2));
			int32_t n = (int32_t)json_integer_value(json_array_get(a, 1));
			atm_profile_in_step st;
			atm_profile_entry e;
			if (atm_profile_get_in_step(p, g, k, &st) == ATM_OK || atm_profile_get(p, g, k, 0, &e) < 0)
				continue;
			st = (atm_profile_in_step){.step_s = json_real_value(json_array_get(a, 0)) / n,
			                           .isolated_s = e.min_s, .n_nodes = n};
			if ((rc = atm_profile_put_in_step(p, g, k, &st)) < 0)
				break;
			(*n_put)++;
		}
	if (rc >= 0)
		atm_err_clear();
	atm_profile_use_in_step(p, use);
	json_decref(acc);
	return rc;
}

/* measure_in_step -- all-fast steps of g run by the executor, as a plan's run would, and
 * each signature's time in the fastest of them recorded beside its configurations, the
 * fastest step itself and when it ran as g's calibration step. The kernel
 * timer's backend is closed first; a step that cannot run here (too large for the memory at
 * hand, the GPU's included) is skipped with the reason in r, and the plan is then priced
 * by the isolated times alone. */
static atm_status measure_in_step(atm_prof *pr, atm_profile *p, atm_prof_report *r)
{
	atm_plan *plan = NULL;
	atm_exec *e = NULL;
	atm_status rc = atm_plan_uniform(&plan, pr->g, ATM_LOC_FAST);
	if (rc < 0)
		return rc;
	if (!step_fits(pr, plan, r->in_step_note, sizeof r->in_step_note))
		goto done;
	atm_kbench_destroy(pr->kb);
	pr->kb = NULL;
	if (pr->o.progress)
		fprintf(stderr, "  timing the kernels inside %d all-fast steps of '%s'\n",
		        ATM_PROF_IN_STEP_ITERS + 1, atm_graph_name(pr->g));
	atm_exec_opts eo = {.iters = ATM_PROF_IN_STEP_ITERS, .seed = pr->o.seed, .tiers = pr->o.tiers,
	                    .emulate = pr->o.emulate, .gpu = pr->o.gpu, .stop = pr->o.stop,
	                    .quiet = true};
	if ((rc = atm_exec_new(&e, plan, &eo)) == ATM_E_NOSPACE || rc == ATM_E_INFEASIBLE) {
		snprintf(r->in_step_note, sizeof r->in_step_note, "%s", atm_errmsg());
		atm_err_clear();
		rc = ATM_OK;
		goto done;
	}
	atm_profile_calibration cal;
	atm_utc_now(cal.measured_at);
	if (rc >= 0 && (rc = atm_exec_run(e)) >= 0)
		rc = put_in_step(pr, p, atm_exec_result_get(e)->step_kernel_s, &r->n_in_step_measured);
	/* the step as a later run will measure it: how fast the machine was when calibrated */
	if (rc >= 0 && (cal.step_s = atm_exec_result_get(e)->actual_runtime_s) > 0)
		rc = atm_profile_put_calibration(p, pr->g, &cal);
	if (rc < 0)
		atm_err_prefix(rc, "timing the kernels in a step: ");
done:
	atm_exec_destroy(e);
	atm_plan_destroy(plan);
	return rc;
}

/* cmp_task -- node order, then configuration order */
static int cmp_task(const void *a, const void *b)
{
	const struct task *x = a, *y = b;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->config < y->config ? -1 : x->config > y->config;
}

/* find_todo -- the configurations of st's work the profile lacks, into todo (a node's one after
 * another: its kernel is built once), counted in st */
static atm_status find_todo(atm_prof *pr, const atm_profile *p, struct run *st, struct task *todo)
{
	for (int64_t i = 0; i < st->w->n_tasks; i++) {
		const struct task *t = &st->w->tasks[i];
		/* a large graph's look-up takes seconds: Ctrl-C ends it too */
		if (i % 1024 == 0 && pr->o.stop && *pr->o.stop) {
			return atm_err(ATM_E_INTERRUPTED, "interrupted after 0 of %lld configurations "
			               "(looking them up in the cache)", (long long)st->w->n_tasks);
		}
		if (atm_profile_has(p, pr->g, t->node, t->config)) {
			st->n_cached++;
			continue;
		}
		st->left[t->uniq]++;
		st->weight_todo += t->weight;
		todo[st->n_todo++] = *t;
	}
	for (int32_t u = 0; u < st->w->n_unique; u++)
		st->n_unique_done += st->left[u] == 0;
	/* a node's configurations one after another: its kernel is built once */
	qsort(todo, (size_t)st->n_todo, sizeof *todo, cmp_task);
	return ATM_OK;
}

/* measure_todo -- time (or estimate) every configuration of todo into the profile, saving as
 * it goes; stops at the first failure or an interrupt */
static atm_status measure_todo(atm_prof *pr, atm_profile *p, struct run *st,
                               const struct task *todo)
{
	atm_status rc = ATM_OK;
	for (int64_t i = 0; i < st->n_todo; i++) {
		const struct task *t = &todo[i];
		atm_profile_entry e;
		if (pr->o.stop && *pr->o.stop) {
			rc = atm_err(ATM_E_INTERRUPTED, "interrupted after %lld of %lld configurations",
			             (long long)st->n_done, (long long)st->n_todo);
			break;
		}
		rc = pr->o.estimate ? atm_prof_estimate(&pr->rf, pr->g, t->node, t->config, &e)
		                    : atm_kbench_time(pr->kb, t->node, t->config, &e);
		/* a kernel of more than a day: no step of it is worth planning (and a profile keeps
		 * none) */
		if (rc >= 0 && !(e.min_s <= ATM_PROFILE_MAX_S && e.median_s <= ATM_PROFILE_MAX_S)) {
			rc = atm_err(ATM_E_INFEASIBLE, "the step is too large to plan on this machine: "
			             "kernel '%s' would take %.3g s%s, over a day (give a smaller batch or "
			             "image)", atm_graph_node(pr->g, t->node)->name, e.min_s,
			             pr->o.estimate ? " by the roofline estimate" : "");
			break;
		}
		if (rc >= 0)
			rc = atm_profile_put(p, pr->g, t->node, t->config, &e);
		if (rc >= 0 && pr->caps.kernel_algos && !pr->o.estimate)
			rc = time_algos(pr, p, t->node, t->config);
		if (rc == ATM_E_INTERRUPTED) { /* between a kernel's repetitions */
			rc = atm_err(ATM_E_INTERRUPTED, "interrupted after %lld of %lld configurations",
			             (long long)st->n_done, (long long)st->n_todo);
			break;
		}
		if (rc < 0) {
			char name[32];
			atm_err_prefix(rc, "kernel '%s' in configuration %s: ",
			               atm_graph_node(pr->g, t->node)->name,
			               atm_node_config_name(pr->g, t->node, t->config, name, sizeof name));
			break;
		}
		st->n_done++;
		st->since_save++;
		st->weight_done += t->weight;
		if (--st->left[t->uniq] == 0)
			st->n_unique_done++;
		draw(pr, st, false);
		/* estimates are made again in seconds: saved once, at the end */
		if (!pr->o.estimate && (rc = maybe_save(pr, p, st)) < 0)
			break;
	}
	return rc;
}

/* keep_measured -- the profile saved whatever stopped the run (rc): an error's message then
 * says where what was measured before it went; an interrupted estimate is not kept */
static atm_status keep_measured(const atm_prof *pr, atm_profile *p, const struct run *st,
                                atm_status rc)
{
	char msg[2048];
	snprintf(msg, sizeof msg, "%s", atm_errmsg());
	/* say "saved" only when something was measured (and saved, in a batch before or
	 * now); an interrupted estimate is not kept: writing a large network's takes longer
	 * than a Ctrl-C may, and making it again takes seconds */
	bool keep = !(rc == ATM_E_INTERRUPTED && pr->o.estimate);
	atm_status src = keep ? atm_prof_cache_save(p) : ATM_OK;
	if (rc >= 0)
		rc = src;
	else if (keep && src >= 0 && atm_profile_path(p) && st->n_done > 0)
		atm_err(rc, "%s; the %lld configurations measured before are saved in %s", msg,
		        (long long)st->n_done, atm_profile_path(p));
	else
		atm_err(rc, "%s", msg);
	return rc;
}

/* atm_prof_run -- measure or estimate what p lacks, saving in batches and at the end */
atm_status atm_prof_run(atm_prof *pr, atm_profile *p, atm_prof_report *r)
{
	struct work w = {0};
	struct run st = {0};
	struct task *todo = NULL;
	atm_status rc;
	memset(r, 0, sizeof *r);
	st.t_start = atm_now_s();
	const atm_profile_machine *pm = atm_profile_machine_get(p), *mine = &pr->m;
	if (strcmp(pm->cpu, mine->cpu) || pm->n_threads != mine->n_threads ||
	    strcmp(pm->backend, mine->backend) || strcmp(pm->fast_tier, mine->fast_tier) ||
	    strcmp(pm->slow_tier, mine->slow_tier) || strcmp(pm->emulation, mine->emulation) ||
	    pm->estimated != mine->estimated)
		return atm_err(ATM_E_USAGE, "atm_prof_run: the profile is of another machine than this "
		               "profiler's (open it with the machine atm_prof_get_machine gives)");
	atm_profile_moves mv;
	bool need_moves = atm_profile_get_moves(p, &mv) < 0;
	/* a GPU's copies run on its copy engines, beside the kernels: their loss is taken as 0 */
	bool need_overlap = !need_moves && !(mv.overlap_measured && mv.by_direction) &&
	                    !pr->o.estimate && !pr->caps.copy_engine;
	atm_err_clear();
	if ((rc = open_bench(pr)) < 0)
		return rc;
	/* a cache from before the slow tier's rates were kept gets them: nothing to measure */
	if (!need_moves && !pr->o.estimate && !(mv.slow_read_gbps > 0)) {
		atm_kbench_tier_rates(pr->kb, &mv);
		if (mv.slow_read_gbps > 0 && (rc = atm_profile_set_moves(p, &mv)) < 0)
			return rc;
	}
	if ((rc = build_work(pr->g, pr->caps.device_only, &w)) < 0)
		return rc;
	st.w = &w;
	st.left = calloc((size_t)w.n_unique + 1, sizeof *st.left);
	todo = malloc((size_t)(w.n_tasks ? w.n_tasks : 1) * sizeof *todo);
	if (!st.left || !todo) {
		rc = atm_err(ATM_E_NOMEM, "out of memory profiling '%s'", atm_graph_name(pr->g));
		goto done;
	}
	if ((rc = find_todo(pr, p, &st, todo)) < 0)
		goto done;
	/* what is measured must have somewhere to go: find out before measuring for hours */
	bool need_step = !pr->o.estimate && !pr->o.isolated && in_step_missing(pr->g, p);
	bool need_write = st.n_todo || need_moves || atm_profile_unsaved(p);
	if ((need_write || need_step || need_overlap) && atm_profile_path(p) &&
	    (rc = atm_check_writable(atm_profile_path(p))) < 0) {
		if (need_write)
			goto done;
		/* what only refines a complete cache is left out where the cache cannot take it */
		snprintf(r->in_step_note, sizeof r->in_step_note, "%s", atm_errmsg());
		atm_err_clear();
		rc = ATM_OK;
		need_step = need_overlap = false;
	}
	if (pr->o.estimate && (st.n_todo || need_moves) && !pr->have_rf &&
	    (rc = roofline_for(pr, r->calibration_note, sizeof r->calibration_note)) < 0)
		goto done;
	st.t_measure = st.last_save = st.last_draw = atm_now_s();
	rc = measure_todo(pr, p, &st, todo);
	if (rc >= 0 && need_overlap) {
		if ((rc = measure_overlap(pr, p, &mv)) >= 0)
			rc = atm_profile_set_moves(p, &mv);
	} else if (rc >= 0 && need_moves) {
		if (pr->o.estimate)
			estimate_moves(&pr->rf, &mv);
		else if ((rc = atm_kbench_moves(pr->kb, &mv)) < 0)
			atm_err_prefix(rc, "timing moves: ");
		else if (!pr->caps.copy_engine)
			rc = measure_overlap(pr, p, &mv);
		if (rc >= 0 && (rc = atm_profile_set_moves(p, &mv)) >= 0)
			r->moves_measured = true;
	}
	if (rc >= 0 && need_step)
		rc = measure_in_step(pr, p, r);
	rc = keep_measured(pr, p, &st, rc);
	draw(pr, &st, true);
	r->n_kernels = atm_graph_n_nodes(pr->g);
	r->n_unique_kernels = w.n_unique;
	r->n_configs = w.n_tasks;
	r->n_configs_measured = st.n_done;
	r->n_configs_cached = st.n_cached;
	r->estimated = pr->o.estimate;
	r->seconds = atm_now_s() - st.t_start;
done:
	free(todo);
	free(st.left);
	free(w.tasks);
	return rc;
}
