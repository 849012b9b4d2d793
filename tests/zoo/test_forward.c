/* test_forward.c -- forward graphs (format autotm-forward): built into the zoo's training step, parameters named as the file says, every mistake named */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "atm_zoo.h"

/* example -- examples/NAME.forward.json of the source tree (malloc'd text) */
static char *example(const char *name, size_t *len)
{
	char path[1024], *text = NULL;
	const char *src = getenv("ATM_SOURCE_DIR");
	if (!src)
		fail_msg("ATM_SOURCE_DIR is not set; run the test through ctest");
	snprintf(path, sizeof path, "%s/examples/%s.forward.json", src, name);
	if (atm_read_file(path, &text, len) < 0)
		fail_msg("%s", atm_errmsg());
	return text;
}

/* same_as_zoo -- examples/NAME.forward.json builds the zoo's NAME exactly: the same graph, node
 * for node and tensor for tensor, at the file's batch and at another */
static void same_as_zoo(const char *name, int64_t file_batch)
{
	size_t len = 0;
	char *text = example(name, &len), *a = NULL, *b = NULL;
	assert_true(atm_zoo_is_forward(text, len));
	int64_t batches[2] = {0, 3};
	for (int i = 0; i < 2; i++) {
		atm_graph *f = NULL, *z = NULL;
		atm_zoo_opts o = {.batch = batches[i] ? batches[i] : file_batch};
		if (atm_zoo_forward_load_buffer(&f, text, len, "ex.json", batches[i]) < 0)
			fail_msg("%s", atm_errmsg());
		assert_int_equal(atm_zoo_build(&z, name, &o), ATM_OK);
		assert_int_equal(atm_graph_dump(f, &a), ATM_OK);
		assert_int_equal(atm_graph_dump(z, &b), ATM_OK);
		assert_string_equal(a, b);
		free(a);
		free(b);
		atm_graph_destroy(f);
		atm_graph_destroy(z);
	}
	free(text);
}

static void test_forward_example_is_tiny_cnn(void **state)
{
	(void)state;
	same_as_zoo("tiny_cnn", 8);
}

/* test_forward_example_is_tiny_gpt -- token input, embeddings, positions, layer norms, a split,
 * permutes with reshapes, scaled and causal attention, tied output weights, the token loss */
static void test_forward_example_is_tiny_gpt(void **state)
{
	(void)state;
	same_as_zoo("tiny_gpt", 2);
}

/* test_forward_example_is_tiny_se -- depthwise and grouped convolutions, ceil-mode pooling, a
 * learned scale, the squeeze-and-excitation's broadcast product */
static void test_forward_example_is_tiny_se(void **state)
{
	(void)state;
	same_as_zoo("tiny_se", 8);
}

/* same_dump -- a and b are one graph, node for node and tensor for tensor */
static void same_dump(const atm_graph *a, const atm_graph *b)
{
	char *ta = NULL, *tb = NULL;
	assert_int_equal(atm_graph_dump(a, &ta), ATM_OK);
	assert_int_equal(atm_graph_dump(b, &tb), ATM_OK);
	assert_string_equal(ta, tb);
	free(ta);
	free(tb);
}

/* test_forward_precision -- "precision": "bf16" builds the zoo's network in bf16 mixed
 * precision; the loader's precision overrides the file's, and a graph file refuses bf16 */
