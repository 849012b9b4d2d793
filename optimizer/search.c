/* search.c -- a searching baseline that checks the ILP: hill climbing and a genetic search over
 * the placements of the ILP's own model, each candidate feasible, priced by the model and laid
 * out in the fast arena */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt_internal.h"

/* evaluations per run when none are given, and the genetic population */
#define SEARCH_EVALUATIONS 2000
#define SEARCH_POPULATION 12
/* the method of a candidate atm_opt_search_neighbours found */
#define NEIGHBOUR ATM_OPT_SEARCH_N_METHODS

/* flips a random start is made of at most (each is priced: a large model's cost) */
#define RANDOM_FLIPS 256
/* phases one flip changes at most */
#define FLIP_SPAN 4

struct atm_opt_search {
	const atm_graph *g;
	const atm_profile *prof;
	atm_opt_options o;
	int64_t limit;
	struct model *m;
	int64_t *bytes;          /* per slot: scratch */
	int32_t *movable;        /* the movable tensors' ids */
	int32_t n_movable;
	int32_t *persistent;     /* of them, those that may be pinned */
	int32_t n_persistent;
	/* the candidates kept: 0 is the ILP's */
	int n_cand, cap;
	struct solution *cand;
	double *cand_s;
	int8_t *cand_method;     /* -1: the ILP; NEIGHBOUR: atm_opt_search_neighbours' */
};

static const char *const method_names[ATM_OPT_SEARCH_N_METHODS] = {
	"hill-ilp", "hill-slow", "hill-random", "genetic"};

const char *atm_opt_search_method_name(atm_opt_search_method m)
{
	return m >= 0 && m < ATM_OPT_SEARCH_N_METHODS ? method_names[m] : "?";
}

atm_status atm_opt_search_method_from_name(const char *s, atm_opt_search_method *out)
{
	for (int i = 0; i < ATM_OPT_SEARCH_N_METHODS; i++)
		if (s && !strcmp(s, method_names[i])) {
			*out = (atm_opt_search_method)i;
			return ATM_OK;
		}
	return atm_err(ATM_E_USAGE, "unknown search method '%s'; valid methods: hill-ilp, "
	               "hill-slow, hill-random, genetic", s ? s : "");
}

/* below -- a number from 0 to n - 1 (n > 0) from the search's one source of chance, so that
 * a seed repeats a search */
static int32_t below(uint64_t *x, int32_t n)
{
	return (int32_t)(atm_splitmix64(x) % (uint64_t)n);
}

/* chain_ok -- tensor x's states under s are a path its gates allow */
static bool chain_ok(const struct model *m, const struct solution *s, int32_t x)
{
	const struct tmodel *t = &m->t[x];
	uint8_t prev = ST_S;
	for (int32_t i = 0; i < t->n_gates; i++) {
		uint8_t y = s->st[t->ph_off + i];
		if (y >= N_ST || !(t->ph_states[i] >> y & 1u) || !(t->gates[i].edges >> EDGE(prev, y) & 1u))
			return false;
		prev = y;
	}
	return true;
}

/* forced_ok -- every place a node forces on a movable tensor (its group's partner fixed fast
 * or slow; on a GPU, every operand fast) kept under s, as the ILP's rows keep it */
static bool forced_ok(const struct model *m, const struct solution *s)
{
	for (int32_t k = 0; k < m->n_nodes; k++)
		for (int j = 0; j < m->n[k].n_forced; j++) {
			const struct forced *fc = &m->n[k].forced[j];
			const struct tmodel *t = &m->t[fc->tensor];
			if (t->cls != TC_MOVABLE || fc->phase < 0)
				continue;
			bool slow = !s->pinned[fc->tensor] && s->st[t->ph_off + fc->phase] == ST_S;
			if (slow != fc->slow)
				return false;
		}
	return true;
}

/* within -- every place s's nodes force kept, and every slot within the model's limit there */
static bool within(const atm_opt_search *S, const struct solution *s)
{
	if (!forced_ok(S->m, s))
		return false;
	opt_solution_bytes(S->m, s, S->bytes);
	for (int32_t sl = 0; sl < S->m->n_slots; sl++)
		if (S->bytes[sl] > S->m->limit[sl])
			return false;
	return true;
}

/* feasible -- every movable tensor's chain valid (or pinned, when persistent), within the
 * limits, and priced (its cost into *cost) */
