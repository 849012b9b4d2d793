/* test_plan.c -- plans and their schedules: copies, moves, limits, random plans, plan JSON */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "atm_core.h"

/* every allocation of the core (the test links with --wrap=malloc and the others) */
#define ALLOC_FAIL_WRAP
#include "common/alloc_fail.h"
#include "common/small_graph.h"


/* expect_schedule_error -- schedule_new fails with code and a message holding frag */
static void expect_schedule_error(const atm_plan *p, atm_status code, const char *frag)
{
	atm_schedule *s = (atm_schedule *)1;
	assert_int_equal(atm_schedule_new(&s, p), code);
	assert_null(s);
	if (!strstr(atm_errmsg(), frag))
		fail_msg("message '%s' lacks '%s'", atm_errmsg(), frag);
}

/* kernel_event -- index of node k's kernel event */
static int32_t kernel_event(const atm_schedule *s, int32_t k)
{
	for (int32_t i = 0; i < atm_schedule_n_events(s); i++)
		if (atm_schedule_event(s, i)->kind == ATM_EV_KERNEL && atm_schedule_event(s, i)->node == k)
			return i;
	fail_msg("no kernel event for node %d", k);
	return -1;
}

static void test_plan_all_fast_matches_liveness(void **state)
{
	struct small *sm = *state;
	atm_plan *p = NULL;
	atm_schedule *s = NULL;
	assert_int_equal(atm_plan_uniform(&p, sm->g, ATM_LOC_FAST), ATM_OK);
	assert_string_equal(atm_plan_info_get(p)->formulation, "all-fast");
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	const atm_schedule_stats *st = atm_schedule_stats_get(s);
	assert_int_equal(st->fast_peak_bytes, 164);
	assert_int_equal(st->fast_peak_node, 5);
	assert_int_equal(st->slow_peak_bytes, 0);
	assert_int_equal(st->persistent_fast_bytes, 92);
	assert_int_equal(atm_schedule_n_setup(s), 5);
	assert_int_equal(atm_schedule_fast_bytes_at(s, 3), 128);
	/* arena offsets are 64-byte aligned */
	for (int32_t i = 0; i < atm_schedule_n_events(s); i++) {
		const atm_event *e = atm_schedule_event(s, i);
		assert_true(e->kind == ATM_EV_ALLOC || e->kind == ATM_EV_FREE || e->kind == ATM_EV_KERNEL);
		if (e->kind == ATM_EV_ALLOC)
			assert_int_equal(e->offset % 64, 0);
		if (e->kind == ATM_EV_KERNEL)
			assert_int_equal(e->cfg[0], ATM_LOC_FAST);
	}
	/* every non-persistent tensor is allocated and freed exactly once */
	int allocs = 0, frees = 0;
	for (int32_t i = 0; i < atm_schedule_n_events(s); i++) {
		allocs += atm_schedule_event(s, i)->kind == ATM_EV_ALLOC;
		frees += atm_schedule_event(s, i)->kind == ATM_EV_FREE;
	}
	assert_int_equal(allocs, 7);
	assert_int_equal(frees, 7);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);
}

static void test_plan_all_slow(void **state)
{
	struct small *sm = *state;
	atm_plan *p = NULL;
	atm_schedule *s = NULL;
	assert_int_equal(atm_plan_uniform(&p, sm->g, ATM_LOC_SLOW), ATM_OK);
	atm_plan_info_of(p)->fast_limit_bytes = 1;
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	assert_int_equal(atm_schedule_stats_get(s)->fast_peak_bytes, 0);
	assert_int_equal(atm_schedule_stats_get(s)->slow_peak_bytes, 164);
	const atm_event *k = atm_schedule_event(s, kernel_event(s, 0));
	for (int i = 0; i < 4; i++)
		assert_int_equal(k->cfg[i], ATM_LOC_SLOW);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);
}

/* chain -- x -> relu y1 -> relu y2 -> add(y1, y2) y3 -> relu y4, 64 bytes each:
 * fast bytes 128, 192, 256, 192 at nodes 0..3 */
