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
#include "common/cli_harness.h"

static void test_zoo_cmd_lists_networks_and_presets(void **state)
{
	(void)state;
	struct cli_result r = cli_run("zoo");
	assert_int_equal(r.code, 0);
	const char *names[] = {"vgg19", "vgg416", "resnet200", "inception_v4", "densenet264",
	                       "test_vgg", "tiny_cnn", "paper", "large", "gpu", "small",
	                       "gpt2-xl", "seq 1024", "bert-base", "vit_b_16", "tiny_gpt"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strstr(r.out, names[i]))
			fail_msg("'autotm zoo' does not list %s", names[i]);
	cli_release(&r);
}

/* summary -- the --json summary of a network, parsed */
static json_t *summary(const char *args)
{
	struct cli_result r = cli_run("zoo %s --json", args);
	if (r.code != 0)
		fail_msg("autotm zoo %s --json exited %d: %s", args, r.code, r.err);
	json_error_t e;
	json_t *j = json_loads(r.out, 0, &e);
	if (!j)
		fail_msg("autotm zoo %s --json printed invalid JSON: %s", args, e.text);
	cli_release(&r);
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
	struct cli_result r = cli_run("zoo --model tiny_cnn");
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out, "tiny_cnn: batch"));
	assert_non_null(strstr(r.out, "peak footprint"));
	assert_non_null(strstr(r.out, "conv_fwd"));
	cli_release(&r);
}

static void test_zoo_cmd_export_then_load(void **state)
{
	(void)state;
	char args[512];
	struct cli_result r = cli_run("zoo --model tiny_cnn --batch 3 --export %s/tiny.json",
	                              cli_tmpdir);
	assert_int_equal(r.code, 0);
	cli_release(&r);
	json_t *a = summary("--model tiny_cnn --batch 3");
	snprintf(args, sizeof args, "--graph %s/tiny.json", cli_tmpdir);
	json_t *b = summary(args);
	const char *keys[] = {"batch", "n_params", "n_kernels", "n_tensors", "peak_bytes", "io_bytes"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		assert_int_equal(field(a, keys[i]), field(b, keys[i]));
	json_decref(b);
	/* the file's batch can be overridden */
	snprintf(args, sizeof args, "--graph %s/tiny.json --batch 5", cli_tmpdir);
	b = summary(args);
	assert_int_equal(field(b, "batch"), 5);
	assert_true(field(b, "peak_bytes") > field(a, "peak_bytes"));
	json_decref(b);
	json_decref(a);
}

static void test_zoo_cmd_bad_usage(void **state)
{
	(void)state;
	cli_expect(8, "vgg19", "zoo --model vgg20");
	cli_expect(2, "--batch '0' is not valid", "zoo --model vgg19 --batch 0");
	cli_expect(2, "expected an integer", "zoo --model vgg19 --batch many");
	cli_expect(2, "small", "zoo --model vgg19 --preset huge");
	/* settings whose step would overflow the sums of sizes: the settings and the tensor named */
	cli_expect(2, "vgg416 at batch 1000000, image 65536: tensor '",
	           "zoo --model vgg416 --batch 1000000 --image 65536");
	cli_expect(2, "not both", "zoo --model vgg19 --graph x.json");
	cli_expect(2, "unknown option '--frobnicate'", "zoo --frobnicate");
	cli_expect(2, "needs a value", "zoo --model");
	cli_expect(2, "--model", "zoo --json");
	cli_expect(2, "unknown command 'frobnicate'", "frobnicate");
	cli_expect(2, "usage: autotm", "%s", "");
	/* a language model's sequence: at most its position table, and only a language model's */
	cli_expect(2, "gpt2 at batch 1, image 0: layer 'transformer.wpe': the sequence is 2048 long but "
	           "the position table has 1024 rows", "zoo --model gpt2 --batch 1 --seq 2048");
	cli_expect(2, "vgg19: takes no sequence length", "zoo --model vgg19 --seq 8");
}

/* test_zoo_cmd_transformer_summary -- counts, the sequence, its option */
static void test_zoo_cmd_transformer_summary(void **state)
{
	(void)state;
	json_t *j = summary("--model gpt2-xl --batch 1 --seq 16");
	assert_int_equal(field(j, "n_params"), 1557611200);
	assert_int_equal(field(j, "seq"), 16);
	json_decref(j);
	j = summary("--model vit_b_16 --batch 1");
	assert_int_equal(field(j, "n_params"), 86567656);
	assert_int_equal(field(j, "image"), 224);
	assert_int_equal(field(j, "seq"), 0);
	json_decref(j);
}

static void test_zoo_cmd_bad_graph_files(void **state)
{
	(void)state;
	char path[512];
	cli_expect(8, "missing.json", "zoo --graph %s/missing.json", cli_tmpdir);
	snprintf(path, sizeof path, "%s/broken.json", cli_tmpdir);
	assert_int_equal(atm_write_file_atomic(path, "{\"format\": ", 11), ATM_OK);
	cli_expect(3, "broken.json", "zoo --graph %s", path);
	/* a transformer op's shapes: the node, the tensors and what would fit */
	snprintf(path, sizeof path, "%s/causal.json", cli_tmpdir);
	const char *causal = "{\"format\": \"autotm-graph\", \"version\": 1, \"tensors\": ["
	                     "{\"id\": 0, \"name\": \"s\", \"shape\": [2, 3, 4], \"kind\": \"input\"},"
	                     "{\"id\": 1, \"name\": \"p\", \"shape\": [2, 3, 4], \"kind\": \"activation\"}],"
	                     "\"nodes\": [{\"id\": 0, \"name\": \"sm\", \"op\": \"softmax_fwd\", "
	                     "\"inputs\": [0], \"outputs\": [1], \"attrs\": {\"causal\": true}}]}";
	assert_int_equal(atm_write_file_atomic(path, causal, strlen(causal)), ATM_OK);
	cli_expect(3, "node 0 ('sm', softmax_fwd): a causal mask needs square scores [..., T, T]; 's' "
	           "has shape [2, 3, 4]", "zoo --graph %s", path);
}

static void test_zoo_cmd_help(void **state)
{
	(void)state;
	struct cli_result r = cli_run("zoo --help");
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out, "--export FILE"));
	cli_release(&r);
	r = cli_run("--help");
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out, "zoo"));
	cli_release(&r);
	r = cli_run("help zoo");
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out, "usage: autotm zoo"));
	cli_release(&r);
}

