/* test_data_parallel.c -- a training step made data-parallel: gradients averaged in buckets before
 * their updates, the means named and placed as tensors, a graph file's round trip, refusals */
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
#include "atm_zoo.h"

/* built -- the zoo's network (checked to build) */
static atm_graph *built(const char *name)
{
	atm_graph *g = NULL;
	if (atm_zoo_build(&g, name, NULL) < 0)
		fail_msg("%s", atm_errmsg());
	return g;
}

/* data_parallel -- g over ranks with buckets of bucket_bytes (checked to succeed) */
static atm_graph *data_parallel(const atm_graph *g, int ranks, int64_t bucket_bytes)
{
	atm_graph *c = NULL;
	if (atm_graph_with_allreduce(g, ranks, bucket_bytes, &c) < 0)
		fail_msg("%s", atm_errmsg());
	return c;
}

/* check_buckets -- every update of c reads a mean that an allreduce over ranks made just
 * before it (its bucket's), every gradient averaged once, buckets within their limits; the
 * number of buckets */
static int check_buckets(const atm_graph *g, const atm_graph *c, int ranks, int64_t bucket_bytes)
{
	int buckets = 0, updates = 0, averaged = 0;
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++)
		updates += atm_op_is_update(atm_graph_node(g, i)->op);
	for (int32_t i = 0; i < atm_graph_n_nodes(c); i++) {
		const atm_node *n = atm_graph_node(c, i);
		if (n->op != ATM_OP_ALLREDUCE)
			continue;
		int64_t bytes = 0;
		buckets++;
		assert_int_equal(n->attrs.ranks, ranks);
		assert_int_equal(n->n_in, n->n_out);
		assert_true(n->n_in <= ATM_ALLREDUCE_BUCKET_TENSORS);
		for (int k = 0; k < n->n_in; k++) {
			const atm_tensor *dw = atm_graph_tensor(c, n->in[k]);
			const atm_tensor *m = atm_graph_tensor(c, n->out[k]);
			char want[1100];
			snprintf(want, sizeof want, "%s.mean", dw->name);
			assert_string_equal(m->name, want);
			assert_int_equal(m->kind, ATM_KIND_GRAD);
			assert_int_equal(m->bytes, dw->bytes);
			bytes += dw->bytes;
			/* its update comes after the allreduce, the bucket's updates right after it */
			const atm_node *u = atm_graph_node(c, i + 1 + k);
			assert_true(atm_op_is_update(u->op));
			assert_int_equal(u->in[1], m->id);
		}
		assert_true(n->n_in == 1 || bytes <= bucket_bytes);
		averaged += n->n_in;
	}
	assert_int_equal(averaged, updates);
	/* no update reads a gradient that was not averaged */
	for (int32_t i = 0; i < atm_graph_n_nodes(c); i++) {
		const atm_node *n = atm_graph_node(c, i);
		if (atm_op_is_update(n->op))
			assert_non_null(strstr(atm_graph_tensor(c, n->in[1])->name, ".mean"));
	}
	return buckets;
}

/* test_data_parallel_buckets -- one bucket for a small network under the default size, one per
 * gradient or so with small buckets; the nodes, tensors and order as documented */
static void test_data_parallel_buckets(void **state)
{
	(void)state;
	atm_graph *g = built("tiny_cnn");
	atm_graph *c = data_parallel(g, 2, 0);
	assert_int_equal(check_buckets(g, c, 2, ATM_ALLREDUCE_BUCKET_BYTES), 1);
	assert_int_equal(atm_graph_ranks(c), 2);
	assert_int_equal(atm_graph_ranks(g), 1);
	assert_int_equal(atm_graph_validate(c), ATM_OK);
	atm_graph_destroy(c);
	c = data_parallel(g, 4, 1024);
	int buckets = check_buckets(g, c, 4, 1024);
	assert_true(buckets > 2);
	assert_non_null(atm_graph_node(c, atm_graph_n_nodes(c) - 1)); /* ends in an update */
	assert_true(atm_op_is_update(atm_graph_node(c, atm_graph_n_nodes(c) - 1)->op));
	atm_graph_destroy(c);
	atm_graph_destroy(g);
}

/* test_data_parallel_many_inputs -- a node of more inputs than an update has (DenseNet's concats
 * of dozens of layers) is copied as it is */