static bool feasible(const atm_opt_search *S, const struct solution *s, double *cost)
{
	for (int32_t i = 0; i < S->n_movable; i++) {
		int32_t x = S->movable[i];
		if (s->pinned[x] ? !S->m->t[x].persistent : !chain_ok(S->m, s, x))
			return false;
	}
	if (!within(S, s))
		return false;
	*cost = opt_solution_cost(S->m, s);
	return isfinite(*cost);
}

/* plan_of -- candidate placement s as a plan, like the ILP's */
static atm_status plan_of(const atm_opt_search *S, const struct solution *s, atm_plan **p)
{
	return opt_solution_plan(S->m, s, S->limit, p);
}

/* lays_out -- s's plan fits the fast arena with first fit (core's layout); false on a failure
 * to build it too, whose message is dropped: the candidate is refused */
static bool lays_out(const atm_opt_search *S, const struct solution *s)
{
	atm_plan *p = NULL;
	atm_schedule *sch = NULL;
	bool ok = plan_of(S, s, &p) == ATM_OK && atm_schedule_new(&sch, p) == ATM_OK;
	atm_schedule_destroy(sch);
	atm_plan_destroy(p);
	if (!ok)
		atm_err_clear();
	return ok;
}

/* keep -- s (of method, -1 the ILP) as a new candidate priced cost; its number in *i */
static atm_status keep(atm_opt_search *S, const struct solution *s, double cost, int method,
                       int *i)
{
	atm_status rc;
	if (S->n_cand == S->cap) {
		int cap = S->cap ? 2 * S->cap : 16;
		struct solution *c = realloc(S->cand, (size_t)cap * sizeof *c);
		if (c)
			S->cand = c;
		double *cs = c ? realloc(S->cand_s, (size_t)cap * sizeof *cs) : NULL;
		if (cs)
			S->cand_s = cs;
		int8_t *cm = cs ? realloc(S->cand_method, (size_t)cap) : NULL;
		if (!cm)
			return atm_err(ATM_E_NOMEM, "out of memory keeping a searched placement");
		S->cand_method = cm;
		S->cap = cap;
	}
	struct solution *d = &S->cand[S->n_cand];
	*d = (struct solution){0};
	if ((rc = opt_solution_new(S->m, d)) < 0)
		return rc;
	opt_solution_copy(S->m, d, s);
	S->cand_s[S->n_cand] = cost;
	S->cand_method[S->n_cand] = (int8_t)method;
	*i = S->n_cand++;
	return ATM_OK;
}

/* same -- a and b place every tensor alike */
static bool same(const atm_opt_search *S, const struct solution *a, const struct solution *b)
{
	for (int32_t i = 0; i < S->n_movable; i++) {
		int32_t x = S->movable[i];
		if (a->pinned[x] != b->pinned[x])
			return false;
	}
	return !memcmp(a->st, b->st, (size_t)S->m->n_phases);
}

/* kept_already -- s is one of the candidates kept */
static bool kept_already(const atm_opt_search *S, const struct solution *s)
{
	for (int i = 0; i < S->n_cand; i++)
		if (same(S, &S->cand[i], s))
			return true;
	return false;
}

/* atm_opt_search_destroy -- the candidates, the model and s (NULL is fine) */
void atm_opt_search_destroy(atm_opt_search *S)
{
	if (!S)
		return;
	for (int i = 0; i < S->n_cand; i++)
		opt_solution_free(&S->cand[i]);
	free(S->cand);
	free(S->cand_s);
	free(S->cand_method);
	free(S->movable);
	free(S->persistent);
	free(S->bytes);
	opt_model_destroy(S->m);
	free(S);
}

