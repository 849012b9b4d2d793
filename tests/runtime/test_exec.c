/* test_exec.c -- the executor: placements do not change the numbers, training works, faults are reported */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_runtime.h"
#include "atm_zoo.h"
#include "common/exec_runs.h"

static atm_graph *build(const char *model)
{
	atm_graph *g = NULL;
	atm_zoo_opts o = {.batch = 4};
	if (atm_zoo_build(&g, model, &o) < 0)
		fail_msg("%s: %s", model, atm_errmsg());
	return g;
}

/* run_plan -- iters steps of p, no warm-up, seed 42 */
static struct exec_run run_plan(const atm_plan *p, int iters, const char *emulate)
{
	atm_exec_opts o = {.iters = iters, .warmup = -1, .seed = 42, .quiet = true, .emulate = emulate};
	return exec_run(p, &o);
}

/* placements_agree -- all-fast, all-slow and five random plans give bitwise the same step */
static void placements_agree(const char *model)
{
	atm_graph *g = build(model);
	atm_exec_opts o = {.iters = 3, .warmup = -1, .seed = 42, .quiet = true};
	int32_t moves, async, recomputes;
	expect_placements_agree(g, &o, 5, &moves, &async, &recomputes);
	/* the random plans did exercise both kinds of move, and recomputations */
	assert_true(moves > 20);
	assert_true(async > 5);
	assert_true(recomputes > 0);
	atm_graph_destroy(g);
}

/* test_exec_placements_agree_tiny_cnn -- and its random plans made tensors again through links
 * and ran nodes with several outputs again */
static void test_exec_placements_agree_tiny_cnn(void **state)
{
	(void)state;
	placements_agree("tiny_cnn");
	atm_graph *g = build("tiny_cnn");
	int links = 0, multi = 0;
	for (uint64_t seed = 1; seed <= 5; seed++) { /* expect_placements_agree's seeds */
		atm_plan *p = NULL;
		assert_int_equal(atm_plan_random(&p, g, seed), ATM_OK);
		for (int32_t i = 0; i < atm_plan_n_recomputes(p); i++) {
			const atm_recompute *r = atm_plan_recompute(p, i);
			links += atm_recompute_is_link(g, r);
			multi += atm_graph_node(g, atm_recompute_producer(g, r->tensor))->n_out > 1;
		}
		atm_plan_destroy(p);
	}
	assert_true(links > 0);
	assert_true(multi > 0);
	atm_graph_destroy(g);
}

static void test_exec_placements_agree_tiny_mlp(void **state)
{
	(void)state;
	placements_agree("tiny_mlp");
}

/* test_exec_bf16_placements_agree -- tiny_cnn in bf16 mixed precision: all-fast, all-slow and
 * random plans that move and recompute bf16 tensors give bitwise the same step, and the run
 * counts every node with bf16 operands on the CPU's bf16 kernels or widened (batch norm) */
static void test_exec_bf16_placements_agree(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	atm_zoo_opts zo = {.batch = 4, .bf16 = true};
	assert_int_equal(atm_zoo_build(&g, "tiny_cnn", &zo), ATM_OK);
	atm_exec_opts o = {.iters = 2, .warmup = -1, .seed = 42, .quiet = true};
	int32_t moves, async, recomputes, half = 0, bf16_moved = 0;
	expect_placements_agree(g, &o, 5, &moves, &async, &recomputes);
	assert_true(moves > 20 && async > 5 && recomputes > 0);
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		const atm_node *n = atm_graph_node(g, k);
		bool b = false;
		for (int i = 0; n->op != ATM_OP_CAST && i < n->n_in + n->n_out; i++)
			b |= atm_graph_tensor(g, i < n->n_in ? n->in[i] : n->out[i - n->n_in])->dtype ==
			     ATM_BF16;
		half += b;
	}
	atm_plan *p = NULL;
	assert_int_equal(atm_plan_random(&p, g, 3), ATM_OK);
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++)
		bf16_moved += atm_graph_tensor(g, t)->dtype == ATM_BF16 &&
		              atm_plan_location(p, t) == ATM_LOC_SLOW;
	assert_true(bf16_moved > 0);
	struct exec_run r = run_plan(p, 1, NULL);
	assert_int_equal(r.r.n_bf16_native + r.r.n_bf16_widened, half);
	assert_true(r.r.n_bf16_widened > 0); /* batch norm, plain C */
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

