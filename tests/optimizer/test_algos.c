/* test_algos.c -- the GPU formulation's algorithm choice: a binary per algorithm, its workspace counted in the limit and reserved in the arena
 *
 * A hand-sized forward pass, two convolutions and three ReLUs, planned device_only with
 * workspace_in_limit. The profile gives conv2 five algorithms:
 *
 *   algo  time    workspace
 *   0     100 us  512        the default, the smallest workspace
 *   1      20 us  4096       the fastest that may be chosen
 *   2      50 us  1024
 *   3      60 us  2048       slower than 2 and needs more: never worth a binary
 *   4       1 us  512 MiB    over ATM_GPU_WORKSPACE_BYTES: never profiled for plans
 *
 * Bytes (float32): x, a, b, c, d, e, f 1024 each, w1 576, w2 1600. conv2 (node 3) needs c, w2
 * and d on the device: 3648 bytes, the most any node must hold; tensor a lives from node 0 to
 * node 5 and may wait in host memory around conv2.
 */
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
#include "optimizer/per_solver.h"
#include "optimizer/synth.h"

#define CONV2 3
#define AT_CONV2 3648 /* c + w2 + d */

struct fix {
	atm_graph *g;
	atm_profile *prof;
};

/* the solver every test of the group runs with: the suite runs once per solver built in */
static atm_opt_solver solver;

static int32_t t4(atm_graph *g, const char *name, int64_t n, int64_t c, int64_t h, int64_t w,
                  atm_tensor_kind kind)
{
	int64_t dims[4] = {n, c, h, w};
	int32_t id;
	assert_int_equal(atm_graph_add_tensor(g, name, ATM_F32, 4, dims, kind, ATM_LOC_ANY, &id),
	                 ATM_OK);
	return id;
}

static void node(atm_graph *g, const char *name, atm_op op, const atm_attrs *a, int n_in,
                 const int32_t *in, int32_t out)
{
	int32_t id;
	assert_int_equal(atm_graph_add_node(g, name, op, a, n_in, in, 1, &out, &id), ATM_OK);
}

/* put_algo -- conv2's algorithm algo: seconds and workspace bytes */
static void put_algo(atm_profile *p, const atm_graph *g, int algo, double s, int64_t ws)
{
	atm_profile_entry e = {.min_s = s, .median_s = s, .count = 1, .scratch_bytes = ws,
	                       .estimated = true};
	assert_int_equal(atm_profile_put_algo(p, g, CONV2, 0, algo, &e), ATM_OK);
}

static int setup(void **state)
{
	static struct fix f;
	assert_int_equal(atm_graph_new(&f.g, "algos"), ATM_OK);
	atm_graph *g = f.g;
	int32_t x = t4(g, "x", 1, 4, 8, 8, ATM_KIND_INPUT), w1 = t4(g, "w1", 4, 4, 3, 3, ATM_KIND_PARAM);
	int32_t w2 = t4(g, "w2", 4, 4, 5, 5, ATM_KIND_PARAM);
	int32_t a = t4(g, "a", 1, 4, 8, 8, ATM_KIND_ACTIVATION), b = t4(g, "b", 1, 4, 8, 8, ATM_KIND_ACTIVATION);
	int32_t c = t4(g, "c", 1, 4, 8, 8, ATM_KIND_ACTIVATION), d = t4(g, "d", 1, 4, 8, 8, ATM_KIND_ACTIVATION);
	int32_t e = t4(g, "e", 1, 4, 8, 8, ATM_KIND_ACTIVATION), o = t4(g, "f", 1, 4, 8, 8, ATM_KIND_OUTPUT);
	atm_attrs p1 = {.pad = {1, 1, 1, 1}}, p2 = {.pad = {2, 2, 2, 2}}, none = {0};
	node(g, "conv1", ATM_OP_CONV_FWD, &p1, 2, (int32_t[]){x, w1}, a);
	node(g, "relu1", ATM_OP_RELU_FWD, &none, 1, &a, b);
	node(g, "relu2", ATM_OP_RELU_FWD, &none, 1, &b, c);
	node(g, "conv2", ATM_OP_CONV_FWD, &p2, 2, (int32_t[]){c, w2}, d);
	node(g, "relu3", ATM_OP_RELU_FWD, &none, 1, &d, e);
	node(g, "relu3.bwd", ATM_OP_RELU_BWD, &none, 2, (int32_t[]){a, e}, o);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	assert_int_equal(synth_profile(g, &f.prof), ATM_OK);
	put_algo(f.prof, g, 0, 100e-6, 512);
	put_algo(f.prof, g, 1, 20e-6, 4096);
	put_algo(f.prof, g, 2, 50e-6, 1024);
	put_algo(f.prof, g, 3, 60e-6, 2048);
	put_algo(f.prof, g, 4, 1e-6, (int64_t)512 << 20);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;
	atm_profile_destroy(f->prof);
	atm_graph_destroy(f->g);
	return 0;
}

