/* test_run_cmd.c -- autotm run and autotm tiers end to end: results JSON, placements, faults, Ctrl-C */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <linux/magic.h>

#include "atm_core.h"
#include "atm_optimizer.h"
#include "common/cli_harness.h"
#include "common/test_parts.h"

/* run -- autotm ARGS; exit code, stderr in err (caller frees) */
static int run(const char *args, char **err)
{
	struct cli_result r = cli_run("%s", args);
	*err = r.err;
	free(r.out);
	return r.code;
}

/* results -- run ARGS with -o NAME in cli_tmpdir and parse the results file */
static json_t *results(const char *args, const char *name)
{
	char full[2048], path[512];
	char *err = NULL;
	snprintf(path, sizeof path, "%s/%s", cli_tmpdir, name);
	snprintf(full, sizeof full, "run %s --quiet -o %s", args, path);
	int code = run(full, &err);
	if (code != 0)
		fail_msg("autotm %s exited %d: %s", full, code, err);
	free(err);
	json_error_t e;
	json_t *j = json_load_file(path, 0, &e);
	if (!j)
		fail_msg("%s: %s", path, e.text);
	return j;
}

static json_t *first_run(json_t *doc)
{
	json_t *r = json_array_get(json_object_get(doc, "runs"), 0);
	assert_non_null(r);
	return r;
}

static const char *str(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_string(v))
		fail_msg("no string field %s", key);
	return json_string_value(v);
}

static void test_run_cmd_results_have_autotm_fields(void **state)
{
	(void)state;
	json_t *doc = results("--model tiny_mlp --placement random --seed 4 --iters 2", "r.json");
	const char *top[] = {"io_size", "default_alloc_size", "gpu_managed_runtime", "runs", "workload"};
	for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
		if (!json_object_get(doc, top[i]))
			fail_msg("results lack %s", top[i]);
	json_t *r = first_run(doc);
	const char *fields[] = {
		"creation_times", "optimization_times", "predicted_runtime", "actual_runtime",
		"dram_limit", "ratio", "tensor_size_map", "config_map", "num_move_nodes",
		"num_pmem_move_nodes", "num_dram_move_nodes", "bytes_moved", "bytes_moved_pmem",
		"bytes_moved_dram", "num_async_move_nodes", "num_pmem_async_move_nodes",
		"num_dram_async_move_nodes", "bytes_async_moved", "bytes_async_moved_pmem",
		"bytes_async_moved_dram", "num_kernels", "num_input_tensors", "num_output_tensors",
		"num_dram_input_tensors", "num_dram_output_tensors", "bytes_input_tensors",
		"bytes_output_tensors", "bytes_dram_input_tensors", "bytes_dram_output_tensors",
		"dram_alloc_size", "pmem_alloc_size", "move_time", "kernel_times", "losses",
		"weights_checksum", "emulated", "formulation", "tiers", "solver"};
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		if (!json_object_get(r, fields[i]))
			fail_msg("run lacks %s", fields[i]);
	assert_string_equal(str(r, "formulation"), "random");
	/* a built-in placement: no solver made it */
	assert_true(json_is_null(json_object_get(r, "solver")));
	/* the CPU has no energy counter: null, never 0 (a GPU's is NVML's) */
	assert_true(json_is_null(json_object_get(r, "energy_per_step_j")));
	assert_true(json_is_null(json_object_get(r, "gpu_clocks")));
	assert_int_equal(json_array_size(json_object_get(r, "losses")), 3);
	assert_true(json_real_value(json_object_get(r, "actual_runtime")) > 0);
	assert_true(json_integer_value(json_object_get(r, "num_pmem_move_nodes")) > 0);
	assert_true(json_is_false(json_object_get(r, "emulated")));
	/* a run alone is no comparison */
	assert_null(json_object_get(r, "comparison"));
	assert_null(json_object_get(r, "actual_runtimes"));
	json_decref(doc);
}

static void test_run_cmd_placements_give_same_weights(void **state)
{
	(void)state;
	json_t *a = results("--model tiny_cnn --placement all-fast --iters 2", "a.json");
	json_t *b = results("--model tiny_cnn --placement all-slow --iters 2 --emulate optane", "b.json");
	json_t *c = results("--model tiny_cnn --placement random --seed 1 --iters 2", "c.json");
	assert_string_equal(str(first_run(a), "weights_checksum"), str(first_run(b), "weights_checksum"));
	assert_string_equal(str(first_run(a), "weights_checksum"), str(first_run(c), "weights_checksum"));
	assert_true(json_equal(json_object_get(first_run(a), "losses"),
	                       json_object_get(first_run(c), "losses")));
	assert_true(json_is_true(json_object_get(first_run(b), "emulated")));
	assert_string_equal(str(first_run(b), "emulation"), "optane");
	assert_true(json_real_value(json_object_get(first_run(b), "emulation_wait_s")) > 0);
	json_decref(a);
	json_decref(b);
	json_decref(c);
}

static void test_run_cmd_ratio_does_the_whole_job(void **state)
{
	(void)state;
	char args[1024];
	json_t *ref = results("--model tiny_mlp --iters 2", "ref.json");
	/* the planning options read as plan reads them: a gap in percent, fractional seconds, the
	 * solver and its threads */
	snprintf(args, sizeof args, "--model tiny_mlp --ratio 4:1 --formulation asynchronous "
	         "--emulate optane --iters 2 --cache %s/prof.json --mip-gap 1%% --time-limit 20.5 "
	         "--async-window 3 --rounds 4 --solver glpk --threads 1", cli_tmpdir);
	json_t *doc = results(args, "opt.json");
	json_t *r = first_run(doc);
	/* the run's thread count is the one its profile's machine key has */
	char path[512];
	json_error_t jerr;
	snprintf(path, sizeof path, "%s/prof.json", cli_tmpdir);
	json_t *prof = json_load_file(path, 0, &jerr);
	assert_non_null(prof);
	json_t *machine = json_object_get(json_array_get(json_object_get(prof, "machines"), 0), "machine");
	assert_true(json_integer_value(json_object_get(machine, "n_threads")) >= 1);
	assert_int_equal(json_integer_value(json_object_get(r, "n_threads")),
	                 json_integer_value(json_object_get(machine, "n_threads")));
	json_decref(prof);
	assert_string_equal(str(r, "formulation"), "asynchronous");
	assert_string_equal(str(r, "solver"), "glpk");
	assert_true(json_real_value(json_object_get(r, "predicted_runtime")) > 0);
	assert_true(json_real_value(json_object_get(r, "ratio")) == 4.0);
	assert_true(json_integer_value(json_object_get(r, "dram_limit")) > 0);
	assert_true(json_array_size(json_object_get(r, "optimization_times")) >= 1);
	/* the placement the optimizer chose trains bitwise like all-fast */
	assert_string_equal(str(r, "weights_checksum"), str(first_run(ref), "weights_checksum"));
	assert_true(json_is_null(json_object_get(r, "memory_mode")));
	/* each kernel's predicted time beside its measured one, and the step split */
	assert_int_equal(json_object_size(json_object_get(r, "predicted_kernel_times")),
	                 json_object_size(json_object_get(r, "kernel_times")));
	json_t *pr = json_object_get(r, "prediction");
	assert_true(json_is_number(json_object_get(pr, "step_error")));
	/* the profile timed every kernel inside a step, and the copies beside a kernel */
	assert_int_equal(json_integer_value(json_object_get(pr, "in_step_kernels")),
	                 json_object_size(json_object_get(r, "kernel_times")));
	double loss = json_number_value(json_object_get(pr, "overlap_loss"));
	assert_true(loss >= 0 && loss <= 1);
	json_decref(doc);
	/* --explain prints where the step went against the prediction */
	struct cli_result ex = cli_run("run --model tiny_mlp --ratio 4:1 --emulate optane --iters 2 "
	                               "--quiet --cache %s/prof.json --explain=3", cli_tmpdir);
	assert_int_equal(ex.code, 0);
	assert_non_null(strstr(ex.out, "explain: predicted step"));
	assert_non_null(strstr(ex.out, "outside kernels"));
	assert_non_null(strstr(ex.out, "the 3 kernels missed most"));
	cli_release(&ex);
	cli_expect(2, "--explain compares the run with the optimizer's prediction",
	           "run --model tiny_mlp --explain");
	cli_expect(2, "--explain '0' is not valid", "run --model tiny_mlp --ratio 4:1 --explain=0");
	/* the 2lm baseline: without Memory Mode a cache is emulated, and the results say which */
	snprintf(args, sizeof args, "--model tiny_mlp --ratio 4:1 --formulation 2lm "
	         "--emulate optane --iters 2 --cache %s/prof.json", cli_tmpdir);
	doc = results(args, "2lm.json");
	r = first_run(doc);
	assert_string_equal(str(r, "formulation"), "2lm");
	assert_true(json_is_null(json_object_get(r, "solver"))); /* a baseline: no solver ran */
	if (!strcmp(str(r, "memory_mode"), "emulated"))
		assert_non_null(strstr(str(r, "emulation"), "+2lm"));
	else
		assert_string_equal(str(r, "memory_mode"), "hardware");
	assert_string_equal(str(r, "weights_checksum"), str(first_run(ref), "weights_checksum"));
	json_decref(doc);
	json_decref(ref);
	cli_expect(2, "not both", "run --model tiny_mlp --ratio 4:1 --placement all-fast");
	cli_expect(2, "--ratio S:F or --dram-limit", "run --model tiny_mlp --formulation static");
	cli_expect(2, "synchronous", "run --model tiny_mlp --ratio 4:1 --formulation fast");
	cli_expect(2, "--mip-gap '2' is not valid", "run --model tiny_mlp --ratio 4:1 --mip-gap 2");
	cli_expect(2, "--time-limit '0' is not valid", "run --model tiny_mlp --ratio 4:1 --time-limit 0");
	cli_expect(2, "--rounds '99' is not valid", "run --model tiny_mlp --ratio 4:1 --rounds 99");
	cli_expect(2, "unknown solver 'gurobi'", "run --model tiny_mlp --ratio 4:1 --solver gurobi");
	cli_expect(2, "--threads 'x' is not valid", "run --model tiny_mlp --ratio 4:1 --threads x");
	/* a build without CBC refuses it before profiling, with the package to install (a build
	 * with it plans with it: test_plan_cmd) */
	atm_opt_solver cbc;
	if (atm_opt_solver_resolve(ATM_OPT_SOLVER_CBC, &cbc) < 0)
		cli_expect(5, "coinor-libcbc-dev", "run --model tiny_mlp --ratio 4:1 --solver cbc "
		           "--cache %s/never.json", cli_tmpdir);
	/* the help gives the optimizer's own defaults */
	struct cli_result h = cli_run("run --help");
	assert_int_equal(h.code, 0);
	char want[64];
	atm_opt_options d;
	atm_opt_options_default(&d);
	snprintf(want, sizeof want, "(default: %g)", d.time_limit_s);
	assert_non_null(strstr(h.out, want));
	assert_non_null(strstr(h.out, "--async-window N"));
	assert_non_null(strstr(h.out, "--solver S"));
	assert_non_null(strstr(h.out, "--threads N"));
	assert_null(strstr(h.out, "--write-model")); /* plan's alone */
	cli_release(&h);
}

