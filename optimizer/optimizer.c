/* optimizer.c -- atm_opt_plan: options, solving rounds and the defragmentation loop */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "milp.h"
#include "opt_internal.h"

void atm_opt_options_default(atm_opt_options *o)
{
	memset(o, 0, sizeof *o);
	o->mip_gap = 0.01;
	o->time_limit_s = 60;
	o->async_window = 2;
	o->max_rounds = ATM_PLAN_MAX_ROUNDS; /* tight limits need them: Inception v4 at 79:1 took 15 */
	o->pin_bytes = -1;
}

/* check_options -- every option in range, or ATM_E_USAGE naming it */
static atm_status check_options(const atm_opt_options *o)
{
	if (!(o->mip_gap >= 0 && o->mip_gap <= 1))
		return atm_err(ATM_E_USAGE, "MIP gap %g is not valid; expected a number from 0 to 1 "
		               "(0.01 is 1%%)", o->mip_gap);
	if (!(o->time_limit_s > 0) || o->time_limit_s > 1e6)
		return atm_err(ATM_E_USAGE, "time limit %g s is not valid; expected more than 0 and at "
		               "most 1000000 seconds", o->time_limit_s);
	if (o->async_window < 1 || o->async_window > 64)
		return atm_err(ATM_E_USAGE, "asynchronous window %d is not valid; expected 1 to 64 "
		               "kernels", o->async_window);
	if (o->max_rounds < 1 || o->max_rounds > ATM_PLAN_MAX_ROUNDS)
		return atm_err(ATM_E_USAGE, "defragmentation rounds %d is not valid; expected 1 to %d",
		               o->max_rounds, ATM_PLAN_MAX_ROUNDS);
	if (o->threads < 0 || o->threads > 1024)
		return atm_err(ATM_E_USAGE, "solver threads %d is not valid; expected 0 (one per core) "
		               "to 1024", o->threads);
	if (o->write_model && milp_write_check(o->write_model) < 0)
		return ATM_E_USAGE;
	if (o->pin_bytes < -1)
		return atm_err(ATM_E_USAGE, "pin size %lld is not valid; expected -1 (default), 0 "
		               "(none) or a byte count", (long long)o->pin_bytes);
	return ATM_OK;
}

/* resolve_solver -- o's solver made concrete (auto: the best built in), and threads counted:
 * ATM_E_UNSUPPORTED before any work when it is not built in */
static atm_status resolve_solver(atm_opt_options *o, atm_opt_report *rep)
{
	atm_status rc = atm_opt_solver_resolve(o->solver, &o->solver);
	if (rc < 0)
		return rc;
	snprintf(rep->solver, sizeof rep->solver, "%s", atm_opt_solver_name(o->solver));
	if (o->threads <= 0) {
		cpu_set_t set;
		o->threads = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
	}
	return ATM_OK;
}

/* Where the arena overflowed: the slot of the failing allocation and by how much. */
struct overflow {
	int32_t slot;
	int64_t bytes;
};

#define MAX_OVERFLOWS 4

/* fit_check -- lay p out with first fit in an unbounded arena (which places every copy
 * exactly where a bounded one would, up to the first that does not fit) and report the
 * allocations that end past the arena or push fast bytes over the limit */
static atm_status fit_check(atm_plan *p, int64_t limit, struct overflow *ov, int *n_ov)
{
	const atm_graph *g = atm_plan_graph(p);
	atm_schedule *s = NULL;
	*n_ov = 0;
	/* core lays out by size when first fit overflows: a plan that fits that way fits */
	atm_plan_info_of(p)->fast_limit_bytes = limit;
	if (atm_schedule_new(&s, p) == ATM_OK) {
		atm_schedule_destroy(s);
		return ATM_OK;
	}
	atm_err_clear();
	atm_plan_info_of(p)->fast_limit_bytes = 0;
	atm_status rc = atm_schedule_new(&s, p);
	atm_plan_info_of(p)->fast_limit_bytes = limit;
	if (rc < 0)
		return atm_err_prefix(ATM_E_INTERNAL, "the optimizer made a plan core refuses: ");
	int64_t arena = atm_arena_align_down(limit), fast = 0;
	int32_t last_kernel = -1, n_setup = atm_schedule_n_setup(s);
	for (int32_t i = 0; i < n_setup + atm_schedule_n_events(s); i++) {
		const atm_event *ev = i < n_setup ? atm_schedule_setup(s, i) : atm_schedule_event(s, i - n_setup);
		if (ev->kind == ATM_EV_KERNEL)
			last_kernel = ev->node;
		if ((ev->kind == ATM_EV_KERNEL || ev->kind == ATM_EV_RECOMPUTE) && ev->workspace_bytes > 0) {
			/* a kernel's workspace block overflows at its own slot (a kernel run again:
			 * at the slot of the node it runs before) */
			int64_t over = ev->offset + atm_arena_align_up(ev->workspace_bytes) - arena;
			if (fast + ev->workspace_bytes - limit > over)
				over = fast + ev->workspace_bytes - limit;
			if (over > 0 && *n_ov < MAX_OVERFLOWS)
				ov[(*n_ov)++] = (struct overflow){
					SLOT_K(ev->kind == ATM_EV_KERNEL ? ev->node
					                                 : atm_plan_recompute(p, ev->recompute)->before),
					over};
			continue;
		}
		if ((ev->kind != ATM_EV_ALLOC && ev->kind != ATM_EV_FREE) || ev->loc != ATM_LOC_FAST)
			continue;
		int64_t b = atm_graph_tensor(g, ev->tensor)->bytes;
		if (ev->kind == ATM_EV_FREE) {
			fast -= b;
			continue;
		}
		fast += b;
		int64_t end = ev->offset + atm_arena_align_up(b), over = end - arena;
		if (fast - limit > over)
			over = fast - limit;
		if (over <= 0 || *n_ov == MAX_OVERFLOWS)
			continue;
		/* outputs are allocated before their kernel runs, moves after the node they follow */
		int32_t slot = i < n_setup || ev->node < 0 ? 0
		             : ev->node == last_kernel ? SLOT_M(ev->node) : SLOT_K(ev->node);
		ov[(*n_ov)++] = (struct overflow){slot, over};
	}
	atm_schedule_destroy(s);
	if (*n_ov)
		return ATM_OK;
	/* core has the last word */
	if ((rc = atm_schedule_new(&s, p)) < 0)
		return atm_err_prefix(ATM_E_INTERNAL, "the plan fits first fit unbounded but not in the "
		                      "arena: ");
	atm_schedule_destroy(s);
	return ATM_OK;
}