/* gpu_options -- a GPU's planning with workspaces counted, solved to optimality */
static void gpu_options(atm_opt_options *o, atm_opt_solver s)
{
	atm_opt_options_default(o);
	o->solver = s;
	o->device_only = true;
	o->workspace_in_limit = true;
	o->mip_gap = 0;
	o->time_limit_s = 600; /* a guard: these optima are proved in well under a second */
}

/* expect_conv2 -- plan f's graph at limit with formulation fm and solver s: conv2 runs algo
 * with its workspace reserved in the arena while it runs, within the limit and over no live
 * copy, and the checker agrees with the plan's prediction and with the program's objective;
 * returns the predicted seconds */
static double expect_conv2(const struct fix *f, int64_t limit, atm_opt_formulation fm,
                           atm_opt_solver s, int algo, int64_t ws, bool solved)
{
	atm_opt_options o;
	atm_opt_report rep;
	atm_opt_check_result chk;
	atm_plan *p = NULL;
	atm_schedule *sc = NULL;
	gpu_options(&o, s);
	if (atm_opt_plan(&p, f->g, f->prof, limit, fm, &o, &rep) < 0)
		fail_msg("limit %lld: %s", (long long)limit, atm_errmsg());
	assert_int_equal(atm_plan_algo(p, CONV2), algo);
	assert_int_equal(atm_plan_workspace(p, CONV2), ws);
	/* every other node runs its one algorithm, with the workspace its profile says (none) */
	for (int32_t k = 0; k < atm_graph_n_nodes(f->g); k++)
		if (k != CONV2) {
			assert_int_equal(atm_plan_algo(p, k), 0);
			assert_int_equal(atm_plan_workspace(p, k), 0);
		}
	assert_int_equal(atm_opt_check(p, f->prof, &o, &chk), ATM_OK);
	double pr = atm_plan_info_get(p)->predicted_runtime_s;
	assert_true(fabs(chk.predicted_s - pr) <= 1e-9 * pr);
	const atm_opt_round *last = &rep.rounds[rep.n_rounds - 1];
	if (solved)
		assert_true(last->ilp_objective_s > 0); /* the program priced it */
	if (last->ilp_objective_s >= 0 &&
	    fabs(last->ilp_objective_s - chk.predicted_s) > 1e-9 * (1 + chk.predicted_s))
		fail_msg("checker %.12g s, program %.12g s", chk.predicted_s, last->ilp_objective_s);
	assert_true(chk.fast_peak_bytes <= limit);
	assert_true(chk.fast_arena_bytes <= limit);
	/* the workspace block: in the arena, at conv2, clear of every copy live then */
	assert_int_equal(atm_schedule_new(&sc, p), ATM_OK);
	int64_t off[64], end[64];
	int n_live = 0, seen = 0;
	for (int32_t i = 0; i < atm_schedule_n_setup(sc) + atm_schedule_n_events(sc); i++) {
		const atm_event *ev = i < atm_schedule_n_setup(sc)
		                      ? atm_schedule_setup(sc, i)
		                      : atm_schedule_event(sc, i - atm_schedule_n_setup(sc));
		if (ev->kind == ATM_EV_KERNEL && ev->node == CONV2) {
			seen++;
			assert_int_equal(ev->workspace_bytes, ws);
			assert_true(ev->offset >= 0 && ev->offset % ATM_ARENA_ALIGN == 0);
			assert_true(ev->offset + ws <= atm_arena_align_down(limit));
			for (int j = 0; j < n_live; j++)
				assert_true(ev->offset + ws <= off[j] || end[j] <= ev->offset);
		} else if (ev->kind == ATM_EV_KERNEL) {
			assert_int_equal(ev->workspace_bytes, 0);
		}
		if ((ev->kind != ATM_EV_ALLOC && ev->kind != ATM_EV_FREE) || ev->loc != ATM_LOC_FAST)
			continue;
		int64_t len = atm_arena_align_up(atm_graph_tensor(f->g, ev->tensor)->bytes);
		if (ev->kind == ATM_EV_ALLOC) {
			assert_true(n_live < 64);
			off[n_live] = ev->offset;
			end[n_live++] = ev->offset + len;
			continue;
		}
		for (int j = 0; j < n_live; j++)
			if (off[j] == ev->offset) {
				off[j] = off[--n_live];
				end[j] = end[n_live];
				break;
			}
	}
	assert_int_equal(seen, 1);
	atm_schedule_destroy(sc);
	/* the plan file keeps the workspace */
	char *text = NULL;
	atm_plan *q = NULL;
	assert_int_equal(atm_plan_dump(p, &text), ATM_OK);
	assert_non_null(strstr(text, "\"workspace_bytes\""));
	assert_int_equal(atm_plan_load_buffer(&q, f->g, text, strlen(text), "plan"), ATM_OK);
	assert_int_equal(atm_plan_workspace(q, CONV2), ws);
	assert_int_equal(atm_plan_algo(q, CONV2), algo);
	free(text);
	atm_plan_destroy(q);
	atm_plan_destroy(p);
	return chk.predicted_s;
}

