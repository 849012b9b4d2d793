/* test_starts.c -- plans monotone in the budget: start plans from smaller limits, and sweeps */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_optimizer.h"
#include "atm_zoo.h"
#include "../optimizer/opt_internal.h"
#include "optimizer/synth.h"
#include "optimizer/tight_graph.h"

/* A fine sweep, smallest fast memory first: slow:fast ratios from 40:1 to 1:1. */
static const double SWEEP[][2] = {{40, 1}, {30, 1}, {20, 1}, {16, 1}, {12, 1}, {10, 1}, {8, 1},
                                  {6, 1},  {5, 1},  {4, 1},  {3, 1},  {2, 1},  {3, 2}, {1, 1}};
#define N_SWEEP ((int)(sizeof SWEEP / sizeof *SWEEP))

/* The network every test plans, and its synthetic profile. */
struct net {
	atm_graph *g;
	atm_profile *prof;
	int64_t limit[N_SWEEP];
};

/* net_setup -- tiny_mlp at batch 16 with the synthetic profile whose slow groups interact (a
 * kernel with two slow groups costs 1.3 times their sum), and the sweep's limits */
static int net_setup(void **state)
{
	struct net *n = calloc(1, sizeof *n);
	atm_zoo_opts zo = {.batch = 16};
	if (!n || atm_zoo_build(&n->g, "tiny_mlp", &zo) < 0 || synth_profile_mixed(n->g, 1.3, &n->prof) < 0)
		return -1;
	for (int i = 0; i < N_SWEEP; i++)
		if (atm_opt_limit_from_ratio(n->g, SWEEP[i][0], SWEEP[i][1], &n->limit[i]) < 0)
			return -1;
	*state = n;
	return 0;
}

static int net_teardown(void **state)
{
	struct net *n = *state;
	atm_profile_destroy(n->prof);
	atm_graph_destroy(n->g);
	free(n);
	return 0;
}

/* loose -- GLPK stopping at a 30% gap: the first plan within it stands, which at a larger limit
 * can be slower than the one a smaller limit stopped at (planned alone, every formulation's
 * sweep rises somewhere: static at 6:1, synchronous at 12:1, 6:1 and 2:1) */
static atm_opt_options loose(void)
{
	atm_opt_options o;
	atm_opt_options_default(&o);
	o.solver = ATM_OPT_SOLVER_GLPK;
	o.mip_gap = 0.3;
	o.time_limit_s = 60;
	return o;
}

static double predicted(const atm_plan *p)
{
	return atm_plan_info_get(p)->predicted_runtime_s;
}

/* alone -- every limit of the sweep planned on its own with options o, no starts, into pred */
static void alone(const struct net *n, atm_opt_formulation f, const atm_opt_options *o,
                  double *pred)
{
	for (int i = 0; i < N_SWEEP; i++) {
		atm_plan *p = NULL;
		if (atm_opt_plan(&p, n->g, n->prof, n->limit[i], f, o, NULL) < 0)
			fail_msg("%g:%g %s: %s", SWEEP[i][0], SWEEP[i][1], atm_opt_formulation_name(f),
			         atm_errmsg());
		pred[i] = predicted(p);
		atm_plan_destroy(p);
	}
}

/* slower_pair -- a pair i < j of the sweep where the larger limit j's plan, made alone, is
 * predicted slower than the smaller limit i's: false when there is none */
static bool slower_pair(const double *pred, int *i, int *j)
{
	for (*j = 1; *j < N_SWEEP; (*j)++)
		for (*i = 0; *i < *j; (*i)++)
			if (pred[*j] > pred[*i])
				return true;
	return false;
}

/* sweep_monotone -- f planned over the sweep with atm_opt_plan_sweep, the limits given largest
 * first: every limit has its plan, labelled with its limit, and the predicted steps never rise
 * with the limit; planned alone, they do (else the test shows nothing) */
