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
#include "atm_formats.h"

/* every allocation of core and the formats (the test links with --wrap=malloc and the others) */
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

/* the emulated waits of a step, as the executor's emulation waits them: slow time less fast time
 * of each kernel's slow bytes (read 1, write 0.5, fast 2 GB/s: 64-byte tensors) */
static void test_plan_emulated_wait(void **state)
{
	(void)state;
	atm_graph *g = chain();
	atm_plan *p = NULL;
	atm_schedule *s = NULL;
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_SLOW), ATM_OK);
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	/* r1, r2, r4: 64 read, 64 written: 64 + 128 - 64 ns; add: 128 read, 64 written */
	double want = 3 * 128e-9 + (128e-9 + 128e-9 - 96e-9);
	assert_float_equal(atm_schedule_emulated_wait_s(s, 1, 0.5, 2), want, 1e-15);
	assert_float_equal(atm_schedule_emulated_wait_s(s, 0, 0.5, 2), 0, 0);
	/* a tier no slower than the fast one waits nothing */
	assert_float_equal(atm_schedule_emulated_wait_s(s, 4, 4, 2), 0, 0);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_FAST), ATM_OK);
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	assert_float_equal(atm_schedule_emulated_wait_s(s, 1, 0.5, 2), 0, 0);
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
	atm_plan_info_of(p)->predicted_recompute_s = 0.0125;
	atm_plan_info_of(p)->fast_limit_bytes = 4096;
	assert_int_equal(atm_plan_dump(p, &a), ATM_OK);
	assert_int_equal(atm_plan_load_buffer(&q, sm->g, a, strlen(a), "p.json"), ATM_OK);
	assert_int_equal(atm_plan_dump(q, &b), ATM_OK);
	assert_string_equal(a, b);
	assert_int_equal(atm_plan_n_moves(q), atm_plan_n_moves(p));
	assert_int_equal(atm_plan_info_get(q)->fast_limit_bytes, 4096);
	assert_true(atm_plan_info_get(q)->predicted_recompute_s == 0.0125);
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

/* test_plan_json_predicted_recompute -- the recomputations' share of the prediction: written
 * where there is one, a negative time refused by name, and unknown in plans without the key
 * (written before plans recorded it) */
static void test_plan_json_predicted_recompute(void **state)
{
	struct small *sm = *state;
	atm_plan *p = NULL, *o = NULL;
	char *a = NULL;
	assert_int_equal(atm_plan_random(&p, sm->g, 7), ATM_OK);
	atm_plan_info_of(p)->predicted_runtime_s = 0.25;
	atm_plan_info_of(p)->predicted_recompute_s = 0.0125;
	assert_int_equal(atm_plan_dump(p, &a), ATM_OK);
	/* a negative time is refused by name; without the key (older plans) it is unknown */
	char *c = edit(a, "\"predicted_recompute_s\": 0.0125", "\"predicted_recompute_s\": -1");
	expect_load_error(sm->g, c, "\"predicted_recompute_s\" must be a number of seconds >= 0");
	free(c);
	c = edit(a, ",\n  \"predicted_recompute_s\": 0.0125", "");
	assert_int_equal(atm_plan_load_buffer(&o, sm->g, c, strlen(c), "old.json"), ATM_OK);
	assert_true(atm_plan_info_get(o)->predicted_recompute_s < 0);
	atm_plan_destroy(o);
	free(c);
	free(a);
	atm_plan_destroy(p);
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

/* ---------------------------------------------------------------- recomputations */

/* rc_graph -- x -> a = relu(x) -> b = relu(a) -> c = relu(b); d = add(b, c); e = add(a, d),
 * 64 bytes each: all fast, node 3 holds x, a, b, c, d (320 bytes); a dropped after node 1 and
 * made again before node 4 leaves 256 */
static atm_graph *rc_graph(void)
{
	atm_graph *g = NULL;
	int64_t d = 16;
	int32_t x, a, b, c, dd, e, id;
	assert_int_equal(atm_graph_new(&g, "rc"), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "x", ATM_F32, 1, &d, ATM_KIND_INPUT, 3, &x), 0);
	assert_int_equal(atm_graph_add_tensor(g, "a", ATM_F32, 1, &d, ATM_KIND_ACTIVATION, 3, &a), 0);
	assert_int_equal(atm_graph_add_tensor(g, "b", ATM_F32, 1, &d, ATM_KIND_ACTIVATION, 3, &b), 0);
	assert_int_equal(atm_graph_add_tensor(g, "c", ATM_F32, 1, &d, ATM_KIND_ACTIVATION, 3, &c), 0);
	assert_int_equal(atm_graph_add_tensor(g, "d", ATM_F32, 1, &d, ATM_KIND_ACTIVATION, 3, &dd), 0);
	assert_int_equal(atm_graph_add_tensor(g, "e", ATM_F32, 1, &d, ATM_KIND_ACTIVATION, 3, &e), 0);
	assert_int_equal(atm_graph_add_node(g, "ra", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &a, &id), 0);
	assert_int_equal(atm_graph_add_node(g, "rb", ATM_OP_RELU_FWD, NULL, 1, &a, 1, &b, &id), 0);
	assert_int_equal(atm_graph_add_node(g, "rc", ATM_OP_RELU_FWD, NULL, 1, &b, 1, &c, &id), 0);
	assert_int_equal(atm_graph_add_node(g, "add1", ATM_OP_ADD, NULL, 2, (int32_t[]){b, c}, 1, &dd,
	                                    &id), 0);
	assert_int_equal(atm_graph_add_node(g, "add2", ATM_OP_ADD, NULL, 2, (int32_t[]){a, dd}, 1, &e,
	                                    &id), 0);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	return g;
}

