/* test_profile_cmd.c -- autotm profile end to end: JSON report, incremental runs, estimates, corrupt caches, bad usage */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "atm_core.h"
#include "common/cli_harness.h"

/* report -- autotm profile ARGS --json into cache NAME of the scratch folder, parsed */
static json_t *report(const char *args, const char *name)
{
	struct cli_result r = cli_run("profile %s --cache %s/%s --quiet --json", args, cli_tmpdir, name);
	if (r.code != 0)
		fail_msg("autotm profile %s exited %d: %s", args, r.code, r.err);
	json_error_t e;
	json_t *j = json_loads(r.out, 0, &e);
	if (!j)
		fail_msg("not JSON (%s): %s", e.text, r.out);
	cli_release(&r);
	return j;
}

/* num -- an integer field of o, failing the test when there is none */
static json_int_t num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v))
		fail_msg("no integer field %s", key);
	return json_integer_value(v);
}

static void test_profile_cmd_json_and_incremental(void **state)
{
	(void)state;
	json_t *a = report("--model tiny_mlp --reps 1 --emulate optane", "c.json");
	const char *fields[] = {"n_kernels", "n_unique_kernels", "n_configs", "n_configs_measured",
	                        "n_configs_cached", "seconds", "estimated", "cache", "machine"};
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		if (!json_object_get(a, fields[i]))
			fail_msg("the report lacks %s", fields[i]);
	assert_int_equal(num(a, "n_kernels"), 20);
	assert_int_equal(num(a, "n_unique_kernels"), 17);
	assert_int_equal(num(a, "n_configs"), 168);
	assert_int_equal(num(a, "n_configs_measured"), 168);
	assert_int_equal(num(a, "n_configs_cached"), 0);
	assert_true(json_real_value(json_object_get(a, "seconds")) > 0);
	assert_true(json_is_false(json_object_get(a, "estimated")));
	json_t *m = json_object_get(a, "machine");
	/* proportional: the preset, its scale to this machine and a hash of the scaled rates */
	assert_int_equal(strncmp(json_string_value(json_object_get(m, "emulation")), "optane x", 8), 0);
	/* a second run measures nothing */
	json_t *b = report("--model tiny_mlp --reps 1 --emulate optane", "c.json");
	assert_int_equal(num(b, "n_configs_measured"), 0);
	assert_int_equal(num(b, "n_configs_cached"), 168);
	/* another emulation is another machine: everything again */
	json_t *c = report("--model tiny_mlp --reps 1 --emulate cxl", "c.json");
	assert_int_equal(num(c, "n_configs_measured"), 168);
	json_decref(a);
	json_decref(b);
	json_decref(c);
}

static void test_profile_cmd_human_output(void **state)
{
	(void)state;
	struct cli_result r = cli_run("profile --model tiny_mlp --reps 1 --cache %s/h.json --quiet",
	                              cli_tmpdir);
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out, "tiny_mlp, batch 8: measured profile"));
	assert_non_null(strstr(r.out, "20 (17 unique)"));
	assert_non_null(strstr(r.out, "168: 168 measured now, 0 from the cache"));
	assert_non_null(strstr(r.out, "h.json (168 entries of this machine)"));
	assert_string_equal(r.err, ""); /* quiet, and not a terminal anyway */
	cli_release(&r);
}

static void test_profile_cmd_estimate_compared(void **state)
{
	(void)state;
	json_decref(report("--model tiny_mlp --reps 1 --emulate optane", "e.json"));
	json_t *e = report("--model tiny_mlp --emulate optane --estimate", "e.json");
	assert_true(json_is_true(json_object_get(e, "estimated")));
	assert_true(json_is_true(json_object_get(json_object_get(e, "machine"), "estimated")));
	assert_int_equal(num(e, "n_configs_measured"), 168);
	json_t *err = json_object_get(e, "estimate_error");
	assert_non_null(err);
	assert_int_equal(num(err, "n_configs"), 168);
	assert_true(json_real_value(json_object_get(err, "median_ape_percent")) >= 0);
	json_t *rf = json_object_get(e, "roofline");
	assert_true(json_is_true(json_object_get(rf, "calibrated")));
	json_decref(e);
	/* the measured profile is untouched by the estimate */
	json_t *again = report("--model tiny_mlp --reps 1 --emulate optane", "e.json");
	assert_int_equal(num(again, "n_configs_measured"), 0);
	json_decref(again);
}

