/* test_formulations.c -- the ILP formulations: ordering, more memory never slower, checker agreement, solver practice */
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
#ifdef ATM_WITH_CBC
#include <Cbc_C_Interface.h>
#endif

#include <glpk.h>
#include <unistd.h>

#include "atm_optimizer.h"
#include "../optimizer/milp.h"
#include "optimizer/per_solver.h"
#include "optimizer/tiny_nets.h"

/* the solver every test of the group runs with: the suite runs once per solver built in */
static atm_opt_solver solver;

/* A time limit that only guards against a hang: the tests' models reach their gap in seconds,
 * and what a test asserts must not depend on where a limit stopped the search. */
#define TEST_GUARD_S 600

/* options -- the defaults, with the group's solver and the guard for a limit */
static void options(atm_opt_options *o)
{
	atm_opt_options_default(o);
	o->solver = solver;
	o->time_limit_s = TEST_GUARD_S;
}

static int64_t ratio_limit(const atm_graph *g, double slow, double fast)
{
	int64_t b;
	assert_int_equal(atm_opt_limit_from_ratio(g, slow, fast, &b), ATM_OK);
	return b;
}

/* checked_plan -- a plan that core's schedule accepts and whose price the checker and the
 * model agree on, to rounding; every plan of these tests goes through it */
static atm_plan *checked_plan(const struct net *n, int64_t limit, atm_opt_formulation f,
                              const atm_opt_options *o, atm_opt_report *rep)
{
	atm_plan *p = NULL;
	atm_schedule *s = NULL;
	atm_opt_check_result chk;
	if (atm_opt_plan(&p, n->g, n->prof, limit, f, o, rep) < 0)
		fail_msg("%s at %lld bytes: %s", atm_opt_formulation_name(f), (long long)limit, atm_errmsg());
	if (atm_schedule_new(&s, p) < 0)
		fail_msg("schedule: %s", atm_errmsg());
	atm_schedule_destroy(s);
	assert_int_equal(atm_opt_check(p, n->prof, o, &chk), ATM_OK);
	const atm_plan_info *info = atm_plan_info_get(p);
	assert_string_equal(info->formulation, atm_opt_formulation_name(f));
	assert_true(fabs(info->predicted_runtime_s - chk.predicted_s) <= 1e-12);
	if (fabs(chk.predicted_s - rep->objective_s) > 1e-9 * (1 + chk.predicted_s))
		fail_msg("%s: the checker says %.12f s, the model %.12f s", atm_opt_formulation_name(f),
		         chk.predicted_s, rep->objective_s);
	assert_true(rep->n_rounds >= 1 && rep->rounds[rep->n_rounds - 1].fits);
	/* a lower bound is never above the plan it bounds, and the gap is measured against it */
	for (int i = 0; i < rep->n_rounds; i++) {
		const atm_opt_round *r = &rep->rounds[i];
		if (r->bound_s > 0 && r->bound_s > r->objective_s * (1 + 1e-9))
			fail_msg("round %d: bound %.12f s above the plan's %.12f s", i, r->bound_s,
			         r->objective_s);
		if (r->bound_s > 0 && r->mip_gap >= 0)
			assert_true(r->mip_gap <= (r->objective_s - r->bound_s) / r->objective_s + 1e-9);
	}
	/* the solver that ran is the one asked for, and it is recorded */
	assert_string_equal(rep->solver, atm_opt_solver_name(solver));
	assert_string_equal(info->solver, atm_opt_solver_name(solver));
	/* the program's own objective at the final plan is the checker's runtime, to rounding */
	const atm_opt_round *last = &rep->rounds[rep->n_rounds - 1];
	if (last->ilp_objective_s >= 0 &&
	    fabs(last->ilp_objective_s - chk.predicted_s) > 1e-9 * (1 + chk.predicted_s))
		fail_msg("%s: the checker says %.12f s, the program's objective %.12f s",
		         atm_opt_formulation_name(f), chk.predicted_s, last->ilp_objective_s);
	assert_int_equal(info->n_rounds, rep->n_rounds);
	assert_true(info->creation_s >= 0 && info->solve_s >= 0);
	return p;
}

/* exact -- solved to optimality: the models here are small enough to prove it in seconds, so
 * the time limit only guards against a hang and what a test asserts of a gap holds whatever
 * the machine's speed */
static atm_opt_options exact(void)
{
	atm_opt_options o;
	options(&o);
	o.mip_gap = 0;
	o.time_limit_s = TEST_GUARD_S;
	return o;
}