/* tighten -- lower the limit around each overflow below what the plan used there (false: no
 * limit could go lower, every one is down to the bytes that must be fast). A region
 * that overflows again round after round is cut deeper and wider (attempt counts the rounds
 * in a row that did not fit): first fit is decided by copies placed long before the one that
 * fails, so the room must sometimes be made well before it */
static bool tighten(const struct model *m, const struct solution *sol, int64_t *slot_limit,
                    int64_t limit, const struct overflow *ov, int n_ov, int attempt,
                    int64_t *bytes)
{
	bool lowered = false;
	int32_t reach = 2 << (2 * (attempt < 5 ? attempt : 5));
	opt_solution_bytes(m, sol, bytes);
	for (int i = 0; i < n_ov; i++) {
		int64_t cut = ov[i].bytes;
		if (cut < limit / 200)
			cut = limit / 200;
		if (cut < ATM_ARENA_ALIGN)
			cut = ATM_ARENA_ALIGN;
		cut <<= attempt < 4 ? attempt : 4;
		for (int32_t s = ov[i].slot - reach; s <= ov[i].slot + 2; s++) {
			if (s < 0 || s >= m->n_slots)
				continue;
			int64_t cap = bytes[s] - cut;
			if (cap < m->floor[s])
				cap = m->floor[s];
			if (cap < slot_limit[s]) {
				slot_limit[s] = cap;
				lowered = true;
			}
		}
	}
	return lowered;
}

/* plan_no_limit -- the plan for no limit: nothing to decide */
static atm_status plan_no_limit(atm_plan **out, const atm_graph *g, const atm_profile *prof,
                                atm_opt_formulation f, const atm_opt_options *o, atm_opt_report *rep)
{
	atm_opt_check_result chk;
	atm_status rc = atm_plan_uniform(out, g, ATM_LOC_FAST);
	if (rc >= 0 && o->device_only && (rc = atm_opt_choose_algos(*out, prof)) >= 0)
		rc = opt_record_workspaces(*out, prof, o);
	if (rc < 0) {
		atm_plan_destroy(*out);
		*out = NULL;
		return rc;
	}
	atm_plan_info *info = atm_plan_info_of(*out);
	snprintf(info->formulation, sizeof info->formulation, "%s%s", atm_opt_formulation_name(f),
	         o->recompute ? ATM_OPT_RECOMPUTE_SUFFIX : "");
	snprintf(info->solver_status, sizeof info->solver_status, "no limit");
	info->mip_gap = 0;
	if ((rc = atm_opt_check(*out, prof, o, &chk)) < 0) {
		atm_plan_destroy(*out);
		*out = NULL;
		return rc;
	}
	info->predicted_runtime_s = chk.predicted_s;
	info->predicted_recompute_s = chk.recompute_s;
	info->estimated = atm_profile_machine_get(prof)->estimated;
	if (rep)
		rep->objective_s = rep->heuristic_s = chk.predicted_s;
	return ATM_OK;
}

/* The defragmentation loop: each round solves the model under the slot limits, lays the plan
 * out with first fit and, where the arena overflows, tightens the limits for the next. */
struct defrag {
	const atm_graph *g;
	const atm_profile *prof;
	atm_opt_formulation f;
	atm_opt_options o;           /* pin_bytes drops to 0 when pinned tensors cannot fit */
	int64_t limit;
	int32_t n_slots;
	int64_t *slot_limit, *bytes; /* per memory slot: this round's limit; scratch */
	struct model *m;             /* this round's model and solution, the last round's */
	struct solution sol;         /* until the next round starts */
	atm_plan *p;
	struct overflow ov[MAX_OVERFLOWS];
	int n_ov;
	double t_plan, best_bound, total_create, total_solve;
	bool lp_too_big;             /* the relaxation ran out of time: later rounds skip GLPK */
	struct ilp_result last_ir;
	bool nested;                 /* this round starts from the synchronous program's plan */
	bool started;                /* this round starts from one of the options' start plans */
	double whole_limit_s;        /* the caller's time limit (o.time_limit_s may be a share of
	                              * it): the first round's heuristic must have a plan within it */
	atm_opt_report *rep;
};

