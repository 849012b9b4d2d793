/* test_recompute.c -- recomputation joined with placement: chosen where it is clearly right, never
 * slower than placement alone, priced alike by the model and the checker, refused by baselines */
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
#include "optimizer/per_solver.h"
#include "optimizer/synth.h"

#define MIB (1 << 20)

/* the solver every test of the group runs with: the suite runs once per solver built in */
static atm_opt_solver solver;

/* options -- exact solves with the group's solver: the models are small enough to solve to
 * optimality in well under a second, so the time limit only guards against a hang, and a test
 * that compares optima asserts that each was proved (round_optimal), whatever the machine's
 * speed */
static atm_opt_options options(bool recompute)
{
	atm_opt_options o;
	atm_opt_options_default(&o);
	o.solver = solver;
	o.mip_gap = 0;
	o.time_limit_s = 600;
	o.recompute = recompute;
	return o;
}

/* cheap_between -- y = relu(x) is cheap; a chain of three relus after its first use holds
 * two tensors at a time, and y's second use comes after them: under a limit of three tensors
 * (x, persistent, among them) y cannot stay fast through the chain. Keeping x slow costs a
 * slow read (+210 us), moving y out and back two copies (786 us), making y again one relu
 * (107 us): recomputing is clearly right. All tensors 1 MiB. */
static atm_graph *cheap_between(void)
{
	atm_graph *g = NULL;
	int64_t d[] = {256, 1024};
	int32_t x, y, a, b, c, e, id;
	assert_int_equal(atm_graph_new(&g, "cheap_between"), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "x", ATM_F32, 2, d, ATM_KIND_INPUT, ATM_LOC_ANY, &x),
	                 ATM_OK);
	const char *names[] = {"y", "a", "b", "c", "e"};
	int32_t *ids[] = {&y, &a, &b, &c, &e};
	for (int i = 0; i < 5; i++)
		assert_int_equal(atm_graph_add_tensor(g, names[i], ATM_F32, 2, d, ATM_KIND_ACTIVATION,
		                                      ATM_LOC_ANY, ids[i]), ATM_OK);
	assert_int_equal(atm_graph_add_node(g, "make_y", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &y, &id), ATM_OK);
	assert_int_equal(atm_graph_add_node(g, "use_y", ATM_OP_RELU_FWD, NULL, 1, &y, 1, &a, &id), ATM_OK);
	assert_int_equal(atm_graph_add_node(g, "r1", ATM_OP_RELU_FWD, NULL, 1, &a, 1, &b, &id), ATM_OK);
	assert_int_equal(atm_graph_add_node(g, "r2", ATM_OP_RELU_FWD, NULL, 1, &b, 1, &c, &id), ATM_OK);
	assert_int_equal(atm_graph_add_node(g, "use_y_again", ATM_OP_RELU_FWD, NULL, 1, &y, 1, &e, &id),
	                 ATM_OK);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	return g;
}

/* chain_between -- cheap_between with y two kernels from x: m = relu(x) is dead once y is made,
 * and x may live in fast memory only. Under a limit of three tensors (x among them) y cannot
 * stay fast through r1 and r2; made again before its second use it needs m made again first,
 * a chain of two relus (about 214 us) against two copies (786 us) or slow reads */
static atm_graph *chain_between(void)
{
	atm_graph *g = NULL;
	int64_t d[] = {256, 1024};
	int32_t x, id, t[7];
	assert_int_equal(atm_graph_new(&g, "chain_between"), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "x", ATM_F32, 2, d, ATM_KIND_INPUT, ATM_LOC_FAST, &x),
	                 ATM_OK);
	const char *names[] = {"m", "y", "a", "b", "c", "e"};
	for (int i = 0; i < 6; i++)
		assert_int_equal(atm_graph_add_tensor(g, names[i], ATM_F32, 2, d, ATM_KIND_ACTIVATION,
		                                      ATM_LOC_ANY, &t[i]), ATM_OK);
	/* make_m: x -> m, make_y: m -> y, use_y: y -> a, r1: a -> b, r2: b -> c, use_y_again: y -> e */
	const int32_t from[] = {x, t[0], t[1], t[2], t[3], t[1]}, to[] = {t[0], t[1], t[2], t[3], t[4],
	                                                                    t[5]};
	const char *nodes[] = {"make_m", "make_y", "use_y", "r1", "r2", "use_y_again"};
	for (int i = 0; i < 6; i++)
		assert_int_equal(atm_graph_add_node(g, nodes[i], ATM_OP_RELU_FWD, NULL, 1, &from[i], 1,
		                                    &to[i], &id), ATM_OK);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	return g;
}

