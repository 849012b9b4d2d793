/* cli_harness.h -- running the built autotm from a cmocka test: a scratch folder, captured output, exit codes
 *
 * Usage (in a test file that includes cmocka.h first):
 *
 *     struct cli_result r = cli_run("run --model tiny_mlp -o %s/r.json", cli_tmpdir);
 *     assert_int_equal(r.code, 0);
 *     cli_release(&r);
 *     cli_expect(2, "unknown option", "zoo --frobnicate");
 *
 *     pid_t pid = cli_spawn("%s", "plan --model resnet200 ...");  // stderr in cli_tmpdir/spawn.err
 *     cli_wait_for_text("spawn.err", "round 1", 120);          // until it is under way
 *     kill(pid, SIGINT);
 *     assert_int_equal(cli_wait_within(pid, 60), 130);          // -1: killed, it did not end
 *
 * cmocka_run_group_tests(tests, cli_setup, cli_teardown) makes the scratch folder
 * and finds the binary through ATM_BINARY_DIR, which atm_add_test sets.
 */
#ifndef ATM_TEST_CLI_HARNESS_H
#define ATM_TEST_CLI_HARNESS_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atm_core.h"
#include "atm_formats.h"

static char cli_tmpdir[] = "/tmp/atm_cli_XXXXXX";
static char cli_autotm[1024];

struct cli_result {
	int code;  /* exit code, -1 when killed */
	char *out; /* standard output */
	char *err; /* standard error */
};

/* cli_run -- autotm with the printf-style arguments, stdout and stderr captured */
__attribute__((format(printf, 1, 2), unused)) static struct cli_result cli_run(const char *fmt, ...)
{
	char args[3072], cmd[4800];
	struct cli_result r = {0};
	size_t len;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	if (snprintf(cmd, sizeof cmd, "%s %s >%s/out 2>%s/err", cli_autotm, args, cli_tmpdir,
	             cli_tmpdir) >= (int)sizeof cmd)
		fail_msg("autotm arguments too long: %s", args);
	int status = system(cmd);
	r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	snprintf(cmd, sizeof cmd, "%s/out", cli_tmpdir);
	assert_int_equal(atm_read_file(cmd, &r.out, &len), ATM_OK);
	snprintf(cmd, sizeof cmd, "%s/err", cli_tmpdir);
	assert_int_equal(atm_read_file(cmd, &r.err, &len), ATM_OK);
	return r;
}

__attribute__((unused)) static void cli_release(struct cli_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

/* cli_expect -- autotm with the arguments exits with code and stderr holds frag */
__attribute__((format(printf, 3, 4), unused)) static void cli_expect(int code, const char *frag,
                                                                     const char *fmt, ...)
{
	char args[3072];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	struct cli_result r = cli_run("%s", args);
	if (r.code != code || !strstr(r.err, frag))
		fail_msg("autotm %s: exit %d (want %d), stderr '%s' (want '%s')", args, r.code, code, r.err,
		         frag);
	cli_release(&r);
}

/* cli_spawn -- autotm with the arguments started in the background (no shell in between: the
 * process is autotm itself, so a signal reaches it), stdout and stderr into cli_tmpdir's
 * spawn.out and spawn.err; its process id */
__attribute__((format(printf, 1, 2), unused)) static pid_t cli_spawn(const char *fmt, ...)
{
	char args[3072], cmd[4800];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof cmd, "exec %s %s >%s/spawn.out 2>%s/spawn.err", cli_autotm, args,
	         cli_tmpdir, cli_tmpdir);
	/* no text of an earlier process may be taken for this one's */
	for (int i = 0; i < 2; i++) {
		char path[512];
		snprintf(path, sizeof path, "%s/spawn.%s", cli_tmpdir, i ? "err" : "out");
		unlink(path);
	}
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	assert_true(pid > 0);
	return pid;
}

/* cli_wait_for_text -- wait up to limit_s seconds for cli_tmpdir/NAME to hold text; whether
 * it came */
__attribute__((unused)) static bool cli_wait_for_text(const char *name, const char *text,
                                                      double limit_s)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", cli_tmpdir, name);
	for (double t0 = atm_now_s(); atm_now_s() - t0 < limit_s; usleep(20000)) {
		char *got = NULL;
		size_t len = 0;
		if (atm_read_file(path, &got, &len) < 0)
			continue;
		bool found = strstr(got, text) != NULL;
		free(got);
		if (found)
			return true;
	}
	return false;
}

/* cli_wait_within -- the exit code of pid once it ends, waiting up to limit_s seconds; a
 * process still running then is killed and -1 returned (also when a signal ended it) */
__attribute__((unused)) static int cli_wait_within(pid_t pid, double limit_s)
{
	int status = 0;
	for (double t0 = atm_now_s(); atm_now_s() - t0 < limit_s; usleep(20000)) {
		pid_t got = waitpid(pid, &status, WNOHANG);
		if (got == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

__attribute__((unused)) static int cli_setup(void **state)
{
	(void)state;
	const char *bin = getenv("ATM_BINARY_DIR");
	if (!bin)
		return -1;
	snprintf(cli_autotm, sizeof cli_autotm, "%s/cli/autotm", bin);
	return mkdtemp(cli_tmpdir) ? 0 : -1;
}

__attribute__((unused)) static int cli_teardown(void **state)
{
	(void)state;
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s", cli_tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

#endif /* ATM_TEST_CLI_HARNESS_H */
