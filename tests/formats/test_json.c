/* test_json.c -- graph JSON: byte-identical round trips, files, parameters, defaults, the MLP example */
#include <float.h>
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

/* ---------------------------------------------------------------- helpers */

/* dq -- text with every ' turned into ", so JSON in tests needs no escaping (caller frees) */
static char *dq(const char *s)
{
	char *d = strdup(s);
	assert_non_null(d);
	for (char *p = d; *p; p++)
		if (*p == '\'')
			*p = '"';
	return d;
}

/* load_q -- load a single-quoted JSON text; asserts it succeeds */
static atm_graph *load_q(const char *text, const char *origin, int64_t batch)
{
	char *json = dq(text);
	atm_graph_load_opts o = {.batch = batch};
	atm_graph *g = NULL;
	atm_status rc = atm_graph_load_buffer(&g, json, strlen(json), origin, &o);
	free(json);
	if (rc != ATM_OK)
		fail_msg("load failed: %s", atm_errmsg());
	assert_non_null(g);
	return g;
}

/* expect_has -- text contains frag */
static void expect_has(const char *text, const char *frag)
{
	if (!strstr(text, frag)) {
		fprintf(stderr, "'%s' not found in:\n%s\n", frag, text); /* cmocka clips long messages */
		fail();
	}
}

/* source_path -- a file of the source tree, found through ATM_SOURCE_DIR (set by ctest) */
static void source_path(char *buf, size_t len, const char *rel)
{
	const char *dir = getenv("ATM_SOURCE_DIR");
	if (!dir)
		fail_msg("ATM_SOURCE_DIR is not set; run the test through ctest");
	snprintf(buf, len, "%s/%s", dir, rel);
}

/* add_t -- add a tensor; asserts it succeeds */
static int32_t add_t(atm_graph *g, const char *name, atm_dtype dt, int ndim, const int64_t *dims,
                     atm_tensor_kind kind, unsigned loc)
{
	int32_t id;
	if (atm_graph_add_tensor(g, name, dt, ndim, dims, kind, loc, &id) != ATM_OK)
		fail_msg("add_tensor %s: %s", name, atm_errmsg());
	return id;
}

/* add_n -- add a node; asserts it succeeds */
static int32_t add_n(atm_graph *g, const char *name, atm_op op, const atm_attrs *a, int n_in,
                     const int32_t *in, int n_out, const int32_t *out)
{
	int32_t id;
	if (atm_graph_add_node(g, name, op, a, n_in, in, n_out, out, &id) != ATM_OK)
		fail_msg("add_node %s: %s", name, atm_errmsg());
	return id;
}

#define IDS(...) ((const int32_t[]){__VA_ARGS__})
#define NIDS(...) (int)(sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t))
#define NODE(g, name, op, a, ins, outs) \
	add_n(g, name, op, a, NIDS ins, IDS ins, NIDS outs, IDS outs)
#define SGD(g, name, a, w, dw) add_n(g, name, ATM_OP_SGD, a, 2, IDS(w, dw), 0, NULL)

/* build_all_ops -- a small but complete training step that uses every op, every attr,
 * a workspace and restricted locations */