/* order_at -- static >= synchronous >= asynchronous at one limit: each model holds the one
 * before it, so their optima (the first round's, before defragmentation tightens) are ordered */
static void order_at(const struct net *n, int64_t limit, const atm_opt_options *o)
{
	double obj[3], gap[3];
	for (int f = 0; f < 3; f++) {
		atm_opt_report rep;
		atm_plan *p = checked_plan(n, limit, (atm_opt_formulation)f, o, &rep);
		obj[f] = rep.rounds[0].objective_s;
		gap[f] = rep.rounds[0].mip_gap;
		assert_true(rep.rounds[rep.n_rounds - 1].ilp_objective_s > 0); /* the program priced it */
		assert_true(gap[f] >= 0 && gap[f] <= o->mip_gap + 1e-12);
		atm_plan_destroy(p);
	}
	for (int f = 1; f < 3; f++)
		if (obj[f] * (1 - gap[f]) > obj[f - 1] + 1e-12)
			fail_msg("%s at %lld bytes: %s %.9f s (gap %.4f) is slower than %s %.9f s",
			         atm_graph_name(n->g), (long long)limit, atm_opt_formulation_name(f), obj[f],
			         gap[f], atm_opt_formulation_name(f - 1), obj[f - 1]);
}

static void test_formulations_order_tiny_mlp(void **state)
{
	struct net *n = &((struct net *)*state)[0];
	atm_opt_options o = exact();
	order_at(n, ratio_limit(n->g, 8, 1), &o);
	order_at(n, ratio_limit(n->g, 4, 1), &o);
	order_at(n, ratio_limit(n->g, 1, 1), &o);
}

static void test_formulations_order_tiny_cnn(void **state)
{
	struct net *n = &((struct net *)*state)[1];
	atm_opt_options o = exact();
	/* within the gap: the asynchronous model is the largest, and branch and bound is slow
	 * to close its last percent under the sanitizers */
	o.mip_gap = 0.02;
	order_at(n, ratio_limit(n->g, 4, 1), &o);
}

/* test_formulations_more_memory_never_slower -- a sweep from the least workable limit to the
 * peak: each optimum is no slower than the one with less memory */
static void test_formulations_more_memory_never_slower(void **state)
{
	struct net *n = &((struct net *)*state)[0];
	atm_opt_options o = exact();
	int64_t lo, peak = ratio_limit(n->g, 0.0001, 1000);
	int32_t node;
	assert_int_equal(atm_opt_min_limit(n->g, &o, &lo, &node), ATM_OK);
	if (lo < 64)
		lo = 64;
	for (int f = 0; f < 2; f++) {
		double prev = INFINITY;
		for (int i = 0; i <= 6; i++) {
			int64_t limit = lo + (peak - lo) * i / 6;
			atm_opt_report rep;
			atm_plan *p = checked_plan(n, limit, (atm_opt_formulation)f, &o, &rep);
			double obj = rep.rounds[0].objective_s;
			if (obj > prev + 1e-12)
				fail_msg("%s: %lld bytes give %.9f s, less memory gave %.9f s",
				         atm_opt_formulation_name(f), (long long)limit, obj, prev);
			prev = obj;
			atm_plan_destroy(p);
		}
	}
}

/* same_optimum -- the reduced program and the full one reach the same optimum of the first
 * round at limit, each plan checked; the reduced one is no larger, and smaller where phases
 * are carried between uses (the asynchronous formulation's) */
static void same_optimum(const struct net *n, int64_t limit, atm_opt_formulation f,
                         const atm_opt_options *base)
{
	atm_opt_options o = *base;
	atm_opt_report full, red;
	o.full_model = true;
	atm_plan *p = checked_plan(n, limit, f, &o, &full);
	atm_plan_destroy(p);
	o.full_model = false;
	p = checked_plan(n, limit, f, &o, &red);
	atm_plan_destroy(p);
	double a = full.rounds[0].objective_s, b = red.rounds[0].objective_s;
	double tol = o.mip_gap * a + 1e-9 * (1 + a);
	if (fabs(a - b) > tol)
		fail_msg("%s, %s at %lld bytes: the full program's optimum is %.12f s, the reduced "
		         "one's %.12f s", atm_graph_name(n->g), atm_opt_formulation_name(f),
		         (long long)limit, a, b);
	assert_true(red.n_columns <= full.n_columns);
	if (f == ATM_OPT_ASYNCHRONOUS && red.n_columns >= full.n_columns)
		fail_msg("%s at %lld bytes: the reduced asynchronous program has %d columns, the full "
		         "one %d", atm_graph_name(n->g), (long long)limit, red.n_columns, full.n_columns);
}

