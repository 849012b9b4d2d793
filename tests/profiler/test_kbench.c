/* test_kbench.c -- timing single kernels in chosen tiers: machine key, emulation waits as the executor's, argmax inputs, moves */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "atm_runtime.h"
#include "memory.h"

/* add -- a tensor of g, its id */
static int32_t add(atm_graph *g, const char *name, atm_dtype dt, int ndim, const int64_t *dims,
                   atm_tensor_kind kind)
{
	int32_t id;
	assert_int_equal(atm_graph_add_tensor(g, name, dt, ndim, dims, kind, ATM_LOC_ANY, &id), ATM_OK);
	return id;
}

/* relu_graph -- y = relu(x) on n floats */
static atm_graph *relu_graph(int64_t n)
{
	atm_graph *g = NULL;
	int32_t x, y, id;
	assert_int_equal(atm_graph_new(&g, "relu"), ATM_OK);
	x = add(g, "x", ATM_F32, 1, &n, ATM_KIND_INPUT);
	y = add(g, "y", ATM_F32, 1, &n, ATM_KIND_ACTIVATION);
	assert_int_equal(atm_graph_add_node(g, "r", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &y, &id), 0);
	return g;
}

/* A slow tier far slower than any kernel here, so that each run's wait
 * dwarfs the kernel and the scheduler's noise: 0.5 GB/s read, 0.25 written. */
static const char slowpoke[] = "{\"name\": \"slowpoke\", \"read_gbps\": 0.5, \"write_gbps\": "
                               "0.25, \"latency_ns\": 1000, \"fast_gbps\": 100}";

/* spec_file -- slowpoke in a temporary file, its path in buf */
static const char *spec_file(char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/atm_kbench_%d.json", (int)getpid());
	assert_int_equal(atm_write_file_atomic(buf, slowpoke, strlen(slowpoke)), ATM_OK);
	return buf;
}

/* wait_s -- what the executor waits after a kernel that reads and writes these slow bytes */
static double wait_s(int64_t read, int64_t written)
{
	atm_emu_spec spec;
	atm_emu *emu = NULL;
	double gbps = 0;
	assert_int_equal(atm_emu_spec_parse(slowpoke, strlen(slowpoke), "slowpoke", &spec), ATM_OK);
	/* scaled as the profiler scaled it: to this machine's bandwidth, known to the process */
	assert_int_equal(atm_emu_machine_gbps(NULL, NULL, &gbps, NULL, 0), ATM_OK);
	assert_int_equal(atm_emu_spec_scale(&spec, gbps), ATM_OK);
	assert_int_equal(atm_emu_new(&emu, &spec, NULL, spec.fast_gbps), ATM_OK);
	double s = atm_emu_extra_s(emu, read, written);
	atm_emu_destroy(emu);
	return s;
}

static void test_kbench_machine_key(void **state)
{
	(void)state;
	atm_graph *g = relu_graph(64);
	atm_kbench *kb = NULL;
	atm_kbench_opts o = {.emulate = "optane", .reps = 2};
	atm_profile_machine m;
	assert_int_equal(atm_kbench_new(&kb, g, &o), ATM_OK);
	atm_kbench_machine(kb, &m);
	assert_true(m.cpu[0] != '\0');
	assert_true(m.n_threads >= 1);
	assert_int_equal(strncmp(m.backend, "cpu-onednn-", 11), 0);
	assert_int_equal(strncmp(m.fast_tier, "dram", 4), 0);
	assert_true(m.slow_tier[0] != '\0');
	/* proportional: the preset's name and a hash of the rates scaled to this machine */
	assert_int_equal(strncmp(m.emulation, "optane x", 8), 0);
	assert_non_null(strchr(m.emulation, '@'));
	assert_false(m.estimated);
	atm_tier_desc fast, slow;
	atm_kbench_tiers(kb, &fast, &slow);
	assert_true(slow.emulated);
	assert_true(slow.emulation_scale > 0 && slow.emulation_fast_gbps > 0);
	atm_kbench_destroy(kb);
	/* the absolute form keeps the key of caches profiled before proportional emulation */
	o.emulate = "optane:absolute";
	assert_int_equal(atm_kbench_new(&kb, g, &o), ATM_OK);
	atm_kbench_machine(kb, &m);
	assert_string_equal(m.emulation, "optane");
	atm_kbench_destroy(kb);
	/* a spec file is its name and its figures: an edited file is another machine */
	char spec[128];
	o.emulate = spec_file(spec, sizeof spec);
	assert_int_equal(atm_kbench_new(&kb, g, &o), ATM_OK);
	atm_kbench_machine(kb, &m);
	assert_int_equal(strncmp(m.emulation, "slowpoke x", 10), 0);
	assert_int_equal(strlen(strchr(m.emulation, '@')), 9);
	char first[32];
	snprintf(first, sizeof first, "%s", m.emulation);
	atm_kbench_destroy(kb);
	const char *faster = "{\"name\": \"slowpoke\", \"read_gbps\": 0.6, \"write_gbps\": 0.25, "
	                     "\"latency_ns\": 1000}";
	assert_int_equal(atm_write_file_atomic(spec, faster, strlen(faster)), ATM_OK);
	assert_int_equal(atm_kbench_new(&kb, g, &o), ATM_OK);
	atm_kbench_machine(kb, &m);
	assert_string_not_equal(m.emulation, first);
	atm_kbench_destroy(kb);
	unlink(spec);
	/* without emulation the key says so */
	o.emulate = NULL;
	assert_int_equal(atm_kbench_new(&kb, g, &o), ATM_OK);
	atm_kbench_machine(kb, &m);
	assert_string_equal(m.emulation, "");
	atm_kbench_destroy(kb);
	atm_kbench_destroy(NULL);
	atm_graph_destroy(g);
}