static void test_forward_precision(void **state)
{
	(void)state;
	size_t len = 0;
	char *text = example("tiny_cnn", &len), path[] = "/tmp/atm-fw-XXXXXX";
	const char *at = strstr(text, "\"version\": 1,");
	assert_non_null(at);
	size_t head = (size_t)(at - text) + strlen("\"version\": 1,");
	char *bf = malloc(len + 64);
	assert_non_null(bf);
	int n = snprintf(bf, len + 64, "%.*s \"precision\": \"bf16\",%s", (int)head, text,
	                 text + head);
	atm_graph *f = NULL, *z = NULL;
	atm_zoo_opts o = {.batch = 8, .bf16 = true};
	assert_int_equal(atm_zoo_forward_load_buffer(&f, bf, (size_t)n, "bf.json", 0), ATM_OK);
	assert_int_equal(atm_zoo_build(&z, "tiny_cnn", &o), ATM_OK);
	same_dump(f, z);
	atm_graph_destroy(f);
	atm_graph_destroy(z);
	/* through a file: f32 asked for over the file's bf16 */
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, bf, (size_t)n), n);
	close(fd);
	atm_graph_load_opts lo = {.precision = "f32"};
	assert_int_equal(atm_zoo_load(&f, path, &lo), ATM_OK);
	o.bf16 = false;
	assert_int_equal(atm_zoo_build(&z, "tiny_cnn", &o), ATM_OK);
	same_dump(f, z);
	atm_graph_destroy(f);
	/* a graph file has its dtypes */
	assert_int_equal(atm_graph_save(z, path), ATM_OK);
	atm_graph_destroy(z);
	lo.precision = "bf16";
	assert_int_equal(atm_zoo_load(&f, path, &lo), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "is an autotm-graph, whose tensors have their dtypes"));
	assert_null(f);
	unlink(path);
	free(bf);
	free(text);
}

/* find -- the id of g's tensor named name, or -1 */
static int32_t find(const atm_graph *g, const char *name)
{
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++)
		if (!strcmp(atm_graph_tensor(g, t)->name, name))
			return t;
	return -1;
}

/* test_forward_param_names -- parameters take the names the file gives (PyTorch's state_dict
 * keys), a layer without "params" its own, and a conv without bias names one */
static void test_forward_param_names(void **state)
{
	(void)state;
	static const char text[] =
		"{\"format\": \"autotm-forward\", \"version\": 1, \"name\": \"n\", \"batch\": 2, \"lr\": 0.5,"
		" \"input\": {\"shape\": [3, 8, 8]}, \"layers\": ["
		"  {\"name\": \"c\", \"op\": \"conv\", \"input\": \"input\", \"out_channels\": 4,"
		"   \"kernel\": 3, \"pad\": 1, \"bias\": false, \"params\": [\"features.0.weight\"]},"
		"  {\"name\": \"b\", \"op\": \"batch_norm\", \"input\": \"c\", \"epsilon\": 1e-5,"
		"   \"params\": [\"features.1.weight\", \"features.1.bias\"]},"
		"  {\"name\": \"p\", \"op\": \"max_pool\", \"input\": \"b\", \"kernel\": 3, \"stride\": 2,"
		"   \"pad\": 1},"
		"  {\"name\": \"fc\", \"op\": \"linear\", \"input\": \"p\", \"out_features\": 5}],"
		" \"output\": \"fc\"}";
	atm_graph *g = NULL;
	assert_int_equal(atm_zoo_forward_load_buffer(&g, text, strlen(text), "n.json", 0), ATM_OK);
	assert_true(find(g, "features.0.weight") >= 0);
	assert_true(find(g, "features.1.weight") >= 0);
	assert_true(find(g, "features.1.bias") >= 0);
	assert_true(find(g, "fc.w") >= 0 && find(g, "fc.b") >= 0);
	assert_true(find(g, "c.w") < 0 && find(g, "c.b") < 0);
	const atm_tensor *w = atm_graph_tensor(g, find(g, "fc.w"));
	assert_int_equal(w->dims[0], 5);
	assert_int_equal(w->dims[1], 4 * 4 * 4); /* pooled 8x8 to 4x4, flattened */
	assert_int_equal(atm_graph_tensor(g, find(g, "image"))->dims[0], 2);
	atm_graph_destroy(g);
}

/* test_forward_shared_conv -- a conv applied twice (two layers naming the same parameters) is
 * one weight tensor and one bias; each use adds its part of the gradient, the sum of both parts
 * is the one SGD updates, and that update follows every read of the weight */