static void test_run_cmd_append_adds_runs(void **state)
{
	(void)state;
	json_decref(results("--model tiny_mlp --iters 1", "ap.json"));
	json_t *doc = results("--model tiny_mlp --iters 1 --placement all-slow --append", "ap.json");
	assert_int_equal(json_array_size(json_object_get(doc, "runs")), 2);
	json_decref(doc);
	char args[512], *err = NULL;
	snprintf(args, sizeof args, "run --model tiny_cnn --iters 1 --quiet -o %s/ap.json --append",
	         cli_tmpdir);
	assert_int_equal(run(args, &err), 3); /* a file that does not fit, as one of another version */
	assert_non_null(strstr(err, "holds results of workload 'tiny_mlp'"));
	free(err);
	/* an empty file (touch, a shell's redirection) is started */
	char path[600];
	snprintf(path, sizeof path, "%s/empty.json", cli_tmpdir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	doc = results("--model tiny_mlp --iters 1 --append", "empty.json");
	assert_int_equal(json_array_size(json_object_get(doc, "runs")), 1);
	json_decref(doc);
}

/* --placement-seed picks the random placement alone: every one trains to all-fast's weights
 * for the same --seed, and --seed still changes the weights */
static void test_run_cmd_placement_seed(void **state)
{
	(void)state;
	char args[256];
	json_t *ref = results("--model tiny_cnn --seed 3 --iters 1", "ps-ref.json");
	json_t *other = results("--model tiny_cnn --seed 4 --iters 1", "ps-other.json");
	assert_string_not_equal(str(first_run(ref), "weights_checksum"),
	                        str(first_run(other), "weights_checksum"));
	json_t *prev = NULL;
	for (int n = 1; n <= 3; n++) {
		snprintf(args, sizeof args, "--model tiny_cnn --seed 3 --placement random "
		         "--placement-seed %d --iters 1", n);
		json_t *doc = results(args, "ps.json");
		json_t *r = first_run(doc);
		assert_string_equal(str(r, "weights_checksum"), str(first_run(ref), "weights_checksum"));
		assert_int_equal(json_integer_value(json_object_get(r, "seed")), 3);
		/* another placement seed, another placement */
		if (prev)
			assert_false(json_equal(json_object_get(r, "config_map"),
			                        json_object_get(first_run(prev), "config_map")));
		json_decref(prev);
		prev = doc;
	}
	json_decref(prev);
	json_decref(ref);
	json_decref(other);
	cli_expect(2, "--placement-seed", "run --model tiny_cnn --placement random --placement-seed x");
}

/* results carry the workload's sizes and the exact ratio, 1:0 included */
static void test_run_cmd_results_workload_and_ratio(void **state)
{
	(void)state;
	char args[512];
	snprintf(args, sizeof args, "--model tiny_mlp --ratio 1:0 --formulation synchronous "
	         "--iters 1 --cache %s/prof.json", cli_tmpdir);
	json_t *doc = results(args, "wr.json");
	json_t *w = json_object_get(doc, "workload"), *r = first_run(doc);
	assert_int_equal(json_integer_value(json_object_get(doc, "version")), 2);
	assert_int_equal(json_integer_value(json_object_get(w, "batch")), 8);
	assert_string_equal(str(w, "preset"), "small");
	assert_true(json_is_null(json_object_get(r, "ratio")));
	assert_true(json_number_value(json_object_get(r, "ratio_slow")) == 1);
	assert_true(json_number_value(json_object_get(r, "fast_fraction")) == 0);
	json_decref(doc);
	doc = results("--model tiny_mlp --batch 3 --iters 1", "wr3.json");
	w = json_object_get(doc, "workload");
	assert_int_equal(json_integer_value(json_object_get(w, "batch")), 3);
	assert_true(json_is_null(json_object_get(w, "preset")));
	json_decref(doc);
}

static void test_run_cmd_faults(void **state)
{
	(void)state;
	char args[1024], plan[512];
	cli_expect(2, "neither all-fast, all-slow, random", "run --model tiny_mlp --placement sideways");
	/* a missing plan file is not found (8), as a missing --graph is */
	cli_expect(8, "/nonexistent/plan.json", "run --model tiny_mlp --placement /nonexistent/plan.json");
	cli_expect(8, "No such file", "run --graph /nonexistent/graph.json");
	cli_expect(8, "No such file", "run --model tiny_mlp --placement missing-plan.json");
	/* devices are refused at once, not read to the size limit */
	cli_expect(3, "/dev/zero: it is a character device", "run --graph /dev/zero");
	cli_expect(3, "/dev/zero: it is a character device", "run --model tiny_mlp --placement /dev/zero");
	cli_expect(2, "optane", "run --model tiny_mlp --emulate floppy");
	cli_expect(5, "node", "run --model tiny_mlp --slow numa:7");
	cli_expect(6, "/nonexistent/dir", "run --model tiny_mlp --pmem-dir /nonexistent/dir --slow pmem-dir");
	/* folders that exist but take no files say so, not "no such file" */
	cli_expect(6, "takes no new files", "run --model tiny_mlp -o /proc/version");
	cli_expect(6, "takes no new files", "run --model tiny_mlp --pmem-dir /proc --slow pmem-dir");
	cli_expect(2, "--iters '0' is not valid", "run --model tiny_mlp --iters 0");
	cli_expect(2, "--append needs -o", "run --model tiny_mlp --append");
	/* --slow-size 0 is the default its help and messages name: no cap */
	struct cli_result r = cli_run("run --model tiny_mlp --batch 2 --iters 1 --quiet --slow pmem-dir "
	                              "--slow-size 0");
	if (r.code != 0)
		fail_msg("--slow-size 0: exit %d, %s", r.code, r.err);
	cli_release(&r);
	cli_expect(2, "--slow-size", "run --model tiny_mlp --slow-size -1");
	cli_expect(6, "/nonexistent/dir/r.json", "run --model tiny_mlp -o /nonexistent/dir/r.json");
	/* a plan made for another batch is refused */
	snprintf(plan, sizeof plan, "%s/plan.json", cli_tmpdir);
	snprintf(args, sizeof args, "%s/spec.json", cli_tmpdir);
	const char *spec = "{\"name\": \"x\", \"read_gbps\": -3, \"write_gbps\": 1, \"latency_ns\": 1}";
	assert_int_equal(atm_write_file_atomic(args, spec, strlen(spec)), ATM_OK);
	snprintf(args, sizeof args, "run --model tiny_mlp --emulate %s/spec.json", cli_tmpdir);
	cli_expect(3, "read_gbps", "%s", args);
	const char *bad_plan = "{\"format\": \"autotm-plan\", \"version\": 1, \"graph\": {\"name\": "
	                       "\"tiny_mlp\", \"digest\": \"0000000000000000\"}}";
	assert_int_equal(atm_write_file_atomic(plan, bad_plan, strlen(bad_plan)), ATM_OK);
	snprintf(args, sizeof args, "run --model tiny_mlp --placement %s", plan);
	cli_expect(3, "another version of graph 'tiny_mlp'", "%s", args);
}

/* test_run_cmd_device_outputs -- outputs that are devices are written through, never
 * replaced by a regular file: -o and --export onto a character device (the null device's
 * numbers, made with mknod by root; skipped elsewhere); a profile cache that is a device is
 * refused and left as it is */
static void test_run_cmd_device_outputs(void **state)
{
	char dev[512];
	struct stat st;
	(void)state;
	if (geteuid() != 0)
		skip();
	snprintf(dev, sizeof dev, "%s/dev-null", cli_tmpdir);
	assert_int_equal(mknod(dev, S_IFCHR | 0666, makedev(1, 3)), 0);
	struct cli_result r = cli_run("run --model tiny_mlp --batch 2 --iters 1 --quiet -o %s", dev);
	assert_int_equal(r.code, 0);
	cli_release(&r);
	assert_int_equal(lstat(dev, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	r = cli_run("zoo --model tiny_mlp --export %s", dev);
	assert_int_equal(r.code, 0);
	cli_release(&r);
	assert_int_equal(lstat(dev, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	cli_expect(3, "is a character device", "profile --model tiny_mlp --batch 2 --reps 1 --quiet "
	           "--cache %s --rebuild", dev);
	assert_int_equal(lstat(dev, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(unlink(dev), 0);
}

/* test_run_cmd_refuses_results_before_training -- a results path that cannot take the run
 * is refused before anything trains (nothing on standard output, where the run's summary goes):
 * a folder, an empty name, and --append onto a corrupt, truncated, foreign or other-version
 * file, each left as it was */
static void test_run_cmd_refuses_results_before_training(void **state)
{
	static const struct {
		const char *name, *text, *msg;
		int code;
	} bad[] = {
		{"corrupt.json", "{\"format\": \"autotm-results\", \"version\": 2, \"runs\": [}",
		 "not results JSON", 3},
		{"truncated.json", "{\"format\": \"autotm-results\", \"vers", "not results JSON", 3},
		{"foreign.json", "{\"name\": \"something else\"}", "is not a results file", 3},
		{"old.json", "{\"format\": \"autotm-results\", \"version\": 1, \"runs\": []}",
		 "version 1", 3},
	};
	const char *slow = "run --model tiny_mlp --iters 1000000 --quiet";
	char path[512];
	(void)state;
	struct cli_result r = cli_run("%s -o %s", slow, cli_tmpdir);
	assert_int_equal(r.code, 2);
	assert_non_null(strstr(r.err, "is a folder"));
	assert_string_equal(r.out, "");
	cli_release(&r);
	r = cli_run("%s -o ''", slow);
	assert_int_equal(r.code, 2);
	assert_non_null(strstr(r.err, "empty"));
	assert_string_equal(r.out, "");
	cli_release(&r);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", cli_tmpdir, bad[i].name);
		assert_int_equal(atm_write_file_atomic(path, bad[i].text, strlen(bad[i].text)), ATM_OK);
		r = cli_run("%s -o %s --append", slow, path);
		if (r.code != bad[i].code || !strstr(r.err, bad[i].msg) || r.out[0])
			fail_msg("--append onto %s: exit %d, stderr '%s', stdout '%s'", bad[i].name, r.code,
			         r.err, r.out);
		cli_release(&r);
		char *back = NULL;
		size_t len = 0;
		assert_int_equal(atm_read_file(path, &back, &len), ATM_OK);
		assert_string_equal(back, bad[i].text);
		free(back);
	}
}

static void test_run_cmd_interrupt_writes_nothing(void **state)
{
	(void)state;
	char cmd[2048], path[512];
	snprintf(path, sizeof path, "%s/int.json", cli_tmpdir);
	/* a long run, interrupted once it is under way */
	snprintf(cmd, sizeof cmd,
	         "%s run --model tiny_cnn --iters 1000000 --quiet -o %s >/dev/null 2>%s/int.err & "
	         "pid=$!; sleep 2; kill -INT $pid; wait $pid",
	         cli_autotm, path, cli_tmpdir);
	int status = system(cmd);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 130);
	assert_int_not_equal(access(path, F_OK), 0);
	snprintf(path, sizeof path, "%s/int.err", cli_tmpdir);
	char *err = NULL;
	size_t len;
	assert_int_equal(atm_read_file(path, &err, &len), ATM_OK);
	assert_non_null(strstr(err, "interrupted"));
	free(err);
}

/* holds_open -- process pid has a file whose path ends in suffix open */
static bool holds_open(pid_t pid, const char *suffix)
{
	char dir[64], link[600], target[600], exe[600], want[PATH_MAX];
	/* autotm's own descriptors only: between fork and exec, and in the shell before it execs
	 * autotm, the child holds the test's */
	snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
	ssize_t m = readlink(link, exe, sizeof exe - 1);
	if (m <= 0 || !realpath(cli_autotm, want))
		return false;
	exe[m] = '\0';
	if (strcmp(exe, want))
		return false;
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	for (int fd = 0; fd < 256; fd++) {
		snprintf(link, sizeof link, "%s/%d", dir, fd);
		ssize_t n = readlink(link, target, sizeof target - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		size_t ls = strlen(suffix);
		if ((size_t)n >= ls && !strcmp(target + n - ls, suffix))
			return true;
	}
	return false;
}

/* test_run_cmd_interrupt_while_waiting_for_reader -- -o a pipe nobody reads: the run waits
 * for a reader at its end, and Ctrl-C ends that wait at once with 130 */
static void test_run_cmd_interrupt_while_waiting_for_reader(void **state)
{
	(void)state;
	char fifo[600];
	snprintf(fifo, sizeof fifo, "%s/results.fifo", cli_tmpdir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	pid_t pid = cli_spawn("run --model tiny_mlp --batch 2 --iters 1 --quiet -o %s", fifo);
	/* once trained it polls for a reader: its main thread sleeps between tries */
	char wchan[64], what[64] = "";
	snprintf(wchan, sizeof wchan, "/proc/%d/wchan", (int)pid);
	for (int i = 0; i < 3000 && !strstr(what, "nanosleep"); i++) {
		FILE *f = fopen(wchan, "r");
		size_t n = f ? fread(what, 1, sizeof what - 1, f) : 0;
		what[n] = '\0';
		if (f)
			fclose(f);
		usleep(20000);
	}
	kill(pid, SIGINT);
	int code = cli_wait_within(pid, 3);
	unlink(fifo);
	assert_int_equal(code, 130);
	assert_true(cli_wait_for_text("spawn.err", "waiting for a reader", 1));
}

/* test_run_cmd_fifo_inputs -- a pipe nobody writes to, named as any input (a graph, a plan in
 * the placement or a formulation list, the profile cache, weights, data, a results file to
 * append to), is refused at once with exit 3 instead of holding the run in open() forever */
static void test_run_cmd_fifo_inputs(void **state)
{
	(void)state;
	char fifo[600];
	snprintf(fifo, sizeof fifo, "%s/nobody-writes.fifo", cli_tmpdir);
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	static const char *const as[] = {
		"--graph %s", "--model tiny_mlp --placement %s",
		"--model tiny_mlp --ratio 4:1 --formulation all-fast,%s",
		"--model tiny_mlp --ratio 4:1 --cache %s",
		"--model tiny_mlp --weights-in %s", "--model tiny_mlp --data %s",
		"--model tiny_mlp -o %s --append",
	};
	for (size_t i = 0; i < sizeof as / sizeof as[0]; i++) {
		char args[1200], what[700];
		snprintf(what, sizeof what, as[i], fifo);
		snprintf(args, sizeof args, "run %s --batch 2 --iters 1 --quiet", what);
		pid_t pid = cli_spawn("%s", args);
		double t0 = atm_now_s();
		int code = cli_wait_within(pid, 60);
		char path[700], *err = NULL;
		size_t len = 0;
		snprintf(path, sizeof path, "%s/spawn.err", cli_tmpdir);
		(void)atm_read_file(path, &err, &len);
		print_message("%s: exit %d in %.2f s: %s", what, code, atm_now_s() - t0, err ? err : "");
		if (code != 3 || !err || !strstr(err, "nobody-writes.fifo"))
			fail_msg("%s: exit %d (want 3, naming the pipe): %s", what, code, err ? err : "");
		free(err);
	}
	unlink(fifo);
}

/* test_run_cmd_interrupt_while_waiting_for_lock -- Ctrl-C while another process holds the
 * results file's lock ends the run at once with 130, and nothing is appended */
static void test_run_cmd_interrupt_while_waiting_for_lock(void **state)
{
	(void)state;
	char path[512], lock[600];
	snprintf(path, sizeof path, "%s/locked.json", cli_tmpdir);
	snprintf(lock, sizeof lock, "%s.lock", path);
	/* close-on-exec: an inherited descriptor would be taken for the run's own wait on the lock
	 * before the run had even started */
	int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	pid_t pid = cli_spawn("run --model tiny_mlp --batch 2 --iters 1 --quiet -o %s --append",
	                      path);
	bool waiting = false;
	for (int i = 0; i < 3000 && !waiting; i++) {
		waiting = holds_open(pid, "/locked.json.lock");
		if (!waiting)
			usleep(20000);
	}
	if (!waiting) {
		cli_wait_within(pid, 0);
		close(fd);
		fail_msg("the run never opened the lock file");
	}
	usleep(200000); /* it waits on it now */
	kill(pid, SIGINT);
	double t0 = atm_now_s();
	int code = cli_wait_within(pid, 10);
	double took = atm_now_s() - t0;
	close(fd);
	if (code != 130) {
		char err[600], *text = NULL;
		size_t len = 0;
		snprintf(err, sizeof err, "%s/spawn.err", cli_tmpdir);
		(void)atm_read_file(err, &text, &len);
		fail_msg("exit %d after %.2f s (want 130), stderr '%s'", code, took, text ? text : "");
	}
	assert_true(took < 2.0);
	assert_int_not_equal(access(path, F_OK), 0);
}

/* test_run_cmd_signal_ends_emulated_wait -- SIGINT or SIGTERM in the middle of an emulated
 * wait of most of a minute (a 300000-sample batch in a tier of 1 MB/s, the slowest a spec may
 * be) ends the run, or a profile, at once with exit 130; a spec below that is refused by name,
 * and one whose slow tier is faster than its fast one is run with a warning */
static void test_run_cmd_signal_ends_emulated_wait(void **state)
{
	static const int sigs[] = {SIGINT, SIGTERM};
	char spec[512];
	(void)state;
	snprintf(spec, sizeof spec, "%s/slowest.json", cli_tmpdir);
	const char *slowest = "{\"name\": \"slowest\", \"read_gbps\": 0.001, \"write_gbps\": 0.001, "
	                      "\"latency_ns\": 100}";
	assert_int_equal(atm_write_file_atomic(spec, slowest, strlen(slowest)), ATM_OK);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		pid_t pid = cli_spawn("run --model tiny_mlp --batch 300000 --placement all-slow "
		                      "--emulate %s --iters 3 -o %s/never.json", spec, cli_tmpdir);
		sleep(2);
		kill(pid, sigs[i]);
		int code = cli_wait_within(pid, 20);
		if (code != 130)
			fail_msg("signal %d: exit %d, not 130 within 20 s", sigs[i], code);
	}
	char never[512];
	snprintf(never, sizeof never, "%s/never.json", cli_tmpdir);
	assert_int_not_equal(access(never, F_OK), 0);
	/* the profiler times kernels with the same waits: Ctrl-C ends them too */
	pid_t pid = cli_spawn("profile --model tiny_mlp --batch 300000 --emulate %s --cache "
	                      "%s/slowest-profile.json", spec, cli_tmpdir);
	sleep(2);
	kill(pid, SIGINT);
	assert_int_equal(cli_wait_within(pid, 20), 130);
	const char *below = "{\"name\": \"x\", \"read_gbps\": 1e-12, \"write_gbps\": 1, "
	                    "\"latency_ns\": 100}";
	assert_int_equal(atm_write_file_atomic(spec, below, strlen(below)), ATM_OK);
	cli_expect(3, "'read_gbps' = 1e-12 GB/s is not a memory", "run --model tiny_mlp --placement "
	           "all-slow --emulate %s", spec);
	const char *faster = "{\"name\": \"quick\", \"read_gbps\": 300, \"write_gbps\": 300, "
	                     "\"latency_ns\": 100, \"fast_gbps\": 100}";
	assert_int_equal(atm_write_file_atomic(spec, faster, strlen(faster)), ATM_OK);
	cli_expect(0, "warning: tier spec 'quick'", "run --model tiny_mlp --batch 2 --iters 1 "
	           "--placement all-slow --emulate %s", spec);
}

/* printed_results -- autotm ARGS -o NAME in cli_tmpdir, which must succeed: what it printed in
 * *out (the caller releases it) and the results file */
static json_t *printed_results(const char *args, const char *name, struct cli_result *out)
{
	char path[512];
	json_error_t e;
	snprintf(path, sizeof path, "%s/%s", cli_tmpdir, name);
	*out = cli_run("%s -o %s", args, path);
	if (out->code != 0)
		fail_msg("autotm %s: exit %d, %s", args, out->code, out->err);
	json_t *doc = json_load_file(path, 0, &e);
	if (!doc)
		fail_msg("%s: %s", path, e.text);
	return doc;
}

/* expect_comparison -- doc holds n runs of one comparison interleaved as how, of t turns each,
 * each placement's place in the order rotating from turn to turn, all trained to the same
 * weights; the first run */
static json_t *expect_comparison(json_t *doc, size_t n, int t, const char *how)
{
	json_t *runs = json_object_get(doc, "runs"), *first = json_array_get(runs, 0);
	assert_int_equal(json_array_size(runs), n);
	for (size_t i = 0; i < n; i++) {
		json_t *r = json_array_get(runs, i);
		assert_string_equal(str(r, "comparison"), str(first, "comparison"));
		assert_string_equal(str(r, "interleave"), how);
		assert_string_equal(str(r, "weights_checksum"), str(first, "weights_checksum"));
		assert_int_equal(json_integer_value(json_object_get(r, "turns")), t);
		assert_int_equal(json_integer_value(json_object_get(r, "comparison_size")), (int)n);
		json_t *times = json_object_get(r, "actual_runtimes");
		json_t *pos = json_object_get(r, "turn_positions");
		assert_int_equal(json_array_size(times), (size_t)t);
		for (int k = 0; k < t; k++) {
			assert_true(json_number_value(json_array_get(times, (size_t)k)) > 0);
			assert_int_equal(json_integer_value(json_array_get(pos, (size_t)k)),
			                 ((int)i - k + (int)n) % (int)n);
		}
	}
	return first;
}

/* test_run_cmd_comparison -- several placements compared in turns: one run each under one
 * comparison id, by step and by turn, the table with each one's ratio to all-fast and the
 * weights check printed; planned formulations get their slowdowns predicted too; one placement
 * with --turns is measured in turns */
static void test_run_cmd_comparison(void **state)
{
	(void)state;
	char args[1024];
	struct cli_result out;
	json_t *doc = printed_results("run --model tiny_mlp --batch 2 --placement all-fast,all-slow,"
	                              "random --turns 3 --iters 1 --quiet", "cmp.json", &out);
	assert_non_null(strstr(out.out, "3 placements compared in 3 turns, by step"));
	assert_non_null(strstr(out.out, "/ all-fast: median [range]"));
	assert_non_null(strstr(out.out, "the same for every placement"));
	cli_release(&out);
	json_t *fast = expect_comparison(doc, 3, 3, "step");
	assert_true(json_number_value(json_object_get(fast, "measured_slowdown")) == 1);
	json_decref(doc);
	doc = results("--model tiny_mlp --batch 2 --placement all-fast,all-slow --turns 2 --iters 1 "
	              "--interleave turn --reruns 0", "cmp-turn.json");
	expect_comparison(doc, 2, 2, "turn");
	json_decref(doc);
	/* formulations planned under one limit: the slowdowns predicted beside the measured ones */
	snprintf(args, sizeof args, "--model tiny_mlp --batch 2 --ratio 4:1 --emulate optane "
	         "--formulation all-fast,static,synchronous --turns 2 --iters 1 --cache %s/prof.json",
	         cli_tmpdir);
	doc = results(args, "cmp-opt.json");
	fast = expect_comparison(doc, 3, 2, "step");
	assert_true(json_number_value(json_object_get(fast, "predicted_slowdown")) == 1);
	json_t *sync = json_array_get(json_object_get(doc, "runs"), 2);
	assert_string_equal(str(sync, "formulation"), "synchronous");
	assert_true(json_number_value(json_object_get(sync, "predicted_slowdown")) > 0);
	assert_true(json_is_number(json_object_get(sync, "slowdown_error")));
	assert_int_equal(json_array_size(json_object_get(sync, "measured_slowdown_range")), 2);
	json_decref(doc);
	/* one placement in turns */
	doc = results("--model tiny_mlp --batch 2 --turns 2 --iters 1", "one.json");
	expect_comparison(doc, 1, 2, "step");
	assert_true(json_number_value(json_object_get(first_run(doc), "measured_slowdown")) == 1);
	json_decref(doc);
}

/* scale_calibration -- every calibration step in the cache at path times scale (or, with
 * scale below 0, set to -scale seconds), written back */
static void scale_calibration(const char *path, double scale)
{
	json_error_t e;
	json_t *doc = json_load_file(path, 0, &e), *sec, *steps, *o;
	const char *digest;
	size_t i;
	int n = 0;
	if (!doc)
		fail_msg("%s: %s", path, e.text);
	json_array_foreach(json_object_get(doc, "machines"), i, sec) {
		steps = json_object_get(sec, "all_fast_steps");
		json_object_foreach(steps, digest, o) {
			double s = json_number_value(json_object_get(o, "step_s"));
			assert_int_equal(json_object_set_new(o, "step_s", json_real(scale < 0 ? -scale
			                                                                      : s * scale)), 0);
			n++;
		}
	}
	assert_true(n > 0);
	assert_int_equal(json_dump_file(doc, path, 0), 0);
	json_decref(doc);
}

/* drift_run -- autotm ARGS with -o drift.json: its recorded drift, checked against its step and
 * the calibration step it recorded, and whether the drift was said on stderr (which it must be
 * exactly when the step is more than 10% off) */
static double drift_run(const char *args, bool *said)
{
	struct cli_result out;
	json_t *doc = printed_results(args, "drift.json", &out), *r = first_run(doc);
	json_t *cal = json_object_get(r, "profile_calibration");
	double drift = json_number_value(json_object_get(r, "profile_drift"));
	double step = json_number_value(json_object_get(cal, "all_fast_step_s"));
	assert_true(drift > 0 && step > 0);
	assert_float_equal(drift, json_number_value(json_object_get(r, "actual_runtime")) / step,
	                   1e-6 * drift);
	*said = strstr(out.err, "than when it was profiled (") != NULL;
	assert_true(*said == (fabs(drift - 1) > 0.10));
	if (*said) {
		assert_non_null(strstr(out.err, drift > 1 ? "% slower" : "% faster"));
		assert_non_null(strstr(out.err, "its emulated waits do not"));
	}
	assert_non_null(strstr(out.out, "  calibrated       "));
	cli_release(&out);
	json_decref(doc);
	return drift;
}

/* test_run_cmd_drift -- all-fast's step against the profile's calibration step: a cache whose
 * calibration step is edited 20% off makes the run say so when its step is more than 10% off
 * (and only then), and far off it always does, slower or faster; the run records the drift;
 * --quiet says nothing, and a run that measures no all-fast step records none */
static void test_run_cmd_drift(void **state)
{
	(void)state;
	char cache[512], args[1024];
	bool said;
	snprintf(cache, sizeof cache, "%s/drift-prof.json", cli_tmpdir);
	snprintf(args, sizeof args, "run --model tiny_mlp --batch 2 --formulation all-fast --iters 3 "
	         "--cache %s", cache);
	double d0 = drift_run(args, &said);
	/* 20% off what this machine measured: the next run is about 20% off, as it says */
	scale_calibration(cache, d0 / 1.2);
	drift_run(args, &said);
	/* far off, either way: said whatever the noise and the machine's speed (a step of
	 * tiny_mlp at batch 2 takes tens of microseconds, never 0.1 of one nor 100 s) */
	scale_calibration(cache, -1e-7);
	assert_true(drift_run(args, &said) > 1.1 && said);
	scale_calibration(cache, -100);
	assert_true(drift_run(args, &said) < 0.9 && said);
	struct cli_result q = cli_run("%s --quiet", args);
	assert_int_equal(q.code, 0);
	assert_null(strstr(q.err, "when it was profiled"));
	cli_release(&q);
	/* a comparison with all-fast says it once and records it on every run */
	struct cli_result out;
	snprintf(args, sizeof args, "run --model tiny_mlp --batch 2 --ratio 4:1 --formulation "
	         "synchronous,all-fast --turns 2 --iters 1 --cache %s", cache);
	scale_calibration(cache, -1e-7);
	json_t *doc = printed_results(args, "drift-cmp.json", &out);
	const char *said_at = strstr(out.err, "than when it was profiled (");
	assert_non_null(said_at);
	assert_null(strstr(said_at + 1, "than when it was profiled ("));
	cli_release(&out);
	json_t *runs = json_object_get(doc, "runs");
	double drift = json_number_value(json_object_get(json_array_get(runs, 1), "profile_drift"));
	assert_true(drift > 1.1);
	assert_true(json_number_value(json_object_get(json_array_get(runs, 0), "profile_drift")) ==
	            drift);
	json_decref(doc);
	/* the predictions beside it: every time but the emulated waits scaled by the drift, the
	 * plans' own kept; all-fast waits nothing, the synchronous plan's slow bytes do */
	snprintf(args, sizeof args, "run --model tiny_mlp --batch 2 --ratio 4:1 --formulation "
	         "synchronous,all-fast --turns 2 --iters 1 --emulate optane --cache %s", cache);
	doc = printed_results(args, "drift-emu.json", &out);
	cli_release(&out);
	scale_calibration(cache, -1e-7);
	doc = (json_decref(doc), printed_results(args, "drift-emu.json", &out));
	cli_release(&out);
	runs = json_object_get(doc, "runs");
	for (int i = 0; i < 2; i++) {
		json_t *r = json_array_get(runs, i);
		double d = json_number_value(json_object_get(r, "profile_drift"));
		double p = json_number_value(json_object_get(r, "predicted_runtime"));
		double w = json_number_value(json_object_get(r, "predicted_emulated_wait"));
		double pd = json_number_value(json_object_get(r, "predicted_runtime_drift"));
		assert_true(d > 1.1 && p > 0 && w >= 0 && w < p);
		assert_true(i == 0 ? w > 0 : w == 0);
		assert_float_equal(pd, (p - w) * d + w, 1e-9 * pd);
		assert_true(json_number_value(json_object_get(r, "predicted_slowdown_raw")) > 0);
	}
	double sd = json_number_value(json_object_get(json_array_get(runs, 0), "predicted_slowdown"));
	double fd = json_number_value(json_object_get(json_array_get(runs, 1), "predicted_runtime_drift"));
	assert_float_equal(sd, json_number_value(json_object_get(json_array_get(runs, 0),
	                                                         "predicted_runtime_drift")) / fd,
	                   1e-9 * sd);
	json_decref(doc);
	/* synchronous alone measures no all-fast step: the calibration is recorded, no drift */
	snprintf(args, sizeof args, "--model tiny_mlp --batch 2 --ratio 4:1 --iters 1 --cache %s",
	         cache);
	doc = results(args, "drift-sync.json");
	assert_true(json_is_null(json_object_get(first_run(doc), "profile_drift")));
	assert_true(json_is_object(json_object_get(first_run(doc), "profile_calibration")));
	json_decref(doc);
}

/* test_run_cmd_comparison_bad_input -- lists that cannot be compared are usage errors naming
 * what is wrong, before anything is profiled (the cache's folder does not exist: profiling
 * would fail otherwise) */
static void test_run_cmd_comparison_bad_input(void **state)
{
	(void)state;
	const char *m = "run --model tiny_mlp --batch 2 --cache /nonexistent/dir/p.json";
	char plan[512];
	cli_expect(2, "--turns '0' is not valid", "%s --placement all-fast,all-slow --turns 0", m);
	cli_expect(2, "'synchronous' is listed twice", "%s --ratio 4:1 --formulation "
	           "synchronous,static,synchronous", m);
	cli_expect(2, "managed is the cudaMallocManaged baseline of a GPU: give --gpu",
	           "%s --placement managed,all-fast", m);
	cli_expect(2, "mixes managed, which needs a GPU, with all-slow", "%s --gpu=sim --formulation "
	           "managed,all-slow", m);
	cli_expect(2, "static needs the fast-memory limit", "%s --formulation all-fast,static", m);
	cli_expect(2, "'bogus' is neither a formulation", "%s --ratio 4:1 --formulation "
	           "synchronous,bogus", m);
	cli_expect(2, "an empty item", "%s --placement all-fast,", m);
	cli_expect(2, "give either --placement or the optimizer's options", "%s --ratio 4:1 "
	           "--formulation all-fast,synchronous --placement all-slow", m);
	cli_expect(2, "give either --placement or the optimizer's options", "%s --ratio 4:1 "
	           "--placement all-fast,all-slow", m);
	cli_expect(2, "does not apply to a comparison", "%s --ratio 4:1 --formulation "
	           "all-fast,synchronous --explain", m);
	cli_expect(2, "--2lm emulates Memory Mode for one all-slow run", "%s --placement "
	           "all-slow,all-fast --2lm 1M --emulate optane", m);
	cli_expect(2, "a 2LM cache of 100 bytes holds no 4096-byte line: give a cache of at least "
	           "4096 bytes", "%s --placement all-slow --2lm 100 --emulate optane", m);
	cli_expect(2, "--interleave 'diagonal' is not valid", "%s --placement all-fast,all-slow "
	           "--interleave diagonal", m);
	cli_expect(2, "apply to a comparison", "%s --interleave step", m);
	cli_expect(2, "--reruns 'x' is not valid", "%s --placement all-fast,all-slow --reruns x", m);
	/* a plan file of another version of the graph is read, and refused, first (a bad input
	 * file, as for one run) */
	snprintf(plan, sizeof plan, "%s/other-plan.json", cli_tmpdir);
	const char *bad_plan = "{\"format\": \"autotm-plan\", \"version\": 1, \"graph\": {\"name\": "
	                       "\"tiny_mlp\", \"digest\": \"0000000000000000\"}}";
	assert_int_equal(atm_write_file_atomic(plan, bad_plan, strlen(bad_plan)), ATM_OK);
	cli_expect(3, "another version of graph 'tiny_mlp'", "%s --ratio 4:1 --formulation "
	           "synchronous,%s", m, plan);
	/* one plan file under two spellings, or through a link, is one placement */
	char link[600];
	snprintf(link, sizeof link, "%s/plan-link.json", cli_tmpdir);
	assert_int_equal(symlink(plan, link), 0);
	cli_expect(2, "are one plan file", "%s --placement %s,%s/./other-plan.json", m, plan,
	           cli_tmpdir);
	cli_expect(2, "are one plan file", "%s --placement all-fast,%s,%s", m, plan, link);
	unlink(link);
}

/* test_run_cmd_comparison_infeasible -- a placement whose plan cannot fit is reported and the
 * others are still compared (on a simulated GPU, whose kernels need every operand on the
 * device: 64 bytes of it fit all-fast's prediction alone) */
static void test_run_cmd_comparison_infeasible(void **state)
{
	(void)state;
	char args[1024];
	struct cli_result out;
	snprintf(args, sizeof args, "run --model tiny_mlp --batch 2 --gpu=sim --dram-limit 64 "
	         "--formulation all-fast,synchronous,managed --turns 2 --iters 1 --cache %s/sim.json",
	         cli_tmpdir);
	json_t *doc = printed_results(args, "inf.json", &out);
	assert_non_null(strstr(out.err, "synchronous is left out of the comparison"));
	assert_non_null(strstr(out.out, "left out         synchronous: "));
	assert_non_null(strstr(out.out, "2 placements compared in 2 turns"));
	cli_release(&out);
	json_t *runs = json_object_get(doc, "runs");
	assert_int_equal(json_array_size(runs), 2);
	assert_string_equal(str(json_array_get(runs, 1), "formulation"), "managed");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(runs, 1),
	                                                    "comparison_index")), 2);
	json_decref(doc);
}

/* test_run_cmd_comparison_interrupt -- Ctrl-C in the middle of a comparison ends it with 130
 * and writes nothing */
static void test_run_cmd_comparison_interrupt(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof path, "%s/cmp-int.json", cli_tmpdir);
	pid_t pid = cli_spawn("run --model tiny_cnn --batch 2 --placement all-fast,all-slow "
	                      "--turns 100000 --iters 1 -o %s", path);
	if (!cli_wait_for_text("spawn.err", "turn 2/100000", 120))
		fail_msg("the comparison did not get under way");
	kill(pid, SIGINT);
	assert_int_equal(cli_wait_within(pid, 60), 130);
	assert_int_not_equal(access(path, F_OK), 0);
}

static void test_run_cmd_tiers(void **state)
{
	(void)state;
	char *err = NULL, path[512], *out = NULL;
	size_t len;
	assert_int_equal(run("tiers --emulate optane --json", &err), 0);
	free(err);
	snprintf(path, sizeof path, "%s/out", cli_tmpdir);
	assert_int_equal(atm_read_file(path, &out, &len), ATM_OK);
	json_error_t e;
	json_t *j = json_loads(out, 0, &e);
	free(out);
	assert_non_null(j);
	assert_true(json_array_size(json_object_get(j, "nodes")) >= 1);
	assert_true(json_is_true(json_object_get(json_object_get(j, "slow"), "emulated")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "fast"), "kind")), "dram");
	/* a slow tier in a file says where, on what, and why there */
	json_t *slow = json_object_get(j, "slow"), *file = json_object_get(slow, "file");
	if (!strcmp(json_string_value(json_object_get(slow, "kind")), "pmem-dir")) {
		assert_non_null(file);
		assert_true(json_is_string(json_object_get(file, "path")));
		assert_true(json_is_string(json_object_get(file, "fs")));
		assert_true(json_is_boolean(json_object_get(file, "writeback")));
		assert_true(json_is_false(json_object_get(file, "given")));
		assert_true(json_is_string(json_object_get(file, "why")));
	}
	json_decref(j);
	cli_expect(2, "warp", "tiers --slow warp");
}

