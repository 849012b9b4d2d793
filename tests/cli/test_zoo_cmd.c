/* test_zoo_cmd.c -- the autotm zoo command end to end: listing, summaries, export, bad usage */
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
#include <jansson.h>

#include "atm_core.h"

static char tmpdir[] = "/tmp/atm_cli_XXXXXX";
static char autotm[1024];

struct result {
	int code;
	char *out;
	char *err;
};

/* run -- autotm ARGS with stdout and stderr captured */
static struct result run(const char *args)
{
	char cmd[4096];
	struct result r = {0};
	size_t len;
	snprintf(cmd, sizeof cmd, "%s %s >%s/out 2>%s/err", autotm, args, tmpdir, tmpdir);
	int status = system(cmd);
	r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	snprintf(cmd, sizeof cmd, "%s/out", tmpdir);
	assert_int_equal(atm_read_file(cmd, &r.out, &len), ATM_OK);
	snprintf(cmd, sizeof cmd, "%s/err", tmpdir);
	assert_int_equal(atm_read_file(cmd, &r.err, &len), ATM_OK);
	return r;
}

static void release(struct result *r)
{
	free(r->out);
	free(r->err);
}

static int setup(void **state)
{
	(void)state;
	const char *bin = getenv("ATM_BINARY_DIR");
	if (!bin)
		return -1;
	snprintf(autotm, sizeof autotm, "%s/cli/autotm", bin);
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_zoo_cmd_lists_networks_and_presets(void **state)
{
	(void)state;
	struct result r = run("zoo");
	assert_int_equal(r.code, 0);
	const char *names[] = {"vgg19", "vgg416", "resnet200", "inception_v4", "densenet264",
	                       "test_vgg", "tiny_cnn", "paper", "large", "gpu", "small"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strstr(r.out, names[i]))
			fail_msg("'autotm zoo' does not list %s", names[i]);
	release(&r);
}

/* summary -- the --json summary of a network, parsed */
static json_t *summary(const char *args)
{
	char full[1024];
	snprintf(full, sizeof full, "zoo %s --json", args);
	struct result r = run(full);
	if (r.code != 0)
		fail_msg("autotm %s exited %d: %s", full, r.code, r.err);
	json_error_t e;
	json_t *j = json_loads(r.out, 0, &e);
	if (!j)
		fail_msg("autotm %s printed invalid JSON: %s", full, e.text);
	release(&r);
	return j;
}

static int64_t field(json_t *j, const char *key)
{
	json_t *v = json_object_get(j, key);
	if (!json_is_integer(v))
		fail_msg("summary lacks integer field %s", key);
	return json_integer_value(v);
}

static void test_zoo_cmd_json_summary(void **state)
{
	(void)state;
	json_t *j = summary("--model vgg19 --batch 2");
	assert_string_equal(json_string_value(json_object_get(j, "name")), "vgg19");
	assert_int_equal(field(j, "batch"), 2);
	assert_int_equal(field(j, "n_params"), 143667240);
	assert_int_equal(field(j, "param_bytes"), 4 * 143667240LL);
	assert_true(field(j, "n_kernels") > 100);
	assert_true(field(j, "n_tensors") > field(j, "n_kernels"));
	assert_true(field(j, "peak_bytes") > field(j, "io_bytes"));
	assert_true(field(j, "io_bytes") >= field(j, "param_bytes"));
	json_decref(j);
}

static void test_zoo_cmd_text_summary(void **state)
{
	(void)state;
	struct result r = run("zoo --model tiny_cnn");
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out, "tiny_cnn: batch"));
	assert_non_null(strstr(r.out, "peak footprint"));
	assert_non_null(strstr(r.out, "conv_fwd"));
	release(&r);
}

static void test_zoo_cmd_export_then_load(void **state)
{
	(void)state;
	char args[512];
	snprintf(args, sizeof args, "zoo --model tiny_cnn --batch 3 --export %s/tiny.json", tmpdir);
	struct result r = run(args);
	assert_int_equal(r.code, 0);
	release(&r);
	json_t *a = summary("--model tiny_cnn --batch 3");
	snprintf(args, sizeof args, "--graph %s/tiny.json", tmpdir);
	json_t *b = summary(args);
	const char *keys[] = {"batch", "n_params", "n_kernels", "n_tensors", "peak_bytes", "io_bytes"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		assert_int_equal(field(a, keys[i]), field(b, keys[i]));
	json_decref(b);
	/* the file's batch can be overridden */
	snprintf(args, sizeof args, "--graph %s/tiny.json --batch 5", tmpdir);
	b = summary(args);
	assert_int_equal(field(b, "batch"), 5);
	assert_true(field(b, "peak_bytes") > field(a, "peak_bytes"));
	json_decref(b);
	json_decref(a);
}

static void expect_failure(const char *args, int code, const char *fragment)
{
	struct result r = run(args);
	if (r.code != code || !strstr(r.err, fragment))
		fail_msg("autotm %s: exit %d (want %d), stderr '%s' (want '%s')", args, r.code, code,
		         r.err, fragment);
	release(&r);
}

static void test_zoo_cmd_bad_usage(void **state)
{
	(void)state;
	expect_failure("zoo --model vgg20", 2, "vgg19");
	expect_failure("zoo --model vgg19 --batch 0", 2, "--batch '0' is not valid");
	expect_failure("zoo --model vgg19 --batch many", 2, "expected an integer");
	expect_failure("zoo --model vgg19 --preset huge", 2, "small");
	expect_failure("zoo --model vgg19 --graph x.json", 2, "not both");
	expect_failure("zoo --frobnicate", 2, "unknown option '--frobnicate'");
	expect_failure("zoo --model", 2, "needs a value");
	expect_failure("zoo --json", 2, "--model");
	expect_failure("frobnicate", 2, "unknown command 'frobnicate'");
	expect_failure("", 2, "usage: autotm");
}

static void test_zoo_cmd_bad_graph_files(void **state)
{
	(void)state;
	char path[512], args[600];
	snprintf(args, sizeof args, "zoo --graph %s/missing.json", tmpdir);
	expect_failure(args, 6, "missing.json");
	snprintf(path, sizeof path, "%s/broken.json", tmpdir);
	assert_int_equal(atm_write_file_atomic(path, "{\"format\": ", 11), ATM_OK);
	snprintf(args, sizeof args, "zoo --graph %s", path);
	expect_failure(args, 3, "broken.json");
}

static void test_zoo_cmd_help(void **state)
{
	(void)state;
	struct result r = run("zoo --help");
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out, "--export FILE"));
	release(&r);
	r = run("--help");
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out, "zoo"));
	release(&r);
	r = run("help zoo");
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out, "usage: autotm zoo"));
	release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zoo_cmd_lists_networks_and_presets),
		cmocka_unit_test(test_zoo_cmd_json_summary),
		cmocka_unit_test(test_zoo_cmd_text_summary),
		cmocka_unit_test(test_zoo_cmd_export_then_load),
		cmocka_unit_test(test_zoo_cmd_bad_usage),
		cmocka_unit_test(test_zoo_cmd_bad_graph_files),
		cmocka_unit_test(test_zoo_cmd_help),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
