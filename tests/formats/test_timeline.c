/* test_timeline.c -- a plan's timeline: its fields, occupancy as the schedule lays it out, the moves, atomic writes, failures */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "atm_core.h"
#include "atm_formats.h"
#include "atm_zoo.h"
/* every allocation of the formats and core (the test links with --wrap=malloc and the others) */
#define ALLOC_FAIL_WRAP
#include "common/alloc_fail.h"
#include "common/small_graph.h"

/* A random plan of tiny_cnn (synchronous and asynchronous moves, drops of fast copies whose
 * slow copy is valid) with a workspace on one node, limited to the arena its step needs: a
 * feasible plan that uses its whole limit. */
struct fx {
	atm_graph *g;
	atm_plan *p;
	atm_schedule *s;
	int32_t ws_node;
	char dir[64];
	char path[128];
};

#define WS_BYTES 1000

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	atm_zoo_opts o = {.batch = 2};
	atm_schedule *free_s = NULL;
	assert_int_equal(atm_zoo_build(&f->g, "tiny_cnn", &o), ATM_OK);
	assert_int_equal(atm_plan_random(&f->p, f->g, 3), ATM_OK);
	f->ws_node = atm_graph_n_nodes(f->g) / 2;
	assert_int_equal(atm_plan_set_workspace(f->p, f->ws_node, WS_BYTES), ATM_OK);
	assert_int_equal(atm_schedule_new(&free_s, f->p), ATM_OK);
	atm_plan_info_of(f->p)->fast_limit_bytes = atm_schedule_stats_get(free_s)->fast_arena_bytes;
	atm_schedule_destroy(free_s);
	assert_int_equal(atm_schedule_new(&f->s, f->p), ATM_OK);
	snprintf(f->dir, sizeof f->dir, "/tmp/atm-timeline-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof f->path, "%s/t.json", f->dir);
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
	atm_graph_destroy(f->g);
	free(f);
	return 0;
}

/* dump -- the timeline of p (s: its schedule, or NULL) parsed */
static json_t *dump(const atm_plan *p, const atm_schedule *s, const atm_timeline_opts *o)
{
	char *text = NULL;
	json_error_t e;
	if (atm_timeline_dump(p, s, o, &text) < 0)
		fail_msg("atm_timeline_dump: %s", atm_errmsg());
	json_t *d = json_loads(text, 0, &e);
	if (!d)
		fail_msg("the timeline is not JSON: %s (line %d)", e.text, e.line);
	free(text);
	return d;
}

static int64_t int_at(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v))
		fail_msg("\"%s\" is not an integer", key);
	return json_integer_value(v);
}

/* test_timeline_fields -- every documented field, of its type; a line per kernel and per
 * move of the plan, each move as the plan has it */
