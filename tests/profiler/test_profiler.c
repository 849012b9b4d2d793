/* test_profiler.c -- profiling runs: counts, incremental measuring, interrupts, the roofline estimate and its comparison */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "atm_profiler.h"
#include "atm_zoo.h"
#include "common/small_graph.h"

static char tmpdir[] = "/tmp/atm_prof_XXXXXX";

/* setup -- a scratch folder for cache files */
static int setup(void **state)
{
	(void)state;
	return mkdtemp(tmpdir) ? 0 : -1;
}

/* teardown -- remove the scratch folder */
static int teardown(void **state)
{
	(void)state;
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* add -- a tensor of g, its id */
static int32_t add(atm_graph *g, const char *name, atm_dtype dt, int ndim, const int64_t *dims,
                   atm_tensor_kind kind)
{
	int32_t id;
	assert_int_equal(atm_graph_add_tensor(g, name, dt, ndim, dims, kind, ATM_LOC_ANY, &id), ATM_OK);
	return id;
}

/* zoo -- a zoo network at batch */
static atm_graph *zoo(const char *name, int64_t batch)
{
	atm_graph *g = NULL;
	atm_zoo_opts o = {.batch = batch};
	assert_int_equal(atm_zoo_build(&g, name, &o), ATM_OK);
	return g;
}

/* profile -- one profiling run of g into the cache at path */
static atm_status profile(const atm_graph *g, const char *path, const atm_prof_opts *o,
                          atm_prof_report *r)
{
	atm_prof *pr = NULL;
	atm_profile *p = NULL;
	atm_profile_machine m;
	atm_status rc = atm_prof_new(&pr, g, o);
	if (rc < 0)
		return rc;
	atm_prof_get_machine(pr, &m);
	if ((rc = atm_prof_cache_open(&p, path, &m, false)) == ATM_OK)
		rc = atm_prof_run(pr, p, r);
	atm_profile_destroy(p);
	atm_prof_destroy(pr);
	return rc;
}

static void test_profiler_counts(void **state)
{
	(void)state;
	atm_graph *g = zoo("tiny_mlp", 8);
	atm_prof_report r;
	assert_int_equal(atm_prof_count(g, &r), ATM_OK);
	assert_int_equal(r.n_kernels, atm_graph_n_nodes(g));
	assert_int_equal(r.n_kernels, 20);
	assert_int_equal(r.n_unique_kernels, 17);
	assert_int_equal(r.n_configs, 168);
	atm_graph_destroy(g);
	/* a deep network repeats its blocks: far fewer unique kernels than kernels */
	g = zoo("resnet50", 2);
	assert_int_equal(atm_prof_count(g, &r), ATM_OK);
	assert_true(r.n_unique_kernels * 3 < r.n_kernels);
	atm_graph_destroy(g);
}

static void test_profiler_incremental(void **state)
{
	(void)state;
	char path[512];
	atm_graph *mlp = zoo("tiny_mlp", 8), *cnn = zoo("tiny_cnn", 2);
	atm_prof_opts o = {.emulate = "optane", .reps = 1};
	atm_prof_report r;
	snprintf(path, sizeof path, "%s/incremental.json", tmpdir);
	assert_int_equal(profile(mlp, path, &o, &r), ATM_OK);
	assert_int_equal(r.n_configs, 168);
	assert_int_equal(r.n_configs_measured, 168);
	assert_int_equal(r.n_configs_cached, 0);
	assert_true(r.moves_measured);
	assert_false(r.estimated);
	/* again: nothing new */
	assert_int_equal(profile(mlp, path, &o, &r), ATM_OK);
	assert_int_equal(r.n_configs_measured, 0);
	assert_int_equal(r.n_configs_cached, 168);
	assert_false(r.moves_measured);
	/* another network: only what the first did not have */
	atm_prof *pr = NULL;
	atm_profile *p = NULL;
	atm_profile_machine m;
	atm_prof_report c;
	assert_int_equal(atm_prof_new(&pr, cnn, &o), ATM_OK);
	atm_prof_get_machine(pr, &m);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	assert_int_equal(atm_profile_n_entries(p), 168);
	assert_int_equal(atm_prof_count(cnn, &c), ATM_OK);
	int64_t have = 0;
	char seen[16384] = "\n";
	for (int32_t k = 0; k < atm_graph_n_nodes(cnn); k++) {
		char sig[ATM_SIGNATURE_MAX], line[ATM_SIGNATURE_MAX + 2];
		assert_int_equal(atm_node_signature(cnn, k, sig, sizeof sig), ATM_OK);
		snprintf(line, sizeof line, "\n%s\n", sig);
		if (strstr(seen, line))
			continue;
		assert_true(strlen(seen) + strlen(sig) + 2 < sizeof seen);
		strcat(strcat(seen, sig), "\n");
		for (int i = 0; i < atm_node_n_configs(cnn, k); i++)
			have += atm_profile_has(p, cnn, k, atm_node_config_at(cnn, k, i));
	}
	assert_int_equal(atm_prof_run(pr, p, &r), ATM_OK);
	assert_int_equal(r.n_configs, c.n_configs);
	assert_int_equal(r.n_configs_cached, have);
	assert_int_equal(r.n_configs_measured, c.n_configs - have);
	assert_int_equal(atm_profile_n_entries(p), 168 + c.n_configs - have);
	/* every configuration of every node can be looked up, as measured alone */
	atm_profile_use_in_step(p, false);
	for (int32_t k = 0; k < atm_graph_n_nodes(cnn); k++)
		for (int i = 0; i < atm_node_n_configs(cnn, k); i++) {
			atm_profile_entry e;
			assert_int_equal(atm_profile_get(p, cnn, k, atm_node_config_at(cnn, k, i), &e), ATM_OK);
			assert_true(e.min_s > 0 && e.min_s <= e.median_s && e.count == 1 && !e.estimated);
		}
	atm_profile_destroy(p);
	atm_prof_destroy(pr);
	atm_graph_destroy(mlp);
	atm_graph_destroy(cnn);
}

/* in_step_count -- signatures of g with an in-step time in the cache at path for o's machine;
 * each one's nodes summed into *n_nodes */
static int32_t in_step_count(const atm_graph *g, const char *path, const atm_prof_opts *o,
                             int32_t *n_nodes)
{
	atm_prof *pr = NULL;
	atm_profile *p = NULL;
	atm_profile_machine m;
	char seen[16384] = "\n";
	int32_t n = 0;
	*n_nodes = 0;
	assert_int_equal(atm_prof_new(&pr, g, o), ATM_OK);
	atm_prof_get_machine(pr, &m);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		char sig[ATM_SIGNATURE_MAX], line[ATM_SIGNATURE_MAX + 2];
		atm_profile_in_step st;
		atm_profile_entry e;
		assert_int_equal(atm_node_signature(g, k, sig, sizeof sig), ATM_OK);
		snprintf(line, sizeof line, "\n%s\n", sig);
		if (strstr(seen, line) || atm_profile_get_in_step(p, g, k, &st) < 0)
			continue;
		assert_true(strlen(seen) + strlen(sig) + 2 < sizeof seen);
		strcat(strcat(seen, sig), "\n");
		n++;
		*n_nodes += st.n_nodes;
		assert_true(st.step_s > 0 && st.n_nodes >= 1);
		/* isolated_s is the all-fast time alone, as measured */
		atm_profile_use_in_step(p, false);
		assert_int_equal(atm_profile_get(p, g, k, 0, &e), ATM_OK);
		assert_true(st.isolated_s == e.min_s);
		atm_profile_use_in_step(p, true);
	}
	atm_profile_destroy(p);
	atm_prof_destroy(pr);
	return n;
}

