/* test_search.c -- the searching baseline: feasible, never worse than its start, nothing better than an exact ILP, deterministic, refusals */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_optimizer.h"
#include "optimizer/tiny_nets.h"

/* exact -- the ILP solved to optimality (the models are small), a limit only against a hang */
static atm_opt_options exact(void)
{
	atm_opt_options o;
	atm_opt_options_default(&o);
	o.mip_gap = 0;
	o.time_limit_s = 600;
	return o;
}

static int64_t ratio_limit(const atm_graph *g, double slow, double fast)
{
	int64_t b;
	assert_int_equal(atm_opt_limit_from_ratio(g, slow, fast, &b), ATM_OK);
	return b;
}

/* search_of -- a search of n at slow:fast with formulation f (the ILP's plan checked and
 * dropped) */
static atm_opt_search *search_of(const struct net *n, double slow, double fast,
                                 atm_opt_formulation f)
{
	atm_opt_options o = exact();
	atm_opt_search *s = NULL;
	atm_plan *ilp = NULL;
	atm_opt_report rep;
	if (atm_opt_search_new(&s, &ilp, n->g, n->prof, ratio_limit(n->g, slow, fast), f, &o, &rep) < 0)
		fail_msg("search of %s: %s", atm_graph_name(n->g), atm_errmsg());
	assert_non_null(ilp);
	/* candidate 0 is the ILP's own placement, priced as its plan is */
	assert_int_equal(atm_opt_search_n(s), 1);
	assert_true(fabs(atm_opt_search_predicted(s, 0) - atm_plan_info_get(ilp)->predicted_runtime_s) <=
	            1e-9 * (1 + atm_opt_search_predicted(s, 0)));
	atm_plan_destroy(ilp);
	return s;
}

/* checked -- candidate i's plan: core lays it out within the limit, the checker prices it as
 * the search did and finds its fast peak within the limit */
static void checked(const struct net *n, atm_opt_search *s, int i, int64_t limit)
{
	atm_plan *p = NULL;
	atm_schedule *sch = NULL;
	atm_opt_check_result chk;
	assert_int_equal(atm_opt_search_plan(s, i, &p), ATM_OK);
	if (atm_schedule_new(&sch, p) < 0)
		fail_msg("candidate %d does not lay out: %s", i, atm_errmsg());
	atm_schedule_destroy(sch);
	assert_int_equal(atm_opt_check(p, n->prof, NULL, &chk), ATM_OK);
	assert_true(chk.fast_peak_bytes <= limit);
	assert_int_equal(atm_plan_info_get(p)->fast_limit_bytes, limit);
	if (fabs(chk.predicted_s - atm_opt_search_predicted(s, i)) > 1e-9 * (1 + chk.predicted_s))
		fail_msg("candidate %d: the checker says %.12f s, the search %.12f s", i, chk.predicted_s,
		         atm_opt_search_predicted(s, i));
	atm_plan_destroy(p);
}

/* status_is -- candidate i's plan says how it was found */
static void status_is(atm_opt_search *s, int i, const char *status)
{
	atm_plan *p = NULL;
	assert_int_equal(atm_opt_search_plan(s, i, &p), ATM_OK);
	assert_string_equal(atm_plan_info_get(p)->solver_status, status);
	assert_string_equal(atm_plan_info_get(p)->formulation, "synchronous");
	atm_plan_destroy(p);
}

/* test_search_climb_from_slow -- from all slow, hill climbing ends no worse than its start,
 * and better here (the limit leaves room to place tensors fast), feasible and laid out */
static void test_search_climb_from_slow(void **state)
{
	struct net *ns = *state;
	for (int i = 0; i < 2; i++)
		for (int f = ATM_OPT_SYNCHRONOUS; f <= ATM_OPT_ASYNCHRONOUS; f++) {
			int64_t limit = ratio_limit(ns[i].g, 4, 1);
			atm_opt_search *s = search_of(&ns[i], 4, 1, (atm_opt_formulation)f);
			atm_opt_search_outcome r;
			atm_opt_search_params p = {.evaluations = 600, .seed = 7};
			assert_int_equal(atm_opt_search_run(s, ATM_OPT_SEARCH_HILL_SLOW, &p, &r), ATM_OK);
			assert_int_equal(r.evaluations, 600);
			assert_true(r.best_s <= r.start_s);
			assert_true(r.best_s < r.start_s);
			assert_true(r.improvements > 0);
			assert_int_equal(r.candidate, 1);
			assert_true(r.best_s == atm_opt_search_predicted(s, r.candidate));
			checked(&ns[i], s, r.candidate, limit);
			/* the random start too */
			assert_int_equal(atm_opt_search_run(s, ATM_OPT_SEARCH_HILL_RANDOM, &p, &r), ATM_OK);
			assert_true(r.best_s <= r.start_s);
			checked(&ns[i], s, r.candidate, limit);
			atm_opt_search_destroy(s);
		}
}