static atm_graph *chain(void)
{
	atm_graph *g = NULL;
	int64_t d = 16;
	int32_t x, y1, y2, y3, y4, id;
	assert_int_equal(atm_graph_new(&g, "chain"), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "x", ATM_F32, 1, &d, ATM_KIND_INPUT, 3, &x), 0);
	assert_int_equal(atm_graph_add_tensor(g, "y1", ATM_F32, 1, &d, ATM_KIND_ACTIVATION, 3, &y1), 0);
	assert_int_equal(atm_graph_add_tensor(g, "y2", ATM_F32, 1, &d, ATM_KIND_ACTIVATION, 3, &y2), 0);
	assert_int_equal(atm_graph_add_tensor(g, "y3", ATM_F32, 1, &d, ATM_KIND_ACTIVATION, 3, &y3), 0);
	assert_int_equal(atm_graph_add_tensor(g, "y4", ATM_F32, 1, &d, ATM_KIND_ACTIVATION, 3, &y4), 0);
	assert_int_equal(atm_graph_add_node(g, "r1", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &y1, &id), 0);
	assert_int_equal(atm_graph_add_node(g, "r2", ATM_OP_RELU_FWD, NULL, 1, &y1, 1, &y2, &id), 0);
	assert_int_equal(atm_graph_add_node(g, "add", ATM_OP_ADD, NULL, 2, (int32_t[]){y1, y2}, 1, &y3,
	                                    &id), 0);
	assert_int_equal(atm_graph_add_node(g, "r4", ATM_OP_RELU_FWD, NULL, 1, &y3, 1, &y4, &id), 0);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	return g;
}

static void test_plan_limit_names_the_node(void **state)
{
	(void)state;
	atm_graph *g = chain();
	atm_plan *p = NULL;
	atm_schedule *s = NULL;
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_FAST), ATM_OK);
	atm_plan_info_of(p)->fast_limit_bytes = 200;
	expect_schedule_error(p, ATM_E_INFEASIBLE, "at node 2 ('add') tensor 'y3' (64 bytes)");
	expect_schedule_error(p, ATM_E_INFEASIBLE, "would hold 256 bytes, over the limit of 200");
	atm_plan_info_of(p)->fast_limit_bytes = 256;
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	assert_int_equal(atm_schedule_stats_get(s)->fast_peak_bytes, 256);
	assert_int_equal(atm_schedule_stats_get(s)->fast_peak_node, 2);
	assert_int_equal(atm_schedule_stats_get(s)->fast_arena_bytes, 256);
	assert_int_equal(atm_schedule_fast_bytes_at(s, 3), 192);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

static void test_plan_fragmentation_is_reported(void **state)
{
	(void)state;
	atm_graph *g = chain();
	atm_plan *p = NULL;
	/* y1 (64 B) and y2 sit at 64 and 128; with y1 in slow, y2 takes 64 and the freed
	 * x-slot... the layout below forces a hole: x slow, y2 slow, limit 128 */
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_FAST), ATM_OK);
	atm_plan_info_of(p)->fast_limit_bytes = 128;
	assert_int_equal(atm_plan_set_location(p, 0, ATM_LOC_SLOW), ATM_OK);
	/* x slow: y1 at 0, y2 at 64 (128 used), then y3 needs room while y1 and y2 live */
	expect_schedule_error(p, ATM_E_INFEASIBLE, "at node 2 ('add')");
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

static void test_plan_param_round_trip_through_fast(void **state)
{
	struct small *sm = *state;
	atm_plan *p = NULL;
	atm_schedule *s = NULL;
	assert_int_equal(atm_plan_new(&p, sm->g), ATM_OK);
	assert_int_equal(atm_plan_set_location(p, sm->w, ATM_LOC_SLOW), ATM_OK);
	atm_move in = {.tensor = sm->w, .to = ATM_LOC_FAST, .after = -1};
	assert_int_equal(atm_plan_add_move(p, &in), ATM_OK);
	/* SGD writes the fast copy, so the slow one is stale: the step must write it back */
	expect_schedule_error(p, ATM_E_INPUT, "tensor 'w' starts the step in slow memory but ends it");
	atm_move back = {.tensor = sm->w, .to = ATM_LOC_SLOW, .after = 7};
	assert_int_equal(atm_plan_add_move(p, &back), ATM_OK);
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	const atm_schedule_stats *st = atm_schedule_stats_get(s);
	assert_int_equal(st->n_moves_to_fast, 1);
	assert_int_equal(st->n_moves_to_slow, 1);
	assert_int_equal(st->bytes_to_fast, 48);
	assert_int_equal(st->bytes_to_slow, 48);
	assert_int_equal(atm_schedule_event(s, kernel_event(s, 0))->cfg[1], ATM_LOC_FAST);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);
}

