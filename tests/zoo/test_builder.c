/* test_builder.c -- the zoo's layer builder: derived backward pass, gradient sums, SGD placement, sticky errors, cleanup */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_zoo.h"
#include "builder.h"
/* every allocation of the zoo and the core (linked with --wrap=malloc and the others) */
#define ALLOC_FAIL_WRAP
#include "common/alloc_fail.h"

static const zb_spec spec = {.name = "t", .batch = 2, .n_classes = 10, .image = 16, .lr = 0.25f};

/* setup -- a fresh builder per test */
static int setup(void **state)
{
	zb *b = NULL;
	assert_int_equal(zb_new(&b, &spec), ATM_OK);
	*state = b;
	return 0;
}

/* teardown -- frees the builder and whatever graph it still owns */
static int teardown(void **state)
{
	zb_destroy(*state);
	return 0;
}

/* expect_msg -- the current message holds frag */
static void expect_msg(const char *frag)
{
	if (!strstr(atm_errmsg(), frag))
		fail_msg("message '%s' lacks '%s'", atm_errmsg(), frag);
}

/* tensor_id -- id of the tensor called name; fails the test when there is none */
static int32_t tensor_id(const atm_graph *g, const char *name)
{
	int32_t id = atm_graph_find_tensor(g, name);
	if (id < 0)
		fail_msg("no tensor '%s'", name);
	return id;
}

/* node_named -- index of the node called name, or -1 */
static int32_t node_named(const atm_graph *g, const char *name)
{
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++)
		if (strcmp(atm_graph_node(g, i)->name, name) == 0)
			return i;
	return -1;
}

/* count_op -- how many nodes run op */
static int count_op(const atm_graph *g, atm_op op)
{
	int n = 0;
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++)
		n += atm_graph_node(g, i)->op == op;
	return n;
}

/* fanout -- image, conv a (bias), relu r feeding convs b and c, s = b + c, pool, fc */
static atm_graph *fanout(zb *b)
{
	atm_graph *g = NULL;
	int32_t x = zb_image(b, 3, 16, 16);
	x = zb_conv(b, "a", x, 4, 3, 3, 1, 1, 1, true);
	int32_t r = zb_relu(b, "r", x);
	int32_t y0 = zb_conv(b, "b", r, 4, 3, 3, 1, 1, 1, false);
	int32_t y1 = zb_conv(b, "c", r, 4, 1, 1, 1, 0, 0, false);
	int32_t s = zb_add(b, "s", y0, y1);
	s = zb_maxpool(b, "p", s, 2, 2, 0);
	s = zb_fc(b, "fc", s, 10);
	assert_int_equal(zb_finish(b, s, &g), ATM_OK);
	assert_non_null(g);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	return g;
}

/* test_builder_fanout_accumulates -- a tensor read by two layers gets its gradient parts summed by an add */
static void test_builder_fanout_accumulates(void **state)
{
	atm_graph *g = fanout(*state);
	/* r.y feeds b and c: two partial gradients and one add summing them into r.y.grad */
	int32_t p1 = tensor_id(g, "r.y.grad.1"), p2 = tensor_id(g, "r.y.grad.2");
	int32_t sum = tensor_id(g, "r.y.grad");
	int32_t acc = node_named(g, "r.y.grad.acc2");
	assert_true(acc >= 0);
	const atm_node *n = atm_graph_node(g, acc);
	assert_int_equal(n->op, ATM_OP_ADD);
	assert_int_equal(n->in[0], p1);
	assert_int_equal(n->in[1], p2);
	assert_int_equal(n->out[0], sum);
	assert_int_equal(atm_graph_tensor(g, sum)->kind, ATM_KIND_GRAD);
	/* c is the later consumer, so its gradient comes first; the sum follows the second */
	assert_int_equal(atm_graph_producer(g, p1), node_named(g, "c.bwd_data"));
	assert_int_equal(atm_graph_producer(g, p2), node_named(g, "b.bwd_data"));
	assert_int_equal(acc, node_named(g, "b.bwd_data") + 1);
	/* the relu's backward reads the complete sum */
	const atm_node *rb = atm_graph_node(g, node_named(g, "r.bwd"));
	assert_int_equal(rb->op, ATM_OP_RELU_BWD);
	assert_int_equal(rb->in[1], sum);
	/* one add forward, one add summing gradients */
	assert_int_equal(count_op(g, ATM_OP_ADD), 2);
	atm_graph_destroy(g);
}

