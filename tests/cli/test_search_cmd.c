/* test_search_cmd.c -- autotm search end to end: the model mode, a short measured mode, determinism, bad usage, Ctrl-C */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "atm_core.h"
#include "atm_zoo.h"
#include "common/cli_harness.h"
#include "common/test_parts.h"

/* a plan of every method, as autotm run reads it */
static void plans_load(const char *dir)
{
	static const char *const names[] = {"ilp", "hill-ilp", "hill-slow", "hill-random", "genetic"};
	atm_graph *g = NULL;
	atm_zoo_opts o = {.batch = 8};
	assert_int_equal(atm_zoo_build(&g, "tiny_mlp", &o), ATM_OK);
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		char path[1200];
		atm_plan *p = NULL;
		snprintf(path, sizeof path, "%s/%s/%s.json", cli_tmpdir, dir, names[i]);
		if (atm_plan_load(&p, g, path) < 0)
			fail_msg("%s: %s", path, atm_errmsg());
		atm_plan_destroy(p);
	}
	atm_graph_destroy(g);
}

/* file_text -- the text of cli_tmpdir/name (the caller frees it) */
static char *file_text(const char *name)
{
	char path[1200], *text = NULL;
	size_t len;
	snprintf(path, sizeof path, "%s/%s", cli_tmpdir, name);
	assert_int_equal(atm_read_file(path, &text, &len), ATM_OK);
	return text;
}

/* test_search_cmd_model_mode -- with estimates: every method's row, no plan priced below the
 * ILP's that goes unsaid, every plan written and loadable, and one seed the same search */
static void test_search_cmd_model_mode(void **state)
{
	(void)state;
	const char *args = "search --model tiny_mlp --batch 8 --ratio 4:1 --estimate --quiet "
	                   "--evaluations 300 --seed 5 --cache %s/est.json --plans %s/%s";
	struct cli_result r = cli_run(args, cli_tmpdir, cli_tmpdir, "a");
	if (r.code != 0)
		fail_msg("exit %d: %s", r.code, r.err);
	for (const char *w = "ilp\0hill-ilp\0hill-slow\0hill-random\0genetic\0by the model:\0"; *w;
	     w += strlen(w) + 1)
		if (!strstr(r.out, w))
			fail_msg("'%s' missing from:\n%s", w, r.out);
	cli_release(&r);
	plans_load("a");
	r = cli_run(args, cli_tmpdir, cli_tmpdir, "b");
	assert_int_equal(r.code, 0);
	cli_release(&r);
	for (const char *n = "hill-slow\0hill-random\0genetic\0"; *n; n += strlen(n) + 1) {
		char pa[64], pb[64];
		snprintf(pa, sizeof pa, "a/%s.json", n);
		snprintf(pb, sizeof pb, "b/%s.json", n);
		char *ta = file_text(pa), *tb = file_text(pb);
		assert_string_equal(ta, tb);
		free(ta);
		free(tb);
	}
}

/* test_search_cmd_measured -- a few measured steps: candidates beside the ILP's plan, the
 * final comparison's two runs in the results with one comparison id, and its verdict */
static void test_search_cmd_measured(void **state)
{
	(void)state;
	struct cli_result r = cli_run("search --model tiny_mlp --batch 8 --ratio 4:1 --quiet "
	                              "--evaluations 200 --measured-steps 30 --turns 2 --iters 2 "
	                              "--final-turns 2 --cache %s/meas.json --plans %s/m -o %s/r.json",
	                              cli_tmpdir, cli_tmpdir, cli_tmpdir);
	if (r.code != 0)
		fail_msg("exit %d: %s", r.code, r.err);
	assert_non_null(strstr(r.out, "measured: "));
	assert_non_null(strstr(r.out, "final comparison"));
	assert_true(strstr(r.out, "measured faster than the ILP's in every turn") ||
	            strstr(r.out, "found no plan that measures faster than the ILP's"));
	cli_release(&r);
	char path[1200];
	snprintf(path, sizeof path, "%s/r.json", cli_tmpdir);
	json_error_t e;
	json_t *j = json_load_file(path, 0, &e);
	assert_non_null(j);
	json_t *runs = json_object_get(j, "runs");
	assert_int_equal(json_array_size(runs), 2);
	const char *id0 = json_string_value(json_object_get(json_array_get(runs, 0), "comparison"));
	const char *id1 = json_string_value(json_object_get(json_array_get(runs, 1), "comparison"));
	assert_non_null(id0);
	assert_non_null(id1);
	assert_string_equal(id0, id1);
	json_decref(j);
	char *best = file_text("m/best.json");
	free(best);
}