/* count_of -- how many times s occurs in text */
static int count_of(const char *text, const char *s)
{
	int n = 0;
	for (const char *p = strstr(text, s); p; p = strstr(p + 1, s))
		n++;
	return n;
}

/* slow_file -- the run's tiers.slow_path and tiers.slow_fs (NULL when null or absent) */
static void slow_file(json_t *run, const char **path, const char **fs)
{
	json_t *tiers = json_object_get(run, "tiers");
	assert_non_null(tiers);
	*path = json_string_value(json_object_get(tiers, "slow_path"));
	*fs = json_string_value(json_object_get(tiers, "slow_fs"));
}

/* test_run_cmd_slow_tier_file -- the results say where the slow tier's file was and on what
 * file system; an emulated run given no folder takes the tmpfs where /dev/shm is one, a folder
 * given is kept (warned about once when on a disk), and a results file written before the
 * fields were added still takes an append */
static void test_run_cmd_slow_tier_file(void **state)
{
	(void)state;
	const char *path, *fs;
	struct statfs sf;
	bool shm_tmpfs = statfs("/dev/shm", &sf) == 0 && (unsigned long)sf.f_type == TMPFS_MAGIC;
	/* emulated, no folder: the user's tmpfs default ("/dev/shm/autotm-pmem-UID", atm_runtime.h) */
	char shm_dir[64], tmp_dir[64];
	snprintf(shm_dir, sizeof shm_dir, "/dev/shm/autotm-pmem-%lu", (unsigned long)geteuid());
	snprintf(tmp_dir, sizeof tmp_dir, "/tmp/autotm-pmem-%lu", (unsigned long)geteuid());
	json_t *doc = results("--model tiny_mlp --batch 2 --iters 1 --placement all-slow --slow "
	                      "pmem-dir --emulate optane", "file-default.json");
	slow_file(first_run(doc), &path, &fs);
	assert_non_null(path);
	assert_non_null(fs);
	if (shm_tmpfs) {
		assert_string_equal(path, shm_dir);
		assert_string_equal(fs, "tmpfs");
	}
	json_decref(doc);
	/* not emulated: the user's other default, "/tmp/autotm-pmem-UID" */
	doc = results("--model tiny_mlp --batch 2 --iters 1 --placement all-slow --slow pmem-dir",
	              "file-plain.json");
	slow_file(first_run(doc), &path, &fs);
	assert_string_equal(path, tmp_dir);
	json_decref(doc);
	/* a folder given is kept; on a disk the warning is said once */
	char file[512];
	snprintf(file, sizeof file, "%s/file-given.json", cli_tmpdir);
	struct cli_result r = cli_run("run --model tiny_mlp --batch 2 --iters 1 --placement all-slow "
	                              "--slow pmem-dir --emulate optane --pmem-dir %s -o %s",
	                              cli_tmpdir, file);
	if (r.code != 0)
		fail_msg("--pmem-dir %s: exit %d, %s", cli_tmpdir, r.code, r.err);
	json_error_t e;
	doc = json_load_file(file, 0, &e);
	assert_non_null(doc);
	slow_file(first_run(doc), &path, &fs);
	assert_string_equal(path, cli_tmpdir);
	assert_int_equal(statfs(cli_tmpdir, &sf), 0);
	bool disk = (unsigned long)sf.f_type != TMPFS_MAGIC && (unsigned long)sf.f_type != RAMFS_MAGIC;
	if (disk && strcmp(fs, "tmpfs")) {
		assert_int_equal(count_of(r.err, "writeback"), 1);
		assert_non_null(strstr(r.err, cli_tmpdir));
		assert_non_null(strstr(r.err, fs));
		assert_non_null(strstr(r.err, "--pmem-dir"));
	} else {
		assert_int_equal(count_of(r.err, "writeback"), 0);
	}
	cli_release(&r);
	/* a file whose runs lack the fields (written before them) is appended to */
	json_t *tiers = json_object_get(first_run(doc), "tiers");
	json_object_del(tiers, "slow_path");
	json_object_del(tiers, "slow_fs");
	assert_int_equal(json_dump_file(doc, file, JSON_INDENT(1)), 0);
	json_decref(doc);
	r = cli_run("run --model tiny_mlp --batch 2 --iters 1 --placement all-fast --emulate optane "
	            "--quiet -o %s --append", file);
	if (r.code != 0)
		fail_msg("append to an older file: exit %d, %s", r.code, r.err);
	cli_release(&r);
	doc = json_load_file(file, 0, &e);
	assert_non_null(doc);
	assert_int_equal(json_array_size(json_object_get(doc, "runs")), 2);
	slow_file(first_run(doc), &path, &fs);
	assert_null(path);
	json_decref(doc);
}