/* test_builder_add_passes_gradient -- the gradient of a sum feeds both addends as is, with no kernel */
static void test_builder_add_passes_gradient(void **state)
{
	atm_graph *g = fanout(*state);
	/* d(b + c) = dy for both: the same tensor feeds both backward passes */
	int32_t ds = tensor_id(g, "s.y.grad");
	assert_int_equal(atm_graph_node(g, node_named(g, "b.bwd_data"))->in[0], ds);
	assert_int_equal(atm_graph_node(g, node_named(g, "c.bwd_data"))->in[0], ds);
	assert_int_equal(atm_graph_node(g, node_named(g, "b.bwd_weights"))->in[1], ds);
	assert_int_equal(atm_graph_node(g, node_named(g, "c.bwd_weights"))->in[1], ds);
	assert_int_equal(atm_graph_find_tensor(g, "b.y.grad"), -1);
	assert_int_equal(atm_graph_find_tensor(g, "c.y.grad"), -1);
	atm_graph_destroy(g);
}

/* test_builder_first_layer_has_no_data_gradient -- nothing computes the gradient of the image */
static void test_builder_first_layer_has_no_data_gradient(void **state)
{
	atm_graph *g = fanout(*state);
	assert_int_equal(node_named(g, "a.bwd_data"), -1);
	assert_true(node_named(g, "a.bwd_weights") >= 0);
	assert_int_equal(atm_graph_find_tensor(g, "image.grad"), -1);
	assert_int_equal(count_op(g, ATM_OP_CONV_BWD_DATA), 2);
	assert_int_equal(count_op(g, ATM_OP_CONV_BWD_WEIGHTS), 3);
	atm_graph_destroy(g);
}

/* test_builder_sgd_after_gradient -- each update comes right after its gradient and after the last read of its weights */
static void test_builder_sgd_after_gradient(void **state)
{
	atm_graph *g = fanout(*state);
	/* a has a bias: weights gradient, then both updates */
	int32_t bw = node_named(g, "a.bwd_weights");
	const atm_node *n = atm_graph_node(g, bw);
	assert_int_equal(n->n_out, 2);
	assert_int_equal(n->out[0], tensor_id(g, "a.w.grad"));
	assert_int_equal(n->out[1], tensor_id(g, "a.b.grad"));
	assert_int_equal(node_named(g, "a.w.sgd"), bw + 1);
	assert_int_equal(node_named(g, "a.b.sgd"), bw + 2);
	const atm_node *s = atm_graph_node(g, bw + 1);
	assert_int_equal(s->op, ATM_OP_SGD);
	assert_int_equal(s->n_out, 0);
	assert_int_equal(s->in[0], tensor_id(g, "a.w"));
	assert_int_equal(s->in[1], tensor_id(g, "a.w.grad"));
	assert_true(s->attrs.lr == 0.25f);
	/* b's weights are read by its data gradient, which comes before the update */
	assert_true(node_named(g, "b.bwd_data") < node_named(g, "b.w.sgd"));
	assert_int_equal(node_named(g, "b.w.sgd"), node_named(g, "b.bwd_weights") + 1);
	/* fc: inner-product gradients and two updates */
	int32_t fw = node_named(g, "fc.bwd_weights");
	assert_int_equal(atm_graph_node(g, fw)->op, ATM_OP_IP_BWD_WEIGHTS);
	assert_int_equal(node_named(g, "fc.w.sgd"), fw + 1);
	assert_int_equal(node_named(g, "fc.b.sgd"), fw + 2);
	assert_int_equal(atm_graph_node(g, node_named(g, "fc.bwd_data"))->op, ATM_OP_IP_BWD_DATA);
	assert_int_equal(count_op(g, ATM_OP_SGD), 6);
	atm_graph_destroy(g);
}

