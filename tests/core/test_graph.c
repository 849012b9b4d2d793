/* test_graph.c -- building graphs through the API: sizes, names, arity, schedule and shape rules */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "atm_core.h"

#define ALLOC_FAIL_WRAP
#include "common/alloc_fail.h"

static int setup(void **state)
{
	atm_graph *g = NULL;
	assert_int_equal(atm_graph_new(&g, "t"), ATM_OK);
	*state = g;
	return 0;
}

static int teardown(void **state)
{
	atm_graph_destroy(*state);
	return 0;
}

static int32_t t4(atm_graph *g, const char *name, int64_t n, int64_t c, int64_t h, int64_t w,
                  atm_tensor_kind kind)
{
	int64_t dims[4] = {n, c, h, w};
	int32_t id;
	assert_int_equal(atm_graph_add_tensor(g, name, ATM_F32, 4, dims, kind, ATM_LOC_ANY, &id), ATM_OK);
	return id;
}

static int32_t t1(atm_graph *g, const char *name, int64_t c, atm_tensor_kind kind)
{
	int32_t id;
	assert_int_equal(atm_graph_add_tensor(g, name, ATM_F32, 1, &c, kind, ATM_LOC_ANY, &id), ATM_OK);
	return id;
}

/* expect_invalid -- validate fails with ATM_E_INPUT and the message holds every fragment */
static void expect_invalid(atm_graph *g, const char *frag1, const char *frag2)
{
	assert_int_equal(atm_graph_validate(g), ATM_E_INPUT);
	if (!strstr(atm_errmsg(), frag1) || (frag2 && !strstr(atm_errmsg(), frag2)))
		fail_msg("message '%s' lacks '%s' / '%s'", atm_errmsg(), frag1, frag2 ? frag2 : "");
}

static void test_graph_tensor_sizes(void **state)
{
	atm_graph *g = *state;
	int64_t dims[4] = {2, 3, 4, 5};
	int32_t id;
	assert_int_equal(atm_graph_add_tensor(g, "a", ATM_F32, 4, dims, ATM_KIND_ACTIVATION,
	                                      ATM_LOC_ANY, &id), ATM_OK);
	const atm_tensor *t = atm_graph_tensor(g, id);
	assert_int_equal(t->n_elems, 120);
	assert_int_equal(t->bytes, 480);
	assert_string_equal(t->name, "a");
	assert_int_equal(atm_graph_find_tensor(g, "a"), id);
	assert_int_equal(atm_graph_find_tensor(g, "b"), -1);
	assert_null(atm_graph_tensor(g, 5));
	assert_null(atm_graph_tensor(g, -1));
}

static void test_graph_rejects_bad_dims(void **state)
{
	atm_graph *g = *state;
	int32_t id;
	int64_t zero[2] = {4, 0}, neg[2] = {-3, 4}, huge[2] = {(int64_t)1 << 41, 2};
	int64_t overflow[3] = {(int64_t)1 << 39, (int64_t)1 << 39, 8};
	int64_t near[2] = {(int64_t)1 << 31, (int64_t)1 << 31}; /* 2^62 elements of 4 bytes */
	assert_int_equal(atm_graph_add_tensor(g, "z", ATM_F32, 2, zero, ATM_KIND_INPUT, 3, &id),
	                 ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "tensor 'z': dimension 1 is 0"));
	assert_int_equal(id, -1);
	assert_int_equal(atm_graph_add_tensor(g, "n", ATM_F32, 2, neg, ATM_KIND_INPUT, 3, &id),
	                 ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "dimension 0 is -3"));
	assert_int_equal(atm_graph_add_tensor(g, "h", ATM_F32, 2, huge, ATM_KIND_INPUT, 3, &id),
	                 ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "largest allowed"));
	assert_int_equal(atm_graph_add_tensor(g, "o", ATM_F32, 3, overflow, ATM_KIND_INPUT, 3, &id),
	                 ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "overflows"));
	assert_int_equal(atm_graph_add_tensor(g, "b", ATM_F32, 2, near, ATM_KIND_INPUT, 3, &id),
	                 ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "tensor 'b': byte size overflows"));
	assert_int_equal(atm_graph_add_tensor(g, "r", ATM_F32, 0, zero, ATM_KIND_INPUT, 3, &id),
	                 ATM_E_INPUT);
	assert_int_equal(atm_graph_add_tensor(g, "r", ATM_F32, 7, zero, ATM_KIND_INPUT, 3, &id),
	                 ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "1 to 6 dimensions"));
	assert_int_equal(atm_graph_add_tensor(g, "l", ATM_F32, 1, near, ATM_KIND_INPUT, 0, &id),
	                 ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "locations"));
	assert_int_equal(atm_graph_n_tensors(g), 0);
}