static atm_graph *build_all_ops(void)
{
	atm_graph *g = NULL;
	assert_int_equal(atm_graph_new(&g, "all ops \"quoted\" \xe2\x98\x83"), ATM_OK);
	const atm_tensor_kind A = ATM_KIND_ACTIVATION, G = ATM_KIND_GRAD, P = ATM_KIND_PARAM;
	const int64_t x4[] = {2, 3, 8, 8}, w4[] = {4, 3, 3, 3}, c4[] = {4}, y4[] = {2, 4, 8, 8},
	              p4[] = {2, 4, 4, 4}, cat4[] = {2, 8, 4, 4}, w2[] = {10, 128}, c10[] = {10},
	              l2[] = {2, 10}, one[] = {1};
	int32_t x = add_t(g, "x", ATM_F32, 4, x4, ATM_KIND_INPUT, ATM_LOC_ANY);
	int32_t labels = add_t(g, "labels", ATM_F32, 2, l2, ATM_KIND_INPUT, ATM_LOC_FAST);
	int32_t w = add_t(g, "conv.w", ATM_F32, 4, w4, P, ATM_LOC_ANY);
	int32_t b = add_t(g, "conv.b", ATM_F32, 1, c4, P, ATM_LOC_ANY);
	int32_t gamma = add_t(g, "bn.gamma", ATM_F32, 1, c4, P, ATM_LOC_ANY);
	int32_t beta = add_t(g, "bn.beta", ATM_F32, 1, c4, P, ATM_LOC_ANY);
	int32_t fw = add_t(g, "fc.w", ATM_F32, 2, w2, P, ATM_LOC_SLOW);
	int32_t fb = add_t(g, "fc.b", ATM_F32, 1, c10, P, ATM_LOC_ANY);
	int32_t y = add_t(g, "conv.y", ATM_F32, 4, y4, A, ATM_LOC_ANY);
	int32_t z = add_t(g, "bn.y", ATM_F32, 4, y4, A, ATM_LOC_ANY);
	int32_t mean = add_t(g, "bn.mean", ATM_F32, 1, c4, A, ATM_LOC_ANY);
	int32_t var = add_t(g, "bn.var", ATM_F32, 1, c4, A, ATM_LOC_ANY);
	int32_t r = add_t(g, "relu.y", ATM_F32, 4, y4, A, ATM_LOC_ANY);
	int32_t p = add_t(g, "pool.y", ATM_F32, 4, p4, A, ATM_LOC_ANY);
	int32_t ws = add_t(g, "pool.argmax", ATM_I32, 4, p4, A, ATM_LOC_FAST);
	int32_t q = add_t(g, "avg.y", ATM_F32, 4, p4, A, ATM_LOC_ANY);
	int32_t c = add_t(g, "cat.y", ATM_F32, 4, cat4, A, ATM_LOC_ANY);
	int32_t logits = add_t(g, "fc.y", ATM_F32, 2, l2, A, ATM_LOC_ANY);
	int32_t probs = add_t(g, "probs", ATM_F32, 2, l2, A, ATM_LOC_ANY);
	int32_t loss = add_t(g, "loss", ATM_F32, 1, one, ATM_KIND_OUTPUT, ATM_LOC_ANY);
	int32_t dlogits = add_t(g, "fc.dy", ATM_F32, 2, l2, G, ATM_LOC_ANY);
	int32_t dc = add_t(g, "cat.dy", ATM_F32, 4, cat4, G, ATM_LOC_ANY);
	int32_t dfw = add_t(g, "fc.dw", ATM_F32, 2, w2, G, ATM_LOC_ANY);
	int32_t dfb = add_t(g, "fc.db", ATM_F32, 1, c10, G, ATM_LOC_ANY);
	int32_t dp1 = add_t(g, "pool.dy.a", ATM_F32, 4, p4, G, ATM_LOC_ANY);
	int32_t dq_ = add_t(g, "avg.dy", ATM_F32, 4, p4, G, ATM_LOC_ANY);
	int32_t dp2 = add_t(g, "pool.dy.b", ATM_F32, 4, p4, G, ATM_LOC_ANY);
	int32_t dp = add_t(g, "pool.dy", ATM_F32, 4, p4, G, ATM_LOC_ANY);
	int32_t dr = add_t(g, "relu.dy", ATM_F32, 4, y4, G, ATM_LOC_ANY);
	int32_t dz = add_t(g, "bn.dy", ATM_F32, 4, y4, G, ATM_LOC_ANY);
	int32_t dy = add_t(g, "conv.dy", ATM_F32, 4, y4, G, ATM_LOC_ANY);
	int32_t dgamma = add_t(g, "bn.dgamma", ATM_F32, 1, c4, G, ATM_LOC_ANY);
	int32_t dbeta = add_t(g, "bn.dbeta", ATM_F32, 1, c4, G, ATM_LOC_ANY);
	int32_t dw = add_t(g, "conv.dw", ATM_F32, 4, w4, G, ATM_LOC_ANY);
	int32_t db = add_t(g, "conv.db", ATM_F32, 1, c4, G, ATM_LOC_ANY);
	int32_t dx = add_t(g, "x.d", ATM_F32, 4, x4, G, ATM_LOC_ANY);

	assert_int_equal(atm_graph_mark_batched(g, x), ATM_OK);
	assert_int_equal(atm_graph_mark_batched(g, labels), ATM_OK);
	assert_int_equal(atm_graph_mark_batched(g, y), ATM_OK);

	atm_attrs conv = {.stride = {1, 1}, .pad = {1, 1, 1, 1}};
	atm_attrs bn = {.epsilon = 1e-5f};
	atm_attrs maxp = {.kernel = {2, 2}, .stride = {2, 2}};
	atm_attrs avgp = {.kernel = {3, 3}, .stride = {0, 0}, .pad = {1, 1, 1, 1}, .exclude_pad = true};
	atm_attrs cat = {.axis = 1};
	atm_attrs sgd = {.lr = 0.05f};

	int32_t c0 = NODE(g, "conv", ATM_OP_CONV_FWD, &conv, (x, w, b), (y));
	assert_int_equal(atm_graph_set_workspace(g, c0, 4096), ATM_OK);
	NODE(g, "bn", ATM_OP_BN_FWD, &bn, (y, gamma, beta), (z, mean, var));
	NODE(g, "relu", ATM_OP_RELU_FWD, NULL, (z), (r));
	NODE(g, "pool", ATM_OP_MAXPOOL_FWD, &maxp, (r), (p, ws));
	NODE(g, "avg", ATM_OP_AVGPOOL_FWD, &avgp, (p), (q));
	NODE(g, "cat", ATM_OP_CONCAT, &cat, (p, q), (c));
	NODE(g, "fc", ATM_OP_IP_FWD, NULL, (c, fw, fb), (logits));
	NODE(g, "loss", ATM_OP_SOFTMAX_XENT_FWD, NULL, (logits, labels), (probs, loss));
	NODE(g, "loss.bwd", ATM_OP_SOFTMAX_XENT_BWD, NULL, (probs, labels), (dlogits));
	NODE(g, "fc.bwd_data", ATM_OP_IP_BWD_DATA, NULL, (dlogits, fw), (dc));
	NODE(g, "fc.bwd_weights", ATM_OP_IP_BWD_WEIGHTS, NULL, (c, dlogits), (dfw, dfb));
	SGD(g, "fc.w.sgd", &sgd, fw, dfw);
	SGD(g, "fc.b.sgd", &sgd, fb, dfb);
	NODE(g, "cat.bwd", ATM_OP_SPLIT, &cat, (dc), (dp1, dq_));
	NODE(g, "avg.bwd", ATM_OP_AVGPOOL_BWD, &avgp, (dq_), (dp2));
	NODE(g, "pool.dy.sum", ATM_OP_ADD, NULL, (dp1, dp2), (dp));
	NODE(g, "pool.bwd", ATM_OP_MAXPOOL_BWD, &maxp, (dp, ws), (dr));
	NODE(g, "relu.bwd", ATM_OP_RELU_BWD, NULL, (r, dr), (dz));
	NODE(g, "bn.bwd", ATM_OP_BN_BWD, &bn, (y, dz, gamma, mean, var), (dy, dgamma, dbeta));
	SGD(g, "bn.gamma.sgd", &sgd, gamma, dgamma);
	SGD(g, "bn.beta.sgd", &sgd, beta, dbeta);
	NODE(g, "conv.bwd_data", ATM_OP_CONV_BWD_DATA, &conv, (dy, w), (dx));
	NODE(g, "conv.bwd_weights", ATM_OP_CONV_BWD_WEIGHTS, &conv, (x, dy), (dw, db));
	SGD(g, "conv.w.sgd", &sgd, w, dw);
	SGD(g, "conv.b.sgd", &sgd, b, db);
	if (atm_graph_validate(g) != ATM_OK)
		fail_msg("the hand-built graph is invalid: %s", atm_errmsg());
	return g;
}

