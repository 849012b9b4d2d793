/* test_results.c -- the results JSON: version 2 fields, exact ratios, appending under a lock, refusals */
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
#include "atm_formats.h"
/* every allocation of the formats and core (the test links with --wrap=malloc and the others) */
#define ALLOC_FAIL_WRAP
#include "common/alloc_fail.h"
#include "common/small_graph.h"

struct fx {
	struct small sm;
	atm_plan *p;
	atm_schedule *s;
	char dir[64];
	char path[128];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	small_build(&f->sm);
	assert_int_equal(atm_plan_uniform(&f->p, f->sm.g, ATM_LOC_FAST), ATM_OK);
	assert_int_equal(atm_schedule_new(&f->s, f->p), ATM_OK);
	snprintf(f->dir, sizeof f->dir, "/tmp/atm-results-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof f->path, "%s/r.json", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[160];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	atm_schedule_destroy(f->s);
	atm_plan_destroy(f->p);
	atm_graph_destroy(f->sm.g);
	free(f);
	return 0;
}

static json_t *load(const char *path)
{
	json_error_t e;
	json_t *d = json_load_file(path, 0, &e);
	assert_non_null(d);
	return d;
}

static json_t *run_at(json_t *doc, size_t i)
{
	return json_array_get(json_object_get(doc, "runs"), i);
}

static const atm_run_measured measured = {
	.actual_runtime_s = 0.5, .mean_runtime_s = 0.6, .n_iters = 3, .weights_checksum = "0123",
	.seed = 7, .n_threads = 2,
};

static void set_ratio(struct fx *f, double s, double fast)
{
	atm_plan_info_of(f->p)->ratio_slow = s;
	atm_plan_info_of(f->p)->ratio_fast = fast;
}

static void test_results_version2_fields(void **state)
{
	struct fx *f = *state;
	atm_results_workload w = {.preset = "small", .batch = 1, .image = 32};
	set_ratio(f, 4, 1);
	assert_int_equal(atm_results_write(f->path, f->p, f->s, &w, &measured, false), ATM_OK);
	json_t *d = load(f->path);
	assert_string_equal(json_string_value(json_object_get(d, "format")), "autotm-results");
	assert_int_equal(json_integer_value(json_object_get(d, "version")), ATM_RESULTS_VERSION);
	json_t *wl = json_object_get(d, "workload");
	assert_int_equal(json_integer_value(json_object_get(wl, "batch")), 1);
	assert_string_equal(json_string_value(json_object_get(wl, "preset")), "small");
	assert_int_equal(json_integer_value(json_object_get(wl, "image")), 32);
	json_t *r = run_at(d, 0);
	assert_true(json_number_value(json_object_get(r, "ratio")) == 4.0);
	assert_true(json_number_value(json_object_get(r, "ratio_slow")) == 4.0);
	assert_true(json_number_value(json_object_get(r, "ratio_fast")) == 1.0);
	assert_true(json_number_value(json_object_get(r, "fast_fraction")) == 0.2);
	assert_true(json_number_value(json_object_get(r, "actual_runtime")) == 0.5);
	assert_true(json_is_string(json_object_get(r, "date")));
	/* a uniform plan: no solver made it */
	assert_true(json_is_null(json_object_get(r, "solver")));
	json_decref(d);
}

/* 1:0 (all slow) has no S/F but is found by its exact pair; no ratio at all is null */
static void test_results_all_slow_ratio_and_none(void **state)
{
	struct fx *f = *state;
	set_ratio(f, 1, 0);
	assert_int_equal(atm_results_write(f->path, f->p, f->s, NULL, &measured, false), ATM_OK);
	set_ratio(f, 0, 0);
	assert_int_equal(atm_results_write(f->path, f->p, f->s, NULL, NULL, true), ATM_OK);
	json_t *d = load(f->path);
	json_t *r = run_at(d, 0);
	assert_true(json_is_null(json_object_get(r, "ratio")));
	assert_true(json_number_value(json_object_get(r, "ratio_slow")) == 1.0);
	assert_true(json_number_value(json_object_get(r, "ratio_fast")) == 0.0);
	assert_true(json_number_value(json_object_get(r, "fast_fraction")) == 0.0);
	/* the second run: no ratio, and nothing measured (a plan alone) */
	r = run_at(d, 1);
	assert_true(json_is_null(json_object_get(r, "ratio_slow")));
	assert_true(json_is_null(json_object_get(r, "fast_fraction")));
	assert_true(json_is_null(json_object_get(r, "actual_runtime")));
	/* the workload's batch defaults to the graph's */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "workload"), "batch")),
	                 atm_graph_batch(f->sm.g));
	assert_true(json_is_null(json_object_get(json_object_get(d, "workload"), "preset")));
	json_decref(d);
}