/* atm_opt_search_new -- the ILP's plan and its final model kept, the ILP's placement candidate 0 */
atm_status atm_opt_search_new(atm_opt_search **out, atm_plan **ilp, const atm_graph *g,
                              const atm_profile *prof, int64_t limit, atm_opt_formulation f,
                              const atm_opt_options *o, atm_opt_report *rep)
{
	atm_opt_search *S = calloc(1, sizeof *S);
	struct solution sol = {0};
	atm_status rc;
	int i0;
	*out = NULL;
	*ilp = NULL;
	if (!S)
		return atm_err(ATM_E_NOMEM, "out of memory for a search");
	S->g = g;
	S->prof = prof;
	S->limit = limit;
	if (o)
		S->o = *o;
	else
		atm_opt_options_default(&S->o);
	if ((rc = opt_plan_keep(ilp, &S->m, &sol, g, prof, limit, f, o, rep)) < 0)
		goto fail;
	const struct model *m = S->m;
	S->bytes = malloc((size_t)m->n_slots * sizeof *S->bytes);
	S->movable = malloc((size_t)(m->n_tensors ? m->n_tensors : 1) * sizeof *S->movable);
	S->persistent = malloc((size_t)(m->n_tensors ? m->n_tensors : 1) * sizeof *S->persistent);
	if (!S->bytes || !S->movable || !S->persistent) {
		rc = atm_err(ATM_E_NOMEM, "out of memory for a search");
		goto fail;
	}
	for (int32_t x = 0; x < m->n_tensors; x++)
		if (m->t[x].cls == TC_MOVABLE) {
			S->movable[S->n_movable++] = x;
			if (m->t[x].persistent)
				S->persistent[S->n_persistent++] = x;
		}
	/* a pinned tensor's states are not the program's: the search unpins it to all slow */
	for (int32_t i = 0; i < S->n_movable; i++) {
		int32_t x = S->movable[i];
		if (sol.pinned[x] && !chain_ok(m, &sol, x))
			memset(sol.st + m->t[x].ph_off, ST_S, (size_t)m->t[x].n_gates);
	}
	if ((rc = keep(S, &sol, opt_solution_cost(m, &sol), -1, &i0)) < 0)
		goto fail;
	opt_solution_free(&sol);
	*out = S;
	return ATM_OK;
fail:
	opt_solution_free(&sol);
	atm_plan_destroy(*ilp);
	*ilp = NULL;
	atm_opt_search_destroy(S);
	return rc;
}

int atm_opt_search_n(const atm_opt_search *S)
{
	return S ? S->n_cand : 0;
}

double atm_opt_search_predicted(const atm_opt_search *S, int i)
{
	return S && i >= 0 && i < S->n_cand ? S->cand_s[i] : -1;
}

atm_status atm_opt_search_plan(const atm_opt_search *S, int i, atm_plan **out)
{
	atm_opt_check_result chk;
	atm_status rc;
	*out = NULL;
	if (!S || i < 0 || i >= S->n_cand)
		return atm_err(ATM_E_USAGE, "search candidate %d does not exist; expected 0 to %d", i,
		               S ? S->n_cand - 1 : -1);
	if ((rc = plan_of(S, &S->cand[i], out)) < 0)
		return rc;
	atm_plan_info *info = atm_plan_info_of(*out);
	int m = S->cand_method[i];
	snprintf(info->solver_status, sizeof info->solver_status, "search: %s",
	         m < 0 ? "the ILP's" : m == NEIGHBOUR ? "a neighbour" : method_names[m]);
	info->mip_gap = -1;
	if ((rc = atm_opt_check(*out, S->prof, &S->o, &chk)) < 0) {
		atm_plan_destroy(*out);
		*out = NULL;
		return rc;
	}
	info->predicted_runtime_s = chk.predicted_s;
	info->estimated = atm_profile_machine_get(S->prof)->estimated;
	return ATM_OK;
}

/* ---------------------------------------------------------------- moves */

/* state_like -- a state of phase i of t as fast as want_fast whose edge from prev its gate
 * allows, preferring keep; N_ST when there is none */
static uint8_t state_like(const struct tmodel *t, int32_t i, uint8_t prev, bool want_fast,
                          uint8_t keep_st, uint64_t *r)
{
	uint8_t opts[N_ST];
	int n = 0;
	for (uint8_t y = 0; y < N_ST; y++)
		if (IS_FAST(y) == want_fast && (t->ph_states[i] >> y & 1u) &&
		    (t->gates[i].edges >> EDGE(prev, y) & 1u)) {
			if (y == keep_st)
				return y;
			opts[n++] = y;
		}
	return n ? opts[below(r, n)] : N_ST;
}

/* flip -- phases i .. i + span - 1 of movable tensor x made fast (want_fast) or slow, the
 * phases after mended until the chain is valid again; false (s partly changed: the caller
 * restores x) when no valid chain does it */
static bool flip(const struct model *m, struct solution *s, int32_t x, int32_t i, int32_t span,
                 bool want_fast, uint64_t *r)
{
	const struct tmodel *t = &m->t[x];
	uint8_t *st = s->st + t->ph_off;
	uint8_t prev = i ? st[i - 1] : ST_S;
	for (int32_t k = i; k < t->n_gates; k++) {
		bool changing = k < i + span;
		if (!changing && (t->gates[k].edges >> EDGE(prev, st[k]) & 1u))
			return true;
		uint8_t y = state_like(t, k, prev, changing ? want_fast : IS_FAST(st[k]),
		                       changing ? prev : st[k], r);
		if (y == N_ST)
			return false;
		st[k] = y;
		prev = y;
	}
	return true;
}