/* checked -- a plan of f, scheduled and checked: the checker's price is the model's (for the
 * asynchronous formulation at most the model's: a copy started before a recomputation runs
 * beside it too, which the model does not count) */
static atm_plan *checked(const atm_graph *g, const atm_profile *prof, int64_t limit,
                         atm_opt_formulation f, const atm_opt_options *o, atm_opt_check_result *chk,
                         atm_opt_report *out)
{
	atm_plan *p = NULL;
	atm_opt_report local, *rep = out ? out : &local;
	if (atm_opt_plan(&p, g, prof, limit, f, o, rep) < 0)
		fail_msg("%s%s: %s", atm_opt_formulation_name(f), o->recompute ? " --recompute" : "",
		         atm_errmsg());
	if (atm_opt_check(p, prof, o, chk) < 0)
		fail_msg("check: %s", atm_errmsg());
	double model = rep->objective_s, tol = 1e-9 * (1 + chk->predicted_s);
	bool ok = f == ATM_OPT_ASYNCHRONOUS ? chk->predicted_s <= model + tol
	                                    : fabs(chk->predicted_s - model) <= tol;
	if (!ok)
		fail_msg("%s: the checker says %.12f s, the model %.12f s", atm_opt_formulation_name(f),
		         chk->predicted_s, model);
	assert_int_equal(chk->n_recomputes, atm_plan_n_recomputes(p));
	return p;
}

/* An expected recomputation: its tensor's name, drop_after and before. */
struct want {
	const char *tensor;
	int32_t drop_after, before;
};

/* expect_recomputed -- every ILP formulation plans g (taken) under a limit of three tensors
 * with the recomputations of want, in order, counted and priced by the checker, and is faster
 * for them than placement alone by 50 us at least */
static void expect_recomputed(atm_graph *g, const struct want *want, int n)
{
	atm_profile *prof = NULL;
	assert_int_equal(synth_profile(g, &prof), ATM_OK);
	int64_t limit = 3 * MIB + 4096;
	for (int f = ATM_OPT_STATIC; f <= ATM_OPT_ASYNCHRONOUS; f++) {
		atm_opt_options with = options(true), without = options(false);
		atm_opt_check_result a, b;
		atm_plan *p = checked(g, prof, limit, (atm_opt_formulation)f, &with, &a, NULL);
		atm_plan *q = checked(g, prof, limit, (atm_opt_formulation)f, &without, &b, NULL);
		if (atm_plan_n_recomputes(p) != n)
			fail_msg("%s %s: %d recomputations, expected %d", atm_graph_name(g),
			         atm_opt_formulation_name(f), atm_plan_n_recomputes(p), n);
		for (int i = 0; i < n; i++) {
			const atm_recompute *r = atm_plan_recompute(p, i);
			assert_string_equal(atm_graph_tensor(g, r->tensor)->name, want[i].tensor);
			assert_int_equal(r->drop_after, want[i].drop_after);
			assert_int_equal(r->before, want[i].before);
		}
		assert_int_equal(a.n_recomputes, n);
		assert_true(a.recompute_s > 0);
		assert_int_equal(atm_plan_n_recomputes(q), 0);
		if (!(a.predicted_s < b.predicted_s - 50e-6))
			fail_msg("%s %s: %.6f s with recomputation, %.6f s without", atm_graph_name(g),
			         atm_opt_formulation_name(f), a.predicted_s, b.predicted_s);
		atm_plan_destroy(p);
		atm_plan_destroy(q);
	}
	atm_profile_destroy(prof);
	atm_graph_destroy(g);
}

/* test_recompute_cheap_op_is_recomputed -- every ILP formulation drops y after its first use
 * and makes it again before its second: one relu again (about 107 us) against the best
 * placement's slow read (210 us more) */
