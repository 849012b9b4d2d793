/* test_gpu.c -- the GPU path: placements and device-only plans give bitwise the same step, limits are kept
 *
 * Runs on the simulated GPU; with --cuda on a real one (exit 77, skipped, when this build has
 * no CUDA or the machine no GPU).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/test_parts.h"

#include "atm_optimizer.h"
#include "atm_runtime.h"
#include "atm_zoo.h"
#include "common/exec_runs.h"
#include "optimizer/synth.h"

static const char *mode = "sim";

/* The update the steps built here end in (SGD unless a test says otherwise). */
static atm_update_kind update = ATM_UPDATE_SGD;

static atm_graph *build(const char *model)
{
	atm_graph *g = NULL, *c = NULL;
	/* test_vgg at the small preset's 32x32 images: VGG-19's every layer in seconds */
	atm_zoo_opts o = {.batch = 4, .image = strcmp(model, "test_vgg") ? 0 : 32};
	if (atm_zoo_build(&g, model, &o) < 0)
		fail_msg("%s: %s", model, atm_errmsg());
	if (update == ATM_UPDATE_SGD)
		return g;
	atm_update u = atm_update_defaults(update);
	if (atm_graph_with_update(g, &u, &c) < 0)
		fail_msg("%s: %s", model, atm_errmsg());
	atm_graph_destroy(g);
	return c;
}

/* run_plan -- three steps of p on the GPU */
static struct exec_run run_plan(const atm_plan *p)
{
	atm_exec_opts o = {.iters = 2, .warmup = 1, .seed = 11, .quiet = true, .gpu = {.mode = mode}};
	return exec_run(p, &o);
}

/* placements_agree -- all fast, all slow (kernels reading pinned host memory) and random plans */
static void placements_agree(const char *model)
{
	atm_graph *g = build(model);
	atm_exec_opts o = {.iters = 2, .warmup = 1, .seed = 11, .quiet = true, .gpu = {.mode = mode}};
	int32_t moves, async, recomputes;
	struct exec_run ref = expect_placements_agree(g, &o, 3, &moves, &async, &recomputes);
	assert_string_equal(ref.r.backend, strcmp(mode, "sim") ? "cuda" : "gpu-sim");
	assert_int_equal(ref.r.simulated, !strcmp(mode, "sim"));
	/* energy: a simulated GPU has none (absent, never 0); a real one's counter climbs where the
	 * driver's NVML reads it */
	if (ref.r.simulated)
		assert_true(ref.r.energy_per_step_j < 0);
	else if (ref.r.energy_per_step_j >= 0)
		assert_true(ref.r.energy_per_step_j > 0 && ref.r.gpu_state.sm_mhz > 0);
	assert_true(ref.losses[0] > 0 && ref.losses[ref.n_losses - 1] < ref.losses[0]);
	assert_true(moves > 10);
	assert_true(async > 3);
	assert_true(recomputes > 0);
	atm_graph_destroy(g);
}

static void test_gpu_placements_agree_tiny_cnn(void **state)
{
	(void)state;
	placements_agree("tiny_cnn");
}

static void test_gpu_placements_agree_tiny_mlp(void **state)
{
	(void)state;
	placements_agree("tiny_mlp");
}

/* kernels_all_fast -- every kernel of p's step uses its operands in fast memory */
static void kernels_all_fast(const atm_plan *p)
{
	atm_schedule *s = NULL;
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	const atm_graph *g = atm_plan_graph(p);
	for (int32_t i = 0; i < atm_schedule_n_events(s); i++) {
		const atm_event *ev = atm_schedule_event(s, i);
		if (ev->kind != ATM_EV_KERNEL)
			continue;
		const atm_node *n = atm_graph_node(g, ev->node);
		for (int k = 0; k < n->n_in + n->n_out; k++)
			if (ev->cfg[k] != ATM_LOC_FAST)
				fail_msg("%s plan: node '%s' uses operand %d in slow memory",
				         atm_plan_info_get(p)->formulation, n->name, k);
	}
	atm_schedule_destroy(s);
}

/* device_plans -- static, synchronous and asynchronous plans with every kernel on the device:
 * they keep the limit, agree with the checker, rank as the formulations nest, and run
 * bitwise as all fast */