/* too_small -- the error for a round whose fixed tensors do not fit the limits at slot */
static atm_status too_small(const struct defrag *d, int round, int64_t need, int32_t slot)
{
	int32_t k = slot > 0 ? (slot - 1) / 2 : 0;
	char a[32], b[32];
	if (round > 0)
		return atm_err(ATM_E_INFEASIBLE, "the plan does not fit the fast arena of %lld bytes "
		               "for fragmentation: after %d rounds of tightening the limit around "
		               "node %d ('%s'), the tensors that must be fast there no longer fit",
		               (long long)d->limit, round, k, atm_graph_node(d->g, k)->name);
	return atm_err(ATM_E_INFEASIBLE, "a fast limit of %s is too small for '%s' (%s%s): at node "
	               "%d ('%s') %s must be in fast memory%s; the smallest limit that could work is "
	               "about %s", atm_format_bytes(d->limit, a, sizeof a), atm_graph_name(d->g),
	               atm_opt_formulation_name(d->f), d->o.device_only ? ", on a GPU" : "", k,
	               atm_graph_node(d->g, k)->name, atm_format_bytes(need, b, sizeof b),
	               !d->o.device_only ? ""
	               : opt_counts_algo_ws(&d->o) ? " (the kernels' operands, each from just before "
	                                             "its use to just after, and the smallest "
	                                             "workspace of the kernel's algorithms)"
	                                           : " (the kernels' operands, each from just before "
	                                             "its use to just after)",
	               atm_format_bytes(need, b, sizeof b));
}

/* stuck -- the error for a round that overflows where every limit around the overflows is down
 * to the bytes that must be fast there: the next round would be this one again */
static atm_status stuck(const struct defrag *d, int round)
{
	int32_t slot = d->ov[0].slot, k = slot > 0 ? (slot - 1) / 2 : 0;
	int64_t floor = d->m->floor[slot];
	char a[32], b[32];
	return atm_err(ATM_E_INFEASIBLE, "the plan does not fit the fast arena of %s for "
	               "fragmentation: after %d rounds, at node %d ('%s') the tensors that must be "
	               "fast there take %s (%d%% of the arena) and first fit cannot lay them out "
	               "around the tensors placed before them; give a larger limit",
	               atm_format_bytes(d->limit, a, sizeof a), round + 1, k,
	               atm_graph_node(d->g, k)->name, atm_format_bytes(floor, b, sizeof b),
	               (int)(100.0 * (double)floor / (double)d->limit));
}

/* round_model -- this round's model under the slot limits; warm when it has the same gates
 * as the last round's (only limits changed), whose placement is then the start */
static atm_status round_model(struct defrag *d, int round, bool *warm)
{
	struct model *prev = d->m;
	int64_t need;
	int32_t slot;
	atm_status rc;
	d->m = NULL;
	for (;;) {
		if ((rc = opt_model_new(&d->m, d->g, d->prof, d->f, &d->o, d->limit, d->slot_limit)) < 0)
			break;
		*warm = prev && prev->n_phases == d->m->n_phases &&
		        prev->pinned_bytes == d->m->pinned_bytes;
		if (opt_min_fixed(d->m, &need, &slot) == ATM_OK)
			break;
		if (d->m->pinned_bytes == 0) {
			rc = too_small(d, round, need, slot);
			break;
		}
		/* small tensors pinned for speed do not fit: place them too */
		d->o.pin_bytes = 0;
		opt_model_destroy(prev);
		prev = d->m;
		d->m = NULL;
	}
	opt_model_destroy(prev);
	return rc;
}

/* round_budget -- the heuristic's seconds: the time limit bounds the whole plan, every round
 * together, so a round that starts late gets the heuristic's share of what is left */
static double round_budget(const struct defrag *d)
{
	const atm_opt_options *o = &d->o;
	double left = o->time_limit_s - (atm_now_s() - d->t_plan);
	double budget = o->time_limit_s * 0.2 < 10 ? o->time_limit_s * 0.2 : 10;
	if (budget > left * 0.5)
		budget = left > 0 ? left * 0.5 : 0;
	/* on a GPU a round whose warm start cannot be repaired starts from the least-room
	 * placement, which is slow until descent improves it: it always gets a little time
	 * (5% of the limit, at most 2 s), which may overrun the limit by that much */
	double floor_s = o->time_limit_s * 0.05 < 2 ? o->time_limit_s * 0.05 : 2;
	if (o->device_only && budget < floor_s)
		budget = floor_s;
	return budget;
}

/* round_solve -- GLPK from the heuristic's solution, or the heuristic's solution polished
 * when GLPK cannot help this round; ir says which, with the best bound known */
static atm_status round_solve(struct defrag *d, int round, bool warm, double heur_cost,
                              struct ilp_result *ir)
{
	atm_status rc;
	/* a tighter round's optimum is no better than a looser one's, so a bound proved in an
	 * earlier round of the same model still bounds this one (not across a change of the
	 * pinned tensors, which relaxes the model) */
	if (!warm && round > 0)
		d->best_bound = -1;
	bool out_of_time = round > 0 && d->o.time_limit_s - (atm_now_s() - d->t_plan) < 1;
	bool proved = d->best_bound > 0 && heur_cost - d->best_bound <= d->o.mip_gap * heur_cost;
	if (d->lp_too_big || out_of_time || proved) {
		/* the warm-started heuristic is already within the gap of an earlier round's
		 * bound, or the same model's relaxation ran out of time last round and would
		 * again, or the plan's time is spent: the heuristic's plan is this round's */
		*ir = d->last_ir;
		ir->creation_s = ir->solve_s = 0;
		ir->gap = ir->bound_s = ir->ilp_objective_s = -1;
		ir->st = proved ? ILP_WITHIN_GAP : d->lp_too_big ? ILP_HEUR_LP_TIME : ILP_HEUR_TIME_LIMIT;
		if ((rc = opt_polish(d->m, &d->sol)) < 0)
			return rc;
	} else if ((rc = opt_ilp_solve(d->m, &d->sol, d->t_plan, ir)) < 0) {
		return rc;
	}
	if (ir->st == ILP_HEUR_LP_TIME)
		d->lp_too_big = true;
	if (ir->bound_s > d->best_bound)
		d->best_bound = ir->bound_s;
	double obj = opt_solution_cost(d->m, &d->sol);
	if (d->best_bound > 0 && obj > 0) {
		double gap = (obj - d->best_bound) / obj;
		if (ir->gap < 0 || gap < ir->gap) {
			ir->gap = gap > 0 ? gap : 0;
			ir->bound_s = d->best_bound;
		}
	}
	d->last_ir = *ir;
	return ATM_OK;
}