/* Tensors a move changed, to take back. */
struct touched {
	int n;
	int32_t x[2];
};

/* restore -- the tensors of tc back to their places under from */
static void restore(const struct model *m, struct solution *s, const struct solution *from,
                    const struct touched *tc)
{
	for (int j = 0; j < tc->n; j++) {
		const struct tmodel *t = &m->t[tc->x[j]];
		memcpy(s->st + t->ph_off, from->st + t->ph_off, (size_t)t->n_gates);
		s->pinned[tc->x[j]] = from->pinned[tc->x[j]];
	}
}

/* flip_some -- a random span of a random phase of a random movable tensor made fast or slow
 * (want: 1 fast, 0 slow, -1 the other of what it is); a pinned tensor is unpinned instead */
static bool flip_some(const atm_opt_search *S, struct solution *s, int want, uint64_t *r,
                      struct touched *tc)
{
	const struct model *m = S->m;
	int32_t x = -1, i = 0;
	/* a few draws for a phase in the state wanted away from */
	for (int tries = 0; tries < 8; tries++) {
		x = S->movable[below(r, S->n_movable)];
		i = below(r, m->t[x].n_gates);
		if (s->pinned[x] || want < 0 || IS_FAST(s->st[m->t[x].ph_off + i]) != (want == 1))
			break;
	}
	tc->x[tc->n++] = x;
	if (s->pinned[x]) {
		s->pinned[x] = false;
		return chain_ok(m, s, x);
	}
	bool fast = want < 0 ? !IS_FAST(s->st[m->t[x].ph_off + i]) : want == 1;
	int32_t left = m->t[x].n_gates - i, span = 1 + below(r, left < FLIP_SPAN ? left : FLIP_SPAN);
	return flip(m, s, x, i, span, fast, r);
}

/* propose -- one neighbour of s in place: a flip (most often), a persistent tensor pinned or
 * unpinned, or a swap (one phase made slow, another tensor's fast); false when it found none
 * valid (the tensors touched are in tc either way) */
static bool propose(const atm_opt_search *S, struct solution *s, uint64_t *r, struct touched *tc)
{
	tc->n = 0;
	if (S->n_movable == 0)
		return false;
	int kind = below(r, 10);
	if (kind == 0 && S->n_persistent) {
		int32_t x = S->persistent[below(r, S->n_persistent)];
		tc->x[tc->n++] = x;
		s->pinned[x] = !s->pinned[x];
		return s->pinned[x] || chain_ok(S->m, s, x);
	}
	if (kind <= 3) {
		if (!flip_some(S, s, 0, r, tc))
			return false;
		return flip_some(S, s, 1, r, tc) && (tc->n < 2 || tc->x[0] != tc->x[1] ||
		                                     chain_ok(S->m, s, tc->x[0]));
	}
	return flip_some(S, s, -1, r, tc);
}

/* better -- a cost below best by more than rounding */
static bool better(double cost, double best)
{
	return cost < best - 1e-12 * fabs(best);
}

/* interrupted -- ATM_E_INTERRUPTED when the search's stop flag is set */
static atm_status interrupted(const atm_opt_search *S)
{
	if (S->o.stop && *S->o.stop)
		return atm_err(ATM_E_INTERRUPTED, "search interrupted");
	return ATM_OK;
}

/* ---------------------------------------------------------------- hill climbing */

/* climb -- cur (feasible, laid out, priced *cost) improved by first-improvement hill climbing
 * within r->evaluations proposals: a neighbour replaces it only when cheaper and laid out */
static atm_status climb(const atm_opt_search *S, struct solution *cur, struct solution *back,
                        double *cost, int budget, uint64_t *rs, atm_opt_search_outcome *r)
{
	struct touched tc;
	atm_status rc;
	opt_solution_copy(S->m, back, cur);
	for (int e = 0; e < budget; e++) {
		if ((rc = interrupted(S)) < 0)
			return rc;
		r->evaluations++;
		double c = INFINITY;
		bool valid = propose(S, cur, rs, &tc) && within(S, cur) &&
		             isfinite(c = opt_solution_cost(S->m, cur));
		bool take = valid && better(c, *cost) && lays_out(S, cur);
		if (!take) {
			/* refused: invalid, over a limit, unpriced, or cheaper but not laid out */
			r->refused += !valid || better(c, *cost);
			restore(S->m, cur, back, &tc);
			continue;
		}
		restore(S->m, back, cur, &tc);
		*cost = c;
		r->improvements++;
	}
	return ATM_OK;
}