/* st_path -- NAME in cli_tmpdir */
static const char *st_path(const char *name)
{
	static char buf[4][512];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", cli_tmpdir, name);
	return buf[k];
}

/* st_raw -- a safetensors file of header text and n zero bytes after it */
static void st_raw(const char *name, const char *header, size_t n)
{
	FILE *f = fopen(st_path(name), "wb");
	uint64_t len = strlen(header);
	unsigned char l[8];
	for (int i = 0; i < 8; i++)
		l[i] = (unsigned char)(len >> (8 * i));
	assert_non_null(f);
	fwrite(l, 1, 8, f);
	fputs(header, f);
	for (size_t i = 0; i < n; i++)
		fputc(0, f);
	fclose(f);
}

/* checksum_of -- the weights checksum of run ARGS */
static char *checksum_of(const char *args)
{
	json_t *doc = results(args, "w.json");
	char *c = strdup(str(first_run(doc), "weights_checksum"));
	json_decref(doc);
	return c;
}

/* expect_resumes -- run ARGS for two steps, and for one step from weights file w (written after
 * ARGS' first step) in all-fast and in all-slow: all three train to the same weights */
static void expect_resumes(const char *args_base, const char *w)
{
	char args[2048];
	snprintf(args, sizeof args, "%s --iters 2", args_base);
	char *two = checksum_of(args);
	snprintf(args, sizeof args, "%s --iters 1 --weights-in %s", args_base, w);
	char *cont = checksum_of(args);
	snprintf(args, sizeof args, "%s --iters 1 --weights-in %s --placement all-slow --emulate optane",
	         args_base, w);
	char *slow = checksum_of(args);
	assert_string_equal(two, cont);
	assert_string_equal(two, slow);
	free(two), free(cont), free(slow);
}

