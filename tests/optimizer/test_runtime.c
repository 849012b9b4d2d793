/* test_runtime.c -- optimizer plans run by the real executor give bitwise the all-fast losses and weights */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_optimizer.h"
#include "atm_runtime.h"
#include "atm_zoo.h"
#include "common/exec_runs.h"
#include "optimizer/synth.h"

/* run_plan -- three steps of p on the real tiers */
static struct exec_run run_plan(const atm_plan *p)
{
	atm_exec_opts o = {.iters = 2, .warmup = 1, .seed = 7, .quiet = true};
	return exec_run(p, &o);
}

/* same_numbers -- model's all-slow plan, a random one, and its static, synchronous and
 * asynchronous plans at 4:1 and 8:1 against all fast */
static void same_numbers(const char *model)
{
	atm_graph *g = NULL;
	atm_profile *prof = NULL;
	atm_plan *fast = NULL;
	atm_zoo_opts zo = {.batch = 4};
	assert_int_equal(atm_zoo_build(&g, model, &zo), ATM_OK);
	assert_int_equal(synth_profile(g, &prof), ATM_OK);
	assert_int_equal(atm_plan_uniform(&fast, g, ATM_LOC_FAST), ATM_OK);
	struct exec_run ref = run_plan(fast);
	assert_true(ref.n_losses >= 2);
	for (int k = 0; k < 2; k++) {
		atm_plan *p = NULL;
		assert_int_equal(k ? atm_plan_random(&p, g, 11) : atm_plan_uniform(&p, g, ATM_LOC_SLOW),
		                 ATM_OK);
		struct exec_run got = run_plan(p);
		if (strcmp(got.checksum, ref.checksum) ||
		    memcmp(got.losses, ref.losses, (size_t)ref.n_losses * sizeof ref.losses[0]))
			fail_msg("%s %s: weights %s, all fast %s", model, k ? "random" : "all-slow",
			         got.checksum, ref.checksum);
		atm_plan_destroy(p);
	}
	atm_opt_options o;
	atm_opt_options_default(&o);
	/* any valid plan will do: these numbers must not depend on how good it is */
	o.time_limit_s = 2;
	o.mip_gap = 0.05;
	int moved = 0;
	for (int r = 0; r < 2; r++) {
		int64_t limit;
		assert_int_equal(atm_opt_limit_from_ratio(g, r ? 8 : 4, 1, &limit), ATM_OK);
		for (int f = ATM_OPT_STATIC; f <= ATM_OPT_ASYNCHRONOUS; f++) {
			atm_plan *p = NULL;
			if (atm_opt_plan(&p, g, prof, limit, (atm_opt_formulation)f, &o, NULL) < 0)
				fail_msg("%s: %s", model, atm_errmsg());
			moved += atm_plan_n_moves(p);
			atm_opt_check_result c;
			assert_int_equal(atm_opt_check(p, prof, &o, &c), ATM_OK);
			assert_true(c.fast_peak_bytes <= limit);
			struct exec_run got = run_plan(p);
			if (strcmp(got.checksum, ref.checksum))
				fail_msg("%s %s at %lld bytes: weights %s, all fast %s", model,
				         atm_opt_formulation_name((atm_opt_formulation)f), (long long)limit,
				         got.checksum, ref.checksum);
			assert_int_equal(got.n_losses, ref.n_losses);
			if (memcmp(got.losses, ref.losses, (size_t)ref.n_losses * sizeof ref.losses[0]))
				fail_msg("%s %s: the losses differ from all fast", model,
				         atm_opt_formulation_name((atm_opt_formulation)f));
			atm_plan_destroy(p);
		}
	}
	/* the plans did move tensors: the comparison exercised the move machinery */
	assert_true(moved > 0);
	atm_plan_destroy(fast);
	atm_profile_destroy(prof);
	atm_graph_destroy(g);
}

static void test_runtime_tiny_cnn_plans_match_all_fast(void **state)
{
	(void)state;
	same_numbers("tiny_cnn");
}

static void test_runtime_tiny_mlp_plans_match_all_fast(void **state)
{
	(void)state;
	same_numbers("tiny_mlp");
}

/* the transformers: tied parameters, i32 token inputs, batched matmuls and their moves */
static void test_runtime_tiny_transformers_plans_match_all_fast(void **state)
{
	(void)state;
	same_numbers("tiny_gpt");
	same_numbers("tiny_bert");
	same_numbers("tiny_vit");
}

/* SiLU and the broadcast product: their tensors moved, evicted and fetched like any other */
static void test_runtime_tiny_se_plans_match_all_fast(void **state)
{
	(void)state;
	same_numbers("tiny_se");
}

/* the LLaMA-style decoder: RMS norms, rotary embeddings, repeated key/value heads, SwiGLU */
static void test_runtime_tiny_llama_plans_match_all_fast(void **state)
{
	(void)state;
	same_numbers("tiny_llama");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runtime_tiny_cnn_plans_match_all_fast),
		cmocka_unit_test(test_runtime_tiny_mlp_plans_match_all_fast),
		cmocka_unit_test(test_runtime_tiny_transformers_plans_match_all_fast),
		cmocka_unit_test(test_runtime_tiny_se_plans_match_all_fast),
		cmocka_unit_test(test_runtime_tiny_llama_plans_match_all_fast),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
