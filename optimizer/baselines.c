/* baselines.c -- placements without a solver: all-fast, all-slow, first-touch NUMA, 2LM, vDNN */
#include <stdlib.h>
#include <string.h>

#include "opt_internal.h"

/* A vDNN offload of one convolution input: evicted after its last forward use, fetched
 * back while the layer after it runs its backward pass. */
struct offload {
	int32_t tensor;
	int32_t evict_after, evict_until, fetch_after, fetch_until;
};

/* What a baseline decides: a home per tensor and optional offloads. */
struct policy {
	unsigned *loc;
	struct offload *off;
	int32_t n_off;
	bool *spilled;
};

/* build -- the plan of policy pl (spilled tensors stay slow and lose their offload) */
static atm_status build(const atm_graph *g, const struct policy *pl, int64_t limit,
                        const char *name, atm_plan **out)
{
	atm_plan *p = NULL;
	atm_status rc = atm_plan_new(&p, g);
	for (int32_t t = 0; rc == ATM_OK && t < atm_graph_n_tensors(g); t++)
		rc = atm_plan_set_location(p, t, pl->spilled[t] ? ATM_LOC_SLOW : pl->loc[t]);
	/* evictions before fetches after the same node */
	int32_t nn = atm_graph_n_nodes(g);
	for (int32_t k = -1; k < nn && rc == ATM_OK; k++)
		for (int dir = 0; dir < 2 && rc == ATM_OK; dir++)
			for (int32_t i = 0; i < pl->n_off && rc == ATM_OK; i++) {
				const struct offload *o = &pl->off[i];
				if (pl->spilled[o->tensor])
					continue;
				if (!dir && o->evict_after == k)
					rc = atm_plan_add_move(p, &(atm_move){o->tensor, ATM_LOC_SLOW, o->evict_after,
					                                      o->evict_until, true});
				if (dir && o->fetch_after == k)
					rc = atm_plan_add_move(p, &(atm_move){o->tensor, ATM_LOC_FAST, o->fetch_after,
					                                      o->fetch_until, true});
			}
	if (rc < 0) {
		atm_plan_destroy(p);
		return rc;
	}
	atm_plan_info *info = atm_plan_info_of(p);
	snprintf(info->formulation, sizeof info->formulation, "%s", name);
	snprintf(info->solver_status, sizeof info->solver_status, "baseline");
	info->fast_limit_bytes = limit;
	*out = p;
	return ATM_OK;
}

/* first_overflow -- the tensor to spill for the first fast copy that does not fit (first fit in
 * an unbounded arena places every copy where a bounded one would, up to that one): that
 * copy's tensor, or when it may only be fast, the largest tensor that may be slow holding a
 * fast copy then; -1 when everything fits */
static atm_status first_overflow(atm_plan *p, int64_t limit, const bool *spilled, int32_t *tensor)
{
	const atm_graph *g = atm_plan_graph(p);
	atm_schedule *s = NULL;
	int32_t nt = atm_graph_n_tensors(g);
	*tensor = -1;
	bool *live = calloc((size_t)(nt ? nt : 1), sizeof *live);
	if (!live)
		return atm_err(ATM_E_NOMEM, "out of memory laying out a baseline");
	atm_plan_info_of(p)->fast_limit_bytes = 0;
	atm_status rc = atm_schedule_new(&s, p);
	atm_plan_info_of(p)->fast_limit_bytes = limit;
	if (rc < 0) {
		free(live);
		return rc;
	}
	int64_t arena = limit / 64 * 64, fast = 0;
	int32_t n_setup = atm_schedule_n_setup(s);
	for (int32_t i = 0; i < n_setup + atm_schedule_n_events(s) && *tensor < 0; i++) {
		const atm_event *ev = i < n_setup ? atm_schedule_setup(s, i) : atm_schedule_event(s, i - n_setup);
		if ((ev->kind != ATM_EV_ALLOC && ev->kind != ATM_EV_FREE) || ev->loc != ATM_LOC_FAST)
			continue;
		int64_t b = atm_graph_tensor(g, ev->tensor)->bytes;
		bool alloc = ev->kind == ATM_EV_ALLOC;
		fast += alloc ? b : -b;
		live[ev->tensor] = alloc;
		if (!alloc || (fast <= limit && ev->offset + (b + 63) / 64 * 64 <= arena))
			continue;
		*tensor = ev->tensor;
		if (atm_graph_tensor(g, ev->tensor)->locations & ATM_LOC_SLOW)
			continue;
		/* a tensor that must be fast takes the place of the largest that need not be */
		int32_t victim = -1;
		for (int32_t t = 0; t < nt; t++) {
			const atm_tensor *x = atm_graph_tensor(g, t);
			if (live[t] && !spilled[t] && (x->locations & ATM_LOC_SLOW) &&
			    (victim < 0 || x->bytes > atm_graph_tensor(g, victim)->bytes))
				victim = t;
		}
		if (victim >= 0)
			*tensor = victim;
	}
	atm_schedule_destroy(s);
	free(live);
	return ATM_OK;
}