static void sweep_monotone(void **state, atm_opt_formulation f)
{
	const struct net *n = *state;
	atm_opt_options o = loose();
	atm_plan *plans[N_SWEEP];
	atm_opt_report reps[N_SWEEP];
	int64_t limits[N_SWEEP];
	double pred[N_SWEEP];
	int i, j;
	alone(n, f, &o, pred);
	if (!slower_pair(pred, &i, &j))
		fail_msg("%s: planned alone the sweep is monotone already: it tests nothing",
		         atm_opt_formulation_name(f));
	for (int k = 0; k < N_SWEEP; k++)
		limits[k] = n->limit[N_SWEEP - 1 - k];
	if (atm_opt_plan_sweep(plans, n->g, n->prof, limits, N_SWEEP, f, &o, reps) < 0)
		fail_msg("%s: %s", atm_opt_formulation_name(f), atm_errmsg());
	for (int k = 0; k < N_SWEEP; k++) {
		assert_non_null(plans[k]);
		assert_int_equal(atm_plan_info_get(plans[k])->fast_limit_bytes, limits[k]);
		/* largest first: each limit's plan no slower than every smaller limit's */
		for (int m = k + 1; m < N_SWEEP; m++)
			if (predicted(plans[k]) > predicted(plans[m]))
				fail_msg("%s: %lld bytes: %.9f s, slower than %.9f s at %lld bytes",
				         atm_opt_formulation_name(f), (long long)limits[k],
				         predicted(plans[k]), predicted(plans[m]), (long long)limits[m]);
	}
	for (int k = 0; k < N_SWEEP; k++)
		atm_plan_destroy(plans[k]);
}

/* test_starts_sweep_monotone_static -- the static formulation over the sweep */
static void test_starts_sweep_monotone_static(void **state)
{
	sweep_monotone(state, ATM_OPT_STATIC);
}

/* test_starts_sweep_monotone_synchronous -- the synchronous formulation over the sweep */
static void test_starts_sweep_monotone_synchronous(void **state)
{
	sweep_monotone(state, ATM_OPT_SYNCHRONOUS);
}

/* test_starts_sweep_monotone_asynchronous -- the asynchronous formulation over the sweep */
static void test_starts_sweep_monotone_asynchronous(void **state)
{
	sweep_monotone(state, ATM_OPT_ASYNCHRONOUS);
}

/* plan_with -- f's plan at limit with options o and the given starts */
static atm_status plan_with(const struct net *n, atm_opt_options o, int64_t limit,
                            atm_opt_formulation f, const atm_plan *const *starts, int n_starts,
                            atm_plan **p, atm_opt_report *rep)
{
	o.starts = starts;
	o.n_starts = n_starts;
	return atm_opt_plan(p, n->g, n->prof, limit, f, &o, rep);
}

/* plan_at -- f's plan at limit with the loose options and the given starts */
static atm_status plan_at(const struct net *n, int64_t limit, atm_opt_formulation f,
                          const atm_plan *const *starts, int n_starts, atm_plan **p,
                          atm_opt_report *rep)
{
	return plan_with(n, loose(), limit, f, starts, n_starts, p, rep);
}

/* unseeded -- the loose options without the solver's start (no_seed): neither the heuristic's
 * plan nor a start plan is its incumbent, so the plan found is the solver's alone */
static atm_opt_options unseeded(void)
{
	atm_opt_options o = loose();
	o.no_seed = true;
	return o;
}

/* test_starts_incumbent_taken -- where the plan found at a larger limit is slower than a smaller
 * limit's (the solver unseeded, so that the start is not its incumbent), the smaller limit's
 * plan is returned, re-labelled with the larger limit, its status and the report saying where
 * it came from and why */
static void test_starts_incumbent_taken(void **state)
{
	const struct net *n = *state;
	const atm_opt_formulation f = ATM_OPT_SYNCHRONOUS;
	const atm_opt_options o = unseeded();
	double pred[N_SWEEP];
	int i, j;
	alone(n, f, &o, pred);
	if (!slower_pair(pred, &i, &j))
		fail_msg("unseeded, the synchronous sweep is monotone already: it tests nothing");
	atm_plan *small = NULL, *big = NULL;
	atm_opt_report rep;
	assert_int_equal(plan_with(n, o, n->limit[i], f, NULL, 0, &small, NULL), ATM_OK);
	const atm_plan *starts[] = {small};
	assert_int_equal(plan_with(n, o, n->limit[j], f, starts, 1, &big, &rep), ATM_OK);
	assert_int_equal(rep.start_used, 0);
	assert_int_equal(rep.n_starts_fit, 1);
	assert_true(rep.found_s > rep.start_s);
	assert_true(predicted(big) == predicted(small));
	assert_true(rep.start_s == predicted(small));
	const atm_plan_info *info = atm_plan_info_get(big);
	assert_int_equal(info->fast_limit_bytes, n->limit[j]);
	assert_string_equal(info->formulation, "synchronous");
	assert_string_equal(info->solver_status, ATM_OPT_STATUS_START);
	/* the solver's figures are this limit's work, not the start's */
	assert_int_equal(info->n_rounds, rep.n_rounds);
	assert_true(info->round_solve_s[0] == rep.rounds[0].solve_s);
	assert_string_equal(info->solver, rep.solver);
	assert_non_null(strstr(rep.start_note, "start 0 (planned for "));
	assert_non_null(strstr(rep.start_note, "taken: predicted"));
	assert_non_null(strstr(rep.start_note, "faster than the"));
	/* the same moves and places as the start's */
	assert_int_equal(atm_plan_n_moves(big), atm_plan_n_moves(small));
	for (int32_t t = 0; t < atm_graph_n_tensors(n->g); t++)
		assert_int_equal(atm_plan_location(big, t), atm_plan_location(small, t));
	atm_opt_check_result chk;
	assert_int_equal(atm_opt_check(big, n->prof, NULL, &chk), ATM_OK);
	assert_true(chk.predicted_s == predicted(big));
	atm_plan_destroy(big);
	atm_plan_destroy(small);
}

