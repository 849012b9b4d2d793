/* test_limits.c -- fast limits: ratio parsing, limits from ratios, the least workable limit and the infeasible error */
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
#include "optimizer/synth.h"

static void test_limits_parse_ratio(void **state)
{
	(void)state;
	double s, f;
	assert_int_equal(atm_opt_parse_ratio("16:1", &s, &f), ATM_OK);
	assert_true(s == 16 && f == 1);
	assert_int_equal(atm_opt_parse_ratio("0:1", &s, &f), ATM_OK);
	assert_true(s == 0 && f == 1);
	assert_int_equal(atm_opt_parse_ratio("1:0", &s, &f), ATM_OK);
	assert_true(s == 1 && f == 0);
	assert_int_equal(atm_opt_parse_ratio("2.5:1", &s, &f), ATM_OK);
	assert_true(s == 2.5 && f == 1);
	const char *bad[] = {"4", "4:", ":1", "4:1:2", "a:1", "-1:2", "4 :1", "inf:1", "", "1:nan"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(atm_opt_parse_ratio(bad[i], &s, &f), ATM_E_USAGE);
		char want[64];
		snprintf(want, sizeof want, "ratio '%s' is not valid", bad[i]);
		if (!strstr(atm_errmsg(), want))
			fail_msg("'%s': message '%s'", bad[i], atm_errmsg());
	}
	assert_int_equal(atm_opt_parse_ratio("0:0", &s, &f), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "cannot both be 0"));
}

/* test_limits_from_ratio -- fast = peak * F / (S + F); 0:1 no limit; 1:0 the least workable */
static void test_limits_from_ratio(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	atm_liveness *lv = NULL;
	atm_zoo_opts o = {.batch = 4};
	assert_int_equal(atm_zoo_build(&g, "tiny_cnn", &o), ATM_OK);
	assert_int_equal(atm_liveness_new(&lv, g), ATM_OK);
	int64_t peak = atm_liveness_peak_bytes(lv), b;
	assert_int_equal(atm_opt_limit_from_ratio(g, 16, 1, &b), ATM_OK);
	assert_int_equal(b, peak / 17);
	assert_int_equal(atm_opt_limit_from_ratio(g, 1, 1, &b), ATM_OK);
	assert_int_equal(b, peak / 2);
	assert_int_equal(atm_opt_limit_from_ratio(g, 4, 1, &b), ATM_OK);
	assert_int_equal(b, peak / 5);
	assert_int_equal(atm_opt_limit_from_ratio(g, 0, 1, &b), ATM_OK);
	assert_int_equal(b, 0);
	/* nothing in the zoo is fast-only: all slow needs no fast memory, and 0 would mean none */
	assert_int_equal(atm_opt_limit_from_ratio(g, 1, 0, &b), ATM_OK);
	assert_int_equal(b, 1);
	assert_int_equal(atm_opt_limit_from_ratio(g, -1, 1, &b), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "ratio -1:1 is not valid"));
	atm_liveness_destroy(lv);
	atm_graph_destroy(g);
}

/* fast_only_graph -- a small chain whose middle tensors may only live in fast memory */
static atm_graph *fast_only_graph(void)
{
	atm_graph *g = NULL;
	int64_t d[] = {64};
	int32_t x, a, b, c, y, n;
	assert_int_equal(atm_graph_new(&g, "fastonly"), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "x", ATM_F32, 1, d, ATM_KIND_INPUT, ATM_LOC_ANY, &x), 0);
	assert_int_equal(atm_graph_add_tensor(g, "a", ATM_F32, 1, d, ATM_KIND_ACTIVATION, ATM_LOC_FAST, &a), 0);
	assert_int_equal(atm_graph_add_tensor(g, "b", ATM_F32, 1, d, ATM_KIND_ACTIVATION, ATM_LOC_FAST, &b), 0);
	assert_int_equal(atm_graph_add_tensor(g, "c", ATM_F32, 1, d, ATM_KIND_ACTIVATION, ATM_LOC_ANY, &c), 0);
	assert_int_equal(atm_graph_add_tensor(g, "y", ATM_F32, 1, d, ATM_KIND_ACTIVATION, ATM_LOC_ANY, &y), 0);
	assert_int_equal(atm_graph_add_node(g, "n0", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &a, &n), 0);
	assert_int_equal(atm_graph_add_node(g, "n1", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &b, &n), 0);
	assert_int_equal(atm_graph_add_node(g, "n2", ATM_OP_ADD, NULL, 2, (int32_t[]){a, b}, 1, &c, &n), 0);
	assert_int_equal(atm_graph_add_node(g, "n3", ATM_OP_RELU_FWD, NULL, 1, &c, 1, &y, &n), 0);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	return g;
}