static void test_exec_loss_falls(void **state)
{
	(void)state;
	atm_graph *g = build("tiny_cnn");
	atm_plan *p = NULL;
	assert_int_equal(atm_plan_random(&p, g, 9), ATM_OK);
	struct exec_run r = run_plan(p, 20, NULL);
	assert_int_equal(r.n_losses, 20);
	float first = (r.losses[0] + r.losses[1]) / 2, last = (r.losses[18] + r.losses[19]) / 2;
	if (!(last < 0.8f * first))
		fail_msg("loss did not fall: %g -> %g", (double)first, (double)last);
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

static void test_exec_emulation_slows_slow_io(void **state)
{
	(void)state;
	atm_graph *g = build("tiny_cnn");
	atm_plan *p = NULL;
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_FAST), ATM_OK);
	struct exec_run fast = run_plan(p, 2, "optane");
	atm_plan_destroy(p);
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_SLOW), ATM_OK);
	struct exec_run slow = run_plan(p, 2, "optane");
	atm_plan_destroy(p);
	assert_true(fast.r.emulated && slow.r.emulated);
	assert_string_equal(slow.r.emulation, "optane");
	assert_true(fast.r.emulation_wait_s == 0);
	assert_true(slow.r.emulation_wait_s > 0);
	assert_true(slow.r.slow_tier.emulated);
	expect_same_run(&fast, &slow, "emulated all-slow");
	atm_graph_destroy(g);
}

static void test_exec_emulated_2lm_caches_slow_memory(void **state)
{
	(void)state;
	atm_graph *g = build("tiny_cnn");
	atm_plan *p = NULL;
	atm_exec *e = NULL;
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_SLOW), ATM_OK);
	struct exec_run slow = run_plan(p, 2, "optane");
	/* after a warm-up step the cache holds the whole footprint: a measured step misses only
	 * lines no earlier step touched, in the tails of the heap's blocks (256-byte aligned) that a
	 * tensor reused reaching further than the block's earlier tensors, and evicts nothing */
	atm_exec_opts o = {.iters = 2, .warmup = 1, .seed = 42, .quiet = true, .emulate = "optane",
	                   .twolm_bytes = 64 << 20};
	assert_int_equal(atm_exec_new(&e, p, &o), ATM_OK);
	assert_int_equal(atm_exec_run(e), ATM_OK);
	const atm_exec_result *r = atm_exec_result_get(e);
	int64_t padding_bytes = 0;
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++) {
		int64_t bytes = atm_graph_tensor(g, t)->bytes;
		padding_bytes += (bytes + 255) / 256 * 256 - bytes;
	}
	assert_true(r->twolm_step.read_bytes <= padding_bytes);
	assert_int_equal(r->twolm_step.written_bytes, 0);
	assert_int_equal(r->twolm_step.read_bytes, r->twolm_step.n_misses * ATM_2LM_LINE_BYTES);
	assert_true(slow.r.emulation_wait_s > 0);
	assert_int_equal(slow.r.twolm_step.read_bytes, 0);
	assert_string_equal(r->emulation, "optane+2lm");
	assert_int_equal(r->twolm_bytes, 64 << 20);
	atm_exec_destroy(e);
	/* a cache smaller than the footprint: reads miss, writes fill, dirty lines go back, and the
	 * step waits what atm_twolm_wait_s (which the optimizer's prediction adds) says for that
	 * traffic at the emulated tier's rates (a wait ends late only when its thread is preempted) */
	o.iters = 1;
	o.twolm_bytes = 64 << 10;
	assert_int_equal(atm_exec_new(&e, p, &o), ATM_OK);
	assert_int_equal(atm_exec_run(e), ATM_OK);
	r = atm_exec_result_get(e);
	const atm_twolm_traffic *tr = &r->twolm_step;
	assert_true(tr->fill_bytes > 0 && tr->read_bytes > tr->fill_bytes && tr->written_bytes > 0);
	double want = atm_twolm_wait_s(tr, r->slow_tier.read_gbps, r->slow_tier.write_gbps,
	                             r->slow_tier.emulation_fast_gbps);
	assert_true(want > 0);
	assert_true(r->emulation_wait_s >= want * (1 - 1e-9));
	assert_true(r->emulation_wait_s <= want * 1.5 + 0.05);
	atm_exec_destroy(e);
	o.iters = 2;
	/* a cache under one line is refused, naming the size */
	o.twolm_bytes = 32;
	assert_int_equal(atm_exec_new(&e, p, &o), ATM_E_USAGE);
	assert_null(e);
	assert_non_null(strstr(atm_errmsg(), "a 2LM cache of 32 bytes holds no 4096-byte line"));
	o.twolm_bytes = 64 << 20;
	/* 2LM needs emulation, and an all-slow plan */
	o.emulate = NULL;
	assert_int_equal(atm_exec_new(&e, p, &o), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "--emulate"));
	atm_plan_destroy(p);
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_FAST), ATM_OK);
	o.emulate = "optane";
	assert_int_equal(atm_exec_new(&e, p, &o), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "all-slow"));
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