static void test_profile_cmd_corrupt_cache(void **state)
{
	(void)state;
	char path[512], *back = NULL;
	size_t len;
	snprintf(path, sizeof path, "%s/bad.json", cli_tmpdir);
	const char *junk = "{\"format\": \"autotm-profile\", \"version\": 1, \"machines\": [{\"machine\"";
	assert_int_equal(atm_write_file_atomic(path, junk, strlen(junk)), ATM_OK);
	cli_expect(3, "bad.json:1:", "profile --model tiny_mlp --reps 1 --cache %s", path);
	assert_int_equal(atm_read_file(path, &back, &len), ATM_OK);
	assert_string_equal(back, junk);
	free(back);
	/* a device is no cache to start over: no suggestion of --rebuild, with it or without */
	struct cli_result d = cli_run("profile --model tiny_mlp --cache /dev/zero --rebuild");
	if (d.code != 3 || !strstr(d.err, "character device") || strstr(d.err, "--rebuild"))
		fail_msg("--cache /dev/zero --rebuild: exit %d, stderr '%s'", d.code, d.err);
	cli_release(&d);
	/* --rebuild starts over on purpose */
	struct cli_result r = cli_run("profile --model tiny_mlp --reps 1 --cache %s --rebuild --quiet",
	                              path);
	assert_int_equal(r.code, 0);
	cli_release(&r);
	json_t *j = report("--model tiny_mlp --reps 1", "bad.json");
	assert_int_equal(num(j, "n_configs_measured"), 0);
	json_decref(j);
}

static void test_profile_cmd_bad_usage(void **state)
{
	(void)state;
	cli_expect(2, "--reps '0' is not valid", "profile --model tiny_mlp --reps 0");
	cli_expect(2, "unknown option '--frobnicate'", "profile --model tiny_mlp --frobnicate");
	cli_expect(2, "which network?", "profile");
	cli_expect(2, "unexpected argument 'extra'", "profile --model tiny_mlp extra");
	cli_expect(2, "needs a value", "profile --model tiny_mlp --cache");
	cli_expect(2, "optane", "profile --model tiny_mlp --emulate floppy");
	cli_expect(6, "/nonexistent/dir/p.json",
	           "profile --model tiny_mlp --cache /nonexistent/dir/p.json");
	struct cli_result r = cli_run("profile --help");
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out, "--estimate"));
	cli_release(&r);
}

/* test_profile_cmd_cache_link_and_mode -- a cache reached through a symbolic link stays a
 * link when a profile adds to it (its target takes the entries), and a read-only cache keeps
 * its permissions */