static void test_plan_async_move_waits_for_reader(void **state)
{
	struct small *sm = *state;
	atm_plan *p = NULL;
	atm_schedule *s = NULL;
	assert_int_equal(atm_plan_new(&p, sm->g), ATM_OK);
	/* r is produced by node 1 and read by nodes 2 and 4 */
	atm_move m = {.tensor = sm->r, .to = ATM_LOC_SLOW, .after = 1, .until = 4, .async = true};
	assert_int_equal(atm_plan_add_move(p, &m), ATM_OK);
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	int32_t k1 = kernel_event(s, 1), k2 = kernel_event(s, 2);
	int32_t start = -1, wait = -1;
	for (int32_t i = 0; i < atm_schedule_n_events(s); i++) {
		const atm_event *e = atm_schedule_event(s, i);
		if (e->kind == ATM_EV_MOVE_START)
			start = i;
		if (e->kind == ATM_EV_MOVE_WAIT)
			wait = i;
	}
	assert_true(k1 < start && start < wait && wait < k2);
	/* after the wait the fast copy is gone: node 2 reads r from slow memory */
	assert_int_equal(atm_schedule_event(s, k2)->cfg[0], ATM_LOC_SLOW);
	assert_int_equal(atm_schedule_stats_get(s)->n_async_to_slow, 1);
	assert_int_equal(atm_schedule_stats_get(s)->bytes_async_to_slow, 12);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);
}

static void test_plan_rejects_impossible_moves(void **state)
{
	struct small *sm = *state;
	atm_plan *p = NULL;
	assert_int_equal(atm_plan_new(&p, sm->g), ATM_OK);
	atm_move dead = {.tensor = sm->y, .to = ATM_LOC_SLOW, .after = 3};
	assert_int_equal(atm_plan_add_move(p, &dead), ATM_OK);
	expect_schedule_error(p, ATM_E_INPUT, "tensor 'y' is not live after node 3");
	atm_plan_destroy(p);

	/* a parameter whose home is fast keeps its place all step */
	assert_int_equal(atm_plan_new(&p, sm->g), ATM_OK);
	atm_move out = {.tensor = sm->w, .to = ATM_LOC_SLOW, .after = 0};
	assert_int_equal(atm_plan_add_move(p, &out), ATM_OK);
	expect_schedule_error(p, ATM_E_INPUT, "tensor 'w' (param) starts every step in fast memory");
	atm_plan_destroy(p);

	assert_int_equal(atm_plan_new(&p, sm->g), ATM_OK);
	atm_move twice = {.tensor = sm->r, .to = ATM_LOC_FAST, .after = 1};
	assert_int_equal(atm_plan_add_move(p, &twice), ATM_OK);
	expect_schedule_error(p, ATM_E_INPUT, "tensor 'r' is already in fast memory");
	atm_plan_destroy(p);

	assert_int_equal(atm_plan_new(&p, sm->g), ATM_OK);
	atm_move a = {.tensor = sm->r, .to = ATM_LOC_SLOW, .after = 1, .until = 3, .async = true};
	atm_move b = {.tensor = sm->r, .to = ATM_LOC_FAST, .after = 1};
	assert_int_equal(atm_plan_add_move(p, &a), ATM_OK);
	assert_int_equal(atm_plan_add_move(p, &b), ATM_OK);
	expect_schedule_error(p, ATM_E_INPUT, "tensor 'r' is still moving (move 0)");
	/* bad fields are refused when added */
	atm_move bad = {.tensor = 99, .to = ATM_LOC_SLOW};
	assert_int_equal(atm_plan_add_move(p, &bad), ATM_E_INPUT);
	bad = (atm_move){.tensor = sm->r, .to = ATM_LOC_SLOW, .after = 12};
	assert_int_equal(atm_plan_add_move(p, &bad), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "valid: -1 (before the first node) to 7"));
	bad = (atm_move){.tensor = sm->r, .to = ATM_LOC_SLOW, .after = 3, .until = 2, .async = true};
	assert_int_equal(atm_plan_add_move(p, &bad), ATM_E_INPUT);
	assert_int_equal(atm_plan_set_location(p, sm->r, 7), ATM_E_INPUT);
	atm_plan_destroy(p);
}