/* rc_plan -- all fast, with the recomputations listed as {tensor, drop_after, before} */
static atm_plan *rc_plan(const atm_graph *g, int n, const atm_recompute *rs)
{
	atm_plan *p = NULL;
	assert_int_equal(atm_plan_uniform(&p, g, ATM_LOC_FAST), ATM_OK);
	for (int i = 0; i < n; i++)
		if (atm_plan_add_recompute(p, &rs[i]) < 0)
			fail_msg("recomputation %d: %s", i, atm_errmsg());
	return p;
}

/* find_event -- index of the first event from `from` on of kind for tensor t (-1: any), or -1 */
static int32_t find_event(const atm_schedule *s, int32_t from, atm_event_kind kind, int32_t t)
{
	for (int32_t i = from; i < atm_schedule_n_events(s); i++) {
		const atm_event *ev = atm_schedule_event(s, i);
		if (ev->kind == kind && (t < 0 || ev->tensor == t))
			return i;
	}
	return -1;
}

/* test_plan_recompute_schedule -- a recomputation frees every copy after its drop and makes the
 * tensor again, in fast memory, right before the node that reads it: the events in order, the
 * node's inputs where they are, a lower fast peak that a tighter limit then allows, the stats */
static void test_plan_recompute_schedule(void **state)
{
	(void)state;
	atm_graph *g = rc_graph();
	atm_schedule *s = NULL;
	atm_plan *p = rc_plan(g, 0, NULL);
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	assert_int_equal(atm_schedule_stats_get(s)->fast_peak_bytes, 320);
	assert_int_equal(atm_schedule_stats_get(s)->n_recomputes, 0);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);

	p = rc_plan(g, 1, &(atm_recompute){.tensor = 1, .drop_after = 1, .before = 4});
	assert_int_equal(atm_plan_n_recomputes(p), 1);
	assert_int_equal(atm_plan_recompute(p, 0)->before, 4);
	assert_null(atm_plan_recompute(p, 1));
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	int32_t k1 = kernel_event(s, 1), k2 = kernel_event(s, 2), k4 = kernel_event(s, 4);
	int32_t drop = find_event(s, k1, ATM_EV_FREE, 1);
	assert_true(k1 < drop && drop < k2);
	assert_int_equal(atm_schedule_event(s, drop)->loc, ATM_LOC_FAST);
	assert_int_equal(atm_schedule_event(s, drop)->node, 1);
	int32_t alloc = find_event(s, k2, ATM_EV_ALLOC, 1), rec = find_event(s, 0, ATM_EV_RECOMPUTE, -1);
	/* after node 3's kernel, before node 4's (whose output's ALLOC comes between) */
	assert_true(kernel_event(s, 3) < alloc && alloc + 1 == rec && rec + 2 == k4);
	assert_int_equal(find_event(s, rec, ATM_EV_ALLOC, -1), rec + 1);
	const atm_event *ev = atm_schedule_event(s, alloc);
	assert_int_equal(ev->loc, ATM_LOC_FAST);
	assert_int_equal(ev->node, 3);
	ev = atm_schedule_event(s, rec);
	assert_int_equal(ev->node, 0); /* the node that made it */
	assert_int_equal(ev->tensor, 1);
	assert_int_equal(ev->recompute, 0);
	assert_int_equal(ev->move, -1);
	assert_int_equal(ev->workspace_bytes, 0);
	assert_int_equal(ev->cfg[0], ATM_LOC_FAST);
	assert_int_equal(ev->cfg[1], ATM_LOC_FAST);
	assert_int_equal(atm_schedule_event(s, k4)->cfg[0], ATM_LOC_FAST);
	/* the remade copy is freed after its last use as any copy is; every other event names
	 * no recomputation */
	assert_true(find_event(s, k4, ATM_EV_FREE, 1) > k4);
	assert_int_equal(find_event(s, rec + 1, ATM_EV_RECOMPUTE, -1), -1);
	for (int32_t i = 0; i < atm_schedule_n_events(s); i++)
		if (i != rec)
			assert_int_equal(atm_schedule_event(s, i)->recompute, -1);
	for (int32_t i = 0; i < atm_schedule_n_setup(s); i++)
		assert_int_equal(atm_schedule_setup(s, i)->recompute, -1);
	const atm_schedule_stats *st = atm_schedule_stats_get(s);
	assert_int_equal(st->fast_peak_bytes, 256);
	assert_int_equal(st->n_recomputes, 1);
	assert_int_equal(st->bytes_recomputed, 64);
	assert_int_equal(atm_schedule_fast_bytes_at(s, 3), 256);
	assert_int_equal(atm_schedule_fast_bytes_at(s, 4), 256);
	atm_schedule_destroy(s);
	/* the limit the drop makes room for */
	atm_plan_info_of(p)->fast_limit_bytes = 256;
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	atm_schedule_destroy(s);
	atm_plan_info_of(p)->fast_limit_bytes = 250;
	expect_schedule_error(p, ATM_E_INFEASIBLE, "over the limit of 250");
	/* an input in slow memory is read there; the node's workspace is taken again */
	atm_plan_info_of(p)->fast_limit_bytes = 0;
	assert_int_equal(atm_plan_set_location(p, 0, ATM_LOC_SLOW), ATM_OK);
	assert_int_equal(atm_plan_set_workspace(p, 0, 100), ATM_OK);
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	ev = atm_schedule_event(s, find_event(s, 0, ATM_EV_RECOMPUTE, -1));
	assert_int_equal(ev->cfg[0], ATM_LOC_SLOW);
	assert_int_equal(ev->cfg[1], ATM_LOC_FAST);
	assert_int_equal(ev->workspace_bytes, 100);
	assert_int_equal(ev->offset % ATM_ARENA_ALIGN, 0);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);

	/* one tensor dropped twice, one drop after the other's use; and one dropped right after its
	 * node ran */
	p = rc_plan(g, 3, (atm_recompute[]){{1, 0, 1}, {1, 1, 4}, {3, 2, 3}});
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	assert_int_equal(atm_schedule_stats_get(s)->n_recomputes, 3);
	assert_int_equal(atm_schedule_stats_get(s)->bytes_recomputed, 192);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