/* random_start -- a random feasible placement that lays out: from all slow, tensors made fast
 * by random flips kept while within the limits (where all slow is no placement, as on a GPU
 * whose kernels read device memory only: from the ILP's, random moves kept while feasible),
 * fewer of them when the result does not lay out */
static atm_status random_start(const atm_opt_search *S, struct solution *s, struct solution *back,
                               uint64_t *rs)
{
	struct touched tc;
	double cost;
	int32_t most = S->n_movable * 2 < RANDOM_FLIPS ? S->n_movable * 2 : RANDOM_FLIPS;
	opt_solution_all_slow(S->m, s);
	memcpy(s->algo, S->cand[0].algo, (size_t)S->m->n_nodes * sizeof *s->algo);
	bool from_slow = feasible(S, s, &cost);
	for (int32_t n_flips = most; ; n_flips /= 2) {
		if (from_slow)
			opt_solution_all_slow(S->m, s);
		else
			opt_solution_copy(S->m, s, &S->cand[0]);
		memcpy(s->algo, S->cand[0].algo, (size_t)S->m->n_nodes * sizeof *s->algo);
		opt_solution_copy(S->m, back, s);
		for (int32_t f = 0; f < n_flips; f++) {
			tc.n = 0;
			bool moved = from_slow ? flip_some(S, s, 1, rs, &tc) : propose(S, s, rs, &tc);
			if (moved && within(S, s) && isfinite(opt_solution_cost(S->m, s)))
				restore(S->m, back, s, &tc);
			else
				restore(S->m, s, back, &tc);
		}
		if (n_flips == 0 || lays_out(S, s))
			return ATM_OK;
	}
}

/* start_of -- the start of a hill climb of method m, priced into *cost */
static atm_status start_of(const atm_opt_search *S, atm_opt_search_method m, struct solution *s,
                           struct solution *back, uint64_t *rs, double *cost)
{
	atm_status rc;
	if (m == ATM_OPT_SEARCH_HILL_ILP)
		opt_solution_copy(S->m, s, &S->cand[0]);
	else if (m == ATM_OPT_SEARCH_HILL_SLOW)
		opt_solution_all_slow(S->m, s);
	else if ((rc = random_start(S, s, back, rs)) < 0)
		return rc;
	if (m != ATM_OPT_SEARCH_HILL_ILP)
		memcpy(s->algo, S->cand[0].algo, (size_t)S->m->n_nodes * sizeof *s->algo);
	if (!feasible(S, s, cost) || !lays_out(S, s))
		return atm_err(ATM_E_INFEASIBLE, "the %s search's start is no placement here (%s)",
		               method_names[m], m == ATM_OPT_SEARCH_HILL_SLOW
		               ? "some tensor may not be slow at a use, or the tensors that must be fast "
		                 "leave no room" : "it does not lay out in the fast arena");
	return ATM_OK;
}

/* ---------------------------------------------------------------- genetic search */

/* fast_at -- a movable tensor of s fast at slot sl (pinned, or a phase covering it); -1 none */
static int32_t fast_at(const atm_opt_search *S, const struct solution *s, int32_t sl, uint64_t *r)
{
	int32_t n = 0, pick = -1;
	for (int32_t j = 0; j < S->n_movable; j++) {
		int32_t x = S->movable[j];
		const struct tmodel *t = &S->m->t[x];
		bool fast = s->pinned[x] && sl >= t->slot_lo && sl <= t->slot_hi;
		for (int32_t i = 0; i < t->n_gates && !fast && !s->pinned[x]; i++)
			fast = IS_FAST(s->st[t->ph_off + i]) && sl >= t->ph_lo[i] - 2 && sl <= t->ph_hi[i] + 2;
		/* reservoir sampling: each such tensor as likely */
		if (fast && below(r, ++n) == 0)
			pick = x;
	}
	return pick;
}

/* repair -- s brought within the limits by making tensors fast where a slot overflows slow all
 * their life; false when that cannot */