/* expect_refused -- run ARGS exits code with want in its message, writing no results */
static void expect_refused(const char *args, int code, const char *want)
{
	char full[2048], *err = NULL;
	unlink(st_path("never.json"));
	snprintf(full, sizeof full, "run --model tiny_mlp --batch 2 --iters 1 --quiet %s -o %s", args,
	         st_path("never.json"));
	int got = run(full, &err);
	if (got != code || !strstr(err, want))
		fail_msg("autotm %s: exit %d (want %d), stderr '%s' (want '%s')", full, got, code, err,
		         want);
	assert_int_equal(access(st_path("never.json"), F_OK), -1);
	free(err);
}

/* half_of -- v (a multiple of 2^-10 within [-1, 1], or any value BF16 holds with bf) as the
 * 16 bits of BF16 (bf) or of IEEE binary16 */
static uint16_t half_of(float v, bool bf)
{
	uint32_t bits;
	memcpy(&bits, &v, sizeof bits);
	if (bf)
		return (uint16_t)(bits >> 16);
	uint16_t sign = (uint16_t)(bits >> 31 << 15);
	if (v == 0)
		return sign;
	int e;
	float m = frexpf(fabsf(v), &e); /* |v| = m 2^e, m in [0.5, 1) */
	if (e + 14 <= 0) /* subnormal: a count of 2^-24 */
		return (uint16_t)(sign | (uint16_t)(fabsf(v) * 16777216.0f));
	return (uint16_t)(sign | (uint16_t)(e + 14) << 10 | (uint16_t)((2 * m - 1) * 1024));
}