/* a run with the plan's per-kernel predictions: each kernel's predicted time beside its measured
 * ones, and the step split into kernels (as timed in the fastest step, not the per-kernel
 * minimums over all steps) and the rest, predicted and measured */
static void test_results_prediction_fields(void **state)
{
	struct fx *f = *state;
	int32_t n = atm_graph_n_nodes(f->sm.g);
	double *meas = calloc((size_t)n, sizeof *meas), *pred = calloc((size_t)n, sizeof *pred);
	double *mins = calloc((size_t)n, sizeof *mins);
	double sum_m = 0, sum_p = 0;
	for (int32_t k = 0; k < n; k++) {
		meas[k] = 0.01 * (k + 1);
		mins[k] = 0.009 * (k + 1);
		pred[k] = 0.008 * (k + 1);
		sum_m += meas[k];
		sum_p += pred[k];
	}
	atm_plan_info_of(f->p)->predicted_runtime_s = sum_p + 0.05;
	atm_run_measured m = measured;
	m.actual_runtime_s = sum_m + 0.2;
	m.kernel_s = mins;
	m.step_kernel_s = meas;
	m.kernel_pred_s = pred;
	m.n_in_step_nodes = 3;
	m.overlap_loss = 0.25;
	assert_int_equal(atm_results_write(f->path, f->p, f->s, NULL, &m, false), ATM_OK);
	/* without predictions (a placement the optimizer did not make): no such fields */
	m.kernel_pred_s = NULL;
	assert_int_equal(atm_results_write(f->path, f->p, f->s, NULL, &m, true), ATM_OK);
	json_t *d = load(f->path);
	json_t *r = run_at(d, 0);
	json_t *kt = json_object_get(r, "predicted_kernel_times");
	assert_int_equal(json_object_size(kt), (size_t)n);
	json_t *st = json_object_get(r, "step_kernel_times");
	for (int32_t k = 0; k < n; k++) {
		const char *name = atm_graph_node(f->sm.g, k)->name;
		assert_true(json_number_value(json_object_get(kt, name)) == pred[k]);
		assert_true(json_number_value(json_object_get(st, name)) == meas[k]);
	}
	json_t *pr = json_object_get(r, "prediction");
	double step = sum_p + 0.05, actual = sum_m + 0.2;
	assert_float_equal(json_number_value(json_object_get(pr, "step_error")),
	                   (step - actual) / actual, 1e-12);
	json_t *kn = json_object_get(pr, "kernels"), *out = json_object_get(pr, "outside_kernels");
	assert_float_equal(json_number_value(json_object_get(kn, "predicted_s")), sum_p, 1e-12);
	assert_float_equal(json_number_value(json_object_get(kn, "measured_s")), sum_m, 1e-12);
	assert_float_equal(json_number_value(json_object_get(out, "predicted_s")), 0.05, 1e-12);
	assert_float_equal(json_number_value(json_object_get(out, "measured_s")), 0.2, 1e-12);
	/* what the prediction was priced with */
	assert_int_equal(json_integer_value(json_object_get(pr, "in_step_kernels")), 3);
	assert_true(json_number_value(json_object_get(pr, "overlap_loss")) == 0.25);
	r = run_at(d, 1);
	assert_null(json_object_get(r, "predicted_kernel_times"));
	assert_null(json_object_get(r, "prediction"));
	json_decref(d);
	free(meas);
	free(mins);
	free(pred);
}


