/* test_job.c -- the job library's calls that the command line does not reach: comparisons in turns */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "atm_job.h"
#include "atm_zoo.h"

static char dir[] = "/tmp/atm_job_XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[64];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static atm_graph *tiny(const char *model)
{
	atm_graph *g = NULL;
	atm_zoo_opts zo = {.batch = 2};
	assert_int_equal(atm_zoo_build(&g, model, &zo), ATM_OK);
	return g;
}

/* opts -- a quiet job of one measured step a turn after one warm-up, results into name */
static atm_job_opts opts(const char *name, char *path, size_t len)
{
	atm_job_opts o;
	atm_job_opts_default(&o);
	o.iters = 1;
	o.quiet = true;
	if (name) {
		snprintf(path, len, "%s/%s", dir, name);
		o.results_path = path;
	}
	return o;
}

static json_t *load(const char *path)
{
	json_error_t e;
	json_t *d = json_load_file(path, 0, &e);
	if (!d)
		fail_msg("%s: %s", path, e.text);
	return d;
}

static const atm_job_placement builtins[3] = {
	{.placement = "all-fast"}, {.placement = "all-slow"}, {.placement = "random"}};

/* compare_builtins -- all-fast, all-slow and random of tiny_mlp compared in 3 turns,
 * interleaved as asked: every placement ran once a turn, its place rotating, all trained to
 * the same weights, and the results hold the three runs under one comparison id */
static void compare_builtins(atm_job_interleave how, const char *name)
{
	atm_graph *g = tiny("tiny_mlp");
	char path[128];
	atm_job_opts o = opts("cmp.json", path, sizeof path);
	atm_job_compare_opts co = {.turns = 3, .interleave = how};
	atm_job_compare *c = NULL;
	assert_int_equal(atm_job_compare_new(&c, g, &o, builtins, 3, &co), ATM_OK);
	assert_int_equal(atm_job_compare_plan(c), ATM_OK);
	assert_int_equal(atm_job_compare_run(c), ATM_OK);
	assert_string_equal(atm_job_compare_interleave(c), name);
	assert_int_equal(atm_job_compare_all_fast(c), 0);
	const char *checksum = atm_job_exec_result(atm_job_compare_job(c, 0))->weights_checksum;
	for (int i = 0; i < 3; i++) {
		const atm_job_compared *m = atm_job_compare_get(c, i);
		assert_int_equal(m->left_out, ATM_OK);
		assert_int_equal(m->n_turns, 3);
		for (int t = 0; t < 3; t++) {
			assert_true(m->turn_s[t] > 0);
			/* turn t runs the list rotated by t */
			assert_int_equal(m->turn_position[t], (i - t + 3) % 3);
		}
		assert_true(m->median_s > 0);
		/* built-in placements have no prediction; the measured slowdown is there */
		assert_true(m->predicted_slowdown < 0);
		assert_true(m->measured_slowdown > 0 && m->slowdown_min <= m->measured_slowdown &&
		            m->measured_slowdown <= m->slowdown_max);
		const atm_exec_result *r = atm_job_exec_result(atm_job_compare_job(c, i));
		assert_string_equal(r->weights_checksum, checksum);
		/* by step: one warm-up and three counted steps at least (a disturbed round adds one);
		 * by turn, each turn's fresh executor: a warm-up and a counted step */
		if (how == ATM_JOB_INTERLEAVE_STEP)
			assert_true(r->n_losses >= 4);
		else
			assert_int_equal(r->n_losses, 2);
	}
	assert_true(atm_job_compare_get(c, 0)->measured_slowdown == 1);
	assert_int_equal(atm_job_compare_write_results(c), ATM_OK);
	json_t *d = load(path), *runs = json_object_get(d, "runs");
	assert_int_equal(json_array_size(runs), 3);
	for (size_t i = 0; i < 3; i++) {
		json_t *r = json_array_get(runs, i);
		assert_string_equal(json_string_value(json_object_get(r, "comparison")),
		                    atm_job_compare_id(c));
		assert_string_equal(json_string_value(json_object_get(r, "interleave")), name);
		assert_int_equal(json_integer_value(json_object_get(r, "turns")), 3);
		assert_int_equal(json_array_size(json_object_get(r, "actual_runtimes")), 3);
		assert_int_equal(json_integer_value(json_object_get(r, "comparison_index")), (int)i);
		assert_string_equal(json_string_value(json_object_get(r, "weights_checksum")), checksum);
		assert_float_equal(json_number_value(json_object_get(r, "actual_runtime")),
		                   atm_job_compare_get(c, (int)i)->median_s, 1e-9);
		assert_true(json_is_null(json_object_get(r, "predicted_slowdown")));
		assert_true(json_number_value(json_object_get(r, "measured_slowdown")) > 0);
	}
	json_decref(d);
	/* a comparison runs once */
	assert_int_equal(atm_job_compare_run(c), ATM_E_USAGE);
	atm_job_compare_destroy(c);
	atm_graph_destroy(g);
	unlink(path);
}