/* round_record -- the round's figures into the report */
static atm_opt_round *round_record(struct defrag *d, const struct ilp_result *ir, double create_s,
                                   double heur_s, double heur_cost)
{
	atm_opt_report *rep = d->rep;
	atm_opt_round *r = &rep->rounds[rep->n_rounds++];
	r->fast_limit_bytes = d->limit;
	for (int32_t s = 0; s < d->n_slots; s++)
		if (d->slot_limit[s] < r->fast_limit_bytes)
			r->fast_limit_bytes = d->slot_limit[s];
	r->creation_s = create_s + ir->creation_s;
	r->solve_s = heur_s + ir->solve_s;
	r->objective_s = opt_solution_cost(d->m, &d->sol);
	r->ilp_objective_s = ir->ilp_objective_s;
	r->bound_s = ir->bound_s;
	r->mip_gap = ir->gap;
	/* a start that stood is the synchronous program's plan where that replaced the heuristic's */
	const char *st = opt_ilp_status_text(ir->st), *heur = "heuristic";
	if (d->nested && !strncmp(st, heur, strlen(heur)))
		snprintf(r->status, sizeof r->status, "synchronous plan%s", st + strlen(heur));
	else if (d->started && !strncmp(st, heur, strlen(heur)))
		snprintf(r->status, sizeof r->status, "start plan%s", st + strlen(heur));
	else
		snprintf(r->status, sizeof r->status, "%s", st);
	if (ir->glpk_after_failure) { /* "within gap (glpk; cbc failed)": the reason replaced */
		char *why = strstr(r->status, " (");
		size_t n = why ? (size_t)(why - r->status) : strlen(r->status);
		snprintf(r->status + n, sizeof r->status - n, " (glpk; %s failed)", ir->solver);
	}
	d->total_create += r->creation_s;
	d->total_solve += r->solve_s;
	rep->n_columns = ir->n_columns;
	rep->n_rows = ir->n_rows;
	rep->n_binaries = ir->n_binaries;
	rep->n_nonzeros = ir->n_nonzeros;
	rep->n_movable = d->m->n_movable;
	rep->pinned_bytes = d->m->pinned_bytes;
	rep->heuristic_s = heur_cost;
	rep->objective_s = r->objective_s;
	if (ir->solver[0])
		snprintf(rep->solver, sizeof rep->solver, "%s", ir->solver);
	return r;
}

/* the share of the time limit within which a first round must have built its model and found
 * the heuristic's plan for that plan to be laid out before solving (seed_fit) */
#define SEED_FIT_SHARE 0.05
/* the kernels below which a first round is solved as it comes: such models solve in well under
 * a second, where a round spent on a plan that overflows costs nothing, and the first round's
 * optimum is then the untightened model's (the formulations' tests compare those) */
#define SEED_FIT_MIN_NODES 500

atm_status opt_solution_plan(const struct model *m, const struct solution *s, int64_t limit,
                             atm_plan **out)
{
	atm_plan *p = NULL;
	atm_status rc;
	*out = NULL;
	if ((rc = atm_plan_new(&p, m->g)) < 0 || (rc = opt_solution_to_plan(m, s, p)) < 0) {
		atm_plan_destroy(p);
		return rc;
	}
	atm_plan_info *info = atm_plan_info_of(p);
	snprintf(info->formulation, sizeof info->formulation, "%s%s", atm_opt_formulation_name(m->f),
	         m->o.recompute ? ATM_OPT_RECOMPUTE_SUFFIX : "");
	info->fast_limit_bytes = limit;
	*out = p;
	return ATM_OK;
}

/* round_plan -- d->p from this round's solution */
static atm_status round_plan(struct defrag *d)
{
	atm_plan_destroy(d->p);
	d->p = NULL;
	return opt_solution_plan(d->m, &d->sol, d->limit, &d->p);
}

/* seed_fit -- the heuristic's plan (polished, as every plan is before it is laid out) laid out
 * with first fit before the solver runs: where it overflows, *fits is false and the limits are
 * tightened around the overflows, so that the next round starts at once. A solver's plan lies
 * near the plan it starts from and mostly overflows where it does: gpt2-xl's asynchronous 1:1
 * plan spent 47 of its 60 s solving a first round whose plan did not fit, and its second round
 * kept the heuristic's plan for want of time. Only the first round checks, and only where its
 * model and heuristic took at most SEED_FIT_SHARE of the time limit: DenseNet-264's asynchronous
 * paper models (145,399 columns, 4 to 7 s of model and heuristic a round) lost by it. Checked in
 * every round, its 8:1 plan spent 31 s on four rounds of model and heuristic alone and its
 * solver had 2 s left; checked in the first, its 4:1 plan's second model, tightened, took CBC
 * past the deadline at the root, where the first model's root proved the start within the gap
 * in 23 s and let later rounds skip the solver. Where no limit can go lower the solver runs:
 * its plan may fit where the heuristic's does not */
static atm_status seed_fit(struct defrag *d, bool *fits)
{
	atm_status rc;
	*fits = true;
	if ((rc = opt_polish(d->m, &d->sol)) < 0 || (rc = round_plan(d)) < 0 ||
	    (rc = fit_check(d->p, d->limit, d->ov, &d->n_ov)) < 0)
		return rc;
	if (d->n_ov == 0)
		return ATM_OK;
	*fits = !tighten(d->m, &d->sol, d->slot_limit, d->limit, d->ov, d->n_ov, 0, d->bytes);
	return ATM_OK;
}

