/* check.c -- the independent plan checker: walks a schedule, proves the fast limit, prices the step */
#include <stdlib.h>
#include <string.h>

#include "opt_internal.h"

/* Live fast copies as [off, end) intervals sorted by offset: placing one over another, or
 * past the arena's end, is a plan the runtime could not run. */
struct spans {
	int64_t *off, *end;
	int32_t n, cap;
};

/* spans_find -- index of the first span at or after off */
static int32_t spans_find(const struct spans *s, int64_t off)
{
	int32_t lo = 0, hi = s->n;
	while (lo < hi) {
		int32_t mid = (lo + hi) / 2;
		if (s->off[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* spans_add -- a new live copy; ATM_E_INFEASIBLE when it overlaps one */
static atm_status spans_add(struct spans *s, int64_t off, int64_t end, const char *name)
{
	int32_t i = spans_find(s, off);
	if ((i < s->n && s->off[i] < end) || (i > 0 && s->end[i - 1] > off))
		return atm_err(ATM_E_INFEASIBLE, "plan check: the fast copy of '%s' at [%lld, %lld) "
		               "overlaps another live fast copy", name, (long long)off, (long long)end);
	if (s->n == s->cap) {
		int32_t cap = s->cap ? s->cap * 2 : 64;
		int64_t *o = realloc(s->off, (size_t)cap * sizeof *o);
		if (o)
			s->off = o;
		int64_t *e = realloc(s->end, (size_t)cap * sizeof *e);
		if (e)
			s->end = e;
		if (!o || !e)
			return atm_err(ATM_E_NOMEM, "out of memory checking the plan");
		s->cap = cap;
	}
	memmove(s->off + i + 1, s->off + i, (size_t)(s->n - i) * sizeof *s->off);
	memmove(s->end + i + 1, s->end + i, (size_t)(s->n - i) * sizeof *s->end);
	s->off[i] = off;
	s->end[i] = end;
	s->n++;
	return ATM_OK;
}

/* spans_remove -- the copy at off is freed */
static void spans_remove(struct spans *s, int64_t off)
{
	int32_t i = spans_find(s, off);
	if (i >= s->n || s->off[i] != off)
		return;
	memmove(s->off + i, s->off + i + 1, (size_t)(s->n - i - 1) * sizeof *s->off);
	memmove(s->end + i, s->end + i + 1, (size_t)(s->n - i - 1) * sizeof *s->end);
	s->n--;
}

atm_status opt_best_algo(const atm_profile *prof, const atm_graph *g, int32_t k, int *algo,
                         double *t)
{
	atm_profile_entry e;
	atm_status rc = atm_profile_get(prof, g, k, 0, &e);
	*algo = 0;
	*t = e.min_s;
	if (rc < 0)
		return rc;
	for (int a = 1; a < ATM_MAX_ALGOS; a++)
		if (atm_profile_get_algo(prof, g, k, 0, a, &e) == ATM_OK &&
		    e.scratch_bytes <= ATM_GPU_WORKSPACE_BYTES && e.min_s < *t) {
			*t = e.min_s;
			*algo = a;
		}
	atm_err_clear();
	return ATM_OK;
}

atm_status atm_opt_choose_algos(atm_plan *p, const atm_profile *prof)
{
	const atm_graph *g = atm_plan_graph(p);
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		int algo;
		double t;
		atm_status rc = opt_best_algo(prof, g, k, &algo, &t);
		if (rc < 0 || (rc = atm_plan_set_algo(p, k, algo)) < 0)
			return rc;
	}
	return ATM_OK;
}

/* opt_kernel_time -- profile seconds of node k with its operands where cfg puts them: the
 * largest over that configuration and every one with a subset of its slow operands, since a
 * slow operand never makes a kernel faster and measured profiles have noise; t_fast is the
 * all-fast time */
atm_status opt_kernel_time(const atm_profile *prof, const atm_graph *g, int32_t k,
                           const unsigned *cfg, int algo, double *t, double *t_fast)
{
	uint32_t mask;
	atm_profile_entry e;
	atm_status rc = atm_node_config_of(g, k, cfg, &mask);
	/* other algorithms than the default are profiled (and chosen) with every operand fast */
	if (rc < 0 || (rc = atm_profile_get_algo(prof, g, k, mask, mask ? 0 : algo, &e)) < 0)
		return atm_err_prefix(rc, "plan check: ");
	*t = e.min_s;
	*t_fast = atm_profile_get_algo(prof, g, k, 0, algo, &e) < 0 ? *t : e.min_s;
	for (uint32_t sub = mask; sub; ) {
		sub = (sub - 1) & mask;
		if (atm_profile_get(prof, g, k, sub, &e) == ATM_OK && e.min_s > *t)
			*t = e.min_s;
	}
	atm_err_clear();
	return ATM_OK;
}

/* Where the walk stands: the main thread's clock and the copy channel's. */
struct clock {
	double t, chan;
	double *done; /* per move: when its copy ends */
};

atm_status atm_opt_check(const atm_plan *p, const atm_profile *prof, const atm_opt_options *o,
                         atm_opt_check_result *out)
{
	const atm_graph *g = atm_plan_graph(p);
	const atm_plan_info *info = atm_plan_info_get(p);
	atm_schedule *s = NULL;
	struct spans sp = {0};
	struct clock c = {0};
	atm_profile_moves mv = {0};
	bool have_moves = false;
	atm_status rc;
	memset(out, 0, sizeof *out);
	out->fast_peak_node = -1;
	if (!strcmp(info->formulation, "2lm"))
		return atm_opt_predict_2lm(g, prof, info->fast_limit_bytes, out);
	if ((rc = atm_schedule_new(&s, p)) < 0)
		return atm_err_prefix(rc, "plan check: ");
	int64_t limit = info->fast_limit_bytes, arena = atm_arena_align_down(limit), fast = 0;
	c.done = calloc((size_t)atm_plan_n_moves(p) + 1, sizeof *c.done);
	if (!c.done) {
		rc = atm_err(ATM_E_NOMEM, "out of memory checking the plan");
		goto done;
	}
	int32_t n_setup = atm_schedule_n_setup(s), n_ev = atm_schedule_n_events(s);
	for (int32_t i = 0; i < n_setup + n_ev; i++) {
		const atm_event *ev = i < n_setup ? atm_schedule_setup(s, i) : atm_schedule_event(s, i - n_setup);
		const atm_tensor *x = ev->tensor >= 0 ? atm_graph_tensor(g, ev->tensor) : NULL;
		switch (ev->kind) {
		case ATM_EV_ALLOC:
			if (ev->loc != ATM_LOC_FAST)
				break;
			fast += x->bytes;
			if (limit && fast > limit) {
				rc = atm_err(ATM_E_INFEASIBLE, "plan check: after node %d fast memory would hold "
				             "%lld bytes with '%s', over the limit of %lld", ev->node,
				             (long long)fast, x->name, (long long)limit);
				goto done;
			}
			if (limit && ev->offset + atm_arena_align_up(x->bytes) > arena) {
				rc = atm_err(ATM_E_INFEASIBLE, "plan check: the fast copy of '%s' ends at %lld, "
				             "past the arena of %lld bytes", x->name,
				             (long long)(ev->offset + atm_arena_align_up(x->bytes)), (long long)arena);
				goto done;
			}
			if ((rc = spans_add(&sp, ev->offset, ev->offset + atm_arena_align_up(x->bytes), x->name)) < 0)
				goto done;
			if (fast > out->fast_peak_bytes) {
				out->fast_peak_bytes = fast;
				out->fast_peak_node = ev->node;
			}
			if (ev->offset + atm_arena_align_up(x->bytes) > out->fast_arena_bytes)
				out->fast_arena_bytes = ev->offset + atm_arena_align_up(x->bytes);
			break;
		case ATM_EV_FREE:
			if (ev->loc != ATM_LOC_FAST)
				break;
			fast -= x->bytes;
			spans_remove(&sp, ev->offset);
			break;
		case ATM_EV_KERNEL: {
			double t = 0, tf = 0;
			if ((rc = opt_kernel_time(prof, g, ev->node, ev->cfg, atm_plan_algo(p, ev->node), &t,
			                          &tf)) < 0)
				goto done;
			out->kernel_s += t;
			out->all_fast_kernel_s += tf;
			c.t += t;
			int64_t ws = o && o->workspace_in_limit ? atm_graph_node(g, ev->node)->workspace_bytes : 0;
			if (ws && limit && fast + ws > limit) {
				rc = atm_err(ATM_E_INFEASIBLE, "plan check: node %d ('%s') needs %lld bytes of "
				             "workspace with %lld bytes of tensors in fast memory, over the "
				             "limit of %lld", ev->node, atm_graph_node(g, ev->node)->name,
				             (long long)ws, (long long)fast, (long long)limit);
				goto done;
			}
			if (fast + ws > out->fast_peak_bytes) {
				out->fast_peak_bytes = fast + ws;
				out->fast_peak_node = ev->node;
			}
			break;
		}
		case ATM_EV_MOVE_START: {
			const atm_move *m = atm_plan_move(p, ev->move);
			if (!have_moves) {
				if ((rc = atm_profile_get_moves(prof, &mv)) < 0) {
					atm_err_prefix(rc, "plan check: ");
					goto done;
				}
				if (!(mv.to_fast_gbps > 0) || !(mv.to_slow_gbps > 0)) {
					rc = atm_err(ATM_E_INPUT, "plan check: the profile's copy bandwidths must "
					             "be positive");
					goto done;
				}
				have_moves = true;
			}
			double cost = (double)x->bytes /
			              ((m->to == ATM_LOC_FAST ? mv.to_fast_gbps : mv.to_slow_gbps) * 1e9);
			/* one copy channel: a copy starts when the channel is free */
			double start = c.t > c.chan ? c.t : c.chan;
			out->n_moves++;
			if (m->async) {
				out->n_async_moves++;
				c.done[ev->move] = start + cost;
				c.chan = start + cost;
			} else {
				out->sync_move_s += start + cost - c.t;
				c.t = start + cost;
				c.chan = c.t;
			}
			break;
		}
		case ATM_EV_MOVE_WAIT:
			if (atm_plan_move(p, ev->move)->async && c.done[ev->move] > c.t) {
				out->async_wait_s += c.done[ev->move] - c.t;
				c.t = c.done[ev->move];
			}
			break;
		}
	}
	out->predicted_s = c.t > c.chan ? c.t : c.chan;
	rc = ATM_OK;
done:
	free(c.done);
	free(sp.off);
	free(sp.end);
	atm_schedule_destroy(s);
	if (rc < 0) {
		int32_t keep = out->fast_peak_node;
		memset(out, 0, sizeof *out);
		out->fast_peak_node = keep;
	}
	return rc;
}

atm_status atm_opt_predict_2lm(const atm_graph *g, const atm_profile *prof, int64_t cache_bytes,
                               atm_opt_check_result *out)
{
	atm_plan *p = NULL;
	atm_schedule *s = NULL;
	atm_cache_model *cm = NULL;
	atm_profile_moves mv;
	atm_status rc;
	memset(out, 0, sizeof *out);
	out->fast_peak_node = -1;
	if (cache_bytes <= 0)
		return atm_err(ATM_E_USAGE, "2LM needs a fast memory size to cache the slow memory; "
		               "give a limit (--ratio or --dram-limit)");
	if ((rc = atm_profile_get_moves(prof, &mv)) < 0)
		return atm_err_prefix(rc, "2LM prediction: ");
	if (!(mv.to_fast_gbps > 0) || !(mv.to_slow_gbps > 0))
		return atm_err(ATM_E_INPUT, "2LM prediction: the profile's copy bandwidths must be positive");
	if ((rc = atm_plan_uniform(&p, g, ATM_LOC_SLOW)) < 0 || (rc = atm_schedule_new(&s, p)) < 0 ||
	    (rc = atm_cache_model_new(&cm, cache_bytes, atm_graph_n_tensors(g))) < 0)
		goto done;
	/* the second step sees the cache the first one left, as measured runs after a warm-up do */
	for (int step = 0; step < 2; step++) {
		double t = 0, kernel = 0, miss = 0;
		for (int32_t i = 0; i < atm_schedule_n_events(s); i++) {
			const atm_event *ev = atm_schedule_event(s, i);
			if (ev->kind == ATM_EV_FREE && ev->loc == ATM_LOC_SLOW) {
				atm_cache_drop(cm, ev->tensor);
				continue;
			}
			if (ev->kind != ATM_EV_KERNEL)
				continue;
			const atm_node *n = atm_graph_node(g, ev->node);
			atm_profile_entry e;
			if ((rc = atm_profile_get(prof, g, ev->node, 0, &e)) < 0) {
				atm_err_prefix(rc, "2LM prediction: ");
				goto done;
			}
			/* the accesses the executor's emulation makes */
			atm_cache_traffic tr = {0};
			for (int j = 0; j < n->n_in; j++)
				if (ev->cfg[j] != ATM_LOC_FAST) {
					const atm_tensor *x = atm_graph_tensor(g, n->in[j]);
					atm_cache_access(cm, x->id, x->bytes, false, &tr);
					if (j == 0 && atm_op_is_inplace(n->op))
						atm_cache_access(cm, x->id, x->bytes, true, &tr);
				}
			for (int j = 0; j < n->n_out; j++)
				if (ev->cfg[n->n_in + j] != ATM_LOC_FAST) {
					const atm_tensor *x = atm_graph_tensor(g, n->out[j]);
					atm_cache_access(cm, x->id, x->bytes, true, &tr);
				}
			double extra = (double)tr.read_bytes / (mv.to_fast_gbps * 1e9) +
			               (double)tr.written_bytes / (mv.to_slow_gbps * 1e9);
			kernel += e.min_s;
			miss += extra;
			t += e.min_s + extra;
		}
		out->predicted_s = t;
		out->kernel_s = out->all_fast_kernel_s = kernel;
		out->cache_miss_s = miss;
	}
	const atm_schedule_stats *st = atm_schedule_stats_get(s);
	out->fast_peak_bytes = st->fast_peak_bytes;
	out->fast_peak_node = st->fast_peak_node;
	out->fast_arena_bytes = st->fast_arena_bytes;
	rc = ATM_OK;
done:
	if (rc < 0) {
		memset(out, 0, sizeof *out);
		out->fast_peak_node = -1;
	}
	atm_cache_model_destroy(cm);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);
	return rc;
}