static void test_recompute_cheap_op_is_recomputed(void **state)
{
	(void)state;
	expect_recomputed(cheap_between(), (const struct want[]){{"y", 1, 4}}, 1);
}

/* test_recompute_chain -- every ILP formulation makes y again through a link for m (made
 * first, from x, before the same node; m's drop_after is its last use) */
static void test_recompute_chain(void **state)
{
	(void)state;
	expect_recomputed(chain_between(), (const struct want[]){{"m", 1, 5}, {"y", 2, 5}}, 2);
}

/* heuristic_cost -- the heuristic's plan of cheap_between, synchronous, with or without
 * recomputation: its price, and how many recomputations it chose */
static double heuristic_cost(const atm_graph *g, const atm_profile *prof, bool recompute,
                             int *n_rc)
{
	atm_opt_options o = options(recompute);
	struct model *m = NULL;
	struct solution s = {0};
	assert_int_equal(opt_model_new(&m, g, prof, ATM_OPT_SYNCHRONOUS, &o, 3 * MIB + 4096, NULL),
	                 ATM_OK);
	assert_int_equal(opt_solution_new(m, &s), ATM_OK);
	assert_int_equal(opt_heuristic(m, &s, 5, false), ATM_OK);
	double cost = opt_solution_cost(m, &s);
	*n_rc = 0;
	for (int32_t i = 0; i < m->n_rc; i++)
		*n_rc += s.rc[i];
	opt_solution_free(&s);
	opt_model_destroy(m);
	return cost;
}

/* test_recompute_heuristic -- the heuristic alone (what a time-limited solve returns) finds
 * the recomputations too: on cheap_between, y held fast across the relus is dropped, and x, no
 * longer crowded out, stays fast; on chain_between, y is made again through its link */
static void test_recompute_heuristic(void **state)
{
	(void)state;
	atm_graph *(*make[])(void) = {cheap_between, chain_between};
	for (int i = 0; i < 2; i++) {
		atm_graph *g = make[i]();
		atm_profile *prof = NULL;
		assert_int_equal(synth_profile(g, &prof), ATM_OK);
		int with_n, without_n;
		double with = heuristic_cost(g, prof, true, &with_n);
		double without = heuristic_cost(g, prof, false, &without_n);
		assert_int_equal(without_n, 0);
		if (with_n != 1 || !(with < without - 50e-6))
			fail_msg("%s: the heuristic with recomputation: %.6f s, %d recomputed; without "
			         "%.6f s", atm_graph_name(g), with, with_n, without);
		atm_profile_destroy(prof);
		atm_graph_destroy(g);
	}
}

/* round_optimal -- the first round of rep was solved to a proved optimum */
static void round_optimal(const atm_opt_report *rep, const char *what)
{
	const atm_opt_round *r = &rep->rounds[0];
	bool proved = !strcmp(r->status, "optimal") ||
	              (!strcmp(r->status, "within gap") && r->mip_gap >= 0 && r->mip_gap <= 1e-9);
	if (!proved)
		fail_msg("%s: the first round ended '%s' after %.1f s, not at a proved optimum", what,
		         r->status, r->solve_s);
}

/* test_recompute_never_slower -- the formulations nest: on the zoo's tiny CNN (whose
 * concatenation and convolution outputs are recomputed at this limit), at 1:1, a plan with recomputation is never predicted slower than the same formulation's
 * without (both solved to optimality; the first round's plans, before defragmentation tightens
 * the limits around what did not fit, as test_formulations orders the formulations) */
