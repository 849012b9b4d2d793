/* test_caps.c -- backend capabilities: what the registry answers for each backend, without opening one, agrees with what an opened one does */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_runtime.h"
#include "common/small_graph.h"

/* caps_of -- the capabilities of choice, which must exist */
static atm_backend_caps caps_of(const char *choice)
{
	atm_backend_caps c;
	assert_int_equal(atm_backend_caps_get(choice, &c), ATM_OK);
	return c;
}

/* expect_caps -- choice's capabilities are want's: its names and every flag */
static void expect_caps(const char *choice, atm_backend_caps want)
{
	atm_backend_caps c = caps_of(choice);
	assert_string_equal(c.choice, want.choice);
	assert_string_equal(c.name, want.name);
	assert_int_equal(c.built, want.built);
	assert_int_equal(c.simulated, want.simulated);
	assert_int_equal(c.host_tiers, want.host_tiers);
	assert_int_equal(c.device_memory, want.device_memory);
	assert_int_equal(c.device_only, want.device_only);
	assert_int_equal(c.kernel_algos, want.kernel_algos);
	assert_int_equal(c.workspace_in_limit, want.workspace_in_limit);
	assert_int_equal(c.copy_engine, want.copy_engine);
	assert_int_equal(c.managed, want.managed);
	assert_int_equal(c.link_presets, want.link_presets);
}

static void test_caps_cpu(void **state)
{
	(void)state;
	const atm_backend_caps want = {.choice = "cpu", .name = "cpu", .built = true,
	                               .host_tiers = true};
	expect_caps(NULL, want);
	expect_caps("cpu", want);
}

/* the CPU's kernels on a device: one algorithm each, their scratch outside the arena */
static void test_caps_sim(void **state)
{
	(void)state;
	expect_caps("sim", (atm_backend_caps){.choice = "sim", .name = "gpu-sim", .built = true,
	                                      .simulated = true, .device_memory = true,
	                                      .device_only = true, .copy_engine = true,
	                                      .link_presets = true});
}

static void test_caps_cuda(void **state)
{
	(void)state;
	atm_backend_caps c = caps_of("cuda");
	expect_caps("cuda", (atm_backend_caps){.choice = "cuda", .name = "cuda", .built = c.built,
	                                       .device_memory = true, .device_only = true,
	                                       .kernel_algos = true, .workspace_in_limit = true,
	                                       .copy_engine = true, .managed = true});
	if (!c.built) {
		/* a build without CUDA still knows the backend, and says why it cannot run */
		atm_gpu_opts o = {.mode = "cuda"};
		atm_gpu_info info;
		assert_int_equal(atm_gpu_probe(&o, &info), ATM_E_UNSUPPORTED);
		assert_non_null(strstr(atm_errmsg(), "not supported in this build"));
		assert_false(atm_backend_supports_op("cuda", ATM_OP_CONV_FWD));
	}
}

/* a GPU described by its datasheet: planned as a CUDA device, nothing opened */
static void test_caps_model(void **state)
{
	(void)state;
	atm_gpu_info info;
	const atm_gpu_model *m;
	expect_caps("model", (atm_backend_caps){.choice = "model", .name = "gpu-model", .built = true,
	                                        .device_memory = true, .device_only = true,
	                                        .copy_engine = true, .modelled = true});
	atm_gpu_opts o = {.mode = "model", .model = "h100"};
	assert_int_equal(atm_gpu_probe(&o, &info), ATM_OK);
	assert_true(info.modelled);
	assert_false(info.simulated);
	assert_int_equal(atm_gpu_model_get("h100", &m), ATM_OK);
	assert_int_equal(info.total_bytes, m->memory_bytes);
	assert_int_equal(info.memory_bytes, m->memory_bytes - ATM_GPU_RESERVE_BYTES);
	o.memory_bytes = m->memory_bytes + 1;
	assert_int_equal(atm_gpu_probe(&o, &info), ATM_E_USAGE);
	o = (atm_gpu_opts){.mode = "model", .model = "v100"};
	assert_int_equal(atm_gpu_probe(&o, &info), ATM_E_USAGE);
	assert_string_equal(atm_errmsg(), "unknown GPU model 'v100'; valid: h100, h200, a100, rtx2080ti");
	/* every model is complete, named apart, and found by its name */
	int n = 0;
	for (const atm_gpu_model *a; (a = atm_gpu_model_nth(n)); n++) {
		assert_true(a->memory_bytes > ATM_GPU_RESERVE_BYTES && a->l2_bytes > 0);
		assert_true(a->fp32_tflops > 0 && a->memory_gbps > 0 && a->h2d_gbps > 0 &&
		            a->d2h_gbps > 0);
		assert_non_null(a->title);
		assert_non_null(a->source);
		assert_int_equal(atm_gpu_model_get(a->name, &m), ATM_OK);
		assert_ptr_equal(m, a);
	}
	assert_int_equal(n, 4);
}

static void test_caps_unknown_choice(void **state)
{
	(void)state;
	atm_backend_caps c;
	memset(&c, 0xff, sizeof c);
	assert_int_equal(atm_backend_caps_get("tpu", &c), ATM_E_USAGE);
	assert_string_equal(atm_errmsg(), "unknown backend 'tpu'; valid: cpu, cuda, sim, model");
	assert_null(c.name);
	assert_false(c.built);
	assert_false(atm_backend_supports_op("tpu", ATM_OP_ADD));
}