static void device_plans(const char *model)
{
	atm_graph *g = build(model);
	atm_profile *prof = NULL;
	atm_plan *fast = NULL;
	atm_opt_options o;
	atm_opt_options_default(&o);
	o.device_only = true;
	o.time_limit_s = 4;
	o.mip_gap = 0;
	assert_int_equal(synth_profile(g, &prof), ATM_OK);
	assert_int_equal(atm_plan_uniform(&fast, g, ATM_LOC_FAST), ATM_OK);
	struct exec_run ref = run_plan(fast);
	int64_t need, peak;
	int32_t node;
	atm_graph_stats gs;
	assert_int_equal(atm_opt_min_limit(g, &o, &need, &node), ATM_OK);
	assert_int_equal(atm_graph_stats_compute(g, &gs), ATM_OK);
	peak = gs.peak_bytes;
	assert_true(need > 0 && need < peak);
	/* below what the kernels' operands need: refused, naming the least limit */
	atm_plan *p = NULL;
	assert_int_equal(atm_opt_plan(&p, g, prof, need / 2, ATM_OPT_SYNCHRONOUS, &o, NULL),
	                 ATM_E_INFEASIBLE);
	assert_null(p);
	assert_non_null(strstr(atm_errmsg(), "smallest limit that could work"));
	int64_t limit = peak - (peak - need) / 4;
	double predicted[3] = {-1, -1, -1};
	int n_moved = 0;
	for (int f = ATM_OPT_STATIC; f <= ATM_OPT_ASYNCHRONOUS; f++) {
		atm_status rc = atm_opt_plan(&p, g, prof, limit, (atm_opt_formulation)f, &o, NULL);
		if (rc == ATM_E_INFEASIBLE && f == ATM_OPT_STATIC)
			continue; /* static cannot move what its kernels need: often nothing fits */
		if (rc < 0)
			fail_msg("%s %s: %s", model, atm_opt_formulation_name((atm_opt_formulation)f),
			         atm_errmsg());
		atm_opt_check_result c;
		assert_int_equal(atm_opt_check(p, prof, &o, &c), ATM_OK);
		assert_true(c.fast_arena_bytes <= limit);
		double pr = atm_plan_info_get(p)->predicted_runtime_s;
		assert_true(pr > 0);
		assert_true(c.predicted_s <= pr * (1 + 1e-9) && c.predicted_s >= pr * (1 - 1e-9));
		predicted[f - ATM_OPT_STATIC] = pr;
		kernels_all_fast(p);
		n_moved += atm_plan_n_moves(p);
		struct exec_run got = run_plan(p);
		expect_same_run(&ref, &got, atm_opt_formulation_name((atm_opt_formulation)f));
		atm_plan_destroy(p);
		p = NULL;
	}
	assert_true(n_moved > 0);
	/* each formulation may do what the one before it does: within the gap, never worse */
	if (predicted[0] > 0)
		assert_true(predicted[1] <= predicted[0] * (1 + 1e-6));
	assert_true(predicted[2] <= predicted[1] * (1 + 1e-6));
	atm_plan_destroy(fast);
	atm_profile_destroy(prof);
	atm_graph_destroy(g);
}

static void test_gpu_device_plans_tiny_cnn(void **state)
{
	(void)state;
	device_plans("tiny_cnn");
}

static void test_gpu_device_plans_tiny_mlp(void **state)
{
	(void)state;
	device_plans("tiny_mlp");
}

/* the updates with state on the device: AdamW's averages and step and the momentum buffer
 * placed by the plans, moved to the device for their update, bitwise as all fast */
static void test_gpu_optimizers(void **state)
{
	(void)state;
	update = ATM_UPDATE_ADAMW;
	device_plans("tiny_mlp");
	placements_agree("tiny_cnn");
	update = ATM_UPDATE_MOMENTUM;
	device_plans("tiny_cnn");
	update = ATM_UPDATE_SGD;
}

static void test_gpu_device_plans_test_vgg(void **state)
{
	(void)state;
	device_plans("test_vgg");
}

/* test_gpu_baselines -- vdnn, numa and all-fast keep kernels' operands on the device and train
 * as all fast; all-slow and 2lm, which leave them in host memory, are refused */