static void test_plan_random_plans_are_valid_and_stable(void **state)
{
	struct small *sm = *state;
	for (uint64_t seed = 1; seed <= 50; seed++) {
		atm_plan *p = NULL, *q = NULL;
		atm_schedule *s = NULL;
		assert_int_equal(atm_plan_random(&p, sm->g, seed), ATM_OK);
		if (atm_schedule_new(&s, p) < 0)
			fail_msg("seed %llu: %s", (unsigned long long)seed, atm_errmsg());
		atm_schedule_destroy(s);
		assert_int_equal(atm_plan_random(&q, sm->g, seed), ATM_OK);
		char *a = NULL, *b = NULL;
		assert_int_equal(atm_plan_dump(p, &a), ATM_OK);
		assert_int_equal(atm_plan_dump(q, &b), ATM_OK);
		assert_string_equal(a, b);
		free(a);
		free(b);
		atm_plan_destroy(p);
		atm_plan_destroy(q);
	}
}

static void test_plan_json_round_trip(void **state)
{
	struct small *sm = *state;
	atm_plan *p = NULL, *q = NULL;
	char *a = NULL, *b = NULL;
	assert_int_equal(atm_plan_random(&p, sm->g, 7), ATM_OK);
	atm_plan_info_of(p)->predicted_runtime_s = 0.25;
	atm_plan_info_of(p)->fast_limit_bytes = 4096;
	assert_int_equal(atm_plan_dump(p, &a), ATM_OK);
	assert_int_equal(atm_plan_load_buffer(&q, sm->g, a, strlen(a), "p.json"), ATM_OK);
	assert_int_equal(atm_plan_dump(q, &b), ATM_OK);
	assert_string_equal(a, b);
	assert_int_equal(atm_plan_n_moves(q), atm_plan_n_moves(p));
	assert_int_equal(atm_plan_info_get(q)->fast_limit_bytes, 4096);
	/* no solver made a random plan: its name is null and reads back empty */
	assert_non_null(strstr(a, "\"solver\": {\"name\":null,"));
	assert_string_equal(atm_plan_info_get(q)->solver, "");
	free(a);
	free(b);
	atm_plan_destroy(p);
	atm_plan_destroy(q);
}

/* expect_load_error -- the plan text is refused with a message holding frag */
static void expect_load_error(const atm_graph *g, const char *text, const char *frag)
{
	atm_plan *p = (atm_plan *)1;
	assert_int_equal(atm_plan_load_buffer(&p, g, text, strlen(text), "bad.json"), ATM_E_INPUT);
	assert_null(p);
	if (!strstr(atm_errmsg(), frag) || strncmp(atm_errmsg(), "bad.json: ", 10))
		fail_msg("message '%s' lacks '%s'", atm_errmsg(), frag);
}

/* edit -- a's text with the first occurrence of from replaced by to (malloc'd) */
static char *edit(const char *a, const char *from, const char *to)
{
	const char *at = strstr(a, from);
	assert_non_null(at);
	char *out = malloc(strlen(a) + strlen(to) + 1);
	size_t head = (size_t)(at - a);
	memcpy(out, a, head);
	strcpy(out + head, to);
	strcat(out, at + strlen(from));
	return out;
}

/* test_plan_json_solver_name -- the solver that made a plan is kept through its file; a plan
 * written before solvers had names (no "name") loads with none; a name that is not a string
 * or too long for one is refused */