/* test_formulations_reduced_same_optimum -- the reduced program against the full one: every
 * formulation of tiny_mlp at 4:1, the synchronous one near its least workable limit, the
 * asynchronous one with a copy's loss beside a kernel and with kernels whose slow groups
 * interact (no longer separable). (tiny_cnn's models take minutes to prove optimal under the
 * sanitizers; bench_optimizer's networks were compared by hand: docs/optimizer.md) */
static void test_formulations_reduced_same_optimum(void **state)
{
	struct net *n = (struct net *)*state;
	atm_opt_options o = exact();
	int64_t lo;
	int32_t node;
	assert_int_equal(atm_opt_min_limit(n[0].g, &o, &lo, &node), ATM_OK);
	int64_t peak = ratio_limit(n[0].g, 0.0001, 1000);
	const int64_t limits[] = {ratio_limit(n[0].g, 4, 1), lo + (peak - lo) / 8};
	for (int f = 0; f < 3; f++)
		same_optimum(&n[0], limits[0], (atm_opt_formulation)f, &o);
	same_optimum(&n[0], limits[1], ATM_OPT_SYNCHRONOUS, &o);
	atm_profile_moves mv;
	assert_int_equal(atm_profile_get_moves(n[0].prof, &mv), ATM_OK);
	atm_profile_moves lossy = mv;
	lossy.overlap_loss = 0.5;
	assert_int_equal(atm_profile_set_moves(n[0].prof, &lossy), ATM_OK);
	same_optimum(&n[0], limits[0], ATM_OPT_ASYNCHRONOUS, &o);
	assert_int_equal(atm_profile_set_moves(n[0].prof, &mv), ATM_OK);
	/* kernels whose slow groups interact keep their configuration columns */
	struct net mixed = {.g = n[0].g};
	assert_int_equal(synth_profile_mixed(n[0].g, 1.2, &mixed.prof), ATM_OK);
	same_optimum(&mixed, limits[0], ATM_OPT_ASYNCHRONOUS, &o);
	atm_profile_destroy(mixed.prof);
}

/* test_formulations_asynchronous_overlaps -- at a tight limit the asynchronous plan copies
 * while kernels run, and the checker prices those copies as the model does */
static void test_formulations_asynchronous_overlaps(void **state)
{
	struct net *n = &((struct net *)*state)[0];
	atm_opt_options o;
	options(&o);
	o.time_limit_s = TEST_GUARD_S;
	atm_opt_report rep;
	atm_plan *p = checked_plan(n, ratio_limit(n->g, 8, 1), ATM_OPT_ASYNCHRONOUS, &o, &rep);
	int async = 0;
	for (int32_t i = 0; i < atm_plan_n_moves(p); i++) {
		const atm_move *m = atm_plan_move(p, i);
		if (m->async) {
			async++;
			assert_int_equal(m->until, m->after + 2);
		}
	}
	assert_true(async > 0);
	assert_true(rep.n_binaries > 0 && rep.n_rows > 0 && rep.n_columns > rep.n_binaries);
	atm_plan_destroy(p);
}

/* test_formulations_overlap_loss -- with a kernel losing part of each copy beside it, the
 * model, its program and the checker still agree and the formulations stay ordered; losing
 * all of it, overlapping buys nothing: the asynchronous optimum is the synchronous one */
static void test_formulations_overlap_loss(void **state)
{
	struct net *n = &((struct net *)*state)[0];
	atm_opt_options o = exact();
	atm_profile_moves mv, keep;
	assert_int_equal(atm_profile_get_moves(n->prof, &keep), ATM_OK);
	int64_t limit = ratio_limit(n->g, 8, 1);
	double obj[2];
	mv = keep;
	mv.overlap_loss = 0.5;
	assert_int_equal(atm_profile_set_moves(n->prof, &mv), ATM_OK);
	order_at(n, limit, &o);
	mv.overlap_loss = 1;
	assert_int_equal(atm_profile_set_moves(n->prof, &mv), ATM_OK);
	for (int f = 0; f < 2; f++) {
		atm_opt_report rep;
		atm_plan *p = checked_plan(n, limit, f ? ATM_OPT_ASYNCHRONOUS : ATM_OPT_SYNCHRONOUS, &o,
		                           &rep);
		obj[f] = rep.rounds[0].objective_s;
		atm_plan_destroy(p);
	}
	if (fabs(obj[1] - obj[0]) > 1e-9 * (1 + obj[0]))
		fail_msg("overlap loss 1: asynchronous %.12f s, synchronous %.12f s", obj[1], obj[0]);
	mv.overlap_loss = 1.5;
	assert_int_equal(atm_profile_set_moves(n->prof, &mv), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "overlap_loss must be from 0 to 1"));
	assert_int_equal(atm_profile_set_moves(n->prof, &keep), ATM_OK);
}