/* dump -- the graph's JSON; asserts it succeeds */
static char *dump(const atm_graph *g)
{
	char *text = NULL;
	if (atm_graph_dump(g, &text) != ATM_OK)
		fail_msg("dump: %s", atm_errmsg());
	assert_non_null(text);
	return text;
}

/* ---------------------------------------------------------------- tests */

static void test_json_round_trip_byte_identical(void **state)
{
	atm_graph *g = build_all_ops(), *g2 = NULL;
	char *a = dump(g), *b;
	atm_status rc = atm_graph_load_buffer(&g2, a, strlen(a), "dumped.json", NULL);
	if (rc != ATM_OK)
		fail_msg("the writer's output does not load: %s\n%s", atm_errmsg(), a);
	b = dump(g2);
	assert_string_equal(a, b);

	/* the reloaded graph is the same graph, not just the same text */
	assert_string_equal(atm_graph_name(g2), atm_graph_name(g));
	assert_int_equal(atm_graph_n_tensors(g2), atm_graph_n_tensors(g));
	assert_int_equal(atm_graph_n_nodes(g2), atm_graph_n_nodes(g));
	for (int32_t i = 0; i < atm_graph_n_tensors(g); i++) {
		const atm_tensor *t = atm_graph_tensor(g, i), *t2 = atm_graph_tensor(g2, i);
		assert_string_equal(t->name, t2->name);
		assert_int_equal(t->ndim, t2->ndim);
		assert_memory_equal(t->dims, t2->dims, (size_t)t->ndim * sizeof t->dims[0]);
		assert_int_equal(t->dtype, t2->dtype);
		assert_int_equal(t->kind, t2->kind);
		assert_int_equal(t->locations, t2->locations);
		assert_int_equal(t->batched, t2->batched);
		assert_int_equal(t->bytes, t2->bytes);
	}
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++) {
		const atm_node *n = atm_graph_node(g, i), *n2 = atm_graph_node(g2, i);
		assert_string_equal(n->name, n2->name);
		assert_int_equal(n->op, n2->op);
		assert_int_equal(n->n_in, n2->n_in);
		assert_int_equal(n->n_out, n2->n_out);
		assert_memory_equal(n->in, n2->in, (size_t)n->n_in * sizeof n->in[0]);
		if (n->n_out)
			assert_memory_equal(n->out, n2->out, (size_t)n->n_out * sizeof n->out[0]);
		assert_int_equal(n->workspace_bytes, n2->workspace_bytes);
	}
	const atm_node *avg = atm_graph_node(g2, 4);
	assert_int_equal(avg->attrs.stride[0], 1); /* 0 in memory means 1, and is written as 1 */
	assert_true(avg->attrs.exclude_pad);
	assert_true(atm_graph_node(g2, 1)->attrs.epsilon == 1e-5f);
	assert_true(atm_graph_node(g2, 11)->attrs.lr == 0.05f);

	/* the layout: one element per line, compact arrays, attrs only where the op takes them */
	expect_has(a, "{\n  \"format\": \"autotm-graph\",\n  \"version\": 1,\n  \"name\": \"all ops "
	              "\\\"quoted\\\" \xe2\x98\x83\",\n  \"parameters\": {\"batch\": 2},\n  \"tensors\": [\n"
	              "    {\"id\": 0, \"name\": \"x\", \"shape\": [\"batch\", 3, 8, 8], ");
	expect_has(a, "{\"id\": 1, \"name\": \"labels\", \"shape\": [\"batch\", 10], \"dtype\": \"f32\", "
	              "\"kind\": \"input\", \"locations\": [\"fast\"]},\n");
	expect_has(a, "{\"id\": 14, \"name\": \"pool.argmax\", \"shape\": [2, 4, 4, 4], \"dtype\": "
	              "\"i32\", \"kind\": \"activation\", \"locations\": [\"fast\"]}");
	expect_has(a, "{\"id\": 0, \"name\": \"conv\", \"op\": \"conv_fwd\", \"inputs\": [0, 2, 3], "
	              "\"outputs\": [8], \"attrs\": {\"stride\": [1, 1], \"pad\": [1, 1, 1, 1]}, "
	              "\"workspace_bytes\": 4096}");
	expect_has(a, "{\"id\": 9, \"name\": \"bn.y\", \"shape\": [2, 4, 8, 8], "); /* not marked */
	expect_has(a, "\"attrs\": {\"kernel\": [3, 3], \"stride\": [1, 1], \"pad\": [1, 1, 1, 1], "
	              "\"exclude_pad\": true}");
	expect_has(a, "\"attrs\": {\"epsilon\": 1e-5}");
	expect_has(a, "\"attrs\": {\"axis\": 1}");
	expect_has(a, "\"outputs\": [], \"attrs\": {\"lr\": 0.05}}");
	expect_has(a, "{\"id\": 2, \"name\": \"relu\", \"op\": \"relu_fwd\", \"inputs\": [9], "
	              "\"outputs\": [12]},\n");
	assert_null(strstr(a, "\"locations\": [\"fast\", \"slow\"]")); /* the default is left out */
	assert_int_equal(a[strlen(a) - 1], '\n');
	free(a);
	free(b);
	atm_graph_destroy(g2);
	atm_graph_destroy(g);
}