static void test_forward_shared_conv(void **state)
{
	(void)state;
	static const char text[] =
		"{\"format\": \"autotm-forward\", \"version\": 1, \"name\": \"n\", \"batch\": 2,"
		" \"input\": {\"shape\": [4, 8, 8]}, \"layers\": ["
		"  {\"name\": \"conv\", \"op\": \"conv\", \"input\": \"input\", \"out_channels\": 4,"
		"   \"kernel\": 3, \"pad\": 1, \"params\": [\"conv.weight\", \"conv.bias\"]},"
		"  {\"name\": \"relu\", \"op\": \"relu\", \"input\": \"conv\"},"
		"  {\"name\": \"conv_2\", \"op\": \"conv\", \"input\": \"relu\", \"out_channels\": 4,"
		"   \"kernel\": 3, \"pad\": 1, \"params\": [\"conv.weight\", \"conv.bias\"]},"
		"  {\"name\": \"fc\", \"op\": \"linear\", \"input\": \"conv_2\", \"out_features\": 3}],"
		" \"output\": \"fc\"}";
	atm_graph *g = NULL;
	if (atm_zoo_forward_load_buffer(&g, text, strlen(text), "n.json", 0) < 0)
		fail_msg("%s", atm_errmsg());
	int32_t w = find(g, "conv.weight"), n_params = 0, n_sgd = 0, sgd = -1, last_read = -1;
	assert_true(w >= 0);
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++)
		n_params += atm_graph_tensor(g, t)->kind == ATM_KIND_PARAM;
	assert_int_equal(n_params, 4); /* conv.weight, conv.bias, fc.w, fc.b */
	/* the parts: what each use's weights-gradient node writes */
	int32_t parts[2], n_parts = 0;
	for (int32_t i = 0; i < atm_graph_n_nodes(g); i++) {
		const atm_node *n = atm_graph_node(g, i);
		if (n->op == ATM_OP_CONV_BWD_WEIGHTS) {
			assert_true(n_parts < 2);
			parts[n_parts++] = n->out[0];
		}
		if (n->op == ATM_OP_SGD && n->in[0] == w) {
			n_sgd++;
			sgd = i;
		}
		for (int k = 0; k < n->n_in; k++)
			if (n->in[k] == w && n->op != ATM_OP_SGD)
				last_read = i;
	}
	assert_int_equal(n_parts, 2);
	assert_int_not_equal(parts[0], parts[1]);
	assert_int_equal(n_sgd, 1);
	assert_true(last_read >= 0 && last_read < sgd);
	/* the SGD's gradient is the sum of the two parts */
	int32_t dw = atm_graph_node(g, sgd)->in[1];
	assert_string_equal(atm_graph_tensor(g, dw)->name, "conv.weight.grad");
	const atm_node *sum = atm_graph_node(g, atm_graph_producer(g, dw));
	assert_int_equal(sum->op, ATM_OP_ADD);
	assert_true((sum->in[0] == parts[0] && sum->in[1] == parts[1]) ||
	            (sum->in[0] == parts[1] && sum->in[1] == parts[0]));
	atm_graph_destroy(g);
}

/* test_forward_shared_shapes_differ -- two layers that name one parameter at different shapes
 * are refused, the message naming both layers and both shapes; a parameter's name that is
 * another tensor's is refused */