static void test_graph_rejects_duplicate_names(void **state)
{
	atm_graph *g = *state;
	int32_t a = t1(g, "a", 4, ATM_KIND_PARAM), b = t1(g, "b", 4, ATM_KIND_GRAD), id;
	int64_t d = 4;
	assert_int_equal(atm_graph_add_tensor(g, "a", ATM_F32, 1, &d, ATM_KIND_INPUT, 3, &id),
	                 ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "tensor 'a': the name is used by tensor 0"));
	assert_int_equal(atm_graph_add_tensor(g, "", ATM_F32, 1, &d, ATM_KIND_INPUT, 3, &id),
	                 ATM_E_INPUT);
	(void)b;
	assert_int_equal(atm_graph_add_node(g, "s", ATM_OP_SGD, NULL, 2, (int32_t[]){a, a}, 0, NULL,
	                                    &id), ATM_OK);
	assert_int_equal(atm_graph_add_node(g, "s", ATM_OP_SGD, NULL, 2, (int32_t[]){a, a}, 0, NULL,
	                                    &id), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "node 's': the name is used by node 0"));
}

static void test_graph_many_tensors_stay_indexed(void **state)
{
	atm_graph *g = *state;
	char name[32];
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof name, "t%d", i);
		t1(g, name, 1 + i % 7, ATM_KIND_PARAM);
	}
	for (int i = 0; i < 5000; i += 97) {
		snprintf(name, sizeof name, "t%d", i);
		assert_int_equal(atm_graph_find_tensor(g, name), i);
		assert_string_equal(atm_graph_tensor(g, i)->name, name);
	}
}

static void test_graph_rejects_bad_arity_and_ids(void **state)
{
	atm_graph *g = *state;
	int32_t x = t4(g, "x", 1, 1, 4, 4, ATM_KIND_INPUT), id;
	assert_int_equal(atm_graph_add_node(g, "r", ATM_OP_RELU_FWD, NULL, 2, (int32_t[]){x, x}, 0,
	                                    NULL, &id), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "relu_fwd takes 1 inputs and 1 outputs, got 2 and 0"));
	assert_int_equal(atm_graph_add_node(g, "r", ATM_OP_RELU_FWD, NULL, 1, &x, 1, (int32_t[]){9},
	                                    &id), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "output 0 refers to tensor 9, which does not exist"));
	assert_int_equal(atm_graph_add_node(g, "r", (atm_op)99, NULL, 1, &x, 1, &x, &id), ATM_E_INPUT);
	assert_int_equal(atm_graph_n_nodes(g), 0);
}

static void test_graph_use_before_produce(void **state)
{
	atm_graph *g = *state;
	int32_t x = t4(g, "x", 1, 2, 4, 4, ATM_KIND_INPUT), y = t4(g, "y", 1, 2, 4, 4, ATM_KIND_ACTIVATION);
	int32_t z = t4(g, "z", 1, 2, 4, 4, ATM_KIND_ACTIVATION), id;
	assert_int_equal(atm_graph_add_node(g, "second", ATM_OP_RELU_FWD, NULL, 1, &y, 1, &z, &id), 0);
	assert_int_equal(atm_graph_add_node(g, "first", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &y, &id), 0);
	expect_invalid(g, "node 0 ('second'): input 0, tensor 1 ('y'), is used before it is produced",
	               NULL);
}