/* test_builder_backward_inputs -- each backward op reads what its forward saved: y, argmax, mean and var */
static void test_builder_backward_inputs(void **state)
{
	zb *b = *state;
	atm_graph *g = NULL;
	int32_t x = zb_image(b, 3, 16, 16);
	x = zb_conv(b, "conv", x, 8, 3, 3, 1, 1, 1, false);
	int32_t bn = zb_bn(b, "bn", x);
	int32_t r = zb_relu(b, "relu", bn);
	int32_t p = zb_maxpool(b, "pool", r, 3, 2, 1);
	int32_t q = zb_avgpool(b, "avg", p, 3, 1, 1, true);
	int32_t c = zb_concat(b, "cat", 2, (int32_t[]){p, q});
	int32_t gp = zb_global_avgpool(b, "gap", c);
	int32_t y = zb_fc(b, "fc", gp, 10);
	assert_int_equal(zb_finish(b, y, &g), ATM_OK);
	assert_int_equal(atm_graph_validate(g), ATM_OK);

	/* batch norm: x, dy, gamma, saved mean, saved var -> dx, dgamma, dbeta */
	const atm_node *n = atm_graph_node(g, node_named(g, "bn.bwd"));
	assert_int_equal(n->op, ATM_OP_BN_BWD);
	assert_int_equal(n->in[0], x);
	assert_int_equal(n->in[1], tensor_id(g, "bn.y.grad"));
	assert_int_equal(n->in[2], tensor_id(g, "bn.gamma"));
	assert_int_equal(n->in[3], tensor_id(g, "bn.mean"));
	assert_int_equal(n->in[4], tensor_id(g, "bn.var"));
	assert_int_equal(n->out[0], tensor_id(g, "conv.y.grad"));
	assert_int_equal(n->out[1], tensor_id(g, "bn.gamma.grad"));
	assert_int_equal(n->out[2], tensor_id(g, "bn.beta.grad"));
	assert_true(n->attrs.epsilon == 1e-5f);
	/* relu backward reads the forward output */
	n = atm_graph_node(g, node_named(g, "relu.bwd"));
	assert_int_equal(n->in[0], r);
	/* max pool backward reads the i32 argmax of the forward */
	n = atm_graph_node(g, node_named(g, "pool.bwd"));
	assert_int_equal(n->op, ATM_OP_MAXPOOL_BWD);
	assert_int_equal(n->in[1], tensor_id(g, "pool.argmax"));
	assert_int_equal(atm_graph_tensor(g, n->in[1])->dtype, ATM_I32);
	assert_int_equal(n->attrs.kernel[0], 3);
	assert_int_equal(n->attrs.stride[0], 2);
	assert_int_equal(n->attrs.pad[2], 1);
	/* average pool backward keeps the forward's attributes */
	n = atm_graph_node(g, node_named(g, "avg.bwd"));
	assert_int_equal(n->op, ATM_OP_AVGPOOL_BWD);
	assert_true(n->attrs.exclude_pad);
	/* concat backward: a split along channels into one gradient per part */
	n = atm_graph_node(g, node_named(g, "cat.bwd"));
	assert_int_equal(n->op, ATM_OP_SPLIT);
	assert_int_equal(n->attrs.axis, 1);
	assert_int_equal(n->n_out, 2);
	assert_int_equal(n->in[0], tensor_id(g, "cat.y.grad"));
	assert_int_equal(n->out[1], tensor_id(g, "avg.y.grad"));
	/* pool.y feeds cat and avg: its gradient is the sum of two parts */
	assert_true(node_named(g, "pool.y.grad.acc2") >= 0);
	/* the loss: probabilities and labels in, logits gradient out */
	n = atm_graph_node(g, node_named(g, "loss.bwd"));
	assert_int_equal(n->op, ATM_OP_SOFTMAX_XENT_BWD);
	assert_int_equal(n->in[0], tensor_id(g, "loss.probs"));
	assert_int_equal(n->in[1], tensor_id(g, "labels"));
	assert_int_equal(n->out[0], tensor_id(g, "fc.y.grad"));
	atm_graph_destroy(g);
}