/* test_results_comparison_runs -- a comparison's runs written at once share its id and carry
 * their turns; with all-fast among them each records its slowdown predicted and measured; a
 * comparison without all-fast has no slowdowns */
static void test_results_comparison_runs(void **state)
{
	struct fx *f = *state;
	static const double t0[3] = {0.5, 0.6, 0.55}, t1[3] = {1.0, 1.3, 1.1};
	static const int pos0[3] = {0, 1, 0}, pos1[3] = {1, 0, 1}, reruns[3] = {0, 2, 0};
	static const double others[3] = {0.01, 0.4, 0.02};
	atm_run_comparison c[2] = {
		{.id = "c-1", .interleave = "step", .index = 0, .n_placements = 2, .n_turns = 3,
		 .steps_per_turn = 4, .turn_s = t0, .turn_position = pos0, .turn_others = others,
		 .turn_reruns = reruns, .with_all_fast = true, .predicted_slowdown = 1,
		 .measured_slowdown = 1, .measured_slowdown_min = 1, .measured_slowdown_max = 1},
		{.id = "c-1", .interleave = "step", .index = 1, .n_placements = 2, .n_turns = 3,
		 .steps_per_turn = 4, .turn_s = t1, .turn_position = pos1, .turn_others = others,
		 .turn_reruns = reruns, .with_all_fast = true, .predicted_slowdown = 2.1,
		 .measured_slowdown = 2, .measured_slowdown_min = 2, .measured_slowdown_max = 2.1667},
	};
	atm_run_measured m[2] = {measured, measured};
	m[0].actual_runtime_s = 0.55, m[0].comparison = &c[0];
	m[1].actual_runtime_s = 1.1, m[1].comparison = &c[1];
	const atm_plan *p[2] = {f->p, f->p};
	const atm_schedule *s[2] = {f->s, f->s};
	assert_int_equal(atm_results_write_runs(f->path, 2, p, s, NULL, m, false), ATM_OK);
	/* without all-fast, appended: no slowdowns */
	c[1].with_all_fast = false;
	c[1].id = "c-2";
	assert_int_equal(atm_results_write_runs(f->path, 1, p, s, NULL, &m[1], true), ATM_OK);
	json_t *d = load(f->path);
	assert_int_equal(json_array_size(json_object_get(d, "runs")), 3);
	json_t *a = run_at(d, 0), *b = run_at(d, 1), *alone = run_at(d, 2);
	assert_string_equal(json_string_value(json_object_get(a, "comparison")), "c-1");
	assert_string_equal(json_string_value(json_object_get(b, "comparison")), "c-1");
	assert_string_equal(json_string_value(json_object_get(b, "interleave")), "step");
	assert_int_equal(json_integer_value(json_object_get(b, "turns")), 3);
	assert_int_equal(json_integer_value(json_object_get(b, "steps_per_turn")), 4);
	assert_int_equal(json_integer_value(json_object_get(b, "comparison_index")), 1);
	assert_int_equal(json_integer_value(json_object_get(b, "comparison_size")), 2);
	assert_true(json_number_value(json_object_get(b, "actual_runtime")) == 1.1);
	json_t *times = json_object_get(b, "actual_runtimes");
	assert_int_equal(json_array_size(times), 3);
	for (size_t i = 0; i < 3; i++) {
		assert_true(json_number_value(json_array_get(times, i)) == t1[i]);
		assert_int_equal(json_integer_value(json_array_get(json_object_get(b, "turn_positions"), i)),
		                 pos1[i]);
		assert_int_equal(json_integer_value(json_array_get(json_object_get(b, "turn_reruns"), i)),
		                 reruns[i]);
		assert_true(json_number_value(json_array_get(json_object_get(b, "turn_others"), i)) ==
		            others[i]);
	}
	assert_true(json_number_value(json_object_get(a, "predicted_slowdown")) == 1);
	assert_true(json_number_value(json_object_get(b, "predicted_slowdown")) == 2.1);
	assert_true(json_number_value(json_object_get(b, "measured_slowdown")) == 2);
	json_t *range = json_object_get(b, "measured_slowdown_range");
	assert_true(json_number_value(json_array_get(range, 0)) == 2);
	assert_true(json_number_value(json_array_get(range, 1)) == 2.1667);
	assert_float_equal(json_number_value(json_object_get(b, "slowdown_error")), 0.05, 1e-12);
	assert_float_equal(json_number_value(json_object_get(a, "slowdown_error")), 0, 1e-12);
	assert_string_equal(json_string_value(json_object_get(alone, "comparison")), "c-2");
	assert_null(json_object_get(alone, "predicted_slowdown"));
	assert_null(json_object_get(alone, "measured_slowdown"));
	assert_null(json_object_get(alone, "slowdown_error"));
	/* a run alone has none of the comparison's fields */
	assert_int_equal(atm_results_write(f->path, f->p, f->s, NULL, &measured, true), ATM_OK);
	json_decref(d);
	d = load(f->path);
	assert_null(json_object_get(run_at(d, 3), "comparison"));
	assert_null(json_object_get(run_at(d, 3), "turns"));
	assert_null(json_object_get(run_at(d, 3), "actual_runtimes"));
	json_decref(d);
	/* nothing to write is refused */
	assert_int_equal(atm_results_write_runs(f->path, 0, p, s, NULL, m, true), ATM_E_USAGE);
}

