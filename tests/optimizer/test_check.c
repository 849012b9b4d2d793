/* test_check.c -- the plan checker: step times worked out by hand, overlapped copies, stalls, the memory proof */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_optimizer.h"
#include "common/small_graph.h"
#include "optimizer/synth.h"

struct fix {
	struct small s;
	atm_profile *prof;
};

static int setup(void **state)
{
	static struct fix f;
	small_build(&f.s);
	if (synth_profile(f.s.g, &f.prof) < 0)
		return -1;
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;
	atm_profile_destroy(f->prof);
	atm_graph_destroy(f->s.g);
	return 0;
}

/* all_fast_s -- the step with every operand fast, summed here from the synthetic times */
static double all_fast_s(const atm_graph *g)
{
	double t = 0;
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++)
		t += synth_time(g, k, 0);
	return t;
}

static void expect_close(double got, double want)
{
	if (fabs(got - want) > 1e-12 * (1 + fabs(want)))
		fail_msg("got %.15g s, want %.15g s", got, want);
}

static void test_check_all_fast_is_sum_of_kernels(void **state)
{
	struct fix *f = *state;
	atm_plan *p = NULL;
	atm_opt_check_result c;
	assert_int_equal(atm_plan_uniform(&p, f->s.g, ATM_LOC_FAST), ATM_OK);
	assert_int_equal(atm_opt_check(p, f->prof, NULL, &c), ATM_OK);
	expect_close(c.predicted_s, all_fast_s(f->s.g));
	expect_close(c.kernel_s, c.all_fast_kernel_s);
	assert_int_equal(c.n_moves, 0);
	assert_int_equal(c.fast_peak_bytes, 164);
	assert_int_equal(c.fast_peak_node, 5);
	atm_plan_destroy(p);
}

/* test_check_sync_moves_block -- r written to slow after relu, read there by the loss, fetched
 * back before relu.bwd: the loss runs with r slow and both copies add their time */
static void test_check_sync_moves_block(void **state)
{
	struct fix *f = *state;
	const atm_graph *g = f->s.g;
	atm_plan *p = NULL;
	atm_opt_check_result c;
	assert_int_equal(atm_plan_new(&p, g), ATM_OK);
	assert_int_equal(atm_plan_add_move(p, &(atm_move){f->s.r, ATM_LOC_SLOW, 1, 0, false}), ATM_OK);
	assert_int_equal(atm_plan_add_move(p, &(atm_move){f->s.r, ATM_LOC_FAST, 3, 0, false}), ATM_OK);
	assert_int_equal(atm_opt_check(p, f->prof, NULL, &c), ATM_OK);
	/* node 2 (loss) reads r, its input 0, from slow memory */
	double want = all_fast_s(g) - synth_time(g, 2, 0) + synth_time(g, 2, 1u << 0);
	double moves = 12 / 2e9 + 12 / 4e9;
	expect_close(c.predicted_s, want + moves);
	expect_close(c.sync_move_s, moves);
	assert_int_equal(c.n_moves, 2);
	assert_int_equal(c.n_async_moves, 0);
	atm_plan_destroy(p);
}

/* labels_prefetched -- labels at home in slow memory, fetched while fc and relu run */
static atm_plan *labels_prefetched(struct fix *f)
{
	atm_plan *p = NULL;
	assert_int_equal(atm_plan_new(&p, f->s.g), ATM_OK);
	assert_int_equal(atm_plan_set_location(p, f->s.labels, ATM_LOC_SLOW), ATM_OK);
	assert_int_equal(atm_plan_add_move(p, &(atm_move){f->s.labels, ATM_LOC_FAST, -1, 2, true}),
	                 ATM_OK);
	return p;
}

/* test_check_async_copy_hides_under_kernels -- a fast copy overlapping two kernels costs nothing */
static void test_check_async_copy_hides_under_kernels(void **state)
{
	struct fix *f = *state;
	atm_plan *p = labels_prefetched(f);
	atm_opt_check_result c;
	assert_int_equal(atm_opt_check(p, f->prof, NULL, &c), ATM_OK);
	expect_close(c.predicted_s, all_fast_s(f->s.g));
	expect_close(c.async_wait_s, 0);
	assert_int_equal(c.n_async_moves, 1);
	atm_plan_destroy(p);
}

