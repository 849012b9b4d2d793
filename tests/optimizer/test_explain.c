/* test_explain.c -- the plan as a timeline: the header's figures, a line per kernel with its slow operands, a line per move */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_optimizer.h"
#include "common/small_graph.h"
#include "optimizer/synth.h"

struct fx {
	struct small sm;
	atm_profile *prof;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	small_build(&f->sm);
	assert_int_equal(synth_profile(f->sm.g, &f->prof), ATM_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	atm_profile_destroy(f->prof);
	atm_graph_destroy(f->sm.g);
	free(f);
	return 0;
}

/* explain -- p explained, as text (malloc'd; not inlined: gcc takes open_memstream's buffer for
 * a dangling pointer) */
__attribute__((noinline)) static char *explain(const atm_plan *p, const atm_profile *prof,
                                               atm_status want)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(atm_opt_explain(p, prof, NULL, f), want);
	fclose(f);
	return text;
}

/* count -- occurrences of frag in s */
static int count(const char *s, const char *frag)
{
	int n = 0;
	for (const char *at = strstr(s, frag); at; at = strstr(at + 1, frag))
		n++;
	return n;
}

/* test_explain_all_fast -- every kernel has its line, none is slowed, no limit */
static void test_explain_all_fast(void **state)
{
	struct fx *f = *state;
	atm_plan *p = NULL;
	assert_int_equal(atm_plan_uniform(&p, f->sm.g, ATM_LOC_FAST), ATM_OK);
	char *t = explain(p, f->prof, ATM_OK);
	assert_non_null(strstr(t, "plan of 'small': all-fast, fast limit none"));
	for (int32_t k = 0; k < atm_graph_n_nodes(f->sm.g); k++)
		assert_non_null(strstr(t, atm_graph_node(f->sm.g, k)->name));
	assert_non_null(strstr(t, "\n0 kernel(s) slowed by slow operands"));
	assert_int_equal(count(t, "fetch"), 0);
	free(t);
	atm_plan_destroy(p);
}

/* test_explain_all_slow -- every kernel is slowed and names its slow operands */
static void test_explain_all_slow(void **state)
{
	struct fx *f = *state;
	atm_plan *p = NULL;
	char want[64];
	assert_int_equal(atm_plan_uniform(&p, f->sm.g, ATM_LOC_SLOW), ATM_OK);
	char *t = explain(p, f->prof, ATM_OK);
	snprintf(want, sizeof want, "\n%d kernel(s) slowed", atm_graph_n_nodes(f->sm.g));
	assert_non_null(strstr(t, want));
	assert_non_null(strstr(t, "'x', 'w', 'b', 'y' (out)")); /* node 0: fc reads x, w, b */
	free(t);
	atm_plan_destroy(p);
}

/* test_explain_moves -- each move has a line saying which way, blocking or overlapped, and
 * overlapped ones when they arrive; each recomputation a line naming the tensor, and a count
 * at the end */
static void test_explain_moves(void **state)
{
	struct fx *f = *state;
	atm_plan *p = NULL;
	int n_sync = 0, n_async = 0, n_again = 0;
	atm_schedule *s = NULL;
	/* a random plan with recomputations too */
	for (uint64_t seed = 5; !p || !atm_plan_n_recomputes(p); seed++) {
		atm_plan_destroy(p);
		assert_true(seed < 50);
		assert_int_equal(atm_plan_random(&p, f->sm.g, seed), ATM_OK);
	}
	/* the moves a step starts (the schedule's: a plan may move a tensor at setup too) */
	assert_int_equal(atm_schedule_new(&s, p), ATM_OK);
	for (int32_t i = 0; i < atm_schedule_n_events(s); i++) {
		const atm_event *ev = atm_schedule_event(s, i);
		if (ev->kind == ATM_EV_MOVE_START)
			atm_plan_move(p, ev->move)->async ? n_async++ : n_sync++;
		n_again += ev->kind == ATM_EV_RECOMPUTE;
	}
	atm_schedule_destroy(s);
	assert_true(n_sync > 0 && n_async > 0);
	char *t = explain(p, f->prof, ATM_OK);
	assert_int_equal(count(t, ", blocking ("), n_sync);
	assert_int_equal(count(t, ", overlapped, done before node"), n_async);
	assert_int_equal(count(t, " arrives in "), n_async);
	assert_int_equal(count(t, "<> recompute '"), n_again);
	char line[64];
	snprintf(line, sizeof line, "%d tensor(s) recomputed", n_again);
	assert_non_null(strstr(t, line));
	free(t);
	atm_plan_destroy(p);
}

/* test_explain_link -- a link's line says it feeds the recomputations before its node; the
 * recomputation that reads it keeps the usual line */
static void test_explain_link(void **state)
{
	struct fx *f = *state;
	atm_plan *p = NULL;
	assert_int_equal(atm_plan_uniform(&p, f->sm.g, ATM_LOC_FAST), ATM_OK);
	assert_int_equal(atm_plan_add_recompute(p, &(atm_recompute){f->sm.r, 2, 4}), ATM_OK);
	assert_int_equal(atm_plan_add_recompute(p, &(atm_recompute){f->sm.y, 1, 4}), ATM_OK);
	char *t = explain(p, f->prof, ATM_OK);
	const char *y = strstr(t, "<> recompute 'y' ("), *r = strstr(t, "<> recompute 'r' (");
	if (!y || !r || y > r)
		fail_msg("y's line, then r's, expected in:\n%s", t);
	assert_non_null(strstr(y, "by running node 0 ('fc') again: "));
	assert_non_null(strstr(y, "; a link, freed after node 1, made again for the recomputations "
	                          "before node 4 that read it\n"));
	assert_non_null(strstr(r, "by running node 1 ('relu') again: "));
	assert_non_null(strstr(r, "; dropped after node 2\n"));
	assert_non_null(strstr(t, "2 tensor(s) recomputed"));
	free(t);
	atm_plan_destroy(p);
}

/* test_explain_missing_profile -- a kernel the profile lacks is the checker's ATM_E_NOTFOUND,
 * naming it, and nothing is printed */
static void test_explain_missing_profile(void **state)
{
	struct fx *f = *state;
	atm_plan *p = NULL;
	atm_profile *empty = NULL;
	atm_profile_machine m = *atm_profile_machine_get(f->prof);
	assert_int_equal(atm_profile_new(&empty, &m, NULL), ATM_OK);
	assert_int_equal(atm_plan_uniform(&p, f->sm.g, ATM_LOC_FAST), ATM_OK);
	char *t = explain(p, empty, ATM_E_NOTFOUND);
	assert_non_null(strstr(atm_errmsg(), "fc"));
	assert_string_equal(t, "");
	free(t);
	atm_plan_destroy(p);
	atm_profile_destroy(empty);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_explain_all_fast),
		T(test_explain_all_slow),
		T(test_explain_moves),
		T(test_explain_link),
		T(test_explain_missing_profile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