static void test_json_save_load_file(void **state)
{
	char dir[] = "/tmp/atm_test_json_XXXXXX", path[128];
	atm_graph *g = build_all_ops(), *g2 = NULL;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/g.json", dir);

	assert_int_equal(atm_graph_save(g, path), ATM_OK);
	assert_int_equal(atm_graph_save(g, path), ATM_OK); /* replaces the file */
	if (atm_graph_load(&g2, path, NULL) != ATM_OK)
		fail_msg("load %s: %s", path, atm_errmsg());
	char *a = dump(g), *b = dump(g2), *file = NULL;
	size_t len = 0;
	assert_string_equal(a, b);
	assert_int_equal(atm_read_file(path, &file, &len), ATM_OK);
	assert_int_equal(len, strlen(a));
	assert_string_equal(file, a);

	/* saving into a folder that does not exist fails with an IO error naming the path */
	char bad[160];
	snprintf(bad, sizeof bad, "%s/no/such/dir/g.json", dir);
	assert_int_equal(atm_graph_save(g, bad), ATM_E_IO);
	expect_has(atm_errmsg(), bad);

	free(file);
	free(a);
	free(b);
	unlink(path);
	rmdir(dir);
	atm_graph_destroy(g2);
	atm_graph_destroy(g);
}

static const char *const param_graph =
	"{'format': 'autotm-graph', 'version': 1, 'name': 'p',"
	" 'parameters': {'batch': 8, 'features': 6},"
	" 'tensors': ["
	"  {'id': 0, 'name': 'x', 'shape': ['batch', 'features'], 'kind': 'input'},"
	"  {'id': 1, 'name': 'y', 'shape': ['batch', 'features'], 'kind': 'activation'}],"
	" 'nodes': [{'id': 0, 'name': 'relu', 'op': 'relu_fwd', 'inputs': [0], 'outputs': [1]}]}";

static void test_json_batch_parameter(void **state)
{
	atm_graph *g = load_q(param_graph, "p.json", 0);
	const atm_tensor *x = atm_graph_tensor(g, 0);
	assert_int_equal(x->ndim, 2);
	assert_int_equal(x->dims[0], 8);
	assert_int_equal(x->dims[1], 6);
	assert_int_equal(x->bytes, 8 * 6 * 4);
	assert_true(x->batched); /* a leading "batch" marks the tensor */
	assert_int_equal(atm_graph_batch(g), 8);
	atm_graph_destroy(g);

	g = load_q("{'format': 'autotm-graph', 'version': 1, 'parameters': {'batch': 3},"
	           " 'tensors': [{'id': 0, 'name': 'x', 'shape': [2, 'batch'], 'kind': 'input'},"
	           "  {'id': 1, 'name': 'y', 'shape': [2, 'batch'], 'kind': 'activation'}],"
	           " 'nodes': [{'id': 0, 'name': 'r', 'op': 'relu_fwd', 'inputs': [0], 'outputs': [1]}]}",
	           "inner.json", 0);
	assert_int_equal(atm_graph_tensor(g, 0)->dims[1], 3);
	assert_false(atm_graph_tensor(g, 0)->batched);
	assert_int_equal(atm_graph_batch(g), 0);
	atm_graph_destroy(g);
}