/* by_direction -- mv with the overlap measured by direction: kernel losses lf (fetches), ls
 * (evictions), copy stretches sf, ss */
static atm_profile_moves by_direction(atm_profile_moves mv, double lf, double ls, double sf,
                                      double ss)
{
	mv.overlap_measured = mv.by_direction = true;
	mv.kernel_loss[0] = lf;
	mv.kernel_loss[1] = ls;
	mv.copy_stretch[0] = sf;
	mv.copy_stretch[1] = ss;
	mv.overlap_loss = (lf + ls) / 2;
	return mv;
}

/* test_formulations_copy_stretch -- copies priced by direction, as the profile measures them:
 * the kernel's loss to fetches and to evictions, and each copy stretched beside a kernel. The
 * model, its program and the checker agree and the formulations nest; where every copy costs
 * the kernel all its time (and takes longer itself), overlapping buys nothing and the
 * asynchronous optimum is the synchronous one; a stretch below 1 is refused */
static void test_formulations_copy_stretch(void **state)
{
	struct net *n = &((struct net *)*state)[0];
	atm_opt_options o = exact();
	atm_profile_moves keep, mv;
	assert_int_equal(atm_profile_get_moves(n->prof, &keep), ATM_OK);
	int64_t limit = ratio_limit(n->g, 8, 1);
	mv = by_direction(keep, 0.2, 0.6, 1.8, 1.3);
	assert_int_equal(atm_profile_set_moves(n->prof, &mv), ATM_OK);
	order_at(n, limit, &o);
	order_at(n, ratio_limit(n->g, 4, 1), &o);
	/* the stretch alone prices copies the old model called free: not cheaper than none */
	double obj[3];
	const atm_profile_moves cases[3] = {by_direction(keep, 0, 0, 1, 1),
	                                    by_direction(keep, 0, 0, 3, 3),
	                                    by_direction(keep, 1, 1, 2, 2)};
	for (int i = 0; i < 3; i++) {
		atm_opt_report rep;
		assert_int_equal(atm_profile_set_moves(n->prof, &cases[i]), ATM_OK);
		atm_plan *p = checked_plan(n, limit, ATM_OPT_ASYNCHRONOUS, &o, &rep);
		obj[i] = rep.rounds[0].objective_s;
		atm_plan_destroy(p);
	}
	assert_true(obj[0] <= obj[1] + 1e-12);
	atm_opt_report rep;
	atm_plan *p = checked_plan(n, limit, ATM_OPT_SYNCHRONOUS, &o, &rep);
	if (fabs(obj[2] - rep.rounds[0].objective_s) > 1e-9 * (1 + obj[2]))
		fail_msg("loss 1, stretch 2: asynchronous %.12f s, synchronous %.12f s", obj[2],
		         rep.rounds[0].objective_s);
	atm_plan_destroy(p);
	mv = by_direction(keep, 0.5, 0.5, 0.5, 1);
	assert_int_equal(atm_profile_set_moves(n->prof, &mv), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "copies to fast: kernel_loss must be from 0 to 1 and "
	                                     "copy_stretch from 1 to 100 (got 0.5, 0.5)"));
	assert_int_equal(atm_profile_set_moves(n->prof, &keep), ATM_OK);
}