/* test_search_nothing_better_than_exact_ilp -- from the ILP's optimum (gap 0) neither hill
 * climbing nor the genetic search (whose population holds it) finds a plan the model prices
 * lower: the ILP's plan is optimal for the model */
static void test_search_nothing_better_than_exact_ilp(void **state)
{
	struct net *ns = *state;
	for (int i = 0; i < 2; i++)
		for (int f = ATM_OPT_STATIC; f <= ATM_OPT_ASYNCHRONOUS; f++) {
			atm_opt_search *s = search_of(&ns[i], 4, 1, (atm_opt_formulation)f);
			double ilp_s = atm_opt_search_predicted(s, 0);
			atm_opt_search_params p = {.evaluations = 1500, .seed = 3};
			atm_opt_search_outcome r;
			for (int m = 0; m < ATM_OPT_SEARCH_N_METHODS; m++) {
				assert_int_equal(atm_opt_search_run(s, (atm_opt_search_method)m, &p, &r), ATM_OK);
				if (r.best_s < ilp_s * (1 - 1e-9))
					fail_msg("%s %s: %s found %.12f s below the exact ILP's %.12f s",
					         atm_graph_name(ns[i].g), atm_opt_formulation_name(f),
					         atm_opt_search_method_name(m), r.best_s, ilp_s);
			}
			/* from the ILP it takes no step */
			assert_int_equal(atm_opt_search_run(s, ATM_OPT_SEARCH_HILL_ILP, &p, &r), ATM_OK);
			assert_true(r.best_s == r.start_s && r.start_s == ilp_s);
			assert_int_equal(r.improvements, 0);
			/* nor does any neighbour of it price lower */
			int idx[4], n = 0;
			assert_int_equal(atm_opt_search_neighbours(s, 0, 4, 200, 5, idx, &n), ATM_OK);
			for (int j = 0; j < n; j++)
				assert_true(atm_opt_search_predicted(s, idx[j]) >= ilp_s * (1 - 1e-9));
			atm_opt_search_destroy(s);
		}
}

/* test_search_genetic_within_limit -- the genetic search at a tight limit: what it keeps fits
 * the limit and lays out, no worse than its first population */
static void test_search_genetic_within_limit(void **state)
{
	struct net *ns = *state;
	for (int i = 0; i < 2; i++) {
		int64_t limit = ratio_limit(ns[i].g, 8, 1);
		atm_opt_search *s = search_of(&ns[i], 8, 1, ATM_OPT_SYNCHRONOUS);
		atm_opt_search_params p = {.evaluations = 800, .seed = 11, .population = 6};
		atm_opt_search_outcome r;
		assert_int_equal(atm_opt_search_run(s, ATM_OPT_SEARCH_GENETIC, &p, &r), ATM_OK);
		assert_int_equal(r.evaluations, 800);
		assert_true(r.best_s <= r.start_s);
		checked(&ns[i], s, r.candidate, limit);
		status_is(s, r.candidate, "search: genetic");
		status_is(s, 0, "search: the ILP's");
		/* neighbours of it too, each new, feasible and laid out, the best first */
		int idx[3], n = 0;
		assert_int_equal(atm_opt_search_neighbours(s, r.candidate, 3, 300, 9, idx, &n), ATM_OK);
		assert_true(n > 0);
		for (int j = 0; j < n; j++) {
			checked(&ns[i], s, idx[j], limit);
			status_is(s, idx[j], "search: a neighbour");
			if (j)
				assert_true(atm_opt_search_predicted(s, idx[j]) >=
				            atm_opt_search_predicted(s, idx[j - 1]));
		}
		atm_opt_search_destroy(s);
	}
}

/* plan_text -- candidate i's plan as its JSON text (the caller frees it) */
static char *plan_text(atm_opt_search *s, int i)
{
	atm_plan *p = NULL;
	char *text = NULL;
	assert_int_equal(atm_opt_search_plan(s, i, &p), ATM_OK);
	assert_int_equal(atm_plan_dump(p, &text), ATM_OK);
	atm_plan_destroy(p);
	return text;
}

