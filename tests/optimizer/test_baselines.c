/* test_baselines.c -- all-fast, all-slow, first-touch NUMA, 2LM and vDNN plans: valid, priced, within the limit */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_optimizer.h"
#include "atm_zoo.h"
#include "optimizer/synth.h"

struct fix {
	atm_graph *g;
	atm_profile *prof;
	int64_t limit; /* 4:1 */
};

static int setup(void **state)
{
	static struct fix f;
	atm_zoo_opts o = {.batch = 4};
	if (atm_zoo_build(&f.g, "tiny_cnn", &o) < 0 || synth_profile(f.g, &f.prof) < 0 ||
	    atm_opt_limit_from_ratio(f.g, 4, 1, &f.limit) < 0)
		return -1;
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

/* baseline -- plan f of the fixture: core accepts it, the checker's price is its prediction */
static atm_plan *baseline(struct fix *fx, atm_opt_formulation f, int64_t limit,
                          atm_opt_check_result *c)
{
	atm_plan *p = NULL;
	atm_schedule *s = NULL;
	if (atm_opt_plan(&p, fx->g, fx->prof, limit, f, NULL, NULL) < 0)
		fail_msg("%s: %s", atm_opt_formulation_name(f), atm_errmsg());
	assert_string_equal(atm_plan_info_get(p)->formulation, atm_opt_formulation_name(f));
	assert_string_equal(atm_plan_info_get(p)->solver_status, "baseline");
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	atm_schedule_destroy(s);
	assert_int_equal(atm_opt_check(p, fx->prof, NULL, c), ATM_OK);
	assert_true(fabs(atm_plan_info_get(p)->predicted_runtime_s - c->predicted_s) < 1e-15);
	assert_true(c->predicted_s >= c->all_fast_kernel_s - 1e-12);
	return p;
}

static void test_baselines_all_fast_and_all_slow(void **state)
{
	struct fix *fx = *state;
	atm_opt_check_result fast, slow;
	atm_plan *p = baseline(fx, ATM_OPT_ALL_FAST, fx->limit, &fast);
	/* all-fast is the reference: no limit */
	assert_int_equal(atm_plan_info_get(p)->fast_limit_bytes, 0);
	assert_true(fabs(fast.predicted_s - fast.all_fast_kernel_s) < 1e-12);
	atm_plan_destroy(p);
	p = baseline(fx, ATM_OPT_ALL_SLOW, fx->limit, &slow);
	assert_int_equal(atm_plan_info_get(p)->fast_limit_bytes, fx->limit);
	for (int32_t t = 0; t < atm_graph_n_tensors(fx->g); t++)
		assert_int_equal(atm_plan_location(p, t), ATM_LOC_SLOW);
	assert_true(slow.predicted_s > fast.predicted_s);
	atm_plan_destroy(p);
}

/* test_baselines_numa_first_touch -- fast while it fits, slow after, never moves */
static void test_baselines_numa_first_touch(void **state)
{
	struct fix *fx = *state;
	atm_opt_check_result c, slow, fast;
	atm_plan_destroy(baseline(fx, ATM_OPT_ALL_SLOW, fx->limit, &slow));
	atm_plan_destroy(baseline(fx, ATM_OPT_ALL_FAST, 0, &fast));
	atm_plan *p = baseline(fx, ATM_OPT_NUMA, fx->limit, &c);
	assert_int_equal(atm_plan_n_moves(p), 0);
	int n_fast = 0, n_slow = 0;
	for (int32_t t = 0; t < atm_graph_n_tensors(fx->g); t++)
		if (atm_plan_location(p, t) == ATM_LOC_FAST)
			n_fast++;
		else
			n_slow++;
	assert_true(n_fast > 0 && n_slow > 0);
	assert_true(c.fast_peak_bytes <= fx->limit);
	assert_true(c.predicted_s < slow.predicted_s && c.predicted_s > fast.predicted_s);
	/* the first tensor first touched goes fast: the graph's first persistent tensor fits */
	assert_int_equal(atm_plan_location(p, 0), ATM_LOC_FAST);
	atm_plan_destroy(p);
	/* with room for everything, first touch is all fast */
	p = baseline(fx, ATM_OPT_NUMA, 1 << 30, &c);
	for (int32_t t = 0; t < atm_graph_n_tensors(fx->g); t++)
		assert_int_equal(atm_plan_location(p, t), ATM_LOC_FAST);
	atm_plan_destroy(p);
}

/* test_baselines_vdnn_offloads_conv_inputs -- every move is an overlapped copy of a
 * convolution input: out after its last forward use, in before its backward use */
static void test_baselines_vdnn_offloads_conv_inputs(void **state)
{
	struct fix *fx = *state;
	atm_opt_check_result c;
	atm_plan *p = baseline(fx, ATM_OPT_VDNN, 0, &c);
	int32_t nm = atm_plan_n_moves(p);
	assert_true(nm > 0 && nm % 2 == 0);
	for (int32_t i = 0; i < nm; i++) {
		const atm_move *m = atm_plan_move(p, i);
		assert_true(m->async);
		bool conv_input = false;
		for (int32_t k = 0; k < atm_graph_n_nodes(fx->g); k++) {
			const atm_node *n = atm_graph_node(fx->g, k);
			conv_input |= n->op == ATM_OP_CONV_FWD && n->in[0] == m->tensor;
		}
		assert_true(conv_input);
	}
	assert_int_equal(c.n_async_moves, nm);
	atm_plan_destroy(p);
	/* under a limit, what does not fit stays slow and the plan fits */
	p = baseline(fx, ATM_OPT_VDNN, fx->limit, &c);
	assert_true(c.fast_peak_bytes <= fx->limit);
	atm_plan_destroy(p);
}

/* test_baselines_2lm_cache -- a cache holding the whole slow heap misses in the measured
 * (second) step only lines no tensor touched before: the heap hands a freed block to a tensor
 * of the same rounded size, which may reach past where the block's earlier tensors ended (the
 * tail of a block, 256-byte alignment, never more than its padding); a small one pays for
 * misses; no limit, or one under a line, is a usage error */
static void test_baselines_2lm_cache(void **state)
{
	struct fix *fx = *state;
	atm_opt_check_result big, small;
	atm_plan *p = baseline(fx, ATM_OPT_2LM, 1 << 30, &big);
	int64_t padding_bytes = 0;
	for (int32_t t = 0; t < atm_graph_n_tensors(fx->g); t++) {
		assert_int_equal(atm_plan_location(p, t), ATM_LOC_SLOW);
		int64_t bytes = atm_graph_tensor(fx->g, t)->bytes;
		padding_bytes += (bytes + 255) / 256 * 256 - bytes;
	}
	atm_profile_moves mv;
	assert_int_equal(atm_profile_get_moves(fx->prof, &mv), ATM_OK);
	assert_true(big.cache_miss_s <= (double)padding_bytes / (mv.to_fast_gbps * 1e9) + 1e-15);
	assert_true(fabs(big.predicted_s - big.all_fast_kernel_s - big.cache_miss_s) < 1e-12);
	atm_plan_destroy(p);
	atm_opt_check_result bigger;
	p = baseline(fx, ATM_OPT_2LM, (int64_t)1 << 31, &bigger); /* no capacity or conflict misses left */
	assert_true(bigger.predicted_s == big.predicted_s);
	atm_plan_destroy(p);
	p = baseline(fx, ATM_OPT_2LM, fx->limit / 4, &small);
	assert_true(small.cache_miss_s > 0);
	assert_true(fabs(small.predicted_s - small.kernel_s - small.cache_miss_s) < 1e-12);
	/* the misses cost what the executor's emulation waits for the same traffic: without the
	 * slow tier's rates in the profile, every miss whole at the copies' rates; with them, a
	 * read miss less the fast time the kernel spent reading, fills and write-backs whole */
	const atm_twolm_traffic *tr = &small.cache_traffic;
	assert_true(tr->fill_bytes > 0 && tr->read_bytes > tr->fill_bytes && tr->written_bytes > 0);
	assert_float_equal(small.cache_miss_s,
	                   atm_twolm_wait_s(tr, mv.to_fast_gbps, mv.to_slow_gbps, 0), 1e-12);
	atm_profile_moves rated = mv;
	rated.slow_read_gbps = 2 * mv.to_fast_gbps;
	rated.slow_write_gbps = 2 * mv.to_slow_gbps;
	rated.fast_gbps = 10 * mv.to_fast_gbps;
	assert_int_equal(atm_profile_set_moves(fx->prof, &rated), ATM_OK);
	atm_opt_check_result fair;
	assert_int_equal(atm_opt_check(p, fx->prof, NULL, &fair), ATM_OK);
	assert_int_equal(fair.cache_traffic.read_bytes, tr->read_bytes);
	assert_float_equal(fair.cache_miss_s, atm_twolm_wait_s(tr, rated.slow_read_gbps,
	                   rated.slow_write_gbps, rated.fast_gbps), 1e-12);
	assert_true(fair.cache_miss_s < atm_twolm_wait_s(tr, rated.slow_read_gbps,
	                                               rated.slow_write_gbps, 0));
	assert_int_equal(atm_profile_set_moves(fx->prof, &mv), ATM_OK);
	atm_plan_destroy(p);
	atm_opt_check_result direct;
	assert_int_equal(atm_opt_predict_2lm(fx->g, fx->prof, fx->limit / 4, &direct), ATM_OK);
	assert_true(direct.predicted_s == small.predicted_s);
	p = (atm_plan *)1;
	assert_int_equal(atm_opt_plan(&p, fx->g, fx->prof, 0, ATM_OPT_2LM, NULL, NULL), ATM_E_USAGE);
	assert_null(p);
	assert_non_null(strstr(atm_errmsg(), "2lm caches slow memory"));
	assert_int_equal(atm_opt_predict_2lm(fx->g, fx->prof, 32, &direct), ATM_E_USAGE);
	assert_string_equal(atm_errmsg(), "a 2LM cache of 32 bytes holds no 4096-byte line: give a "
	                    "cache of at least 4096 bytes (the fast memory caching the slow memory)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_baselines_all_fast_and_all_slow),
		cmocka_unit_test(test_baselines_numa_first_touch),
		cmocka_unit_test(test_baselines_vdnn_offloads_conv_inputs),
		cmocka_unit_test(test_baselines_2lm_cache),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