static void test_timeline_fields(void **state)
{
	struct fx *f = *state;
	json_t *d = dump(f->p, f->s, NULL);
	static const char *const top[] = {"format", "version", "graph", "formulation",
		"fast_limit_bytes", "ratio", "predicted_runtime_s", "estimated", "solver", "profile",
		"fast_peak_bytes", "fast_arena_bytes", "persistent_fast_bytes", "persistent_slow_bytes",
		"kinds", "kernels", "moves", "end_gap_high_bytes"};
	for (size_t i = 0; i < sizeof top / sizeof *top; i++)
		if (!json_object_get(d, top[i]))
			fail_msg("no \"%s\"", top[i]);
	assert_int_equal(json_object_size(d), sizeof top / sizeof *top);
	assert_string_equal(json_string_value(json_object_get(d, "format")), "autotm-timeline");
	assert_int_equal(int_at(d, "version"), 1);
	assert_string_equal(json_string_value(json_object_get(d, "formulation")), "random");
	assert_int_equal(int_at(d, "fast_limit_bytes"), atm_plan_info_get(f->p)->fast_limit_bytes);
	assert_true(json_is_null(json_object_get(d, "profile")));
	assert_true(json_is_null(json_object_get(d, "ratio")));
	json_t *gr = json_object_get(d, "graph");
	assert_string_equal(json_string_value(json_object_get(gr, "name")), "tiny_cnn");
	assert_int_equal(int_at(gr, "batch"), 2);
	assert_true(json_is_null(json_object_get(gr, "preset")));
	json_t *kinds = json_object_get(d, "kinds");
	assert_int_equal(json_array_size(kinds), ATM_N_KINDS + 1);
	for (int i = 0; i < ATM_N_KINDS; i++)
		assert_string_equal(json_string_value(json_array_get(kinds, (size_t)i)),
		                    atm_kind_name((atm_tensor_kind)i));
	assert_string_equal(json_string_value(json_array_get(kinds, ATM_N_KINDS)), "workspace");

	json_t *ks = json_object_get(d, "kernels");
	assert_int_equal(json_array_size(ks), atm_graph_n_nodes(f->g));
	static const char *const kkeys[] = {"index", "name", "op", "phase", "fast_bytes",
		"fast_total_bytes", "gap_high_bytes", "arena_top_bytes", "slow_bytes", "slow_inputs",
		"slow_outputs", "predicted_s"};
	for (int32_t k = 0; k < atm_graph_n_nodes(f->g); k++) {
		json_t *kj = json_array_get(ks, (size_t)k);
		for (size_t i = 0; i < sizeof kkeys / sizeof *kkeys; i++)
			if (!json_object_get(kj, kkeys[i]))
				fail_msg("kernel %d: no \"%s\"", k, kkeys[i]);
		assert_int_equal(json_object_size(kj), sizeof kkeys / sizeof *kkeys);
		const atm_node *n = atm_graph_node(f->g, k);
		assert_int_equal(int_at(kj, "index"), k);
		assert_string_equal(json_string_value(json_object_get(kj, "name")), n->name);
		assert_string_equal(json_string_value(json_object_get(kj, "op")), atm_op_name(n->op));
		assert_true(json_is_null(json_object_get(kj, "predicted_s")));
		assert_int_equal(json_object_size(json_object_get(kj, "fast_bytes")), ATM_N_KINDS + 1);
	}

	json_t *ms = json_object_get(d, "moves");
	assert_true(atm_plan_n_moves(f->p) > 10);
	assert_int_equal(json_array_size(ms), atm_plan_n_moves(f->p));
	int n_async = 0;
	for (int32_t m = 0; m < atm_plan_n_moves(f->p); m++) {
		const atm_move *mv = atm_plan_move(f->p, m);
		const atm_tensor *x = atm_graph_tensor(f->g, mv->tensor);
		json_t *mj = json_array_get(ms, (size_t)m);
		assert_int_equal(json_object_size(mj), 9);
		assert_int_equal(int_at(mj, "index"), m);
		assert_string_equal(json_string_value(json_object_get(mj, "tensor")), x->name);
		assert_string_equal(json_string_value(json_object_get(mj, "kind")),
		                    atm_kind_name(x->kind));
		assert_int_equal(int_at(mj, "bytes"), x->bytes);
		assert_string_equal(json_string_value(json_object_get(mj, "to")),
		                    mv->to == ATM_LOC_FAST ? "fast" : "slow");
		assert_string_equal(json_string_value(json_object_get(mj, "mode")),
		                    mv->async ? "async" : "sync");
		assert_int_equal(int_at(mj, "after"), mv->after);
		assert_true(json_is_boolean(json_object_get(mj, "copied")));
		int64_t done = int_at(mj, "done_after");
		if (mv->async) {
			/* waited for before node until (or earlier, when the tensor is used first) */
			n_async++;
			assert_true(done >= mv->after && done < mv->until);
		} else {
			assert_int_equal(done, mv->after);
		}
	}
	assert_true(n_async > 0);
	json_decref(d);
}

/* test_timeline_occupancy_is_the_schedules -- at every kernel the kinds add up to the total,
 * which is what the schedule holds plus the plan's workspace, within the limit and the arena;
 * the moments between kernels too; the peak is the schedule's */