/* test_limits_infeasible_names_least_limit -- below the fast-only tensors the error names the
 * node and the smallest limit; that limit then works for every formulation */
static void test_limits_infeasible_names_least_limit(void **state)
{
	(void)state;
	atm_graph *g = fast_only_graph();
	atm_profile *prof = NULL;
	atm_plan *p = (atm_plan *)1;
	atm_opt_options o;
	int64_t need;
	int32_t node;
	atm_opt_options_default(&o);
	assert_int_equal(synth_profile(g, &prof), ATM_OK);
	assert_int_equal(atm_opt_min_limit(g, &o, &need, &node), ATM_OK);
	assert_int_equal(need, 512); /* a and b, 256 bytes each, both live at n2 */
	assert_int_equal(node, 1);
	for (int f = 0; f < ATM_OPT_N_FORMULATIONS; f++) {
		if (f == ATM_OPT_ALL_FAST)
			continue;
		p = (atm_plan *)1;
		assert_int_equal(atm_opt_plan(&p, g, prof, need - 1, (atm_opt_formulation)f, &o, NULL),
		                 ATM_E_INFEASIBLE);
		assert_null(p);
		const char *msg = atm_errmsg();
		if (!strstr(msg, "the smallest limit that could work is 512 bytes") ||
		    !strstr(msg, "at node 1 ('n1')") || !strstr(msg, "'a'") || !strstr(msg, "'b'") ||
		    !strstr(msg, atm_opt_formulation_name((atm_opt_formulation)f)))
			fail_msg("%s: '%s'", atm_opt_formulation_name((atm_opt_formulation)f), msg);
		/* 2LM's cache is of whole lines: 512 bytes hold none, which it says */
		if (f == ATM_OPT_2LM) {
			assert_int_equal(atm_opt_plan(&p, g, prof, need, ATM_OPT_2LM, &o, NULL), ATM_E_USAGE);
			assert_non_null(strstr(atm_errmsg(), "a 2LM cache of 512 bytes holds no 4096-byte "
			                                     "line"));
			continue;
		}
		if (atm_opt_plan(&p, g, prof, need, (atm_opt_formulation)f, &o, NULL) < 0)
			fail_msg("%s at %lld: %s", atm_opt_formulation_name((atm_opt_formulation)f),
			         (long long)need, atm_errmsg());
		atm_schedule *s = NULL;
		assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
		atm_schedule_destroy(s);
		atm_opt_check_result c;
		assert_int_equal(atm_opt_check(p, prof, &o, &c), ATM_OK);
		assert_true(c.fast_peak_bytes <= need);
		atm_plan_destroy(p);
	}
	/* 1:0 is that least limit */
	int64_t b;
	assert_int_equal(atm_opt_limit_from_ratio(g, 1, 0, &b), ATM_OK);
	assert_int_equal(b, 512);
	atm_profile_destroy(prof);
	atm_graph_destroy(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limits_parse_ratio),
		cmocka_unit_test(test_limits_from_ratio),
		cmocka_unit_test(test_limits_infeasible_names_least_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