/* test_algos_roomy_limit_fastest -- with room to spare conv2 runs its fastest algorithm, not the
 * faster one whose workspace is over ATM_GPU_WORKSPACE_BYTES */
static void test_algos_roomy_limit_fastest(void **state)
{
	struct fix *f = *state;
	for (int fm = ATM_OPT_SYNCHRONOUS; fm <= ATM_OPT_ASYNCHRONOUS; fm++)
		expect_conv2(f, 1 << 20, (atm_opt_formulation)fm, solver, 1, 4096, false);
}

/* test_algos_tight_limit_smaller_workspace -- where the fastest algorithm's workspace cannot fit
 * beside conv2's operands, the fastest of those that can is chosen (not the dominated one, not
 * the default) */
static void test_algos_tight_limit_smaller_workspace(void **state)
{
	struct fix *f = *state;
	/* 3648 + 4096 > 5000 >= 3648 + 1024 */
	for (int fm = ATM_OPT_SYNCHRONOUS; fm <= ATM_OPT_ASYNCHRONOUS; fm++)
		expect_conv2(f, 5000, (atm_opt_formulation)fm, solver, 2, 1024, false);
	/* only the smallest fits: 3648 + 512 */
	expect_conv2(f, AT_CONV2 + 512, ATM_OPT_SYNCHRONOUS, solver, 0, 512, false);
}

/* test_algos_evicts_for_workspace -- the fastest algorithm fits only with tensor a in host
 * memory around conv2: the program trades its copies (under 1 us) against the 30 us the faster
 * algorithm saves, which the heuristic's seed (the fastest that fits beside its placement)
 * does not */
static void test_algos_evicts_for_workspace(void **state)
{
	struct fix *f = *state;
	/* 3648 + 4096 fits, 3648 + 4096 + 1024 (a) does not */
	double t = expect_conv2(f, AT_CONV2 + 4096 + 512, ATM_OPT_SYNCHRONOUS, solver, 1, 4096, true);
	/* one step: every kernel at its synthetic time, conv2 at 20 us, and a's two copies */
	assert_true(t > 20e-6 && t < 50e-6);
}

/* test_algos_least_limit_counts_smallest_workspace -- the least limit, and the error below it,
 * count the smallest workspace of conv2's algorithms, not the fastest's, not none */