/* sgd_graph -- y = fc(x, w, b) read by relu1 (node 1) and, after w's update (node 3), by relu2
 * (node 5): y made again there would see the new w */
static atm_graph *sgd_graph(void)
{
	atm_graph *g = NULL;
	int32_t id;
	assert_int_equal(atm_graph_new(&g, "sgd"), ATM_OK);
	int32_t x = small_tensor(g, "x", 2, 1, 4, ATM_KIND_INPUT);
	int32_t w = small_tensor(g, "w", 2, 3, 4, ATM_KIND_PARAM);
	int32_t b = small_tensor(g, "b", 1, 3, 0, ATM_KIND_PARAM);
	int32_t y = small_tensor(g, "y", 2, 1, 3, ATM_KIND_ACTIVATION);
	int32_t r = small_tensor(g, "r", 2, 1, 3, ATM_KIND_ACTIVATION);
	int32_t r2 = small_tensor(g, "r2", 2, 1, 3, ATM_KIND_ACTIVATION);
	int32_t dw = small_tensor(g, "dw", 2, 3, 4, ATM_KIND_GRAD);
	int32_t db = small_tensor(g, "db", 1, 3, 0, ATM_KIND_GRAD);
	atm_attrs lr = {.lr = 0.1f};
	assert_int_equal(atm_graph_add_node(g, "fc", ATM_OP_IP_FWD, NULL, 3, (int32_t[]){x, w, b}, 1,
	                                    &y, &id), 0);
	assert_int_equal(atm_graph_add_node(g, "relu1", ATM_OP_RELU_FWD, NULL, 1, &y, 1, &r, &id), 0);
	assert_int_equal(atm_graph_add_node(g, "fc.bwd_w", ATM_OP_IP_BWD_WEIGHTS, NULL, 2,
	                                    (int32_t[]){x, r}, 2, (int32_t[]){dw, db}, &id), 0);
	assert_int_equal(atm_graph_add_node(g, "sgd.w", ATM_OP_SGD, &lr, 2, (int32_t[]){w, dw}, 0,
	                                    NULL, &id), 0);
	assert_int_equal(atm_graph_add_node(g, "sgd.b", ATM_OP_SGD, &lr, 2, (int32_t[]){b, db}, 0,
	                                    NULL, &id), 0);
	assert_int_equal(atm_graph_add_node(g, "relu2", ATM_OP_RELU_FWD, NULL, 1, &y, 1, &r2, &id), 0);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	return g;
}

/* expect_recompute_error -- the plan of g with recomputations rs is refused with frag */
static void expect_recompute_error(const atm_graph *g, int n, const atm_recompute *rs,
                                   const char *frag)
{
	atm_plan *p = rc_plan(g, n, rs);
	expect_schedule_error(p, ATM_E_INPUT, frag);
	atm_plan_destroy(p);
}

/* test_plan_recompute_refusals -- every rule a recomputation breaks is named, with the
 * recomputation, the tensor and the nodes */
