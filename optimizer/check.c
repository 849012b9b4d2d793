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

bool opt_counts_algo_ws(const atm_opt_options *o)
{
	return o && o->device_only && o->workspace_in_limit;
}

atm_status opt_algo_workspace(const atm_profile *prof, const atm_graph *g, int32_t k, int algo,
                              int64_t *bytes)
{
	atm_profile_entry e;
	atm_status rc = atm_profile_get_algo(prof, g, k, 0, algo, &e);
	*bytes = rc < 0 ? 0 : e.scratch_bytes;
	return rc;
}

atm_status opt_record_workspaces(atm_plan *p, const atm_profile *prof, const atm_opt_options *o)
{
	const atm_graph *g = atm_plan_graph(p);
	for (int32_t k = 0; opt_counts_algo_ws(o) && k < atm_graph_n_nodes(g); k++) {
		int64_t ws;
		atm_status rc = opt_algo_workspace(prof, g, k, atm_plan_algo(p, k), &ws);
		if (rc < 0 || (rc = atm_plan_set_workspace(p, k, atm_arena_align_up(ws))) < 0)
			return rc;
	}
	return ATM_OK;
}

atm_status opt_fit_algos(atm_plan *p, const atm_profile *prof, const atm_opt_options *o)
{
	const atm_graph *g = atm_plan_graph(p);
	int64_t limit = atm_plan_info_get(p)->fast_limit_bytes;
	atm_schedule *s = NULL;
	atm_status rc = atm_opt_choose_algos(p, prof);
	if (rc < 0 || !opt_counts_algo_ws(o))
		return rc;
	if (limit > 0 && (rc = atm_schedule_new(&s, p)) < 0)
		return rc;
	for (int32_t k = 0; k < atm_graph_n_nodes(g) && rc == ATM_OK; k++) {
		/* the fastest whose workspace fits beside the tensors, else the smallest */
		int64_t room = s ? limit - atm_schedule_fast_bytes_at(s, k) : INT64_MAX, ws, best_ws = -1;
		int best = -1, small = 0;
		double best_t = 0;
		atm_profile_entry e;
		for (int a = 0; a < ATM_MAX_ALGOS; a++) {
			if (atm_profile_get_algo(prof, g, k, 0, a, &e) < 0 ||
			    (a && e.scratch_bytes > ATM_GPU_WORKSPACE_BYTES))
				continue;
			ws = atm_arena_align_up(e.scratch_bytes);
			if (best_ws < 0 || ws < best_ws) {
				best_ws = ws;
				small = a;
			}
			if (ws <= room && (best < 0 || e.min_s < best_t)) {
				best = a;
				best_t = e.min_s;
			}
		}
		atm_err_clear();
		int a = best >= 0 ? best : small;
		if ((rc = atm_plan_set_algo(p, k, a)) == ATM_OK &&
		    (rc = opt_algo_workspace(prof, g, k, a, &ws)) == ATM_OK)
			rc = atm_plan_set_workspace(p, k, atm_arena_align_up(ws));
	}
	atm_schedule_destroy(s);
	return rc;
}

/* covering_config -- the configuration to price locations that no configuration has: a
 * grouped node (concat's inputs, split's outputs are profiled together) whose members a
 * baseline placed apart, e.g. first-touch NUMA. It is the configuration with the fewest slow
 * groups that has every slow operand slow: a slow operand never makes a kernel faster, so the
 * price errs on the slow side. false when there is none (a fast-only tensor in slow memory). */