static void test_json_saved_graph_loads_at_another_batch(void **state)
{
	atm_graph *g = NULL, *g2 = NULL;
	const int64_t xd[] = {4, 3}, pd[] = {4};
	int32_t x, y, p;
	assert_int_equal(atm_graph_new(&g, "rebatch"), ATM_OK);
	x = add_t(g, "x", ATM_F32, 2, xd, ATM_KIND_INPUT, ATM_LOC_ANY);
	y = add_t(g, "y", ATM_F32, 2, xd, ATM_KIND_ACTIVATION, ATM_LOC_ANY);
	p = add_t(g, "p", ATM_F32, 1, pd, ATM_KIND_PARAM, ATM_LOC_ANY); /* 4 by chance, not the batch */
	assert_int_equal(atm_graph_mark_batched(g, x), ATM_OK);
	assert_int_equal(atm_graph_mark_batched(g, y), ATM_OK);
	NODE(g, "relu", ATM_OP_RELU_FWD, NULL, (x), (y));
	assert_int_equal(atm_graph_validate(g), ATM_OK);

	char *a = dump(g), *b;
	expect_has(a, "\"name\": \"rebatch\",\n  \"parameters\": {\"batch\": 4},\n  \"tensors\"");
	expect_has(a, "{\"id\": 0, \"name\": \"x\", \"shape\": [\"batch\", 3], ");
	expect_has(a, "{\"id\": 2, \"name\": \"p\", \"shape\": [4], ");

	atm_graph_load_opts o = {.batch = 7};
	if (atm_graph_load_buffer(&g2, a, strlen(a), "saved.json", &o) != ATM_OK)
		fail_msg("%s", atm_errmsg());
	assert_int_equal(atm_graph_tensor(g2, x)->dims[0], 7);
	assert_int_equal(atm_graph_tensor(g2, y)->dims[0], 7);
	assert_int_equal(atm_graph_tensor(g2, y)->bytes, 7 * 3 * 4);
	assert_int_equal(atm_graph_tensor(g2, p)->dims[0], 4);
	assert_int_equal(atm_graph_batch(g2), 7);
	b = dump(g2);
	expect_has(b, "\"parameters\": {\"batch\": 7}");
	free(a);
	free(b);
	atm_graph_destroy(g2);
	atm_graph_destroy(g);
}

static void test_json_batch_override(void **state)
{
	atm_graph *g = load_q(param_graph, "p.json", 3);
	assert_int_equal(atm_graph_tensor(g, 0)->dims[0], 3);
	assert_int_equal(atm_graph_tensor(g, 1)->dims[0], 3);
	assert_int_equal(atm_graph_tensor(g, 1)->dims[1], 6); /* other parameters stay */
	atm_graph_destroy(g);

	/* the override also supplies "batch" to a file that names it but gives no value */
	g = load_q("{'format': 'autotm-graph', 'version': 1,"
	           " 'tensors': [{'id': 0, 'name': 'x', 'shape': ['batch', 2], 'kind': 'input'},"
	           "  {'id': 1, 'name': 'y', 'shape': ['batch', 2], 'kind': 'activation'}],"
	           " 'nodes': [{'id': 0, 'name': 'r', 'op': 'relu_fwd', 'inputs': [0], 'outputs': [1]}]}",
	           "q.json", 5);
	assert_int_equal(atm_graph_tensor(g, 0)->dims[0], 5);
	atm_graph_destroy(g);
}

static void test_json_batch_override_of_fixed_graph_is_refused(void **state)
{
	char *json = dq("{'format': 'autotm-graph', 'version': 1, 'parameters': {'batch': 4},"
	                " 'tensors': [{'id': 0, 'name': 'x', 'shape': [4, 2], 'kind': 'input'},"
	                "  {'id': 1, 'name': 'y', 'shape': [4, 2], 'kind': 'activation'}],"
	                " 'nodes': [{'id': 0, 'name': 'r', 'op': 'relu_fwd', 'inputs': [0], "
	                "'outputs': [1]}]}");
	atm_graph_load_opts o = {.batch = 32};
	atm_graph *g = NULL;
	assert_int_equal(atm_graph_load_buffer(&g, json, strlen(json), "fixed.json", &o), ATM_E_USAGE);
	assert_null(g);
	expect_has(atm_errmsg(), "fixed.json: batch 32 was requested");
	expect_has(atm_errmsg(), "no dimension of this graph is \"batch\"");
	/* without the override the same file loads */
	assert_int_equal(atm_graph_load_buffer(&g, json, strlen(json), "fixed.json", NULL), ATM_OK);
	atm_graph_destroy(g);
	free(json);
}

