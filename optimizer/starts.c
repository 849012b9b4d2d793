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

/* start_matches -- start is a plan of g itself with formulation f (as o says it), or ATM_E_INPUT
 * naming what differs */
static atm_status start_matches(const atm_plan *start, const atm_graph *g, atm_opt_formulation f,
                                const atm_opt_options *o)
{
	char want[48];
	const atm_plan_info *si = atm_plan_info_get(start);
	if (atm_plan_graph(start) != g)
		return atm_err(ATM_E_INPUT, "the start plan is a plan of '%s', not of the graph being "
		               "planned ('%s'); a start must be loaded against that graph",
		               atm_graph_name(atm_plan_graph(start)), atm_graph_name(g));
	formulation_label(f, o, want, sizeof want);
	if (strcmp(si->formulation, want))
		return atm_err(ATM_E_INPUT, "the start plan is a %s plan; this plan is %s, and a start "
		               "must be a plan of the same formulation", si->formulation, want);
	return ATM_OK;
}

atm_status opt_starts_match(const atm_graph *g, atm_opt_formulation f, const atm_opt_options *o)
{
	atm_status rc = ATM_OK;
	if (o && (o->n_starts < 0 || (o->n_starts > 0 && !o->starts)))
		return atm_err(ATM_E_USAGE, "%d start plans is not valid; expected 0 or more, given",
		               o->n_starts);
	for (int i = 0; o && i < o->n_starts && rc == ATM_OK; i++)
		if (!o->starts[i])
			rc = atm_err(ATM_E_USAGE, "start %d is NULL; expected a plan", i);
		else if ((rc = start_matches(o->starts[i], g, f, o)) < 0)
			atm_err_prefix(rc, "start %d: ", i);
	return rc;
}

atm_status atm_opt_start_check(const atm_plan *start, const atm_graph *g, const atm_profile *prof,
                               int64_t limit, atm_opt_formulation f, const atm_opt_options *o,
                               atm_plan **out, double *predicted_s)
{
	char a[32], b[32];
	atm_opt_check_result chk;
	atm_plan *p = NULL;
	atm_status rc;
	if (out)
		*out = NULL;
	if (!start || !g || !prof || f < 0 || f >= ATM_OPT_N_FORMULATIONS || limit < 0)
		return atm_err(ATM_E_USAGE, "atm_opt_start_check needs a start plan, a graph, a profile, "
		               "a formulation and a limit >= 0");
	const atm_plan_info *si = atm_plan_info_get(start);
	if ((rc = start_matches(start, g, f, o)) < 0)
		return rc;
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

/* tensor_moves -- the moves of tensor x in p, in p's order (after, then blocking before
 * overlapped), into idx; how many */
static int32_t tensor_moves(const atm_plan *p, int32_t x, int32_t *idx)
{
	int32_t n = 0;
	for (int32_t i = 0; i < atm_plan_n_moves(p); i++)
		if (atm_plan_move(p, i)->tensor == x)
			idx[n++] = i;
	return n;
}

/* gate_takes -- move mv is the move tensor state from takes at gate g (as opt_solution_to_plan
 * writes it: an overlapped gate's drop of a valid copy is a blocking move after the node) */
static bool gate_takes(const struct gate *g, const atm_move *mv, uint8_t from)
{
	if (g->kind == G_SYNC)
		return !mv->async && mv->after == g->at;
	if (g->kind != G_ASYNC)
		return false;
	return (mv->async && mv->after == g->at - 1) ||
	       (!mv->async && mv->after == g->at && mv->to == ATM_LOC_SLOW && from == ST_B);
}

/* tensor_states -- movable tensor x's states under p's initial location and moves, gate by gate:
 * a gate takes the tensor's next move where it allows that edge, else the tensor stays (or,
 * after an in-place write, goes from B to F); false when p's moves are no path of x's gates */
static bool tensor_states(const struct model *m, const atm_plan *p, int32_t x, int32_t *idx,
                          struct solution *s)
{
	const struct tmodel *t = &m->t[x];
	int32_t n = tensor_moves(p, x, idx), next = 0;
	bool fast = atm_plan_location(p, x) == ATM_LOC_FAST;
	s->pinned[x] = t->persistent && fast && n == 0;
	if (s->pinned[x])
		return true;
	uint8_t st = fast ? ST_F : ST_S;
	if (!(t->gates[0].edges >> EDGE(ST_S, st) & 1u))
		return false;
	s->st[t->ph_off] = st;
	for (int32_t i = 1; i < t->n_gates; i++) {
		const struct gate *g = &t->gates[i];
		uint8_t to = st;
		if (next < n && gate_takes(g, atm_plan_move(p, idx[next]), st)) {
			uint8_t moved = atm_plan_move(p, idx[next])->to == ATM_LOC_FAST ? ST_B : ST_S;
			if (moved != st && (g->edges >> EDGE(st, moved) & 1u)) {
				to = moved;
				next++;
			}
		}
		if (to == st && !(g->edges >> EDGE(st, st) & 1u))
			to = st == ST_B ? ST_F : to; /* after an in-place write the slow copy is stale */
		if (!(g->edges >> EDGE(st, to) & 1u))
			return false;
		s->st[t->ph_off + i] = st = to;
	}
	return next == n;
}

/* same_plan -- a and b (plans of one graph) have the same places, moves and recomputations */
static bool same_plan(const atm_plan *a, const atm_plan *b)
{
	const atm_graph *g = atm_plan_graph(a);
	if (atm_plan_n_moves(a) != atm_plan_n_moves(b) ||
	    atm_plan_n_recomputes(a) != atm_plan_n_recomputes(b))
		return false;
	for (int32_t x = 0; x < atm_graph_n_tensors(g); x++)
		if (atm_plan_location(a, x) != atm_plan_location(b, x))
			return false;
	for (int32_t i = 0; i < atm_plan_n_moves(a); i++) {
		const atm_move *u = atm_plan_move(a, i), *v = atm_plan_move(b, i);
		if (u->tensor != v->tensor || u->to != v->to || u->after != v->after ||
		    u->async != v->async || (u->async && u->until != v->until))
			return false;
	}
	for (int32_t i = 0; i < atm_plan_n_recomputes(a); i++) {
		const atm_recompute *u = atm_plan_recompute(a, i), *v = atm_plan_recompute(b, i);
		if (u->tensor != v->tensor || u->drop_after != v->drop_after || u->before != v->before)
			return false;
	}
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++)
		if (atm_plan_algo(a, k) != atm_plan_algo(b, k))
			return false;
	return true;
}