static void test_recompute_never_slower(void **state)
{
	(void)state;
	const char *names[] = {"tiny_cnn"};
	const double ratios[][2] = {{1, 1}};
	for (int i = 0; i < 1; i++) {
		atm_graph *g = NULL;
		atm_profile *prof = NULL;
		atm_zoo_opts zo = {.batch = 4};
		assert_int_equal(atm_zoo_build(&g, names[i], &zo), ATM_OK);
		assert_int_equal(synth_profile(g, &prof), ATM_OK);
		for (int r = 0; r < 1; r++) {
			int64_t limit;
			assert_int_equal(atm_opt_limit_from_ratio(g, ratios[r][0], ratios[r][1], &limit), ATM_OK);
			for (int f = ATM_OPT_STATIC; f <= ATM_OPT_ASYNCHRONOUS; f++) {
				atm_opt_options with = options(true), without = options(false);
				atm_opt_check_result a, b;
				atm_opt_report ra, rb;
				atm_plan *p = checked(g, prof, limit, (atm_opt_formulation)f, &with, &a, &ra);
				atm_plan *q = checked(g, prof, limit, (atm_opt_formulation)f, &without, &b, &rb);
				/* compared only as proved optima: a plan a time limit stopped could be either */
				round_optimal(&ra, "with recomputation");
				round_optimal(&rb, "without");
				double x = ra.rounds[0].objective_s, y = rb.rounds[0].objective_s;
				if (x > y * (1 + 1e-9))
					fail_msg("%s %g:%g %s: %.9f s with recomputation, %.9f s without", names[i],
					         ratios[r][0], ratios[r][1], atm_opt_formulation_name(f), x, y);
				/* and here it pays: some tensors are made again (two in each, as solved) */
				assert_true(atm_plan_n_recomputes(p) > 0);
				atm_plan_destroy(p);
				atm_plan_destroy(q);
			}
		}
		atm_profile_destroy(prof);
		atm_graph_destroy(g);
	}
}

/* final_never_slower -- tiny_cnn's final plans, defragmentation rounds and all, at each of n
 * ratios and every formulation, with the given gap: the plan with recomputation allowed is
 * never predicted slower than the plan without by more than slack (relative) */
static void final_never_slower(const double (*ratios)[2], int n, double gap, double slack)
{
	atm_graph *g = NULL;
	atm_profile *prof = NULL;
	atm_zoo_opts zo = {.batch = 4};
	assert_int_equal(atm_zoo_build(&g, "tiny_cnn", &zo), ATM_OK);
	assert_int_equal(synth_profile(g, &prof), ATM_OK);
	for (int r = 0; r < n; r++) {
		int64_t limit;
		assert_int_equal(atm_opt_limit_from_ratio(g, ratios[r][0], ratios[r][1], &limit), ATM_OK);
		for (int f = ATM_OPT_STATIC; f <= ATM_OPT_ASYNCHRONOUS; f++) {
			atm_opt_options with = options(true), without = options(false);
			with.mip_gap = without.mip_gap = gap;
			atm_plan *p = NULL, *q = NULL;
			if (atm_opt_plan(&p, g, prof, limit, (atm_opt_formulation)f, &with, NULL) < 0 ||
			    atm_opt_plan(&q, g, prof, limit, (atm_opt_formulation)f, &without, NULL) < 0)
				fail_msg("%g:%g %s: %s", ratios[r][0], ratios[r][1],
				         atm_opt_formulation_name(f), atm_errmsg());
			double x = atm_plan_info_get(p)->predicted_runtime_s;
			double y = atm_plan_info_get(q)->predicted_runtime_s;
			if (x > y * (1 + slack))
				fail_msg("%g:%g %s: %.9f s with recomputation, %.9f s without", ratios[r][0],
				         ratios[r][1], atm_opt_formulation_name(f), x, y);
			assert_non_null(strstr(atm_plan_info_get(p)->formulation, ATM_OPT_RECOMPUTE_SUFFIX));
			atm_plan_destroy(p);
			atm_plan_destroy(q);
		}
	}
	atm_profile_destroy(prof);
	atm_graph_destroy(g);
}

/* test_recompute_final_never_slower -- as autotm plans, within a 1% gap: the plan without
 * recomputation, made in a share of the time, may stop within its gap above the one made
 * with all of it, never by more (8:1 once was slower, by 0.1%, where the rounds broke the
 * nesting). Two ratios, the one that broke and one between: each ratio is six plans with their
 * defragmentation rounds, the suite's longest unit test */
static void test_recompute_final_never_slower(void **state)
{
	(void)state;
	const double ratios[][2] = {{8, 1}, {2, 1}};
	final_never_slower(ratios, 2, 0.01, 0.01 + 1e-9);
}