static void test_json_defaults(void **state)
{
	atm_graph *g = load_q(
		"{'format': 'autotm-graph', 'version': 1,"
		" 'tensors': ["
		"  {'id': 0, 'name': 'x', 'shape': [2, 4, 6, 6], 'kind': 'input'},"
		"  {'id': 1, 'name': 'w', 'shape': [4, 4, 3, 3], 'kind': 'param'},"
		"  {'id': 2, 'name': 'y', 'shape': [2, 4, 4, 4], 'kind': 'activation'},"
		"  {'id': 3, 'name': 'g', 'shape': [4], 'kind': 'param'},"
		"  {'id': 4, 'name': 'b', 'shape': [4], 'kind': 'param'},"
		"  {'id': 5, 'name': 'z', 'shape': [2, 4, 4, 4], 'kind': 'activation'},"
		"  {'id': 6, 'name': 'm', 'shape': [4], 'kind': 'activation'},"
		"  {'id': 7, 'name': 'v', 'shape': [4], 'kind': 'activation'},"
		"  {'id': 8, 'name': 'c', 'shape': [2, 8, 4, 4], 'kind': 'activation'},"
		"  {'id': 9, 'name': 'dg', 'shape': [4], 'kind': 'grad'}],"
		" 'nodes': ["
		"  {'id': 0, 'name': 'conv', 'op': 'conv_fwd', 'inputs': [0, 1], 'outputs': [2]},"
		"  {'id': 1, 'name': 'bn', 'op': 'bn_fwd', 'inputs': [2, 3, 4], 'outputs': [5, 6, 7]},"
		"  {'id': 2, 'name': 'cat', 'op': 'concat', 'inputs': [2, 5], 'outputs': [8]},"
		"  {'id': 3, 'name': 'add', 'op': 'add', 'inputs': [6, 7], 'outputs': [9]},"
		"  {'id': 4, 'name': 'sgd', 'op': 'sgd', 'inputs': [3, 9], 'outputs': []}]}",
		"nets/defaults.v2.json", 0);
	assert_string_equal(atm_graph_name(g), "defaults.v2"); /* the file's stem */
	const atm_tensor *x = atm_graph_tensor(g, 0);
	assert_int_equal(x->dtype, ATM_F32);
	assert_int_equal(x->locations, ATM_LOC_ANY);
	const atm_attrs *conv = &atm_graph_node(g, 0)->attrs;
	assert_int_equal(conv->stride[0], 1);
	assert_int_equal(conv->stride[1], 1);
	for (int i = 0; i < 4; i++)
		assert_int_equal(conv->pad[i], 0);
	assert_true(atm_graph_node(g, 1)->attrs.epsilon == 1e-5f);
	assert_int_equal(atm_graph_node(g, 2)->attrs.axis, 1);
	assert_true(atm_graph_node(g, 4)->attrs.lr == 0.01f);
	assert_int_equal(atm_graph_node(g, 0)->workspace_bytes, 0);
	atm_graph_destroy(g);
}

static void test_json_default_name_without_file(void **state)
{
	atm_graph *g = load_q("{'format': 'autotm-graph', 'version': 1, 'tensors': ["
	                      "{'id': 0, 'name': 'x', 'shape': [1], 'kind': 'input'},"
	                      "{'id': 1, 'name': 'y', 'shape': [1], 'kind': 'activation'}],"
	                      "'nodes': [{'id': 0, 'name': 'r', 'op': 'relu_fwd', 'inputs': [0], "
	                      "'outputs': [1]}]}",
	                      NULL, 0);
	assert_string_equal(atm_graph_name(g), "graph");
	atm_graph_destroy(g);
}

static void test_json_window_shorthands(void **state)
{
	atm_graph *g = load_q(
		"{'format': 'autotm-graph', 'version': 1, 'name': 'w',"
		" 'tensors': ["
		"  {'id': 0, 'name': 'x', 'shape': [1, 1, 8, 8], 'kind': 'input'},"
		"  {'id': 1, 'name': 'a', 'shape': [1, 1, 4, 5], 'kind': 'activation'},"
		"  {'id': 2, 'name': 'b', 'shape': [1, 1, 5, 5], 'kind': 'activation'},"
		"  {'id': 3, 'name': 'c', 'shape': [1, 1, 4, 3], 'kind': 'activation'}],"
		" 'nodes': ["
		"  {'id': 0, 'name': 'a', 'op': 'avgpool_fwd', 'inputs': [0], 'outputs': [1],"
		"   'attrs': {'kernel': 3, 'stride': 2, 'pad': [1, 2]}},"
		"  {'id': 1, 'name': 'b', 'op': 'avgpool_fwd', 'inputs': [0], 'outputs': [2],"
		"   'attrs': {'kernel': [2, 2], 'stride': [2, 2], 'pad': 1}},"
		"  {'id': 2, 'name': 'c', 'op': 'avgpool_fwd', 'inputs': [0], 'outputs': [3],"
		"   'attrs': {'kernel': [2, 3], 'stride': [2, 3], 'pad': [1, 0, 0, 1]}}]}",
		"w.json", 0);
	const atm_attrs *a = &atm_graph_node(g, 0)->attrs, *b = &atm_graph_node(g, 1)->attrs,
	                *c = &atm_graph_node(g, 2)->attrs;
	assert_int_equal(a->kernel[0], 3);
	assert_int_equal(a->kernel[1], 3);
	assert_int_equal(a->stride[1], 2);
	assert_int_equal(a->pad[0], 1); /* [h, w] is symmetric: top = bottom = h, left = right = w */
	assert_int_equal(a->pad[1], 2);
	assert_int_equal(a->pad[2], 1);
	assert_int_equal(a->pad[3], 2);
	for (int i = 0; i < 4; i++)
		assert_int_equal(b->pad[i], 1);
	assert_int_equal(c->kernel[1], 3);
	assert_int_equal(c->pad[0], 1);
	assert_int_equal(c->pad[3], 1);
	assert_false(c->exclude_pad);

	/* the writer spells every window attr out in full */
	char *text = dump(g);
	expect_has(text, "\"attrs\": {\"kernel\": [3, 3], \"stride\": [2, 2], \"pad\": [1, 2, 1, 2], "
	                 "\"exclude_pad\": false}");
	free(text);
	atm_graph_destroy(g);
}