/* test_check_async_copy_stalls -- a copy longer than the kernels it overlaps: the loss waits */
static void test_check_async_copy_stalls(void **state)
{
	struct fix *f = *state;
	const atm_graph *g = f->s.g;
	atm_profile_machine m = *atm_profile_machine_get(f->prof);
	atm_profile *slow = NULL;
	assert_int_equal(atm_profile_new(&slow, &m, NULL), ATM_OK);
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++)
		for (int i = 0; i < atm_node_n_configs(g, k); i++) {
			uint32_t cfg = atm_node_config_at(g, k, i);
			atm_profile_entry e;
			assert_int_equal(atm_profile_get(f->prof, g, k, cfg, &e), ATM_OK);
			assert_int_equal(atm_profile_put(slow, g, k, cfg, &e), ATM_OK);
		}
	/* 12 bytes at 1 kB/s: 12 ms, far longer than fc and relu */
	assert_int_equal(atm_profile_set_moves(slow,
		&(atm_profile_moves){.to_fast_gbps = 1e-6, .to_slow_gbps = 1e-6, .estimated = true}), ATM_OK);
	atm_plan *p = labels_prefetched(f);
	atm_opt_check_result c;
	assert_int_equal(atm_opt_check(p, slow, NULL, &c), ATM_OK);
	double before = synth_time(g, 0, 0) + synth_time(g, 1, 0);
	expect_close(c.async_wait_s, 0.012 - before);
	expect_close(c.predicted_s, all_fast_s(g) + 0.012 - before);
	atm_plan_destroy(p);
	atm_profile_destroy(slow);
}

/* test_check_limit_is_proved -- the checker's own count of fast bytes matches the schedule,
 * and a plan over its limit is refused with the node */
static void test_check_limit_is_proved(void **state)
{
	struct fix *f = *state;
	atm_plan *p = NULL;
	atm_schedule *s = NULL;
	atm_opt_check_result c;
	assert_int_equal(atm_plan_uniform(&p, f->s.g, ATM_LOC_FAST), ATM_OK);
	atm_plan_info_of(p)->fast_limit_bytes = 1024;
	assert_int_equal(atm_opt_check(p, f->prof, NULL, &c), ATM_OK);
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	assert_int_equal(c.fast_peak_bytes, atm_schedule_stats_get(s)->fast_peak_bytes);
	assert_true(c.fast_arena_bytes <= 1024);
	atm_schedule_destroy(s);
	atm_plan_info_of(p)->fast_limit_bytes = 150;
	assert_int_equal(atm_opt_check(p, f->prof, NULL, &c), ATM_E_INFEASIBLE);
	assert_non_null(strstr(atm_errmsg(), "plan check: "));
	if (!strstr(atm_errmsg(), "150"))
		fail_msg("%s", atm_errmsg());
	assert_true(c.predicted_s == 0);
	atm_plan_destroy(p);
}

/* test_check_workspace_counts_when_asked -- workspace joins the fast bytes at its kernel */
static void test_check_workspace_counts_when_asked(void **state)
{
	struct fix *f = *state;
	atm_plan *p = NULL;
	atm_opt_check_result c;
	atm_opt_options o;
	atm_opt_options_default(&o);
	o.workspace_in_limit = true;
	assert_int_equal(atm_graph_set_workspace(f->s.g, 0, 4096), ATM_OK);
	assert_int_equal(atm_plan_uniform(&p, f->s.g, ATM_LOC_FAST), ATM_OK);
	atm_plan_info_of(p)->fast_limit_bytes = 1024;
	assert_int_equal(atm_opt_check(p, f->prof, NULL, &c), ATM_OK);
	assert_int_equal(atm_opt_check(p, f->prof, &o, &c), ATM_E_INFEASIBLE);
	assert_non_null(strstr(atm_errmsg(), "needs 4096 bytes of workspace"));
	assert_int_equal(atm_graph_set_workspace(f->s.g, 0, 0), ATM_OK);
	atm_plan_destroy(p);
}

/* test_check_slow_never_faster -- a measurement that says a slow operand made a kernel faster
 * is noise: the kernel is priced at its time with fewer slow operands, and the optimizer,
 * which applies the same rule, gains nothing by putting tensors there */