static void test_job_compare_by_step(void **state)
{
	(void)state;
	compare_builtins(ATM_JOB_INTERLEAVE_STEP, "step");
}

static void test_job_compare_by_turn(void **state)
{
	(void)state;
	compare_builtins(ATM_JOB_INTERLEAVE_TURN, "turn");
}

/* Set after the first turn, as Ctrl-C would be. */
static volatile sig_atomic_t stop;

static void stop_after_first_turn(void *arg, int turn)
{
	*(int *)arg = turn + 1;
	stop = 1;
}

/* test_job_compare_interrupted -- a stop in the middle ends the comparison with
 * ATM_E_INTERRUPTED, by step and by turn, and nothing is written */
static void test_job_compare_interrupted(void **state)
{
	(void)state;
	atm_graph *g = tiny("tiny_mlp");
	char path[128];
	for (int how = ATM_JOB_INTERLEAVE_STEP; how <= ATM_JOB_INTERLEAVE_TURN; how++) {
		atm_job_opts o = opts("stopped.json", path, sizeof path);
		o.stop = &stop;
		stop = 0;
		int turns_done = 0;
		atm_job_compare_opts co = {.turns = 4, .interleave = how,
		                           .on_turn = stop_after_first_turn, .arg = &turns_done};
		atm_job_compare *c = NULL;
		assert_int_equal(atm_job_compare_new(&c, g, &o, builtins, 3, &co), ATM_OK);
		assert_int_equal(atm_job_compare_plan(c), ATM_OK);
		assert_int_equal(atm_job_compare_run(c), ATM_E_INTERRUPTED);
		assert_int_equal(turns_done, 1);
		assert_int_equal(atm_job_compare_write_results(c), ATM_E_USAGE);
		assert_int_not_equal(access(path, F_OK), 0);
		atm_job_compare_destroy(c);
	}
	atm_graph_destroy(g);
}

/* test_job_compare_infeasible_left_out -- a formulation whose plan cannot fit the limit is left
 * out with its reason and the others are compared; all-fast planned by the optimizer gives the
 * predicted slowdowns */
static void test_job_compare_infeasible_left_out(void **state)
{
	(void)state;
	atm_graph *g = tiny("tiny_mlp");
	char path[128], cache[128];
	atm_job_opts o = opts("infeasible.json", path, sizeof path);
	snprintf(cache, sizeof cache, "%s/profiles.json", dir);
	o.cache = cache;
	/* a simulated GPU's kernels take every operand in device memory: 64 bytes of it is below
	 * what any plan but all-fast needs */
	o.mem.gpu.mode = "sim";
	o.limit_bytes = 64;
	atm_job_placement pl[3] = {{.optimize = true, .formulation = ATM_OPT_ALL_FAST},
	                           {.optimize = true, .formulation = ATM_OPT_SYNCHRONOUS},
	                           {.placement = "managed"}};
	atm_job_compare_opts co = {.turns = 2};
	atm_job_compare *c = NULL;
	if (atm_job_compare_new(&c, g, &o, pl, 3, &co) != ATM_OK)
		fail_msg("%s", atm_errmsg());
	if (atm_job_compare_plan(c) != ATM_OK)
		fail_msg("%s", atm_errmsg());
	const atm_job_compared *sync = atm_job_compare_get(c, 1);
	assert_int_equal(sync->left_out, ATM_E_INFEASIBLE);
	assert_non_null(sync->why);
	assert_null(atm_job_compare_job(c, 1));
	assert_int_equal(atm_job_compare_run(c), ATM_OK);
	const atm_job_compared *fast = atm_job_compare_get(c, 0);
	assert_true(fast->predicted_slowdown == 1);
	assert_true(fast->measured_slowdown == 1);
	assert_true(atm_job_compare_get(c, 2)->measured_slowdown > 0);
	assert_int_equal(atm_job_compare_write_results(c), ATM_OK);
	json_t *d = load(path), *runs = json_object_get(d, "runs");
	assert_int_equal(json_array_size(runs), 2);
	json_t *managed = json_array_get(runs, 1);
	assert_string_equal(json_string_value(json_object_get(managed, "formulation")), "managed");
	assert_int_equal(json_integer_value(json_object_get(managed, "comparison_index")), 2);
	assert_int_equal(json_integer_value(json_object_get(managed, "comparison_size")), 2);
	json_decref(d);
	atm_job_compare_destroy(c);
	/* nothing feasible at all */
	pl[0].formulation = ATM_OPT_STATIC;
	assert_int_equal(atm_job_compare_new(&c, g, &o, pl, 2, &co), ATM_OK);
	assert_int_equal(atm_job_compare_plan(c), ATM_E_INFEASIBLE);
	assert_non_null(strstr(atm_errmsg(), "none of the 2 placements"));
	atm_job_compare_destroy(c);
	atm_graph_destroy(g);
}