/* every backend of the registry once: choices and names apart, each found by its choice */
static void test_caps_nth_lists_every_backend(void **state)
{
	(void)state;
	atm_backend_caps c[8], past;
	int n = 0;
	while (n < 8 && atm_backend_caps_nth(n, &c[n]) == ATM_OK)
		n++;
	assert_int_equal(n, 4);
	assert_int_equal(atm_backend_caps_nth(n, &past), ATM_E_NOTFOUND);
	assert_null(past.choice);
	assert_int_equal(atm_backend_caps_nth(-1, &past), ATM_E_NOTFOUND);
	for (int i = 0; i < n; i++) {
		atm_backend_caps again = caps_of(c[i].choice);
		assert_memory_equal(&again, &c[i], sizeof again);
		/* a backend's memories are either this machine's tiers or a device's */
		assert_true(c[i].host_tiers != c[i].device_memory);
		for (int j = 0; j < i; j++) {
			assert_string_not_equal(c[i].choice, c[j].choice);
			assert_string_not_equal(c[i].name, c[j].name);
		}
	}
}

static void test_caps_supports_op(void **state)
{
	(void)state;
	for (int op = 0; op < ATM_N_OPS; op++) {
		assert_true(atm_backend_supports_op(NULL, (atm_op)op));
		assert_true(atm_backend_supports_op("sim", (atm_op)op));
		assert_int_equal(atm_backend_supports_op("cuda", (atm_op)op), caps_of("cuda").built);
	}
	assert_false(atm_backend_supports_op(NULL, ATM_N_OPS));
}

/* atm_gpu_probe answers for the backends with device memory only */
static void test_caps_probe_follows_device_memory(void **state)
{
	(void)state;
	atm_gpu_info info;
	atm_gpu_opts o = {.mode = "cpu"};
	assert_int_equal(atm_gpu_probe(&o, &info), ATM_E_USAGE);
	assert_string_equal(atm_errmsg(), "atm_gpu_probe: no GPU asked for");
	o = (atm_gpu_opts){.mode = "sim", .memory_bytes = 1 << 20};
	assert_int_equal(atm_gpu_probe(&o, &info), ATM_OK);
	assert_true(info.simulated);
	assert_int_equal(info.memory_bytes, 1 << 20);
	o.mode = "tpu";
	assert_int_equal(atm_gpu_probe(&o, &info), ATM_E_USAGE);
	assert_string_equal(atm_errmsg(), "unknown GPU mode 'tpu'; valid: cuda, sim, model");
}

/* an opened backend is what its capabilities say: its results carry the capabilities' name, a
 * device's fast memory is device memory, and kernels without algorithms have one */
static void test_caps_agree_with_opened_backends(void **state)
{
	(void)state;
	struct small s;
	atm_backend_caps c;
	int n_opened = 0;
	small_build(&s);
	for (int i = 0; atm_backend_caps_nth(i, &c) == ATM_OK; i++) {
		atm_plan *p = NULL;
		atm_exec *e = NULL;
		atm_kbench *kb = NULL;
		atm_exec_opts eo = {.iters = 1, .warmup = -1, .seed = 3, .quiet = true,
		                    .gpu = {.mode = c.choice}};
		atm_kbench_opts ko = {.gpu = eo.gpu, .reps = 1, .seed = 3};
		assert_int_equal(atm_plan_uniform(&p, s.g, ATM_LOC_FAST), ATM_OK);
		eo.gpu.model = c.modelled ? "h100" : NULL;
		atm_status rc = atm_exec_new(&e, p, &eo);
		if (c.modelled) { /* a datasheet runs nothing */
			assert_int_equal(rc, ATM_E_UNSUPPORTED);
			assert_non_null(strstr(atm_errmsg(), "nothing runs on it"));
		}
		if (rc == ATM_E_UNSUPPORTED) { /* not in this build, or no such device here */
			atm_plan_destroy(p);
			continue;
		}
		assert_int_equal(rc, ATM_OK);
		assert_int_equal(atm_exec_run(e), ATM_OK);
		const atm_exec_result *r = atm_exec_result_get(e);
		assert_string_equal(r->backend, c.name);
		assert_int_equal(r->simulated, c.simulated);
		if (c.device_memory)
			assert_int_equal(r->fast_tier.kind, ATM_TIER_GPU_DEVICE);
		else
			assert_int_not_equal(r->fast_tier.kind, ATM_TIER_GPU_DEVICE);
		atm_exec_destroy(e);
		atm_plan_destroy(p);
		assert_int_equal(atm_kbench_new(&kb, s.g, &ko), ATM_OK);
		for (int32_t k = 0; !c.kernel_algos && k < atm_graph_n_nodes(s.g); k++) {
			int n = 0;
			assert_int_equal(atm_kbench_algos(kb, k, &n), ATM_OK);
			assert_int_equal(n, 1);
		}
		atm_kbench_destroy(kb);
		n_opened++;
	}
	assert_true(n_opened >= 2); /* the CPU and the simulated GPU are in every build */
	atm_graph_destroy(s.g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_caps_cpu),
		cmocka_unit_test(test_caps_sim),
		cmocka_unit_test(test_caps_cuda),
		cmocka_unit_test(test_caps_model),
		cmocka_unit_test(test_caps_unknown_choice),
		cmocka_unit_test(test_caps_nth_lists_every_backend),
		cmocka_unit_test(test_caps_supports_op),
		cmocka_unit_test(test_caps_probe_follows_device_memory),
		cmocka_unit_test(test_caps_agree_with_opened_backends),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