static void test_forward_shared_shapes_differ(void **state)
{
	(void)state;
	static const char *const bad[][2] = {
		{"{\"format\": \"autotm-forward\", \"version\": 1, \"name\": \"n\","
		 " \"input\": {\"shape\": [3, 8, 8]}, \"layers\": ["
		 "  {\"name\": \"c1\", \"op\": \"conv\", \"input\": \"input\", \"out_channels\": 4,"
		 "   \"kernel\": 3, \"pad\": 1, \"bias\": false, \"params\": [\"w\"]},"
		 "  {\"name\": \"c2\", \"op\": \"conv\", \"input\": \"c1\", \"out_channels\": 4,"
		 "   \"kernel\": 3, \"pad\": 1, \"bias\": false, \"params\": [\"w\"]}],"
		 " \"output\": \"c2\"}",
		 "f.json: layers[1] (\"c2\"): layer 'c2': parameter 'w' would be [4, 4, 3, 3] here but "
		 "is [4, 3, 3, 3] in layer 'c1'; a parameter shared by two layers has one shape"},
		{"{\"format\": \"autotm-forward\", \"version\": 1, \"name\": \"n\","
		 " \"input\": {\"shape\": [3, 2, 2]}, \"layers\": ["
		 "  {\"name\": \"a\", \"op\": \"linear\", \"input\": \"input\", \"out_features\": 5,"
		 "   \"params\": [\"fc.weight\", \"fc.bias\"]},"
		 "  {\"name\": \"b\", \"op\": \"linear\", \"input\": \"a\", \"out_features\": 5,"
		 "   \"params\": [\"fc.weight\", \"fc.bias\"]}], \"output\": \"b\"}",
		 "layer 'b': parameter 'fc.weight' would be [5, 5] here but is [5, 12] in layer 'a'"},
		{"{\"format\": \"autotm-forward\", \"version\": 1, \"name\": \"n\","
		 " \"input\": {\"shape\": [3, 2, 2]}, \"layers\": ["
		 "  {\"name\": \"a\", \"op\": \"linear\", \"input\": \"input\", \"out_features\": 5,"
		 "   \"params\": [\"image\", \"fc.bias\"]}], \"output\": \"a\"}",
		 "layer 'a': parameter 'image' names a tensor that is not a parameter (its kind: input)"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		atm_graph *g = NULL;
		atm_status rc = atm_zoo_forward_load_buffer(&g, bad[i][0], strlen(bad[i][0]), "f.json", 0);
		if (rc != ATM_E_INPUT || !strstr(atm_errmsg(), bad[i][1]))
			fail_msg("case %zu: status %d, message '%s' (want '%s')", i, rc, atm_errmsg(),
			         bad[i][1]);
		assert_null(g);
	}
}

/* test_forward_refusals -- every mistake is an input error naming the file, the layer and what
 * is valid */
static void test_forward_refusals(void **state)
{
	(void)state;
#define HEAD "{\"format\": \"autotm-forward\", \"version\": 1, \"name\": \"n\", " \
	     "\"input\": {\"shape\": [3, 8, 8]}, \"layers\": ["
#define CONV(name, in) "{\"name\": \"" name "\", \"op\": \"conv\", \"input\": \"" in "\", " \
	                   "\"out_channels\": 4, \"kernel\": 3, \"pad\": 1}"
#define FC(in) "{\"name\": \"fc\", \"op\": \"linear\", \"input\": \"" in "\", \"out_features\": 2}"
	static const char *const bad[][2] = {
		{"[]", "a forward graph is a JSON object"},
		{"{\"format\": \"autotm-graph\"}", "'format' must be \"autotm-forward\""},
		{HEAD FC("input") "], \"output\": \"fc\", \"x\": 1}", "unknown field 'x'"},
		{HEAD FC("input") "], \"output\": \"fc\", \"version\": 2}", "duplicate"},
		{"{\"format\": \"autotm-forward\", \"version\": 2, \"name\": \"n\"}",
		 "'version' must be an integer from 1 to 1"},
		{HEAD "{\"name\": \"x\", \"op\": \"dropout\", \"input\": \"input\"}], \"output\": \"x\"}",
		 "layers[0] (\"x\"): 'op' must be one of conv, batch_norm, relu, max_pool"},
		{"{\"format\": \"autotm-forward\", \"version\": 1, \"name\": \"n\", \"precision\": "
		 "\"fp16\", \"input\": {\"shape\": [3, 8, 8]}, \"layers\": [" FC("input") "], "
		 "\"output\": \"fc\"}", "'precision' must be \"f32\" or \"bf16\""},
		{HEAD CONV("a", "b") ", " CONV("b", "input") "], \"output\": \"b\"}",
		 "layers[0] (\"a\"): 'input' 'b' is neither the input nor an earlier layer"},
		{HEAD CONV("a", "input") ", " CONV("a", "a") "], \"output\": \"a\"}",
		 "layers[1] (\"a\"): the name 'a' is taken by an earlier layer"},
		{HEAD "{\"name\": \"a\", \"op\": \"conv\", \"input\": \"input\", \"kernel\": 3}], "
		 "\"output\": \"a\"}", "layers[0] (\"a\"): 'out_channels' is missing"},
		{HEAD "{\"name\": \"a\", \"op\": \"conv\", \"input\": \"input\", \"out_channels\": 4, "
		 "\"kernel\": 9}], \"output\": \"a\"}", "layers[0] (\"a\"): layer 'a'"},
		{HEAD "{\"name\": \"a\", \"op\": \"conv\", \"input\": \"input\", \"out_channels\": 4, "
		 "\"kernel\": 3, \"stride\": [1, 2]}], \"output\": \"a\"}", "one stride for both sides"},
		{HEAD "{\"name\": \"a\", \"op\": \"batch_norm\", \"input\": \"input\", \"epsilon\": "
		 "0}], \"output\": \"a\"}", "'epsilon' must be a number above 0 and at most 1"},
		{HEAD "{\"name\": \"a\", \"op\": \"relu\", \"input\": \"input\", \"params\": [\"w\"]}], "
		 "\"output\": \"a\"}", "a relu layer has no parameters"},
		{HEAD "{\"name\": \"a\", \"op\": \"conv\", \"input\": \"input\", \"out_channels\": 4, "
		 "\"kernel\": 3, \"params\": [\"w\"]}], \"output\": \"a\"}",
		 "'params' must name the layer's 2 parameters (weight, then bias)"},
		{HEAD "{\"name\": \"a\", \"op\": \"add\", \"inputs\": [\"input\"]}], \"output\": \"a\"}",
		 "an add layer takes 'inputs': [two names]"},
		{HEAD CONV("a", "input") ", {\"name\": \"s\", \"op\": \"add\", \"inputs\": [\"a\", "
		 "\"input\"]}], \"output\": \"s\"}", "differ in shape"},
		{HEAD "{\"name\": \"a\", \"op\": \"max_pool\", \"input\": \"input\", \"kernel\": [2, 3]}], "
		 "\"output\": \"a\"}", "autotm's pooling takes square windows"},
		{HEAD FC("input") "], \"output\": \"nosuch\"}",
		 "output: 'output' 'nosuch' is neither the input nor an earlier layer"},
		{"{\"format\": \"autotm-forward\", \"version\": 1, \"name\": \"n\", \"input\": "
		 "{\"shape\": [3, 8]}, \"layers\": [" FC("input") "], \"output\": \"fc\"}",
		 "input: 'shape' must be [channels, height, width]"},
		{HEAD "], \"output\": \"input\"}", "'layers' must be an array of 1 to"},
		{"{\"format\": \"autotm-forward\", \"version\": 1, \"name\": \"n\", \"input\": "
		 "{\"shape\": [3, 8, 8], \"tokens\": 4}, \"layers\": [" FC("input") "], \"output\": "
		 "\"fc\"}", "input: must be an object {\"shape\""},
		{HEAD "{\"name\": \"p\", \"op\": \"positions\", \"input\": \"input\", \"table\": [4, 8]}], "
		 "\"output\": \"p\"}", "a positions layer reads no other layer"},
		{HEAD "{\"name\": \"p\", \"op\": \"positions\", \"table\": [2, 4, 8]}], \"output\": \"p\"}",
		 "'table' must be [rows, dim] or [1, rows, dim]"},
		{HEAD "{\"name\": \"p\", \"op\": \"positions\", \"table\": [4, 8], \"length\": 5}], "
		 "\"output\": \"p\"}", "'length' must be an integer from 1 to 4"},
		{HEAD "{\"name\": \"g\", \"op\": \"gelu\", \"input\": \"input\", \"approximate\": \"erf\"}], "
		 "\"output\": \"g\"}", "'approximate' must be \"none\" (the erf form) or \"tanh\""},
		{HEAD "{\"name\": \"t\", \"op\": \"permute\", \"input\": \"input\", \"perm\": [1, 0, 2, 3]}], "
		 "\"output\": \"t\"}", "'perm' must keep the batch first"},
		{HEAD "{\"name\": \"t\", \"op\": \"permute\", \"input\": \"input\", \"perm\": [0, 2, 1], "
		 "\"view\": [3, 64], \"shape\": [64, 3]}], \"output\": \"t\"}", "not both"},
		{HEAD "{\"name\": \"t\", \"op\": \"permute\", \"input\": \"input\", \"perm\": [0, 2, 1], "
		 "\"view\": [3, 8, 8]}], \"output\": \"t\"}", "'view' has 3 dimensions past the batch"},
		{HEAD "{\"name\": \"t\", \"op\": \"reshape\", \"input\": \"input\", \"shape\": [5, 7]}], "
		 "\"output\": \"t\"}", "layer 't': 'image' has 192 elements"},
		{HEAD "{\"name\": \"s\", \"op\": \"split\", \"input\": \"input\", \"axis\": 1, \"parts\": 2}, "
		 FC("s.0") "], \"output\": \"fc\"}", "cannot split 'image' in 2 equal parts"},
		{HEAD "{\"name\": \"s\", \"op\": \"split\", \"input\": \"input\", \"axis\": 2, \"parts\": 2}, "
		 "{\"name\": \"s.1\", \"op\": \"relu\", \"input\": \"s.0\"}], \"output\": \"s.1\"}",
		 "the name 's.1' is taken by an earlier layer"},
		{HEAD "{\"name\": \"m\", \"op\": \"matmul\", \"inputs\": [\"input\", \"input\"], "
		 "\"scale\": 0}], \"output\": \"m\"}", "'scale' must be a finite number other than 0"},
		{HEAD "{\"name\": \"m\", \"op\": \"matmul\", \"inputs\": [\"input\", \"input\", \"input\"]}], "
		 "\"output\": \"m\"}", "a matmul layer takes 'inputs': [two names]"},
		{HEAD "{\"name\": \"e\", \"op\": \"embedding\", \"input\": \"input\", \"num_embeddings\": 4, "
		 "\"embedding_dim\": 2}], \"output\": \"e\"}", "its ids must be an i32 tensor"},
		{HEAD FC("input") ", {\"name\": \"l\", \"op\": \"linear\", \"input\": \"fc\", "
		 "\"out_features\": 2, \"bias\": false}], \"output\": \"l\"}",
		 "a flattening linear layer has a bias"},
		{HEAD "{\"name\": \"g\", \"op\": \"conv\", \"input\": \"input\", \"out_channels\": 4, "
		 "\"kernel\": 3, \"groups\": 2}], \"output\": \"g\"}",
		 "layers[0] (\"g\"): layer 'g': 2 groups must be >= 1 and divide both its 3 input channels"},
		{HEAD "{\"name\": \"g\", \"op\": \"conv\", \"input\": \"input\", \"out_channels\": 4, "
		 "\"kernel\": 3, \"groups\": 0}], \"output\": \"g\"}", "'groups' must be an integer from 1"},
		{HEAD "{\"name\": \"p\", \"op\": \"avg_pool\", \"input\": \"input\", \"kernel\": 3, "
		 "\"stride\": 2, \"pad\": 1, \"ceil_mode\": true}], \"output\": \"p\"}",
		 "ceil_mode, padding 1 and count_include_pad"},
		{HEAD "{\"name\": \"p\", \"op\": \"max_pool\", \"input\": \"input\", \"kernel\": 3, "
		 "\"ceil_mode\": 1}], \"output\": \"p\"}", "'ceil_mode' must be true or false"},
		{HEAD "{\"name\": \"s\", \"op\": \"scale\", \"input\": \"input\", \"shape\": [4, 1, 1]}], "
		 "\"output\": \"s\"}", "does not broadcast"},
		{HEAD "{\"name\": \"s\", \"op\": \"scale\", \"input\": \"input\"}], \"output\": \"s\"}",
		 "'shape' must be"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		atm_graph *g = NULL;
		atm_status rc = atm_zoo_forward_load_buffer(&g, bad[i][0], strlen(bad[i][0]), "f.json", 0);
		if (rc != ATM_E_INPUT || !strstr(atm_errmsg(), bad[i][1]) ||
		    strncmp(atm_errmsg(), "f.json", 6))
			fail_msg("case %zu: status %d, message '%s' (want '%s')", i, rc, atm_errmsg(),
			         bad[i][1]);
		assert_null(g);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forward_example_is_tiny_cnn),
		cmocka_unit_test(test_forward_example_is_tiny_gpt),
		cmocka_unit_test(test_forward_example_is_tiny_se),
		cmocka_unit_test(test_forward_param_names),
		cmocka_unit_test(test_forward_precision),
		cmocka_unit_test(test_forward_refusals),
		cmocka_unit_test(test_forward_shared_conv),
		cmocka_unit_test(test_forward_shared_shapes_differ),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
