/* test_options.c -- the benchmark programs' command lines: --help runs nothing, unknown options and bad values are refused with a message */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "atm_core.h"
#include "atm_formats.h"

static char tmpdir[] = "/tmp/atm_bench_XXXXXX";

static int setup(void **state)
{
	(void)state;
	return getenv("ATM_BINARY_DIR") && mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* expect -- bench/PROG ARGS exits with code, stdout holds out and stderr err ("" matches all) */
static void expect(const char *prog, const char *args, int code, const char *out, const char *err)
{
	char cmd[2048], path[256], *o = NULL, *e = NULL;
	size_t len;
	snprintf(cmd, sizeof cmd, "%s/bench/%s %s >%s/out 2>%s/err", getenv("ATM_BINARY_DIR"), prog,
	         args, tmpdir, tmpdir);
	int status = system(cmd);
	int got = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	snprintf(path, sizeof path, "%s/out", tmpdir);
	assert_int_equal(atm_read_file(path, &o, &len), ATM_OK);
	snprintf(path, sizeof path, "%s/err", tmpdir);
	assert_int_equal(atm_read_file(path, &e, &len), ATM_OK);
	if (got != code || !strstr(o, out) || !strstr(e, err))
		fail_msg("%s %s: exit %d (want %d), stdout '%s' (want '%s'), stderr '%s' (want '%s')",
		         prog, args, got, code, o, out, e, err);
	free(o);
	free(e);
}

/* test_options_help -- --help prints the usage and runs nothing (no table, no timing) */
static void test_options_help(void **state)
{
	(void)state;
	static const char *const progs[] = {"bench_exec", "bench_optimizer", "bench_gpu",
	                                    "bench_predict"};
	for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
		char want[64];
		snprintf(want, sizeof want, "usage: %s", progs[i]);
		expect(progs[i], "--help", 0, want, "");
		expect(progs[i], "-h", 0, want, "");
	}
	/* nothing measured: no figure such as bench_exec's "1e30 s" of zero steps */
	expect("bench_exec", "--help", 0, "--rounds N", "");
	expect("bench_optimizer", "--help", 0, "--solver LIST", "");
}

/* test_options_refused -- an unknown option, a missing value, a stray argument and a bad
 * value are usage errors (exit 2) naming what is wrong, before anything runs */
static void test_options_refused(void **state)
{
	(void)state;
	static const struct {
		const char *prog, *args, *err;
	} bad[] = {
		{"bench_exec", "--frobnicate", "unknown option '--frobnicate'"},
		{"bench_exec", "--rounds", "option '--rounds' needs a value"},
		{"bench_exec", "--rounds 0", "--rounds '0' is not valid"},
		{"bench_exec", "--rounds 3x", "--rounds '3x' is not valid"},
		{"bench_exec", "5", "unexpected argument '5'"},
		{"bench_exec", "--models vgg19,nonet", "--models: "},
		{"bench_optimizer", "--frobnicate", "unknown option"},
		{"bench_optimizer", "--time-limit abc", "--time-limit 'abc' is not valid"},
		{"bench_optimizer", "--time-limit 0", "--time-limit '0' is not valid"},
		{"bench_optimizer", "--mip-gap 2", "--mip-gap '2' is not valid"},
		{"bench_optimizer", "--ratios 4-1", "--ratios: ratio '4-1' is not valid"},
		{"bench_optimizer", "--formulations best", "--formulations: unknown formulation 'best'"},
		{"bench_optimizer", "--solver glpk,nosuch", "--solver: unknown solver 'nosuch'"},
		{"bench_optimizer", "--solver ''", "--solver needs at least one of"},
		{"bench_optimizer", "--presets huge", "--presets: "},
		{"bench_optimizer", "--models nonet", "--models: "},
		{"bench_predict", "--frobnicate", "unknown option"},
		{"bench_predict", "--iters 0", "--iters '0' is not valid"},
		{"bench_predict", "--turns 0", "--turns '0' is not valid"},
		{"bench_predict", "--ratios 4:1,x", "--ratios: ratio 'x' is not valid"},
		{"bench_predict", "--formulations best", "--formulations: unknown formulation 'best'"},
		{"bench_predict", "--models nonet", "--models: "},
		{"bench_predict", "--preset huge", "--preset: "},
		{"bench_predict", "extra", "unexpected argument 'extra'"},
		{"bench_gpu", "--frobnicate", "unknown option"},
		{"bench_gpu", "--gpu tpu", "--gpu 'tpu' is not valid"},
		{"bench_gpu", "--fraction 2", "--fraction '2' is not valid"},
		{"bench_gpu", "--iters -1", "--iters '-1' is not valid"},
		{"bench_gpu", "--batch x", "--batch 'x' is not valid"},
		{"bench_gpu", "--gpu-memory lots", "--gpu-memory: "},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char want[128];
		expect(bad[i].prog, bad[i].args, 2, "", bad[i].err);
		snprintf(want, sizeof want, "Try '%s --help'", bad[i].prog);
		expect(bad[i].prog, bad[i].args, 2, "", want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options_help),
		cmocka_unit_test(test_options_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