/* test_formulations_no_limit_is_all_fast -- nothing to decide without a limit */
static void test_formulations_no_limit_is_all_fast(void **state)
{
	struct net *n = &((struct net *)*state)[1];
	atm_plan *p = NULL;
	atm_opt_options o;
	options(&o);
	atm_opt_check_result chk;
	assert_int_equal(atm_opt_plan(&p, n->g, n->prof, 0, ATM_OPT_SYNCHRONOUS, &o, NULL), ATM_OK);
	for (int32_t t = 0; t < atm_graph_n_tensors(n->g); t++)
		assert_int_equal(atm_plan_location(p, t), ATM_LOC_FAST);
	assert_int_equal(atm_plan_n_moves(p), 0);
	assert_int_equal(atm_opt_check(p, n->prof, &o, &chk), ATM_OK);
	assert_true(fabs(chk.predicted_s - chk.all_fast_kernel_s) < 1e-12);
	assert_string_equal(atm_plan_info_get(p)->solver_status, "no limit");
	atm_plan_destroy(p);
}

/* test_formulations_time_limit_still_plans -- a time limit that runs out before the heuristic
 * has a plan is refused, naming the limit and what was reached; a solve cut short after it
 * returns the best plan it has (the heuristic's at worst) and says so */
static void test_formulations_time_limit_still_plans(void **state)
{
	struct net *n = &((struct net *)*state)[1];
	atm_opt_options o;
	options(&o);
	o.time_limit_s = 1e-6;
	o.mip_gap = 0;
	atm_opt_report rep;
	atm_plan *p = NULL;
	double t0 = atm_now_s();
	assert_int_equal(atm_opt_plan(&p, n->g, n->prof, ratio_limit(n->g, 4, 1),
	                              ATM_OPT_ASYNCHRONOUS, &o, &rep), ATM_E_USAGE);
	double reached_s = atm_now_s() - t0;
	assert_null(p);
	if (!strstr(atm_errmsg(), "a time limit of 1e-06 s is too short to plan") ||
	    !strstr(atm_errmsg(), "asynchronous") || !strstr(atm_errmsg(), "give --time-limit"))
		fail_msg("message '%s'", atm_errmsg());
	/* a limit the heuristic meets with room to spare, and the solver not */
	o.time_limit_s = 20 * reached_s > 0.05 ? 20 * reached_s : 0.05;
	p = checked_plan(n, ratio_limit(n->g, 4, 1), ATM_OPT_ASYNCHRONOUS, &o, &rep);
	const char *st = atm_plan_info_get(p)->solver_status;
	if (!strstr(st, "heuristic") && !strstr(st, "time-limit") && strcmp(st, "optimal"))
		fail_msg("status '%s'", st);
	assert_true(rep.heuristic_s > 0 && rep.objective_s <= rep.heuristic_s + 1e-12);
	atm_plan_destroy(p);
	/* without the seed the solver must find its own first plan, and still returns one */
	o.no_seed = true;
	o.time_limit_s = 5;
	o.mip_gap = 0.01;
	p = checked_plan(n, ratio_limit(n->g, 4, 1), ATM_OPT_SYNCHRONOUS, &o, &rep);
	atm_plan_destroy(p);
}

/* test_formulations_failed_solver -- a solver that dies (CBC does, in Clp's presolve, on some
 * models) hands the round to GLPK, and the plan's status says so; GLPK's group has nothing to
 * hand over */
static void test_formulations_failed_solver(void **state)
{
	struct net *n = &((struct net *)*state)[1];
	if (solver != ATM_OPT_SOLVER_CBC)
		return;
	atm_opt_options o;
	options(&o);
	o.mip_gap = 0;
	atm_opt_report rep;
	setenv("ATM_TEST_CBC_CRASH", "1", 1);
	atm_plan *p = checked_plan(n, ratio_limit(n->g, 4, 1), ATM_OPT_SYNCHRONOUS, &o, &rep);
	unsetenv("ATM_TEST_CBC_CRASH");
	const char *st = atm_plan_info_get(p)->solver_status;
	if (!strstr(st, "(glpk; cbc failed)") || strncmp(st, "heuristic", 9) == 0)
		fail_msg("status '%s'", st);
	assert_true(rep.rounds[rep.n_rounds - 1].mip_gap >= 0);
	atm_plan_destroy(p);
}

/* test_formulations_stop -- a stop flag set (Ctrl-C) ends every ILP formulation with
 * ATM_E_INTERRUPTED and no plan; a clear one changes nothing */
