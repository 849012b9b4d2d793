/* starts.c -- plans found at smaller limits as starts: checked under a new limit, the faster kept */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt_internal.h"

/* formulation_label -- what a plan of f (with recomputation as o says) names as its formulation */
static void formulation_label(atm_opt_formulation f, const atm_opt_options *o, char *buf,
                              size_t len)
{
	snprintf(buf, len, "%s%s", atm_opt_formulation_name(f),
	         o && o->recompute && atm_opt_is_ilp(f) ? ATM_OPT_RECOMPUTE_SUFFIX : "");
}

/* plan_copy -- a copy of p (through its JSON, which holds everything a plan is) */
static atm_status plan_copy(const atm_plan *p, atm_plan **out)
{
	char *text = NULL;
	atm_status rc = atm_plan_dump(p, &text);
	if (rc == ATM_OK)
		rc = atm_plan_load_buffer(out, atm_plan_graph(p), text, strlen(text), "a start plan");
	free(text);
	return rc;
}

atm_status atm_opt_start_check(const atm_plan *start, const atm_graph *g, const atm_profile *prof,
                               int64_t limit, atm_opt_formulation f, const atm_opt_options *o,
                               atm_plan **out, double *predicted_s)
{
	char want[48], a[32], b[32];
	atm_opt_check_result chk;
	atm_plan *p = NULL;
	atm_status rc;
	if (out)
		*out = NULL;
	if (!start || !g || !prof || f < 0 || f >= ATM_OPT_N_FORMULATIONS || limit < 0)
		return atm_err(ATM_E_USAGE, "atm_opt_start_check needs a start plan, a graph, a profile, "
		               "a formulation and a limit >= 0");
	const atm_plan_info *si = atm_plan_info_get(start);
	if (atm_plan_graph(start) != g)
		return atm_err(ATM_E_INPUT, "the start plan is a plan of '%s', not of the graph being "
		               "planned ('%s'); a start must be loaded against that graph",
		               atm_graph_name(atm_plan_graph(start)), atm_graph_name(g));
	formulation_label(f, o, want, sizeof want);
	if (strcmp(si->formulation, want))
		return atm_err(ATM_E_INPUT, "the start plan is a %s plan; this plan is %s, and a start "
		               "must be a plan of the same formulation", si->formulation, want);
	if ((rc = plan_copy(start, &p)) < 0)
		return rc;
	/* re-labelled with the new limit, it is laid out again (atm_schedule_new) and checked */
	atm_plan_info_of(p)->fast_limit_bytes = limit;
	if ((rc = atm_opt_check(p, prof, o, &chk)) < 0) {
		atm_plan_destroy(p);
		if (rc == ATM_E_NOMEM || rc == ATM_E_INTERRUPTED)
			return rc;
		return atm_err_prefix(ATM_E_INFEASIBLE, "the start plan (planned for a limit of %s) "
		                      "does not fit the limit of %s: ",
		                      si->fast_limit_bytes ? atm_format_bytes(si->fast_limit_bytes, a, sizeof a)
		                                           : "none",
		                      limit ? atm_format_bytes(limit, b, sizeof b) : "none");
	}
	atm_plan_info_of(p)->predicted_runtime_s = chk.predicted_s;
	atm_plan_info_of(p)->predicted_recompute_s = chk.recompute_s;
	if (predicted_s)
		*predicted_s = chk.predicted_s;
	if (out)
		*out = p;
	else
		atm_plan_destroy(p);
	return ATM_OK;
}

/* The fastest start that fits, and what became of the others. */
struct best_start {
	atm_plan *p;      /* re-labelled with the limit; NULL: none fits */
	double s;
	int i;
	int64_t from;     /* the limit it was planned for */
};

/* best_start -- every start of o checked under limit: one of another graph or formulation
 * refuses the plan (ATM_E_INPUT, naming it); one that does not fit is passed over, the first such
 * said in rep's start_note */