static bool repair(const atm_opt_search *S, struct solution *s, uint64_t *r)
{
	for (int32_t n = 0; n <= S->n_movable; n++) {
		opt_solution_bytes(S->m, s, S->bytes);
		int32_t over = -1;
		for (int32_t sl = 0; sl < S->m->n_slots && over < 0; sl++)
			if (S->bytes[sl] > S->m->limit[sl])
				over = sl;
		if (over < 0)
			return true;
		int32_t x = fast_at(S, s, over, r);
		if (x < 0)
			return false;
		s->pinned[x] = false;
		memset(s->st + S->m->t[x].ph_off, ST_S, (size_t)S->m->t[x].n_gates);
		if (!chain_ok(S->m, s, x))
			return false;
	}
	return false;
}

/* tournament -- the better of two members drawn at random */
static int tournament(const double *cost, int n, uint64_t *r)
{
	int a = below(r, n), b = below(r, n);
	return cost[a] <= cost[b] ? a : b;
}

/* A genetic search's population. */
struct population {
	int n;
	struct solution *s;
	double *cost;
	struct solution child, back;
};

/* population_free -- what population_new made (P may be partly made) */
static void population_free(const atm_opt_search *S, struct population *P)
{
	(void)S;
	for (int i = 0; P->s && i < P->n; i++)
		opt_solution_free(&P->s[i]);
	free(P->s);
	free(P->cost);
	opt_solution_free(&P->child);
	opt_solution_free(&P->back);
}

/* population_new -- n members: the ILP's placement, all slow, the rest random starts */
static atm_status population_new(const atm_opt_search *S, struct population *P, int n,
                                 uint64_t *rs)
{
	atm_status rc;
	P->s = calloc((size_t)n, sizeof *P->s);
	P->cost = calloc((size_t)n, sizeof *P->cost);
	if (!P->s || !P->cost)
		return atm_err(ATM_E_NOMEM, "out of memory for a search's population");
	if ((rc = opt_solution_new(S->m, &P->child)) < 0 || (rc = opt_solution_new(S->m, &P->back)) < 0)
		return rc;
	for (P->n = 0; P->n < n; P->n++) {
		struct solution *s = &P->s[P->n];
		if ((rc = opt_solution_new(S->m, s)) < 0)
			return rc;
		atm_opt_search_method how = P->n == 0   ? ATM_OPT_SEARCH_HILL_ILP
		                          : P->n == 1 ? ATM_OPT_SEARCH_HILL_SLOW
		                                      : ATM_OPT_SEARCH_HILL_RANDOM;
		rc = start_of(S, how, s, &P->back, rs, &P->cost[P->n]);
		/* where all slow is no placement (a GPU's), a random one takes its place */
		if (rc == ATM_E_INFEASIBLE && how == ATM_OPT_SEARCH_HILL_SLOW) {
			atm_err_clear();
			rc = start_of(S, ATM_OPT_SEARCH_HILL_RANDOM, s, &P->back, rs, &P->cost[P->n]);
		}
		if (rc < 0)
			return rc;
	}
	return ATM_OK;
}

/* breed -- P->child from two parents by tensor, mutated by a few moves, repaired; false when
 * it could not be made valid */
static bool breed(const atm_opt_search *S, struct population *P, uint64_t *rs)
{
	const struct model *m = S->m;
	const struct solution *a = &P->s[tournament(P->cost, P->n, rs)],
	                      *b = &P->s[tournament(P->cost, P->n, rs)];
	struct touched tc;
	opt_solution_copy(m, &P->child, a);
	for (int32_t j = 0; j < S->n_movable; j++) {
		int32_t x = S->movable[j];
		if (atm_splitmix64(rs) & 1u)
			continue;
		const struct tmodel *t = &m->t[x];
		memcpy(P->child.st + t->ph_off, b->st + t->ph_off, (size_t)t->n_gates);
		P->child.pinned[x] = b->pinned[x];
	}
	for (int k = below(rs, 3); k >= 0; k--) {
		opt_solution_copy(m, &P->back, &P->child);
		if (!propose(S, &P->child, rs, &tc))
			restore(m, &P->child, &P->back, &tc);
	}
	return repair(S, &P->child, rs);
}

/* evolve -- generations within the budget: each child replaces the worst member when cheaper
 * and unlike every member; the best laid out is best (its cost *best_s) */