static void test_formulations_stop(void **state)
{
	struct net *n = &((struct net *)*state)[1];
	volatile sig_atomic_t stop = 1;
	atm_opt_options o;
	options(&o);
	o.stop = &stop;
	const atm_opt_formulation fs[] = {ATM_OPT_STATIC, ATM_OPT_SYNCHRONOUS, ATM_OPT_ASYNCHRONOUS};
	for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) {
		atm_plan *p = (atm_plan *)&stop;
		assert_int_equal(atm_opt_plan(&p, n->g, n->prof, ratio_limit(n->g, 4, 1), fs[i], &o, NULL),
		                 ATM_E_INTERRUPTED);
		assert_null(p);
		assert_non_null(strstr(atm_errmsg(), "interrupted"));
	}
	stop = 0;
	atm_opt_report rep;
	atm_plan_destroy(checked_plan(n, ratio_limit(n->g, 4, 1), ATM_OPT_ASYNCHRONOUS, &o, &rep));
}

/* test_formulations_plan_json_round_trip -- a plan survives its JSON with its figures */
static void test_formulations_plan_json_round_trip(void **state)
{
	struct net *n = &((struct net *)*state)[0];
	atm_opt_options o;
	options(&o);
	atm_opt_report rep;
	atm_plan *p = checked_plan(n, ratio_limit(n->g, 2, 1), ATM_OPT_SYNCHRONOUS, &o, &rep), *q = NULL;
	char *text = NULL;
	assert_int_equal(atm_plan_dump(p, &text), ATM_OK);
	assert_int_equal(atm_plan_load_buffer(&q, n->g, text, strlen(text), "plan"), ATM_OK);
	assert_int_equal(atm_plan_n_moves(q), atm_plan_n_moves(p));
	assert_int_equal(atm_plan_info_get(q)->fast_limit_bytes, atm_plan_info_get(p)->fast_limit_bytes);
	assert_true(fabs(atm_plan_info_get(q)->predicted_runtime_s -
	                 atm_plan_info_get(p)->predicted_runtime_s) < 1e-9);
	assert_string_equal(atm_plan_info_get(q)->formulation, "synchronous");
	free(text);
	atm_plan_destroy(q);
	atm_plan_destroy(p);
}

/* test_formulations_bad_options -- each option out of range names itself */
static void test_formulations_bad_options(void **state)
{
	struct net *n = &((struct net *)*state)[0];
	atm_plan *p = (atm_plan *)1;
	atm_opt_options o;
	options(&o);
	o.mip_gap = 1.5;
	assert_int_equal(atm_opt_plan(&p, n->g, n->prof, 4096, ATM_OPT_STATIC, &o, NULL), ATM_E_USAGE);
	assert_null(p);
	assert_non_null(strstr(atm_errmsg(), "MIP gap 1.5"));
	options(&o);
	o.time_limit_s = 0;
	assert_int_equal(atm_opt_plan(&p, n->g, n->prof, 4096, ATM_OPT_STATIC, &o, NULL), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "time limit"));
	options(&o);
	o.max_rounds = ATM_PLAN_MAX_ROUNDS + 1;
	assert_int_equal(atm_opt_plan(&p, n->g, n->prof, 4096, ATM_OPT_STATIC, &o, NULL), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "rounds"));
	options(&o);
	assert_int_equal(atm_opt_plan(&p, n->g, n->prof, -5, ATM_OPT_STATIC, &o, NULL), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "fast limit -5"));
	atm_opt_formulation f;
	assert_int_equal(atm_opt_formulation_from_name("dynamic", &f), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "unknown formulation 'dynamic'; valid: static"));
	assert_int_equal(atm_opt_formulation_from_name("asynchronous", &f), ATM_OK);
	assert_int_equal(f, ATM_OPT_ASYNCHRONOUS);
}

/* test_formulations_profile_gaps -- a profile without a kernel or without bandwidths is
 * ATM_E_NOTFOUND that tells the user to profile */
static void test_formulations_profile_gaps(void **state)
{
	struct net *n = &((struct net *)*state)[0];
	atm_profile_machine m = {.cpu = "synthetic", .n_threads = 1, .backend = "test",
	                      .fast_tier = "dram:0", .slow_tier = "synthetic"};
	atm_profile *empty = NULL;
	atm_plan *p = NULL;
	atm_opt_options o;
	options(&o);
	assert_int_equal(atm_profile_new(&empty, &m, NULL), ATM_OK);
	assert_int_equal(atm_opt_plan(&p, n->g, empty, 4096, ATM_OPT_SYNCHRONOUS, &o, NULL),
	                 ATM_E_NOTFOUND);
	assert_null(p);
	assert_non_null(strstr(atm_errmsg(), "autotm profile"));
	if (atm_profile_set_moves(empty,
		&(atm_profile_moves){.to_fast_gbps = 4, .to_slow_gbps = 2, .estimated = false}) < 0)
		fail_msg("%s", atm_errmsg());
	assert_int_equal(atm_opt_plan(&p, n->g, empty, 4096, ATM_OPT_SYNCHRONOUS, &o, NULL),
	                 ATM_E_NOTFOUND);
	assert_non_null(strstr(atm_errmsg(), "autotm profile"));
	atm_profile_destroy(empty);
}