static atm_status best_start(const atm_graph *g, const atm_profile *prof, int64_t limit,
                             atm_opt_formulation f, const atm_opt_options *o, atm_opt_report *rep,
                             struct best_start *b)
{
	*b = (struct best_start){.i = -1, .s = -1};
	for (int i = 0; o && i < o->n_starts; i++) {
		atm_plan *p = NULL;
		double s = 0;
		atm_status rc = atm_opt_start_check(o->starts[i], g, prof, limit, f, o, &p, &s);
		if (rc == ATM_E_INFEASIBLE) {
			if (!rep->start_note[0])
				snprintf(rep->start_note, sizeof rep->start_note, "start %d ignored: %s", i,
				         atm_errmsg());
			atm_err_clear();
			continue;
		}
		if (rc < 0) {
			atm_plan_destroy(b->p);
			b->p = NULL;
			return atm_err_prefix(rc, "start %d: ", i);
		}
		rep->n_starts_fit++;
		if (b->p && s >= b->s) {
			atm_plan_destroy(p);
			continue;
		}
		atm_plan_destroy(b->p);
		*b = (struct best_start){.p = p, .s = s, .i = i,
		                         .from = atm_plan_info_get(o->starts[i])->fast_limit_bytes};
	}
	return ATM_OK;
}

/* take_start -- the start b in place of found (NULL: the planner found none): the solver's
 * figures of this limit's work and a status that says where the plan came from */
static void take_start(struct best_start *b, atm_plan **found, atm_opt_report *rep)
{
	atm_plan_info *info = atm_plan_info_of(b->p);
	double bound = -1;
	if (*found) {
		const atm_plan_info *fi = atm_plan_info_get(*found);
		info->creation_s = fi->creation_s;
		info->solve_s = fi->solve_s;
		info->n_rounds = fi->n_rounds;
		memcpy(info->round_creation_s, fi->round_creation_s, sizeof info->round_creation_s);
		memcpy(info->round_solve_s, fi->round_solve_s, sizeof info->round_solve_s);
		snprintf(info->solver, sizeof info->solver, "%s", fi->solver);
		info->estimated = fi->estimated;
	}
	if (rep->n_rounds > 0)
		bound = rep->rounds[rep->n_rounds - 1].bound_s;
	info->mip_gap = bound > 0 && b->s > 0 ? (b->s > bound ? (b->s - bound) / b->s : 0) : -1;
	snprintf(info->solver_status, sizeof info->solver_status, "%s", ATM_OPT_STATUS_START);
	atm_plan_destroy(*found);
	*found = b->p;
	b->p = NULL;
}

atm_status opt_starts_apply(atm_status rc, atm_plan **out, const atm_graph *g,
                            const atm_profile *prof, int64_t limit, atm_opt_formulation f,
                            const atm_opt_options *o, atm_opt_report *rep)
{
	struct best_start b;
	char a[32], c[32];
	rep->start_used = -1;
	rep->start_s = rep->found_s = -1;
	rep->n_starts_fit = 0;
	rep->start_note[0] = 0;
	/* an interruption, a bad option or a missing profile entry ends the plan as it is */
	if ((rc < 0 && rc != ATM_E_INFEASIBLE) || !o || o->n_starts <= 0)
		return rc;
	if (rc >= 0)
		rep->found_s = atm_plan_info_get(*out)->predicted_runtime_s;
	char why[512];
	snprintf(why, sizeof why, "%s", rc < 0 ? atm_errmsg() : "");
	atm_status src = best_start(g, prof, limit, f, o, rep, &b);
	if (src < 0) {
		atm_plan_destroy(*out);
		*out = NULL;
		return src;
	}
	rep->start_s = b.s;
	/* ties keep the plan found here: a start is taken only when strictly faster */
	if (!b.p || (rc >= 0 && b.s >= rep->found_s)) {
		atm_plan_destroy(b.p);
		if (rc < 0) /* the planner's own failure stands, its message restored */
			return atm_err(rc, "%s", why);
		return ATM_OK;
	}
	const char *from = b.from ? atm_format_bytes(b.from, a, sizeof a) : "no limit";
	if (rc < 0)
		snprintf(rep->start_note, sizeof rep->start_note, "start %d (planned for %s) taken: no "
		         "plan was found at %s (%.200s)", b.i, from, atm_format_bytes(limit, c, sizeof c),
		         why);
	else
		snprintf(rep->start_note, sizeof rep->start_note, "start %d (planned for %s) taken: "
		         "predicted %.9g s, faster than the %.9g s of the plan found at %s", b.i, from,
		         b.s, rep->found_s, limit ? atm_format_bytes(limit, c, sizeof c) : "no limit");
	rep->start_used = b.i;
	take_start(&b, out, rep);
	atm_err_clear();
	if (o->verbosity)
		fprintf(stderr, "optimizer: %s\n", rep->start_note);
	return ATM_OK;
}