static void test_plan_recompute_refusals(void **state)
{
	struct small *sm = *state;
	atm_graph *g = rc_graph();
	atm_plan *p = NULL;
	const char *why = NULL;
	/* eligibility, and fields out of range, are refused when added */
	assert_false(atm_recompute_eligible(sm->g, sm->x, &why));
	assert_non_null(strstr(why, "only activations"));
	assert_true(atm_recompute_eligible(sm->g, sm->probs, &why)); /* beside the loss */
	assert_null(why);
	assert_false(atm_recompute_eligible(sm->g, sm->dr, NULL));
	assert_true(atm_recompute_eligible(sm->g, sm->r, &why));
	assert_null(why);
	assert_int_equal(atm_recompute_producer(sm->g, sm->r), 1);
	assert_int_equal(atm_recompute_producer(sm->g, sm->w), -1);
	assert_int_equal(atm_recompute_producer(sm->g, sm->probs), 2);
	assert_int_equal(atm_plan_new(&p, sm->g), ATM_OK);
	assert_int_equal(atm_plan_add_recompute(p, &(atm_recompute){sm->dr, 3, 4}), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "recomputation 0: tensor 'dr' (grad) may not be "
	                                     "recomputed: only activations"));
	assert_int_equal(atm_plan_add_recompute(p, &(atm_recompute){99, 2, 3}), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "tensor 99 does not exist (valid: 0 to 11)"));
	assert_int_equal(atm_plan_add_recompute(p, &(atm_recompute){sm->r, -1, 4}), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "'drop_after' is node -1; valid: 0 to 7"));
	assert_int_equal(atm_plan_add_recompute(p, &(atm_recompute){sm->r, 2, 8}), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "'before' is node 8; valid: 0 to 7"));
	assert_int_equal(atm_plan_n_recomputes(p), 0);
	atm_plan_destroy(p);

	/* the schedule's rules */
	expect_recompute_error(g, 1, &(atm_recompute){1, 4, 4},
	                       "recomputation 0 of 'a': it is dropped after node 4 ('add2') and made "
	                       "again before node 4 ('add2'); the drop must come first");
	expect_recompute_error(g, 1, &(atm_recompute){3, 1, 3},
	                       "recomputation 0 of 'c': it is dropped after node 1 ('rb'), before node "
	                       "2 ('rc') produces it");
	expect_recompute_error(g, 1, &(atm_recompute){2, 2, 4},
	                       "recomputation 0 of 'b': the tensor is not live at node 4 ('add2') (it "
	                       "lives from node 1 to node 3), so it is made again there only as a "
	                       "link, for the recomputations before node 4 that read it; a link's "
	                       "drop_after must be 3, its last use, where it is freed (not 2)");
	expect_recompute_error(g, 1, &(atm_recompute){1, 1, 3},
	                       "recomputation 0 of 'a': node 3 ('add1') does not read it");
	expect_recompute_error(g, 1, &(atm_recompute){2, 1, 3},
	                       "recomputation 0 of 'b': node 2 ('rc') uses it while it is dropped "
	                       "(after node 1, until before node 3)");
	expect_recompute_error(g, 2, (atm_recompute[]){{1, 1, 4}, {1, 1, 4}},
	                       "recomputations 0 and 1 of 'a' overlap");
	/* a move of the tensor while it is dropped (one after its remaking is fine) */
	p = rc_plan(g, 1, &(atm_recompute){1, 1, 4});
	assert_int_equal(atm_plan_add_move(p, &(atm_move){.tensor = 1, .to = ATM_LOC_SLOW, .after = 2}),
	                 ATM_OK);
	expect_schedule_error(p, ATM_E_INPUT, "recomputation 0 of 'a': move 0 moves it after node 2 "
	                      "('rc'), while it is dropped (after node 1, until before node 4)");
	atm_plan_destroy(p);
	p = rc_plan(g, 1, &(atm_recompute){1, 1, 4});
	assert_int_equal(atm_plan_add_move(p, &(atm_move){.tensor = 1, .to = ATM_LOC_SLOW, .after = 0}),
	                 ATM_OK);
	atm_schedule *s = NULL;
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK); /* dropped from slow memory, remade fast */
	atm_schedule_destroy(s);
	atm_plan_destroy(p);

	/* the node's inputs before `before`: one dead, one another recomputation dropped, one
	 * updated in place since the node ran */
	expect_recompute_error(sm->g, 1, &(atm_recompute){sm->r, 2, 4},
	                       "recomputation 0 of 'r': input 'y' of node 'relu' is not available "
	                       "before node 4 ('relu.bwd') (its last use is node 1");
	expect_recompute_error(g, 2, (atm_recompute[]){{1, 1, 4}, {2, 2, 3}},
	                       "recomputation 1 of 'b': input 'a' of node 'rb' is not available before "
	                       "node 3 ('add1') (recomputation 0 dropped it after node 1");
	atm_graph *sg = sgd_graph();
	p = rc_plan(sg, 1, &(atm_recompute){3, 0, 1}); /* before the update: fine */
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);
	expect_recompute_error(sg, 1, &(atm_recompute){3, 1, 5},
	                       "recomputation 0 of 'y': input 'w' of node 'fc' is not available before "
	                       "node 5 ('relu2') (node 3 ('sgd.w') wrote it after node 0 ran)");
	atm_graph_destroy(sg);
	atm_graph_destroy(g);
}

/* bn_graph -- c = relu(x); y, mean, var = bn(c); r = relu(y); then s = relu(r); u = relu(s);
 * v = add(r, u); w = add(c, v), where y's last use is relu (node 2): made again later, it is a
 * link; or, late, z = add(y, r); z2 = add(c, z), where y lives to node 3. Every tensor is
 * [1, 64] or [64]: 256 bytes. */