/* test_job_compare_bad_lists -- lists that cannot be compared are refused before any work,
 * naming what is wrong */
static void test_job_compare_bad_lists(void **state)
{
	(void)state;
	atm_graph *g = tiny("tiny_mlp"), *other = tiny("tiny_cnn");
	atm_job_compare *c = NULL;
	atm_job_opts o = opts(NULL, NULL, 0);
	atm_job_compare_opts co = {.turns = 2};
	atm_job_placement twice[2] = {{.optimize = true, .formulation = ATM_OPT_ALL_FAST},
	                              {.placement = "all-fast"}};
	assert_int_equal(atm_job_compare_new(&c, g, &o, twice, 2, &co), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "'all-fast' is listed twice"));
	assert_null(c);
	atm_job_placement managed[2] = {{.placement = "managed"}, {.placement = "all-fast"}};
	assert_int_equal(atm_job_compare_new(&c, g, &o, managed, 2, &co), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "managed is the cudaMallocManaged baseline"));
	atm_job_placement mixed[2] = {{.placement = "managed"}, {.placement = "all-slow"}};
	o.mem.gpu.mode = "sim";
	assert_int_equal(atm_job_compare_new(&c, g, &o, mixed, 2, &co), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "mixes managed, which needs a GPU, with all-slow"));
	atm_job_placement slow[2] = {{.optimize = true, .formulation = ATM_OPT_2LM},
	                             {.placement = "all-fast"}};
	assert_int_equal(atm_job_compare_new(&c, g, &o, slow, 2, &co), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "2lm leaves kernels' operands in slow memory"));
	o.mem.gpu.mode = "cuda";
	co.interleave = ATM_JOB_INTERLEAVE_STEP;
	assert_int_equal(atm_job_compare_new(&c, g, &o, managed, 2, &co), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "interleave by turn"));
	o.mem.gpu.mode = NULL;
	co.interleave = ATM_JOB_INTERLEAVE_AUTO;
	co.turns = -1;
	assert_int_equal(atm_job_compare_new(&c, g, &o, builtins, 2, &co), ATM_E_USAGE);
	co.turns = 2;
	assert_int_equal(atm_job_compare_new(&c, g, &o, builtins, 0, &co), ATM_E_USAGE);
	/* a plan file of another graph is read, and refused, now */
	char plan[128];
	atm_plan *p = NULL;
	snprintf(plan, sizeof plan, "%s/other.plan.json", dir);
	assert_int_equal(atm_plan_uniform(&p, other, ATM_LOC_FAST), ATM_OK);
	assert_int_equal(atm_plan_save(p, plan), ATM_OK);
	atm_plan_destroy(p);
	atm_job_placement file[2] = {{.placement = "all-fast"}, {.placement = plan}};
	assert_int_equal(atm_job_compare_new(&c, g, &o, file, 2, &co), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), plan));
	assert_null(c);
	atm_graph_destroy(other);
	atm_graph_destroy(g);
}

/* test_job_compare_without_all_fast -- a comparison without all-fast has no slowdowns and no
 * drift: its runs record neither (the drift null) */