/* solution_algos_rc -- p's algorithms and recomputations as s's choices in m; false when m has
 * no such choice */
static bool solution_algos_rc(const struct model *m, const atm_plan *p, struct solution *s)
{
	const atm_graph *g = m->g;
	for (int32_t k = 0; k < m->n_nodes; k++) {
		const struct nmodel *nm = &m->n[k];
		int j = 0;
		if (m->o.device_only)
			while (j < nm->n_algo && nm->algos[j] != atm_plan_algo(p, k))
				j++;
		if (m->o.device_only && j == nm->n_algo)
			return false;
		s->algo[k] = (uint8_t)j;
	}
	memset(s->rc, 0, (size_t)(m->n_rc ? m->n_rc : 1));
	for (int32_t i = 0; i < atm_plan_n_recomputes(p); i++) {
		const atm_recompute *r = atm_plan_recompute(p, i);
		int32_t c = 0;
		if (atm_recompute_is_link(g, r))
			continue; /* made for the chains that read it */
		while (c < m->n_rc && !(m->rc[c].t == r->tensor && m->rc[c].d == r->drop_after &&
		                        m->rc[c].u == r->before))
			c++;
		if (c == m->n_rc)
			return false;
		s->rc[c] = 1;
	}
	return true;
}

atm_status opt_solution_from_plan(const struct model *m, const atm_plan *p, struct solution *s,
                                  bool *ok)
{
	atm_plan *back = NULL;
	int32_t *idx = malloc(((size_t)atm_plan_n_moves(p) + 1) * sizeof *idx);
	atm_status rc = ATM_OK;
	*ok = false;
	if (!idx)
		return atm_err(ATM_E_NOMEM, "out of memory reading a start plan");
	if (atm_plan_graph(p) != m->g)
		goto done;
	for (int32_t x = 0; x < m->n_tensors; x++) {
		const struct tmodel *t = &m->t[x];
		bool fast = atm_plan_location(p, x) == ATM_LOC_FAST;
		s->pinned[x] = false;
		if (t->cls == TC_MOVABLE ? !tensor_states(m, p, x, idx, s)
		                         : tensor_moves(p, x, idx) || fast != (t->cls == TC_FAST))
			goto done;
	}
	if (!solution_algos_rc(m, p, s))
		goto done;
	/* the placement says the plan exactly when it writes the plan back */
	if ((rc = atm_plan_new(&back, m->g)) < 0 || (rc = opt_solution_to_plan(m, s, back)) < 0) {
		if (rc != ATM_E_NOMEM) {
			atm_err_clear();
			rc = ATM_OK;
		}
		goto done;
	}
	*ok = same_plan(p, back);
done:
	atm_plan_destroy(back);
	free(idx);
	return rc;
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
 * figures of this limit's work (rep's rounds, found or not) and a status that says where the
 * plan came from */
static void take_start(struct best_start *b, atm_plan **found, const atm_profile *prof,
                       atm_opt_report *rep)
{
	atm_plan_info *info = atm_plan_info_of(b->p);
	double bound = -1;
	info->n_rounds = rep->n_rounds;
	info->creation_s = info->solve_s = rep->n_rounds ? 0 : -1;
	for (int i = 0; i < rep->n_rounds; i++) {
		info->creation_s += info->round_creation_s[i] = rep->rounds[i].creation_s;
		info->solve_s += info->round_solve_s[i] = rep->rounds[i].solve_s;
	}
	snprintf(info->solver, sizeof info->solver, "%s", rep->solver);
	info->estimated = atm_profile_machine_get(prof)->estimated;
	if (rep->n_rounds > 0)
		bound = rep->rounds[rep->n_rounds - 1].bound_s;
	info->mip_gap = bound > 0 && b->s > 0 ? (b->s > bound ? (b->s - bound) / b->s : 0) : -1;
	snprintf(info->solver_status, sizeof info->solver_status, "%s", ATM_OPT_STATUS_START);
	/* the start's ratio gave its own limit, not this one: the caller says this one's */
	info->ratio_slow = info->ratio_fast = 0;
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
	take_start(&b, out, prof, rep);
	atm_err_clear();
	if (o->verbosity)
		fprintf(stderr, "optimizer: %s\n", rep->start_note);
	return ATM_OK;
}