static void test_timeline_occupancy_is_the_schedules(void **state)
{
	struct fx *f = *state;
	json_t *d = dump(f->p, NULL, NULL);
	const atm_schedule_stats *st = atm_schedule_stats_get(f->s);
	int64_t limit = atm_plan_info_get(f->p)->fast_limit_bytes, peak = 0;
	json_t *ks = json_object_get(d, "kernels");
	for (int32_t k = 0; k < atm_graph_n_nodes(f->g); k++) {
		json_t *kj = json_array_get(ks, (size_t)k), *fb = json_object_get(kj, "fast_bytes"), *v;
		const char *key;
		int64_t sum = 0, total = int_at(kj, "fast_total_bytes");
		json_object_foreach(fb, key, v)
			sum += json_integer_value(v);
		assert_int_equal(sum, total);
		int64_t ws = int_at(fb, "workspace");
		assert_int_equal(ws, k == f->ws_node ? WS_BYTES : 0);
		assert_int_equal(total, atm_schedule_fast_bytes_at(f->s, k) + ws);
		assert_true(total <= limit);
		assert_true(int_at(kj, "arena_top_bytes") <= atm_arena_align_down(limit));
		assert_true(int_at(kj, "arena_top_bytes") >= total - ws);
		int64_t gap = int_at(kj, "gap_high_bytes");
		assert_true(gap <= limit && gap >= total - ws);
		if (gap > peak)
			peak = gap;
		assert_true(int_at(kj, "slow_bytes") >= 0);
	}
	int64_t end = int_at(d, "end_gap_high_bytes");
	assert_true(end <= limit);
	assert_int_equal(end > peak ? end : peak, st->fast_peak_bytes);
	assert_int_equal(int_at(d, "fast_peak_bytes"), st->fast_peak_bytes);
	assert_int_equal(int_at(d, "fast_arena_bytes"), st->fast_arena_bytes);
	assert_int_equal(int_at(d, "persistent_fast_bytes"), st->persistent_fast_bytes);
	assert_int_equal(int_at(d, "persistent_slow_bytes"), st->persistent_slow_bytes);
	json_decref(d);
}

/* test_timeline_slow_operands_and_copies -- the slow operands are the schedule's
 * configuration of each kernel; the copied moves are the schedule's bytes moved */
static void test_timeline_slow_operands_and_copies(void **state)
{
	struct fx *f = *state;
	json_t *d = dump(f->p, f->s, NULL);
	json_t *ks = json_object_get(d, "kernels"), *ms = json_object_get(d, "moves");
	int n_slow = 0;
	for (int32_t i = 0; i < atm_schedule_n_events(f->s); i++) {
		const atm_event *ev = atm_schedule_event(f->s, i);
		if (ev->kind != ATM_EV_KERNEL)
			continue;
		const atm_node *n = atm_graph_node(f->g, ev->node);
		json_t *kj = json_array_get(ks, (size_t)ev->node);
		json_t *in = json_object_get(kj, "slow_inputs"), *out = json_object_get(kj, "slow_outputs");
		size_t ni = 0, no = 0;
		for (int j = 0; j < n->n_in + n->n_out; j++) {
			if (ev->cfg[j] != ATM_LOC_SLOW)
				continue;
			bool is_in = j < n->n_in;
			int32_t t = is_in ? n->in[j] : n->out[j - n->n_in];
			json_t *name = json_array_get(is_in ? in : out, is_in ? ni++ : no++);
			assert_string_equal(json_string_value(name), atm_graph_tensor(f->g, t)->name);
		}
		assert_int_equal(json_array_size(in), ni);
		assert_int_equal(json_array_size(out), no);
		n_slow += ni + no > 0;
	}
	assert_true(n_slow > 0);
	const atm_schedule_stats *st = atm_schedule_stats_get(f->s);
	int64_t to_fast = 0, to_slow = 0, drops = 0;
	for (size_t m = 0; m < json_array_size(ms); m++) {
		json_t *mj = json_array_get(ms, m);
		bool fast = !strcmp(json_string_value(json_object_get(mj, "to")), "fast");
		if (!json_is_true(json_object_get(mj, "copied"))) {
			assert_false(fast); /* only an eviction copies nothing */
			drops++;
			continue;
		}
		*(fast ? &to_fast : &to_slow) += int_at(mj, "bytes");
	}
	assert_int_equal(to_fast, st->bytes_to_fast);
	assert_int_equal(to_slow, st->bytes_to_slow);
	assert_true(drops > 0);
	json_decref(d);
}

