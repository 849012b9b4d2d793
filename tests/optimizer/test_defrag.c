/* test_defrag.c -- fragmentation: layout by size where first fit fails, and the loop that solves again where no layout fits */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "atm_optimizer.h"
#include "optimizer/synth.h"
#include "optimizer/tight_graph.h"

/* frag_graph -- a, b and c (64 bytes each) fill a 192-byte arena in that order; a and c die
 * together, leaving two 64-byte holes around b, and then f (128 bytes) is made while b lives:
 * 192 bytes fit by count, not in one piece. x, e and h may only be slow. */
static atm_graph *frag_graph(void)
{
	atm_graph *g = NULL;
	int64_t d16[] = {16}, d32[] = {32};
	int32_t x, a, b, c, e, f, h, n;
	assert_int_equal(atm_graph_new(&g, "frag"), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "x", ATM_F32, 1, d16, ATM_KIND_INPUT, ATM_LOC_SLOW, &x), 0);
	assert_int_equal(atm_graph_add_tensor(g, "a", ATM_F32, 1, d16, ATM_KIND_ACTIVATION, ATM_LOC_ANY, &a), 0);
	assert_int_equal(atm_graph_add_tensor(g, "b", ATM_F32, 1, d16, ATM_KIND_ACTIVATION, ATM_LOC_ANY, &b), 0);
	assert_int_equal(atm_graph_add_tensor(g, "c", ATM_F32, 1, d16, ATM_KIND_ACTIVATION, ATM_LOC_ANY, &c), 0);
	assert_int_equal(atm_graph_add_tensor(g, "e", ATM_F32, 1, d16, ATM_KIND_ACTIVATION, ATM_LOC_SLOW, &e), 0);
	assert_int_equal(atm_graph_add_tensor(g, "f", ATM_F32, 1, d32, ATM_KIND_ACTIVATION, ATM_LOC_ANY, &f), 0);
	assert_int_equal(atm_graph_add_tensor(g, "h", ATM_F32, 1, d32, ATM_KIND_ACTIVATION, ATM_LOC_SLOW, &h), 0);
	assert_int_equal(atm_graph_add_node(g, "n0", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &a, &n), 0);
	assert_int_equal(atm_graph_add_node(g, "n1", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &b, &n), 0);
	assert_int_equal(atm_graph_add_node(g, "n2", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &c, &n), 0);
	assert_int_equal(atm_graph_add_node(g, "n3", ATM_OP_ADD, NULL, 2, (int32_t[]){a, c}, 1, &e, &n), 0);
	atm_attrs cat = {.axis = 0};
	assert_int_equal(atm_graph_add_node(g, "n4", ATM_OP_CONCAT, &cat, 2, (int32_t[]){b, b}, 1, &f, &n), 0);
	assert_int_equal(atm_graph_add_node(g, "n5", ATM_OP_RELU_FWD, NULL, 1, &f, 1, &h, &n), 0);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	return g;
}

/* test_defrag_tightens_until_it_fits -- the first round's plan (all fast) fits no layout; the
 * loop tightens where it overflows, solves again, and records every round */