static atm_status evolve(const atm_opt_search *S, struct population *P, struct solution *best,
                         double *best_s, int budget, uint64_t *rs, atm_opt_search_outcome *r)
{
	atm_status rc;
	for (int e = 0; e < budget; e++) {
		if ((rc = interrupted(S)) < 0)
			return rc;
		r->evaluations++;
		double c;
		if (!breed(S, P, rs) || !feasible(S, &P->child, &c)) {
			r->refused++;
			continue;
		}
		int worst = 0;
		bool dup = false;
		for (int i = 0; i < P->n; i++) {
			worst = P->cost[i] > P->cost[worst] ? i : worst;
			dup |= same(S, &P->s[i], &P->child);
		}
		if (dup || !better(c, P->cost[worst]))
			continue;
		if (better(c, *best_s)) {
			if (!lays_out(S, &P->child)) {
				r->refused++;
				continue;
			}
			opt_solution_copy(S->m, best, &P->child);
			*best_s = c;
			r->improvements++;
		}
		opt_solution_copy(S->m, &P->s[worst], &P->child);
		P->cost[worst] = c;
	}
	return ATM_OK;
}

/* genetic -- the genetic search: best laid out member into best */
static atm_status genetic(const atm_opt_search *S, int n_pop, int budget, uint64_t *rs,
                          struct solution *best, double *best_s, atm_opt_search_outcome *r)
{
	struct population P = {0};
	atm_status rc = population_new(S, &P, n_pop, rs);
	if (rc == ATM_OK) {
		/* every member lays out (start_of): the first population's best is the start */
		int b = 0;
		for (int i = 1; i < P.n; i++)
			b = P.cost[i] < P.cost[b] ? i : b;
		opt_solution_copy(S->m, best, &P.s[b]);
		*best_s = r->start_s = P.cost[b];
		rc = evolve(S, &P, best, best_s, budget, rs, r);
	}
	population_free(S, &P);
	return rc;
}

atm_status atm_opt_search_run(atm_opt_search *S, atm_opt_search_method m,
                              const atm_opt_search_params *p, atm_opt_search_outcome *r)
{
	struct solution cur = {0}, back = {0};
	atm_status rc;
	memset(r, 0, sizeof *r);
	r->candidate = -1;
	if (!S || !p)
		return atm_err(ATM_E_USAGE, "atm_opt_search_run needs a search and its parameters");
	if (m < 0 || m >= ATM_OPT_SEARCH_N_METHODS)
		return atm_err(ATM_E_USAGE, "search method %d does not exist; expected 0 to %d", (int)m,
		               ATM_OPT_SEARCH_N_METHODS - 1);
	if (p->evaluations < 0 || p->evaluations > 100000000)
		return atm_err(ATM_E_USAGE, "search evaluations %d is not valid; expected 1 to "
		               "100000000 (0: %d)", p->evaluations, SEARCH_EVALUATIONS);
	if (p->population != 0 && (p->population < 4 || p->population > 1000))
		return atm_err(ATM_E_USAGE, "search population %d is not valid; expected 4 to 1000 (0: "
		               "%d)", p->population, SEARCH_POPULATION);
	int budget = p->evaluations ? p->evaluations : SEARCH_EVALUATIONS;
	/* each method its own stream, so that one method's run does not depend on another's */
	uint64_t rs = p->seed ^ (0x5851f42d4c957f2dull * (uint64_t)(m + 1));
	if ((rc = opt_solution_new(S->m, &cur)) < 0 || (rc = opt_solution_new(S->m, &back)) < 0)
		goto done;
	double cost = INFINITY;
	if (m == ATM_OPT_SEARCH_GENETIC) {
		rc = genetic(S, p->population ? p->population : SEARCH_POPULATION, budget, &rs, &cur,
		             &cost, r);
	} else if ((rc = start_of(S, m, &cur, &back, &rs, &cost)) == ATM_OK) {
		r->start_s = cost;
		rc = climb(S, &cur, &back, &cost, budget, &rs, r);
	}
	if (rc == ATM_OK) {
		r->best_s = cost;
		rc = keep(S, &cur, cost, m, &r->candidate);
	}
done:
	opt_solution_free(&cur);
	opt_solution_free(&back);
	return rc;
}

/* ---------------------------------------------------------------- neighbours */

/* A neighbour found, before it is kept. */
struct found {
	struct solution s;
	double cost;
};

/* found_cmp -- cheapest first */
static int found_cmp(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	return x->cost < y->cost ? -1 : x->cost > y->cost;
}