/* calibration_of -- g's calibration step in the cache at path for o's machine */
static atm_status calibration_of(const atm_graph *g, const char *path, const atm_prof_opts *o,
                                 atm_profile_calibration *cal)
{
	atm_prof *pr = NULL;
	atm_profile *p = NULL;
	atm_profile_machine m;
	assert_int_equal(atm_prof_new(&pr, g, o), ATM_OK);
	atm_prof_get_machine(pr, &m);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	atm_status rc = atm_profile_get_calibration(p, g, cal);
	atm_profile_destroy(p);
	atm_prof_destroy(pr);
	return rc;
}

/* test_profiler_in_step -- after the kernels, all-fast steps time every signature inside a
 * step, once, and the fastest step is kept with its date: a second run measures none; --isolated and estimates measure none; a profile of
 * other conditions (another emulation) measures its own rather than reusing these */
static void test_profiler_in_step(void **state)
{
	(void)state;
	char path[512];
	atm_graph *mlp = zoo("tiny_mlp", 8);
	atm_prof_opts o = {.emulate = "optane", .reps = 1, .isolated = true};
	atm_prof_report r;
	int32_t nodes = 0;
	snprintf(path, sizeof path, "%s/in_step.json", tmpdir);
	assert_int_equal(profile(mlp, path, &o, &r), ATM_OK);
	assert_int_equal(r.n_in_step_measured, 0);
	assert_int_equal(in_step_count(mlp, path, &o, &nodes), 0);
	atm_profile_calibration cal;
	assert_int_equal(calibration_of(mlp, path, &o, &cal), ATM_E_NOTFOUND);
	o.isolated = false;
	assert_int_equal(profile(mlp, path, &o, &r), ATM_OK);
	assert_int_equal(r.n_configs_measured, 0);
	assert_int_equal(r.n_in_step_measured, r.n_unique_kernels);
	assert_string_equal(r.in_step_note, "");
	assert_int_equal(in_step_count(mlp, path, &o, &nodes), r.n_unique_kernels);
	assert_int_equal(nodes, atm_graph_n_nodes(mlp));
	/* the steps that timed the kernels are the graph's calibration step, dated */
	assert_int_equal(calibration_of(mlp, path, &o, &cal), ATM_OK);
	assert_true(cal.step_s > 0 && atm_utc_valid(cal.measured_at));
	assert_int_equal(profile(mlp, path, &o, &r), ATM_OK);
	assert_int_equal(r.n_in_step_measured, 0);
	/* other conditions: their own kernels and steps */
	atm_prof_opts cxl = {.emulate = "cxl", .reps = 1};
	assert_int_equal(profile(mlp, path, &cxl, &r), ATM_OK);
	assert_int_equal(r.n_configs_measured, r.n_configs);
	assert_int_equal(r.n_in_step_measured, r.n_unique_kernels);
	/* an estimate runs nothing */
	atm_prof_opts est = {.emulate = "optane", .estimate = true};
	assert_int_equal(profile(mlp, path, &est, &r), ATM_OK);
	assert_int_equal(r.n_in_step_measured, 0);
	assert_int_equal(in_step_count(mlp, path, &est, &nodes), 0);
	atm_graph_destroy(mlp);
}