static void test_graph_produced_twice_and_never(void **state)
{
	atm_graph *g = *state;
	int32_t x = t4(g, "x", 1, 2, 4, 4, ATM_KIND_INPUT), y = t4(g, "y", 1, 2, 4, 4, ATM_KIND_ACTIVATION);
	int32_t id;
	t4(g, "orphan", 1, 2, 4, 4, ATM_KIND_ACTIVATION);
	assert_int_equal(atm_graph_add_node(g, "a", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &y, &id), 0);
	expect_invalid(g, "tensor 2 ('orphan', activation) is never produced", NULL);
	assert_int_equal(atm_graph_add_node(g, "b", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &y, &id), 0);
	expect_invalid(g, "node 1 ('b'): output 0, tensor 'y', is already produced by node 0 ('a')",
	               NULL);
}

static void test_graph_inputs_are_not_produced(void **state)
{
	atm_graph *g = *state;
	int32_t x = t4(g, "x", 1, 2, 4, 4, ATM_KIND_INPUT), p = t4(g, "p", 1, 2, 4, 4, ATM_KIND_PARAM);
	int32_t id;
	assert_int_equal(atm_graph_add_node(g, "a", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &p, &id), 0);
	expect_invalid(g, "tensor 'p', is of kind param", "cannot be produced");
}

static void test_graph_conv_shapes(void **state)
{
	atm_graph *g = *state;
	int32_t x = t4(g, "x", 2, 3, 8, 8, ATM_KIND_INPUT), w = t4(g, "w", 4, 3, 3, 3, ATM_KIND_PARAM);
	int32_t b = t1(g, "b", 4, ATM_KIND_PARAM), y = t4(g, "y", 2, 4, 4, 4, ATM_KIND_ACTIVATION);
	int32_t id;
	atm_attrs a = {.stride = {2, 2}, .pad = {1, 1, 1, 1}};
	/* (8 + 1 + 1 - 3) / 2 + 1 = 4 */
	assert_int_equal(atm_graph_add_node(g, "c", ATM_OP_CONV_FWD, &a, 3, (int32_t[]){x, w, b}, 1,
	                                    &y, &id), 0);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	int32_t bad = t4(g, "bad", 2, 4, 8, 8, ATM_KIND_ACTIVATION);
	assert_int_equal(atm_graph_add_node(g, "c2", ATM_OP_CONV_FWD, &a, 3, (int32_t[]){x, w, b}, 1,
	                                    &bad, &id), 0);
	expect_invalid(g, "node 1 ('c2', conv_fwd): output 'bad' has shape [2, 4, 8, 8]",
	               "expected [2, 4, 4, 4]");
}

static void test_graph_conv_channel_mismatch(void **state)
{
	atm_graph *g = *state;
	int32_t x = t4(g, "x", 2, 3, 8, 8, ATM_KIND_INPUT), w = t4(g, "w", 4, 5, 3, 3, ATM_KIND_PARAM);
	int32_t y = t4(g, "y", 2, 4, 6, 6, ATM_KIND_ACTIVATION), id;
	assert_int_equal(atm_graph_add_node(g, "c", ATM_OP_CONV_FWD, NULL, 2, (int32_t[]){x, w}, 1,
	                                    &y, &id), 0);
	expect_invalid(g, "weights 'w' expect 5 input channels but 'x' has 3", NULL);
}