static void test_gpu_baselines(void **state)
{
	(void)state;
	static const atm_opt_formulation ok[] = {ATM_OPT_VDNN, ATM_OPT_NUMA, ATM_OPT_ALL_FAST};
	static const atm_opt_formulation refused[] = {ATM_OPT_ALL_SLOW, ATM_OPT_2LM};
	atm_graph *g = build("test_vgg");
	atm_profile *prof = NULL;
	atm_plan *p = NULL;
	atm_graph_stats gs;
	atm_opt_options o;
	atm_opt_options_default(&o);
	o.device_only = true;
	assert_int_equal(synth_profile(g, &prof), ATM_OK);
	assert_int_equal(atm_graph_stats_compute(g, &gs), ATM_OK);
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_FAST), ATM_OK);
	struct exec_run ref = run_plan(p);
	/* the device memory the all-fast step takes as laid out: numa then never spills */
	atm_schedule *s = NULL;
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	int64_t limit = atm_schedule_stats_get(s)->fast_arena_bytes;
	atm_schedule_destroy(s);
	atm_plan_destroy(p);
	int vdnn_moves = 0;
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		if (atm_opt_plan(&p, g, prof, limit, ok[i], &o, NULL) < 0)
			fail_msg("%s: %s", atm_opt_formulation_name(ok[i]), atm_errmsg());
		kernels_all_fast(p);
		if (ok[i] == ATM_OPT_VDNN)
			vdnn_moves = atm_plan_n_moves(p);
		struct exec_run got = run_plan(p);
		expect_same_run(&ref, &got, atm_opt_formulation_name(ok[i]));
		atm_plan_destroy(p);
		p = NULL;
	}
	assert_true(vdnn_moves > 0); /* it offloaded convolution inputs */
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		assert_int_equal(atm_opt_plan(&p, g, prof, gs.peak_bytes / 2, refused[i], &o, NULL),
		                 ATM_E_USAGE);
		assert_null(p);
		assert_non_null(strstr(atm_errmsg(), "device memory only"));
	}
	atm_profile_destroy(prof);
	atm_graph_destroy(g);
}

/* test_gpu_algorithm_choice -- a GPU plan runs each kernel's fastest profiled algorithm whose
 * workspace fits ATM_GPU_WORKSPACE_BYTES, and prices the step with it */
static void test_gpu_algorithm_choice(void **state)
{
	(void)state;
	atm_graph *g = build("tiny_cnn");
	atm_profile *prof = NULL;
	atm_plan *p = NULL;
	atm_opt_options o;
	atm_opt_options_default(&o);
	o.device_only = true;
	assert_int_equal(synth_profile(g, &prof), ATM_OK);
	int32_t k = 0;
	while (atm_graph_node(g, k)->op != ATM_OP_CONV_FWD)
		k++;
	atm_profile_entry e;
	assert_int_equal(atm_profile_get(prof, g, k, 0, &e), ATM_OK);
	double t0 = e.min_s;
	atm_profile_entry faster = {.min_s = t0 / 2, .median_s = t0 / 2, .count = 1,
	                         .scratch_bytes = 1 << 20, .estimated = true};
	atm_profile_entry too_big = {.min_s = t0 / 4, .median_s = t0 / 4, .count = 1,
	                          .scratch_bytes = ATM_GPU_WORKSPACE_BYTES + 1, .estimated = true};
	assert_int_equal(atm_profile_put_algo(prof, g, k, 0, 1, &faster), ATM_OK);
	assert_int_equal(atm_profile_put_algo(prof, g, k, 0, 2, &too_big), ATM_OK);
	/* no limit: all fast, with the algorithm */
	assert_int_equal(atm_opt_plan(&p, g, prof, 0, ATM_OPT_SYNCHRONOUS, &o, NULL), ATM_OK);
	assert_int_equal(atm_plan_algo(p, k), 1);
	double with = atm_plan_info_get(p)->predicted_runtime_s;
	atm_plan_destroy(p);
	/* the same limit without the device-only rule knows nothing of algorithms */
	o.device_only = false;
	assert_int_equal(atm_opt_plan(&p, g, prof, 0, ATM_OPT_SYNCHRONOUS, &o, NULL), ATM_OK);
	assert_int_equal(atm_plan_algo(p, k), 0);
	double without = atm_plan_info_get(p)->predicted_runtime_s;
	atm_plan_destroy(p);
	assert_true(with < without && without - with > 0.49 * t0 && without - with < 0.51 * t0);
	/* under a limit the formulations choose it too */
	o.device_only = true;
	atm_graph_stats gs;
	assert_int_equal(atm_graph_stats_compute(g, &gs), ATM_OK);
	for (int f = ATM_OPT_SYNCHRONOUS; f <= ATM_OPT_ASYNCHRONOUS; f++) {
		assert_int_equal(atm_opt_plan(&p, g, prof, gs.peak_bytes * 95 / 100,
		                              (atm_opt_formulation)f, &o, NULL), ATM_OK);
		assert_int_equal(atm_plan_algo(p, k), 1);
		atm_opt_check_result c;
		assert_int_equal(atm_opt_check(p, prof, &o, &c), ATM_OK);
		double pr = atm_plan_info_get(p)->predicted_runtime_s;
		assert_true(c.predicted_s <= pr * (1 + 1e-9) && c.predicted_s >= pr * (1 - 1e-9));
		atm_plan_destroy(p);
	}
	atm_profile_destroy(prof);
	atm_graph_destroy(g);
}

/* test_gpu_workspace_in_arena -- kernels whose workspace the plan reserves run with that block
 * of the device arena instead of the scratch outside it, and train to the same bits */