static void test_profile_cmd_cache_link_and_mode(void **state)
{
	char target[512], link[512];
	struct stat st;
	(void)state;
	snprintf(target, sizeof target, "%s/target.json", cli_tmpdir);
	snprintf(link, sizeof link, "%s/link.json", cli_tmpdir);
	json_decref(report("--model tiny_mlp --batch 2 --reps 1", "target.json"));
	assert_int_equal(symlink("target.json", link), 0);
	assert_int_equal(chmod(target, 0444), 0);
	json_t *j = report("--model tiny_mlp --batch 3 --reps 1", "link.json");
	assert_true(num(j, "n_configs_measured") > 0);
	json_decref(j);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(stat(target, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0444);
	/* the target holds both batches now */
	j = report("--model tiny_mlp --batch 3 --reps 1", "target.json");
	assert_int_equal(num(j, "n_configs_measured"), 0);
	json_decref(j);
	j = report("--model tiny_mlp --batch 2 --reps 1", "target.json");
	assert_int_equal(num(j, "n_configs_measured"), 0);
	json_decref(j);
}

/* as_other_user -- autotm ARGS as a user the scratch folder's modes apply to (root runs it as
 * nobody through setpriv); its exit code, stderr into err; -1 when that cannot be done */
static int as_other_user(const char *args, char **err)
{
	char cmd[4096], path[512];
	size_t len;
	const char *as = "";
	*err = NULL;
	if (geteuid() == 0) {
		if (system("command -v setpriv >/dev/null 2>&1") != 0)
			return -1;
		as = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
	}
	snprintf(path, sizeof path, "%s/other.err", cli_tmpdir);
	snprintf(cmd, sizeof cmd, "%s%s %s >/dev/null 2>%s", as, cli_autotm, args, path);
	int status = system(cmd);
	assert_int_equal(atm_read_file(path, err, &len), ATM_OK);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* test_profile_cmd_read_only_cache -- a complete cache in a folder its user may not write is
 * used as it is by profile and plan (nothing to measure, nothing written); one that lacks
 * kernels is refused before anything is measured */
static void test_profile_cmd_read_only_cache(void **state)
{
	char ro[512], pmem[512], opts[1600], args[2048], *err = NULL;
	(void)state;
	snprintf(ro, sizeof ro, "%s/ro", cli_tmpdir);
	snprintf(pmem, sizeof pmem, "%s/pmem", cli_tmpdir);
	assert_int_equal(mkdir(ro, 0755), 0);
	assert_int_equal(mkdir(pmem, 0777), 0);
	assert_int_equal(chmod(pmem, 0777), 0);
	snprintf(opts, sizeof opts, "--model tiny_mlp --batch 2 --cache %s/c.json --pmem-dir %s", ro,
	         pmem);
	struct cli_result r = cli_run("profile %s --reps 1 --quiet", opts);
	assert_int_equal(r.code, 0);
	cli_release(&r);
	assert_int_equal(chmod(ro, 0555), 0);
	assert_int_equal(chmod(cli_tmpdir, 0755), 0);
	snprintf(args, sizeof args, "profile %s --reps 1 --quiet", opts);
	int code = as_other_user(args, &err);
	if (code == -1) {
		assert_int_equal(chmod(cli_tmpdir, 0700), 0);
		skip(); /* root without setpriv: no user the folder's mode stops */
	}
	assert_int_equal(code, 0);
	free(err);
	snprintf(args, sizeof args, "plan %s --ratio 4:1 --quiet", opts);
	code = as_other_user(args, &err);
	if (code != 0)
		fail_msg("plan on a read-only cache: exit %d, %s", code, err);
	free(err);
	/* another batch has kernels to measure, and nowhere to keep them */
	snprintf(args, sizeof args, "profile --model tiny_mlp --batch 5 --cache %s/c.json "
	         "--pmem-dir %s --reps 1 --quiet", ro, pmem);
	code = as_other_user(args, &err);
	assert_int_equal(code, 6);
	assert_non_null(strstr(err, "c.json"));
	free(err);
	assert_int_equal(chmod(cli_tmpdir, 0700), 0);
	assert_int_equal(chmod(ro, 0755), 0);
}

static void test_profile_cmd_default_cache_location(void **state)
{
	(void)state;
	char cmd[2048], path[512];
	snprintf(cmd, sizeof cmd,
	         "XDG_CACHE_HOME=%s/xdg %s profile --model tiny_mlp --reps 1 --quiet >/dev/null 2>&1",
	         cli_tmpdir, cli_autotm);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof path, "%s/xdg/autotm/profiles.json", cli_tmpdir);
	assert_int_equal(access(path, F_OK), 0);
}

/* on_terminal -- autotm ARGS under script(1), which gives it a terminal; its output */
static char *on_terminal(const char *args)
{
	char cmd[4096], path[512], *out = NULL;
	size_t len;
	snprintf(path, sizeof path, "%s/tty.out", cli_tmpdir);
	snprintf(cmd, sizeof cmd, "script -qfec '%s %s' /dev/null >%s 2>&1", cli_autotm, args, path);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(atm_read_file(path, &out, &len), ATM_OK);
	return out;
}

static void test_profile_cmd_progress_on_terminal(void **state)
{
	(void)state;
	char args[1024];
	if (system("command -v script >/dev/null 2>&1") != 0)
		skip(); /* util-linux's script gives the command a terminal */
	snprintf(args, sizeof args, "profile --model tiny_mlp --reps 1 --cache %s/tty.json", cli_tmpdir);
	char *out = on_terminal(args);
	assert_non_null(strstr(out, "\r  profiling kernels "));
	assert_non_null(strstr(out, "kernels 17/17, configurations 168/168 (0 cached)"));
	assert_non_null(strstr(out, "elapsed"));
	free(out);
	/* --quiet silences it even there */
	snprintf(args, sizeof args, "profile --model tiny_mlp --reps 1 --cache %s/tty.json --quiet",
	         cli_tmpdir);
	out = on_terminal(args);
	assert_null(strstr(out, "profiling kernels"));
	assert_non_null(strstr(out, "168: 0 measured now, 168 from the cache"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_cmd_json_and_incremental),
		cmocka_unit_test(test_profile_cmd_human_output),
		cmocka_unit_test(test_profile_cmd_estimate_compared),
		cmocka_unit_test(test_profile_cmd_corrupt_cache),
		cmocka_unit_test(test_profile_cmd_bad_usage),
		cmocka_unit_test(test_profile_cmd_cache_link_and_mode),
		cmocka_unit_test(test_profile_cmd_read_only_cache),
		cmocka_unit_test(test_profile_cmd_default_cache_location),
		cmocka_unit_test(test_profile_cmd_progress_on_terminal),
	};
	return cmocka_run_group_tests(tests, cli_setup, cli_teardown);
}