/* test_run_cmd_half_weights -- weights given as BF16 or F16 (a checkpoint in half precision)
 * train exactly as the same values in F32; F64, which float32 would round, is refused naming
 * what is read */
static void test_run_cmd_half_weights(void **state)
{
	(void)state;
	const char *m = "--model tiny_mlp --batch 2 --quiet";
	char args[1024];
	snprintf(args, sizeof args, "%s --iters 1 --weights-out %s", m, st_path("h0.safetensors"));
	free(checksum_of(args));
	atm_st_file *w = NULL;
	assert_int_equal(atm_st_read(&w, st_path("h0.safetensors")), ATM_OK);
	int64_t n = atm_st_count(w);
	atm_st_tensor f32[8], half[8];
	assert_true(n <= 8);
	for (int bf = 0; bf < 2; bf++) {
		for (int64_t i = 0; i < n; i++) {
			const atm_st_tensor *t = atm_st_at(w, i);
			float *v = malloc((size_t)t->bytes);
			uint16_t *h = malloc((size_t)t->n_elems * sizeof *h);
			assert_true(v && h);
			memcpy(v, t->data, (size_t)t->bytes);
			for (int64_t j = 0; j < t->n_elems; j++) {
				/* values the half format holds: BF16's upper half, or k / 1024 */
				float x = bf ? v[j] : fminf(fmaxf(roundf(v[j] * 1024) / 1024, -1), 1);
				h[j] = half_of(x, bf);
				if (bf) {
					uint32_t u = (uint32_t)h[j] << 16;
					memcpy(&x, &u, sizeof x);
				}
				v[j] = x;
			}
			f32[i] = *t;
			f32[i].data = v;
			half[i] = *t;
			half[i].dtype = bf ? ATM_ST_BF16 : ATM_ST_F16;
			half[i].data = h;
			half[i].bytes = t->n_elems * 2;
		}
		assert_int_equal(atm_st_write(st_path("h32.safetensors"), f32, n, NULL), ATM_OK);
		assert_int_equal(atm_st_write(st_path("h16.safetensors"), half, n, NULL), ATM_OK);
		snprintf(args, sizeof args, "%s --iters 2 --weights-in %s", m, st_path("h32.safetensors"));
		char *want = checksum_of(args);
		snprintf(args, sizeof args, "%s --iters 2 --weights-in %s", m, st_path("h16.safetensors"));
		char *got = checksum_of(args);
		assert_string_equal(want, got);
		free(want), free(got);
		for (int64_t i = 0; i < n; i++) {
			free((void *)f32[i].data);
			free((void *)half[i].data);
		}
	}
	atm_st_destroy(w);
	st_raw("h64.safetensors",
	       "{\"fc1.w\": {\"dtype\": \"F64\", \"shape\": [1], \"data_offsets\": [0, 8]}}", 8);
	snprintf(args, sizeof args, "--weights-in %s", st_path("h64.safetensors"));
	expect_refused(args, 3, "BF16 and F16 are read too, widened exactly; F64 would be rounded");
}

/* half_value -- the 16 bits h of BF16 (bf) or IEEE binary16 as a float */
static float half_value(uint16_t h, bool bf)
{
	float f;
	if (bf) {
		uint32_t u = (uint32_t)h << 16;
		memcpy(&f, &u, sizeof f);
		return f;
	}
	int e = h >> 10 & 0x1f, m = h & 0x3ff;
	f = e ? ldexpf(1.0f + (float)m / 1024, e - 15) : ldexpf((float)m, -24);
	return h >> 15 ? -f : f;
}

/* test_run_cmd_weights_dtype -- --weights-dtype bf16 and f16 write the parameters rounded to
 * the nearest value of the format (BF16 ties to even, bit for bit), the optimizer's states in
 * F32, and the file reads back; without --weights-out, or a dtype not offered, usage errors */
static void test_run_cmd_weights_dtype(void **state)
{
	(void)state;
	const char *m = "--model tiny_mlp --batch 2 --quiet --optimizer momentum --iters 1";
	char args[1024];
	snprintf(args, sizeof args, "%s --weights-out %s", m, st_path("d32.safetensors"));
	free(checksum_of(args));
	atm_st_file *w = NULL, *h = NULL;
	assert_int_equal(atm_st_read(&w, st_path("d32.safetensors")), ATM_OK);
	for (int bf = 0; bf < 2; bf++) {
		snprintf(args, sizeof args, "%s --weights-out %s --weights-dtype %s", m,
		         st_path("d16.safetensors"), bf ? "bf16" : "F16");
		free(checksum_of(args));
		assert_int_equal(atm_st_read(&h, st_path("d16.safetensors")), ATM_OK);
		assert_int_equal(atm_st_count(h), atm_st_count(w));
		for (int64_t i = 0; i < atm_st_count(w); i++) {
			const atm_st_tensor *a = atm_st_at(w, i), *b = atm_st_find(h, a->name);
			assert_non_null(b);
			bool kept = strstr(a->name, ".momentum_buffer") != NULL;
			assert_int_equal(b->dtype, kept ? ATM_ST_F32 : bf ? ATM_ST_BF16 : ATM_ST_F16);
			for (int64_t j = 0; j < a->n_elems; j++) {
				float v;
				memcpy(&v, (const char *)a->data + 4 * j, sizeof v);
				if (kept) {
					assert_memory_equal((const char *)b->data + 4 * j, &v, sizeof v);
					continue;
				}
				uint16_t got;
				memcpy(&got, (const char *)b->data + 2 * j, sizeof got);
				uint32_t u;
				memcpy(&u, &v, sizeof u);
				if (bf)
					assert_int_equal(got, (uint16_t)((u + 0x7fffu + (u >> 16 & 1)) >> 16));
				else if (fabsf(half_value(got, false) - v) > fabsf(v) * 0x1p-11f + 0x1p-25f)
					fail_msg("'%s'[%lld] %.9g as F16 %#x (%.9g)", a->name, (long long)j,
					         (double)v, got, (double)half_value(got, false));
			}
		}
		atm_st_destroy(h);
		h = NULL;
		/* and it starts a run */
		snprintf(args, sizeof args, "%s --weights-in %s", m, st_path("d16.safetensors"));
		free(checksum_of(args));
	}
	atm_st_destroy(w);
	expect_refused("--weights-dtype bf16", 2, "--weights-dtype is the dtype of --weights-out");
	snprintf(args, sizeof args, "--weights-out %s --weights-dtype f64", st_path("d64.safetensors"));
	expect_refused(args, 2, "valid are f32 (the default), bf16 and f16");
}

/* test_run_cmd_token_data -- a language model's --data: integer token ids and labels, the same
 * step under two placements; an id past the vocabulary, or a float id, refused naming it */
static void test_run_cmd_token_data(void **state)
{
	(void)state;
	char args[1024];
	const char *m = "--model tiny_gpt --batch 1 --seq 4 --quiet";
	int32_t ids[4] = {3, 511, 0, 42}, labels[4] = {1, 2, 3, 4};
	atm_st_tensor d[2] = {{.name = "input_ids", .dtype = ATM_ST_I32, .ndim = 2, .dims = {1, 4},
	                       .n_elems = 4, .data = ids, .bytes = sizeof ids},
	                      {.name = "labels", .dtype = ATM_ST_I32, .ndim = 2, .dims = {1, 4},
	                       .n_elems = 4, .data = labels, .bytes = sizeof labels}};
	assert_int_equal(atm_st_write(st_path("tokens.safetensors"), d, 2, NULL), ATM_OK);
	snprintf(args, sizeof args, "%s --iters 2 --data %s", m, st_path("tokens.safetensors"));
	char *a = checksum_of(args);
	snprintf(args, sizeof args, "%s --iters 2 --data %s --placement random", m,
	         st_path("tokens.safetensors"));
	char *b = checksum_of(args);
	assert_string_equal(a, b);
	free(a), free(b);
	ids[1] = 512;
	assert_int_equal(atm_st_write(st_path("tokens-bad.safetensors"), d, 2, NULL), ATM_OK);
	snprintf(args, sizeof args, "%s --data %s", m, st_path("tokens-bad.safetensors"));
	expect_refused(args, 3, "tensor 'input_ids': id 512 at element 1 is outside 0 to 511");
	float f[4] = {0};
	d[0] = (atm_st_tensor){.name = "input_ids", .dtype = ATM_ST_F32, .ndim = 2, .dims = {1, 4},
	                       .n_elems = 4, .data = f, .bytes = sizeof f};
	assert_int_equal(atm_st_write(st_path("tokens-f32.safetensors"), d, 2, NULL), ATM_OK);
	snprintf(args, sizeof args, "%s --data %s", m, st_path("tokens-f32.safetensors"));
	expect_refused(args, 3, "tensor 'input_ids' is F32 [1, 4]; the graph's 'input_ids' takes 4 "
	               "integers");
}

/* test_run_cmd_optimizers -- --optimizer adamw keeps two averages and a step per parameter: the
 * results give its factors and state bytes; --weights-out writes the states beside the
 * weights and --weights-in resumes them, bitwise as if the run had gone on, in any placement;
 * weights alone start the optimizer afresh; momentum's buffers resume alike */