/* test_timeline_phases -- forward kernels, the backward ones that write gradients, updates */
static void test_timeline_phases(void **state)
{
	(void)state;
	struct small sm;
	atm_plan *p = NULL;
	small_build(&sm);
	assert_int_equal(atm_plan_uniform(&p, sm.g, ATM_LOC_FAST), ATM_OK);
	json_t *d = dump(p, NULL, NULL);
	static const char *const want[] = {"forward", "forward", "forward", "backward", "backward",
	                                   "backward", "update", "update"};
	json_t *ks = json_object_get(d, "kernels");
	assert_int_equal(json_array_size(ks), 8);
	for (size_t k = 0; k < 8; k++)
		assert_string_equal(json_string_value(json_object_get(json_array_get(ks, k), "phase")),
		                    want[k]);
	/* all fast, no limit: no move, no slow operand, the limit null */
	assert_true(json_is_null(json_object_get(d, "fast_limit_bytes")));
	assert_int_equal(json_array_size(json_object_get(d, "moves")), 0);
	assert_int_equal(json_array_size(json_object_get(json_array_get(ks, 5), "slow_inputs")), 0);
	assert_int_equal(int_at(json_array_get(ks, 5), "fast_total_bytes"), 164);
	json_decref(d);
	atm_plan_destroy(p);
	atm_graph_destroy(sm.g);
}

/* test_timeline_workload_profile_predictions -- what the caller knows beyond the plan */
static void test_timeline_workload_profile_predictions(void **state)
{
	struct fx *f = *state;
	atm_profile_machine m = {.cpu = "Test CPU", .n_threads = 2, .backend = "cpu-test",
	                         .fast_tier = "dram:0", .slow_tier = "pmem-dir",
	                         .emulation = "optane"};
	atm_profile *prof = NULL;
	int32_t nn = atm_graph_n_nodes(f->g);
	double *pred = calloc((size_t)nn, sizeof *pred);
	for (int32_t k = 0; k < nn; k++)
		pred[k] = k == 1 ? -1 : 0.001 * (k + 1);
	assert_int_equal(atm_profile_new(&prof, &m, NULL), ATM_OK);
	atm_results_workload w = {.preset = "small", .batch = 0, .image = 32};
	atm_timeline_opts o = {.workload = &w, .profile = prof, .kernel_pred_s = pred};
	atm_plan_info_of(f->p)->ratio_slow = 4;
	atm_plan_info_of(f->p)->ratio_fast = 1;
	atm_plan_info_of(f->p)->predicted_runtime_s = 0.25;
	json_t *d = dump(f->p, f->s, &o);
	json_t *gr = json_object_get(d, "graph"), *pj = json_object_get(d, "profile");
	assert_string_equal(json_string_value(json_object_get(gr, "preset")), "small");
	assert_int_equal(int_at(gr, "batch"), 2); /* 0: the graph's */
	assert_int_equal(int_at(gr, "image"), 32);
	assert_string_equal(json_string_value(json_object_get(pj, "cpu")), "Test CPU");
	assert_string_equal(json_string_value(json_object_get(pj, "emulation")), "optane");
	assert_true(json_is_null(json_object_get(pj, "to_fast_gbps"))); /* never measured */
	assert_true(json_real_value(json_object_get(json_object_get(d, "ratio"), "slow")) == 4);
	assert_true(json_real_value(json_object_get(d, "predicted_runtime_s")) == 0.25);
	json_t *ks = json_object_get(d, "kernels");
	assert_true(json_is_null(json_object_get(json_array_get(ks, 1), "predicted_s")));
	assert_true(json_real_value(json_object_get(json_array_get(ks, 2), "predicted_s")) == pred[2]);
	json_decref(d);
	assert_int_equal(atm_profile_set_moves(prof, &(atm_profile_moves){.to_fast_gbps = 4,
	                                                                   .to_slow_gbps = 2}), ATM_OK);
	d = dump(f->p, f->s, &o);
	assert_true(json_real_value(json_object_get(json_object_get(d, "profile"), "to_slow_gbps")) == 2);
	json_decref(d);
	atm_profile_destroy(prof);
	free(pred);
}