static void test_job_compare_without_all_fast(void **state)
{
	(void)state;
	atm_graph *g = tiny("tiny_mlp");
	char path[128];
	atm_job_opts o = opts("nofast.json", path, sizeof path);
	atm_job_compare_opts co = {.turns = 2};
	atm_job_compare *c = NULL;
	assert_int_equal(atm_job_compare_new(&c, g, &o, builtins + 1, 2, &co), ATM_OK);
	assert_int_equal(atm_job_compare_plan(c), ATM_OK);
	assert_int_equal(atm_job_compare_run(c), ATM_OK);
	assert_int_equal(atm_job_compare_all_fast(c), -1);
	for (int i = 0; i < 2; i++) {
		const atm_job_compared *m = atm_job_compare_get(c, i);
		assert_true(m->predicted_slowdown < 0 && m->measured_slowdown < 0);
		assert_true(m->profile_drift <= 0);
	}
	assert_int_equal(atm_job_compare_write_results(c), ATM_OK);
	json_t *d = load(path), *runs = json_object_get(d, "runs");
	assert_int_equal(json_array_size(runs), 2);
	for (size_t i = 0; i < 2; i++) {
		json_t *r = json_array_get(runs, i);
		assert_null(json_object_get(r, "predicted_slowdown"));
		assert_null(json_object_get(r, "measured_slowdown"));
		assert_null(json_object_get(r, "measured_slowdown_range"));
		assert_null(json_object_get(r, "slowdown_error"));
		assert_true(json_is_null(json_object_get(r, "profile_drift")));
		assert_true(json_is_null(json_object_get(r, "profile_calibration")));
	}
	json_decref(d);
	atm_job_compare_destroy(c);
	atm_graph_destroy(g);
	unlink(path);
}

/* test_job_drift_note -- the drift is said past 10% either way, with the date and both steps,
 * and not within 10% or when unknown */
static void test_job_drift_note(void **state)
{
	(void)state;
	atm_profile_calibration cal = {.step_s = 0.5, .measured_at = "2025-01-31T12:00:00Z"};
	char buf[512];
	assert_true(atm_job_drift_note(1.2, &cal, buf, sizeof buf));
	assert_non_null(strstr(buf, "this machine is running 20% slower than when it was profiled "
	                            "(2025-01-31T12:00:00Z)"));
	assert_non_null(strstr(buf, "takes 0.6 s, 0.5 s then"));
	assert_non_null(strstr(buf, "its kernels and copies take about as much"));
	assert_non_null(strstr(buf, "its emulated waits do not: a comparison's predictions count both"));
	assert_true(atm_job_drift_note(0.8, &cal, buf, sizeof buf));
	assert_non_null(strstr(buf, "20% faster"));
	const double quiet[] = {1, 1.05, 0.95, 1.0999, 0.9001, 0, -1, NAN};
	for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++) {
		assert_false(atm_job_drift_note(quiet[i], &cal, buf, sizeof buf));
		assert_string_equal(buf, "");
	}
	assert_false(atm_job_drift_note(1.5, NULL, buf, sizeof buf));
}

/* test_job_ranks_graph_alone -- a graph that averages over ranks, in one process: refused
 * before anything is profiled (its allreduce kernels would wait for ranks that are not there),
 * unless an estimated profile only prices its plan */
static void test_job_ranks_graph_alone(void **state)
{
	(void)state;
	atm_graph *g = tiny("tiny_mlp"), *g2 = NULL;
	assert_int_equal(atm_graph_with_allreduce(g, 2, 0, &g2), ATM_OK);
	char path[128], cache[128];
	atm_job_opts o = opts("ranks.json", path, sizeof path);
	snprintf(cache, sizeof cache, "%s/ranks-profiles.json", dir);
	o.cache = cache;
	o.results_path = NULL;
	o.optimize = true;
	o.formulation = ATM_OPT_SYNCHRONOUS;
	o.ratio_slow = 4;
	o.ratio_fast = 1;
	atm_job *j = (atm_job *)1;
	assert_int_equal(atm_job_new(&j, g2, &o), ATM_E_UNSUPPORTED);
	assert_null(j);
	assert_non_null(strstr(atm_errmsg(), "averages its gradients over 2 ranks"));
	assert_non_null(strstr(atm_errmsg(), "mpirun -np 2"));
	assert_int_equal(access(cache, F_OK), -1); /* nothing profiled */
	o.estimate = true;
	assert_int_equal(atm_job_new(&j, g2, &o), ATM_OK);
	atm_job_destroy(j);
	atm_graph_destroy(g2);
	atm_graph_destroy(g);
}