/* Stops a profiling run once its first batch is saved. */
struct watch {
	const char *path;
	volatile sig_atomic_t stop;
};

/* watcher -- set the stop flag once the cache file exists (the first batch is saved) */
static void *watcher(void *arg)
{
	struct watch *w = arg;
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < 60000 && access(w->path, F_OK) != 0; i++)
		nanosleep(&ms, NULL);
	w->stop = 1;
	return NULL;
}

static void test_profiler_interrupt_keeps_measured(void **state)
{
	(void)state;
	char path[512];
	atm_graph *g = zoo("tiny_cnn", 2);
	snprintf(path, sizeof path, "%s/interrupted.json", tmpdir);
	struct watch w = {.path = path};
	atm_prof_opts o = {.reps = 1, .stop = &w.stop, .flush_configs = 20};
	atm_prof_report r;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, watcher, &w), 0);
	atm_status rc = profile(g, path, &o, &r);
	pthread_join(t, NULL);
	assert_int_equal(rc, ATM_E_INTERRUPTED);
	assert_non_null(strstr(atm_errmsg(), "interrupted after"));
	if (!strstr(atm_errmsg(), "are saved in"))
		fail_msg("message: %s", atm_errmsg());
	assert_true(r.n_configs_measured >= 20 && r.n_configs_measured < r.n_configs);
	/* everything measured before the stop is in the file */
	atm_prof *pr = NULL;
	atm_profile *p = NULL;
	atm_profile_machine m;
	assert_int_equal(atm_prof_new(&pr, g, &o), ATM_OK);
	atm_prof_get_machine(pr, &m);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	assert_int_equal(atm_profile_n_entries(p), r.n_configs_measured);
	/* and a second run measures the rest only */
	w.stop = 0;
	int64_t before = r.n_configs_measured;
	assert_int_equal(atm_prof_run(pr, p, &r), ATM_OK);
	assert_int_equal(r.n_configs_cached, before);
	assert_int_equal(r.n_configs_measured, r.n_configs - before);
	atm_profile_destroy(p);
	atm_prof_destroy(pr);
	atm_graph_destroy(g);
}

/* test_profiler_interrupt_before_anything_claims_no_save -- a run stopped before it measured
 * anything says so, and claims no save of a file it never wrote */
static void test_profiler_interrupt_before_anything_claims_no_save(void **state)
{
	(void)state;
	char path[512];
	atm_graph *g = zoo("tiny_mlp", 2);
	snprintf(path, sizeof path, "%s/never.json", tmpdir);
	volatile sig_atomic_t stop = 1;
	atm_prof_opts o = {.reps = 1, .stop = &stop};
	atm_prof_report r;
	assert_int_equal(profile(g, path, &o, &r), ATM_E_INTERRUPTED);
	assert_non_null(strstr(atm_errmsg(), "interrupted after 0 of"));
	assert_null(strstr(atm_errmsg(), "saved"));
	assert_int_equal(r.n_configs_measured, 0);
	assert_int_not_equal(access(path, F_OK), 0);
	atm_graph_destroy(g);
}

/* stopper -- set the stop flag (arg) a tenth of a second from now */
static void *stopper(void *arg)
{
	nanosleep(&(struct timespec){0, 100000000}, NULL);
	*(volatile sig_atomic_t *)arg = 1;
	return NULL;
}

/* test_profiler_interrupt_estimate_keeps_nothing -- an estimate stopped midway writes no file
 * and claims no save (made again in seconds, its writing would outlast a Ctrl-C); a complete one
 * is saved */