static void test_plan_json_solver_name(void **state)
{
	struct small *sm = *state;
	atm_plan *p = NULL, *q = NULL;
	char *a = NULL, *b = NULL, *c;
	assert_int_equal(atm_plan_random(&p, sm->g, 5), ATM_OK);
	snprintf(atm_plan_info_of(p)->solver, sizeof atm_plan_info_of(p)->solver, "cbc");
	snprintf(atm_plan_info_of(p)->solver_status, sizeof atm_plan_info_of(p)->solver_status,
	         "optimal");
	assert_int_equal(atm_plan_dump(p, &a), ATM_OK);
	assert_non_null(strstr(a, "\"solver\": {\"name\":\"cbc\",\"status\":\"optimal\""));
	assert_int_equal(atm_plan_load_buffer(&q, sm->g, a, strlen(a), "p.json"), ATM_OK);
	assert_string_equal(atm_plan_info_get(q)->solver, "cbc");
	assert_string_equal(atm_plan_info_get(q)->solver_status, "optimal");
	assert_int_equal(atm_plan_dump(q, &b), ATM_OK);
	assert_string_equal(a, b);
	atm_plan_destroy(q);
	q = NULL;
	/* as written before: the key absent */
	c = edit(a, "\"name\":\"cbc\",", "");
	assert_int_equal(atm_plan_load_buffer(&q, sm->g, c, strlen(c), "old.json"), ATM_OK);
	assert_string_equal(atm_plan_info_get(q)->solver, "");
	assert_string_equal(atm_plan_info_get(q)->solver_status, "optimal");
	atm_plan_destroy(q);
	free(c);
	c = edit(a, "\"name\":\"cbc\"", "\"name\":3");
	expect_load_error(sm->g, c, "solver: \"name\" must be a string");
	free(c);
	c = edit(a, "\"name\":\"cbc\"", "\"name\":\"a-solver-with-a-long-name\"");
	expect_load_error(sm->g, c, "too long");
	free(c);
	free(a);
	free(b);
	atm_plan_destroy(p);
}

static void test_plan_json_rejects_mismatches(void **state)
{
	struct small *sm = *state;
	atm_plan *p = NULL;
	char *a = NULL, *b;
	char digest[17];
	atm_graph_digest(sm->g, digest);
	assert_int_equal(atm_plan_uniform(&p, sm->g, ATM_LOC_SLOW), ATM_OK);
	assert_int_equal(atm_plan_dump(p, &a), ATM_OK);
	expect_load_error(sm->g, "{\"format\": ", "JSON syntax error");
	expect_load_error(sm->g, "[]", "the top level must be an object");
	b = edit(a, "\"name\":\"small\"", "\"name\":\"other\"");
	expect_load_error(sm->g, b, "the plan is for graph 'other', not 'small'");
	free(b);
	b = edit(a, digest, "0000000000000000");
	expect_load_error(sm->g, b, "another version of graph 'small'");
	free(b);
	b = edit(a, "\"location\":\"slow\"", "\"location\":\"warm\"");
	expect_load_error(sm->g, b, "tensors[0]: location 'warm' is not valid (valid: fast, slow)");
	free(b);
	b = edit(a, "\"formulation\"", "\"formulatoin\"");
	expect_load_error(sm->g, b, "unknown key \"formulatoin\"");
	free(b);
	b = edit(a, "{\"name\":\"x\",\"location\":\"slow\"},", "");
	expect_load_error(sm->g, b, "\"tensors\" lists 11 tensors but graph 'small' has 12");
	free(b);
	/* moves refused one by one, then by the rules of the whole step, the file named too: a
	 * dead tensor moved, a tensor that does not come back to where it started */
	static const char *const moves[][2] = {
		{"{\"tensor\":\"zz\",\"to\":\"fast\",\"after\":0,\"mode\":\"sync\"}",
		 "moves[0]: graph 'small' has no tensor 'zz'"},
		{"{\"tensor\":\"r\",\"to\":\"fast\",\"after\":2,\"mode\":\"async\"}",
		 "moves[0]: missing \"until\""},
		{"{\"tensor\":\"y\",\"to\":\"fast\",\"after\":3,\"mode\":\"sync\"}",
		 "move 0: tensor 'y' is not live after node 3"},
		{"{\"tensor\":\"w\",\"to\":\"fast\",\"after\":0,\"mode\":\"sync\"}",
		 "tensor 'w' starts the step in slow memory but ends it"},
	};
	for (size_t i = 0; i < sizeof moves / sizeof moves[0]; i++) {
		char list[160];
		snprintf(list, sizeof list, "\"moves\": [%s]", moves[i][0]);
		b = edit(a, "\"moves\": []", list);
		expect_load_error(sm->g, b, moves[i][1]);
		free(b);
	}
	free(a);
	atm_plan_destroy(p);
}

/* test_plan_algorithms -- a node's algorithm is kept, saved by node name, read back, counted
 * against another plan's, and a bad one refused */