/* test_starts_seed -- a start plan that is a placement of the larger limit's model is the solver's
 * incumbent: where the smaller limit's plan was faster than the larger limit's found alone, the
 * plan found with it as a start is no slower than it, found by the search from it (the plan
 * found, not the start put back) */
static void test_starts_seed(void **state)
{
	const struct net *n = *state;
	const atm_opt_options o = loose();
	for (int f = ATM_OPT_STATIC; f <= ATM_OPT_ASYNCHRONOUS; f++) {
		double pred[N_SWEEP];
		int i, j;
		alone(n, (atm_opt_formulation)f, &o, pred);
		assert_true(slower_pair(pred, &i, &j));
		atm_plan *small = NULL, *big = NULL;
		atm_opt_report rep;
		assert_int_equal(plan_at(n, n->limit[i], f, NULL, 0, &small, NULL), ATM_OK);
		const atm_plan *starts[] = {small};
		assert_int_equal(plan_at(n, n->limit[j], f, starts, 1, &big, &rep), ATM_OK);
		if (!(rep.found_s <= rep.start_s * (1 + 1e-12)))
			fail_msg("%s: %.9f s found from the start, slower than the start's %.9f s",
			         atm_opt_formulation_name(f), rep.found_s, rep.start_s);
		assert_int_equal(rep.start_used, -1);
		assert_true(predicted(big) < pred[j]);
		assert_string_not_equal(atm_plan_info_get(big)->solver_status, ATM_OPT_STATUS_START);
		atm_plan_destroy(big);
		atm_plan_destroy(small);
	}
}

/* as_placement -- every plan of f made for each limit of the sweep, and with recomputation on
 * tiny_cnn, read back as a placement of the model at the sweep's largest limit: exactly (it
 * writes the plan back) and at the price the checker gives it */
static void as_placement(const atm_graph *g, const atm_profile *prof, const int64_t *limits,
                         int n, bool recompute)
{
	for (int f = ATM_OPT_STATIC; f <= ATM_OPT_ASYNCHRONOUS; f++) {
		atm_opt_options o = loose();
		o.recompute = recompute;
		struct model *m = NULL;
		struct solution s = {0};
		assert_int_equal(opt_model_new(&m, g, prof, (atm_opt_formulation)f, &o, limits[n - 1],
		                               NULL), ATM_OK);
		assert_int_equal(opt_solution_new(m, &s), ATM_OK);
		for (int i = 0; i < n; i++) {
			atm_plan *p = NULL;
			bool ok = false;
			assert_int_equal(atm_opt_plan(&p, g, prof, limits[i], f, &o, NULL), ATM_OK);
			assert_int_equal(opt_solution_from_plan(m, p, &s, &ok), ATM_OK);
			if (!ok)
				fail_msg("%s%s at %lld bytes: the plan is no placement of the model at %lld",
				         atm_opt_formulation_name(f), recompute ? "+recompute" : "",
				         (long long)limits[i], (long long)limits[n - 1]);
			double c = opt_solution_cost(m, &s);
			if (fabs(c - predicted(p)) > 1e-9 * predicted(p))
				fail_msg("%s at %lld bytes: the model prices it %.12f s, the checker %.12f s",
				         atm_opt_formulation_name(f), (long long)limits[i], c, predicted(p));
			atm_plan_destroy(p);
		}
		opt_solution_free(&s);
		opt_model_destroy(m);
	}
}