static void test_exec_fast_limit_is_enforced(void **state)
{
	(void)state;
	atm_graph *g = build("tiny_cnn");
	atm_plan *p = NULL;
	atm_exec *e = (atm_exec *)1;
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_FAST), ATM_OK);
	atm_plan_info_of(p)->fast_limit_bytes = 64 * 1024;
	atm_exec_opts o = {.quiet = true};
	assert_int_equal(atm_exec_new(&e, p, &o), ATM_E_INFEASIBLE);
	assert_null(e);
	assert_non_null(strstr(atm_errmsg(), "over the limit of 65536"));
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

/* the executor's own guard: a plan whose limit shrinks under a built executor (atm_exec_new
 * lays out only plans within theirs) is stopped at the first block past it, by name */
static void test_exec_high_water_guard(void **state)
{
	(void)state;
	atm_graph *g = build("tiny_cnn");
	atm_plan *p = NULL;
	atm_exec *e = NULL;
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_FAST), ATM_OK);
	atm_exec_opts o = {.quiet = true, .iters = 1, .warmup = -1, .seed = 42};
	atm_plan_info_of(p)->fast_limit_bytes = 64 << 20;
	assert_int_equal(atm_exec_new(&e, p, &o), ATM_OK);
	assert_int_equal(atm_exec_run(e), ATM_OK);
	const atm_exec_result *r = atm_exec_result_get(e);
	/* every tensor fast: the arena held what the layout laid out, and the first block that
	 * reached it is named */
	assert_true(r->fast_high_water_bytes > 0);
	assert_true(r->fast_high_water_bytes <= 64 << 20);
	assert_non_null(strstr(r->fast_high_water_at, "tensor '"));
	int64_t held = r->fast_high_water_bytes;
	atm_exec_destroy(e);
	e = NULL;
	assert_int_equal(atm_exec_new(&e, p, &o), ATM_OK);
	atm_plan_info_of(p)->fast_limit_bytes = held / 2;
	assert_int_equal(atm_exec_run(e), ATM_E_OVER_LIMIT);
	assert_non_null(strstr(atm_errmsg(), "fast memory: tensor '"));
	assert_non_null(strstr(atm_errmsg(), "past the plan's limit of"));
	assert_int_equal(atm_exit_code(ATM_E_OVER_LIMIT), 9);
	atm_exec_destroy(e);
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

static void test_exec_missing_pmem_dir(void **state)
{
	(void)state;
	atm_graph *g = build("tiny_mlp");
	atm_plan *p = NULL;
	atm_exec *e = (atm_exec *)1;
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_SLOW), ATM_OK);
	atm_exec_opts o = {.quiet = true,
	                   .tiers = {.slow = "pmem-dir", .pmem_dir = "/nonexistent/autotm"}};
	assert_int_equal(atm_exec_new(&e, p, &o), ATM_E_IO);
	assert_null(e);
	assert_non_null(strstr(atm_errmsg(), "/nonexistent/autotm"));
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