static void test_graph_pool_and_window(void **state)
{
	atm_graph *g = *state;
	int32_t x = t4(g, "x", 1, 2, 2, 2, ATM_KIND_INPUT), y = t4(g, "y", 1, 2, 1, 1, ATM_KIND_ACTIVATION);
	int32_t ws, id;
	int64_t d[4] = {1, 2, 1, 1};
	assert_int_equal(atm_graph_add_tensor(g, "ws", ATM_F32, 4, d, ATM_KIND_ACTIVATION, 3, &ws), 0);
	atm_attrs a = {.kernel = {2, 2}, .stride = {2, 2}};
	assert_int_equal(atm_graph_add_node(g, "p", ATM_OP_MAXPOOL_FWD, &a, 1, &x, 2,
	                                    (int32_t[]){y, ws}, &id), 0);
	expect_invalid(g, "argmax workspace 'ws' must be i32, got f32", NULL);
}

static void test_graph_pool_window_too_big(void **state)
{
	atm_graph *g = *state;
	int32_t x = t4(g, "x", 1, 2, 2, 2, ATM_KIND_INPUT), y = t4(g, "y", 1, 2, 1, 1, ATM_KIND_ACTIVATION);
	int32_t id;
	atm_attrs a = {.kernel = {3, 3}, .stride = {1, 1}};
	assert_int_equal(atm_graph_add_node(g, "p", ATM_OP_AVGPOOL_FWD, &a, 1, &x, 1, &y, &id), 0);
	expect_invalid(g, "a 3x3 window does not fit input 'x' of shape [1, 2, 2, 2]", NULL);
}

static void test_graph_concat_and_split(void **state)
{
	atm_graph *g = *state;
	int32_t a = t4(g, "a", 2, 3, 4, 4, ATM_KIND_INPUT), b = t4(g, "b", 2, 5, 4, 4, ATM_KIND_INPUT);
	int32_t y = t4(g, "y", 2, 8, 4, 4, ATM_KIND_ACTIVATION);
	int32_t da = t4(g, "da", 2, 3, 4, 4, ATM_KIND_GRAD), db = t4(g, "db", 2, 5, 4, 4, ATM_KIND_GRAD);
	int32_t id;
	atm_attrs ax = {.axis = 1};
	assert_int_equal(atm_graph_add_node(g, "cat", ATM_OP_CONCAT, &ax, 2, (int32_t[]){a, b}, 1, &y,
	                                    &id), 0);
	assert_int_equal(atm_graph_add_node(g, "split", ATM_OP_SPLIT, &ax, 1, &y, 2,
	                                    (int32_t[]){da, db}, &id), 0);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	int32_t z = t4(g, "z", 2, 9, 4, 4, ATM_KIND_ACTIVATION);
	assert_int_equal(atm_graph_add_node(g, "cat2", ATM_OP_CONCAT, &ax, 2, (int32_t[]){a, b}, 1,
	                                    &z, &id), 0);
	expect_invalid(g, "the parts add up to 8 along axis 1 but 'z' has 9", NULL);
}

/* Parts of the concats below: more operands than most nodes have. */
#define N_PARTS 40

/* concat_many -- node "cat" joining N_PARTS parts [1, 1, 2, 2] along the channels into
 * [1, N_PARTS, 2, 2], but part N_PARTS - 2, "odd", which is of dtype and has odd_channels */
static int32_t concat_many(atm_graph *g, atm_dtype dtype, int64_t odd_channels)
{
	int32_t parts[N_PARTS], y, id;
	int64_t odd[4] = {1, odd_channels, 2, 2};
	char name[16];
	atm_attrs ax = {.axis = 1};
	for (int i = 0; i < N_PARTS; i++) {
		snprintf(name, sizeof name, "p%d", i);
		if (i == N_PARTS - 2)
			assert_int_equal(atm_graph_add_tensor(g, "odd", dtype, 4, odd, ATM_KIND_INPUT,
			                                      ATM_LOC_ANY, &parts[i]), ATM_OK);
		else
			parts[i] = t4(g, name, 1, 1, 2, 2, ATM_KIND_INPUT);
	}
	y = t4(g, "y", 1, N_PARTS, 2, 2, ATM_KIND_ACTIVATION);
	assert_int_equal(atm_graph_add_node(g, "cat", ATM_OP_CONCAT, &ax, N_PARTS, parts, 1, &y, &id),
	                 ATM_OK);
	return id;
}