/* test_recompute_final_never_slower_exact -- every round solved to optimality (gap 0, no time
 * limit reached): never slower, to the last bit. The defragmentation rounds tighten the limits
 * differently with and without recomputation: planned as one program, the asynchronous plan at
 * 4:1 came out 4.8% slower with recomputation allowed (1.714547 ms against 1.636720 ms), the
 * same on every run; 4:1 and 1:1 (where recomputation is chosen most) */
static void test_recompute_final_never_slower_exact(void **state)
{
	(void)state;
	const double ratios[][2] = {{4, 1}, {1, 1}};
	final_never_slower(ratios, 2, 0, 0);
}

/* solved -- m's plan, the heuristic's then the solver's, into s (new) */
static void solved(const struct model *m, struct solution *s)
{
	struct ilp_result ir;
	assert_int_equal(opt_solution_new(m, s), ATM_OK);
	assert_int_equal(opt_heuristic(m, s, 5, false), ATM_OK);
	assert_int_equal(opt_ilp_solve(m, s, atm_now_s(), &ir), ATM_OK);
}

/* n_chosen -- the recomputations s chooses */
static int n_chosen(const struct model *m, const struct solution *s)
{
	int n = 0;
	for (int32_t i = 0; i < m->n_rc; i++)
		n += s->rc[i];
	return n;
}

/* test_recompute_nests -- the synchronous program's plan, recomputations and all, is a plan of
 * the asynchronous program at the same price and within its limits, which the asynchronous
 * solver accepts as its start and ends no slower than (on the hand graphs and the tiny CNN at
 * 1:1, where recomputations are chosen); a model of other gates is refused */
static void test_recompute_nests(void **state)
{
	(void)state;
	atm_graph *gs[3] = {cheap_between(), chain_between(), NULL};
	atm_zoo_opts zo = {.batch = 4};
	assert_int_equal(atm_zoo_build(&gs[2], "tiny_cnn", &zo), ATM_OK);
	for (int i = 0; i < 3; i++) {
		atm_profile *prof = NULL;
		assert_int_equal(synth_profile(gs[i], &prof), ATM_OK);
		int64_t limit = 3 * MIB + 4096;
		if (i == 2)
			assert_int_equal(atm_opt_limit_from_ratio(gs[i], 1, 1, &limit), ATM_OK);
		atm_opt_options o = options(true);
		struct model *sm = NULL, *am = NULL, *stat = NULL;
		struct solution ss, as = {0};
		struct ilp_result ir;
		assert_int_equal(opt_model_new(&sm, gs[i], prof, ATM_OPT_SYNCHRONOUS, &o, limit, NULL),
		                 ATM_OK);
		assert_int_equal(opt_model_new(&am, gs[i], prof, ATM_OPT_ASYNCHRONOUS, &o, limit, NULL),
		                 ATM_OK);
		assert_int_equal(opt_model_new(&stat, gs[i], prof, ATM_OPT_STATIC, &o, limit, NULL),
		                 ATM_OK);
		solved(sm, &ss);
		assert_true(n_chosen(sm, &ss) > 0);
		assert_int_equal(opt_solution_new(am, &as), ATM_OK);
		assert_true(opt_solution_nest(am, &as, sm, &ss));
		assert_int_equal(n_chosen(am, &as), n_chosen(sm, &ss));
		double sync = opt_solution_cost(sm, &ss), as_async = opt_solution_cost(am, &as);
		if (fabs(sync - as_async) > 1e-12 * (1 + sync))
			fail_msg("%s: %.12f s synchronous, %.12f s as an asynchronous plan",
			         atm_graph_name(gs[i]), sync, as_async);
		int64_t *bytes = calloc((size_t)am->n_slots, sizeof *bytes);
		assert_non_null(bytes);
		opt_solution_bytes(am, &as, bytes);
		for (int32_t sl = 0; sl < am->n_slots; sl++)
			assert_true(bytes[sl] <= am->limit[sl]);
		free(bytes);
		/* the solver checks its start against every row, and keeps the better */
		assert_int_equal(opt_ilp_solve(am, &as, atm_now_s(), &ir), ATM_OK);
		assert_true(opt_solution_cost(am, &as) <= sync * (1 + 1e-9));
		/* the synchronous gates are not the static program's: no placement of it */
		struct solution st = {0};
		assert_int_equal(opt_solution_new(stat, &st), ATM_OK);
		assert_false(opt_solution_nest(stat, &st, am, &as));
		opt_solution_free(&st);
		/* and a whole asynchronous plan records the synchronous start, and is no slower */
		atm_opt_report rep;
		atm_plan *p = NULL;
		assert_int_equal(atm_opt_plan(&p, gs[i], prof, limit, ATM_OPT_ASYNCHRONOUS, &o, &rep),
		                 ATM_OK);
		assert_true(rep.nested_s > 0);
		assert_true(rep.rounds[0].objective_s <= rep.nested_s * (1 + 1e-9));
		atm_plan_destroy(p);
		opt_solution_free(&ss);
		opt_solution_free(&as);
		opt_model_destroy(sm);
		opt_model_destroy(am);
		opt_model_destroy(stat);
		atm_profile_destroy(prof);
		atm_graph_destroy(gs[i]);
	}
}