/* test_builder_image_gradients_unused -- kernels that must write a gradient for the
 * image (BN, split) write one nobody reads, named after the layer */
static void test_builder_image_gradients_unused(void **state)
{
	zb *b = *state;
	atm_graph *g = NULL;
	int32_t img = zb_image(b, 3, 8, 8);
	int32_t x = zb_bn(b, "bn0", img);
	x = zb_conv(b, "c", x, 5, 3, 3, 1, 1, 1, false);
	int32_t c1 = zb_concat(b, "cat1", 2, (int32_t[]){img, x});
	int32_t c2 = zb_concat(b, "cat2", 2, (int32_t[]){img, x});
	x = zb_add(b, "sum", c1, c2);
	x = zb_global_avgpool(b, "gap", x);
	x = zb_fc(b, "fc", x, 10);
	assert_int_equal(zb_finish(b, x, &g), ATM_OK);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	assert_int_equal(atm_graph_node(g, node_named(g, "bn0.bwd"))->out[0],
	                 tensor_id(g, "bn0.d0.unused"));
	assert_int_equal(atm_graph_node(g, node_named(g, "cat1.bwd"))->out[0],
	                 tensor_id(g, "cat1.d0.unused"));
	assert_int_equal(atm_graph_node(g, node_named(g, "cat2.bwd"))->out[0],
	                 tensor_id(g, "cat2.d0.unused"));
	/* c.y is read by both concatenations: two parts, one sum */
	assert_int_equal(atm_graph_node(g, node_named(g, "cat2.bwd"))->out[1],
	                 tensor_id(g, "c.y.grad.1"));
	assert_true(node_named(g, "c.y.grad.acc2") >= 0);
	assert_int_equal(atm_graph_find_tensor(g, "image.grad"), -1);
	atm_graph_destroy(g);
}

/* test_builder_output_sizes -- floor((in + 2 pad - k) / stride) + 1 for every window */
static void test_builder_output_sizes(void **state)
{
	zb *b = *state;
	atm_graph *g = NULL;
	int32_t x = zb_image(b, 3, 224, 224);
	int32_t c7 = zb_conv(b, "c7", x, 64, 7, 7, 2, 3, 3, false);
	int32_t mp = zb_maxpool(b, "mp", c7, 3, 2, 1);
	int32_t c17 = zb_conv(b, "c17", mp, 8, 1, 7, 1, 0, 3, false);
	int32_t c3s2 = zb_conv(b, "c3s2", c17, 8, 3, 3, 2, 0, 0, false); /* floor((56 - 3) / 2) + 1 */
	int32_t ap = zb_avgpool(b, "ap", c3s2, 2, 2, 0, false);
	int32_t gap = zb_global_avgpool(b, "gap", ap);
	int32_t fc = zb_fc(b, "fc", gap, 5);
	/* every layer is on the way to the loss: the graph comes out and its shapes can be read */
	assert_int_equal(zb_finish(b, fc, &g), ATM_OK);
	assert_int_equal(atm_graph_tensor(g, c7)->dims[2], 112);
	assert_int_equal(atm_graph_tensor(g, mp)->dims[2], 56);
	assert_int_equal(atm_graph_tensor(g, c17)->dims[2], 56);
	assert_int_equal(atm_graph_tensor(g, c17)->dims[3], 56);
	assert_int_equal(atm_graph_tensor(g, c3s2)->dims[2], 27);
	assert_int_equal(atm_graph_tensor(g, ap)->dims[2], 13);
	assert_int_equal(atm_graph_tensor(g, gap)->dims[2], 1);
	assert_int_equal(atm_graph_tensor(g, gap)->dims[0], 2);
	assert_int_equal(atm_graph_tensor(g, fc)->ndim, 2);
	assert_int_equal(atm_graph_tensor(g, fc)->dims[1], 5);
	atm_graph_destroy(g);
}