/* test_graph_concat_of_many_parts -- every part of a long concat is checked and counted in its
 * work */
static void test_graph_concat_of_many_parts(void **state)
{
	atm_graph *g = *state;
	atm_work w;
	int32_t id = concat_many(g, ATM_F32, 1);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	/* one operation an element read; every part read and the whole written once */
	assert_int_equal(atm_node_work(g, id, &w), ATM_OK);
	assert_true(w.flops == N_PARTS * 4 && w.traffic_bytes == 2 * N_PARTS * 4 * 4);
}

/* validate_once, work_once -- one whole call on the long concat */
static atm_status validate_once(void *g)
{
	return atm_graph_validate(g);
}

static atm_status work_once(void *g)
{
	atm_work w;
	return atm_node_work(g, 0, &w);
}

/* test_graph_concat_of_many_parts_out_of_memory -- its operands, too many to resolve without an
 * allocation, are out of memory as a status */
static void test_graph_concat_of_many_parts_out_of_memory(void **state)
{
	atm_graph *g = *state;
	concat_many(g, ATM_F32, 1);
	assert_true(alloc_fail_sweep("atm_graph_validate", validate_once, g) >= 2);
	assert_true(alloc_fail_sweep("atm_node_work", work_once, g) >= 1);
}

/* test_graph_concat_of_many_parts_names_the_odd_one -- a wrong part past the first few */
static void test_graph_concat_of_many_parts_names_the_odd_one(void **state)
{
	atm_graph *g = *state, *g2 = NULL;
	concat_many(g, ATM_F32, 2);
	expect_invalid(g, "the parts add up to 41 along axis 1 but 'y' has 40", NULL);
	assert_int_equal(atm_graph_new(&g2, "t2"), ATM_OK);
	concat_many(g2, ATM_I32, 1);
	assert_int_equal(atm_graph_validate(g2), ATM_E_INPUT);
	assert_string_equal(atm_errmsg(),
	                    "node 0 ('cat', concat): tensor 'odd' is i32; concat takes f32 or bf16");
	atm_graph_destroy(g2);
}

static void test_graph_batch_norm_and_loss(void **state)
{
	atm_graph *g = *state;
	int32_t x = t4(g, "x", 2, 3, 4, 4, ATM_KIND_INPUT), gm = t1(g, "gamma", 3, ATM_KIND_PARAM);
	int32_t bt = t1(g, "beta", 4, ATM_KIND_PARAM), y = t4(g, "y", 2, 3, 4, 4, ATM_KIND_ACTIVATION);
	int32_t m = t1(g, "m", 3, ATM_KIND_ACTIVATION), v = t1(g, "v", 3, ATM_KIND_ACTIVATION), id;
	atm_attrs a = {.epsilon = 1e-5f};
	assert_int_equal(atm_graph_add_node(g, "bn", ATM_OP_BN_FWD, &a, 3, (int32_t[]){x, gm, bt}, 3,
	                                    (int32_t[]){y, m, v}, &id), 0);
	expect_invalid(g, "beta 'beta' has shape [4]; expected [3]", NULL);
}

/* test_graph_mul_broadcast -- mul's second operand broadcasts to the first's shape (trailing
 * dims, each equal or 1), and mul_bwd's output to its gradient's: otherwise a message naming
 * both shapes */