static void test_profiler_interrupt_estimate_keeps_nothing(void **state)
{
	(void)state;
	char path[512];
	/* the paper's DenseNet-264: 54,528 configurations, a second or more to estimate */
	atm_zoo_preset_sizes ps;
	assert_int_equal(atm_zoo_preset("densenet264", "paper", &ps), ATM_OK);
	atm_graph *g = zoo("densenet264", ps.batch[0]);
	snprintf(path, sizeof path, "%s/estimate-interrupted.json", tmpdir);
	atm_prof_roofline rf;
	atm_prof_roofline_default(&rf, 2);
	volatile sig_atomic_t stop = 0;
	atm_prof_opts o = {.estimate = true, .roofline = &rf, .stop = &stop};
	atm_prof *pr = NULL;
	atm_profile *p = NULL;
	atm_profile_machine m;
	atm_prof_report r;
	pthread_t t;
	assert_int_equal(atm_prof_new(&pr, g, &o), ATM_OK);
	atm_prof_get_machine(pr, &m);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	assert_int_equal(pthread_create(&t, NULL, stopper, (void *)&stop), 0);
	atm_status rc = atm_prof_run(pr, p, &r);
	pthread_join(t, NULL);
	if (rc == ATM_OK) /* all estimated within the tenth of a second: then it was saved */
		assert_int_equal(access(path, F_OK), 0);
	else {
		assert_int_equal(rc, ATM_E_INTERRUPTED);
		assert_null(strstr(atm_errmsg(), "saved"));
		assert_int_not_equal(access(path, F_OK), 0);
	}
	atm_profile_destroy(p);
	atm_prof_destroy(pr);
	atm_graph_destroy(g);
}

/* ---------------------------------------------------------------- estimates */

static void test_profiler_estimate_monotone(void **state)
{
	(void)state;
	atm_prof_roofline rf;
	atm_prof_roofline_default(&rf, 2);
	for (int emulated = 0; emulated < 2; emulated++) {
		rf.emulated = emulated;
		rf.slow_read_gbps = 3;
		rf.slow_write_gbps = 1;
		rf.ref_fast_gbps = 10;
		for (int op = 0; op < ATM_N_OPS; op++) {
			/* more FLOPs, same bytes */
			double last = 0;
			for (double f = 1e3; f <= 1e13; f *= 10) {
				atm_prof_work w = {.flops = f, .traffic_bytes = 1 << 20};
				double t = atm_prof_roofline_s(&rf, (atm_op)op, &w, 1 << 20, 0, 0);
				assert_true(t >= last);
				last = t;
			}
			atm_prof_work w0 = {.flops = 1e3, .traffic_bytes = 1 << 20};
			assert_true(last > atm_prof_roofline_s(&rf, (atm_op)op, &w0, 1 << 20, 0, 0));
			/* more bytes, same FLOPs: fast, slow read, slow written */
			for (int which = 0; which < 3; which++) {
				last = 0;
				for (int64_t b = 1 << 10; b <= (int64_t)1 << 34; b *= 4) {
					atm_prof_work w = {.flops = 1e6, .traffic_bytes = (double)b + (1 << 10)};
					double t = atm_prof_roofline_s(&rf, (atm_op)op, &w, which == 0 ? b : 1 << 10,
					                               which == 1 ? b : 0, which == 2 ? b : 0);
					assert_true(t >= last);
					last = t;
				}
				atm_prof_work w1 = {.flops = 1e6, .traffic_bytes = 2048};
				assert_true(last > 10 * atm_prof_roofline_s(&rf, (atm_op)op, &w1, 1 << 10, 0, 0));
			}
		}
	}
	/* the same through graphs: ReLU on more elements, convolutions over more channels */
	double last_relu = 0, last_conv = 0;
	for (int64_t n = 16; n <= (int64_t)1 << 26; n *= 4) {
		atm_graph *g = NULL;
		int32_t x, y, id;
		assert_int_equal(atm_graph_new(&g, "relu"), ATM_OK);
		x = add(g, "x", ATM_F32, 1, &n, ATM_KIND_INPUT);
		y = add(g, "y", ATM_F32, 1, &n, ATM_KIND_ACTIVATION);
		assert_int_equal(atm_graph_add_node(g, "r", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &y, &id), 0);
		atm_profile_entry e;
		assert_int_equal(atm_prof_estimate(&rf, g, 0, 0, &e), ATM_OK);
		assert_true(e.min_s > last_relu);
		last_relu = e.min_s;
		atm_graph_destroy(g);
	}
	for (int64_t c = 4; c <= 512; c *= 2) {
		atm_graph *g = NULL;
		int64_t xd[4] = {4, c, 16, 16}, wd[4] = {c, c, 3, 3};
		int32_t x, w, y, id;
		atm_attrs a = {.pad = {1, 1, 1, 1}};
		assert_int_equal(atm_graph_new(&g, "conv"), ATM_OK);
		x = add(g, "x", ATM_F32, 4, xd, ATM_KIND_INPUT);
		w = add(g, "w", ATM_F32, 4, wd, ATM_KIND_PARAM);
		y = add(g, "y", ATM_F32, 4, xd, ATM_KIND_ACTIVATION);
		assert_int_equal(atm_graph_add_node(g, "c", ATM_OP_CONV_FWD, &a, 2, (int32_t[]){x, w}, 1, &y,
		                                    &id), 0);
		atm_profile_entry e;
		assert_int_equal(atm_prof_estimate(&rf, g, 0, 0, &e), ATM_OK);
		assert_true(e.min_s > last_conv);
		assert_true(e.estimated && e.count == 1 && e.min_s == e.median_s);
		last_conv = e.min_s;
		atm_graph_destroy(g);
	}
}