static atm_graph *bn_graph(bool late)
{
	atm_graph *g = NULL;
	int64_t d[2] = {1, 64}, ch = 64;
	int32_t x, gm, bt, c, y, mean, var, r, id;
	assert_int_equal(atm_graph_new(&g, late ? "bn-late" : "bn"), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "x", ATM_F32, 2, d, ATM_KIND_INPUT, 3, &x), 0);
	assert_int_equal(atm_graph_add_tensor(g, "gamma", ATM_F32, 1, &ch, ATM_KIND_PARAM, 3, &gm), 0);
	assert_int_equal(atm_graph_add_tensor(g, "beta", ATM_F32, 1, &ch, ATM_KIND_PARAM, 3, &bt), 0);
	const char *names[] = {"c", "y", "r", "s", "u", "v", "w"};
	const char *late_names[] = {"c", "y", "r", "z", "z2"};
	int32_t t[7];
	for (int i = 0; i < (late ? 5 : 7); i++)
		assert_int_equal(atm_graph_add_tensor(g, late ? late_names[i] : names[i], ATM_F32, 2, d,
		                                      ATM_KIND_ACTIVATION, 3, &t[i]), 0);
	c = t[0];
	y = t[1];
	r = t[2];
	assert_int_equal(atm_graph_add_tensor(g, "mean", ATM_F32, 1, &ch, ATM_KIND_ACTIVATION, 3,
	                                      &mean), 0);
	assert_int_equal(atm_graph_add_tensor(g, "var", ATM_F32, 1, &ch, ATM_KIND_ACTIVATION, 3,
	                                      &var), 0);
	atm_attrs eps = {.epsilon = 1e-5f};
	assert_int_equal(atm_graph_add_node(g, "pre", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &c, &id), 0);
	assert_int_equal(atm_graph_add_node(g, "bn", ATM_OP_BN_FWD, &eps, 3, (int32_t[]){c, gm, bt}, 3,
	                                    (int32_t[]){y, mean, var}, &id), 0);
	assert_int_equal(atm_graph_add_node(g, "relu", ATM_OP_RELU_FWD, NULL, 1, &y, 1, &r, &id), 0);
	if (late) {
		assert_int_equal(atm_graph_add_node(g, "add3", ATM_OP_ADD, NULL, 2, (int32_t[]){y, r}, 1,
		                                    &t[3], &id), 0);
		assert_int_equal(atm_graph_add_node(g, "add4", ATM_OP_ADD, NULL, 2, (int32_t[]){c, t[3]},
		                                    1, &t[4], &id), 0);
	} else {
		assert_int_equal(atm_graph_add_node(g, "relu2", ATM_OP_RELU_FWD, NULL, 1, &r, 1, &t[3],
		                                    &id), 0);
		assert_int_equal(atm_graph_add_node(g, "relu3", ATM_OP_RELU_FWD, NULL, 1, &t[3], 1, &t[4],
		                                    &id), 0);
		assert_int_equal(atm_graph_add_node(g, "add1", ATM_OP_ADD, NULL, 2, (int32_t[]){r, t[4]},
		                                    1, &t[5], &id), 0);
		assert_int_equal(atm_graph_add_node(g, "add2", ATM_OP_ADD, NULL, 2, (int32_t[]){c, t[5]},
		                                    1, &t[6], &id), 0);
	}
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	return g;
}

/* tensor_id -- g's tensor called name */
static int32_t tensor_id(const atm_graph *g, const char *name)
{
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++)
		if (!strcmp(atm_graph_tensor(g, t)->name, name))
			return t;
	fail_msg("no tensor '%s'", name);
	return -1;
}

/* test_plan_recompute_multi_output -- batch norm's y made again: mean and var are written into
 * scratch, their bytes (each rounded up to the arena's alignment) added to the workspace block
 * after the node's own workspace and counted against the limit; every output is fast */