static void test_graph_mul_broadcast(void **state)
{
	atm_graph *g = *state;
	int32_t x = t4(g, "x", 2, 3, 4, 4, ATM_KIND_INPUT), s = t4(g, "s", 2, 3, 1, 1, ATM_KIND_INPUT);
	int32_t c = t1(g, "c", 4, ATM_KIND_INPUT), bad = t1(g, "bad", 3, ATM_KIND_INPUT);
	int32_t y = t4(g, "y", 2, 3, 4, 4, ATM_KIND_ACTIVATION);
	int32_t y2 = t4(g, "y2", 2, 3, 4, 4, ATM_KIND_ACTIVATION);
	int32_t ds = t4(g, "ds", 2, 3, 1, 1, ATM_KIND_GRAD), id;
	assert_int_equal(atm_graph_add_node(g, "se", ATM_OP_MUL, NULL, 2, (int32_t[]){x, s}, 1, &y, &id),
	                 ATM_OK);
	assert_int_equal(atm_graph_add_node(g, "se.bwd", ATM_OP_MUL_BWD, NULL, 2, (int32_t[]){y, x}, 1,
	                                    &ds, &id), ATM_OK);
	assert_int_equal(atm_graph_add_node(g, "scale", ATM_OP_MUL, NULL, 2, (int32_t[]){y, c}, 1, &y2,
	                                    &id), ATM_OK);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	int32_t y3 = t4(g, "y3", 2, 3, 4, 4, ATM_KIND_ACTIVATION);
	assert_int_equal(atm_graph_add_node(g, "odd", ATM_OP_MUL, NULL, 2, (int32_t[]){y2, bad}, 1, &y3,
	                                    &id), ATM_OK);
	expect_invalid(g, "input 'bad' has shape [3], which does not broadcast to input 'y2' of shape "
	               "[2, 3, 4, 4]", NULL);
}

static void test_graph_sgd_only_updates_params(void **state)
{
	atm_graph *g = *state;
	int32_t x = t1(g, "x", 3, ATM_KIND_INPUT), dx = t1(g, "dx", 3, ATM_KIND_INPUT), id;
	atm_attrs a = {.lr = 0.1f};
	assert_int_equal(atm_graph_add_node(g, "sgd", ATM_OP_SGD, &a, 2, (int32_t[]){x, dx}, 0, NULL,
	                                    &id), 0);
	expect_invalid(g, "sgd updates tensor 'x' in place, which must be a param", NULL);
}

/* test_graph_producer -- the node that writes a tensor; -1 for inputs and for ids out of range */
static void test_graph_producer(void **state)
{
	atm_graph *g = *state;
	int32_t x = t1(g, "x", 3, ATM_KIND_INPUT), y = t1(g, "y", 3, ATM_KIND_ACTIVATION);
	int32_t z = t1(g, "z", 3, ATM_KIND_ACTIVATION), id;
	assert_int_equal(atm_graph_add_node(g, "r1", ATM_OP_RELU_FWD, NULL, 1, &x, 1, &y, &id), 0);
	assert_int_equal(atm_graph_add_node(g, "r2", ATM_OP_RELU_FWD, NULL, 1, &y, 1, &z, &id), 0);
	assert_int_equal(atm_graph_producer(g, y), 0);
	assert_int_equal(atm_graph_producer(g, z), 1);
	assert_int_equal(atm_graph_producer(g, x), -1);
	assert_int_equal(atm_graph_producer(g, 99), -1);
}

/* test_graph_inplace_ops -- the updates write in place and no other op does: SGD its
 * parameter, SGD with momentum the parameter and its buffer, AdamW the parameter, its two
 * averages and its step (the schedule drops their other copies, and nothing else's) */