static void test_profiler_estimate_slow_never_faster(void **state)
{
	(void)state;
	atm_graph *g = zoo("tiny_cnn", 8);
	atm_prof_roofline rf;
	atm_prof_roofline_default(&rf, 2);
	for (int emulated = 0; emulated < 2; emulated++) {
		rf.emulated = emulated;
		rf.slow_read_gbps = emulated ? 29 : 3;
		rf.slow_write_gbps = emulated ? 12 : 1;
		rf.ref_fast_gbps = emulated ? 100 : rf.fast_gbps;
		for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
			atm_profile_entry fast, e;
			assert_int_equal(atm_prof_estimate(&rf, g, k, 0, &fast), ATM_OK);
			int n = atm_node_n_configs(g, k);
			for (int i = 1; i < n; i++) {
				uint32_t c = atm_node_config_at(g, k, i);
				assert_int_equal(atm_prof_estimate(&rf, g, k, c, &e), ATM_OK);
				assert_true(e.min_s >= fast.min_s);
				/* more slow operands never make it faster either */
				for (int j = 1; j < n; j++) {
					uint32_t d = atm_node_config_at(g, k, j);
					atm_profile_entry more;
					if ((d & c) != c)
						continue;
					assert_int_equal(atm_prof_estimate(&rf, g, k, d, &more), ATM_OK);
					assert_true(more.min_s >= e.min_s);
				}
			}
			/* emulation waits for every slow byte; real slow memory may hide
			 * behind the compute of a convolution */
			uint32_t all = atm_node_config_at(g, k, n - 1);
			assert_int_equal(atm_prof_estimate(&rf, g, k, all, &e), ATM_OK);
			if (emulated)
				assert_true(e.min_s > fast.min_s);
		}
	}
	atm_graph_destroy(g);
}

static void test_profiler_estimate_kept_apart_and_marked(void **state)
{
	(void)state;
	char path[512];
	/* the paper's VGG-19: hundreds of GB of tensors, never allocated */
	atm_graph *g = zoo("vgg19", 2048);
	atm_prof_roofline rf;
	atm_prof_roofline_default(&rf, 2);
	rf.emulated = true;
	rf.slow_read_gbps = 29;
	rf.slow_write_gbps = 12;
	rf.ref_fast_gbps = 100;
	atm_prof_opts o = {.emulate = "optane", .estimate = true, .roofline = &rf};
	atm_prof_report r;
	snprintf(path, sizeof path, "%s/estimate.json", tmpdir);
	assert_int_equal(profile(g, path, &o, &r), ATM_OK);
	assert_true(r.estimated);
	assert_int_equal(r.n_configs_measured, r.n_configs);
	atm_prof *pr = NULL;
	atm_profile *p = NULL;
	atm_profile_machine m;
	assert_int_equal(atm_prof_new(&pr, g, &o), ATM_OK);
	/* the model the run used: none before it runs, the given one after */
	atm_prof_roofline used;
	assert_int_equal(atm_prof_get_roofline(pr, &used), ATM_E_NOTFOUND);
	atm_prof_get_machine(pr, &m);
	assert_true(m.estimated);
	atm_profile *mem = NULL;
	atm_prof_report r2;
	assert_int_equal(atm_profile_new(&mem, &m, NULL), ATM_OK);
	assert_int_equal(atm_prof_run(pr, mem, &r2), ATM_OK);
	atm_profile_destroy(mem);
	assert_int_equal(atm_prof_get_roofline(pr, &used), ATM_OK);
	assert_true(used.gflops[ATM_OP_CONV_FWD] == rf.gflops[ATM_OP_CONV_FWD]);
	assert_true(used.slow_read_gbps == 29 && used.slow_write_gbps == 12 && used.emulated);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	assert_int_equal(atm_profile_n_entries(p), r.n_configs);
	atm_profile_entry e;
	assert_int_equal(atm_profile_get(p, g, 0, 0, &e), ATM_OK);
	assert_true(e.estimated);
	atm_profile_moves mv;
	assert_int_equal(atm_profile_get_moves(p, &mv), ATM_OK);
	assert_true(mv.estimated && mv.to_fast_gbps > mv.to_slow_gbps);
	atm_profile_destroy(p);
	/* the measured profile of the same machine does not see them */
	m.estimated = false;
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	assert_int_equal(atm_profile_n_entries(p), 0);
	assert_int_equal(atm_profile_get(p, g, 0, 0, &e), ATM_E_NOTFOUND);
	atm_profile_destroy(p);
	atm_prof_destroy(pr);
	atm_graph_destroy(g);
}

/* test_profiler_gpu_model -- a GPU model's estimate prices every kernel from its datasheet
 * (a kernel on the faster GPU is no slower, a large convolution at the GEMM share of its FP32
 * peak), its copies at its host link, under a machine key of its own; it measures nothing and
 * opens no device, and an unknown name or a measurement is refused */