/* test_job_drift_recorded -- the optimizer's all-fast measures the drift against the profile's
 * calibration step of the graph, and a comparison with all-fast gives every placement the same
 * one; the results record both */
static void test_job_drift_recorded(void **state)
{
	(void)state;
	atm_graph *g = tiny("tiny_mlp");
	char path[128], cache[128];
	atm_job_opts o = opts("drift.json", path, sizeof path);
	snprintf(cache, sizeof cache, "%s/drift-profiles.json", dir);
	o.cache = cache;
	o.optimize = true;
	o.formulation = ATM_OPT_ALL_FAST;
	atm_job *j = NULL;
	assert_int_equal(atm_job_new(&j, g, &o), ATM_OK);
	assert_int_equal(atm_job_run(j), ATM_OK);
	/* the profile was calibrated by this job's profiling */
	const atm_profile_calibration *cal = atm_job_calibration(j);
	assert_non_null(cal);
	assert_true(cal->step_s > 0 && atm_utc_valid(cal->measured_at));
	double drift = atm_job_profile_drift(j);
	assert_float_equal(drift, atm_job_exec_result(j)->actual_runtime_s / cal->step_s, 1e-12);
	json_t *d = load(path), *r = json_array_get(json_object_get(d, "runs"), 0);
	assert_float_equal(json_number_value(json_object_get(r, "profile_drift")), drift, 1e-9);
	json_t *pc = json_object_get(r, "profile_calibration");
	assert_float_equal(json_number_value(json_object_get(pc, "all_fast_step_s")), cal->step_s,
	                   1e-15);
	assert_string_equal(json_string_value(json_object_get(pc, "measured_at")), cal->measured_at);
	json_decref(d);
	atm_job_destroy(j);
	/* another placement alone measures no all-fast step: its drift is unknown */
	o.formulation = ATM_OPT_ALL_SLOW;
	o.results_path = NULL;
	assert_int_equal(atm_job_new(&j, g, &o), ATM_OK);
	assert_int_equal(atm_job_run(j), ATM_OK);
	assert_non_null(atm_job_calibration(j));
	assert_true(atm_job_profile_drift(j) <= 0);
	atm_job_destroy(j);
	/* a comparison: all-fast's median step over the calibration's, every placement's */
	o.results_path = path;
	atm_job_placement pl[2] = {{.placement = "all-slow"},
	                           {.optimize = true, .formulation = ATM_OPT_ALL_FAST}};
	atm_job_compare_opts co = {.turns = 2};
	atm_job_compare *c = NULL;
	assert_int_equal(atm_job_compare_new(&c, g, &o, pl, 2, &co), ATM_OK);
	assert_int_equal(atm_job_compare_plan(c), ATM_OK);
	assert_int_equal(atm_job_compare_run(c), ATM_OK);
	cal = atm_job_calibration(atm_job_compare_job(c, 1));
	assert_non_null(cal);
	drift = atm_job_compare_get(c, 1)->median_s / cal->step_s;
	assert_float_equal(atm_job_compare_get(c, 0)->profile_drift, drift, 1e-12);
	assert_float_equal(atm_job_compare_get(c, 1)->profile_drift, drift, 1e-12);
	assert_int_equal(atm_job_compare_write_results(c), ATM_OK);
	d = load(path);
	for (size_t i = 0; i < 2; i++) {
		r = json_array_get(json_object_get(d, "runs"), i);
		assert_float_equal(json_number_value(json_object_get(r, "profile_drift")), drift, 1e-9);
		assert_true(json_is_object(json_object_get(r, "profile_calibration")));
	}
	json_decref(d);
	atm_job_compare_destroy(c);
	atm_graph_destroy(g);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_compare_by_step),
		cmocka_unit_test(test_job_compare_by_turn),
		cmocka_unit_test(test_job_compare_interrupted),
		cmocka_unit_test(test_job_compare_infeasible_left_out),
		cmocka_unit_test(test_job_compare_bad_lists),
		cmocka_unit_test(test_job_compare_without_all_fast),
		cmocka_unit_test(test_job_drift_note),
		cmocka_unit_test(test_job_drift_recorded),
		cmocka_unit_test(test_job_ranks_graph_alone),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