static void test_exec_stops_when_interrupted(void **state)
{
	(void)state;
	atm_graph *g = build("tiny_mlp");
	atm_plan *p = NULL;
	atm_exec *e = NULL;
	static volatile sig_atomic_t stop = 1;
	assert_int_equal(atm_plan_random(&p, g, 3), ATM_OK);
	atm_exec_opts o = {.quiet = true, .stop = &stop};
	assert_int_equal(atm_exec_new(&e, p, &o), ATM_OK);
	assert_int_equal(atm_exec_run(e), ATM_E_INTERRUPTED);
	assert_non_null(strstr(atm_errmsg(), "interrupted"));
	/* the executor stays usable: the pools were given back */
	stop = 0;
	assert_int_equal(atm_exec_run(e), ATM_OK);
	atm_exec_destroy(e);
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

/* test_exec_steps_in_turns_match_a_run -- two executors stepped in turns, past the steps their
 * options asked for (the losses grow), train as one atm_exec_run of as many steps: the same
 * losses and weights, the warm-up left out of the measured steps */
static void test_exec_steps_in_turns_match_a_run(void **state)
{
	(void)state;
	atm_graph *g = build("tiny_mlp");
	atm_plan *fast = NULL, *slow = NULL;
	atm_exec *e[2] = {NULL, NULL};
	assert_int_equal(atm_plan_uniform(&fast, g, ATM_LOC_FAST), ATM_OK);
	assert_int_equal(atm_plan_uniform(&slow, g, ATM_LOC_SLOW), ATM_OK);
	atm_exec_opts o = {.iters = 1, .warmup = 2, .seed = 42, .quiet = true};
	assert_int_equal(atm_exec_new(&e[0], fast, &o), ATM_OK);
	assert_int_equal(atm_exec_new(&e[1], slow, &o), ATM_OK);
	for (int s = 0; s < 7; s++)
		for (int k = 0; k < 2; k++) {
			double dt = 0;
			assert_int_equal(atm_exec_step(e[k], &dt), ATM_OK);
			assert_true(dt > 0);
		}
	for (int k = 0; k < 2; k++)
		assert_int_equal(atm_exec_finish(e[k]), ATM_OK);
	atm_exec_opts all = {.iters = 5, .warmup = 2, .seed = 42, .quiet = true};
	struct exec_run ref = exec_run(fast, &all);
	for (int k = 0; k < 2; k++) {
		const atm_exec_result *r = atm_exec_result_get(e[k]);
		assert_int_equal(r->n_losses, 7);
		assert_int_equal(r->n_iters, 5);
		assert_true(r->actual_runtime_s > 0 && r->actual_runtime_s <= r->mean_runtime_s);
		assert_string_equal(r->weights_checksum, ref.checksum);
		assert_memory_equal(r->losses, ref.losses, 7 * sizeof *r->losses);
		atm_exec_destroy(e[k]);
	}
	atm_plan_destroy(fast);
	atm_plan_destroy(slow);
	atm_graph_destroy(g);
}

/* recompute_all -- base (all-fast or all-slow) with every eligible tensor dropped after one use
 * and made again before its next, at the longest such gap (its backward use), wherever the
 * rules allow beside those taken already (each tried on a schedule); *n how many */
static atm_plan *recompute_all(const atm_graph *g, unsigned base, int32_t *n)
{
	int32_t nt = atm_graph_n_tensors(g), nn = atm_graph_n_nodes(g);
	atm_recompute *rs = calloc((size_t)nt, sizeof *rs);
	atm_plan *p = NULL;
	assert_non_null(rs);
	*n = 0;
	for (int32_t t = 0; t < nt; t++) {
		if (!atm_recompute_eligible(g, t, NULL))
			continue;
		int32_t prev = atm_recompute_producer(g, t), best = 0;
		atm_recompute r = {.tensor = t};
		for (int32_t k = prev + 1; k < nn; k++) {
			const atm_node *x = atm_graph_node(g, k);
			for (int i = 0; i < x->n_in; i++)
				if (x->in[i] == t) {
					if (k - prev > best) {
						best = k - prev;
						r.drop_after = prev;
						r.before = k;
					}
					prev = k;
					break;
				}
		}
		if (best < 2)
			continue; /* nothing between the two to make room for */
		rs[*n] = r;
		assert_int_equal(atm_plan_uniform(&p, g, base), ATM_OK);
		for (int32_t i = 0; i <= *n; i++)
			assert_int_equal(atm_plan_add_recompute(p, &rs[i]), ATM_OK);
		atm_schedule *s = NULL;
		if (atm_schedule_new(&s, p) == ATM_OK)
			++*n;
		atm_schedule_destroy(s);
		atm_plan_destroy(p);
	}
	assert_int_equal(atm_plan_uniform(&p, g, base), ATM_OK);
	for (int32_t i = 0; i < *n; i++)
		assert_int_equal(atm_plan_add_recompute(p, &rs[i]), ATM_OK);
	free(rs);
	return p;
}

/* test_exec_recompute_all_is_bitwise -- tiny_cnn with every tensor recomputed that can be (from
 * operands in fast memory, then in slow) trains to all-fast's losses and weights bit for bit,
 * within a fast limit all-fast exceeds, and reports the recomputations it ran */
static void test_exec_recompute_all_is_bitwise(void **state)
{
	(void)state;
	atm_graph *g = build("tiny_cnn");
	atm_plan *fast = NULL;
	atm_schedule *s = NULL;
	assert_int_equal(atm_plan_uniform(&fast, g, ATM_LOC_FAST), ATM_OK);
	assert_int_equal(atm_schedule_new(&s, fast), ATM_OK);
	int64_t fast_peak = atm_schedule_stats_get(s)->fast_peak_bytes;
	atm_schedule_destroy(s);
	struct exec_run ref = run_plan(fast, 3, NULL);
	for (unsigned base = ATM_LOC_FAST; base <= ATM_LOC_SLOW; base++) {
		int32_t n = 0;
		atm_plan *p = recompute_all(g, base, &n);
		assert_true(n >= 3);
		assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
		const atm_schedule_stats *st = atm_schedule_stats_get(s);
		assert_int_equal(st->n_recomputes, n);
		if (base == ATM_LOC_FAST) {
			assert_true(st->fast_peak_bytes < fast_peak);
			atm_plan_info_of(p)->fast_limit_bytes = st->fast_arena_bytes;
		}
		atm_schedule_destroy(s);
		struct exec_run got = run_plan(p, 3, NULL);
		expect_same_run(&ref, &got, base == ATM_LOC_FAST ? "all-fast, every tensor recomputed"
		                                                : "all-slow, every tensor recomputed");
		assert_int_equal(got.r.n_recomputes, n);
		assert_int_equal(got.r.moves.n_recomputes, n);
		assert_true(got.r.recompute_s > 0);
		if (base == ATM_LOC_FAST)
			assert_true(got.r.fast_high_water_bytes <= atm_plan_info_get(p)->fast_limit_bytes);
		atm_plan_destroy(p);
	}
	assert_int_equal(ref.r.n_recomputes, 0);
	assert_true(ref.r.recompute_s == 0);
	atm_plan_destroy(fast);
	atm_graph_destroy(g);
}

/* named -- g's tensor called name */
static int32_t named(const atm_graph *g, const char *name)
{
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++)
		if (!strcmp(atm_graph_tensor(g, t)->name, name))
			return t;
	fail_msg("%s has no tensor '%s'", atm_graph_name(g), name);
	return -1;
}