static void test_profiler_gpu_model(void **state)
{
	(void)state;
	char path[512];
	atm_graph *g = zoo("vgg19", 64);
	const atm_gpu_model *h100, *a100;
	assert_int_equal(atm_gpu_model_get("h100", &h100), ATM_OK);
	assert_int_equal(atm_gpu_model_get("a100", &a100), ATM_OK);
	atm_prof_roofline rh, ra;
	atm_prof_roofline_gpu(&rh, h100);
	atm_prof_roofline_gpu(&ra, a100);
	assert_true(rh.gpu_model && !rh.calibrated && rh.cache_bytes == h100->l2_bytes);
	assert_true(rh.slow_read_gbps == h100->h2d_gbps && rh.slow_write_gbps == h100->d2h_gbps);
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		atm_profile_entry eh, ea;
		assert_int_equal(atm_prof_estimate(&rh, g, k, 0, &eh), ATM_OK);
		assert_int_equal(atm_prof_estimate(&ra, g, k, 0, &ea), ATM_OK);
		assert_true(eh.min_s > 0 && eh.min_s <= ea.min_s);
	}
	/* conv1_2: 64 x 64 x 224 x 224 outputs of 64 x 3 x 3 inputs, compute-bound */
	int32_t conv = -1;
	for (int32_t k = 0; k < atm_graph_n_nodes(g) && conv < 0; k++)
		if (!strcmp(atm_graph_node(g, k)->name, "conv1_2"))
			conv = k;
	assert_true(conv >= 0);
	atm_prof_work w;
	atm_profile_entry e;
	assert_int_equal(atm_prof_kernel_work(g, conv, &w), ATM_OK);
	assert_int_equal(atm_prof_estimate(&rh, g, conv, 0, &e), ATM_OK);
	double peak = h100->fp32_tflops * 1e3, rate = rh.gflops[ATM_OP_CONV_FWD];
	assert_true(rate > 0.2 * peak && rate < peak);
	assert_true(fabs(e.min_s - rh.overhead_s[ATM_OP_CONV_FWD] - w.flops / (rate * 1e9)) <
	            1e-9 * e.min_s);
	/* in bf16 mixed precision the same convolution at the tensor cores' rate: 989.4 over 67
	 * TFLOPS; on the RTX 2080 Ti, which has no bf16 units, at its f32 rate */
	atm_graph *h = NULL;
	atm_zoo_opts zo = {.batch = 64, .image = 224, .bf16 = true};
	assert_int_equal(atm_zoo_build(&h, "vgg19", &zo), ATM_OK);
	int32_t conv16 = -1;
	for (int32_t k = 0; k < atm_graph_n_nodes(h) && conv16 < 0; k++)
		if (!strcmp(atm_graph_node(h, k)->name, "conv1_2"))
			conv16 = k;
	assert_true(conv16 >= 0);
	assert_int_equal(atm_graph_tensor(h, atm_graph_node(h, conv16)->in[0])->dtype, ATM_BF16);
	atm_profile_entry e16;
	assert_int_equal(atm_prof_estimate(&rh, h, conv16, 0, &e16), ATM_OK);
	double tc = w.flops / (rate * 1e9) * h100->fp32_tflops / h100->bf16_tflops;
	assert_true(fabs(e16.min_s - rh.overhead_s[ATM_OP_CONV_FWD] - tc) < 1e-9 * e16.min_s ||
	            e16.min_s - rh.overhead_s[ATM_OP_CONV_FWD] > tc); /* or bound by memory */
	assert_true(e16.min_s < 0.2 * e.min_s);
	const atm_gpu_model *turing;
	atm_prof_roofline rt;
	assert_int_equal(atm_gpu_model_get("rtx2080ti", &turing), ATM_OK);
	assert_true(turing->bf16_tflops == 0);
	atm_prof_roofline_gpu(&rt, turing);
	atm_profile_entry t32, t16;
	assert_int_equal(atm_prof_estimate(&rt, g, conv, 0, &t32), ATM_OK);
	assert_int_equal(atm_prof_estimate(&rt, h, conv16, 0, &t16), ATM_OK);
	assert_true(t16.min_s <= t32.min_s && t16.min_s > 0.5 * t32.min_s);
	atm_graph_destroy(h);
	/* a run: its own machine key, every kernel estimated, the link's copies */
	atm_prof_opts o = {.gpu = {.mode = "model", .model = "h100"}, .estimate = true};
	atm_prof_report r;
	snprintf(path, sizeof path, "%s/gpu-model.json", tmpdir);
	assert_int_equal(profile(g, path, &o, &r), ATM_OK);
	assert_true(r.estimated);
	assert_int_equal(r.n_configs_measured, r.n_configs);
	assert_int_equal(r.n_configs, r.n_unique_kernels); /* every operand on the device */
	atm_prof *pr = NULL;
	atm_profile *p = NULL;
	atm_profile_machine m;
	assert_int_equal(atm_prof_new(&pr, g, &o), ATM_OK);
	atm_prof_get_machine(pr, &m);
	assert_true(m.estimated);
	assert_non_null(strstr(m.cpu, "H100"));
	assert_string_equal(m.backend, "gpu-model-h100");
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	atm_profile_moves mv;
	assert_int_equal(atm_profile_get_moves(p, &mv), ATM_OK);
	assert_true(mv.estimated && mv.to_fast_gbps <= h100->h2d_gbps &&
	            mv.to_fast_gbps > 0.95 * h100->h2d_gbps);
	atm_profile_destroy(p);
	atm_prof_destroy(pr);
	/* measured: refused; an unknown GPU: refused with the valid names */
	o.estimate = false;
	assert_int_equal(atm_prof_new(&pr, g, &o), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "give --estimate"));
	o = (atm_prof_opts){.gpu = {.mode = "model", .model = "v100"}, .estimate = true};
	assert_int_equal(atm_prof_new(&pr, g, &o), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "valid: h100, h200, a100, rtx2080ti"));
	atm_graph_destroy(g);
}