/* test_starts_plan_as_placement -- the plans of tiny_mlp's sweep, and of tiny_cnn's with
 * recomputation at 8:1, 4:1 and 2:1, are placements of the largest limit's model */
static void test_starts_plan_as_placement(void **state)
{
	const struct net *n = *state;
	as_placement(n->g, n->prof, n->limit, N_SWEEP, false);
	atm_graph *g = NULL;
	atm_profile *prof = NULL;
	atm_zoo_opts zo = {.batch = 4};
	int64_t limits[3];
	const double ratios[][2] = {{8, 1}, {4, 1}, {2, 1}};
	assert_int_equal(atm_zoo_build(&g, "tiny_cnn", &zo), ATM_OK);
	assert_int_equal(synth_profile(g, &prof), ATM_OK);
	for (int i = 0; i < 3; i++)
		assert_int_equal(atm_opt_limit_from_ratio(g, ratios[i][0], ratios[i][1], &limits[i]),
		                 ATM_OK);
	as_placement(g, prof, limits, 3, true);
	atm_profile_destroy(prof);
	atm_graph_destroy(g);
}

/* test_starts_stand_where_none_found -- where no plan is found (one defragmentation round, whose
 * plan fits no layout), a start that fits stands: the plan with 16 rounds, given as the start of
 * the plan with one, is that plan's, its report saying so */
static void test_starts_stand_where_none_found(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	atm_profile *prof = NULL;
	atm_plan *full = NULL, *p = NULL;
	atm_opt_report rep;
	atm_opt_options o;
	tight_setup(&g, &prof, &o);
	assert_int_equal(atm_opt_plan(&full, g, prof, 512, ATM_OPT_SYNCHRONOUS, &o, NULL), ATM_OK);
	o.max_rounds = 1;
	assert_int_equal(atm_opt_plan(&p, g, prof, 512, ATM_OPT_SYNCHRONOUS, &o, NULL),
	                 ATM_E_INFEASIBLE);
	const atm_plan *starts[] = {full};
	o.starts = starts;
	o.n_starts = 1;
	assert_int_equal(atm_opt_plan(&p, g, prof, 512, ATM_OPT_SYNCHRONOUS, &o, &rep), ATM_OK);
	assert_int_equal(rep.start_used, 0);
	assert_true(rep.found_s < 0);
	assert_true(predicted(p) == predicted(full));
	assert_string_equal(atm_plan_info_get(p)->solver_status, ATM_OPT_STATUS_START);
	assert_non_null(strstr(rep.start_note, "start 0 (planned for 512 B) taken: no plan was found "
	                                       "at 512 B (the plan does not fit the fast arena"));
	assert_string_equal(atm_errmsg(), "");
	atm_plan_destroy(p);
	atm_plan_destroy(full);
	atm_profile_destroy(prof);
	atm_graph_destroy(g);
}

/* test_starts_found_kept -- a start slower than the plan found (the least limit's, everything
 * slow, against 1:1's) fits and is passed over: the plan found is returned as found */
static void test_starts_found_kept(void **state)
{
	const struct net *n = *state;
	const atm_opt_formulation f = ATM_OPT_STATIC;
	atm_plan *least = NULL, *p = NULL, *alone_p = NULL;
	atm_opt_report rep;
	int64_t lo;
	assert_int_equal(atm_opt_limit_from_ratio(n->g, 1, 0, &lo), ATM_OK);
	assert_int_equal(plan_at(n, lo, f, NULL, 0, &least, NULL), ATM_OK);
	const atm_plan *starts[] = {least};
	assert_int_equal(plan_at(n, n->limit[N_SWEEP - 1], f, starts, 1, &p, &rep), ATM_OK);
	assert_int_equal(plan_at(n, n->limit[N_SWEEP - 1], f, NULL, 0, &alone_p, NULL), ATM_OK);
	assert_int_equal(rep.start_used, -1);
	assert_int_equal(rep.n_starts_fit, 1);
	assert_true(rep.start_s > rep.found_s);
	assert_true(predicted(p) == rep.found_s);
	assert_true(predicted(p) == predicted(alone_p));
	assert_true(predicted(p) < predicted(least));
	assert_string_not_equal(atm_plan_info_get(p)->solver_status, ATM_OPT_STATUS_START);
	assert_string_equal(rep.start_note, "");
	atm_plan_destroy(alone_p);
	atm_plan_destroy(p);
	atm_plan_destroy(least);
}