static void test_plan_algorithms(void **state)
{
	struct small *sm = *state;
	atm_plan *p = NULL, *q = NULL;
	char *a = NULL, *b = NULL;
	assert_int_equal(atm_plan_uniform(&p, sm->g, ATM_LOC_FAST), ATM_OK);
	assert_int_equal(atm_plan_algo(p, 1), 0);
	assert_int_equal(atm_plan_dump(p, &a), ATM_OK);
	assert_null(strstr(a, "algorithms")); /* default algorithms: nothing written */
	free(a);
	assert_int_equal(atm_plan_set_algo(p, 1, 3), ATM_OK);
	assert_int_equal(atm_plan_set_algo(p, 1, ATM_MAX_ALGOS), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "is not valid"));
	assert_int_equal(atm_plan_set_algo(p, atm_graph_n_nodes(sm->g), 1), ATM_E_INPUT);
	assert_int_equal(atm_plan_algo(p, 1), 3);
	assert_int_equal(atm_plan_dump(p, &a), ATM_OK);
	assert_int_equal(atm_plan_load_buffer(&q, sm->g, a, strlen(a), "p.json"), ATM_OK);
	assert_int_equal(atm_plan_algo(q, 1), 3);
	assert_int_equal(atm_plan_algo(q, 0), 0);
	assert_int_equal(atm_plan_algos_differ(p, q), 0);
	assert_int_equal(atm_plan_set_algo(q, 0, 2), ATM_OK);
	assert_int_equal(atm_plan_set_algo(q, 1, 0), ATM_OK);
	assert_int_equal(atm_plan_algos_differ(p, q), 2);
	assert_int_equal(atm_plan_algos_differ(q, p), 2);
	assert_int_equal(atm_plan_set_algo(q, 0, 0), ATM_OK);
	assert_int_equal(atm_plan_set_algo(q, 1, 3), ATM_OK);
	assert_int_equal(atm_plan_dump(q, &b), ATM_OK);
	assert_string_equal(a, b);
	char node[80], bad[96];
	snprintf(node, sizeof node, "\"%s\":3", atm_graph_node(sm->g, 1)->name);
	free(b);
	b = edit(a, node, "\"no_such_node\":3");
	expect_load_error(sm->g, b, "algorithms: graph 'small' has no node 'no_such_node'");
	free(b);
	snprintf(bad, sizeof bad, "\"%s\":99", atm_graph_node(sm->g, 1)->name);
	b = edit(a, node, bad);
	expect_load_error(sm->g, b, "algorithm 99 is not valid");
	free(b);
	free(a);
	atm_plan_destroy(p);
	atm_plan_destroy(q);
}

/* test_plan_schedule_setup -- the persistent tensors are set up before the first step, each
 * once, in the tier the plan starts it in; nothing else is */
static void test_plan_schedule_setup(void **state)
{
	struct small *sm = *state;
	for (unsigned loc = ATM_LOC_FAST; loc <= ATM_LOC_SLOW; loc++) {
		atm_plan *p = NULL;
		atm_schedule *s = NULL;
		bool seen[16] = {false};
		int64_t bytes = 0;
		assert_int_equal(atm_plan_uniform(&p, sm->g, loc), ATM_OK);
		assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
		assert_int_equal(atm_schedule_n_setup(s), 5);
		for (int32_t i = 0; i < atm_schedule_n_setup(s); i++) {
			const atm_event *ev = atm_schedule_setup(s, i);
			assert_non_null(ev);
			assert_int_equal(ev->kind, ATM_EV_ALLOC);
			assert_int_equal(ev->node, -1);
			assert_int_equal(ev->loc, loc);
			assert_true(atm_tensor_is_persistent(atm_graph_tensor(sm->g, ev->tensor)));
			assert_false(seen[ev->tensor]);
			seen[ev->tensor] = true;
			if (loc == ATM_LOC_FAST)
				assert_int_equal(ev->offset % ATM_ARENA_ALIGN, 0);
			bytes += atm_graph_tensor(sm->g, ev->tensor)->bytes;
		}
		assert_int_equal(bytes, 92);
		const atm_schedule_stats *st = atm_schedule_stats_get(s);
		assert_int_equal(loc == ATM_LOC_FAST ? st->persistent_fast_bytes : st->persistent_slow_bytes,
		                 92);
		assert_null(atm_schedule_setup(s, -1));
		assert_null(atm_schedule_setup(s, atm_schedule_n_setup(s)));
		atm_schedule_destroy(s);
		atm_plan_destroy(p);
	}
}