static void test_profiler_compare(void **state)
{
	(void)state;
	atm_graph *g = zoo("tiny_mlp", 8);
	atm_profile_machine m = {.cpu = "c", .n_threads = 1, .backend = "b", .fast_tier = "f",
	                      .slow_tier = "s"};
	atm_profile_machine me = m;
	atm_profile *meas = NULL, *est = NULL;
	me.estimated = true;
	assert_int_equal(atm_profile_new(&meas, &m, NULL), ATM_OK);
	assert_int_equal(atm_profile_new(&est, &me, NULL), ATM_OK);
	atm_prof_error err;
	assert_int_equal(atm_prof_compare(est, meas, g, &err), ATM_E_NOTFOUND);
	assert_non_null(strstr(atm_errmsg(), "share no configuration of graph 'tiny_mlp'"));
	/* estimates twice the measurement on node 0, half on node 1, exact elsewhere */
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++)
		for (int i = 0; i < atm_node_n_configs(g, k); i++) {
			uint32_t c = atm_node_config_at(g, k, i);
			atm_profile_entry a = {.min_s = 1e-3, .median_s = 1e-3, .count = 1};
			atm_profile_entry b = a;
			b.estimated = true;
			b.min_s = b.median_s = k == 0 ? 2e-3 : k == 1 ? 0.5e-3 : 1e-3;
			if (atm_profile_has(meas, g, k, c))
				continue; /* a kernel seen before: its first node's values stay */
			assert_int_equal(atm_profile_put(meas, g, k, c, &a), ATM_OK);
			assert_int_equal(atm_profile_put(est, g, k, c, &b), ATM_OK);
		}
	assert_int_equal(atm_prof_compare(est, meas, g, &err), ATM_OK);
	assert_int_equal(err.n_configs, 168);
	int n0 = atm_node_n_configs(g, 0), n1 = atm_node_n_configs(g, 1);
	assert_true(fabs(err.mean_ape - (100.0 * n0 + 50.0 * n1) / 168) < 1e-9);
	assert_true(err.median_ape == 0);
	/* steps sum every node: relu1 and relu2 are one kernel, so both are halved */
	char s0[ATM_SIGNATURE_MAX], s1[ATM_SIGNATURE_MAX], sk[ATM_SIGNATURE_MAX];
	double diff = 0;
	assert_int_equal(atm_node_signature(g, 0, s0, sizeof s0), ATM_OK);
	assert_int_equal(atm_node_signature(g, 1, s1, sizeof s1), ATM_OK);
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		assert_int_equal(atm_node_signature(g, k, sk, sizeof sk), ATM_OK);
		diff += !strcmp(sk, s0) ? 1e-3 : !strcmp(sk, s1) ? -0.5e-3 : 0;
	}
	assert_true(err.step_fast_meas_s > 0 && err.step_slow_meas_s > 0);
	assert_true(fabs(err.step_fast_meas_s - 20e-3) < 1e-12);
	assert_true(fabs(err.step_fast_est_s - err.step_fast_meas_s - diff) < 1e-12);
	atm_profile_destroy(meas);
	atm_profile_destroy(est);
	atm_graph_destroy(g);
}

static void test_profiler_calibrate(void **state)
{
	(void)state;
	atm_prof_roofline rf;
	atm_kbench_opts o = {.reps = 1};
	atm_prof_roofline_default(&rf, 1);
	rf.slow_read_gbps = 1.5;
	assert_int_equal(atm_prof_roofline_calibrate(&rf, &o), ATM_OK);
	assert_true(rf.calibrated);
	assert_true(rf.n_threads >= 1 && rf.cache_bytes > 0 && rf.fast_gbps > 0);
	for (int op = 0; op < ATM_N_OPS; op++) {
		if (!(rf.gflops[op] > 0 && isfinite(rf.gflops[op]) && rf.gbps[op] > 0 &&
		      rf.overhead_s[op] > 0))
			fail_msg("%s: %g GFLOPS, %g GB/s, %g s a call", atm_op_name((atm_op)op), rf.gflops[op],
			         rf.gbps[op], rf.overhead_s[op]);
	}
	/* a pointwise rate for the ops that have one (convolutions), none for the others */
	for (int op = 0; op < ATM_N_OPS; op++)
		assert_true(atm_op_describe((atm_op)op)->pointwise_rate ? rf.gflops_1x1[op] > 0
		                                                        : rf.gflops_1x1[op] == 0);
	/* the slow side is the caller's */
	assert_true(rf.slow_read_gbps == 1.5);
}