/* test_timeline_write_and_refusals -- written atomically as dumped; a folder that is not
 * there fails and writes nothing; a plan over its limit is refused naming the node */
static void test_timeline_write_and_refusals(void **state)
{
	struct fx *f = *state;
	char *text = NULL, *file = NULL, bad[200];
	size_t len;
	assert_int_equal(atm_timeline_write(f->path, f->p, f->s, NULL), ATM_OK);
	assert_int_equal(atm_timeline_dump(f->p, f->s, NULL, &text), ATM_OK);
	assert_int_equal(atm_read_file(f->path, &file, &len), ATM_OK);
	assert_string_equal(file, text);
	free(file);
	free(text);
	snprintf(bad, sizeof bad, "%s/missing/t.json", f->dir);
	assert_int_equal(atm_timeline_write(bad, f->p, f->s, NULL), ATM_E_IO);
	struct stat sb;
	assert_int_not_equal(stat(bad, &sb), 0);
	/* the same plan under a tenth of its limit */
	atm_plan_info_of(f->p)->fast_limit_bytes /= 10;
	text = (char *)1;
	assert_int_equal(atm_timeline_dump(f->p, NULL, NULL, &text), ATM_E_INFEASIBLE);
	assert_null(text);
	assert_non_null(strstr(atm_errmsg(), "at node"));
	atm_plan_info_of(f->p)->fast_limit_bytes *= 10;
}

/* What the allocation sweep dumps: a random plan of the small graph (a few hundred
 * allocations a dump, where tiny_cnn's thousands would take the sweep minutes). */
struct sweep {
	atm_plan *p;
	atm_schedule *s;
};

/* dump_once -- one whole dump, its text released */
static atm_status dump_once(void *arg)
{
	struct sweep *f = arg;
	char *text = NULL;
	atm_status rc = atm_timeline_dump(f->p, f->s, NULL, &text);
	long left = alloc_fail_pause();
	assert_true(rc == ATM_OK ? text != NULL : text == NULL);
	alloc_fail_resume(left);
	free(text);
	return rc;
}

/* lay_out_once -- a dump that lays the schedule out itself */
static atm_status lay_out_once(void *arg)
{
	struct sweep *f = arg;
	char *text = NULL;
	atm_status rc = atm_timeline_dump(f->p, NULL, NULL, &text);
	free(text);
	return rc;
}

/* test_timeline_allocation_failures -- every allocation failed in turn (jansson's and
 * autotm's): each is ATM_E_NOMEM with nothing handed out, and leaks nothing (ASan) */
static void test_timeline_allocation_failures(void **state)
{
	(void)state;
	struct small sm;
	struct sweep f = {0};
	small_build(&sm);
	assert_int_equal(atm_plan_random(&f.p, sm.g, 5), ATM_OK);
	assert_true(atm_plan_n_moves(f.p) > 0);
	assert_int_equal(atm_schedule_new(&f.s, f.p), ATM_OK);
	assert_true(alloc_fail_sweep("atm_timeline_dump", dump_once, &f) > 50);
	assert_true(alloc_fail_sweep("atm_timeline_dump (laying out)", lay_out_once, &f) > 50);
	atm_schedule_destroy(f.s);
	atm_plan_destroy(f.p);
	atm_graph_destroy(sm.g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_timeline_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeline_occupancy_is_the_schedules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeline_slow_operands_and_copies, setup, teardown),
		cmocka_unit_test(test_timeline_phases),
		cmocka_unit_test_setup_teardown(test_timeline_workload_profile_predictions, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_timeline_write_and_refusals, setup, teardown),
		cmocka_unit_test(test_timeline_allocation_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