static void test_algos_least_limit_counts_smallest_workspace(void **state)
{
	struct fix *f = *state;
	atm_opt_options o;
	int64_t need, bare;
	int32_t k;
	atm_plan *p = NULL;
	gpu_options(&o, solver);
	assert_int_equal(atm_opt_min_limit(f->g, &o, &bare, &k), ATM_OK);
	assert_int_equal(bare, AT_CONV2);
	assert_int_equal(k, CONV2);
	assert_int_equal(atm_opt_min_limit_profiled(f->g, f->prof, &o, &need, &k), ATM_OK);
	assert_int_equal(need, AT_CONV2 + 512);
	assert_int_equal(k, CONV2);
	for (int fm = ATM_OPT_STATIC; fm <= ATM_OPT_ASYNCHRONOUS; fm++) {
		assert_int_equal(atm_opt_plan(&p, f->g, f->prof, need - 1, (atm_opt_formulation)fm, &o,
		                              NULL), ATM_E_INFEASIBLE);
		assert_null(p);
		const char *msg = atm_errmsg();
		if (!strstr(msg, "the smallest limit that could work is 4160 bytes") ||
		    !strstr(msg, "smallest workspace of the kernel's algorithms") ||
		    !strstr(msg, "'conv2'"))
			fail_msg("%s", msg);
	}
	/* the baselines refuse it the same way */
	assert_int_equal(atm_opt_plan(&p, f->g, f->prof, need - 1, ATM_OPT_VDNN, &o, NULL),
	                 ATM_E_INFEASIBLE);
	assert_non_null(strstr(atm_errmsg(), "4160 bytes"));
}

/* test_algos_not_counted_fastest_outside -- without workspace_in_limit (the simulated GPU) the
 * fastest profiled algorithm runs and nothing is reserved in the arena, whatever the limit */
static void test_algos_not_counted_fastest_outside(void **state)
{
	struct fix *f = *state;
	atm_opt_options o;
	atm_plan *p = NULL;
	gpu_options(&o, solver);
	o.workspace_in_limit = false;
	if (atm_opt_plan(&p, f->g, f->prof, AT_CONV2 + 1024, ATM_OPT_SYNCHRONOUS, &o, NULL) < 0)
		fail_msg("%s", atm_errmsg());
	assert_int_equal(atm_plan_algo(p, CONV2), 1);
	for (int32_t k = 0; k < atm_graph_n_nodes(f->g); k++)
		assert_int_equal(atm_plan_workspace(p, k), 0);
	atm_plan_destroy(p);
}

/* test_algos_solvers_agree -- GLPK and CBC choose the same algorithms at the same cost */
static void test_algos_solvers_agree(void **state)
{
	struct fix *f = *state;
	atm_opt_solver cbc;
	if (atm_opt_solver_resolve(ATM_OPT_SOLVER_CBC, &cbc) < 0) {
		atm_err_clear();
		skip();
	}
	const int64_t limits[3] = {5000, AT_CONV2 + 512, AT_CONV2 + 4096 + 512};
	const int algos[3] = {2, 0, 1};
	const int64_t ws[3] = {1024, 512, 4096};
	for (int i = 0; i < 3; i++) {
		double a = expect_conv2(f, limits[i], ATM_OPT_ASYNCHRONOUS, ATM_OPT_SOLVER_GLPK, algos[i],
		                        ws[i], false);
		double b = expect_conv2(f, limits[i], ATM_OPT_ASYNCHRONOUS, ATM_OPT_SOLVER_CBC, algos[i],
		                        ws[i], false);
		assert_true(fabs(a - b) <= 1e-9 * a);
	}
}

/* all_fast_at -- the fast bytes of the all-fast plan at conv2 and at its peak */
static void all_fast_at(const struct fix *f, int64_t *at, int64_t *peak)
{
	atm_plan *p = NULL;
	atm_schedule *s = NULL;
	assert_int_equal(atm_plan_uniform(&p, f->g, ATM_LOC_FAST), ATM_OK);
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	*at = atm_schedule_fast_bytes_at(s, CONV2);
	*peak = atm_schedule_stats_get(s)->fast_peak_bytes;
	atm_schedule_destroy(s);
	atm_plan_destroy(p);
}

/* test_algos_baseline_fits_workspace -- a baseline's plan runs each kernel's fastest algorithm
 * whose workspace fits beside its tensors, and reserves it */