/* fit -- spill to slow memory, in allocation order, every tensor whose fast copy does not
 * fit when it is made: first touch, as an operating system places pages */
static atm_status fit(const atm_graph *g, struct policy *pl, int64_t limit, const char *name,
                      bool device_only, atm_plan **out)
{
	atm_status rc;
	for (;;) {
		atm_plan *p = NULL;
		int32_t t;
		if ((rc = build(g, pl, limit, name, &p)) < 0)
			return rc;
		if (!limit || (rc = first_overflow(p, limit, pl->spilled, &t)) < 0 || t < 0) {
			if (rc < 0) {
				atm_plan_destroy(p);
				return rc;
			}
			*out = p;
			return ATM_OK;
		}
		atm_plan_destroy(p);
		/* a spilled tensor lives in slow memory where kernels use it: a GPU cannot */
		if (device_only)
			return atm_err(ATM_E_INFEASIBLE, "%s: tensor '%s' does not fit in the device memory "
			               "of %lld bytes where it is made, and on a GPU kernels use device "
			               "memory only: give more device memory or another formulation", name,
			               atm_graph_tensor(g, t)->name, (long long)limit);
		if (pl->spilled[t] || !(atm_graph_tensor(g, t)->locations & ATM_LOC_SLOW))
			return atm_err(ATM_E_INFEASIBLE, "%s: tensor '%s' may only live in fast memory and "
			               "does not fit in the fast arena of %lld bytes where it is made", name,
			               atm_graph_tensor(g, t)->name, (long long)limit);
		pl->spilled[t] = true;
	}
}

/* bwd_data_of_other -- a convolution's backward-data node of a layer other than the one of w */
static bool bwd_data_of_other(const atm_node *n, int32_t w)
{
	return n->op == ATM_OP_CONV_BWD_DATA && n->n_in > 1 && n->in[1] != w;
}

/* vdnn_offloads -- every convolution input that lives from the forward pass into the backward
 * pass: evicted asynchronously after its last forward use, fetched back asynchronously from
 * the start of the backward pass of the layer after it (two other layers' backward-data nodes
 * back from its use), as vDNN does */
static atm_status vdnn_offloads(const atm_graph *g, struct policy *pl)
{
	int32_t nn = atm_graph_n_nodes(g), loss = -1;
	for (int32_t k = 0; k < nn && loss < 0; k++)
		if (atm_graph_node(g, k)->op == ATM_OP_SOFTMAX_XENT_FWD)
			loss = k;
	pl->off = calloc((size_t)nn + 1, sizeof *pl->off);
	if (!pl->off)
		return atm_err(ATM_E_NOMEM, "out of memory planning vDNN offloads");
	if (loss < 0)
		return ATM_OK;
	for (int32_t k = 0; k < loss; k++) {
		const atm_node *n = atm_graph_node(g, k);
		if (n->op != ATM_OP_CONV_FWD)
			continue;
		int32_t x = n->in[0], w = n->in[1], f = -1, b = -1;
		const atm_tensor *t = atm_graph_tensor(g, x);
		if (atm_tensor_is_persistent(t) || t->locations != ATM_LOC_ANY)
			continue;
		bool dup = false;
		for (int32_t i = 0; i < pl->n_off; i++)
			dup |= pl->off[i].tensor == x;
		if (dup)
			continue;
		for (int32_t j = 0; j < nn; j++) {
			const atm_node *u = atm_graph_node(g, j);
			bool uses = false;
			for (int i = 0; i < u->n_in; i++)
				uses |= u->in[i] == x;
			if (!uses)
				continue;
			if (j < loss)
				f = j;
			else if (b < 0)
				b = j;
		}
		if (f < 0 || b < 0)
			continue;
		int32_t q = -1, p = -1;
		for (int32_t j = b - 1; j > f && q < 0; j--)
			if (bwd_data_of_other(atm_graph_node(g, j), w))
				q = j;
		for (int32_t j = q - 1; q > 0 && j > f && p < 0; j--)
			if (bwd_data_of_other(atm_graph_node(g, j), atm_graph_node(g, q)->in[1]))
				p = j;
		if (p < 0)
			p = q >= 0 ? q : b - 1;
		if (p < f + 1)
			continue;
		pl->off[pl->n_off++] = (struct offload){x, f, f + 2 < p ? f + 2 : p, p, b};
	}
	return ATM_OK;
}