/* test_zoo_cmd_full_output -- output that cannot be written (a full disk) is an error with a
 * message, exit 7, not a silent 0 */
static void test_zoo_cmd_full_output(void **state)
{
	(void)state;
	if (access("/dev/full", W_OK) != 0)
		skip();
	/* every command's output goes through main's check: these three need no profile */
	static const char *const cmds[] = {"zoo --model tiny_mlp --json", "tiers --json", "--help"};
	for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
		char cmd[2048];
		snprintf(cmd, sizeof cmd, "%s %s >/dev/full 2>%s/full.err", cli_autotm, cmds[i],
		         cli_tmpdir);
		int status = system(cmd);
		assert_true(WIFEXITED(status));
		if (WEXITSTATUS(status) != 7)
			fail_msg("autotm %s >/dev/full: exit %d, want 7", cmds[i], WEXITSTATUS(status));
		char path[600], *err = NULL;
		size_t len;
		snprintf(path, sizeof path, "%s/full.err", cli_tmpdir);
		assert_int_equal(atm_read_file(path, &err, &len), ATM_OK);
		assert_non_null(strstr(err, "cannot write the output: No space left on device"));
		free(err);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zoo_cmd_lists_networks_and_presets),
		cmocka_unit_test(test_zoo_cmd_json_summary),
		cmocka_unit_test(test_zoo_cmd_transformer_summary),
		cmocka_unit_test(test_zoo_cmd_text_summary),
		cmocka_unit_test(test_zoo_cmd_export_then_load),
		cmocka_unit_test(test_zoo_cmd_bad_usage),
		cmocka_unit_test(test_zoo_cmd_bad_graph_files),
		cmocka_unit_test(test_zoo_cmd_help),
		cmocka_unit_test(test_zoo_cmd_full_output),
	};
	return cmocka_run_group_tests(tests, cli_setup, cli_teardown);
}