static void test_plan_recompute_multi_output(void **state)
{
	(void)state;
	atm_graph *g = bn_graph(true);
	int32_t y = tensor_id(g, "y");
	atm_schedule *s = NULL;
	assert_true(atm_recompute_eligible(g, y, NULL));
	assert_true(atm_recompute_eligible(g, tensor_id(g, "mean"), NULL));
	atm_plan *p = rc_plan(g, 1, &(atm_recompute){y, 2, 3});
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	int32_t rec = find_event(s, 0, ATM_EV_RECOMPUTE, -1);
	const atm_event *ev = atm_schedule_event(s, rec);
	assert_int_equal(ev->node, 1);
	assert_int_equal(ev->tensor, y);
	assert_int_equal(ev->workspace_bytes, 512); /* mean and var */
	assert_int_equal(ev->offset % ATM_ARENA_ALIGN, 0);
	for (int i = 0; i < 6; i++) /* c, gamma, beta; y, mean, var */
		assert_int_equal(ev->cfg[i], ATM_LOC_FAST);
	assert_int_equal(rec + 2, kernel_event(s, 3)); /* z's ALLOC between */
	assert_int_equal(atm_schedule_stats_get(s)->n_recomputes, 1);
	assert_int_equal(atm_schedule_stats_get(s)->bytes_recomputed, 256);
	atm_schedule_destroy(s);

	/* the node's own workspace first, the scratch after it */
	assert_int_equal(atm_plan_set_workspace(p, 1, 100), ATM_OK);
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	ev = atm_schedule_event(s, find_event(s, 0, ATM_EV_RECOMPUTE, -1));
	assert_int_equal(ev->workspace_bytes, 100 + 512);
	atm_schedule_destroy(s);
	assert_int_equal(atm_plan_set_workspace(p, 1, 0), ATM_OK);

	/* before node 3: x, gamma, beta (768 persistent), c, r and y (768), and the scratch (512):
	 * 2048, more than any node needs (bn: 768 and c, y, mean, var: 1792) */
	atm_plan_info_of(p)->fast_limit_bytes = 2048;
	if (atm_schedule_new(&s, p) < 0)
		fail_msg("%s", atm_errmsg());
	assert_int_equal(atm_schedule_stats_get(s)->fast_peak_bytes, 1792); /* copies, no scratch */
	atm_schedule_destroy(s);
	atm_plan_info_of(p)->fast_limit_bytes = 2047;
	expect_schedule_error(p, ATM_E_INFEASIBLE,
	                      "recomputation 0 of 'y' before node 3 ('add3'): the workspace of node "
	                      "'bn' (512 bytes: 0 of its kernel's, 512 of scratch for its other "
	                      "outputs) does not fit: fast memory would hold 2048 bytes, over the limit "
	                      "of 2047");
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

/* test_plan_recompute_chain -- r made again before add1 from y, dead there: a link makes y again
 * first (from c, still live), whatever the plan's order, and is freed before add1 runs; and a
 * chain four deep, v from u from s from r from y, all before add2 */
static void test_plan_recompute_chain(void **state)
{
	(void)state;
	atm_graph *g = bn_graph(false);
	int32_t y = tensor_id(g, "y"), r = tensor_id(g, "r"), sv = tensor_id(g, "s");
	int32_t u = tensor_id(g, "u"), v = tensor_id(g, "v");
	atm_schedule *s = NULL;
	atm_plan *p = rc_plan(g, 0, NULL);
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	int64_t at5 = atm_schedule_fast_bytes_at(s, 5);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);

	atm_recompute link = {y, 2, 5};
	assert_true(atm_recompute_is_link(g, &link));
	assert_false(atm_recompute_is_link(g, &(atm_recompute){r, 3, 5}));
	p = rc_plan(g, 2, (atm_recompute[]){{r, 3, 5}, link});
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	int32_t k4 = kernel_event(s, 4), k5 = kernel_event(s, 5);
	int32_t ay = find_event(s, k4, ATM_EV_ALLOC, y), ry = find_event(s, k4, ATM_EV_RECOMPUTE, y);
	int32_t ar = find_event(s, k4, ATM_EV_ALLOC, r), rr = find_event(s, k4, ATM_EV_RECOMPUTE, r);
	int32_t fy = find_event(s, k4, ATM_EV_FREE, y);
	/* y first (its producer comes first), then r, then y freed: all before add1's kernel */
	assert_true(k4 < ay && ay + 1 == ry && ry < ar && ar + 1 == rr && rr + 1 == fy && fy < k5);
	assert_int_equal(atm_schedule_event(s, ry)->recompute, 1);
	assert_int_equal(atm_schedule_event(s, ry)->workspace_bytes, 512);
	assert_int_equal(atm_schedule_event(s, rr)->recompute, 0);
	assert_int_equal(atm_schedule_event(s, rr)->cfg[0], ATM_LOC_FAST);
	assert_int_equal(atm_schedule_event(s, fy)->loc, ATM_LOC_FAST);
	assert_int_equal(find_event(s, fy + 1, ATM_EV_FREE, y), -1);
	/* a link drops nothing: y was freed after relu by liveness, once */
	assert_int_equal(find_event(s, find_event(s, 0, ATM_EV_FREE, y) + 1, ATM_EV_FREE, y), fy);
	assert_int_equal(atm_schedule_fast_bytes_at(s, 5), at5);
	assert_int_equal(atm_schedule_stats_get(s)->n_recomputes, 2);
	assert_int_equal(atm_schedule_stats_get(s)->bytes_recomputed, 512);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);

	/* four links deep before add2, listed out of order: made in the graph's order, each freed
	 * after the last that reads it (y after r, s after u, r and u after v) */
	p = rc_plan(g, 5, (atm_recompute[]){{sv, 4, 6}, {v, 5, 6}, {y, 2, 6}, {u, 5, 6}, {r, 5, 6}});
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	int32_t k6 = kernel_event(s, 6), from = kernel_event(s, 5);
	int32_t order[] = {y, r, sv, u, v}, at[5];
	for (int i = 0; i < 5; i++) {
		at[i] = find_event(s, from, ATM_EV_RECOMPUTE, order[i]);
		assert_true(at[i] > from && at[i] < k6);
		if (i)
			assert_true(at[i] > at[i - 1]);
	}
	assert_true(find_event(s, at[1], ATM_EV_FREE, y) < at[2]);
	assert_true(find_event(s, at[3], ATM_EV_FREE, sv) < at[4]);
	assert_true(find_event(s, at[4], ATM_EV_FREE, r) < k6);
	assert_true(find_event(s, at[4], ATM_EV_FREE, u) < k6);
	assert_int_equal(find_event(s, at[2], ATM_EV_FREE, r), find_event(s, at[4], ATM_EV_FREE, r));
	assert_int_equal(atm_schedule_stats_get(s)->n_recomputes, 5);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);

	/* a link's input must be available as any other's: c dropped until add2 is not */
	int32_t c = tensor_id(g, "c");
	expect_recompute_error(g, 3, (atm_recompute[]){{r, 3, 5}, {y, 2, 5}, {c, 1, 6}},
	                       "recomputation 1 of 'y': input 'c' of node 'bn' is not available before "
	                       "node 5 ('add1') (recomputation 2 dropped it after node 1 until before "
	                       "node 6; an input is made again with a recomputation only by a link");
	/* nor is r's input y without its link */
	expect_recompute_error(g, 1, &(atm_recompute){r, 3, 5},
	                       "recomputation 0 of 'r': input 'y' of node 'relu' is not available before "
	                       "node 5 ('add1') (its last use is node 2, and it is freed there; a link "
	                       "(a recomputation of it dropped after node 2, before node 5) would make "
	                       "it again)");
	atm_graph_destroy(g);
}