static void test_json_ids_remapped_in_file_order(void **state)
{
	atm_graph *g = load_q(
		"{'format': 'autotm-graph', 'version': 1, 'name': 'ids',"
		" 'tensors': ["
		"  {'id': 100, 'name': 'x', 'shape': [2, 3], 'kind': 'input'},"
		"  {'id': 7, 'name': 'y', 'shape': [2, 3], 'kind': 'activation'},"
		"  {'id': 42, 'name': 'z', 'shape': [2, 3], 'kind': 'activation'}],"
		" 'nodes': ["
		"  {'id': 9, 'name': 'r1', 'op': 'relu_fwd', 'inputs': [100], 'outputs': [7]},"
		"  {'id': 3, 'name': 'r2', 'op': 'relu_fwd', 'inputs': [7], 'outputs': [42]}]}",
		"ids.json", 0);
	assert_int_equal(atm_graph_find_tensor(g, "x"), 0);
	assert_int_equal(atm_graph_find_tensor(g, "y"), 1);
	assert_int_equal(atm_graph_find_tensor(g, "z"), 2);
	const atm_node *r2 = atm_graph_node(g, 1);
	assert_string_equal(r2->name, "r2"); /* nodes run in array order, not by id */
	assert_int_equal(r2->in[0], 1);
	assert_int_equal(r2->out[0], 2);
	char *text = dump(g);
	expect_has(text, "{\"id\": 1, \"name\": \"r2\", \"op\": \"relu_fwd\", \"inputs\": [1], "
	                 "\"outputs\": [2]}");
	free(text);
	atm_graph_destroy(g);
}

static void test_json_floats_shortest(void **state)
{
	atm_graph *g = load_q(
		"{'format': 'autotm-graph', 'version': 1, 'name': 'f',"
		" 'tensors': ["
		"  {'id': 0, 'name': 'w', 'shape': [3], 'kind': 'param'},"
		"  {'id': 1, 'name': 'dw', 'shape': [3], 'kind': 'optimizer_state'},"
		"  {'id': 2, 'name': 'v', 'shape': [3], 'kind': 'optimizer_state'}],"
		" 'nodes': ["
		"  {'id': 0, 'name': 'a', 'op': 'sgd', 'inputs': [0, 1], 'outputs': [], 'attrs': {'lr': 0.1}},"
		"  {'id': 1, 'name': 'b', 'op': 'sgd', 'inputs': [0, 1], 'outputs': [],"
		"   'attrs': {'lr': 0.123456789012345}},"
		"  {'id': 2, 'name': 'c', 'op': 'sgd', 'inputs': [2, 1], 'outputs': [], 'attrs': {'lr': 1}},"
		"  {'id': 3, 'name': 'd', 'op': 'sgd', 'inputs': [0, 2], 'outputs': [], 'attrs': {'lr': 0}}]}",
		"f.json", 0);
	assert_true(atm_graph_node(g, 0)->attrs.lr == 0.1f);
	assert_true(atm_graph_node(g, 1)->attrs.lr == 0.123456789012345f);
	char *a = dump(g), *b;
	expect_has(a, "\"attrs\": {\"lr\": 0.1}");
	expect_has(a, "\"attrs\": {\"lr\": 0.12345679}"); /* the float's shortest exact spelling */
	expect_has(a, "\"attrs\": {\"lr\": 1.0}");
	expect_has(a, "\"attrs\": {\"lr\": 0.0}");
	atm_graph *g2 = NULL;
	assert_int_equal(atm_graph_load_buffer(&g2, a, strlen(a), "f2.json", NULL), ATM_OK);
	b = dump(g2);
	assert_string_equal(a, b);
	assert_true(atm_graph_node(g2, 1)->attrs.lr == atm_graph_node(g, 1)->attrs.lr);
	free(a);
	free(b);
	atm_graph_destroy(g2);
	atm_graph_destroy(g);
}

static void test_json_floats_at_the_edges(void **state)
{
	/* the largest float, the smallest subnormal, and a value that becomes 0 as a float */
	atm_graph *g = load_q(
		"{'format': 'autotm-graph', 'version': 1, 'name': 'edges',"
		" 'tensors': ["
		"  {'id': 0, 'name': 'w', 'shape': [3], 'kind': 'param'},"
		"  {'id': 1, 'name': 'dw', 'shape': [3], 'kind': 'optimizer_state'}],"
		" 'nodes': ["
		"  {'id': 0, 'name': 'a', 'op': 'sgd', 'inputs': [0, 1], 'outputs': [],"
		"   'attrs': {'lr': 3.4028234663852886e38}},"
		"  {'id': 1, 'name': 'b', 'op': 'sgd', 'inputs': [0, 1], 'outputs': [],"
		"   'attrs': {'lr': 1.401298464324817e-45}},"
		"  {'id': 2, 'name': 'c', 'op': 'sgd', 'inputs': [0, 1], 'outputs': [],"
		"   'attrs': {'lr': 1e-300}}]}",
		"edges.json", 0);
	assert_true(atm_graph_node(g, 0)->attrs.lr == FLT_MAX);
	assert_true(atm_graph_node(g, 1)->attrs.lr > 0);
	assert_true(atm_graph_node(g, 2)->attrs.lr == 0);
	char *a = dump(g), *b;
	expect_has(a, "\"lr\": 3.4028235e38}");
	expect_has(a, "\"lr\": 1e-45}");
	atm_graph *g2 = NULL;
	if (atm_graph_load_buffer(&g2, a, strlen(a), "edges2.json", NULL) != ATM_OK)
		fail_msg("%s", atm_errmsg());
	b = dump(g2);
	assert_string_equal(a, b);
	assert_true(atm_graph_node(g2, 0)->attrs.lr == FLT_MAX);
	assert_true(atm_graph_node(g2, 1)->attrs.lr == atm_graph_node(g, 1)->attrs.lr);
	free(a);
	free(b);
	atm_graph_destroy(g2);
	atm_graph_destroy(g);
}