static void test_defrag_tightens_until_it_fits(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	atm_profile *prof = NULL;
	atm_plan *p = NULL, *fast = NULL;
	atm_schedule *s = NULL;
	atm_opt_report rep;
	atm_opt_options o;
	tight_setup(&g, &prof, &o);
	/* all fast fits by bytes (at most 512 live) but in no layout */
	assert_int_equal(atm_plan_uniform(&fast, g, ATM_LOC_FAST), ATM_OK);
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++)
		if (atm_graph_tensor(g, t)->locations == ATM_LOC_SLOW)
			assert_int_equal(atm_plan_set_location(fast, t, ATM_LOC_SLOW), ATM_OK);
	atm_plan_info_of(fast)->fast_limit_bytes = 512;
	assert_int_equal(atm_schedule_new(&s, fast), ATM_E_INFEASIBLE);
	if (!strstr(atm_errmsg(), "fragmentation"))
		fail_msg("%s", atm_errmsg());
	for (int f = 0; f < 3; f++) {
		assert_int_equal(atm_opt_plan(&p, g, prof, 512, (atm_opt_formulation)f, &o, &rep), ATM_OK);
		assert_true(rep.n_rounds >= 2);
		assert_false(rep.rounds[0].fits);
		assert_true(rep.rounds[rep.n_rounds - 1].fits);
		assert_true(rep.rounds[1].fast_limit_bytes < 512);
		/* the model counted the first round's plan as all fast: the cheapest */
		assert_true(rep.rounds[0].objective_s <= rep.rounds[rep.n_rounds - 1].objective_s);
		const atm_plan_info *info = atm_plan_info_get(p);
		assert_int_equal(info->n_rounds, rep.n_rounds);
		double sum = 0;
		for (int i = 0; i < info->n_rounds; i++) {
			assert_true(info->round_creation_s[i] >= 0 && info->round_solve_s[i] >= 0);
			sum += info->round_solve_s[i];
		}
		assert_true(sum <= info->solve_s + 1e-9 && sum >= info->solve_s - 1e-9);
		assert_int_equal(info->fast_limit_bytes, 512);
		assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
		atm_schedule_destroy(s);
		atm_opt_check_result c;
		assert_int_equal(atm_opt_check(p, prof, &o, &c), ATM_OK);
		assert_true(c.fast_arena_bytes <= 512);
		atm_plan_destroy(p);
	}
	/* one round only: the error says why */
	o.max_rounds = 1;
	p = (atm_plan *)1;
	assert_int_equal(atm_opt_plan(&p, g, prof, 512, ATM_OPT_SYNCHRONOUS, &o, &rep), ATM_E_INFEASIBLE);
	assert_null(p);
	assert_non_null(strstr(atm_errmsg(), "for fragmentation after 1 rounds"));
	assert_non_null(strstr(atm_errmsg(), "at node"));
	atm_plan_destroy(fast);
	atm_profile_destroy(prof);
	atm_graph_destroy(g);
}

/* test_defrag_layout_by_size -- frag_graph's all-fast step overflows first fit at 192 bytes,
 * and the schedule lays it out by size instead, in 192 bytes */
static void test_defrag_layout_by_size(void **state)
{
	(void)state;
	atm_graph *g = frag_graph();
	atm_plan *fast = NULL;
	atm_schedule *s = NULL;
	assert_int_equal(atm_plan_uniform(&fast, g, ATM_LOC_FAST), ATM_OK);
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++)
		if (atm_graph_tensor(g, t)->locations == ATM_LOC_SLOW)
			assert_int_equal(atm_plan_set_location(fast, t, ATM_LOC_SLOW), ATM_OK);
	/* unbounded, first fit stands: it takes 256 bytes */
	assert_int_equal(atm_schedule_new(&s, fast), ATM_OK);
	assert_int_equal(atm_schedule_stats_get(s)->fast_arena_bytes, 256);
	atm_schedule_destroy(s);
	atm_plan_info_of(fast)->fast_limit_bytes = 192;
	assert_int_equal(atm_schedule_new(&s, fast), ATM_OK);
	assert_int_equal(atm_schedule_stats_get(s)->fast_arena_bytes, 192);
	/* no two copies alive together share a byte */
	for (int32_t i = 0; i < atm_schedule_n_events(s); i++) {
		const atm_event *a = atm_schedule_event(s, i);
		if (a->kind != ATM_EV_ALLOC || a->loc != ATM_LOC_FAST)
			continue;
		int64_t ab = atm_graph_tensor(g, a->tensor)->bytes;
		for (int32_t j = i + 1; j < atm_schedule_n_events(s); j++) {
			const atm_event *b = atm_schedule_event(s, j);
			if (b->kind == ATM_EV_FREE && b->tensor == a->tensor && b->loc == ATM_LOC_FAST)
				break;
			if (b->kind != ATM_EV_ALLOC || b->loc != ATM_LOC_FAST)
				continue;
			int64_t bb = atm_graph_tensor(g, b->tensor)->bytes;
			assert_true(b->offset >= a->offset + ab || a->offset >= b->offset + bb);
		}
	}
	atm_schedule_destroy(s);
	atm_plan_destroy(fast);
	atm_graph_destroy(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defrag_layout_by_size),
		cmocka_unit_test(test_defrag_tightens_until_it_fits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