#ifdef ATM_WITH_CBC
/* cbc_optimum -- the optimum CBC finds in a model file (its own reader, as the cbc command
 * uses), in the file's units; NAN when it could not */
static double cbc_optimum(const char *path, bool mps)
{
	Cbc_Model *m = Cbc_newModel();
	Cbc_setLogLevel(m, 0);
	double v = NAN;
	if ((mps ? Cbc_readMps(m, path) : Cbc_readLp(m, path)) == 0) {
		Cbc_setParameter(m, "ratioGap", "0");
		if (Cbc_solve(m) == 0 && Cbc_isProvenOptimal(m))
			v = Cbc_getObjValue(m);
	}
	Cbc_deleteModel(m);
	return v;
}
#endif

/* test_formulations_write_model -- the model written to MPS and to LP format, read back by
 * GLPK and (where the build has it) by CBC and solved to optimality, has the optimal plan's
 * runtime as its optimum (objective in microseconds, its constant included: a column fixed at
 * one, so that every solver reads the same objective) */
static void test_formulations_write_model(void **state)
{
	struct net *n = &((struct net *)*state)[0];
	const char *files[] = {"atm_test_model.mps", "atm_test_model.lp"};
	for (int i = 0; i < 2; i++) {
		atm_opt_options o = exact();
		o.write_model = files[i];
		atm_opt_report rep;
		atm_plan *p = checked_plan(n, ratio_limit(n->g, 4, 1), ATM_OPT_SYNCHRONOUS, &o, &rep);
		assert_string_equal(rep.rounds[rep.n_rounds - 1].status, "optimal");
		glp_prob *lp = glp_create_prob();
		glp_term_out(GLP_OFF);
		int read = i == 0 ? glp_read_mps(lp, GLP_MPS_FILE, NULL, files[i])
		                  : glp_read_lp(lp, NULL, files[i]);
		assert_int_equal(read, 0);
		/* the model's columns, and the constant's where it has one */
		glp_create_index(lp);
		assert_int_equal(glp_get_num_cols(lp),
		                 rep.n_columns + (glp_find_col(lp, "objconst") > 0));
		assert_int_equal(glp_get_num_rows(lp), rep.n_rows);
		glp_iocp ip;
		glp_init_iocp(&ip);
		ip.presolve = GLP_ON;
		ip.msg_lev = GLP_MSG_OFF;
		assert_int_equal(glp_intopt(lp, &ip), 0);
		assert_int_equal(glp_mip_status(lp), GLP_OPT);
		double opt_s = glp_mip_obj_val(lp) / 1e6;
		double plan_s = atm_plan_info_get(p)->predicted_runtime_s;
		if (fabs(opt_s - plan_s) > 1e-9 * (1 + plan_s))
			fail_msg("%s: the written model's optimum is %.12f s, the plan %.12f s", files[i],
			         opt_s, plan_s);
#ifdef ATM_WITH_CBC
		double cbc_s = cbc_optimum(files[i], i == 0) / 1e6;
		if (!(fabs(cbc_s - plan_s) <= 1e-6 * (1 + plan_s)))
			fail_msg("%s: CBC reads an optimum of %.12f s, the plan is %.12f s", files[i], cbc_s,
			         plan_s);
#endif
		glp_delete_prob(lp);
		atm_plan_destroy(p);
		unlink(files[i]);
	}
	/* a name that is neither: refused before any work */
	atm_opt_options o = exact();
	o.write_model = "model.txt";
	atm_plan *p = NULL;
	assert_int_equal(atm_opt_plan(&p, n->g, n->prof, ratio_limit(n->g, 4, 1),
	                              ATM_OPT_SYNCHRONOUS, &o, NULL), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), ".mps"));
	assert_null(p);
}

/* test_formulations_model_constant -- min x + 5 over x >= 1 (a binary): the MPS and the LP
 * file give 6 to GLPK's reader (glpsol's) and to CBC's (the cbc command's) alike */