/* the share of the time limit the synchronous program may take as a start for the asynchronous */
#define NEST_SHARE 0.3

/* fits_limits -- placement s of m keeps every slot within its limit */
static bool fits_limits(struct defrag *d, const struct solution *s)
{
	opt_solution_bytes(d->m, s, d->bytes);
	for (int32_t sl = 0; sl < d->m->n_slots; sl++)
		if (d->bytes[sl] > d->m->limit[sl])
			return false;
	return true;
}

/* nest_seed -- an asynchronous round also solves the synchronous program, smaller and solved
 * sooner, within NEST_SHARE of the time limit: the formulations nest, so its plan is one of the
 * asynchronous program too (each overlapped copy gate kept still), and where it is faster than
 * the heuristic's it is the solver's start. The asynchronous plan is then never predicted
 * slower than the synchronous one found in that time (ResNet-200's asynchronous program with
 * recomputation on the h100 model often ended at the heuristic's 1.24x all fast within the
 * minute, where the synchronous one solved to 1.13x in 11 s). */
static atm_status nest_seed(struct defrag *d, int round)
{
	atm_opt_options o = d->o;
	struct model *sm = NULL;
	struct solution ss = {0}, as = {0};
	struct ilp_result ir = {0};
	int64_t need;
	int32_t slot;
	double t0 = atm_now_s();
	atm_status rc;
	d->nested = false;
	if (d->f != ATM_OPT_ASYNCHRONOUS || round > 0 || d->o.no_seed || d->m->n_movable == 0)
		return ATM_OK;
	o.time_limit_s = d->o.time_limit_s * NEST_SHARE;
	o.write_model = NULL;
	if ((rc = opt_model_new(&sm, d->g, d->prof, ATM_OPT_SYNCHRONOUS, &o, d->limit,
	                        d->slot_limit)) < 0 ||
	    (rc = opt_min_fixed(sm, &need, &slot)) < 0 || (rc = opt_solution_new(sm, &ss)) < 0 ||
	    (rc = opt_heuristic(sm, &ss, o.time_limit_s * 0.2, false)) < 0 ||
	    (rc = opt_ilp_solve(sm, &ss, t0, &ir)) < 0 || (rc = opt_solution_new(d->m, &as)) < 0)
		goto done;
	double sync_s = opt_solution_cost(sm, &ss), heur_s = opt_solution_cost(d->m, &d->sol);
	bool nests = opt_solution_nest(d->m, &as, sm, &ss) && fits_limits(d, &as);
	d->rep->nested_s = sync_s;
	if (nests && opt_solution_cost(d->m, &as) < heur_s) {
		struct solution t = d->sol;
		d->sol = as;
		as = t;
		d->nested = true;
	}
	if (d->o.verbosity)
		fprintf(stderr, "optimizer: round %d: the synchronous program's plan %.6f s predicted "
		        "(%s, %.2f s)%s\n", round + 1, sync_s, opt_ilp_status_text(ir.st),
		        atm_now_s() - t0, d->nested ? ", the start" : nests ? "" : ", no start here");
done:
	opt_solution_free(&as);
	opt_solution_free(&ss);
	opt_model_destroy(sm);
	/* the start is an improvement, not a need: only running out of memory or an interruption
	 * ends the plan */
	if (rc < 0 && rc != ATM_E_NOMEM && rc != ATM_E_INTERRUPTED) {
		atm_err_clear();
		rc = ATM_OK;
	}
	return rc;
}

/* start_seed -- every round also starts from the options' start plans (a smaller limit's, which
 * fit this one and its arena) that are placements of this round's model within its limits: the
 * cheapest of them, where it is cheaper than the start the round has, is the solver's incumbent,
 * so that the search begins no worse than the smaller limit ended. In a round tightened for
 * fragmentation it is what the warm start cannot be: a plan known to fit the arena */
static atm_status start_seed(struct defrag *d, int round)
{
	struct solution s = {0};
	atm_status rc = ATM_OK;
	d->started = false;
	if (d->o.n_starts <= 0 || d->o.no_seed || d->m->n_movable == 0)
		return ATM_OK;
	if ((rc = opt_solution_new(d->m, &s)) < 0)
		return rc;
	double best = opt_solution_cost(d->m, &d->sol);
	for (int i = 0; i < d->o.n_starts && rc == ATM_OK; i++) {
		bool ok = false;
		if ((rc = opt_solution_from_plan(d->m, d->o.starts[i], &s, &ok)) < 0)
			break;
		double c = ok && fits_limits(d, &s) ? opt_solution_cost(d->m, &s) : INFINITY;
		if (d->o.verbosity)
			fprintf(stderr, "optimizer: round %d: start plan %d %s\n", round + 1, i,
			        !ok ? "is no placement of this model" : isinf(c) ? "does not fit its limits"
			                                               : c < best ? "is the start" : "is slower");
		if (!(c < best))
			continue;
		struct solution t = d->sol;
		d->sol = s;
		s = t;
		best = c;
		d->started = true;
		d->nested = false;
	}
	opt_solution_free(&s);
	return rc;
}

/* too_short -- ATM_E_USAGE when the plan's time limit ran out before the first round's
 * heuristic had a plan (built in create_s, found in heur_s, predicted cost): a limit so short
 * gives no plan it can stand by, so none is given */