/* test_plan_recompute_link_refusals -- a link dropped anywhere but its last use, a link nothing
 * before its node reads, and two links of one tensor before one node are each named */
static void test_plan_recompute_link_refusals(void **state)
{
	(void)state;
	atm_graph *g = bn_graph(false);
	int32_t y = tensor_id(g, "y"), r = tensor_id(g, "r");
	expect_recompute_error(g, 2, (atm_recompute[]){{r, 3, 5}, {y, 1, 5}},
	                       "recomputation 1 of 'y': the tensor is not live at node 5 ('add1') (it "
	                       "lives from node 1 to node 2), so it is made again there only as a link, "
	                       "for the recomputations before node 5 that read it; a link's drop_after "
	                       "must be 2, its last use, where it is freed (not 1)");
	expect_recompute_error(g, 1, &(atm_recompute){y, 2, 5},
	                       "recomputation 0 of 'y' is a link before node 5 ('add1') (the tensor's "
	                       "last use is node 2), but nothing before node 5 reads it");
	/* r made again before add2 reads nothing of it: its link is unread there */
	expect_recompute_error(g, 2, (atm_recompute[]){{r, 3, 5}, {y, 2, 6}},
	                       "recomputation 1 of 'y' is a link before node 6 ('add2') (the tensor's "
	                       "last use is node 2), but nothing before node 6 reads it");
	expect_recompute_error(g, 3, (atm_recompute[]){{y, 2, 5}, {r, 3, 5}, {y, 2, 5}},
	                       "recomputations 0 and 2 of 'y' are both links before node 5 ('add1'): "
	                       "one makes it again for every recomputation there; remove the other");
	/* a link and a recomputation of the same tensor elsewhere do not overlap */
	atm_plan *p = rc_plan(g, 3, (atm_recompute[]){{y, 1, 2}, {r, 3, 5}, {y, 2, 5}});
	atm_schedule *s = NULL;
	if (atm_schedule_new(&s, p) < 0)
		fail_msg("%s", atm_errmsg());
	assert_int_equal(atm_schedule_stats_get(s)->n_recomputes, 3);
	atm_schedule_destroy(s);
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

/* test_plan_recompute_json -- recomputations go through a plan file and back; a plan without
 * any writes no key (as before they existed); each bad field, and a recomputation whose node's
 * input is gone, is refused naming the file, the entry and what is wrong */
static void test_plan_recompute_json(void **state)
{
	struct small *sm = *state;
	atm_graph *g = rc_graph();
	atm_plan *p = rc_plan(g, 2, (atm_recompute[]){{1, 1, 4}, {3, 2, 3}}), *q = NULL;
	char *a = NULL, *b = NULL, *c;
	assert_int_equal(atm_plan_dump(p, &a), ATM_OK);
	assert_non_null(strstr(a, "\"recomputes\": [\n    {\"tensor\":\"a\",\"drop_after\":1,"
	                          "\"before\":4},\n    {\"tensor\":\"c\",\"drop_after\":2,"
	                          "\"before\":3}\n  ]"));
	assert_int_equal(atm_plan_load_buffer(&q, g, a, strlen(a), "p.json"), ATM_OK);
	assert_int_equal(atm_plan_n_recomputes(q), 2);
	assert_int_equal(atm_plan_recompute(q, 1)->tensor, 3);
	assert_int_equal(atm_plan_recompute(q, 1)->drop_after, 2);
	assert_int_equal(atm_plan_recompute(q, 1)->before, 3);
	assert_int_equal(atm_plan_dump(q, &b), ATM_OK);
	assert_string_equal(a, b);
	atm_plan_destroy(q);
	free(b);
	static const char *const bad[][2] = {
		{"{\"tensor\":\"zz\",\"drop_after\":1,\"before\":4}",
		 "recomputes[0]: graph 'rc' has no tensor 'zz'"},
		{"{\"tensor\":\"a\",\"before\":4}", "recomputes[0]: missing \"drop_after\""},
		{"{\"tensor\":\"a\",\"drop_after\":1,\"before\":\"4\"}",
		 "recomputes[0]: \"before\" must be an integer"},
		{"{\"tensor\":\"a\",\"drop_after\":1,\"before\":9}",
		 "recomputes[0]: \"before\" is 9; valid: 0 to 4"},
		{"{\"tensor\":\"a\",\"drop_after\":1,\"before\":4,\"after\":2}",
		 "recomputes[0]: unknown key \"after\" (valid: tensor, drop_after, before)"},
		{"{\"tensor\":\"x\",\"drop_after\":1,\"before\":4}",
		 "recomputes[0]: recomputation 0: tensor 'x' (input) may not be recomputed"},
		{"3", "recomputes[0]: must be an object"},
		{"{\"tensor\":\"a\",\"drop_after\":1,\"before\":3}",
		 "recomputation 0 of 'a': node 3 ('add1') does not read it"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char list[160];
		snprintf(list, sizeof list, "\"recomputes\": [%s]", bad[i][0]);
		c = edit(a, "\"recomputes\": [\n    {\"tensor\":\"a\",\"drop_after\":1,\"before\":4},\n"
		            "    {\"tensor\":\"c\",\"drop_after\":2,\"before\":3}\n  ]", list);
		expect_load_error(g, c, bad[i][1]);
		free(c);
	}
	c = edit(a, "\"recomputes\": [", "\"recomputes\": {\"x\": [");
	expect_load_error(g, c, "JSON syntax error");
	free(c);
	free(a);
	atm_plan_destroy(p);
	atm_graph_destroy(g);

	/* a plan without recomputations has no key; one with an empty list loads */
	assert_int_equal(atm_plan_uniform(&p, sm->g, ATM_LOC_FAST), ATM_OK);
	assert_int_equal(atm_plan_dump(p, &a), ATM_OK);
	assert_null(strstr(a, "recomputes"));
	c = edit(a, "\"moves\": []", "\"moves\": [],\n  \"recomputes\": []");
	assert_int_equal(atm_plan_load_buffer(&q, sm->g, c, strlen(c), "empty.json"), ATM_OK);
	assert_int_equal(atm_plan_n_recomputes(q), 0);
	atm_plan_destroy(q);
	free(c);
	/* the loader checks the step's rules: the node's missing input named */
	c = edit(a, "\"moves\": []", "\"moves\": [],\n  \"recomputes\": [{\"tensor\":\"r\","
	                            "\"drop_after\":2,\"before\":4}]");
	expect_load_error(sm->g, c, "recomputation 0 of 'r': input 'y' of node 'relu' is not available "
	                            "before node 4 ('relu.bwd')");
	free(c);
	c = edit(a, "\"moves\": []", "\"moves\": [],\n  \"recomputes\": \"y\"");
	expect_load_error(sm->g, c, "\"recomputes\" must be an array");
	free(c);
	free(a);
	atm_plan_destroy(p);
}

/* test_plan_random_recomputes -- random plans recompute some tensors, some through links, each
 * plan valid and the same for its seed */
static void test_plan_random_recomputes(void **state)
{
	(void)state;
	atm_graph *g = rc_graph();
	int with = 0, links = 0;
	for (uint64_t seed = 1; seed <= 200; seed++) {
		atm_plan *p = NULL, *q = NULL;
		atm_schedule *s = NULL;
		assert_int_equal(atm_plan_random(&p, g, seed), ATM_OK);
		if (atm_schedule_new(&s, p) < 0)
			fail_msg("seed %llu: %s", (unsigned long long)seed, atm_errmsg());
		assert_int_equal(atm_schedule_stats_get(s)->n_recomputes, atm_plan_n_recomputes(p));
		with += atm_plan_n_recomputes(p) > 0;
		for (int32_t i = 0; i < atm_plan_n_recomputes(p); i++)
			links += atm_recompute_is_link(g, atm_plan_recompute(p, i));
		atm_schedule_destroy(s);
		assert_int_equal(atm_plan_random(&q, g, seed), ATM_OK);
		assert_int_equal(atm_plan_n_recomputes(q), atm_plan_n_recomputes(p));
		for (int32_t i = 0; i < atm_plan_n_recomputes(p); i++)
			assert_memory_equal(atm_plan_recompute(p, i), atm_plan_recompute(q, i),
			                    sizeof(atm_recompute));
		atm_plan_destroy(p);
		atm_plan_destroy(q);
	}
	assert_true(with >= 50);
	assert_true(links >= 5);
	atm_graph_destroy(g);
}

/* schedule_once -- one schedule of the plan arg, released */
static atm_status schedule_once(void *arg)
{
	atm_schedule *s = (atm_schedule *)1;
	atm_status rc = atm_schedule_new(&s, arg);
	if (rc < 0)
		assert_null(s);
	atm_schedule_destroy(rc < 0 ? NULL : s);
	return rc;
}

/* test_plan_recompute_allocation_failures -- a schedule with recomputations, every allocation
 * failed in turn: ATM_E_NOMEM and (ASan) nothing leaked */
static void test_plan_recompute_allocation_failures(void **state)
{
	(void)state;
	atm_graph *g = rc_graph();
	atm_plan *p = rc_plan(g, 2, (atm_recompute[]){{1, 1, 4}, {3, 2, 3}});
	assert_true(alloc_fail_sweep("atm_schedule_new", schedule_once, p) > 10);
	atm_plan_destroy(p);
	atm_graph_destroy(g);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, small_setup, small_teardown)
	const struct CMUnitTest tests[] = {
		T(test_plan_all_fast_matches_liveness),
		T(test_plan_algorithms),
		T(test_plan_all_slow),
		cmocka_unit_test(test_plan_limit_names_the_node),
		cmocka_unit_test(test_plan_emulated_wait),
		cmocka_unit_test(test_plan_fragmentation_is_reported),
		T(test_plan_param_round_trip_through_fast),
		T(test_plan_async_move_waits_for_reader),
		T(test_plan_rejects_impossible_moves),
		T(test_plan_random_plans_are_valid_and_stable),
		T(test_plan_json_round_trip),
		T(test_plan_json_predicted_recompute),
		T(test_plan_json_solver_name),
		T(test_plan_json_rejects_mismatches),
		T(test_plan_schedule_setup),
		T(test_plan_save_round_trip),
		T(test_plan_json_allocation_failures),
		cmocka_unit_test(test_plan_recompute_schedule),
		T(test_plan_recompute_refusals),
		cmocka_unit_test(test_plan_recompute_multi_output),
		cmocka_unit_test(test_plan_recompute_chain),
		cmocka_unit_test(test_plan_recompute_link_refusals),
		T(test_plan_recompute_json),
		cmocka_unit_test(test_plan_random_recomputes),
		cmocka_unit_test(test_plan_recompute_allocation_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
