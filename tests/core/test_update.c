/* test_update.c -- a step's SGD rewritten to SGD with momentum or AdamW: the states, names,
 * kinds and attributes, a graph file's round trip, and refusals */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_core.h"
#include "atm_formats.h"

#include "common/small_graph.h"

/* rewrite -- the small graph with update u (checked to succeed) */
static atm_graph *rewrite(const struct small *s, const atm_update *u)
{
	atm_graph *c = NULL;
	if (atm_graph_with_update(s->g, u, &c) < 0)
		fail_msg("%s", atm_errmsg());
	return c;
}

/* test_update_adamw -- two averages of each parameter's shape and a step of one element, kind
 * optimizer_state, named as torch.optim names them; one adamw node where each SGD was, the
 * parameter and its states written in place; nothing else changed */
static void test_update_adamw(void **state)
{
	(void)state;
	struct small s;
	small_build(&s);
	atm_update u = atm_update_defaults(ATM_UPDATE_ADAMW);
	atm_graph *c = rewrite(&s, &u);
	assert_int_equal(atm_graph_n_nodes(c), atm_graph_n_nodes(s.g));
	assert_int_equal(atm_graph_n_tensors(c), atm_graph_n_tensors(s.g) + 6);
	for (int32_t t = 0; t < atm_graph_n_tensors(s.g); t++)
		assert_string_equal(atm_graph_tensor(c, t)->name, atm_graph_tensor(s.g, t)->name);
	int32_t m = atm_graph_find_tensor(c, "w.exp_avg"), v = atm_graph_find_tensor(c, "w.exp_avg_sq");
	int32_t st = atm_graph_find_tensor(c, "w.step");
	assert_true(m >= 0 && v >= 0 && st >= 0);
	assert_int_equal(atm_graph_tensor(c, m)->kind, ATM_KIND_OPTIMIZER_STATE);
	assert_int_equal(atm_graph_tensor(c, v)->bytes, atm_graph_tensor(c, s.w)->bytes);
	assert_int_equal(atm_graph_tensor(c, st)->n_elems, 1);
	const atm_node *n = atm_graph_node(c, 6);
	assert_int_equal(n->op, ATM_OP_ADAMW);
	assert_string_equal(n->name, "sgd.w.adamw");
	assert_int_equal(n->n_in, 5);
	int32_t want[5] = {s.w, s.dw, m, v, st};
	for (int i = 0; i < 5; i++)
		assert_int_equal(n->in[i], want[i]);
	assert_true(n->attrs.lr == 1e-3f && n->attrs.beta1 == 0.9f && n->attrs.beta2 == 0.999f);
	assert_true(n->attrs.epsilon == 1e-8f && n->attrs.weight_decay == 1e-2f);
	atm_update back;
	int64_t bytes = 0;
	assert_true(atm_graph_update_of(c, &back, &bytes));
	assert_int_equal(back.kind, ATM_UPDATE_ADAMW);
	assert_int_equal(bytes, 2 * (48 + 12) + 2 * 4);
	/* a graph file keeps it: every attribute read back */
	char *text = NULL;
	atm_graph *r = NULL;
	assert_int_equal(atm_graph_dump(c, &text), ATM_OK);
	assert_non_null(strstr(text, "\"beta2\""));
	assert_int_equal(atm_graph_load_buffer(&r, text, strlen(text), "adamw.json", NULL), ATM_OK);
	const atm_node *rn = atm_graph_node(r, 6);
	assert_int_equal(rn->op, ATM_OP_ADAMW);
	assert_true(rn->attrs.lr == n->attrs.lr && rn->attrs.beta1 == n->attrs.beta1 &&
	            rn->attrs.beta2 == n->attrs.beta2 && rn->attrs.epsilon == n->attrs.epsilon &&
	            rn->attrs.weight_decay == n->attrs.weight_decay);
	free(text);
	atm_graph_destroy(r);
	atm_graph_destroy(c);
	atm_graph_destroy(s.g);
}

/* test_update_momentum_and_sgd -- momentum adds a buffer; SGD with weight decay is
 * sgd_momentum without one; SGD with a learning rate keeps the sgd op; lr 0 keeps each node's */
static void test_update_momentum_and_sgd(void **state)
{
	(void)state;
	struct small s;
	small_build(&s);
	atm_update u = atm_update_defaults(ATM_UPDATE_MOMENTUM);
	atm_graph *c = rewrite(&s, &u);
	const atm_node *n = atm_graph_node(c, 7);
	assert_int_equal(n->op, ATM_OP_SGD_MOMENTUM);
	assert_int_equal(n->n_in, 3);
	assert_string_equal(atm_graph_tensor(c, n->in[2])->name, "b.momentum_buffer");
	assert_true(n->attrs.lr == 0.1f && n->attrs.momentum == 0.9f); /* the node's own lr */
	atm_graph_destroy(c);

	u = atm_update_defaults(ATM_UPDATE_SGD);
	u.weight_decay = 1e-4f;
	c = rewrite(&s, &u);
	n = atm_graph_node(c, 6);
	assert_int_equal(n->op, ATM_OP_SGD_MOMENTUM);
	assert_int_equal(n->n_in, 2);
	assert_int_equal(atm_graph_n_tensors(c), atm_graph_n_tensors(s.g));
	atm_graph_destroy(c);

	u = atm_update_defaults(ATM_UPDATE_SGD);
	u.lr = 0.5f;
	c = rewrite(&s, &u);
	n = atm_graph_node(c, 6);
	assert_int_equal(n->op, ATM_OP_SGD);
	assert_string_equal(n->name, "sgd.w");
	assert_true(n->attrs.lr == 0.5f);
	atm_graph_destroy(c);
	atm_graph_destroy(s.g);
}