static atm_status too_short(const struct defrag *d, double create_s, double heur_s, double cost)
{
	double spent = atm_now_s() - d->t_plan;
	if (spent <= d->whole_limit_s)
		return ATM_OK;
	return atm_err(ATM_E_USAGE, "a time limit of %g s is too short to plan %s %s%s at this "
	               "limit: building the program took %.2f s and its heuristic's first plan "
	               "(predicted %.6f s a step) %.2f s more, %.2f s in all, before the solver "
	               "started; give --time-limit %.0f or more", d->whole_limit_s,
	               atm_graph_name(d->g), atm_opt_formulation_name(d->f),
	               d->o.recompute ? "+recompute" : "", create_s, cost, heur_s, spent,
	               ceil(2 * spent + 1));
}

/* defrag_round -- one round: model, heuristic, solve, plan, first fit; *fits when the plan
 * fits the arena, else the limits are tightened where it overflowed */
static atm_status defrag_round(struct defrag *d, int round, bool *fits)
{
	struct solution prev = d->sol;
	double t0 = atm_now_s();
	bool warm = false;
	atm_status rc;
	d->sol = (struct solution){0};
	atm_plan_destroy(d->p);
	d->p = NULL;
	if ((rc = round_model(d, round, &warm)) < 0) {
		opt_solution_free(&prev);
		return rc;
	}
	double create_s = atm_now_s() - t0, t1 = atm_now_s();
	if (warm) {
		d->sol = prev;
	} else {
		opt_solution_free(&prev);
		if ((rc = opt_solution_new(d->m, &d->sol)) < 0)
			return rc;
	}
	if ((rc = opt_heuristic(d->m, &d->sol, round_budget(d), warm)) < 0)
		return rc;
	double heur_s = atm_now_s() - t1, heur_cost = opt_solution_cost(d->m, &d->sol);
	if (d->o.verbosity)
		fprintf(stderr, "optimizer: round %d: heuristic %.6f s predicted, found in %.2f s%s\n",
		        round + 1, heur_cost, heur_s, warm ? " (from the last round's plan)" : "");
	if (round == 0 && (rc = too_short(d, create_s, heur_s, heur_cost)) < 0)
		return rc;
	if ((rc = nest_seed(d, round)) < 0 || (rc = start_seed(d, round)) < 0)
		return rc;
	struct ilp_result ir = {0};
	bool seed_fits = true;
	/* the first round of a large model cheap to build and seed (see seed_fit) */
	bool check = round == 0 && d->o.max_rounds > 1 && d->m->n_nodes >= SEED_FIT_MIN_NODES &&
	             create_s + heur_s <= SEED_FIT_SHARE * d->o.time_limit_s;
	if (check && (rc = seed_fit(d, &seed_fits)) < 0)
		return rc;
	if (!seed_fits) {
		/* the round ends with the heuristic's plan, which overflows: tightened already */
		ir = d->last_ir;
		ir.creation_s = ir.solve_s = 0;
		ir.gap = ir.bound_s = ir.ilp_objective_s = -1;
		ir.st = ILP_HEURISTIC;
		heur_s = atm_now_s() - t1;
		atm_opt_round *r = round_record(d, &ir, create_s, heur_s, opt_solution_cost(d->m, &d->sol));
		snprintf(r->status, sizeof r->status, "heuristic (does not fit)");
		*fits = r->fits = false;
		if (d->o.verbosity)
			fprintf(stderr, "optimizer: round %d: the heuristic's plan does not fit the arena "
			        "(first fit overflows by %lld bytes at slot %d): limits tightened before "
			        "solving\n", round + 1, (long long)d->ov[0].bytes, d->ov[0].slot);
		return ATM_OK;
	}
	if ((rc = round_solve(d, round, warm, heur_cost, &ir)) < 0)
		return rc;
	atm_opt_round *r = round_record(d, &ir, create_s, heur_s, heur_cost);
	if ((rc = round_plan(d)) < 0 || (rc = fit_check(d->p, d->limit, d->ov, &d->n_ov)) < 0)
		return rc;
	*fits = r->fits = d->n_ov == 0;
	/* from round 6 on the cut is as deep and wide as it gets: a round that lowers no limit
	 * would be followed by the same round */
	if (!*fits && !tighten(d->m, &d->sol, d->slot_limit, d->limit, d->ov, d->n_ov, round,
	                       d->bytes) && round >= 5)
		return stuck(d, round);
	return ATM_OK;
}

/* defrag_finish -- the plan that fit: every round's times, its status and its prediction */
static atm_status defrag_finish(struct defrag *d)
{
	const atm_opt_report *rep = d->rep;
	atm_plan_info *info = atm_plan_info_of(d->p);
	const atm_opt_round *last = &rep->rounds[rep->n_rounds - 1];
	atm_opt_check_result chk;
	atm_status rc;
	info->creation_s = d->total_create;
	info->solve_s = d->total_solve;
	info->mip_gap = last->mip_gap;
	snprintf(info->solver_status, sizeof info->solver_status, "%s", last->status);
	snprintf(info->solver, sizeof info->solver, "%s", rep->solver);
	info->n_rounds = rep->n_rounds;
	for (int i = 0; i < rep->n_rounds; i++) {
		info->round_creation_s[i] = rep->rounds[i].creation_s;
		info->round_solve_s[i] = rep->rounds[i].solve_s;
	}
	if ((rc = atm_opt_check(d->p, d->prof, &d->o, &chk)) < 0)
		return rc;
	info->predicted_runtime_s = chk.predicted_s;
	info->predicted_recompute_s = chk.recompute_s;
	info->estimated = atm_profile_machine_get(d->prof)->estimated;
	return ATM_OK;
}

/* interrupted -- ATM_E_INTERRUPTED when the plan's stop flag is set */
static atm_status interrupted(const struct defrag *d, int round)
{
	if (!d->o.stop || !*d->o.stop)
		return ATM_OK;
	return atm_err(ATM_E_INTERRUPTED, "planning interrupted in round %d", round + 1);
}