static void test_check_slow_never_faster(void **state)
{
	struct fix *f = *state;
	const atm_graph *g = f->s.g;
	atm_profile_machine m = *atm_profile_machine_get(f->prof);
	atm_profile *noisy = NULL;
	assert_int_equal(atm_profile_new(&noisy, &m, NULL), ATM_OK);
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++)
		for (int i = 0; i < atm_node_n_configs(g, k); i++) {
			uint32_t cfg = atm_node_config_at(g, k, i);
			atm_profile_entry e;
			assert_int_equal(atm_profile_get(f->prof, g, k, cfg, &e), ATM_OK);
			if (cfg)
				e.min_s = e.median_s = synth_time(g, k, 0) / 2; /* "faster" when slow */
			assert_int_equal(atm_profile_put(noisy, g, k, cfg, &e), ATM_OK);
		}
	assert_int_equal(atm_profile_set_moves(noisy,
		&(atm_profile_moves){.to_fast_gbps = 4, .to_slow_gbps = 2, .estimated = true}), ATM_OK);
	atm_plan *p = NULL;
	atm_opt_check_result c;
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_SLOW), ATM_OK);
	assert_int_equal(atm_opt_check(p, noisy, NULL, &c), ATM_OK);
	expect_close(c.predicted_s, all_fast_s(g));
	atm_plan_destroy(p);
	/* so the plan with no limit to respect is as fast as all fast, not "faster" */
	atm_opt_report rep;
	assert_int_equal(atm_opt_plan(&p, g, noisy, 1 << 20, ATM_OPT_SYNCHRONOUS, NULL, &rep), ATM_OK);
	assert_int_equal(atm_opt_check(p, noisy, NULL, &c), ATM_OK);
	expect_close(c.predicted_s, all_fast_s(g));
	expect_close(rep.objective_s, c.predicted_s);
	atm_plan_destroy(p);
	atm_profile_destroy(noisy);
}

/* test_check_missing_profile -- a kernel configuration the profile lacks is named */
static void test_check_missing_profile(void **state)
{
	struct fix *f = *state;
	atm_profile_machine m = *atm_profile_machine_get(f->prof);
	atm_profile *empty = NULL;
	atm_plan *p = NULL;
	atm_opt_check_result c;
	assert_int_equal(atm_profile_new(&empty, &m, NULL), ATM_OK);
	assert_int_equal(atm_plan_uniform(&p, f->s.g, ATM_LOC_FAST), ATM_OK);
	assert_int_equal(atm_opt_check(p, empty, NULL, &c), ATM_E_NOTFOUND);
	assert_non_null(strstr(atm_errmsg(), "plan check: "));
	assert_non_null(strstr(atm_errmsg(), "fc"));
	atm_plan_destroy(p);
	atm_profile_destroy(empty);
}

/* test_check_grouped_apart -- a baseline may put the members of a grouped node's operands
 * apart (NUMA's first touch fills fast memory with a concat's first inputs): the checker prices
 * the node as its whole group slow, never faster than what was measured, instead of failing */
static void test_check_grouped_apart(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	atm_profile *prof = NULL;
	atm_plan *p = NULL;
	atm_opt_check_result c;
	int32_t in[12], y, id;
	int64_t dims[2] = {1, 4}, ydims[2] = {1, 48};
	char name[16];
	assert_int_equal(atm_graph_new(&g, "cat"), ATM_OK);
	for (int i = 0; i < 12; i++) {
		snprintf(name, sizeof name, "x%d", i);
		assert_int_equal(atm_graph_add_tensor(g, name, ATM_F32, 2, dims, ATM_KIND_INPUT,
		                                      ATM_LOC_ANY, &in[i]), ATM_OK);
	}
	assert_int_equal(atm_graph_add_tensor(g, "y", ATM_F32, 2, ydims, ATM_KIND_OUTPUT, ATM_LOC_ANY,
	                                      &y), ATM_OK);
	atm_attrs a = {.axis = 1};
	assert_int_equal(atm_graph_add_node(g, "cat", ATM_OP_CONCAT, &a, 12, in, 1, &y, &id), ATM_OK);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	assert_int_equal(synth_profile(g, &prof), ATM_OK);
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_FAST), ATM_OK);
	assert_int_equal(atm_plan_set_location(p, in[3], ATM_LOC_SLOW), ATM_OK);
	assert_int_equal(atm_opt_check(p, prof, NULL, &c), ATM_OK);
	/* configuration 1 is "S+/F+": every input slow, the output fast */
	expect_close(c.predicted_s, synth_time(g, 0, 1));
	assert_true(c.predicted_s > synth_time(g, 0, 0));
	atm_plan_destroy(p);
	atm_profile_destroy(prof);
	atm_graph_destroy(g);
}