static void test_data_parallel_many_inputs(void **state)
{
	(void)state;
	atm_graph *g = built("densenet264"); /* block 3: a concat of 65 */
	int most = 0;
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++)
		most = atm_graph_node(g, i)->n_in > most ? atm_graph_node(g, i)->n_in : most;
	assert_true(most > ATM_ALLREDUCE_BUCKET_TENSORS + 8);
	atm_graph *c = data_parallel(g, 2, 0);
	check_buckets(g, c, 2, ATM_ALLREDUCE_BUCKET_BYTES);
	atm_graph_destroy(c);
	atm_graph_destroy(g);
}

/* test_data_parallel_with_adamw -- an AdamW step's gradients are averaged as SGD's are */
static void test_data_parallel_with_adamw(void **state)
{
	(void)state;
	atm_graph *g = built("tiny_mlp"), *a = NULL;
	atm_update u = atm_update_defaults(ATM_UPDATE_ADAMW);
	assert_int_equal(atm_graph_with_update(g, &u, &a), ATM_OK);
	atm_graph *c = data_parallel(a, 3, 0);
	assert_int_equal(check_buckets(a, c, 3, ATM_ALLREDUCE_BUCKET_BYTES), 1);
	atm_update back;
	int64_t bytes = 0;
	assert_true(atm_graph_update_of(c, &back, &bytes)); /* the allreduce is no update */
	assert_int_equal(back.kind, ATM_UPDATE_ADAMW);
	atm_graph_destroy(c);
	atm_graph_destroy(a);
	atm_graph_destroy(g);
}

/* test_data_parallel_graph_file -- a graph file keeps the allreduce and its ranks */
static void test_data_parallel_graph_file(void **state)
{
	(void)state;
	atm_graph *g = built("tiny_mlp"), *c = data_parallel(g, 2, 0), *back = NULL;
	char *text = NULL, *again = NULL;
	assert_int_equal(atm_graph_dump(c, &text), ATM_OK);
	assert_non_null(strstr(text, "\"op\": \"allreduce\""));
	assert_non_null(strstr(text, "\"ranks\": 2"));
	assert_int_equal(atm_graph_load_buffer(&back, text, strlen(text), "dp.json", NULL), ATM_OK);
	assert_int_equal(atm_graph_ranks(back), 2);
	assert_int_equal(atm_graph_dump(back, &again), ATM_OK);
	assert_string_equal(text, again);
	/* ranks below one are refused with the field named */
	char *bad = strstr(text, "\"ranks\": 2");
	memcpy(bad, "\"ranks\": 0", 10);
	atm_graph *none = NULL;
	assert_int_equal(atm_graph_load_buffer(&none, text, strlen(text), "dp.json", NULL), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "ranks"));
	free(text);
	free(again);
	atm_graph_destroy(back);
	atm_graph_destroy(c);
	atm_graph_destroy(g);
}

/* test_data_parallel_refusals -- one rank, no update, an allreduce already: usage errors */
static void test_data_parallel_refusals(void **state)
{
	(void)state;
	atm_graph *g = built("tiny_mlp"), *c = NULL, *twice = NULL;
	assert_int_equal(atm_graph_with_allreduce(g, 1, 0, &c), ATM_E_USAGE);
	assert_null(c);
	assert_non_null(strstr(atm_errmsg(), "takes 2 or more"));
	c = data_parallel(g, 2, 0);
	assert_int_equal(atm_graph_with_allreduce(c, 2, 0, &twice), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "averages its gradients already"));
	atm_graph_destroy(c);
	atm_graph_destroy(g);
	atm_graph *plain = NULL;
	int32_t x, w, y, id;
	int64_t d[2] = {2, 3};
	assert_int_equal(atm_graph_new(&plain, "no_update"), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(plain, "x", ATM_F32, 2, d, ATM_KIND_INPUT, ATM_LOC_ANY,
	                                      &x), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(plain, "w", ATM_F32, 2, d, ATM_KIND_PARAM, ATM_LOC_ANY,
	                                      &w), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(plain, "y", ATM_F32, 2, d, ATM_KIND_OUTPUT, ATM_LOC_ANY,
	                                      &y), ATM_OK);
	assert_int_equal(atm_graph_add_node(plain, "add", ATM_OP_ADD, NULL, 2, (int32_t[]){x, w}, 1,
	                                    &y, &id), ATM_OK);
	assert_int_equal(atm_graph_with_allreduce(plain, 2, 0, &c), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "no update"));
	atm_graph_destroy(plain);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_data_parallel_buckets),
		cmocka_unit_test(test_data_parallel_many_inputs),
		cmocka_unit_test(test_data_parallel_with_adamw),
		cmocka_unit_test(test_data_parallel_graph_file),
		cmocka_unit_test(test_data_parallel_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
