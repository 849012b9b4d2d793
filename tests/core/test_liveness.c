/* test_liveness.c -- live ranges, footprint curve and peak on hand-computed graphs */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "atm_core.h"

#include "common/small_graph.h"


static void test_liveness_ranges(void **state)
{
	struct small *s = *state;
	atm_liveness *lv = NULL;
	assert_int_equal(atm_liveness_new(&lv, s->g), ATM_OK);
	/* persistent tensors span the whole schedule */
	assert_int_equal(atm_liveness_first(lv, s->w), 0);
	assert_int_equal(atm_liveness_last(lv, s->w), 7);
	assert_int_equal(atm_liveness_last(lv, s->loss), 7);
	/* others: producer to last user */
	assert_int_equal(atm_liveness_first(lv, s->y), 0);
	assert_int_equal(atm_liveness_last(lv, s->y), 1);
	assert_int_equal(atm_liveness_first(lv, s->r), 1);
	assert_int_equal(atm_liveness_last(lv, s->r), 4);
	assert_int_equal(atm_liveness_first(lv, s->db), 5);
	assert_int_equal(atm_liveness_last(lv, s->db), 7);
	assert_int_equal(atm_liveness_first(lv, 999), -1);
	atm_liveness_destroy(lv);
}

static void test_liveness_footprint_curve(void **state)
{
	struct small *s = *state;
	atm_liveness *lv = NULL;
	assert_int_equal(atm_liveness_new(&lv, s->g), ATM_OK);
	/* persistent: x 16 + w 48 + b 12 + labels 12 + loss 4 = 92 bytes at every node */
	const int64_t expect[8] = {
		92 + 12,           /* y */
		92 + 12 + 12,      /* y, r */
		92 + 12 + 12,      /* r, probs */
		92 + 12 + 12 + 12, /* r, probs, dr */
		92 + 12 + 12 + 12, /* r, dr, dy */
		92 + 12 + 48 + 12, /* dy, dw, db */
		92 + 48 + 12,      /* dw, db */
		92 + 12,           /* db */
	};
	for (int i = 0; i < 8; i++)
		assert_int_equal(atm_liveness_bytes_at(lv, i), expect[i]);
	assert_int_equal(atm_liveness_peak_bytes(lv), 164);
	assert_int_equal(atm_liveness_peak_node(lv), 5);
	atm_liveness_destroy(lv);
}

static void test_liveness_workspace_counts(void **state)
{
	struct small *s = *state;
	atm_liveness *lv = NULL;
	assert_int_equal(atm_graph_set_workspace(s->g, 1, 100), ATM_OK);
	assert_int_equal(atm_liveness_new(&lv, s->g), ATM_OK);
	assert_int_equal(atm_liveness_bytes_at(lv, 1), 216);
	assert_int_equal(atm_liveness_peak_bytes(lv), 216);
	assert_int_equal(atm_liveness_peak_node(lv), 1);
	atm_liveness_destroy(lv);
	assert_int_equal(atm_graph_set_workspace(s->g, 1, 0), ATM_OK);
	assert_int_equal(atm_graph_set_workspace(s->g, 99, 0), ATM_E_USAGE);
	assert_int_equal(atm_graph_set_workspace(s->g, 1, -5), ATM_E_INPUT);
}

static void test_liveness_stats(void **state)
{
	struct small *s = *state;
	atm_graph_stats st;
	assert_int_equal(atm_graph_stats_compute(s->g, &st), ATM_OK);
	assert_int_equal(st.n_params, 15);
	assert_int_equal(st.param_bytes, 60);
	assert_int_equal(st.io_bytes, 92);
	assert_int_equal(st.peak_bytes, 164);
	assert_int_equal(st.n_kernels, 8);
	assert_int_equal(st.n_tensors, 12);
	assert_int_equal(st.total_bytes, 92 + 12 * 5 + 48 + 12);
}

static void test_liveness_empty_graph(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	atm_liveness *lv = NULL;
	assert_int_equal(atm_graph_new(&g, "empty"), ATM_OK);
	assert_int_equal(atm_liveness_new(&lv, g), ATM_OK);
	assert_int_equal(atm_liveness_peak_bytes(lv), 0);
	assert_int_equal(atm_liveness_peak_node(lv), -1);
	atm_liveness_destroy(lv);
	atm_liveness_destroy(NULL);
	atm_graph_destroy(g);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, small_setup, small_teardown)
	const struct CMUnitTest tests[] = {
		T(test_liveness_ranges),
		T(test_liveness_footprint_curve),
		T(test_liveness_workspace_counts),
		T(test_liveness_stats),
		cmocka_unit_test(test_liveness_empty_graph),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