static void write_text(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

/* read_text -- the whole of a small file into buf */
static void read_text(const char *path, char *buf, size_t n)
{
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	size_t len = fread(buf, 1, n - 1, fp);
	fclose(fp);
	assert_true(len < n - 1);
	buf[len] = 0;
}

/* appending onto something else is refused, before (check) and at the write, and the file
 * is left as it was */
static void test_results_append_refusals(void **state)
{
	struct fx *f = *state;
	static const struct {
		const char *text;
		atm_status rc;
		const char *msg;
	} cases[] = {
		{"{\"format\": \"autotm-plan\", \"version\": 2}", ATM_E_INPUT, "is not a results file"},
		{"{\"format\": \"autotm-results\", \"version\": 1, \"workload\": {}, \"runs\": []}",
		 ATM_E_INPUT, "version 1"},
		{"{\"format\": \"autotm-results\", \"version\": 2, \"workload\": {\"name\": \"other\", "
		 "\"digest\": \"x\"}, \"runs\": []}", ATM_E_INPUT, "workload 'other'"},
		{"{\"format\": \"autotm-results\", \"version\": 2, \"workload\": {\"name\": \"small\", "
		 "\"digest\": \"x\"}, \"runs\": []}", ATM_E_INPUT, "another version of 'small'"},
		/* a version as a string is named as the file has it */
		{"{\"format\": \"autotm-results\", \"version\": \"2\", \"workload\": {}, \"runs\": []}",
		 ATM_E_INPUT, "version \"2\";"},
		{"{\"format\": \"autotm-res", ATM_E_INPUT, "not results JSON"},
		/* a comparison's run whose turns do not add up */
		{"{\"format\": \"autotm-results\", \"version\": 2, \"workload\": {}, \"runs\": [{}, "
		 "{\"comparison\": \"c\", \"turns\": 3, \"actual_runtimes\": [1, 2]}]}", ATM_E_INPUT,
		 "run 1 is part of a comparison"},
		{"{\"format\": \"autotm-results\", \"version\": 2, \"workload\": {}, \"runs\": "
		 "[{\"turns\": 1, \"actual_runtimes\": [1]}]}", ATM_E_INPUT, "without a \"comparison\" id"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		write_text(f->path, cases[i].text);
		assert_int_equal(atm_results_check(f->path, f->sm.g, true), cases[i].rc);
		if (!strstr(atm_errmsg(), cases[i].msg))
			fail_msg("case %zu: '%s' lacks '%s'", i, atm_errmsg(), cases[i].msg);
		assert_int_equal(atm_results_write(f->path, f->p, f->s, NULL, &measured, true), cases[i].rc);
		assert_non_null(strstr(atm_errmsg(), cases[i].msg));
		char after[512];
		read_text(f->path, after, sizeof after);
		assert_string_equal(after, cases[i].text);
		/* without append the file is replaced: nothing to check */
		assert_int_equal(atm_results_check(f->path, f->sm.g, false), ATM_OK);
	}
	assert_int_equal(atm_results_check(f->dir, f->sm.g, false), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "is a folder"));
	assert_int_equal(atm_results_check("", f->sm.g, false), ATM_E_USAGE);
}

/* appenders in several processes at once lose no run: the read-change-write is locked */
static void test_results_concurrent_appends(void **state)
{
	struct fx *f = *state;
	enum { N_PROC = 4, N_EACH = 12 };
	pid_t pids[N_PROC];
	for (int k = 0; k < N_PROC; k++) {
		pids[k] = fork();
		assert_true(pids[k] >= 0);
		if (pids[k] == 0) {
			for (int i = 0; i < N_EACH; i++)
				if (atm_results_write(f->path, f->p, f->s, NULL, &measured, true) != ATM_OK)
					_exit(1);
			_exit(0);
		}
	}
	for (int k = 0; k < N_PROC; k++) {
		int st = 0;
		assert_int_equal(waitpid(pids[k], &st, 0), pids[k]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	json_t *d = load(f->path);
	assert_int_equal(json_array_size(json_object_get(d, "runs")), N_PROC * N_EACH);
	json_decref(d);
}

/* a plan file keeps the ratio, each round's times and the solver, so a run of it reports them */
static void test_results_plan_file_keeps_ratio_and_rounds(void **state)
{
	struct fx *f = *state;
	atm_plan_info *info = atm_plan_info_of(f->p);
	set_ratio(f, 8, 1);
	info->n_rounds = 2;
	info->round_creation_s[0] = 0.25, info->round_solve_s[0] = 1.5;
	info->round_creation_s[1] = 0.125, info->round_solve_s[1] = 0.75;
	snprintf(info->solver, sizeof info->solver, "glpk");
	char plan_path[160];
	snprintf(plan_path, sizeof plan_path, "%s/p.json", f->dir);
	assert_int_equal(atm_plan_save(f->p, plan_path), ATM_OK);
	atm_plan *q = NULL;
	atm_schedule *s = NULL;
	assert_int_equal(atm_plan_load(&q, f->sm.g, plan_path), ATM_OK);
	const atm_plan_info *qi = atm_plan_info_get(q);
	assert_true(qi->ratio_slow == 8 && qi->ratio_fast == 1);
	assert_int_equal(qi->n_rounds, 2);
	assert_true(qi->round_solve_s[1] == 0.75 && qi->round_creation_s[0] == 0.25);
	assert_string_equal(qi->solver, "glpk");
	assert_int_equal(atm_schedule_new(&s, q), ATM_OK);
	assert_int_equal(atm_results_write(f->path, q, s, NULL, &measured, false), ATM_OK);
	json_t *d = load(f->path), *r = run_at(d, 0);
	assert_true(json_number_value(json_object_get(r, "ratio")) == 8.0);
	assert_int_equal(json_array_size(json_object_get(r, "optimization_times")), 2);
	assert_true(json_number_value(json_array_get(json_object_get(r, "creation_times"), 1)) == 0.125);
	assert_string_equal(json_string_value(json_object_get(r, "solver")), "glpk");
	json_decref(d);
	atm_schedule_destroy(s);
	atm_plan_destroy(q);
	/* a plan whose ratio is broken is refused with the field */
	static char text[8192];
	read_text(plan_path, text, sizeof text);
	char *at = strstr(text, "\"ratio\": {\"slow\":8.0");
	assert_non_null(at);
	memcpy(at + strlen("\"ratio\": {\"slow\":"), "0.0", 3);
	at = strstr(at, "\"fast\":1.0");
	assert_non_null(at);
	memcpy(at + strlen("\"fast\":"), "0.0", 3);
	write_text(plan_path, text);
	q = NULL;
	assert_int_equal(atm_plan_load(&q, f->sm.g, plan_path), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "ratio"));
	assert_null(q);
}

/* A results write to sweep: the fixture, whether it appends, and what the file must hold. */
struct write_case {
	struct fx *f;
	bool append;
	json_t *want;     /* the document written with no allocation failing, dates dropped */
	char *before;     /* appending: the file's text before, which a failed append keeps */
};

/* without_dates -- doc with every run's date dropped (they differ from second to second) */
static json_t *without_dates(json_t *doc)
{
	size_t i;
	json_t *run;
	json_array_foreach(json_object_get(doc, "runs"), i, run)
		json_object_del(run, "date");
	return doc;
}

/* write_once -- one write: the whole document, or (appending) the file as it was */
static atm_status write_once(void *arg)
{
	struct write_case *c = arg;
	atm_results_workload w = {.preset = "small", .batch = 1, .image = 32};
	/* a run alone and the two runs of a comparison with all-fast: every field's allocations */
	static const double turn_s[2] = {0.5, 0.25}, others[2] = {0, 0.5};
	static const int position[2] = {0, 1}, reruns[2] = {0, 1};
	atm_run_comparison cmp = {.id = "c", .interleave = "turn", .n_placements = 2, .n_turns = 2,
	                          .steps_per_turn = 1, .turn_s = turn_s, .turn_position = position,
	                          .turn_others = others, .turn_reruns = reruns, .with_all_fast = true,
	                          .predicted_slowdown = 1.5, .measured_slowdown = 1.25,
	                          .measured_slowdown_min = 1, .measured_slowdown_max = 1.5};
	atm_run_measured m[3] = {measured, measured, measured};
	m[1].comparison = m[2].comparison = &cmp;
	const atm_plan *p[3] = {c->f->p, c->f->p, c->f->p};
	const atm_schedule *s[3] = {c->f->s, c->f->s, c->f->s};
	atm_status rc = atm_results_write_runs(c->f->path, 3, p, s, &w, m, c->append);
	long left = alloc_fail_pause();
	if (rc == ATM_OK && c->want) {
		json_t *got = without_dates(load(c->f->path));
		if (!json_equal(got, c->want))
			fail_msg("the results written differ from those written without failures");
		json_decref(got);
	}
	if (rc < 0 && c->before) {
		char *now = NULL;
		size_t len;
		assert_int_equal(atm_read_file(c->f->path, &now, &len), ATM_OK);
		assert_string_equal(now, c->before);
		free(now);
	}
	alloc_fail_resume(left);
	return rc;
}

/* test_results_allocation_failures -- every allocation of a results write of three runs, two
 * of them a comparison's (jansson's and autotm's), failed in turn: each is ATM_E_NOMEM, leaks nothing (ASan) and, when appending, leaves
 * the file as it was; the write that succeeds holds every field */
static void test_results_allocation_failures(void **state)
{
	struct fx *f = *state;
	struct write_case c = {.f = f};
	size_t len;
	set_ratio(f, 4, 1);
	assert_int_equal(write_once(&c), ATM_OK);
	c.want = without_dates(load(f->path));
	assert_int_equal(unlink(f->path), 0);
	assert_true(alloc_fail_sweep("atm_results_write", write_once, &c) > 10);
	json_decref(c.want);
	/* appending to that file */
	c = (struct write_case){.f = f, .append = true};
	assert_int_equal(atm_read_file(f->path, &c.before, &len), ATM_OK);
	/* it reads the file first: autotm's own allocations only (jansson's parser cannot take a
	 * failing allocator), and a failure never loses what the file held */
	assert_true(alloc_fail_sweep_own("atm_results_write (append)", write_once, &c) > 3);
	json_t *d = load(f->path);
	assert_int_equal(json_array_size(json_object_get(d, "runs")), 6);
	json_decref(d);
	free(c.before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_results_version2_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_results_all_slow_ratio_and_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_results_prediction_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_results_comparison_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_results_append_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_results_concurrent_appends, setup, teardown),
		cmocka_unit_test_setup_teardown(test_results_plan_file_keeps_ratio_and_rounds, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_results_allocation_failures, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