/* test_builder_ceil_groups_scale -- ceil_mode pooling sizes as PyTorch's (rounded up, but no
 * window starting in the far padding), grouped weights, a learned scale; their refusals */
static void test_builder_ceil_groups_scale(void **state)
{
	zb *b = *state;
	atm_graph *g = NULL;
	int32_t x = zb_image(b, 3, 224, 224);
	int32_t c7 = zb_conv(b, "c7", x, 64, 7, 7, 2, 3, 3, false);        /* 112 */
	int32_t mp = zb_pool_ceil(b, "mp", c7, 3, 2, 0, true, false);      /* 54.5 up: 56, floor 55 */
	int32_t dw = zb_conv_groups(b, "dw", mp, 64, 3, 3, 1, 1, 1, 64, false);
	int32_t gc = zb_conv_groups(b, "gc", dw, 32, 1, 1, 1, 0, 0, 4, true);
	int32_t sc = zb_scale(b, "ls", gc, 3, (int64_t[]){32, 1, 1});
	int32_t c5 = zb_conv(b, "c5", sc, 8, 5, 5, 11, 0, 0, false);       /* (56 - 5) / 11 + 1: 5 */
	int32_t ap = zb_pool_ceil(b, "ap", c5, 2, 2, 1, false, true);      /* 5 + 2 - 2 over 2 up: 4,
	                                                                    * whose last window would
	                                                                    * start at 6 = 5 + 1: 3 */
	int32_t ai = zb_pool_ceil(b, "ai", ap, 2, 2, 0, false, false);     /* 3: 0.5 up, 2; counting
	                                                                    * no padding, the part
	                                                                    * inside is the divisor */
	int32_t fc = zb_fc(b, "fc", zb_global_avgpool(b, "gap", ai), 5);
	assert_int_equal(zb_finish(b, fc, &g), ATM_OK);
	assert_int_equal(atm_graph_tensor(g, mp)->dims[2], 56);
	assert_int_equal(atm_graph_tensor(g, mp)->dims[3], 56);
	const atm_node *n = atm_graph_node(g, node_named(g, "mp"));
	assert_int_equal(n->attrs.pad[2], 1); /* 55 * 2 + 3 = 113: one past the input */
	assert_int_equal(n->attrs.pad[0], 0);
	const atm_tensor *w = atm_graph_tensor(g, atm_graph_find_tensor(g, "dw.w"));
	assert_int_equal(w->dims[0], 64);
	assert_int_equal(w->dims[1], 1);
	assert_int_equal(atm_graph_node(g, node_named(g, "dw"))->attrs.groups, 64);
	w = atm_graph_tensor(g, atm_graph_find_tensor(g, "gc.w"));
	assert_int_equal(w->dims[1], 16);
	w = atm_graph_tensor(g, atm_graph_find_tensor(g, "ls.weight"));
	assert_int_equal(w->kind, ATM_KIND_PARAM);
	assert_int_equal(w->ndim, 3);
	assert_int_equal(atm_graph_tensor(g, c5)->dims[2], 5);
	assert_int_equal(atm_graph_tensor(g, ap)->dims[2], 3);
	assert_int_equal(atm_graph_node(g, node_named(g, "ap"))->attrs.pad[2], 1);
	assert_int_equal(atm_graph_tensor(g, ai)->dims[2], 2);
	assert_true(atm_graph_node(g, node_named(g, "ai"))->attrs.exclude_pad);
	atm_graph_destroy(g);

	static const char *const frags[] = {"3 groups must be >= 1 and divide both its 64 input",
	                                    "ceil_mode, padding 1 and count_include_pad",
	                                    "a scale of 4 dims"};
	for (int i = 0; i < 3; i++) {
		zb *z = NULL;
		assert_int_equal(zb_new(&z, &spec), ATM_OK);
		int32_t v = zb_conv(z, "c", zb_image(z, 3, 8, 8), 64, 1, 1, 1, 0, 0, false), y;
		switch (i) {
		case 0: y = zb_conv_groups(z, "g", v, 64, 3, 3, 1, 1, 1, 3, false); break;
		case 1: y = zb_pool_ceil(z, "p", v, 3, 2, 1, false, false); break; /* 9: 4.5 up, 5 */
		default: y = zb_scale(z, "s", v, 4, (int64_t[]){2, 64, 1, 1}); break;
		}
		assert_int_equal(y, -1);
		expect_msg(frags[i]);
		zb_destroy(z);
	}
}