/* test_plan_save_round_trip -- a saved plan loads back as the same plan; a folder that takes
 * no file is ATM_E_IO naming it, and nothing is left behind */
static void test_plan_save_round_trip(void **state)
{
	struct small *sm = *state;
	char dir[] = "/tmp/atm-plan-XXXXXX", path[64], *a = NULL, *b = NULL;
	atm_plan *p = NULL, *q = NULL;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/p.json", dir);
	assert_int_equal(atm_plan_random(&p, sm->g, 3), ATM_OK);
	atm_plan_info_of(p)->ratio_slow = 4;
	atm_plan_info_of(p)->ratio_fast = 1;
	assert_int_equal(atm_plan_save(p, path), ATM_OK);
	assert_int_equal(atm_plan_load(&q, sm->g, path), ATM_OK);
	assert_int_equal(atm_plan_dump(p, &a), ATM_OK);
	assert_int_equal(atm_plan_dump(q, &b), ATM_OK);
	assert_string_equal(a, b);
	assert_true(atm_plan_info_get(q)->ratio_slow == 4);
	/* saving again replaces the file whole */
	atm_plan_info_of(p)->fast_limit_bytes = 4096;
	assert_int_equal(atm_plan_save(p, path), ATM_OK);
	atm_plan_destroy(q);
	assert_int_equal(atm_plan_load(&q, sm->g, path), ATM_OK);
	assert_int_equal(atm_plan_info_get(q)->fast_limit_bytes, 4096);
	assert_int_equal(atm_plan_save(p, "/nonexistent-atm/p.json"), ATM_E_IO);
	assert_non_null(strstr(atm_errmsg(), "/nonexistent-atm"));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
	free(a);
	free(b);
	atm_plan_destroy(p);
	atm_plan_destroy(q);
}

/* A plan to write whole, and the text it must give. */
struct dump_case {
	const atm_plan *p;
	const char *want;
};

/* dump_once -- one dump, the whole text or nothing */
static atm_status dump_once(void *arg)
{
	const struct dump_case *c = arg;
	char *text = (char *)1;
	atm_status rc = atm_plan_dump(c->p, &text);
	if (rc < 0)
		assert_null(text);
	else
		assert_string_equal(text, c->want);
	free(rc < 0 ? NULL : text);
	return rc;
}

/* test_plan_json_allocation_failures -- every allocation of a plan's dump failed in turn: each
 * is ATM_E_NOMEM with no text and (ASan) nothing leaked, never a text with a field missing */
static void test_plan_json_allocation_failures(void **state)
{
	struct small *sm = *state;
	atm_plan *p = NULL;
	char *want = NULL;
	assert_int_equal(atm_plan_random(&p, sm->g, 11), ATM_OK);
	atm_plan_info *info = atm_plan_info_of(p);
	info->n_rounds = 2;
	info->ratio_slow = 1;
	info->ratio_fast = 1;
	assert_int_equal(atm_plan_set_algo(p, 0, 2), ATM_OK);
	assert_true(atm_plan_n_moves(p) > 0);
	assert_int_equal(atm_plan_dump(p, &want), ATM_OK);
	struct dump_case c = {p, want};
	assert_true(alloc_fail_sweep("atm_plan_dump", dump_once, &c) > 10);
	free(want);
	atm_plan_destroy(p);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, small_setup, small_teardown)
	const struct CMUnitTest tests[] = {
		T(test_plan_all_fast_matches_liveness),
		T(test_plan_algorithms),
		T(test_plan_all_slow),
		cmocka_unit_test(test_plan_limit_names_the_node),
		cmocka_unit_test(test_plan_fragmentation_is_reported),
		T(test_plan_param_round_trip_through_fast),
		T(test_plan_async_move_waits_for_reader),
		T(test_plan_rejects_impossible_moves),
		T(test_plan_random_plans_are_valid_and_stable),
		T(test_plan_json_round_trip),
		T(test_plan_json_solver_name),
		T(test_plan_json_rejects_mismatches),
		T(test_plan_schedule_setup),
		T(test_plan_save_round_trip),
		T(test_plan_json_allocation_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