atm_status opt_baseline(atm_plan **out, const atm_graph *g, const atm_profile *prof, int64_t limit,
                        atm_opt_formulation f, const atm_opt_options *o)
{
	int32_t nt = atm_graph_n_tensors(g), node;
	struct policy pl = {0};
	atm_plan *p = NULL;
	int64_t need;
	atm_status rc;
	const char *name = atm_opt_formulation_name(f);
	if (o && o->device_only && (f == ATM_OPT_ALL_SLOW || f == ATM_OPT_2LM))
		return atm_err(ATM_E_USAGE, "%s leaves kernels' operands in slow memory, and on a GPU "
		               "kernels use device memory only; valid there: static, synchronous, "
		               "asynchronous, numa, vdnn, all-fast (and run --placement managed)", name);
	if (f == ATM_OPT_2LM && limit <= 0)
		return atm_err(ATM_E_USAGE, "2lm caches slow memory in a fast memory of the limit's "
		               "size; give a limit (--ratio S:F with F > 0, or --dram-limit)");
	if (f != ATM_OPT_ALL_FAST && limit > 0) {
		if ((rc = atm_opt_min_limit_profiled(g, prof, o, &need, &node)) < 0)
			return rc;
		if (need > limit)
			return opt_infeasible(g, prof, limit, f, o);
	}
	pl.loc = malloc((size_t)(nt ? nt : 1) * sizeof *pl.loc);
	pl.spilled = calloc((size_t)(nt ? nt : 1), sizeof *pl.spilled);
	if (!pl.loc || !pl.spilled) {
		rc = atm_err(ATM_E_NOMEM, "out of memory planning");
		goto done;
	}
	for (int32_t t = 0; t < nt; t++) {
		unsigned locs = atm_graph_tensor(g, t)->locations;
		unsigned want = f == ATM_OPT_ALL_SLOW || f == ATM_OPT_2LM ? ATM_LOC_SLOW : ATM_LOC_FAST;
		pl.loc[t] = locs & want ? want : locs;
	}
	if (f == ATM_OPT_VDNN && (rc = vdnn_offloads(g, &pl)) < 0)
		goto done;
	if (f == ATM_OPT_ALL_FAST)
		rc = build(g, &pl, 0, name, &p);
	else if (f == ATM_OPT_ALL_SLOW || f == ATM_OPT_2LM)
		rc = build(g, &pl, limit, name, &p);
	else
		rc = fit(g, &pl, limit, name, o && o->device_only, &p);
	if (rc < 0 || (o && o->device_only && (rc = opt_fit_algos(p, prof, o)) < 0))
		goto done;
	atm_schedule *s = NULL;
	if (f != ATM_OPT_2LM && (rc = atm_schedule_new(&s, p)) < 0)
		goto done;
	atm_schedule_destroy(s);
	atm_opt_check_result chk;
	if ((rc = atm_opt_check(p, prof, o, &chk)) < 0)
		goto done;
	atm_plan_info_of(p)->predicted_runtime_s = chk.predicted_s;
	atm_plan_info_of(p)->predicted_recompute_s = chk.recompute_s;
	atm_plan_info_of(p)->estimated = atm_profile_machine_get(prof)->estimated;
	*out = p;
	p = NULL;
done:
	atm_plan_destroy(p);
	free(pl.loc);
	free(pl.off);
	free(pl.spilled);
	return rc;
}