static void test_gpu_workspace_in_arena(void **state)
{
	(void)state;
	atm_graph *g = build("tiny_cnn");
	atm_plan *p = NULL;
	atm_schedule *s = NULL;
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_FAST), ATM_OK);
	struct exec_run ref = run_plan(p);
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	int64_t bare = atm_schedule_stats_get(s)->fast_arena_bytes;
	atm_schedule_destroy(s);
	/* more than any kernel here needs (a real GPU's convolutions may take up to the cap) */
	int64_t ws = strcmp(mode, "sim") ? ATM_GPU_WORKSPACE_BYTES : (int64_t)1 << 20;
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++)
		assert_int_equal(atm_plan_set_workspace(p, k, ws), ATM_OK);
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	int64_t with = atm_schedule_stats_get(s)->fast_arena_bytes;
	atm_schedule_destroy(s);
	assert_true(with > bare && with >= ws);
	struct exec_run got = run_plan(p);
	expect_same_run(&ref, &got, "workspace in the arena");
	/* the blocks were taken from the arena where the schedule put them, and no kernel used
	 * the scratch outside it */
	assert_true(ref.r.fast_high_water_bytes <= bare);
	assert_int_equal(got.r.fast_high_water_bytes, with);
	assert_int_equal(got.r.scratch_bytes, 0);
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

/* test_gpu_memory_limit_is_kept -- a plan larger than the device's memory is refused before
 * any kernel runs */
static void test_gpu_memory_limit_is_kept(void **state)
{
	(void)state;
	atm_graph *g = build("tiny_cnn");
	atm_plan *p = NULL;
	atm_exec *e = (atm_exec *)1;
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_FAST), ATM_OK);
	atm_exec_opts o = {.quiet = true, .gpu = {.mode = mode, .memory_bytes = 256 * 1024}};
	assert_int_equal(atm_exec_new(&e, p, &o), ATM_E_INFEASIBLE);
	assert_null(e);
	assert_non_null(strstr(atm_errmsg(), "--gpu-memory"));
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

/* test_gpu_probe -- the device and the memory a plan may use */
static void test_gpu_probe(void **state)
{
	(void)state;
	atm_gpu_info info;
	atm_gpu_opts o = {.mode = mode};
	assert_int_equal(atm_gpu_probe(&o, &info), ATM_OK);
	assert_true(info.memory_bytes > 0 && info.memory_bytes <= info.free_bytes);
	assert_int_equal(info.simulated, !strcmp(mode, "sim"));
	o.mode = "tpu";
	assert_int_equal(atm_gpu_probe(&o, &info), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "valid: cuda, sim"));
	if (!strcmp(mode, "cuda")) {
		o.mode = "cuda";
		o.device = 4096;
		assert_int_equal(atm_gpu_probe(&o, &info), ATM_E_UNSUPPORTED);
		assert_non_null(strstr(atm_errmsg(), "no GPU 4096"));
	}
}

/* test_gpu_emulate_refused -- --emulate is a CPU tier's: with a GPU it is a usage error */
static void test_gpu_emulate_refused(void **state)
{
	(void)state;
	atm_graph *g = build("tiny_mlp");
	atm_plan *p = NULL;
	atm_exec *e = NULL;
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_FAST), ATM_OK);
	atm_exec_opts o = {.quiet = true, .emulate = "optane", .gpu = {.mode = mode}};
	assert_int_equal(atm_exec_new(&e, p, &o), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "--emulate"));
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--cuda")) {
		atm_gpu_info info;
		atm_gpu_opts o = {.mode = "cuda"};
		mode = "cuda";
		if (atm_gpu_probe(&o, &info) < 0) {
			printf("skipped: %s\n", atm_errmsg());
			return 77;
		}
		printf("GPU: %s, %lld MiB free\n", info.name, (long long)(info.free_bytes >> 20));
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpu_probe),
		cmocka_unit_test(test_gpu_placements_agree_tiny_cnn),
		cmocka_unit_test(test_gpu_placements_agree_tiny_mlp),
		cmocka_unit_test(test_gpu_device_plans_tiny_cnn),
		cmocka_unit_test(test_gpu_device_plans_tiny_mlp),
		cmocka_unit_test(test_gpu_optimizers),
		cmocka_unit_test(test_gpu_device_plans_test_vgg),
		cmocka_unit_test(test_gpu_baselines),
		cmocka_unit_test(test_gpu_algorithm_choice),
		cmocka_unit_test(test_gpu_workspace_in_arena),
		cmocka_unit_test(test_gpu_memory_limit_is_kept),
		cmocka_unit_test(test_gpu_emulate_refused),
	};
	test_parts_select(); /* scripts/gpu-check.sh --sim takes a few (the suite runs them all) */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