/* test_search_deterministic -- one seed, the same search: every method ends on the same plan */
static void test_search_deterministic(void **state)
{
	struct net *ns = *state;
	atm_opt_search *a = search_of(&ns[1], 4, 1, ATM_OPT_ASYNCHRONOUS),
	               *b = search_of(&ns[1], 4, 1, ATM_OPT_ASYNCHRONOUS);
	atm_opt_search_params p = {.evaluations = 400, .seed = 42, .population = 5};
	for (int m = 0; m < ATM_OPT_SEARCH_N_METHODS; m++) {
		atm_opt_search_outcome ra, rb;
		assert_int_equal(atm_opt_search_run(a, (atm_opt_search_method)m, &p, &ra), ATM_OK);
		assert_int_equal(atm_opt_search_run(b, (atm_opt_search_method)m, &p, &rb), ATM_OK);
		assert_true(ra.best_s == rb.best_s && ra.start_s == rb.start_s);
		assert_int_equal(ra.improvements, rb.improvements);
		assert_int_equal(ra.refused, rb.refused);
		char *ta = plan_text(a, ra.candidate), *tb = plan_text(b, rb.candidate);
		assert_string_equal(ta, tb);
		free(ta);
		free(tb);
	}
	atm_opt_search_destroy(a);
	atm_opt_search_destroy(b);
}

/* test_search_refusals -- bad formulations, limits, options, methods and budgets are refused
 * with a message naming what is valid; a stop flag ends a run */
static void test_search_refusals(void **state)
{
	struct net *n = &((struct net *)*state)[0];
	atm_opt_options o = exact();
	atm_opt_search *s = NULL;
	atm_plan *ilp = NULL;
	int64_t limit = ratio_limit(n->g, 4, 1);
	assert_int_equal(atm_opt_search_new(&s, &ilp, n->g, n->prof, limit, ATM_OPT_NUMA, &o, NULL),
	                 ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "static, synchronous or asynchronous"));
	assert_null(s);
	assert_null(ilp);
	assert_int_equal(atm_opt_search_new(&s, &ilp, n->g, n->prof, 0, ATM_OPT_SYNCHRONOUS, &o, NULL),
	                 ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "needs a fast limit"));
	o.recompute = true;
	assert_int_equal(atm_opt_search_new(&s, &ilp, n->g, n->prof, limit, ATM_OPT_SYNCHRONOUS, &o,
	                                    NULL), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "recomputation"));
	assert_null(s);

	atm_opt_search_method m;
	assert_int_equal(atm_opt_search_method_from_name("annealing", &m), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "'annealing'"));
	assert_non_null(strstr(atm_errmsg(), "hill-ilp, hill-slow, hill-random, genetic"));
	assert_int_equal(atm_opt_search_method_from_name("genetic", &m), ATM_OK);
	assert_int_equal(m, ATM_OPT_SEARCH_GENETIC);
	assert_string_equal(atm_opt_search_method_name(ATM_OPT_SEARCH_HILL_RANDOM), "hill-random");

	s = search_of(n, 4, 1, ATM_OPT_SYNCHRONOUS);
	atm_opt_search_outcome r;
	atm_opt_search_params p = {.evaluations = -1};
	assert_int_equal(atm_opt_search_run(s, ATM_OPT_SEARCH_HILL_SLOW, &p, &r), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "evaluations -1 is not valid"));
	p = (atm_opt_search_params){.population = 2};
	assert_int_equal(atm_opt_search_run(s, ATM_OPT_SEARCH_GENETIC, &p, &r), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "population 2 is not valid; expected 4 to 1000"));
	p = (atm_opt_search_params){0};
	assert_int_equal(atm_opt_search_run(s, ATM_OPT_SEARCH_N_METHODS, &p, &r), ATM_E_USAGE);
	atm_plan *pl = NULL;
	assert_int_equal(atm_opt_search_plan(s, 5, &pl), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "candidate 5 does not exist"));
	assert_null(pl);
	atm_opt_search_destroy(s);

	/* the stop flag ends a run at once, keeping nothing */
	volatile sig_atomic_t stop = 1;
	o = exact();
	assert_int_equal(atm_opt_search_new(&s, &ilp, n->g, n->prof, limit, ATM_OPT_SYNCHRONOUS, &o,
	                                    NULL), ATM_OK);
	atm_plan_destroy(ilp);
	atm_opt_search_destroy(s);
	o.stop = &stop;
	stop = 0;
	assert_int_equal(atm_opt_search_new(&s, &ilp, n->g, n->prof, limit, ATM_OPT_SYNCHRONOUS, &o,
	                                    NULL), ATM_OK);
	stop = 1;
	assert_int_equal(atm_opt_search_run(s, ATM_OPT_SEARCH_HILL_SLOW, &p, &r), ATM_E_INTERRUPTED);
	assert_int_equal(atm_opt_search_n(s), 1);
	atm_plan_destroy(ilp);
	atm_opt_search_destroy(s);
	atm_opt_search_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_search_climb_from_slow),
		cmocka_unit_test(test_search_nothing_better_than_exact_ilp),
		cmocka_unit_test(test_search_genetic_within_limit),
		cmocka_unit_test(test_search_deterministic),
		cmocka_unit_test(test_search_refusals),
	};
	return cmocka_run_group_tests(tests, tiny_nets_setup, tiny_nets_teardown);
}