/* test_starts_not_fitting_ignored -- a start that does not fit the new limit (1:1's plan at
 * 16:1) is passed over, the report saying why; the plan found is returned */
static void test_starts_not_fitting_ignored(void **state)
{
	const struct net *n = *state;
	const atm_opt_formulation f = ATM_OPT_SYNCHRONOUS;
	atm_plan *big = NULL, *p = NULL;
	atm_opt_report rep;
	assert_int_equal(plan_at(n, n->limit[N_SWEEP - 1], f, NULL, 0, &big, NULL), ATM_OK);
	const atm_plan *starts[] = {big};
	assert_int_equal(plan_at(n, n->limit[3], f, starts, 1, &p, &rep), ATM_OK);
	assert_int_equal(rep.start_used, -1);
	assert_int_equal(rep.n_starts_fit, 0);
	assert_true(rep.start_s < 0);
	assert_non_null(strstr(rep.start_note, "start 0 ignored: the start plan (planned for a "
	                                       "limit of "));
	assert_non_null(strstr(rep.start_note, ") does not fit the limit of "));
	assert_int_equal(atm_plan_info_get(p)->fast_limit_bytes, n->limit[3]);
	assert_string_not_equal(atm_plan_info_get(p)->solver_status, ATM_OPT_STATUS_START);
	/* checked alone: ATM_E_INFEASIBLE with the checker's reason */
	double s = 0;
	assert_int_equal(atm_opt_start_check(big, n->g, n->prof, n->limit[3], f, NULL, NULL, &s),
	                 ATM_E_INFEASIBLE);
	assert_non_null(strstr(atm_errmsg(), "plan check: "));
	atm_plan_destroy(p);
	atm_plan_destroy(big);
}

/* test_starts_other_formulation_refused -- a static plan as a synchronous plan's start, or a
 * plan of another graph, fails the plan with ATM_E_INPUT naming them */
static void test_starts_other_formulation_refused(void **state)
{
	const struct net *n = *state;
	atm_plan *st = NULL, *p = NULL, *other = NULL;
	atm_graph *g2 = NULL;
	atm_zoo_opts zo = {.batch = 16};
	assert_int_equal(plan_at(n, n->limit[3], ATM_OPT_STATIC, NULL, 0, &st, NULL), ATM_OK);
	const atm_plan *starts[] = {st};
	assert_int_equal(plan_at(n, n->limit[5], ATM_OPT_SYNCHRONOUS, starts, 1, &p, NULL),
	                 ATM_E_INPUT);
	assert_null(p);
	assert_non_null(strstr(atm_errmsg(), "start 0: the start plan is a static plan; this plan "
	                                     "is synchronous, and a start must be a plan of the same "
	                                     "formulation"));
	assert_int_equal(atm_zoo_build(&g2, "tiny_mlp", &zo), ATM_OK);
	assert_int_equal(atm_plan_uniform(&other, g2, ATM_LOC_SLOW), ATM_OK);
	starts[0] = other;
	assert_int_equal(plan_at(n, n->limit[5], ATM_OPT_ALL_SLOW, starts, 1, &p, NULL), ATM_E_INPUT);
	assert_null(p);
	assert_non_null(strstr(atm_errmsg(), "start 0: the start plan is a plan of 'tiny_mlp', not "
	                                     "of the graph being planned ('tiny_mlp')"));
	/* a negative count of starts is a usage error */
	atm_opt_options o = loose();
	o.n_starts = -1;
	assert_int_equal(atm_opt_plan(&p, n->g, n->prof, n->limit[5], ATM_OPT_STATIC, &o, NULL),
	                 ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "-1 start plans is not valid"));
	atm_plan_destroy(other);
	atm_graph_destroy(g2);
	atm_plan_destroy(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_starts_sweep_monotone_static),
		cmocka_unit_test(test_starts_sweep_monotone_synchronous),
		cmocka_unit_test(test_starts_sweep_monotone_asynchronous),
		cmocka_unit_test(test_starts_incumbent_taken),
		cmocka_unit_test(test_starts_seed),
		cmocka_unit_test(test_starts_plan_as_placement),
		cmocka_unit_test(test_starts_stand_where_none_found),
		cmocka_unit_test(test_starts_found_kept),
		cmocka_unit_test(test_starts_not_fitting_ignored),
		cmocka_unit_test(test_starts_other_formulation_refused),
	};
	return cmocka_run_group_tests(tests, net_setup, net_teardown);
}