atm_status atm_opt_search_neighbours(atm_opt_search *S, int from, int n, int tries, uint64_t seed,
                                     int *idx, int *n_out)
{
	struct found *f = NULL;
	struct solution cur = {0};
	struct touched tc;
	int n_f = 0;
	uint64_t rs = seed;
	atm_status rc;
	*n_out = 0;
	if (!S || from < 0 || from >= S->n_cand || n < 1 || tries < 1)
		return atm_err(ATM_E_USAGE, "neighbours of candidate %d, %d of them from %d tries: "
		               "expected a kept candidate and counts of at least 1", from, n, tries);
	if (!(f = calloc((size_t)tries, sizeof *f)) || (rc = opt_solution_new(S->m, &cur)) < 0) {
		free(f);
		return atm_err(ATM_E_NOMEM, "out of memory finding neighbours");
	}
	opt_solution_copy(S->m, &cur, &S->cand[from]);
	for (int e = 0; e < tries; e++) {
		if ((rc = interrupted(S)) < 0)
			goto done;
		double c;
		bool ok = propose(S, &cur, &rs, &tc) && within(S, &cur) &&
		          isfinite(c = opt_solution_cost(S->m, &cur)) && !kept_already(S, &cur);
		for (int j = 0; ok && j < n_f; j++)
			ok = !same(S, &f[j].s, &cur);
		if (ok) {
			if ((rc = opt_solution_new(S->m, &f[n_f].s)) < 0)
				goto done;
			opt_solution_copy(S->m, &f[n_f].s, &cur);
			f[n_f++].cost = c;
		}
		restore(S->m, &cur, &S->cand[from], &tc);
	}
	qsort(f, (size_t)n_f, sizeof *f, found_cmp);
	rc = ATM_OK;
	for (int j = 0; j < n_f && *n_out < n && rc == ATM_OK; j++)
		if (lays_out(S, &f[j].s))
			rc = keep(S, &f[j].s, f[j].cost, NEIGHBOUR, &idx[(*n_out)++]);
done:
	for (int j = 0; j < n_f; j++)
		opt_solution_free(&f[j].s);
	free(f);
	opt_solution_free(&cur);
	return rc;
}

/* ---------------------------------------------------------------- differences */

/* describe -- where tensor x starts in plan p and its moves, into buf */
static void describe(const atm_plan *p, int32_t x, char *buf, size_t len)
{
	size_t at = (size_t)snprintf(buf, len, "%s", atm_plan_location(p, x) == ATM_LOC_FAST ? "fast"
	                                                                                      : "slow");
	for (int32_t i = 0; i < atm_plan_n_moves(p) && at < len; i++) {
		const atm_move *mv = atm_plan_move(p, i);
		if (mv->tensor == x)
			at += (size_t)snprintf(buf + at, len - at, ", to %s after %d%s",
			                       mv->to == ATM_LOC_FAST ? "fast" : "slow", mv->after,
			                       mv->async ? " (overlapped)" : "");
	}
}

int atm_opt_search_diff(const atm_opt_search *S, int a, int b, const char *name_a,
                        const char *name_b, int max_lines, FILE *out)
{
	atm_plan *pa = NULL, *pb = NULL;
	int n = 0;
	if (!S || a < 0 || b < 0 || a >= S->n_cand || b >= S->n_cand ||
	    plan_of(S, &S->cand[a], &pa) < 0 || plan_of(S, &S->cand[b], &pb) < 0) {
		atm_plan_destroy(pa);
		return -1;
	}
	char da[512], db[512], sz[32];
	for (int32_t j = 0; j < S->n_movable; j++) {
		int32_t x = S->movable[j];
		const struct tmodel *t = &S->m->t[x];
		if (S->cand[a].pinned[x] == S->cand[b].pinned[x] &&
		    (S->cand[a].pinned[x] || !memcmp(S->cand[a].st + t->ph_off, S->cand[b].st + t->ph_off,
		                                     (size_t)t->n_gates)))
			continue;
		if (n++ >= max_lines || !out)
			continue;
		describe(pa, x, da, sizeof da);
		describe(pb, x, db, sizeof db);
		fprintf(out, "  %s (%s)\n    %-8s %s%s\n    %-8s %s%s\n", atm_graph_tensor(S->g, x)->name,
		        atm_format_bytes(t->bytes, sz, sizeof sz), name_a, da,
		        S->cand[a].pinned[x] ? " (pinned)" : "", name_b, db,
		        S->cand[b].pinned[x] ? " (pinned)" : "");
	}
	if (n > max_lines && out)
		fprintf(out, "  ... and %d more tensors\n", n - max_lines);
	atm_plan_destroy(pa);
	atm_plan_destroy(pb);
	return n;
}