static void test_kbench_slow_operands_wait_like_a_run(void **state)
{
	(void)state;
	const int64_t n = (int64_t)1 << 20, b = 4 * n; /* 4 MiB in, 4 MiB out */
	char spec[128];
	atm_graph *g = relu_graph(n);
	atm_kbench *kb = NULL;
	atm_kbench_opts o = {.emulate = spec_file(spec, sizeof spec), .reps = 2};
	atm_profile_entry e;
	assert_int_equal(atm_kbench_new(&kb, g, &o), ATM_OK);
	/* each run waits at least for the slow bytes the executor would count */
	const double want[4] = {0, wait_s(b, 0), wait_s(0, b), wait_s(b, b)};
	for (uint32_t c = 0; c < 4; c++) {
		assert_int_equal(atm_kbench_time(kb, 0, c, &e), ATM_OK);
		assert_int_equal(e.count, 2);
		/* only lower bounds: a loaded machine may stretch any wait */
		if (!(e.min_s >= want[c] && e.min_s <= e.median_s))
			fail_msg("configuration %u: %g s, want at least %g s", c, e.min_s, want[c]);
	}
	/* a mask the node does not have */
	assert_int_equal(atm_kbench_time(kb, 0, 4, &e), ATM_E_USAGE);
	assert_true(e.count == 0 && e.min_s == 0);
	assert_int_equal(atm_kbench_time(kb, 5, 0, &e), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "node 5 is out of range"));
	atm_kbench_destroy(kb);
	atm_graph_destroy(g);
	unlink(spec);
}

static void test_kbench_in_place_writes_its_slow_input(void **state)
{
	(void)state;
	const int64_t n = (int64_t)1 << 20, b = 4 * n;
	char spec[128];
	atm_graph *g = NULL;
	int32_t w, dw, id;
	atm_attrs a = {.lr = 0.01f};
	assert_int_equal(atm_graph_new(&g, "sgd"), ATM_OK);
	w = add(g, "w", ATM_F32, 1, &n, ATM_KIND_PARAM);
	dw = add(g, "dw", ATM_F32, 1, &n, ATM_KIND_INPUT);
	assert_int_equal(atm_graph_add_node(g, "w.sgd", ATM_OP_SGD, &a, 2, (int32_t[]){w, dw}, 0, NULL,
	                                    &id), 0);
	atm_kbench *kb = NULL;
	atm_kbench_opts o = {.emulate = spec_file(spec, sizeof spec), .reps = 1};
	atm_profile_entry e;
	assert_int_equal(atm_kbench_new(&kb, g, &o), ATM_OK);
	/* w slow: read and written back; dw slow: read only */
	assert_int_equal(atm_kbench_time(kb, 0, 1, &e), ATM_OK);
	assert_true(e.min_s >= wait_s(b, b));
	assert_int_equal(atm_kbench_time(kb, 0, 2, &e), ATM_OK);
	assert_true(e.min_s >= wait_s(b, 0));
	atm_kbench_destroy(kb);
	atm_graph_destroy(g);
	unlink(spec);
}