/* test_check_prices_links_and_multi_output -- a recomputation through a link (r made again
 * from y, made again from x, w, b) and one of a node with two outputs (probs, the loss into
 * scratch) are each priced at their node's time in the configuration the schedule gives, its
 * inputs where they are and every output fast, and the step's time is all-fast's plus theirs */
static void test_check_prices_links_and_multi_output(void **state)
{
	struct fix *f = *state;
	const struct small *sm = &f->s;
	static const uint32_t all_fast = 0;
	for (int k = 0; k < 3; k++) {
		atm_plan *p = NULL;
		atm_schedule *s = NULL;
		atm_opt_check_result c;
		assert_int_equal(atm_plan_uniform(&p, sm->g, ATM_LOC_FAST), ATM_OK);
		double again = 0;
		int n = 0;
		if (k < 2) {
			assert_int_equal(atm_plan_add_recompute(p, &(atm_recompute){sm->r, 2, 4}), ATM_OK);
			assert_int_equal(atm_plan_add_recompute(p, &(atm_recompute){sm->y, 1, 4}), ATM_OK);
			again = synth_time(sm->g, 0, all_fast) + synth_time(sm->g, 1, all_fast);
			n = 2;
		}
		if (k == 1) /* x read from slow memory when fc runs again, as it is the first time */
			assert_int_equal(atm_plan_set_location(p, sm->x, ATM_LOC_SLOW), ATM_OK);
		if (k == 2) {
			assert_int_equal(atm_plan_add_recompute(p, &(atm_recompute){sm->probs, 2, 3}),
			                 ATM_OK);
			again = synth_time(sm->g, 2, all_fast);
			n = 1;
		}
		assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
		double base = all_fast_s(sm->g);
		if (k == 1) {
			/* the step without the recomputations, x slow; fc run again reads it there too */
			atm_plan *q = NULL;
			assert_int_equal(atm_plan_uniform(&q, sm->g, ATM_LOC_FAST), ATM_OK);
			assert_int_equal(atm_plan_set_location(q, sm->x, ATM_LOC_SLOW), ATM_OK);
			assert_int_equal(atm_opt_check(q, f->prof, NULL, &c), ATM_OK);
			base = c.predicted_s;
			atm_plan_destroy(q);
			const atm_event *ev = NULL;
			for (int32_t i = 0; !ev && i < atm_schedule_n_events(s); i++)
				if (atm_schedule_event(s, i)->kind == ATM_EV_RECOMPUTE &&
				    atm_schedule_event(s, i)->node == 0)
					ev = atm_schedule_event(s, i);
			assert_non_null(ev);
			uint32_t config = 0;
			assert_int_equal(atm_node_config_of(sm->g, 0, ev->cfg, &config), ATM_OK);
			assert_true(config != all_fast);
			again += synth_time(sm->g, 0, config) - synth_time(sm->g, 0, all_fast);
		}
		atm_plan_info_of(p)->fast_limit_bytes = atm_schedule_stats_get(s)->fast_arena_bytes;
		atm_schedule_destroy(s);
		if (atm_opt_check(p, f->prof, NULL, &c) < 0)
			fail_msg("plan %d: %s", k, atm_errmsg());
		assert_int_equal(c.n_recomputes, n);
		expect_close(c.recompute_s, again);
		expect_close(c.predicted_s, base + again);
		atm_plan_destroy(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_all_fast_is_sum_of_kernels),
		cmocka_unit_test(test_check_sync_moves_block),
		cmocka_unit_test(test_check_async_copy_hides_under_kernels),
		cmocka_unit_test(test_check_async_copy_stalls),
		cmocka_unit_test(test_check_limit_is_proved),
		cmocka_unit_test(test_check_workspace_counts_when_asked),
		cmocka_unit_test(test_check_slow_never_faster),
		cmocka_unit_test(test_check_missing_profile),
		cmocka_unit_test(test_check_grouped_apart),
		cmocka_unit_test(test_check_prices_links_and_multi_output),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