static void test_graph_inplace_ops(void **state)
{
	(void)state;
	int n = 0;
	for (int op = 0; op < ATM_N_OPS; op++)
		n += atm_op_is_inplace((atm_op)op);
	assert_int_equal(n, 3);
	assert_true(atm_op_is_inplace(ATM_OP_SGD));
	assert_true(atm_op_writes_input(ATM_OP_SGD, 0));
	assert_false(atm_op_writes_input(ATM_OP_SGD, 1));
	assert_true(atm_op_writes_input(ATM_OP_SGD_MOMENTUM, 2));
	assert_false(atm_op_writes_input(ATM_OP_SGD_MOMENTUM, 1));
	for (int i = 0; i < 5; i++)
		assert_int_equal(atm_op_writes_input(ATM_OP_ADAMW, i), i != 1);
	assert_false(atm_op_writes_input(ATM_OP_ADAMW, 5));
	assert_false(atm_op_is_inplace(ATM_OP_RELU_FWD));
	assert_false(atm_op_is_inplace(ATM_OP_ADD));
}

/* test_graph_total_size_bounded -- tensors and workspaces together stay within
 * ATM_MAX_GRAPH_BYTES: the tensor or workspace that would pass it is refused by name, so that no
 * sum of sizes over a step overflows */
static void test_graph_total_size_bounded(void **state)
{
	atm_graph *g = *state;
	int64_t dims[2] = {(int64_t)1 << 38, (int64_t)1 << 20}; /* 2^60 bytes of f32 */
	int32_t a, b, c;
	assert_int_equal(atm_graph_add_tensor(g, "a", ATM_F32, 2, dims, ATM_KIND_INPUT, ATM_LOC_ANY,
	                                      &a), ATM_OK);
	dims[0] >>= 1; /* 2^59 */
	assert_int_equal(atm_graph_add_tensor(g, "b", ATM_F32, 2, dims, ATM_KIND_ACTIVATION,
	                                      ATM_LOC_ANY, &b), ATM_OK);
	dims[0] <<= 1;
	assert_int_equal(atm_graph_add_tensor(g, "c", ATM_F32, 2, dims, ATM_KIND_ACTIVATION,
	                                      ATM_LOC_ANY, &c), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "tensor 'c'"));
	assert_non_null(strstr(atm_errmsg(), "2048.00 PiB"));
	int32_t in[1] = {a}, out[1] = {b}, node;
	assert_int_equal(atm_graph_add_node(g, "r", ATM_OP_RELU_FWD, NULL, 1, in, 1, out, &node),
	                 ATM_OK);
	/* 2^60 + 2^59 so far: a workspace of 2^59 fits, one byte more does not */
	assert_int_equal(atm_graph_set_workspace(g, node, (int64_t)1 << 59), ATM_OK);
	assert_int_equal(atm_graph_set_workspace(g, node, ((int64_t)1 << 59) + 1), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "node 'r'"));
	/* a smaller workspace replaces the old one's bytes */
	assert_int_equal(atm_graph_set_workspace(g, node, 1), ATM_OK);
	assert_int_equal(atm_graph_set_workspace(g, node, (int64_t)1 << 59), ATM_OK);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_graph_tensor_sizes),
		T(test_graph_rejects_bad_dims),
		T(test_graph_rejects_duplicate_names),
		T(test_graph_many_tensors_stay_indexed),
		T(test_graph_rejects_bad_arity_and_ids),
		T(test_graph_use_before_produce),
		T(test_graph_produced_twice_and_never),
		T(test_graph_inputs_are_not_produced),
		T(test_graph_conv_shapes),
		T(test_graph_conv_channel_mismatch),
		T(test_graph_pool_and_window),
		T(test_graph_pool_window_too_big),
		T(test_graph_concat_and_split),
		T(test_graph_concat_of_many_parts),
		T(test_graph_concat_of_many_parts_names_the_odd_one),
		T(test_graph_concat_of_many_parts_out_of_memory),
		T(test_graph_batch_norm_and_loss),
		T(test_graph_mul_broadcast),
		T(test_graph_sgd_only_updates_params),
		T(test_graph_producer),
		T(test_graph_total_size_bounded),
		cmocka_unit_test(test_graph_inplace_ops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