/* defrag -- rounds until a plan fits the arena, or the rounds run out */
static atm_status defrag(struct defrag *d)
{
	bool fits = false;
	atm_status rc;
	d->n_slots = 2 * atm_graph_n_nodes(d->g) + 1;
	d->slot_limit = malloc((size_t)d->n_slots * sizeof *d->slot_limit);
	d->bytes = malloc((size_t)d->n_slots * sizeof *d->bytes);
	if (!d->slot_limit || !d->bytes)
		return atm_err(ATM_E_NOMEM, "out of memory planning");
	for (int32_t s = 0; s < d->n_slots; s++)
		d->slot_limit[s] = d->limit;
	d->t_plan = atm_now_s();
	d->best_bound = -1;
	for (int round = 0; round < d->o.max_rounds && !fits; round++)
		if ((rc = interrupted(d, round)) < 0 || (rc = defrag_round(d, round, &fits)) < 0 ||
		    (rc = interrupted(d, round)) < 0)
			return rc;
	if (!fits) {
		int32_t k = d->ov[0].slot > 0 ? (d->ov[0].slot - 1) / 2 : 0;
		return atm_err(ATM_E_INFEASIBLE, "the plan does not fit the fast arena of %lld bytes for "
		               "fragmentation after %d rounds of tightening the limit (first fit still "
		               "overflows by %lld bytes at node %d, '%s'); try a larger limit or more "
		               "rounds", (long long)d->limit, d->rep->n_rounds, (long long)d->ov[0].bytes,
		               k, atm_graph_node(d->g, k)->name);
	}
	return defrag_finish(d);
}

/* plan_formulation -- atm_opt_plan for one program: the formulation with or without
 * recomputation, as o_in says, whose time limit is a share of whole_s (0: all of it); with
 * keep_m (an ILP under a limit), the final round's model and placement are handed over in
 * *keep_m and *keep_s (NULL and empty otherwise) */
static atm_status plan_formulation(atm_plan **out, const atm_graph *g, const atm_profile *prof,
                                   int64_t limit, atm_opt_formulation f,
                                   const atm_opt_options *o_in, double whole_s,
                                   atm_opt_report *rep, struct model **keep_m,
                                   struct solution *keep_s)
{
	atm_opt_report local;
	struct defrag d = {.g = g, .prof = prof, .f = f, .limit = limit, .rep = rep ? rep : &local};
	int64_t need;
	int32_t node;
	atm_status rc;
	*out = NULL;
	memset(d.rep, 0, sizeof *d.rep);
	d.rep->heuristic_s = -1;
	d.rep->nested_s = -1;
	if (o_in)
		d.o = *o_in;
	else
		atm_opt_options_default(&d.o);
	d.whole_limit_s = whole_s > 0 ? whole_s : d.o.time_limit_s;
	if (!g || !prof)
		return atm_err(ATM_E_USAGE, "atm_opt_plan needs a graph and a profile");
	if (f < 0 || f >= ATM_OPT_N_FORMULATIONS)
		return atm_err(ATM_E_USAGE, "formulation %d does not exist", (int)f);
	if (limit < 0)
		return atm_err(ATM_E_USAGE, "fast limit %lld is not valid; expected bytes >= 0 (0: none)",
		               (long long)limit);
	if ((rc = check_options(&d.o)) < 0)
		return rc;
	if (d.o.recompute && !atm_opt_is_ilp(f))
		return atm_err(ATM_E_USAGE, "recomputation is a choice of the integer-programming "
		               "formulations (static, synchronous, asynchronous), not of '%s'",
		               atm_opt_formulation_name(f));
	if (atm_opt_is_ilp(f) && (rc = resolve_solver(&d.o, d.rep)) < 0)
		return rc;
	if (!atm_opt_is_ilp(f))
		return opt_baseline(out, g, prof, limit, f, &d.o);
	if (limit == 0)
		return plan_no_limit(out, g, prof, f, &d.o, d.rep);
	if ((rc = atm_opt_min_limit_profiled(g, prof, &d.o, &need, &node)) < 0)
		return rc;
	if (need > limit)
		return opt_infeasible(g, prof, limit, f, &d.o);
	if ((rc = defrag(&d)) == ATM_OK) {
		*out = d.p;
		d.p = NULL;
		if (keep_m) {
			*keep_m = d.m;
			*keep_s = d.sol;
			d.m = NULL;
			d.sol = (struct solution){0};
		}
	}
	opt_model_destroy(d.m);
	opt_solution_free(&d.sol);
	atm_plan_destroy(d.p);
	free(d.slot_limit);
	free(d.bytes);
	return rc;
}

/* the share of the time limit the plan without recomputation takes when recomputation is
 * allowed */
#define RECOMPUTE_BASE_SHARE 0.3

/* predicted -- a plan's predicted step */
static double predicted(const atm_plan *p)
{
	return atm_plan_info_get(p)->predicted_runtime_s;
}

/* plan_recompute -- with recomputation allowed, the program only widens, so its optimum is never
 * slower than the one without; but a time limit, the gap and the defragmentation rounds (each
 * round a program of its own) can end it on a plan slower than the one without. So that plan
 * is made too, first, in RECOMPUTE_BASE_SHARE of the time, and the faster of the two is kept
 * (docs/optimizer.md, "Recomputation"). */
