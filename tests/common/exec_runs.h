/* exec_runs.h -- run a plan for a few steps and compare runs bitwise: the runtime's main property
 *
 *     atm_exec_opts o = {.iters = 2, .quiet = true};
 *     struct exec_run a = exec_run(p, &o), b = exec_run(q, &o);
 *     expect_same_run(&a, &b, "plan q");          // same losses and weights, bit for bit
 */
#ifndef ATM_TEST_EXEC_RUNS_H
#define ATM_TEST_EXEC_RUNS_H

#include <stdio.h>
#include <string.h>

#include "atm_runtime.h"

#define EXEC_RUN_MAX_LOSSES 32

struct exec_run {
	char checksum[17];
	float losses[EXEC_RUN_MAX_LOSSES];
	int n_losses;
	atm_exec_result r; /* its pointers cleared: they die with the executor */
};

/* exec_run -- p's steps under o; what the run measured copied out (fails the test on error) */
__attribute__((unused)) static struct exec_run exec_run(const atm_plan *p, const atm_exec_opts *o)
{
	struct exec_run out;
	atm_exec *e = NULL;
	if (atm_exec_new(&e, p, o) < 0 || atm_exec_run(e) < 0)
		fail_msg("run of a %s plan: %s", atm_plan_info_get(p)->formulation, atm_errmsg());
	const atm_exec_result *r = atm_exec_result_get(e);
	memset(&out, 0, sizeof out);
	out.r = *r;
	out.r.losses = NULL;
	out.r.kernel_s = NULL;
	memcpy(out.checksum, r->weights_checksum, sizeof out.checksum);
	out.n_losses = r->n_losses < EXEC_RUN_MAX_LOSSES ? r->n_losses : EXEC_RUN_MAX_LOSSES;
	memcpy(out.losses, r->losses, (size_t)out.n_losses * sizeof out.losses[0]);
	atm_exec_destroy(e);
	return out;
}

/* expect_same_run -- the same weights and losses, bit for bit */
__attribute__((unused)) static void expect_same_run(const struct exec_run *a,
                                                    const struct exec_run *b, const char *what)
{
	if (strcmp(a->checksum, b->checksum))
		fail_msg("%s: weights differ (%s vs %s)", what, a->checksum, b->checksum);
	assert_int_equal(a->n_losses, b->n_losses);
	if (memcmp(a->losses, b->losses, (size_t)a->n_losses * sizeof a->losses[0]))
		fail_msg("%s: losses differ", what);
}

/* expect_placements_agree -- under o, all-slow and the random plans of seeds 1..n_random give
 * all-fast's losses and weights bit for bit; *moves and *async count the random plans' moves
 * and *recomputes the recomputations their steps ran (so that a caller can check the machinery
 * ran); all-fast's run is returned */
__attribute__((unused)) static struct exec_run expect_placements_agree(const atm_graph *g,
                                                                       const atm_exec_opts *o,
                                                                       int n_random, int32_t *moves,
                                                                       int32_t *async,
                                                                       int32_t *recomputes)
{
	atm_plan *p = NULL;
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_FAST), ATM_OK);
	struct exec_run ref = exec_run(p, o);
	atm_plan_destroy(p);
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_SLOW), ATM_OK);
	struct exec_run slow = exec_run(p, o);
	atm_plan_destroy(p);
	expect_same_run(&ref, &slow, "all-slow");
	*moves = *async = *recomputes = 0;
	for (uint64_t seed = 1; seed <= (uint64_t)n_random; seed++) {
		char what[96];
		assert_int_equal(atm_plan_random(&p, g, seed), ATM_OK);
		struct exec_run r = exec_run(p, o);
		snprintf(what, sizeof what, "%s random seed %llu", atm_graph_name(g),
		         (unsigned long long)seed);
		expect_same_run(&ref, &r, what);
		*moves += r.r.moves.n_moves_to_fast + r.r.moves.n_moves_to_slow;
		*async += r.r.moves.n_async_to_fast + r.r.moves.n_async_to_slow;
		assert_int_equal(r.r.n_recomputes, atm_plan_n_recomputes(p));
		*recomputes += r.r.n_recomputes;
		atm_plan_destroy(p);
	}
	return ref;
}

#endif /* ATM_TEST_EXEC_RUNS_H */