static void test_algos_baseline_fits_workspace(void **state)
{
	struct fix *f = *state;
	atm_opt_options o;
	atm_opt_check_result chk;
	atm_plan *p = NULL;
	int64_t at, peak;
	gpu_options(&o, solver);
	all_fast_at(f, &at, &peak);
	assert_int_equal(atm_opt_plan(&p, f->g, f->prof, 0, ATM_OPT_ALL_FAST, &o, NULL), ATM_OK);
	assert_int_equal(atm_plan_algo(p, CONV2), 1);
	assert_int_equal(atm_plan_workspace(p, CONV2), 4096);
	assert_int_equal(atm_opt_check(p, f->prof, &o, &chk), ATM_OK);
	atm_plan_destroy(p);
	p = NULL;
	/* first touch keeps everything on the device here, with room for algorithm 2 alone */
	int64_t limit = at + 1024 > peak ? at + 1024 : peak;
	assert_true(limit < at + 4096);
	assert_int_equal(atm_opt_plan(&p, f->g, f->prof, limit, ATM_OPT_NUMA, &o, NULL), ATM_OK);
	assert_int_equal(atm_plan_algo(p, CONV2), 2);
	assert_int_equal(atm_plan_workspace(p, CONV2), 1024);
	assert_int_equal(atm_opt_check(p, f->prof, &o, &chk), ATM_OK);
	assert_true(chk.fast_arena_bytes <= limit);
	atm_plan_destroy(p);
}

/* test_algos_schedule_reserves -- a plan's workspace is a block of the arena at its kernel
 * alone, held to the limit: one byte short is refused, naming the node */
static void test_algos_schedule_reserves(void **state)
{
	struct fix *f = *state;
	atm_plan *p = NULL;
	atm_schedule *s = NULL;
	atm_opt_options o;
	atm_opt_check_result chk;
	int64_t at, peak;
	gpu_options(&o, solver);
	all_fast_at(f, &at, &peak);
	assert_int_equal(atm_plan_uniform(&p, f->g, ATM_LOC_FAST), ATM_OK);
	assert_int_equal(atm_plan_set_workspace(p, CONV2, -1), ATM_E_INPUT);
	assert_int_equal(atm_plan_set_workspace(p, CONV2, 4096), ATM_OK);
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	/* the copies' figures are the same; the arena holds the block beside them */
	assert_int_equal(atm_schedule_stats_get(s)->fast_peak_bytes, peak);
	assert_int_equal(atm_schedule_fast_bytes_at(s, CONV2), at);
	assert_true(atm_schedule_stats_get(s)->fast_arena_bytes >= at + 4096);
	atm_schedule_destroy(s);
	s = NULL;
	assert_true(at + 4096 > peak);
	atm_plan_info_of(p)->fast_limit_bytes = at + 4096;
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	assert_true(atm_schedule_stats_get(s)->fast_arena_bytes <= at + 4096);
	atm_schedule_destroy(s);
	s = NULL;
	atm_plan_info_of(p)->fast_limit_bytes = at + 4096 - 1;
	assert_int_equal(atm_schedule_new(&s, p), ATM_E_INFEASIBLE);
	assert_null(s);
	if (!strstr(atm_errmsg(), "'conv2'") || !strstr(atm_errmsg(), "workspace"))
		fail_msg("%s", atm_errmsg());
	/* the checker finds a plan that reserves less than the chosen algorithm needs */
	atm_plan_info_of(p)->fast_limit_bytes = 1 << 20;
	assert_int_equal(atm_plan_set_algo(p, CONV2, 1), ATM_OK);
	assert_int_equal(atm_opt_check(p, f->prof, &o, &chk), ATM_OK);
	assert_int_equal(atm_plan_set_workspace(p, CONV2, 1024), ATM_OK);
	assert_int_equal(atm_opt_check(p, f->prof, &o, &chk), ATM_E_INFEASIBLE);
	assert_non_null(strstr(atm_errmsg(), "does not reserve"));
	atm_plan_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_algos_roomy_limit_fastest),
		cmocka_unit_test(test_algos_tight_limit_smaller_workspace),
		cmocka_unit_test(test_algos_evicts_for_workspace),
		cmocka_unit_test(test_algos_least_limit_counts_smallest_workspace),
		cmocka_unit_test(test_algos_not_counted_fastest_outside),
		cmocka_unit_test(test_algos_baseline_fits_workspace),
		cmocka_unit_test(test_algos_schedule_reserves),
	};
	const struct CMUnitTest both[] = {
		cmocka_unit_test(test_algos_solvers_agree),
	};
	int failed = per_solver_run(tests, sizeof tests / sizeof tests[0], &solver, setup, teardown);
	solver = ATM_OPT_SOLVER_GLPK;
	failed += cmocka_run_group_tests_name("solvers", both, setup, teardown);
	return failed;
}