static void test_kbench_max_pooling_backward(void **state)
{
	(void)state;
	/* the argmax input comes from the forward kernel: with padding, made-up
	 * indices could point outside the window */
	atm_graph *g = NULL;
	int64_t xd[4] = {2, 3, 9, 9}, yd[4] = {2, 3, 5, 5};
	int32_t x, y, ws, dy, dx, id;
	atm_attrs a = {.kernel = {3, 3}, .stride = {2, 2}, .pad = {1, 1, 1, 1}};
	assert_int_equal(atm_graph_new(&g, "pool"), ATM_OK);
	x = add(g, "x", ATM_F32, 4, xd, ATM_KIND_INPUT);
	y = add(g, "y", ATM_F32, 4, yd, ATM_KIND_ACTIVATION);
	ws = add(g, "ws", ATM_I32, 4, yd, ATM_KIND_ACTIVATION);
	dy = add(g, "dy", ATM_F32, 4, yd, ATM_KIND_INPUT);
	dx = add(g, "dx", ATM_F32, 4, xd, ATM_KIND_GRAD);
	assert_int_equal(atm_graph_add_node(g, "mp", ATM_OP_MAXPOOL_FWD, &a, 1, &x, 2, (int32_t[]){y, ws},
	                                    &id), 0);
	assert_int_equal(atm_graph_add_node(g, "mp.bwd", ATM_OP_MAXPOOL_BWD, &a, 2,
	                                    (int32_t[]){dy, ws}, 1, &dx, &id), 0);
	atm_kbench *kb = NULL;
	atm_kbench_opts o = {.reps = 1};
	assert_int_equal(atm_kbench_new(&kb, g, &o), ATM_OK);
	for (int32_t k = 0; k < 2; k++)
		for (int i = 0; i < atm_node_n_configs(g, k); i++) {
			atm_profile_entry e;
			assert_int_equal(atm_kbench_time(kb, k, atm_node_config_at(g, k, i), &e), ATM_OK);
			assert_true(e.min_s > 0 && isfinite(e.min_s) && e.count == 1);
		}
	atm_kbench_destroy(kb);
	atm_graph_destroy(g);
}

static void test_kbench_invalid_graph_refused(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	int64_t a = 4, b = 5;
	int32_t x, y, id;
	assert_int_equal(atm_graph_new(&g, "bad"), ATM_OK);
	x = add(g, "x", ATM_F32, 1, &a, ATM_KIND_INPUT);
	y = add(g, "y", ATM_F32, 1, &b, ATM_KIND_ACTIVATION);
	assert_int_equal(atm_graph_add_node(g, "r", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &y, &id), 0);
	atm_kbench *kb = (atm_kbench *)&a;
	assert_int_equal(atm_kbench_new(&kb, g, NULL), ATM_E_INPUT);
	assert_null(kb);
	atm_graph_destroy(g);
}

static void test_kbench_moves(void **state)
{
	(void)state;
	char spec[128];
	atm_graph *g = relu_graph(16);
	atm_kbench *kb = NULL;
	atm_kbench_opts o = {.emulate = spec_file(spec, sizeof spec)};
	atm_profile_moves m;
	assert_int_equal(atm_kbench_new(&kb, g, &o), ATM_OK);
	assert_int_equal(atm_kbench_moves(kb, &m), ATM_OK);
	/* a copy takes at least the wait the emulator adds to it */
	assert_true(m.to_slow_gbps > 0 && m.to_fast_gbps > 0);
	assert_true(m.to_fast_gbps <= 1 / (1 / 0.5 - 1 / 100.0));
	assert_true(m.to_slow_gbps <= 1 / (1 / 0.25 - 1 / 100.0));
	/* and the tier's writes are half as fast as its reads */
	assert_true(m.to_slow_gbps < m.to_fast_gbps);
	assert_false(m.estimated);
	/* the tier's own rates, what a 2LM miss is charged, are the spec's, beside the fast
	 * bandwidth the emulation's waits count from */
	atm_tier_desc fast, slow;
	atm_kbench_tiers(kb, &fast, &slow);
	assert_true(m.slow_read_gbps == slow.read_gbps && m.slow_write_gbps == slow.write_gbps);
	assert_true(m.slow_read_gbps == 2 * m.slow_write_gbps);
	assert_true(m.fast_gbps == slow.emulation_fast_gbps && m.fast_gbps > 0);
	atm_kbench_destroy(kb);
	atm_graph_destroy(g);
	unlink(spec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kbench_machine_key),
		cmocka_unit_test(test_kbench_slow_operands_wait_like_a_run),
		cmocka_unit_test(test_kbench_in_place_writes_its_slow_input),
		cmocka_unit_test(test_kbench_max_pooling_backward),
		cmocka_unit_test(test_kbench_invalid_graph_refused),
		cmocka_unit_test(test_kbench_moves),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