/* test_builder_sticky_error -- after a failure every call is a no-op and finish reports the first message */
static void test_builder_sticky_error(void **state)
{
	zb *b = *state;
	atm_graph *g = (atm_graph *)(uintptr_t)1;
	int32_t x = zb_image(b, 3, 8, 8);
	x = zb_conv(b, "c1", x, 4, 3, 3, 1, 1, 1, true);
	assert_true(x >= 0);
	int32_t y = zb_maxpool(b, "big", x, 9, 1, 0);
	assert_int_equal(y, -1);
	expect_msg("layer 'big'");
	expect_msg("9x9 window");
	expect_msg("8x8 input 'c1.y'");
	expect_msg("too small");
	/* later calls do nothing and keep the first message */
	assert_int_equal(zb_relu(b, "r", x), -1);
	assert_int_equal(zb_fc(b, "fc", -7, 3), -1);
	assert_int_equal(zb_finish(b, x, &g), ATM_E_USAGE);
	assert_null(g);
	expect_msg("layer 'big'");
}

/* test_builder_dead_branch -- a layer whose output never reaches the loss is an error */
static void test_builder_dead_branch(void **state)
{
	zb *b = *state;
	atm_graph *g = NULL;
	int32_t x = zb_image(b, 3, 8, 8);
	int32_t unused = zb_conv(b, "dead", x, 4, 3, 3, 1, 1, 1, false);
	(void)unused;
	x = zb_fc(b, "fc", x, 10);
	assert_int_equal(zb_finish(b, x, &g), ATM_E_USAGE);
	assert_null(g);
	expect_msg("layer 'dead'");
	expect_msg("does not reach the loss");
}

/* test_builder_bad_layers -- bad arguments fail with a message saying what is wrong; nothing leaks */
static void test_builder_bad_layers(void **state)
{
	static const char *frags[] = {
		"input tensor 99 does not exist", "expected 4", "differ in shape",
		"is used by tensor",              "longer than", "needs >= 1",
		"finished already",
	};
	(void)state;
	for (int i = 0; i < (int)(sizeof frags / sizeof frags[0]); i++) {
		zb *b = NULL;
		atm_graph *g = NULL;
		assert_int_equal(zb_new(&b, &spec), ATM_OK);
		int32_t x = zb_image(b, 3, 8, 8), y;
		int32_t v = zb_fc(b, "v", x, 6);
		char long_name[300];
		memset(long_name, 'n', sizeof long_name - 1);
		long_name[sizeof long_name - 1] = '\0';
		switch (i) {
		case 0: y = zb_relu(b, "r", 99); break;
		case 1: y = zb_conv(b, "c", v, 4, 1, 1, 1, 0, 0, false); break;
		case 2: y = zb_add(b, "a", x, zb_conv(b, "c", x, 4, 1, 1, 1, 0, 0, false)); break;
		case 3: y = zb_relu(b, "v", v); break; /* "v.y" again */
		case 4: y = zb_relu(b, long_name, v); break;
		case 5: y = zb_concat(b, "cat", 0, NULL); break;
		default:
			assert_int_equal(zb_finish(b, v, &g), ATM_OK);
			atm_graph_destroy(g);
			y = zb_relu(b, "late", v);
			break;
		}
		assert_int_equal(y, -1);
		expect_msg(frags[i]);
		/* the failure sticks: finish reports it too (the last case finished already) */
		if (i < 6) {
			assert_true(zb_finish(b, v, &g) < 0);
			assert_null(g);
			expect_msg(frags[i]);
		}
		zb_destroy(b);
	}
}