/* test_update_refusals -- factors out of range, a step already rewritten, a graph with no SGD:
 * usage errors that say what is wrong */
static void test_update_refusals(void **state)
{
	(void)state;
	struct small s;
	small_build(&s);
	atm_graph *c = NULL;
	atm_update u = atm_update_defaults(ATM_UPDATE_ADAMW);
	u.beta1 = 1.0f;
	assert_int_equal(atm_graph_with_update(s.g, &u, &c), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "betas 1, 0.999: expected each in [0, 1)"));
	assert_null(c);
	u = atm_update_defaults(ATM_UPDATE_ADAMW);
	u.eps = 0;
	assert_int_equal(atm_graph_with_update(s.g, &u, &c), ATM_E_USAGE);
	u = atm_update_defaults(ATM_UPDATE_MOMENTUM);
	u.momentum = 0;
	assert_int_equal(atm_graph_with_update(s.g, &u, &c), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "--optimizer sgd"));
	u.momentum = 0.9f;
	u.weight_decay = -1;
	assert_int_equal(atm_graph_with_update(s.g, &u, &c), ATM_E_USAGE);
	u = atm_update_defaults(ATM_UPDATE_ADAMW);
	atm_graph *a = rewrite(&s, &u);
	assert_int_equal(atm_graph_with_update(a, &u, &c), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "ends in adamw already"));
	atm_graph_destroy(a);
	atm_graph *none = NULL;
	int32_t x;
	int64_t d = 4;
	assert_int_equal(atm_graph_new(&none, "none"), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(none, "x", ATM_F32, 1, &d, ATM_KIND_INPUT, ATM_LOC_ANY,
	                                      &x), ATM_OK);
	assert_int_equal(atm_graph_with_update(none, &u, &c), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "has no SGD update"));
	atm_graph_destroy(none);
	atm_update_kind k;
	assert_int_equal(atm_update_kind_from_name("adam", &k), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "valid: sgd, momentum, adamw"));
	assert_int_equal(atm_update_kind_from_name("momentum", &k), ATM_OK);
	assert_int_equal(k, ATM_UPDATE_MOMENTUM);
	atm_graph_destroy(s.g);
}

/* test_update_states_must_be_state -- an update's states are optimizer states or parameters:
 * an input in the place of AdamW's average is refused by validation, naming it */
static void test_update_states_must_be_state(void **state)
{
	(void)state;
	struct small s;
	small_build(&s);
	atm_graph *g = s.g;
	int64_t wd[2] = {3, 4}, one = 1;
	int32_t m, v, st, id;
	assert_int_equal(atm_graph_add_tensor(g, "m", ATM_F32, 2, wd, ATM_KIND_INPUT, ATM_LOC_ANY, &m),
	                 ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "v", ATM_F32, 2, wd, ATM_KIND_OPTIMIZER_STATE,
	                                      ATM_LOC_ANY, &v), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "t", ATM_F32, 1, &one, ATM_KIND_OPTIMIZER_STATE,
	                                      ATM_LOC_ANY, &st), ATM_OK);
	atm_attrs a = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .epsilon = 1e-8f};
	assert_int_equal(atm_graph_add_node(g, "w.adamw", ATM_OP_ADAMW, &a, 5,
	                                    (int32_t[]){s.w, s.dw, m, v, st}, 0, NULL, &id), ATM_OK);
	assert_int_equal(atm_graph_validate(g), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "updates tensor 'm' in place, which must be a param or "
	                                     "optimizer_state, not input"));
	atm_graph_destroy(g);
}

/* test_update_many_parameters -- a graph whose tensor array grows while the states are added
 * (each parameter's state is made from the parameter's shape and name, copied first) */
static void test_update_many_parameters(void **state)
{
	(void)state;
	atm_graph *g = NULL, *c = NULL;
	assert_int_equal(atm_graph_new(&g, "many"), ATM_OK);
	enum { N = 300 };
	for (int i = 0; i < N; i++) {
		char name[32];
		int64_t dims[2] = {3, i + 1};
		int32_t w, dw, id;
		snprintf(name, sizeof name, "layer%d.weight", i);
		assert_int_equal(atm_graph_add_tensor(g, name, ATM_F32, 2, dims, ATM_KIND_PARAM,
		                                      ATM_LOC_ANY, &w), ATM_OK);
		snprintf(name, sizeof name, "layer%d.grad", i);
		assert_int_equal(atm_graph_add_tensor(g, name, ATM_F32, 2, dims, ATM_KIND_INPUT,
		                                      ATM_LOC_ANY, &dw), ATM_OK);
		snprintf(name, sizeof name, "layer%d.weight.sgd", i);
		atm_attrs a = {.lr = 0.1f};
		assert_int_equal(atm_graph_add_node(g, name, ATM_OP_SGD, &a, 2, (int32_t[]){w, dw}, 0,
		                                    NULL, &id), ATM_OK);
	}
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	atm_update u = atm_update_defaults(ATM_UPDATE_ADAMW);
	assert_int_equal(atm_graph_with_update(g, &u, &c), ATM_OK);
	assert_int_equal(atm_graph_n_tensors(c), 5 * N);
	for (int i = 0; i < N; i++) {
		char name[48];
		snprintf(name, sizeof name, "layer%d.weight.exp_avg_sq", i);
		int32_t t = atm_graph_find_tensor(c, name);
		assert_true(t >= 0);
		assert_int_equal(atm_graph_tensor(c, t)->dims[1], i + 1);
	}
	atm_graph_destroy(c);
	atm_graph_destroy(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_update_adamw),
		cmocka_unit_test(test_update_momentum_and_sgd),
		cmocka_unit_test(test_update_refusals),
		cmocka_unit_test(test_update_states_must_be_state),
		cmocka_unit_test(test_update_many_parameters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