static void test_run_cmd_optimizers(void **state)
{
	(void)state;
	const char *m = "--model tiny_mlp --batch 2 --warmup 0 --optimizer adamw --lr 0.002";
	char args[2048];
	snprintf(args, sizeof args, "%s --iters 1 --weights-out %s", m, st_path("a1.safetensors"));
	json_t *doc = results(args, "a.json");
	json_t *opt = json_object_get(json_object_get(doc, "workload"), "optimizer");
	assert_string_equal(str(opt, "name"), "adamw");
	assert_true(fabs(json_number_value(json_object_get(opt, "lr")) - 0.002) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(opt, "weight_decay")) - 0.01) < 1e-9);
	assert_int_equal(json_array_size(json_object_get(opt, "betas")), 2);
	/* tiny_mlp's 3,466 parameters: two averages each, and a step per tensor (6 tensors) */
	assert_int_equal(json_integer_value(json_object_get(opt, "state_bytes")), 2 * 3466 * 4 + 6 * 4);
	assert_int_equal(json_integer_value(json_object_get(first_run(doc), "bytes_optimizer_state")),
	                 2 * 3466 * 4 + 6 * 4);
	json_decref(doc);
	atm_st_file *w = NULL;
	assert_int_equal(atm_st_read(&w, st_path("a1.safetensors")), ATM_OK);
	assert_int_equal(atm_st_count(w), 6 * 4);
	assert_non_null(atm_st_find(w, "fc1.w.exp_avg"));
	assert_non_null(atm_st_find(w, "fc1.w.exp_avg_sq"));
	assert_int_equal(atm_st_find(w, "fc1.w.step")->n_elems, 1);
	assert_true(*(const float *)atm_st_find(w, "fc1.w.step")->data == 1.0f);
	atm_st_destroy(w);
	expect_resumes(m, st_path("a1.safetensors"));
	snprintf(args, sizeof args, "%s --iters 2", m);
	char *two = checksum_of(args);
	/* the weights and every state after two steps, bitwise the same in any placement */
	const char *places[3] = {"all-fast", "random --placement-seed 3", "all-slow --emulate optane"};
	char *bytes[3] = {0};
	size_t len[3] = {0};
	for (int i = 0; i < 3; i++) {
		char name[32];
		snprintf(name, sizeof name, "p%d.safetensors", i);
		snprintf(args, sizeof args, "%s --iters 2 --placement %s --weights-out %s", m, places[i],
		         st_path(name));
		json_decref(results(args, "p.json"));
		assert_int_equal(atm_read_file(st_path(name), &bytes[i], &len[i]), ATM_OK);
		assert_int_equal(len[i], len[0]);
		assert_memory_equal(bytes[i], bytes[0], len[0]);
	}
	for (int i = 0; i < 3; i++)
		free(bytes[i]);
	/* the weights alone (SGD's file): a fresh optimizer, not the run that went on */
	snprintf(args, sizeof args, "--model tiny_mlp --batch 2 --warmup 0 --iters 1 --weights-out %s",
	         st_path("s1.safetensors"));
	json_decref(results(args, "s.json"));
	snprintf(args, sizeof args, "%s --iters 1 --weights-in %s", m, st_path("s1.safetensors"));
	char *fresh = checksum_of(args);
	assert_string_not_equal(fresh, two);
	/* SGD with momentum: a buffer per parameter, the same resume */
	const char *mm = "--model tiny_mlp --batch 2 --warmup 0 --optimizer momentum --momentum 0.8";
	snprintf(args, sizeof args, "%s --iters 1 --weights-out %s", mm, st_path("m1.safetensors"));
	json_decref(results(args, "m.json"));
	snprintf(args, sizeof args, "%s --iters 2 --placement random", mm);
	char *mtwo = checksum_of(args);
	snprintf(args, sizeof args, "%s --iters 1 --weights-in %s", mm, st_path("m1.safetensors"));
	char *mcont = checksum_of(args);
	assert_string_equal(mtwo, mcont);
	free(two), free(fresh), free(mtwo), free(mcont);
}

/* test_run_cmd_optimizer_states_refused -- a file with some of the states, a state of the wrong
 * shape or dtype, not finite or no count of steps, another optimizer's states: refused by name
 * (exit 3); bad factors are usage errors (exit 2) */
static void test_run_cmd_optimizer_states_refused(void **state)
{
	(void)state;
	const char *m = "--model tiny_mlp --batch 2 --warmup 0 --iters 1";
	char args[2048], bad[1024];
	atm_st_file *w = NULL;
	snprintf(args, sizeof args, "%s --optimizer adamw --weights-out %s", m,
	         st_path("ra.safetensors"));
	json_decref(results(args, "ra.json"));
	snprintf(args, sizeof args, "%s --optimizer momentum --weights-out %s", m,
	         st_path("rm.safetensors"));
	json_decref(results(args, "rm.json"));
	snprintf(bad, sizeof bad, "--optimizer adamw --weights-in %s", st_path("rm.safetensors"));
	expect_refused(bad, 3, "is not a parameter");
	assert_int_equal(atm_st_read(&w, st_path("ra.safetensors")), ATM_OK);
	int64_t n = atm_st_count(w), k = 0;
	atm_st_tensor *ts = calloc((size_t)n, sizeof *ts);
	for (int64_t i = 0; i < n; i++)
		if (strcmp(atm_st_at(w, i)->name, "fc2.b.exp_avg_sq") != 0)
			ts[k++] = *atm_st_at(w, i);
	assert_int_equal(atm_st_write(st_path("some.safetensors"), ts, (int)k, NULL), ATM_OK);
	snprintf(bad, sizeof bad, "--optimizer adamw --weights-in %s", st_path("some.safetensors"));
	expect_refused(bad, 3, "holds 17 of the graph's 18 optimizer states ('fc2.b.exp_avg_sq' is "
	                       "missing): give all of them");
	for (int64_t i = 0; i < n; i++) {
		ts[i] = *atm_st_at(w, i);
		if (strcmp(ts[i].name, "fc1.w.exp_avg") == 0) /* [64, 32] read as [32, 64] */
			ts[i].dims[0] = atm_st_at(w, i)->dims[1], ts[i].dims[1] = atm_st_at(w, i)->dims[0];
	}
	assert_int_equal(atm_st_write(st_path("shape.safetensors"), ts, (int)n, NULL), ATM_OK);
	snprintf(bad, sizeof bad, "--optimizer adamw --weights-in %s", st_path("shape.safetensors"));
	expect_refused(bad, 3, "fc1.w.exp_avg");
	int32_t one_step = 1;
	for (int64_t i = 0; i < n; i++) {
		ts[i] = *atm_st_at(w, i);
		if (strcmp(ts[i].name, "fc1.b.step") == 0) /* the step as an integer */
			ts[i].dtype = ATM_ST_I32, ts[i].data = &one_step;
	}
	assert_int_equal(atm_st_write(st_path("step.safetensors"), ts, (int)n, NULL), ATM_OK);
	snprintf(bad, sizeof bad, "--optimizer adamw --weights-in %s", st_path("step.safetensors"));
	expect_refused(bad, 3, "fc1.b.step");
	/* a step that is no count of steps, and a state that is not finite: refused by name */
	const struct {
		const char *name;
		float v;
		const char *msg;
	} broken[] = {
		{"fc1.b.step", NAN, "optimizer state 'fc1.b.step' holds NaN at element 0"},
		{"fc1.b.step", -5, "'fc1.b.step' is AdamW's count of steps taken, which must be a whole "
		                   "number from 0 to 16777216, not -5"},
		{"fc1.b.step", 2.5f, "not 2.5"},
		{"fc2.w.exp_avg", INFINITY, "optimizer state 'fc2.w.exp_avg' holds an infinity"},
	};
	for (size_t b = 0; b < sizeof broken / sizeof broken[0]; b++) {
		float *copy = NULL;
		for (int64_t i = 0; i < n; i++) {
			ts[i] = *atm_st_at(w, i);
			if (strcmp(ts[i].name, broken[b].name) == 0) {
				copy = malloc((size_t)ts[i].n_elems * sizeof *copy);
				memcpy(copy, ts[i].data, (size_t)ts[i].n_elems * sizeof *copy);
				copy[ts[i].n_elems - 1] = broken[b].v;
				copy[0] = broken[b].v;
				ts[i].data = copy;
			}
		}
		assert_int_equal(atm_st_write(st_path("broken.safetensors"), ts, (int)n, NULL), ATM_OK);
		snprintf(bad, sizeof bad, "--optimizer adamw --weights-in %s",
		         st_path("broken.safetensors"));
		expect_refused(bad, 3, broken[b].msg);
		free(copy);
	}
	free(ts);
	atm_st_destroy(w);
	expect_refused("--optimizer adam", 2, "unknown optimizer 'adam' (valid: sgd, momentum, adamw)");
	expect_refused("--optimizer adamw --betas 0.9", 2, "--betas '0.9' is not valid");
	expect_refused("--optimizer adamw --betas 0.9,1", 2, "--betas '0.9,1' is not valid");
	/* one valid range named, whichever side of it the value falls */
	expect_refused("--optimizer adamw --eps 0", 2,
	               "--eps '0' is not valid; expected a number above 0 and at most 1e6");
	expect_refused("--optimizer adamw --eps -1e-8", 2,
	               "--eps '-1e-8' is not valid; expected a number above 0 and at most 1e6");
	expect_refused("--optimizer momentum --momentum 0", 2,
	               "--momentum '0' is not valid; expected a number above 0");
	/* a momentum of 1 or more is taken, as PyTorch does, with a warning */
	struct cli_result warned = cli_run("run --model tiny_mlp --batch 2 --iters 1 --optimizer "
	                                   "momentum --momentum 2");
	assert_int_equal(warned.code, 0);
	assert_non_null(strstr(warned.err, "warning: --momentum 2 is 1 or more"));
	cli_release(&warned);
	expect_refused("--momentum 0.9", 2, "--momentum is for --optimizer momentum");
	expect_refused("--lr -1", 2, "--lr '-1' is not valid");
	expect_refused("--weight-decay x", 2, "--weight-decay 'x' is not valid");
}

/* test_run_cmd_weights_and_data -- --weights-out writes the weights after the last step, which
 * --weights-in continues from as if the run had gone on, in any placement; --data's batch,
 * as class indices or one-hot rows, trains alike in every placement; a bad file is refused
 * before anything runs (exit 3, naming the tensor), a missing one with 8, and no output may
 * be an input */