static void test_formulations_model_constant(void **state)
{
	(void)state;
	const char *files[] = {"atm_test_const.mps", "atm_test_const.lp"};
	struct milp p;
	milp_init(&p);
	int32_t x = milp_col(&p, 0, 1, 1, true);
	double one = 1;
	milp_row(&p, &x, &one, 1, 1, INFINITY);
	p.obj_const = 5;
	assert_false(p.failed);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(milp_write(&p, files[i]), ATM_OK);
		glp_prob *lp = glp_create_prob();
		glp_term_out(GLP_OFF);
		assert_int_equal(i == 0 ? glp_read_mps(lp, GLP_MPS_FILE, NULL, files[i])
		                        : glp_read_lp(lp, NULL, files[i]), 0);
		glp_iocp ip;
		glp_init_iocp(&ip);
		ip.presolve = GLP_ON;
		ip.msg_lev = GLP_MSG_OFF;
		assert_int_equal(glp_intopt(lp, &ip), 0);
		if (fabs(glp_mip_obj_val(lp) - 6) > 1e-9)
			fail_msg("%s: GLPK reads an optimum of %g, want 6", files[i], glp_mip_obj_val(lp));
		glp_delete_prob(lp);
#ifdef ATM_WITH_CBC
		double v = cbc_optimum(files[i], i == 0);
		if (!(fabs(v - 6) <= 1e-9))
			fail_msg("%s: CBC reads an optimum of %g, want 6", files[i], v);
#endif
		unlink(files[i]);
	}
	milp_free(&p);
}

/* test_formulations_solver_names -- names, auto, and a solver this build lacks */
static void test_formulations_solver_names(void **state)
{
	(void)state;
	atm_opt_solver s, r;
	assert_int_equal(atm_opt_solver_from_name("gurobi", &s), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "unknown solver 'gurobi'; valid: auto"));
	assert_int_equal(atm_opt_solver_from_name("cbc", &s), ATM_OK);
	assert_int_equal(s, ATM_OPT_SOLVER_CBC);
	assert_int_equal(atm_opt_solver_resolve(ATM_OPT_SOLVER_GLPK, &r), ATM_OK);
	assert_int_equal(r, ATM_OPT_SOLVER_GLPK);
	assert_non_null(strstr(atm_opt_solver_version(ATM_OPT_SOLVER_GLPK), "GLPK"));
	assert_int_equal(atm_opt_solver_resolve(ATM_OPT_SOLVER_AUTO, &r), ATM_OK);
	if (atm_opt_solver_resolve(ATM_OPT_SOLVER_CBC, &s) == ATM_OK) {
		assert_int_equal(r, ATM_OPT_SOLVER_CBC); /* auto takes the best built in */
		assert_non_null(strstr(atm_opt_solver_version(ATM_OPT_SOLVER_CBC), "CBC"));
	} else {
		assert_int_equal(atm_opt_solver_resolve(ATM_OPT_SOLVER_CBC, &s), ATM_E_UNSUPPORTED);
		assert_non_null(strstr(atm_errmsg(), "coinor-libcbc-dev"));
		assert_int_equal(r, ATM_OPT_SOLVER_GLPK);
		assert_string_equal(atm_opt_solver_version(ATM_OPT_SOLVER_CBC), "");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formulations_order_tiny_mlp),
		cmocka_unit_test(test_formulations_order_tiny_cnn),
		cmocka_unit_test(test_formulations_more_memory_never_slower),
		cmocka_unit_test(test_formulations_reduced_same_optimum),
		cmocka_unit_test(test_formulations_asynchronous_overlaps),
cmocka_unit_test(test_formulations_overlap_loss),
		cmocka_unit_test(test_formulations_copy_stretch),
		cmocka_unit_test(test_formulations_no_limit_is_all_fast),
		cmocka_unit_test(test_formulations_time_limit_still_plans),
		cmocka_unit_test(test_formulations_failed_solver),
		cmocka_unit_test(test_formulations_stop),
		cmocka_unit_test(test_formulations_plan_json_round_trip),
		cmocka_unit_test(test_formulations_bad_options),
		cmocka_unit_test(test_formulations_profile_gaps),
		cmocka_unit_test(test_formulations_write_model),
		cmocka_unit_test(test_formulations_model_constant),
		cmocka_unit_test(test_formulations_solver_names),
	};
	return per_solver_run(tests, sizeof tests / sizeof tests[0], &solver, tiny_nets_setup, tiny_nets_teardown);
}