static void test_json_example_mlp4(void **state)
{
	char path[1024];
	atm_graph *g = NULL, *g2 = NULL;
	atm_graph_load_opts o = {.batch = 64};
	source_path(path, sizeof path, "examples/mlp4.json");
	if (atm_graph_load(&g, path, NULL) != ATM_OK)
		fail_msg("%s", atm_errmsg());
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	assert_string_equal(atm_graph_name(g), "mlp4");
	assert_int_equal(atm_graph_n_tensors(g), 34);
	assert_int_equal(atm_graph_n_nodes(g), 27);
	assert_int_equal(atm_graph_tensor(g, atm_graph_find_tensor(g, "x"))->dims[0], 32);
	assert_true(atm_graph_tensor(g, atm_graph_find_tensor(g, "x"))->batched);
	assert_false(atm_graph_tensor(g, atm_graph_find_tensor(g, "fc1.w"))->batched);

	/* every parameter is updated once, by an sgd node after every reader of its old value */
	int n_sgd = 0;
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++) {
		const atm_node *n = atm_graph_node(g, i);
		if (n->op != ATM_OP_SGD)
			continue;
		n_sgd++;
		for (int32_t j = i + 1; j < atm_graph_n_nodes(g); j++)
			for (int k = 0; k < atm_graph_node(g, j)->n_in; k++)
				assert_int_not_equal(atm_graph_node(g, j)->in[k], n->in[0]);
	}
	assert_int_equal(n_sgd, 8);

	atm_graph_stats st;
	assert_int_equal(atm_graph_stats_compute(g, &st), ATM_OK);
	assert_int_equal(st.n_params, 784 * 512 + 512 + 2 * (512 * 512 + 512) + 512 * 10 + 10);

	atm_liveness *lv = NULL;
	assert_int_equal(atm_liveness_new(&lv, g), ATM_OK);
	assert_true(atm_liveness_peak_bytes(lv) > st.param_bytes);
	atm_liveness_destroy(lv);

	if (atm_graph_load(&g2, path, &o) != ATM_OK)
		fail_msg("%s", atm_errmsg());
	assert_int_equal(atm_graph_tensor(g2, atm_graph_find_tensor(g2, "x"))->dims[0], 64);
	assert_int_equal(atm_graph_tensor(g2, atm_graph_find_tensor(g2, "fc1.w"))->dims[0], 512);
	atm_graph_destroy(g2);

	/* what the writer makes of it loads back into the same text */
	char *a = dump(g), *b;
	assert_int_equal(atm_graph_load_buffer(&g2, a, strlen(a), "mlp4-out.json", NULL), ATM_OK);
	b = dump(g2);
	assert_string_equal(a, b);
	free(a);
	free(b);
	atm_graph_destroy(g2);
	atm_graph_destroy(g);
}

static void test_json_api_misuse(void **state)
{
	char *text = (char *)"x";
	atm_graph *g = (atm_graph *)&text;
	assert_int_equal(atm_graph_load_buffer(NULL, "{}", 2, "a.json", NULL), ATM_E_USAGE);
	assert_int_equal(atm_graph_load_buffer(&g, NULL, 5, "a.json", NULL), ATM_E_USAGE);
	assert_null(g);
	atm_graph_load_opts o = {.batch = ATM_MAX_DIM + 1};
	assert_int_equal(atm_graph_load_buffer(&g, "{}", 2, "a.json", &o), ATM_E_USAGE);
	expect_has(atm_errmsg(), "a.json: batch");
	assert_int_equal(atm_graph_dump(NULL, &text), ATM_E_USAGE);
	assert_null(text);
	assert_int_equal(atm_graph_dump(NULL, NULL), ATM_E_USAGE);
	assert_int_equal(atm_graph_load(&g, NULL, NULL), ATM_E_USAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_round_trip_byte_identical),
		cmocka_unit_test(test_json_save_load_file),
		cmocka_unit_test(test_json_batch_parameter),
		cmocka_unit_test(test_json_batch_override),
		cmocka_unit_test(test_json_batch_override_of_fixed_graph_is_refused),
		cmocka_unit_test(test_json_saved_graph_loads_at_another_batch),
		cmocka_unit_test(test_json_defaults),
		cmocka_unit_test(test_json_default_name_without_file),
		cmocka_unit_test(test_json_window_shorthands),
		cmocka_unit_test(test_json_ids_remapped_in_file_order),
		cmocka_unit_test(test_json_floats_shortest),
		cmocka_unit_test(test_json_floats_at_the_edges),
		cmocka_unit_test(test_json_example_mlp4),
		cmocka_unit_test(test_json_api_misuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