static void test_run_cmd_weights_and_data(void **state)
{
	(void)state;
	const char *m = "--model tiny_mlp --batch 2 --warmup 0";
	char args[2048], *err = NULL;
	/* one step written out, then one more from it: two steps */
	snprintf(args, sizeof args, "%s --iters 1 --weights-out %s", m, st_path("w1.safetensors"));
	json_decref(results(args, "w.json"));
	atm_st_file *w = NULL;
	assert_int_equal(atm_st_read(&w, st_path("w1.safetensors")), ATM_OK);
	assert_int_equal(atm_st_count(w), 6);
	assert_non_null(atm_st_find(w, "fc1.w"));
	assert_int_equal(atm_st_find(w, "fc1.w")->dims[1], 64);
	expect_resumes(m, st_path("w1.safetensors"));
	snprintf(args, sizeof args, "%s --iters 2", m);
	char *two = checksum_of(args);
	/* the same batch as class indices and as one-hot rows, under two placements */
	float image[2 * 64], onehot[2 * 10] = {0};
	int64_t idx[2] = {7, 2};
	for (int i = 0; i < 2 * 64; i++)
		image[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
	onehot[7] = onehot[10 + 2] = 1;
	atm_st_tensor d[2] = {{.name = "input", .dtype = ATM_ST_F32, .ndim = 4, .dims = {2, 1, 8, 8},
	                       .n_elems = 128, .data = image, .bytes = sizeof image},
	                      {.name = "labels", .dtype = ATM_ST_I64, .ndim = 1, .dims = {2},
	                       .n_elems = 2, .data = idx, .bytes = sizeof idx}};
	assert_int_equal(atm_st_write(st_path("d-idx.safetensors"), d, 2, NULL), ATM_OK);
	d[0].name = "image";
	d[1] = (atm_st_tensor){.name = "labels", .dtype = ATM_ST_F32, .ndim = 2, .dims = {2, 10},
	                       .n_elems = 20, .data = onehot, .bytes = sizeof onehot};
	assert_int_equal(atm_st_write(st_path("d-onehot.safetensors"), d, 2, NULL), ATM_OK);
	snprintf(args, sizeof args, "%s --iters 2 --data %s", m, st_path("d-idx.safetensors"));
	char *a = checksum_of(args);
	snprintf(args, sizeof args, "%s --iters 2 --data %s --placement random",
	         m, st_path("d-onehot.safetensors"));
	char *b = checksum_of(args);
	assert_string_equal(a, b);
	assert_string_not_equal(a, two);
	free(two), free(a), free(b);
	/* bad files: refused before anything runs, naming the tensor */
	const atm_st_tensor *fc1 = atm_st_find(w, "fc1.w");
	char *bytes = NULL;
	size_t len = 0;
	assert_int_equal(atm_read_file(st_path("w1.safetensors"), &bytes, &len), ATM_OK);
	FILE *f = fopen(st_path("cut.safetensors"), "wb");
	fwrite(bytes, 1, len - 10, f);
	fclose(f);
	bytes[5] = 1; /* a header length of 2^40 and more */
	f = fopen(st_path("long.safetensors"), "wb");
	fwrite(bytes, 1, len, f);
	fclose(f);
	free(bytes);
	(void)fc1;
	snprintf(args, sizeof args, "--weights-in %s", st_path("cut.safetensors"));
	expect_refused(args, 3, "is the file cut short?");
	snprintf(args, sizeof args, "--weights-in %s", st_path("long.safetensors"));
	expect_refused(args, 3, "exceeds the 100 MiB (104857600 bytes) a header may take");
	/* a shape no file holds, printed as written */
	st_raw("huge.safetensors", "{\"fc1.w\": {\"dtype\": \"F32\", \"shape\": [2147483648, "
	       "2147483648, 2147483648, 8], \"data_offsets\": [0, 4]}}", 4);
	snprintf(args, sizeof args, "--weights-in %s", st_path("huge.safetensors"));
	expect_refused(args, 3, "shape [2147483648, 2147483648, 2147483648, 8] has more elements");
	st_raw("overlap.safetensors", "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
	       "\"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}", 12);
	snprintf(args, sizeof args, "--weights-in %s", st_path("overlap.safetensors"));
	expect_refused(args, 3, "overlaps tensor 'a'");
	/* the weights with fc1.w of another shape, of another dtype, left out, and one more */
	atm_st_tensor ts[7];
	for (int i = 0; i < 6; i++)
		ts[i] = *atm_st_at(w, i);
	int k1 = 0;
	while (strcmp(ts[k1].name, "fc1.w"))
		k1++;
	ts[k1].dims[0] = 64, ts[k1].dims[1] = 32;
	assert_int_equal(atm_st_write(st_path("shape.safetensors"), ts, 6, NULL), ATM_OK);
	snprintf(args, sizeof args, "--weights-in %s", st_path("shape.safetensors"));
	expect_refused(args, 3, "tensor 'fc1.w' is F32 [64, 32]; the graph's 'fc1.w' is F32 [32, 64]");
	ts[k1].dims[0] = 32, ts[k1].dims[1] = 64;
	ts[k1].dtype = ATM_ST_I32;
	assert_int_equal(atm_st_write(st_path("dtype.safetensors"), ts, 6, NULL), ATM_OK);
	snprintf(args, sizeof args, "--weights-in %s", st_path("dtype.safetensors"));
	expect_refused(args, 3, "tensor 'fc1.w' is I32 [32, 64]");
	ts[k1] = ts[5];
	assert_int_equal(atm_st_write(st_path("missing.safetensors"), ts, 5, NULL), ATM_OK);
	snprintf(args, sizeof args, "--weights-in %s", st_path("missing.safetensors"));
	expect_refused(args, 3, "the graph's parameter 'fc1.w' is missing");
	for (int i = 0; i < 6; i++)
		ts[i] = *atm_st_at(w, i);
	ts[6] = (atm_st_tensor){.name = "fc9.w", .dtype = ATM_ST_F32, .ndim = 1, .dims = {1},
	                        .n_elems = 1, .data = image, .bytes = 4};
	assert_int_equal(atm_st_write(st_path("extra.safetensors"), ts, 7, NULL), ATM_OK);
	snprintf(args, sizeof args, "--weights-in %s", st_path("extra.safetensors"));
	expect_refused(args, 3, "tensor 'fc9.w' is not a parameter of graph 'tiny_mlp'");
	/* data: labels outside the classes, the weights given as data */
	idx[0] = 10;
	d[0].name = "input";
	d[1] = (atm_st_tensor){.name = "labels", .dtype = ATM_ST_I64, .ndim = 1, .dims = {2},
	                       .n_elems = 2, .data = idx, .bytes = sizeof idx};
	assert_int_equal(atm_st_write(st_path("d-bad.safetensors"), d, 2, NULL), ATM_OK);
	snprintf(args, sizeof args, "--data %s", st_path("d-bad.safetensors"));
	expect_refused(args, 3, "class index 10 at element 0 is outside 0 to 9");
	snprintf(args, sizeof args, "--data %s", st_path("w1.safetensors"));
	expect_refused(args, 3, "--data: ");
	/* a missing file; an output that is an input */
	snprintf(args, sizeof args, "--weights-in %s", st_path("nosuch.safetensors"));
	expect_refused(args, 8, "nosuch.safetensors");
	snprintf(args, sizeof args, "--weights-in %s --weights-out %s", st_path("w1.safetensors"),
	         st_path("w1.safetensors"));
	expect_refused(args, 2, "is the file --weights-in");
	snprintf(args, sizeof args, "--data %s --weights-out %s", st_path("d-idx.safetensors"),
	         st_path("d-idx.safetensors"));
	expect_refused(args, 2, "is the file --data");
	atm_st_destroy(w);
	(void)err;
}

/* test_run_cmd_machine_file_kinds -- a machine file that is a pipe or a device is refused at
 * once, naming it (a pipe used to be written through, waiting for a reader for ever), and an
 * input far larger than its format ever is is refused before it is read */
static void test_run_cmd_machine_file_kinds(void **state)
{
	(void)state;
	char fifo[512], dev[512], big[512];
	const char *keep = getenv("AUTOTM_MACHINE_FILE");
	char saved[512];
	snprintf(saved, sizeof saved, "%s", keep ? keep : "");
	snprintf(fifo, sizeof fifo, "%s/machine-fifo", cli_tmpdir);
	snprintf(dev, sizeof dev, "%s/machine-zero", cli_tmpdir);
	snprintf(big, sizeof big, "%s/big.json", cli_tmpdir);
	unlink(fifo);
	unlink(dev);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(symlink("/dev/zero", dev), 0);
	const char *const cmds[] = {"tiers --emulate optane",
	                            "run --model tiny_mlp --emulate optane --iters 1"};
	for (int i = 0; i < 2; i++) {
		setenv("AUTOTM_MACHINE_FILE", fifo, 1);
		cli_expect(3, "is a pipe: it must be a regular file or none yet", "%s", cmds[i]);
		setenv("AUTOTM_MACHINE_FILE", dev, 1);
		cli_expect(3, "is a device: it must be a regular file or none yet", "%s", cmds[i]);
	}
	setenv("AUTOTM_MACHINE_FILE", fifo, 1);
	cli_expect(3, "set AUTOTM_MACHINE_FILE to another path, or to 'none'",
	           "profile --model tiny_mlp --estimate --cache %s/fifo-prof.json", cli_tmpdir);
	if (saved[0])
		setenv("AUTOTM_MACHINE_FILE", saved, 1);
	else
		unsetenv("AUTOTM_MACHINE_FILE");
	/* a sparse gigabyte as a graph: refused by its size, nothing read */
	FILE *f = fopen(big, "w");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), (off_t)1 << 30), 0);
	fclose(f);
	cli_expect(3, "big.json is 1.00 GiB; a graph file is at most 256.00 MiB", "run --graph %s",
	           big);
	unlink(big);
	unlink(fifo);
	unlink(dev);
}

int main(void)
{
	static const struct CMUnitTest main_cases[] = {
		cmocka_unit_test(test_run_cmd_placements_give_same_weights),
		cmocka_unit_test(test_run_cmd_append_adds_runs),
		cmocka_unit_test(test_run_cmd_placement_seed),
		cmocka_unit_test(test_run_cmd_faults),
		cmocka_unit_test(test_run_cmd_signal_ends_emulated_wait),
		cmocka_unit_test(test_run_cmd_drift),
		cmocka_unit_test(test_run_cmd_weights_and_data),
		cmocka_unit_test(test_run_cmd_tiers),
		cmocka_unit_test(test_run_cmd_machine_file_kinds),
	};
	static const struct CMUnitTest half_cases[] = {
		cmocka_unit_test(test_run_cmd_results_have_autotm_fields),
		cmocka_unit_test(test_run_cmd_ratio_does_the_whole_job),
		cmocka_unit_test(test_run_cmd_results_workload_and_ratio),
		cmocka_unit_test(test_run_cmd_device_outputs),
		cmocka_unit_test(test_run_cmd_refuses_results_before_training),
		cmocka_unit_test(test_run_cmd_interrupt_writes_nothing),
		cmocka_unit_test(test_run_cmd_fifo_inputs),
		cmocka_unit_test(test_run_cmd_interrupt_while_waiting_for_lock),
		cmocka_unit_test(test_run_cmd_interrupt_while_waiting_for_reader),
		cmocka_unit_test(test_run_cmd_comparison),
		cmocka_unit_test(test_run_cmd_comparison_bad_input),
		cmocka_unit_test(test_run_cmd_comparison_infeasible),
		cmocka_unit_test(test_run_cmd_comparison_interrupt),
		cmocka_unit_test(test_run_cmd_optimizers),
		cmocka_unit_test(test_run_cmd_optimizer_states_refused),
		cmocka_unit_test(test_run_cmd_token_data),
		cmocka_unit_test(test_run_cmd_half_weights),
		cmocka_unit_test(test_run_cmd_weights_dtype),
		cmocka_unit_test(test_run_cmd_slow_tier_file),
	};
	const struct test_part parts[] = {TEST_PART("main", main_cases),
	                                  TEST_PART("half", half_cases)};
	return test_parts_run(parts, 2, cli_setup, cli_teardown);
}