/* cmp_limit -- ascending limits, 0 (no limit) the largest */
static int cmp_limit(int64_t a, int64_t b)
{
	if (a == b)
		return 0;
	if (a == 0 || (b != 0 && a > b))
		return 1;
	return -1;
}

atm_status atm_opt_plan_sweep(atm_plan **plans, const atm_graph *g, const atm_profile *prof,
                              const int64_t *limits, int n, atm_opt_formulation f,
                              const atm_opt_options *o, atm_opt_report *reps)
{
	atm_opt_options oo;
	const atm_plan **starts = NULL;
	int *order = NULL, n_found = 0;
	atm_status rc = ATM_OK, last = ATM_OK;
	if (o)
		oo = *o;
	else
		atm_opt_options_default(&oo);
	if (!plans || !limits || n < 1)
		return atm_err(ATM_E_USAGE, "atm_opt_plan_sweep needs limits (at least one) and room "
		               "for a plan of each");
	for (int i = 0; i < n; i++)
		plans[i] = NULL;
	if (oo.n_starts < 0 || (oo.n_starts > 0 && !oo.starts))
		return atm_err(ATM_E_USAGE, "%d start plans is not valid; expected 0 or more, given",
		               oo.n_starts);
	order = malloc((size_t)n * sizeof *order);
	starts = malloc(((size_t)oo.n_starts + (size_t)n) * sizeof *starts);
	if (!order || !starts) {
		rc = atm_err(ATM_E_NOMEM, "out of memory planning a sweep of %d limits", n);
		goto done;
	}
	for (int i = 0; i < oo.n_starts; i++)
		starts[i] = oo.starts[i];
	/* smallest limit first (insertion sort: a sweep is a few dozen limits) */
	for (int i = 0; i < n; i++) {
		int k = i;
		for (; k > 0 && cmp_limit(limits[order[k - 1]], limits[i]) > 0; k--)
			order[k] = order[k - 1];
		order[k] = i;
	}
	for (int k = 0; k < n; k++) {
		int i = order[k];
		oo.starts = starts;
		oo.n_starts = (o ? o->n_starts : 0) + n_found;
		rc = atm_opt_plan(&plans[i], g, prof, limits[i], f, &oo, reps ? &reps[i] : NULL);
		if (rc == ATM_E_INFEASIBLE) {
			/* this limit has no plan; the larger ones may */
			last = rc;
			if (oo.verbosity)
				fprintf(stderr, "optimizer: sweep: no plan at %lld bytes: %s\n",
				        (long long)limits[i], atm_errmsg());
			continue;
		}
		if (rc < 0)
			goto done;
		starts[(o ? o->n_starts : 0) + n_found++] = plans[i];
	}
	rc = n_found ? ATM_OK : last;
	if (rc == ATM_OK)
		atm_err_clear();
done:
	if (rc < 0 && rc != ATM_E_INFEASIBLE)
		for (int i = 0; i < n; i++) {
			atm_plan_destroy(plans[i]);
			plans[i] = NULL;
		}
	free(order);
	free(starts);
	return rc;
}