/* test_builder_new_rejects_batch -- a builder needs a batch >= 1 */
static void test_builder_new_rejects_batch(void **state)
{
	(void)state;
	zb *b = (zb *)(uintptr_t)1;
	zb_spec s = spec;
	s.batch = 0;
	assert_int_equal(zb_new(&b, &s), ATM_E_USAGE);
	assert_null(b);
	expect_msg("batch must be >= 1");
	zb_destroy(NULL);
}

/* build_tiny_cnn -- one whole build: a valid graph, or nothing built */
static atm_status build_tiny_cnn(void *arg)
{
	atm_graph *g = NULL;
	atm_status rc = atm_zoo_build(&g, "tiny_cnn", NULL);
	(void)arg;
	if (rc < 0) {
		assert_null(g);
		return rc;
	}
	rc = atm_graph_validate(g);
	atm_graph_destroy(g);
	return rc;
}

/* test_builder_allocation_failures -- every allocation of a whole build, failed in
 * turn: each failure is ATM_E_NOMEM, with nothing built and (ASan) nothing leaked */
static void test_builder_allocation_failures(void **state)
{
	(void)state;
	long n = alloc_fail_sweep("building tiny_cnn", build_tiny_cnn, NULL);
	print_message("tiny_cnn builds with %ld allocations\n", n);
	assert_true(n > 10); /* the build allocates: the wrappers are in place */
}

/* is_param -- tensor t is a parameter */
static bool is_param(const atm_graph *g, int32_t t)
{
	return atm_graph_tensor(g, t)->kind == ATM_KIND_PARAM;
}

/* mixed -- conv, relu, a linear layer whose weight a second one shares, an f32 residual added to
 * a bf16 product, a layer norm, a softmax and an fc, in bf16 mixed precision or not */
static atm_graph *mixed(bool autocast, int64_t *n_params)
{
	zb_spec sp = spec;
	sp.autocast = autocast;
	zb *b = NULL;
	atm_graph *g = NULL;
	assert_int_equal(zb_new(&b, &sp), ATM_OK);
	int32_t x = zb_image(b, 3, 8, 8);
	x = zb_conv(b, "conv", x, 4, 3, 3, 1, 1, 1, true);
	x = zb_relu(b, "relu", x);
	x = zb_fc(b, "fc0", x, 16);
	int32_t r = zb_layer_norm(b, "ln", x, 1e-5f); /* f32 out of bf16 under autocast */
	int32_t h = zb_linear(b, "lin1", r, 16, true);
	zb_param_names(b, "lin1.weight", NULL); /* the same weight again */
	h = zb_linear(b, "lin2", zb_relu(b, "act", h), 16, false);
	int32_t s = zb_add(b, "res", r, h);      /* f32 + bf16 */
	s = zb_softmax(b, "sm", s, false);
	s = zb_fc(b, "fc", s, 10);
	assert_int_equal(zb_finish(b, s, &g), ATM_OK);
	zb_destroy(b);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	*n_params = 0;
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++)
		if (is_param(g, t))
			*n_params += atm_graph_tensor(g, t)->n_elems;
	return g;
}

/* test_builder_autocast -- bf16 mixed precision as torch.autocast: the convolutions, linear
 * layers and products on bf16 (inputs, weights, outputs and their gradients), each parameter
 * cast once however often it is read, f32 parameters and updates, norms, softmax and loss
 * writing f32 from bf16 inputs (no f32 copies), an f32
 * sum of an f32 and a bf16 input handing each its gradient in its own dtype; the same
 * parameters as in f32 */
