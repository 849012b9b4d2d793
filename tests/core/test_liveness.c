/* test_liveness.c -- live ranges, footprint curve and peak on hand-computed graphs */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "atm_core.h"

/* The training step of a 4 -> 3 linear classifier at batch 1; every byte
 * count below is worked out by hand in the comments. */
struct small {
	atm_graph *g;
	int32_t x, w, b, y, r, labels, probs, loss, dr, dy, dw, db;
};

static int32_t tensor(atm_graph *g, const char *name, int ndim, int64_t d0, int64_t d1,
                      atm_tensor_kind kind)
{
	int64_t dims[2] = {d0, d1};
	int32_t id;
	assert_int_equal(atm_graph_add_tensor(g, name, ATM_F32, ndim, dims, kind, ATM_LOC_ANY, &id),
	                 ATM_OK);
	return id;
}

static void node(atm_graph *g, const char *name, atm_op op, int n_in, const int32_t *in,
                 int n_out, const int32_t *out)
{
	atm_attrs a = {.lr = 0.1f};
	int32_t id;
	assert_int_equal(atm_graph_add_node(g, name, op, &a, n_in, in, n_out, out, &id), ATM_OK);
}

static int setup(void **state)
{
	static struct small s;
	memset(&s, 0, sizeof s);
	assert_int_equal(atm_graph_new(&s.g, "small"), ATM_OK);
	atm_graph *g = s.g;
	s.x = tensor(g, "x", 2, 1, 4, ATM_KIND_INPUT);         /* 16 B */
	s.w = tensor(g, "w", 2, 3, 4, ATM_KIND_PARAM);         /* 48 B */
	s.b = tensor(g, "b", 1, 3, 0, ATM_KIND_PARAM);         /* 12 B */
	s.y = tensor(g, "y", 2, 1, 3, ATM_KIND_ACTIVATION);    /* 12 B */
	s.r = tensor(g, "r", 2, 1, 3, ATM_KIND_ACTIVATION);    /* 12 B */
	s.labels = tensor(g, "labels", 2, 1, 3, ATM_KIND_INPUT); /* 12 B */
	s.probs = tensor(g, "probs", 2, 1, 3, ATM_KIND_ACTIVATION);
	s.loss = tensor(g, "loss", 1, 1, 0, ATM_KIND_OUTPUT);  /* 4 B */
	s.dr = tensor(g, "dr", 2, 1, 3, ATM_KIND_GRAD);
	s.dy = tensor(g, "dy", 2, 1, 3, ATM_KIND_GRAD);
	s.dw = tensor(g, "dw", 2, 3, 4, ATM_KIND_GRAD);        /* 48 B */
	s.db = tensor(g, "db", 1, 3, 0, ATM_KIND_GRAD);        /* 12 B */
	node(g, "fc", ATM_OP_IP_FWD, 3, (int32_t[]){s.x, s.w, s.b}, 1, &s.y);          /* 0 */
	node(g, "relu", ATM_OP_RELU_FWD, 1, &s.y, 1, &s.r);                            /* 1 */
	node(g, "loss", ATM_OP_SOFTMAX_XENT_FWD, 2, (int32_t[]){s.r, s.labels}, 2,
	     (int32_t[]){s.probs, s.loss});                                            /* 2 */
	node(g, "loss.bwd", ATM_OP_SOFTMAX_XENT_BWD, 2, (int32_t[]){s.probs, s.labels}, 1,
	     &s.dr);                                                                   /* 3 */
	node(g, "relu.bwd", ATM_OP_RELU_BWD, 2, (int32_t[]){s.r, s.dr}, 1, &s.dy);     /* 4 */
	node(g, "fc.bwd_w", ATM_OP_IP_BWD_WEIGHTS, 2, (int32_t[]){s.x, s.dy}, 2,
	     (int32_t[]){s.dw, s.db});                                                 /* 5 */
	node(g, "sgd.w", ATM_OP_SGD, 2, (int32_t[]){s.w, s.dw}, 0, NULL);             /* 6 */
	node(g, "sgd.b", ATM_OP_SGD, 2, (int32_t[]){s.b, s.db}, 0, NULL);             /* 7 */
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	*state = &s;
	return 0;
}

static int teardown(void **state)
{
	struct small *s = *state;
	atm_graph_destroy(s->g);
	return 0;
}

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
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_liveness_ranges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_liveness_footprint_curve, setup, teardown),
		cmocka_unit_test_setup_teardown(test_liveness_workspace_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_liveness_stats, setup, teardown),
		cmocka_unit_test(test_liveness_empty_graph),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
