/* small_graph.h -- a hand-sized training step (4 -> 3 linear classifier, batch 1) shared by core tests
 *
 * Nodes: 0 fc, 1 relu, 2 loss, 3 loss.bwd, 4 relu.bwd, 5 fc.bwd_w, 6 sgd.w, 7 sgd.b.
 * Bytes: x 16, w 48, b 12, labels 12, loss 4 (persistent, 92 in all); y, r, probs,
 * dr, dy, db 12 each; dw 48. Peak 164 at node 5.
 */
#ifndef ATM_TEST_SMALL_GRAPH_H
#define ATM_TEST_SMALL_GRAPH_H

#include "atm_core.h"

struct small {
	atm_graph *g;
	int32_t x, w, b, y, r, labels, probs, loss, dr, dy, dw, db;
};

static inline int32_t small_tensor(atm_graph *g, const char *name, int ndim, int64_t d0,
                                   int64_t d1, atm_tensor_kind kind)
{
	int64_t dims[2] = {d0, d1};
	int32_t id;
	assert_int_equal(atm_graph_add_tensor(g, name, ATM_F32, ndim, dims, kind, ATM_LOC_ANY, &id),
	                 ATM_OK);
	return id;
}

static inline void small_node(atm_graph *g, const char *name, atm_op op, int n_in,
                              const int32_t *in, int n_out, const int32_t *out)
{
	atm_attrs a = {.lr = 0.1f};
	int32_t id;
	assert_int_equal(atm_graph_add_node(g, name, op, &a, n_in, in, n_out, out, &id), ATM_OK);
}

static inline void small_build(struct small *s)
{
	memset(s, 0, sizeof *s);
	assert_int_equal(atm_graph_new(&s->g, "small"), ATM_OK);
	atm_graph *g = s->g;
	s->x = small_tensor(g, "x", 2, 1, 4, ATM_KIND_INPUT);
	s->w = small_tensor(g, "w", 2, 3, 4, ATM_KIND_PARAM);
	s->b = small_tensor(g, "b", 1, 3, 0, ATM_KIND_PARAM);
	s->y = small_tensor(g, "y", 2, 1, 3, ATM_KIND_ACTIVATION);
	s->r = small_tensor(g, "r", 2, 1, 3, ATM_KIND_ACTIVATION);
	s->labels = small_tensor(g, "labels", 2, 1, 3, ATM_KIND_INPUT);
	s->probs = small_tensor(g, "probs", 2, 1, 3, ATM_KIND_ACTIVATION);
	s->loss = small_tensor(g, "loss", 1, 1, 0, ATM_KIND_OUTPUT);
	s->dr = small_tensor(g, "dr", 2, 1, 3, ATM_KIND_GRAD);
	s->dy = small_tensor(g, "dy", 2, 1, 3, ATM_KIND_GRAD);
	s->dw = small_tensor(g, "dw", 2, 3, 4, ATM_KIND_GRAD);
	s->db = small_tensor(g, "db", 1, 3, 0, ATM_KIND_GRAD);
	small_node(g, "fc", ATM_OP_IP_FWD, 3, (int32_t[]){s->x, s->w, s->b}, 1, &s->y);
	small_node(g, "relu", ATM_OP_RELU_FWD, 1, &s->y, 1, &s->r);
	small_node(g, "loss", ATM_OP_SOFTMAX_XENT_FWD, 2, (int32_t[]){s->r, s->labels}, 2,
	           (int32_t[]){s->probs, s->loss});
	small_node(g, "loss.bwd", ATM_OP_SOFTMAX_XENT_BWD, 2, (int32_t[]){s->probs, s->labels}, 1,
	           &s->dr);
	small_node(g, "relu.bwd", ATM_OP_RELU_BWD, 2, (int32_t[]){s->r, s->dr}, 1, &s->dy);
	small_node(g, "fc.bwd_w", ATM_OP_IP_BWD_WEIGHTS, 2, (int32_t[]){s->x, s->dy}, 2,
	           (int32_t[]){s->dw, s->db});
	small_node(g, "sgd.w", ATM_OP_SGD, 2, (int32_t[]){s->w, s->dw}, 0, NULL);
	small_node(g, "sgd.b", ATM_OP_SGD, 2, (int32_t[]){s->b, s->db}, 0, NULL);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
}

/* small_setup, small_teardown -- a cmocka fixture: a fresh small graph per test in *state (a
 * struct small) */
__attribute__((unused)) static int small_setup(void **state)
{
	static struct small s;
	small_build(&s);
	*state = &s;
	return 0;
}

__attribute__((unused)) static int small_teardown(void **state)
{
	struct small *s = *state;
	atm_graph_destroy(s->g);
	return 0;
}

#endif /* ATM_TEST_SMALL_GRAPH_H */