static atm_status plan_recompute(atm_plan **out, const atm_graph *g, const atm_profile *prof,
                                 int64_t limit, atm_opt_formulation f, const atm_opt_options *o_in,
                                 atm_opt_report *rep)
{
	if (!o_in || !o_in->recompute || f < 0 || f >= ATM_OPT_N_FORMULATIONS ||
	    !atm_opt_is_ilp(f) || limit <= 0 || !g || !prof)
		return plan_formulation(out, g, prof, limit, f, o_in, 0, rep, NULL, NULL);
	atm_opt_options without = *o_in, with = *o_in;
	atm_opt_report base_rep;
	atm_plan *base = NULL;
	without.recompute = false;
	without.write_model = NULL;
	without.time_limit_s = o_in->time_limit_s * RECOMPUTE_BASE_SHARE;
	with.time_limit_s = o_in->time_limit_s - without.time_limit_s;
	atm_status rc = plan_formulation(&base, g, prof, limit, f, &without, o_in->time_limit_s,
	                                 &base_rep, NULL, NULL);
	if (rc == ATM_E_INTERRUPTED || rc == ATM_E_NOMEM || rc == ATM_E_USAGE)
		return rc;
	atm_err_clear(); /* infeasible without recomputation: it may fit with it */
	rc = plan_formulation(out, g, prof, limit, f, &with, o_in->time_limit_s, rep, NULL, NULL);
	if (rc == ATM_E_INTERRUPTED || (rc < 0 && !base) ||
	    (rc >= 0 && (!base || predicted(*out) <= predicted(base)))) {
		atm_plan_destroy(base);
		return rc;
	}
	/* the plan without recomputation is faster (or the one with it failed): it is the plan
	 * with recomputation allowed that recomputes nothing */
	atm_err_clear();
	atm_plan_destroy(*out);
	*out = base;
	atm_plan_info *info = atm_plan_info_of(base);
	snprintf(info->formulation, sizeof info->formulation, "%s%s", atm_opt_formulation_name(f),
	         ATM_OPT_RECOMPUTE_SUFFIX);
	if (rep)
		*rep = base_rep;
	if (o_in->verbosity)
		fprintf(stderr, "optimizer: the plan without recomputation (%.6f s) is kept: the one "
		        "with it was %s\n", predicted(base), rc < 0 ? "not found" : "slower");
	return ATM_OK;
}

/* atm_opt_plan -- the plan found at this limit, or the fastest of the options' start plans where
 * that is predicted faster (docs/optimizer.md, "Monotone in the budget") */
atm_status atm_opt_plan(atm_plan **out, const atm_graph *g, const atm_profile *prof,
                        int64_t limit, atm_opt_formulation f, const atm_opt_options *o_in,
                        atm_opt_report *rep)
{
	atm_opt_report local;
	atm_opt_report *r = rep ? rep : &local;
	atm_status rc = ATM_OK;
	*out = NULL;
	/* a start of another graph or formulation is refused before any work */
	if (g && f >= 0 && f < ATM_OPT_N_FORMULATIONS && (rc = opt_starts_match(g, f, o_in)) < 0)
		return rc;
	rc = plan_recompute(out, g, prof, limit, f, o_in, r);
	return opt_starts_apply(rc, out, g, prof, limit, f, o_in, r);
}

atm_status atm_opt_least_limit(const atm_graph *g, const atm_profile *prof,
                               atm_opt_formulation f, const atm_opt_options *o, int64_t *bytes)
{
	atm_opt_options oo;
	struct model *m = NULL;
	int64_t need = 0;
	int32_t node, slot;
	*bytes = 0;
	if (o)
		oo = *o;
	else
		atm_opt_options_default(&oo);
	atm_status rc = atm_opt_min_limit_profiled(g, prof, &oo, bytes, &node);
	if (rc < 0 || !oo.device_only || f < 0 || f >= ATM_OPT_N_FORMULATIONS || !atm_opt_is_ilp(f))
		return rc;
	/* on a GPU the program's own floor: every phase in which a kernel uses a tensor, from
	 * just before the use to just after, with what that phase spans */
	oo.recompute = false;
	oo.write_model = NULL;
	if ((rc = opt_model_new(&m, g, prof, f, &oo, *bytes > 0 ? *bytes : 1, NULL)) < 0)
		return rc;
	opt_min_fixed(m, &need, &slot); /* infeasible at this limit: need says by how much */
	opt_model_destroy(m);
	if (need > *bytes)
		*bytes = need;
	return ATM_OK;
}

atm_status opt_plan_keep(atm_plan **out, struct model **m, struct solution *s,
                         const atm_graph *g, const atm_profile *prof, int64_t limit,
                         atm_opt_formulation f, const atm_opt_options *o, atm_opt_report *rep)
{
	*m = NULL;
	*s = (struct solution){0};
	if (f < 0 || f >= ATM_OPT_N_FORMULATIONS || !atm_opt_is_ilp(f))
		return atm_err(ATM_E_USAGE, "a search starts from an integer program's plan: give "
		               "static, synchronous or asynchronous, not '%s'",
		               f >= 0 && f < ATM_OPT_N_FORMULATIONS ? atm_opt_formulation_name(f) : "?");
	if (limit <= 0)
		return atm_err(ATM_E_USAGE, "a search needs a fast limit (a ratio S:F with S > 0 or a "
		               "byte count): with no limit every tensor is fast and there is nothing "
		               "to search");
	if (o && o->recompute)
		return atm_err(ATM_E_USAGE, "a search places tensors and moves; it does not choose "
		               "recomputations (leave out --recompute)");
	atm_status rc = plan_formulation(out, g, prof, limit, f, o, 0, rep, m, s);
	if (rep)
		rep->start_used = -1; /* no start plan is compared here (atm_opt_plan's) */
	if (rc == ATM_OK && !*m) {
		atm_plan_destroy(*out);
		*out = NULL;
		rc = atm_err(ATM_E_INTERNAL, "the integer program kept no model");
	}
	return rc;
}