/* test_profiler_kernel_work -- FLOPs and bytes from the op and the shapes: multiply-adds count
 * two, every operand is streamed once, an in-place update twice */
static void test_profiler_kernel_work(void **state)
{
	(void)state;
	struct small sm;
	atm_prof_work w;
	small_build(&sm);
	/* fc: y[1,3] = x[1,4] w[3,4]^T + b[3] */
	assert_int_equal(atm_prof_kernel_work(sm.g, 0, &w), ATM_OK);
	assert_true(w.flops == 2.0 * 1 * 12);
	assert_true(w.traffic_bytes == 16 + 48 + 12 + 12);
	assert_false(w.pointwise);
	/* relu: an element each */
	assert_int_equal(atm_prof_kernel_work(sm.g, 1, &w), ATM_OK);
	assert_true(w.flops == 3 && w.traffic_bytes == 24);
	/* sgd.w: w -= lr * dw reads and writes w */
	assert_int_equal(atm_prof_kernel_work(sm.g, 6, &w), ATM_OK);
	assert_true(w.flops == 2.0 * 12 && w.traffic_bytes == 48 * 3);
	assert_int_equal(atm_prof_kernel_work(sm.g, 99, &w), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "node 99 is out of range"));
	assert_true(w.flops == 0);
	atm_graph_destroy(sm.g);
	/* convolutions: 3x3 over 2 channels into 3, and 1x1 */
	atm_graph *g = NULL;
	int32_t x, k3, y3, k1, y1, id;
	int64_t dx[] = {1, 2, 5, 5}, dk3[] = {3, 2, 3, 3}, dy3[] = {1, 3, 3, 3}, dk1[] = {3, 2, 1, 1},
	        dy1[] = {1, 3, 5, 5};
	assert_int_equal(atm_graph_new(&g, "convs"), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "x", ATM_F32, 4, dx, ATM_KIND_INPUT, ATM_LOC_ANY,
	                                      &x), 0);
	assert_int_equal(atm_graph_add_tensor(g, "k3", ATM_F32, 4, dk3, ATM_KIND_PARAM, ATM_LOC_ANY,
	                                      &k3), 0);
	assert_int_equal(atm_graph_add_tensor(g, "y3", ATM_F32, 4, dy3, ATM_KIND_OUTPUT, ATM_LOC_ANY,
	                                      &y3), 0);
	assert_int_equal(atm_graph_add_tensor(g, "k1", ATM_F32, 4, dk1, ATM_KIND_PARAM, ATM_LOC_ANY,
	                                      &k1), 0);
	assert_int_equal(atm_graph_add_tensor(g, "y1", ATM_F32, 4, dy1, ATM_KIND_OUTPUT, ATM_LOC_ANY,
	                                      &y1), 0);
	assert_int_equal(atm_graph_add_node(g, "c3", ATM_OP_CONV_FWD, NULL, 2, (int32_t[]){x, k3}, 1, &y3,
	                                    &id), 0);
	assert_int_equal(atm_graph_add_node(g, "c1", ATM_OP_CONV_FWD, NULL, 2, (int32_t[]){x, k1}, 1, &y1,
	                                    &id), 0);
	assert_int_equal(atm_prof_kernel_work(g, 0, &w), ATM_OK);
	assert_true(w.flops == 2.0 * 27 * 18); /* 27 outputs, 2 x 3 x 3 products each */
	assert_false(w.pointwise);
	assert_int_equal(atm_prof_kernel_work(g, 1, &w), ATM_OK);
	assert_true(w.flops == 2.0 * 75 * 2);
	assert_true(w.pointwise);
	assert_true(w.traffic_bytes == 4.0 * (50 + 6 + 75));
	atm_graph_destroy(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profiler_counts),
		cmocka_unit_test(test_profiler_incremental),
		cmocka_unit_test(test_profiler_in_step),
		cmocka_unit_test(test_profiler_interrupt_keeps_measured),
		cmocka_unit_test(test_profiler_interrupt_before_anything_claims_no_save),
		cmocka_unit_test(test_profiler_interrupt_estimate_keeps_nothing),
		cmocka_unit_test(test_profiler_estimate_monotone),
		cmocka_unit_test(test_profiler_estimate_slow_never_faster),
		cmocka_unit_test(test_profiler_estimate_kept_apart_and_marked),
		cmocka_unit_test(test_profiler_gpu_model),
		cmocka_unit_test(test_profiler_compare),
		cmocka_unit_test(test_profiler_calibrate),
		cmocka_unit_test(test_profiler_kernel_work),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