/* recompute_plan -- base (all-fast or all-slow) with n recomputations, each given by its tensor's
 * name, drop_after and before */
static atm_plan *recompute_plan(const atm_graph *g, unsigned base, int n, const char *const *names,
                                const int32_t (*at)[2])
{
	atm_plan *p = NULL;
	assert_int_equal(atm_plan_uniform(&p, g, base), ATM_OK);
	for (int i = 0; i < n; i++) {
		atm_recompute r = {named(g, names[i]), at[i][0], at[i][1]};
		if (atm_plan_add_recompute(p, &r) < 0)
			fail_msg("%s: %s", names[i], atm_errmsg());
	}
	return p;
}

/* test_exec_recompute_chains_and_multi_output_are_bitwise -- tiny_cnn (batch 4) with outputs of
 * batch norm and max pooling made again (their other outputs, live ones among them, written
 * into scratch), and relu outputs made again through links (bn2.y for relu2.y; res.add.y and
 * res.bn.y, two deep, for res.relu.y), from fast and from slow memory: all-fast's losses and
 * weights bit for bit, within the arena the schedule lays out */
static void test_exec_recompute_chains_and_multi_output_are_bitwise(void **state)
{
	(void)state;
	atm_graph *g = build("tiny_cnn");
	atm_plan *fast = NULL;
	assert_int_equal(atm_plan_uniform(&fast, g, ATM_LOC_FAST), ATM_OK);
	struct exec_run ref = run_plan(fast, 3, NULL);
	/* pool2.y (argmax live beside it), res.bn.y, bn2.mean (y and var in scratch) */
	static const char *const multi[] = {"pool2.y", "res.bn.y", "bn2.mean"};
	static const int32_t multi_at[][2] = {{8, 43}, {7, 8}, {3, 47}};
	/* relu2.y before relu2.bwd from bn2.y, and res.relu.y before a.conv.bwd_weights from
	 * res.add.y from res.bn.y, listed after what reads them */
	static const char *const chain[] = {"relu2.y", "bn2.y", "res.relu.y", "res.add.y", "res.bn.y"};
	static const int32_t chain_at[][2] = {{5, 46}, {4, 46}, {12, 35}, {9, 35}, {8, 35}};
	for (int k = 0; k < 4; k++) {
		unsigned base = k % 2 ? ATM_LOC_SLOW : ATM_LOC_FAST;
		bool is_chain = k >= 2;
		int n = is_chain ? 5 : 3;
		atm_plan *p = recompute_plan(g, base, n, is_chain ? chain : multi,
		                             is_chain ? chain_at : multi_at);
		atm_schedule *s = NULL;
		if (atm_schedule_new(&s, p) < 0)
			fail_msg("%s: %s", is_chain ? "chains" : "multi-output", atm_errmsg());
		assert_int_equal(atm_schedule_stats_get(s)->n_recomputes, n);
		if (base == ATM_LOC_FAST)
			atm_plan_info_of(p)->fast_limit_bytes = atm_schedule_stats_get(s)->fast_arena_bytes;
		atm_schedule_destroy(s);
		char what[96];
		snprintf(what, sizeof what, "%s, %s recomputed", base == ATM_LOC_FAST ? "all-fast" : "all-slow",
		         is_chain ? "relu outputs through links" : "multi-output producers' outputs");
		struct exec_run got = run_plan(p, 3, NULL);
		expect_same_run(&ref, &got, what);
		assert_int_equal(got.r.n_recomputes, n);
		if (base == ATM_LOC_FAST)
			assert_true(got.r.fast_high_water_bytes <= atm_plan_info_get(p)->fast_limit_bytes);
		atm_plan_destroy(p);
	}
	atm_plan_destroy(fast);
	atm_graph_destroy(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_placements_agree_tiny_cnn),
		cmocka_unit_test(test_exec_placements_agree_tiny_mlp),
		cmocka_unit_test(test_exec_bf16_placements_agree),
		cmocka_unit_test(test_exec_loss_falls),
		cmocka_unit_test(test_exec_emulation_slows_slow_io),
		cmocka_unit_test(test_exec_emulated_2lm_caches_slow_memory),
		cmocka_unit_test(test_exec_fast_limit_is_enforced),
		cmocka_unit_test(test_exec_high_water_guard),
		cmocka_unit_test(test_exec_missing_pmem_dir),
		cmocka_unit_test(test_exec_stops_when_interrupted),
		cmocka_unit_test(test_exec_steps_in_turns_match_a_run),
		cmocka_unit_test(test_exec_recompute_all_is_bitwise),
		cmocka_unit_test(test_exec_recompute_chains_and_multi_output_are_bitwise),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