/* test_search_cmd_gpu -- on a GPU (an H100 from its datasheet) every operand must be fast at
 * its use: all slow is no start there and is left out, the other methods' plans keep every
 * operand fast (their check finds every kernel in the profile) */
static void test_search_cmd_gpu(void **state)
{
	(void)state;
	struct cli_result r = cli_run("search --model tiny_cnn --batch 8 --gpu-model h100 --estimate "
	                              "--dram-limit 2300K --evaluations 300 --cache %s/gpu.json "
	                              "--plans %s/g", cli_tmpdir, cli_tmpdir);
	if (r.code != 0)
		fail_msg("exit %d: %s", r.code, r.err);
	assert_non_null(strstr(r.err, "hill-slow left out: the hill-slow search's start is no "
	                              "placement here"));
	assert_non_null(strstr(r.out, "hill-random "));
	assert_non_null(strstr(r.out, "genetic "));
	cli_release(&r);
	char *p = file_text("g/hill-random.json");
	free(p);
}

/* test_search_cmd_usage -- bad methods, budgets and combinations: exit 2 naming what is valid */
static void test_search_cmd_usage(void **state)
{
	(void)state;
	const char *base = "search --model tiny_mlp --ratio 4:1 --estimate --cache /nonexistent/c.json";
	cli_expect(2, "unknown search method 'annealing'; valid methods: hill-ilp, hill-slow, "
	              "hill-random, genetic", "%s --methods hill-ilp,annealing", base);
	cli_expect(2, "--methods lists 'genetic' twice", "%s --methods genetic,genetic", base);
	cli_expect(2, "--evaluations '0' is not valid; expected an integer from 1", "%s --evaluations 0",
	           base);
	cli_expect(2, "--population '2' is not valid; expected an integer from 4 to 1000",
	           "%s --population 2", base);
	/* new candidates per comparison: --batch is the graph's, as in every command */
	cli_expect(2, "--candidates '33' is not valid; expected an integer from 1 to 32",
	           "%s --candidates 33", base);
	cli_expect(2, "--formulation 'synchronous,asynchronous': a list of formulations is a "
	           "comparison of 'autotm run'", "%s --formulation synchronous,asynchronous", base);
	cli_expect(2, "--measured-steps trains plans, --estimate only plans them",
	           "%s --measured-steps 100", base);
	cli_expect(2, "--measured-steps 3 cannot pay for one comparison", "search --model tiny_mlp "
	           "--ratio 4:1 --measured-steps 3 --plans %s/u", cli_tmpdir);
	cli_expect(2, "--measured-steps '-5' is not valid", "%s --measured-steps -5", base);
	cli_expect(2, "-o writes the final comparison's measurements", "%s -o %s/x.json", base,
	           cli_tmpdir);
	cli_expect(2, "a search checks an ILP's plan", "%s --formulation numa", base);
	cli_expect(2, "does not choose recomputations", "%s --recompute", base);
	cli_expect(2, "give the fast-memory limit", "search --model tiny_mlp --estimate");
	struct cli_result r = cli_run("search --help");
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out, "--measured-steps N"));
	assert_non_null(strstr(r.out, "--methods LIST"));
	cli_release(&r);
}

/* test_search_cmd_interrupt -- Ctrl-C in a long search ends it with 130 */
static void test_search_cmd_interrupt(void **state)
{
	(void)state;
	pid_t pid = cli_spawn("search --model tiny_mlp --ratio 4:1 --estimate --cache %s/est.json "
	                      "--plans %s/i --methods hill-slow --evaluations 100000000", cli_tmpdir,
	                      cli_tmpdir);
	assert_true(cli_wait_for_text("spawn.err", "hill-slow", 60));
	usleep(200000);
	kill(pid, SIGINT);
	assert_int_equal(cli_wait_within(pid, 60), 130);
	char *err = file_text("spawn.err");
	assert_non_null(strstr(err, "interrupted"));
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_search_cmd_model_mode),
		cmocka_unit_test(test_search_cmd_measured),
		cmocka_unit_test(test_search_cmd_gpu),
		cmocka_unit_test(test_search_cmd_usage),
		cmocka_unit_test(test_search_cmd_interrupt),
	};
	test_parts_select();
	return cmocka_run_group_tests(tests, cli_setup, cli_teardown);
}