static bool covering_config(const atm_graph *g, int32_t k, const unsigned *cfg, uint32_t *mask)
{
	const atm_node *n = atm_graph_node(g, k);
	int best_bits = 33;
	for (int i = 0; i < atm_node_n_configs(g, k); i++) {
		uint32_t c = atm_node_config_at(g, k, i);
		bool covers = true;
		for (int op = 0; op < n->n_in + n->n_out && covers; op++)
			covers = cfg[op] != ATM_LOC_SLOW || atm_node_config_loc(g, k, c, op) == ATM_LOC_SLOW;
		if (covers && __builtin_popcount(c) < best_bits) {
			best_bits = __builtin_popcount(c);
			*mask = c;
		}
	}
	return best_bits < 33;
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
	if (rc == ATM_E_NOTFOUND && covering_config(g, k, cfg, &mask))
		rc = ATM_OK;
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

/* Where the walk stands: fast memory in use and its copies' places, the main thread's clock
 * and the copy channel's. */
struct walk {
	const atm_plan *p;
	const atm_graph *g;
	const atm_profile *prof;
	const atm_opt_options *o;
	int64_t limit, arena, fast;
	struct spans sp;
	double t, chan;
	double *done;            /* per move: when its copy ends */
	atm_profile_moves mv;
	bool have_moves;
	atm_opt_check_result *out;
	double *node_s;          /* per node: its kernel's predicted time (may be NULL) */
};

/* walk_alloc -- a fast copy placed: within the limit, inside the arena, over no other copy */
static atm_status walk_alloc(struct walk *w, const atm_event *ev, const atm_tensor *x)
{
	atm_opt_check_result *out = w->out;
	int64_t end = ev->offset + atm_arena_align_up(x->bytes);
	atm_status rc;
	w->fast += x->bytes;
	if (w->limit && w->fast > w->limit)
		return atm_err(ATM_E_INFEASIBLE, "plan check: after node %d fast memory would hold "
		               "%lld bytes with '%s', over the limit of %lld", ev->node,
		               (long long)w->fast, x->name, (long long)w->limit);
	if (w->limit && end > w->arena)
		return atm_err(ATM_E_INFEASIBLE, "plan check: the fast copy of '%s' ends at %lld, "
		               "past the arena of %lld bytes", x->name, (long long)end,
		               (long long)w->arena);
	if ((rc = spans_add(&w->sp, ev->offset, end, x->name)) < 0)
		return rc;
	if (w->fast > out->fast_peak_bytes) {
		out->fast_peak_bytes = w->fast;
		out->fast_peak_node = ev->node;
	}
	if (end > out->fast_arena_bytes)
		out->fast_arena_bytes = end;
	return ATM_OK;
}

/* walk_kernel -- a kernel runs (again: a recomputation, whose time is counted apart): its time
 * in its configuration, its workspace within the limit */
static atm_status walk_kernel(struct walk *w, const atm_event *ev, bool again)
{
	atm_opt_check_result *out = w->out;
	double t = 0, tf = 0;
	atm_status rc = opt_kernel_time(w->prof, w->g, ev->node, ev->cfg, atm_plan_algo(w->p, ev->node),
	                                &t, &tf);
	if (rc < 0)
		return rc;
	if (again) {
		out->recompute_s += t;
		out->n_recomputes++;
	} else {
		out->kernel_s += t;
		out->all_fast_kernel_s += tf;
		if (w->node_s)
			w->node_s[ev->node] += t;
	}
	w->t += t;
	int64_t ws = w->o && w->o->workspace_in_limit ? atm_graph_node(w->g, ev->node)->workspace_bytes
	                                              : 0;
	/* on a GPU the workspace is the chosen algorithm's, and it must be the schedule's block of
	 * the arena, over no live copy */
	if (opt_counts_algo_ws(w->o)) {
		if ((rc = opt_algo_workspace(w->prof, w->g, ev->node, atm_plan_algo(w->p, ev->node),
		                             &ws)) < 0)
			return atm_err_prefix(rc, "plan check: ");
		if (ev->workspace_bytes < ws)
			return atm_err(ATM_E_INFEASIBLE, "plan check: node %d ('%s') runs algorithm %d, "
			               "whose workspace of %lld bytes the plan does not reserve in the fast "
			               "arena (%lld bytes)", ev->node, atm_graph_node(w->g, ev->node)->name,
			               atm_plan_algo(w->p, ev->node), (long long)ws,
			               (long long)ev->workspace_bytes);
	}
	/* a node run again writes its outputs but the remade one into scratch beside its
	 * workspace, which holds fast memory while it runs */
	int64_t scratch = 0;
	for (int i = 0; again && i < atm_graph_node(w->g, ev->node)->n_out; i++) {
		int32_t o = atm_graph_node(w->g, ev->node)->out[i];
		if (o != ev->tensor)
			scratch += atm_arena_align_up(atm_graph_tensor(w->g, o)->bytes);
	}
	if (scratch && ev->workspace_bytes < scratch)
		return atm_err(ATM_E_INFEASIBLE, "plan check: recomputation %d runs node %d ('%s') "
		               "again, whose other outputs take %lld bytes of scratch the plan does not "
		               "reserve in the fast arena (%lld bytes)", ev->recompute, ev->node,
		               atm_graph_node(w->g, ev->node)->name, (long long)scratch,
		               (long long)ev->workspace_bytes);
	ws += scratch;
	if (ev->workspace_bytes > 0) {
		int64_t end = ev->offset + atm_arena_align_up(ev->workspace_bytes);
		if (w->limit && end > w->arena)
			return atm_err(ATM_E_INFEASIBLE, "plan check: the workspace of node %d ends at %lld, "
			               "past the arena of %lld bytes", ev->node, (long long)end,
			               (long long)w->arena);
		if ((rc = spans_add(&w->sp, ev->offset, end, atm_graph_node(w->g, ev->node)->name)) < 0)
			return rc;
		spans_remove(&w->sp, ev->offset);
		if (end > out->fast_arena_bytes)
			out->fast_arena_bytes = end;
	}
	if (ws && w->limit && w->fast + ws > w->limit)
		return atm_err(ATM_E_INFEASIBLE, "plan check: node %d ('%s') needs %lld bytes of "
		               "workspace with %lld bytes of tensors in fast memory, over the "
		               "limit of %lld", ev->node, atm_graph_node(w->g, ev->node)->name,
		               (long long)ws, (long long)w->fast, (long long)w->limit);
	if (w->fast + ws > out->fast_peak_bytes) {
		out->fast_peak_bytes = w->fast + ws;
		out->fast_peak_node = ev->node;
	}
	return ATM_OK;
}

/* walk_move -- a copy starts on the one copy channel, when the channel is free: a synchronous
 * one holds the main thread until it ends */
static atm_status walk_move(struct walk *w, const atm_event *ev, const atm_tensor *x)
{
	atm_opt_check_result *out = w->out;
	const atm_move *m = atm_plan_move(w->p, ev->move);
	atm_status rc;
	if (!w->have_moves) {
		if ((rc = atm_profile_get_moves(w->prof, &w->mv)) < 0)
			return atm_err_prefix(rc, "plan check: ");
		if (!(w->mv.to_fast_gbps > 0) || !(w->mv.to_slow_gbps > 0))
			return atm_err(ATM_E_INPUT, "plan check: the profile's copy bandwidths must be "
			               "positive");
		w->have_moves = true;
	}
	double cost = (double)x->bytes /
	              ((m->to == ATM_LOC_FAST ? w->mv.to_fast_gbps : w->mv.to_slow_gbps) * 1e9);
	double start = w->t > w->chan ? w->t : w->chan;
	out->n_moves++;
	if (m->async) {
		/* beside the kernels the copy takes longer, and they lose their share of its time
		 * alone (opt_overlapped) */
		double loss, stretch;
		atm_profile_overlap(&w->mv, m->to, &loss, &stretch);
		out->n_async_moves++;
		w->done[ev->move] = start + stretch * cost;
		w->chan = start + stretch * cost;
		w->t += loss * cost;
		out->overlap_loss_s += loss * cost;
	} else {
		out->sync_move_s += start + cost - w->t;
		w->t = start + cost;
		w->chan = w->t;
	}
	return ATM_OK;
}

/* walk_event -- one event of the step */
static atm_status walk_event(struct walk *w, const atm_event *ev)
{
	const atm_tensor *x = ev->tensor >= 0 ? atm_graph_tensor(w->g, ev->tensor) : NULL;
	switch (ev->kind) {
	case ATM_EV_ALLOC:
		return ev->loc == ATM_LOC_FAST ? walk_alloc(w, ev, x) : ATM_OK;
	case ATM_EV_FREE:
		if (ev->loc == ATM_LOC_FAST) {
			w->fast -= x->bytes;
			spans_remove(&w->sp, ev->offset);
		}
		return ATM_OK;
	case ATM_EV_KERNEL:
	case ATM_EV_RECOMPUTE:
		return walk_kernel(w, ev, ev->kind == ATM_EV_RECOMPUTE);
	case ATM_EV_MOVE_START:
		return walk_move(w, ev, x);
	case ATM_EV_MOVE_WAIT:
		if (atm_plan_move(w->p, ev->move)->async && w->done[ev->move] > w->t) {
			w->out->async_wait_s += w->done[ev->move] - w->t;
			w->t = w->done[ev->move];
		}
		return ATM_OK;
	}
	return ATM_OK;
}

static atm_status predict_2lm(const atm_graph *g, const atm_profile *prof, int64_t cache_bytes,
                              atm_opt_check_result *out, double *node_s);

atm_status atm_opt_check(const atm_plan *p, const atm_profile *prof, const atm_opt_options *o,
                         atm_opt_check_result *out)
{
	return atm_opt_check_nodes(p, prof, o, out, NULL);
}

atm_status atm_opt_check_nodes(const atm_plan *p, const atm_profile *prof,
                               const atm_opt_options *o, atm_opt_check_result *out,
                               double *node_s)
{
	const atm_graph *g = atm_plan_graph(p);
	const atm_plan_info *info = atm_plan_info_get(p);
	atm_schedule *s = NULL;
	struct walk w = {.p = p, .g = g, .prof = prof, .o = o, .out = out, .node_s = node_s};
	atm_status rc;
	memset(out, 0, sizeof *out);
	out->fast_peak_node = -1;
	if (node_s)
		memset(node_s, 0, (size_t)atm_graph_n_nodes(g) * sizeof *node_s);
	if (!strcmp(info->formulation, "2lm"))
		return predict_2lm(g, prof, info->fast_limit_bytes, out, node_s);
	if ((rc = atm_schedule_new(&s, p)) < 0)
		return atm_err_prefix(rc, "plan check: ");
	w.limit = info->fast_limit_bytes;
	w.arena = atm_arena_align_down(w.limit);
	w.done = calloc((size_t)atm_plan_n_moves(p) + 1, sizeof *w.done);
	if (!w.done)
		rc = atm_err(ATM_E_NOMEM, "out of memory checking the plan");
	int32_t n_setup = atm_schedule_n_setup(s), n_ev = atm_schedule_n_events(s);
	for (int32_t i = 0; rc == ATM_OK && i < n_setup + n_ev; i++)
		rc = walk_event(&w, i < n_setup ? atm_schedule_setup(s, i)
		                                : atm_schedule_event(s, i - n_setup));
	if (rc == ATM_OK)
		out->predicted_s = w.t > w.chan ? w.t : w.chan;
	free(w.done);
	free(w.sp.off);
	free(w.sp.end);
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
	return predict_2lm(g, prof, cache_bytes, out, NULL);
}

/* heap_addr -- tensor's place in the heap (ctx), as the 2LM cache's address */
static int64_t heap_addr(const void *ctx, int32_t tensor)
{
	return opt_heap_addr(ctx, tensor);
}

/* predict_2lm -- atm_opt_predict_2lm, and each node's kernel with its misses in node_s */
static atm_status predict_2lm(const atm_graph *g, const atm_profile *prof, int64_t cache_bytes,
                              atm_opt_check_result *out, double *node_s)
{
	atm_plan *p = NULL;
	atm_schedule *s = NULL;
	atm_twolm *cm = NULL;
	struct opt_heap *heap = NULL;
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
	/* the slow tier's own rates, as the executor's emulation charges a miss; a profile from
	 * before they were kept has the copies' (a copy reads one tier and writes the other), and
	 * every miss counts whole */
	bool rates = mv.slow_read_gbps > 0 && mv.slow_write_gbps > 0;
	double read_gbps = rates ? mv.slow_read_gbps : mv.to_fast_gbps;
	double write_gbps = rates ? mv.slow_write_gbps : mv.to_slow_gbps;
	if (!rates)
		mv.fast_gbps = 0;
	if ((rc = atm_plan_uniform(&p, g, ATM_LOC_SLOW)) < 0 || (rc = atm_schedule_new(&s, p)) < 0 ||
	    (rc = atm_twolm_new(&cm, cache_bytes, ATM_2LM_LINE_BYTES)) < 0 ||
	    (rc = opt_heap_new(&heap, atm_graph_n_tensors(g))) < 0)
		goto done;
	/* the cache's addresses are the heap's, as the executor's are: persistent tensors first */
	for (int32_t i = 0; i < atm_schedule_n_setup(s); i++) {
		const atm_event *ev = atm_schedule_setup(s, i);
		if (ev->kind == ATM_EV_ALLOC && ev->loc == ATM_LOC_SLOW)
			opt_heap_alloc(heap, ev->tensor, atm_graph_tensor(g, ev->tensor)->bytes);
	}
	/* the second step sees the cache and the heap the first one left, as measured runs after
	 * a warm-up do; a freed tensor's lines stay in the cache */
	for (int step = 0; step < 2; step++) {
		double t = 0, kernel = 0, miss = 0;
		atm_twolm_traffic all = {0};
		for (int32_t i = 0; i < atm_schedule_n_events(s); i++) {
			const atm_event *ev = atm_schedule_event(s, i);
			if ((ev->kind == ATM_EV_ALLOC || ev->kind == ATM_EV_FREE) && ev->loc == ATM_LOC_SLOW) {
				int64_t bytes = atm_graph_tensor(g, ev->tensor)->bytes;
				if (ev->kind == ATM_EV_ALLOC)
					opt_heap_alloc(heap, ev->tensor, bytes);
				else if ((rc = opt_heap_free(heap, ev->tensor, bytes)) < 0)
					goto done;
				continue;
			}
			if (ev->kind != ATM_EV_KERNEL)
				continue;
			atm_profile_entry e;
			if ((rc = atm_profile_get(prof, g, ev->node, 0, &e)) < 0) {
				atm_err_prefix(rc, "2LM prediction: ");
				goto done;
			}
			/* the accesses the executor's emulation makes */
			atm_twolm_traffic tr = {0};
			atm_twolm_node(cm, g, ev, heap_addr, heap, &tr);
			double extra = atm_twolm_wait_s(&tr, read_gbps, write_gbps, mv.fast_gbps);
			atm_twolm_traffic_add(&all, &tr);
			kernel += e.min_s;
			miss += extra;
			t += e.min_s + extra;
			if (node_s)
				node_s[ev->node] = e.min_s + extra; /* the second step's stays */
		}
		out->predicted_s = t;
		out->kernel_s = out->all_fast_kernel_s = kernel;
		out->cache_miss_s = miss;
		out->cache_traffic = all;
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
	opt_heap_destroy(heap);
	atm_twolm_destroy(cm);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);
	return rc;
}