static void test_builder_autocast(void **state)
{
	(void)state;
	int64_t n32, n16;
	atm_graph *f = mixed(false, &n32), *g = mixed(true, &n16);
	assert_int_equal(n32, n16);
	assert_int_equal(count_op(f, ATM_OP_CAST), 0);
	int casts_of[256] = {0};
	assert_true(atm_graph_n_tensors(g) <= 256);
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++) {
		const atm_node *n = atm_graph_node(g, i);
		bool low = n->op == ATM_OP_CONV_FWD || n->op == ATM_OP_CONV_BWD_DATA ||
		           n->op == ATM_OP_CONV_BWD_WEIGHTS || n->op == ATM_OP_IP_FWD ||
		           n->op == ATM_OP_IP_BWD_DATA || n->op == ATM_OP_IP_BWD_WEIGHTS ||
		           n->op == ATM_OP_MATMUL;
		bool high = n->op == ATM_OP_LAYER_NORM_FWD || n->op == ATM_OP_SOFTMAX_FWD ||
		            n->op == ATM_OP_SOFTMAX_XENT_FWD || n->op == ATM_OP_SGD;
		for (int k = 0; k < n->n_in + n->n_out; k++) {
			int32_t t = k < n->n_in ? n->in[k] : n->out[k - n->n_in];
			const atm_tensor *x = atm_graph_tensor(g, t);
			if (low && x->dtype != ATM_BF16)
				fail_msg("node '%s' (%s): '%s' is %s, not bf16", n->name,
				         atm_op_name(n->op), x->name, atm_dtype_name(x->dtype));
			if (high && (n->op == ATM_OP_SGD ? k < n->n_in : k == n->n_in) &&
			    x->dtype != ATM_F32)
				fail_msg("node '%s' (%s): '%s' is %s, not f32", n->name,
				         atm_op_name(n->op), x->name, atm_dtype_name(x->dtype));
			if (k < n->n_in && is_param(g, t)) {
				if (n->op == ATM_OP_CAST)
					casts_of[t]++;
				else if (low)
					fail_msg("node '%s' reads parameter '%s' itself", n->name, x->name);
			}
		}
	}
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++)
		if (is_param(g, t) && strncmp(atm_graph_tensor(g, t)->name, "ln.", 3) != 0 &&
		    casts_of[t] != 1)
			fail_msg("parameter '%s' is cast %d times; expected once",
			         atm_graph_tensor(g, t)->name, casts_of[t]);
	/* lin1.weight, read twice, through one copy whose two gradient parts are summed in bf16 */
	assert_int_equal(atm_graph_tensor(g, tensor_id(g, "lin1.weight.bf16"))->dtype, ATM_BF16);
	assert_int_equal(atm_graph_tensor(g, tensor_id(g, "lin1.weight.bf16.grad"))->dtype, ATM_BF16);
	assert_true(node_named(g, "lin1.weight.to_bf16.bwd") >= 0);
	assert_int_equal(atm_graph_tensor(g, tensor_id(g, "lin1.weight.grad"))->dtype, ATM_F32);
	/* the residual: an f32 sum; the bf16 input's gradient cast down */
	assert_int_equal(atm_graph_tensor(g, tensor_id(g, "res.y"))->dtype, ATM_F32);
	int32_t down = node_named(g, "res.bwd1");
	assert_true(down >= 0);
	assert_int_equal(atm_graph_node(g, down)->op, ATM_OP_CAST);
	assert_int_equal(atm_graph_tensor(g, atm_graph_node(g, down)->out[0])->dtype, ATM_BF16);
	atm_graph_destroy(f);
	atm_graph_destroy(g);
}

/* main -- builder tests on a fresh builder each, then the self-contained ones */
int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_builder_fanout_accumulates),
		T(test_builder_add_passes_gradient),
		T(test_builder_first_layer_has_no_data_gradient),
		T(test_builder_sgd_after_gradient),
		T(test_builder_backward_inputs),
		T(test_builder_image_gradients_unused),
		T(test_builder_output_sizes),
		T(test_builder_ceil_groups_scale),
		T(test_builder_sticky_error),
		T(test_builder_dead_branch),
		cmocka_unit_test(test_builder_autocast),
		cmocka_unit_test(test_builder_bad_layers),
		cmocka_unit_test(test_builder_new_rejects_batch),
		cmocka_unit_test(test_builder_allocation_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