/* test_recompute_warm_keeps -- a warm start (the last round's plan, here under the same limit)
 * keeps its recomputations: the heuristic from the solver's plan of chain_between, with no
 * time to search, ends no slower than that plan, y still made again through its link (placing
 * from the placement alone, it would have to find the chain afresh, and has no time to) */
static void test_recompute_warm_keeps(void **state)
{
	(void)state;
	atm_graph *g = chain_between();
	atm_profile *prof = NULL;
	assert_int_equal(synth_profile(g, &prof), ATM_OK);
	atm_opt_options o = options(true);
	for (int f = ATM_OPT_SYNCHRONOUS; f <= ATM_OPT_ASYNCHRONOUS; f++) {
		struct model *m = NULL;
		struct solution s;
		assert_int_equal(opt_model_new(&m, g, prof, (atm_opt_formulation)f, &o, 3 * MIB + 4096,
		                               NULL), ATM_OK);
		solved(m, &s);
		double before = opt_solution_cost(m, &s);
		assert_int_equal(n_chosen(m, &s), 1);
		assert_int_equal(opt_heuristic(m, &s, 0, true), ATM_OK);
		if (opt_solution_cost(m, &s) > before * (1 + 1e-9))
			fail_msg("%s: warm heuristic %.9f s from the solver's %.9f s",
			         atm_opt_formulation_name(f), opt_solution_cost(m, &s), before);
		assert_int_equal(n_chosen(m, &s), 1);
		opt_solution_free(&s);
		opt_model_destroy(m);
	}
	atm_profile_destroy(prof);
	atm_graph_destroy(g);
}

/* test_recompute_baselines_refuse -- the baselines have no recomputation to choose: a usage
 * error naming the formulations that do */
static void test_recompute_baselines_refuse(void **state)
{
	(void)state;
	atm_graph *g = cheap_between();
	atm_profile *prof = NULL;
	assert_int_equal(synth_profile(g, &prof), ATM_OK);
	const atm_opt_formulation base[] = {ATM_OPT_ALL_FAST, ATM_OPT_ALL_SLOW, ATM_OPT_NUMA,
	                                    ATM_OPT_2LM, ATM_OPT_VDNN};
	for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
		atm_opt_options o = options(true);
		atm_plan *p = NULL;
		assert_int_equal(atm_opt_plan(&p, g, prof, 3 * MIB, base[i], &o, NULL), ATM_E_USAGE);
		assert_null(p);
		assert_non_null(strstr(atm_errmsg(), "static, synchronous, asynchronous"));
		assert_non_null(strstr(atm_errmsg(), atm_opt_formulation_name(base[i])));
	}
	atm_profile_destroy(prof);
	atm_graph_destroy(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recompute_cheap_op_is_recomputed),
		cmocka_unit_test(test_recompute_chain),
		cmocka_unit_test(test_recompute_heuristic),
		cmocka_unit_test(test_recompute_never_slower),
		cmocka_unit_test(test_recompute_final_never_slower),
		cmocka_unit_test(test_recompute_final_never_slower_exact),
		cmocka_unit_test(test_recompute_nests),
		cmocka_unit_test(test_recompute_warm_keeps),
		cmocka_unit_test(test_recompute_baselines_refuse),
	};
	return per_solver_run(tests, sizeof tests / sizeof tests[0], &solver, NULL, NULL);
}
