/* test_graph_input.c -- bad graph files: each is ATM_E_INPUT (or ATM_E_IO) with a message naming the file and the element */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

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

/* check_msg -- the message starts with prefix and holds both fragments */
static void check_msg(const char *prefix, const char *frag1, const char *frag2)
{
	const char *m = atm_errmsg();
	if (strncmp(m, prefix, strlen(prefix)) != 0 || (frag1 && !strstr(m, frag1)) ||
	    (frag2 && !strstr(m, frag2))) {
		fprintf(stderr, "message:  %s\nexpected: %s ... %s ... %s\n", m, prefix,
		        frag1 ? frag1 : "", frag2 ? frag2 : "");
		fail();
	}
}

/* expect_bad_raw -- loading len bytes of data as "bad.json" fails with code and the message
 * names the file and holds the fragments */
static void expect_bad_raw(const char *data, size_t len, atm_status code, const char *frag1,
                           const char *frag2)
{
	atm_graph *g = (atm_graph *)&g; /* must come back NULL */
	atm_status rc = atm_graph_load_buffer(&g, data, len, "bad.json", NULL);
	if (rc != code) {
		fprintf(stderr, "expected status %d, got %d (%s)\n", code, rc, atm_errmsg());
		fail();
	}
	assert_null(g);
	check_msg("bad.json: ", frag1, frag2);
}

/* expect_bad -- the same for single-quoted JSON text */
static void expect_bad(const char *q, const char *frag1, const char *frag2)
{
	char *json = dq(q);
	expect_bad_raw(json, strlen(json), ATM_E_INPUT, frag1, frag2);
	free(json);
}

/* A valid graph, in pieces that the tests below replace one at a time. */
#define HEAD "{'format': 'autotm-graph', 'version': 1, 'name': 'tiny', 'parameters': {'batch': 2},"
#define TX "{'id': 0, 'name': 'x', 'shape': ['batch', 4], 'kind': 'input'}"
#define TW "{'id': 1, 'name': 'w', 'shape': [3, 4], 'kind': 'param'}"
#define TB "{'id': 2, 'name': 'b', 'shape': [3], 'kind': 'param'}"
#define TY "{'id': 3, 'name': 'y', 'shape': ['batch', 3], 'kind': 'activation'}"
#define TL "{'id': 4, 'name': 'labels', 'shape': ['batch', 3], 'kind': 'input'}"
#define TP "{'id': 5, 'name': 'probs', 'shape': ['batch', 3], 'kind': 'activation'}"
#define TO "{'id': 6, 'name': 'loss', 'shape': [1], 'kind': 'output'}"
#define TREST TW ", " TB ", " TY ", " TL ", " TP ", " TO
#define TENSORS "'tensors': [" TX ", " TREST "],"
#define NFC "{'id': 0, 'name': 'fc', 'op': 'ip_fwd', 'inputs': [0, 1, 2], 'outputs': [3]}"
#define NLOSS "{'id': 1, 'name': 'loss', 'op': 'softmax_xent_fwd', 'inputs': [3, 4], 'outputs': [5, 6]}"
#define NODES "'nodes': [" NFC ", " NLOSS "]}"
#define VALID HEAD TENSORS NODES

/* A convolution and a pooling node whose attrs the tests fill in. */
#define CONV_DOC(conv_attrs, pool_attrs)                                                         \
	"{'format': 'autotm-graph', 'version': 1, 'tensors': ["                                     \
	"{'id': 0, 'name': 'x', 'shape': [1, 1, 4, 4], 'kind': 'input'},"                          \
	"{'id': 1, 'name': 'w', 'shape': [1, 1, 3, 3], 'kind': 'param'},"                          \
	"{'id': 2, 'name': 'y', 'shape': [1, 1, 2, 2], 'kind': 'activation'},"                     \
	"{'id': 3, 'name': 'p', 'shape': [1, 1, 1, 1], 'kind': 'activation'}],"                    \
	"'nodes': [{'id': 0, 'name': 'conv', 'op': 'conv_fwd', 'inputs': [0, 1], 'outputs': [2]" \
	conv_attrs "},"                                                                             \
	"{'id': 1, 'name': 'pool', 'op': 'avgpool_fwd', 'inputs': [2], 'outputs': [3]" pool_attrs "}]}"
#define POOL_OK ", 'attrs': {'kernel': 2, 'stride': 2}"

/* ---------------------------------------------------------------- the baseline */

static void test_graph_input_pieces_make_a_valid_graph(void **state)
{
	const char *docs[] = {VALID, CONV_DOC("", POOL_OK),
	                      CONV_DOC(", 'attrs': {'stride': [1, 1], 'pad': 0}", POOL_OK)};
	for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
		char *json = dq(docs[i]);
		atm_graph *g = NULL;
		if (atm_graph_load_buffer(&g, json, strlen(json), "ok.json", NULL) != ATM_OK)
			fail_msg("doc %zu: %s", i, atm_errmsg());
		atm_graph_destroy(g);
		free(json);
	}
}

/* ---------------------------------------------------------------- JSON itself */

static void test_graph_input_syntax_error(void **state)
{
	expect_bad("{\n  'format': 'autotm-graph'\n  'version': 1\n}", "line 3 column",
	           "JSON syntax error");
	expect_bad("{'format': 'autotm-graph', 'version': 1,}", "line 1 column", "JSON syntax error");
}

static void test_graph_input_truncated(void **state)
{
	char *json = dq(VALID);
	for (size_t len = 1; len < strlen(json); len += 37)
		expect_bad_raw(json, len, ATM_E_INPUT, "JSON syntax error", NULL);
	free(json);
}

static void test_graph_input_empty(void **state)
{
	expect_bad_raw("", 0, ATM_E_INPUT, "the file is empty", NULL);
	expect_bad_raw(" \n\t\r\n", 5, ATM_E_INPUT, "the file is empty", NULL);
	expect_bad_raw(NULL, 0, ATM_E_INPUT, "the file is empty", NULL);
}

static void test_graph_input_top_level_not_object(void **state)
{
	expect_bad("[1, 2]", "expected a JSON object at the top level, got an array", NULL);
	expect_bad("42", "expected a JSON object at the top level, got 42", NULL);
	expect_bad("'graph'", "expected a JSON object at the top level, got a string \"graph\"", NULL);
	expect_bad("null", "got null", NULL);
}

static void test_graph_input_bytes_that_are_not_json(void **state)
{
	expect_bad_raw("{\"format\"\0: 1}", 14, ATM_E_INPUT, "JSON syntax error", NULL);
	expect_bad_raw("{\"name\": \"\xff\xfe\"}", 14, ATM_E_INPUT, "JSON syntax error", NULL);
	expect_bad("{'name': 'a\\u0000b'}", "JSON syntax error", NULL);
	expect_bad("{'format': 'autotm-graph', 'format': 'autotm-graph'}", "JSON syntax error",
	           "duplicate");
	expect_bad("{'format': 'autotm-graph', 'version': 99999999999999999999}", "JSON syntax error",
	           NULL);
}

static void test_graph_input_deep_nesting(void **state)
{
	size_t n = 200000;
	char *deep = malloc(n);
	assert_non_null(deep);
	memset(deep, '[', n);
	expect_bad_raw(deep, n, ATM_E_INPUT, "JSON syntax error", NULL);
	free(deep);
}

/* ---------------------------------------------------------------- the header */

static void test_graph_input_wrong_format(void **state)
{
	expect_bad("{'version': 1, 'tensors': [], 'nodes': []}",
	           "missing \"format\": \"autotm-graph\"", "is this an autotm graph file?");
	expect_bad("{'format': 'autotm-plan', 'version': 1}",
	           "format: expected \"autotm-graph\", got a string \"autotm-plan\"",
	           "not an autotm graph file");
	expect_bad("{'format': 1}", "format: expected \"autotm-graph\", got 1", NULL);
}

static void test_graph_input_wrong_version(void **state)
{
	expect_bad("{'format': 'autotm-graph', 'version': 2}",
	           "version: unsupported version 2; this autotm reads version 1", NULL);
	expect_bad("{'format': 'autotm-graph', 'version': '1'}",
	           "version: expected the integer 1, got a string \"1\"", NULL);
	expect_bad("{'format': 'autotm-graph', 'version': 1.0}", "version: expected the integer 1",
	           NULL);
	expect_bad("{'format': 'autotm-graph'}", "missing \"version\": 1", NULL);
}

static void test_graph_input_unknown_top_level_key(void **state)
{
	expect_bad(HEAD "'tensor': [], " TENSORS NODES, "unknown top-level key \"tensor\"",
	           "(valid: format, version, name, parameters, tensors, nodes)");
}

static void test_graph_input_missing_or_wrong_sections(void **state)
{
	expect_bad(HEAD NODES, "missing required key \"tensors\"", NULL);
	expect_bad(HEAD "'tensors': []}", "missing required key \"nodes\"", NULL);
	expect_bad(HEAD "'tensors': {}, " NODES, "tensors: expected an array of tensor objects, got an "
	           "object", NULL);
	expect_bad(HEAD TENSORS "'nodes': 'fc'}", "nodes: expected an array of node objects", NULL);
	expect_bad(HEAD TENSORS "'nodes': []}", "nodes: the graph has no nodes", NULL);
	expect_bad("{'format': 'autotm-graph', 'version': 1, 'name': 5, " TENSORS NODES,
	           "name: expected a non-empty string, got 5", NULL);
	expect_bad("{'format': 'autotm-graph', 'version': 1, 'name': '', " TENSORS NODES,
	           "name: expected a non-empty string, got a string \"\"", NULL);
}

static void test_graph_input_bad_parameters(void **state)
{
	expect_bad("{'format': 'autotm-graph', 'version': 1, 'parameters': {'batch': 0}, " TENSORS NODES,
	           "parameters.batch: expected a positive integer, got 0", NULL);
	expect_bad("{'format': 'autotm-graph', 'version': 1, 'parameters': {'batch': '16'}, " TENSORS
	           NODES, "parameters.batch: expected a positive integer, got a string \"16\"", NULL);
	expect_bad("{'format': 'autotm-graph', 'version': 1, 'parameters': [16], " TENSORS NODES,
	           "parameters: expected an object such as {\"batch\": 16}, got an array", NULL);
	expect_bad("{'format': 'autotm-graph', 'version': 1, 'parameters': {'batch': 2199023255552}, "
	           TENSORS NODES, "parameters.batch: expected a positive integer", NULL);
}

/* ---------------------------------------------------------------- tensors */

static void test_graph_input_tensor_wrong_types(void **state)
{
	expect_bad(HEAD "'tensors': [5, " TREST "], " NODES, "tensors[0]: expected an object, got 5",
	           NULL);
	expect_bad(HEAD "'tensors': [{'id': '0', 'name': 'x', 'shape': [2, 4], 'kind': 'input'}, "
	           TREST "], " NODES, "tensors[0].id: expected a non-negative integer, got a string "
	           "\"0\"", NULL);
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': ['x'], 'shape': [2, 4], 'kind': 'input'}, "
	           TREST "], " NODES, "tensors[0].name: expected a non-empty string, got an array",
	           NULL);
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': 4, 'kind': 'input'}, " TREST
	           "], " NODES, "tensors[0] (\"x\").shape: expected an array of dimensions", "got 4");
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [2, 4], 'kind': 0}, " TREST
	           "], " NODES, "tensors[0] (\"x\").kind: expected a kind name", "got 0");
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [2, 4], 'kind': 'input', "
	           "'dtype': 4}, " TREST "], " NODES, "tensors[0] (\"x\").dtype: expected a dtype name",
	           "got 4");
}

static void test_graph_input_tensor_missing_keys(void **state)
{
	expect_bad(HEAD "'tensors': [{'name': 'x', 'shape': [2, 4], 'kind': 'input'}, " TREST "], "
	           NODES, "tensors[0]: missing required key \"id\"", NULL);
	expect_bad(HEAD "'tensors': [{'id': 0, 'shape': [2, 4], 'kind': 'input'}, " TREST "], " NODES,
	           "tensors[0]: missing required key \"name\"", NULL);
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'kind': 'input'}, " TREST "], " NODES,
	           "tensors[0] (\"x\"): missing required key \"shape\"", NULL);
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [2, 4]}, " TREST "], " NODES,
	           "tensors[0] (\"x\"): missing required key \"kind\"", NULL);
}

static void test_graph_input_tensor_unknown_key(void **state)
{
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shpe': [2, 4], 'kind': 'input'}, " TREST
	           "], " NODES, "tensors[0]: unknown key \"shpe\"",
	           "(valid: id, name, shape, dtype, kind, locations)");
}

static void test_graph_input_negative_id(void **state)
{
	expect_bad(HEAD "'tensors': [{'id': -1, 'name': 'x', 'shape': [2, 4], 'kind': 'input'}, "
	           TREST "], " NODES, "tensors[0].id: expected a non-negative integer, got -1", NULL);
}

static void test_graph_input_bad_dimensions(void **state)
{
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [2, 0], 'kind': 'input'}, "
	           TREST "], " NODES, "tensors[0] (\"x\").shape[1]: dimension must be a positive "
	           "integer or a parameter name, got 0", NULL);
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [2, -4], 'kind': 'input'}, "
	           TREST "], " NODES, "tensors[0] (\"x\").shape[1]: dimension must be a positive "
	           "integer or a parameter name, got -4", NULL);
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [2.5, 4], 'kind': 'input'}, "
	           TREST "], " NODES, "tensors[0] (\"x\").shape[0]: dimension must be", "got 2.5");
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [null], 'kind': 'input'}, "
	           TREST "], " NODES, "tensors[0] (\"x\").shape[0]: dimension must be", "got null");
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [2, 2199023255552], "
	           "'kind': 'input'}, " TREST "], " NODES, "tensors[0] (\"x\").shape[1]: dimension "
	           "2199023255552 is larger than the limit 1099511627776", NULL);
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [], 'kind': 'input'}, " TREST
	           "], " NODES, "tensors[0] (\"x\").shape: a shape has 1 to 6 dimensions, got 0",
	           "write [1] for a scalar");
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [1, 1, 1, 1, 1, 1, 1], "
	           "'kind': 'input'}, " TREST "], " NODES,
	           "tensors[0] (\"x\").shape: a shape has 1 to 6 dimensions, got 7", NULL);
}

static void test_graph_input_byte_size_overflow(void **state)
{
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'huge', 'shape': [1099511627776, "
	           "1099511627776], 'kind': 'input'}, " TREST "], " NODES,
	           "tensors[0] (\"huge\"): the tensor is too large: [1099511627776, 1099511627776] f32",
	           "more than 2^62 bytes");
	/* 2^62 elements of one byte fit; of four bytes they do not */
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'big', 'shape': [1073741824, 1073741824, 4], "
	           "'kind': 'input'}, " TREST "], " NODES, "tensors[0] (\"big\"): the tensor is too "
	           "large: [1073741824, 1073741824, 4] f32", NULL);
}

static void test_graph_input_unknown_parameter(void **state)
{
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': ['bach', 4], 'kind': 'input'}, "
	           TREST "], " NODES, "tensors[0] (\"x\").shape[0]: unknown parameter \"bach\"",
	           "(parameters: batch)");
	expect_bad("{'format': 'autotm-graph', 'version': 1, " TENSORS NODES,
	           "tensors[0] (\"x\").shape[0]: unknown parameter \"batch\"",
	           "the file defines no \"parameters\"");
}

static void test_graph_input_unknown_dtype_and_kind(void **state)
{
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [2, 4], 'kind': 'input', "
	           "'dtype': 'f16'}, " TREST "], " NODES, "tensors[0] (\"x\").dtype: unknown dtype "
	           "'f16'", "(valid: f32, i32, u8, bf16)");
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [2, 4], 'kind': 'weight'}, "
	           TREST "], " NODES, "tensors[0] (\"x\").kind: unknown tensor kind 'weight'",
	           "input, param, grad, activation, optimizer_state, constant, output");
}

static void test_graph_input_bad_locations(void **state)
{
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [2, 4], 'kind': 'input', "
	           "'locations': ['dram']}, " TREST "], " NODES, "tensors[0] (\"x\").locations[0]: "
	           "unknown location \"dram\" (valid: fast, slow)", NULL);
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [2, 4], 'kind': 'input', "
	           "'locations': []}, " TREST "], " NODES, "tensors[0] (\"x\").locations: a tensor "
	           "needs at least one location", NULL);
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [2, 4], 'kind': 'input', "
	           "'locations': ['fast', 'fast']}, " TREST "], " NODES,
	           "tensors[0] (\"x\").locations[1]: \"fast\" is listed twice", NULL);
	expect_bad(HEAD "'tensors': [{'id': 0, 'name': 'x', 'shape': [2, 4], 'kind': 'input', "
	           "'locations': 'fast'}, " TREST "], " NODES, "tensors[0] (\"x\").locations: "
	           "expected an array", NULL);
}

static void test_graph_input_duplicate_tensor_id(void **state)
{
	expect_bad(HEAD "'tensors': [" TX ", " TW ", " TB ", {'id': 1, 'name': 'y', 'shape': "
	           "['batch', 3], 'kind': 'activation'}, " TL ", " TP ", " TO "], " NODES,
	           "tensors[3].id: duplicate id 1 (tensors[1] has it too)", NULL);
}

static void test_graph_input_duplicate_tensor_name(void **state)
{
	expect_bad(HEAD "'tensors': [" TX ", " TW ", " TB ", {'id': 3, 'name': 'w', 'shape': "
	           "['batch', 3], 'kind': 'activation'}, " TL ", " TP ", " TO "], " NODES,
	           "tensors[3] (\"w\"): ", "the name is used by tensor 1 already");
}

static void test_graph_input_long_name(void **state)
{
	char name[1100];
	memset(name, 'n', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	size_t len = strlen(HEAD) + 2 * sizeof name + 512;
	char *q = malloc(len);
	assert_non_null(q);
	snprintf(q, len, HEAD "'tensors': [{'id': 0, 'name': '%s', 'shape': [2, 4], 'kind': 'input'},"
	         TREST "], " NODES, name);
	expect_bad(q, "tensors[0].name: the name is 1099 bytes long; at most 1024 are allowed", NULL);
	free(q);
}

/* ---------------------------------------------------------------- nodes */

static void test_graph_input_node_wrong_types(void **state)
{
	expect_bad(HEAD TENSORS "'nodes': [[0], " NLOSS "]}", "nodes[0]: expected an object, got an "
	           "array", NULL);
	expect_bad(HEAD TENSORS "'nodes': [{'id': 'fc', 'name': 'fc', 'op': 'ip_fwd', 'inputs': "
	           "[0, 1, 2], 'outputs': [3]}, " NLOSS "]}",
	           "nodes[0].id: expected a non-negative integer, got a string \"fc\"", NULL);
	expect_bad(HEAD TENSORS "'nodes': [{'id': 0, 'name': 'fc', 'op': 3, 'inputs': [0, 1, 2], "
	           "'outputs': [3]}, " NLOSS "]}", "nodes[0] (\"fc\").op: expected an op name", "got 3");
	expect_bad(HEAD TENSORS "'nodes': [{'id': 0, 'name': 'fc', 'op': 'ip_fwd', 'inputs': '0', "
	           "'outputs': [3]}, " NLOSS "]}", "nodes[0] (\"fc\").inputs: expected an array of "
	           "tensor ids, got a string \"0\"", NULL);
	expect_bad(HEAD TENSORS "'nodes': [{'id': 0, 'name': 'fc', 'op': 'ip_fwd', 'inputs': "
	           "[0, '1', 2], 'outputs': [3]}, " NLOSS "]}",
	           "nodes[0] (\"fc\").inputs[1]: expected a tensor id, got a string \"1\"", NULL);
	expect_bad(HEAD TENSORS "'nodes': [{'id': 0, 'name': 'fc', 'op': 'ip_fwd', 'inputs': "
	           "[0, 1, 2], 'outputs': [3], 'workspace_bytes': -1}, " NLOSS "]}",
	           "nodes[0] (\"fc\").workspace_bytes: expected a byte count >= 0, got -1", NULL);
	expect_bad(HEAD TENSORS "'nodes': [{'id': 0, 'name': 'fc', 'op': 'ip_fwd', 'inputs': "
	           "[0, 1, 2], 'outputs': [3], 'attrs': []}, " NLOSS "]}",
	           "nodes[0] (\"fc\").attrs: expected an object, got an array", NULL);
}

static void test_graph_input_node_missing_and_unknown_keys(void **state)
{
	expect_bad(HEAD TENSORS "'nodes': [{'id': 0, 'name': 'fc', 'op': 'ip_fwd', 'outputs': [3]}, "
	           NLOSS "]}", "nodes[0] (\"fc\"): missing required key \"inputs\"", NULL);
	expect_bad(HEAD TENSORS "'nodes': [{'id': 0, 'name': 'fc', 'op': 'ip_fwd', 'inputs': [0, 1, 2]"
	           "}, " NLOSS "]}", "nodes[0] (\"fc\"): missing required key \"outputs\"", NULL);
	expect_bad(HEAD TENSORS "'nodes': [{'id': 0, 'name': 'fc', 'inputs': [0, 1, 2], 'outputs': [3]"
	           "}, " NLOSS "]}", "nodes[0] (\"fc\"): missing required key \"op\"", NULL);
	expect_bad(HEAD TENSORS "'nodes': [{'name': 'fc', 'op': 'ip_fwd', 'inputs': [0, 1, 2], "
	           "'outputs': [3]}, " NLOSS "]}", "nodes[0]: missing required key \"id\"", NULL);
	expect_bad(HEAD TENSORS "'nodes': [" NFC ", {'id': 1, 'name': 'loss', 'op': 'softmax_xent_fwd', "
	           "'input': [3, 4], 'outputs': [5, 6]}]}", "nodes[1]: unknown key \"input\"",
	           "(valid: id, name, op, inputs, outputs, attrs, workspace_bytes)");
}

static void test_graph_input_unknown_op(void **state)
{
	expect_bad(HEAD TENSORS "'nodes': [{'id': 0, 'name': 'fc', 'op': 'innerproduct', 'inputs': "
	           "[0, 1, 2], 'outputs': [3]}, " NLOSS "]}",
	           "nodes[0] (\"fc\").op: unknown op 'innerproduct'", "(valid: conv_fwd, ");
}

static void test_graph_input_missing_tensor_id(void **state)
{
	expect_bad(HEAD TENSORS "'nodes': [{'id': 0, 'name': 'fc', 'op': 'ip_fwd', 'inputs': "
	           "[0, 1, 99], 'outputs': [3]}, " NLOSS "]}",
	           "nodes[0] (\"fc\").inputs[2]: no tensor has id 99", NULL);
	expect_bad(HEAD TENSORS "'nodes': [" NFC ", {'id': 1, 'name': 'loss', 'op': "
	           "'softmax_xent_fwd', 'inputs': [3, 4], 'outputs': [5, 7]}]}",
	           "nodes[1] (\"loss\").outputs[1]: no tensor has id 7", NULL);
}

static void test_graph_input_duplicate_node_id(void **state)
{
	expect_bad(HEAD TENSORS "'nodes': [" NFC ", {'id': 0, 'name': 'loss', 'op': "
	           "'softmax_xent_fwd', 'inputs': [3, 4], 'outputs': [5, 6]}]}",
	           "nodes[1].id: duplicate id 0 (nodes[0] has it too)", NULL);
}

static void test_graph_input_duplicate_node_name(void **state)
{
	expect_bad(HEAD TENSORS "'nodes': [" NFC ", {'id': 1, 'name': 'fc', 'op': "
	           "'softmax_xent_fwd', 'inputs': [3, 4], 'outputs': [5, 6]}]}",
	           "nodes[1] (\"fc\"): ", "the name is used by node 0 already");
}

static void test_graph_input_used_before_produced(void **state)
{
	expect_bad(HEAD TENSORS "'nodes': [" NLOSS ", " NFC "]}",
	           "nodes[0] (\"loss\"): input 3 (\"y\") is used before it is produced",
	           "(by nodes[1] (\"fc\"))");
}

static void test_graph_input_never_produced(void **state)
{
	expect_bad(HEAD TENSORS "'nodes': [" NLOSS "]}",
	           "nodes[0] (\"loss\"): input 3 (\"y\", kind activation) is never produced by any "
	           "node", NULL);
	/* a tensor nobody touches but that needs a producer */
	expect_bad(HEAD "'tensors': [" TX ", " TREST ", {'id': 9, 'name': 'orphan', 'shape': [2], "
	           "'kind': 'grad'}], " NODES,
	           "tensors[7] (\"orphan\"): no node produces this grad tensor", NULL);
}

static void test_graph_input_produced_twice(void **state)
{
	expect_bad(HEAD TENSORS "'nodes': [" NFC ", {'id': 2, 'name': 'again', 'op': 'relu_fwd', "
	           "'inputs': [0], 'outputs': [3]}, " NLOSS "]}",
	           "nodes[1] (\"again\"): output 3 (\"y\") is already produced by nodes[0] (\"fc\")",
	           NULL);
	expect_bad(HEAD TENSORS "'nodes': [" NFC ", {'id': 1, 'name': 'loss', 'op': "
	           "'softmax_xent_fwd', 'inputs': [3, 4], 'outputs': [5, 5]}]}",
	           "nodes[1] (\"loss\"): output 5 (\"probs\") is listed twice", NULL);
}

static void test_graph_input_shape_mismatch(void **state)
{
	/* the weights of fc are 3 x 5 but x has 4 features */
	expect_bad(HEAD "'tensors': [" TX ", {'id': 1, 'name': 'w', 'shape': [3, 5], 'kind': 'param'}"
	           ", " TB ", " TY ", " TL ", " TP ", " TO "], " NODES,
	           "node 0 ('fc', ip_fwd): weights 'w' have shape [3, 5]", "4 features per sample");
	/* the loss of a batch of 2 against labels for a batch of 3 */
	expect_bad(HEAD "'tensors': [" TX ", " TW ", " TB ", " TY ", {'id': 4, 'name': 'labels', "
	           "'shape': [3, 3], 'kind': 'input'}, " TP ", " TO "], " NODES,
	           "node 1 ('loss', softmax_xent_fwd): ", "labels 'labels' has shape [3, 3]");
}

static void test_graph_input_wrong_arity(void **state)
{
	expect_bad(HEAD TENSORS "'nodes': [{'id': 0, 'name': 'fc', 'op': 'ip_fwd', 'inputs': [0, 1], "
	           "'outputs': [3]}, " NLOSS "]}", "nodes[0] (\"fc\"): ",
	           "ip_fwd takes 3 inputs and 1 outputs, got 2 and 1");
}

static void test_graph_input_kernel_writes_a_param(void **state)
{
	expect_bad(HEAD TENSORS "'nodes': [" NFC ", {'id': 2, 'name': 'r', 'op': 'relu_fwd', "
	           "'inputs': [3], 'outputs': [1]}, " NLOSS "]}", "nodes[1] (\"r\"): output 1 (\"w\") "
	           "is a param tensor, which exists before the step", NULL);
}

static void test_graph_input_unknown_attr(void **state)
{
	expect_bad(HEAD TENSORS "'nodes': [{'id': 0, 'name': 'fc', 'op': 'ip_fwd', 'inputs': [0, 1, 2],"
	           " 'outputs': [3], 'attrs': {'stride': 1}}, " NLOSS "]}",
	           "nodes[0] (\"fc\").attrs: op ip_fwd takes no attrs, got \"stride\"", NULL);
	expect_bad(CONV_DOC(", 'attrs': {'strides': [2, 2]}", POOL_OK),
	           "nodes[0] (\"conv\").attrs: unknown attr \"strides\" for op conv_fwd",
	           "(valid: stride, pad, groups)");
	expect_bad(CONV_DOC("", ", 'attrs': {'kernel': 2, 'epsilon': 1e-5}"),
	           "nodes[1] (\"pool\").attrs: unknown attr \"epsilon\" for op avgpool_fwd",
	           "(valid: kernel, stride, pad, exclude_pad)");
}

static void test_graph_input_bad_attr_values(void **state)
{
	expect_bad(CONV_DOC(", 'attrs': {'stride': 0}", POOL_OK), "nodes[0] (\"conv\").attrs.stride: "
	           "expected a positive integer or [h, w] of positive integers, got 0", NULL);
	expect_bad(CONV_DOC(", 'attrs': {'stride': [1, 1, 1]}", POOL_OK),
	           "nodes[0] (\"conv\").attrs.stride: expected a positive integer or [h, w]",
	           "got an array");
	expect_bad(CONV_DOC(", 'attrs': {'stride': [1, 0]}", POOL_OK),
	           "nodes[0] (\"conv\").attrs.stride[1]: expected a positive integer, got 0", NULL);
	expect_bad(CONV_DOC(", 'attrs': {'pad': [0, -1]}", POOL_OK),
	           "nodes[0] (\"conv\").attrs.pad[1]: expected a non-negative integer, got -1", NULL);
	expect_bad(CONV_DOC(", 'attrs': {'pad': [0, 0, 0]}", POOL_OK),
	           "nodes[0] (\"conv\").attrs.pad: expected a non-negative integer, [h, w] or [top, "
	           "left, bottom, right]", NULL);
	expect_bad(CONV_DOC(", 'attrs': {'pad': 2000000}", POOL_OK),
	           "nodes[0] (\"conv\").attrs.pad: expected a non-negative integer, got 2000000", NULL);
	expect_bad(CONV_DOC("", ""), "nodes[1] (\"pool\").attrs: op avgpool_fwd needs \"kernel\"",
	           NULL);
	expect_bad(CONV_DOC("", ", 'attrs': {'kernel': 2, 'exclude_pad': 'yes'}"),
	           "nodes[1] (\"pool\").attrs.exclude_pad: expected true or false", NULL);
	/* a window that does not fit is the shape rule's to report */
	expect_bad(CONV_DOC("", ", 'attrs': {'kernel': 3}"), "node 1 ('pool', avgpool_fwd): ",
	           "window does not fit");
}

static void test_graph_input_bad_float_attrs(void **state)
{
#define SGD_DOC(attrs)                                                                  \
	"{'format': 'autotm-graph', 'version': 1, 'tensors': ["                             \
	"{'id': 0, 'name': 'w', 'shape': [3], 'kind': 'param'},"                            \
	"{'id': 1, 'name': 'dw', 'shape': [3], 'kind': 'optimizer_state'},"                 \
	"{'id': 2, 'name': 'v', 'shape': [3], 'kind': 'activation'},"                       \
	"{'id': 3, 'name': 'y', 'shape': [3], 'kind': 'activation'}],"                      \
	"'nodes': [{'id': 0, 'name': 'sgd', 'op': 'sgd', 'inputs': [0, 1], 'outputs': []" \
	attrs "}]}"
	expect_bad(SGD_DOC(", 'attrs': {'lr': -0.1}"),
	           "nodes[0] (\"sgd\").attrs.lr: expected a number >= 0, got -0.1", NULL);
	expect_bad(SGD_DOC(", 'attrs': {'lr': '0.1'}"), "nodes[0] (\"sgd\").attrs.lr: expected a "
	           "number >= 0, got a string \"0.1\"", NULL);
	expect_bad(SGD_DOC(", 'attrs': {'lr': 1e300}"),
	           "nodes[0] (\"sgd\").attrs.lr: expected a number >= 0, got 1e+300", NULL);
	expect_bad("{'format': 'autotm-graph', 'version': 1, 'tensors': ["
	           "{'id': 0, 'name': 'x', 'shape': [2, 3], 'kind': 'input'},"
	           "{'id': 1, 'name': 'g', 'shape': [3], 'kind': 'param'},"
	           "{'id': 2, 'name': 'b', 'shape': [3], 'kind': 'param'},"
	           "{'id': 3, 'name': 'y', 'shape': [2, 3], 'kind': 'activation'},"
	           "{'id': 4, 'name': 'm', 'shape': [3], 'kind': 'activation'},"
	           "{'id': 5, 'name': 'v', 'shape': [3], 'kind': 'activation'}],"
	           "'nodes': [{'id': 0, 'name': 'bn', 'op': 'bn_fwd', 'inputs': [0, 1, 2], "
	           "'outputs': [3, 4, 5], 'attrs': {'epsilon': 0}}]}",
	           "nodes[0] (\"bn\").attrs.epsilon: expected a positive number, got 0", NULL);
	expect_bad("{'format': 'autotm-graph', 'version': 1, 'tensors': ["
	           "{'id': 0, 'name': 'a', 'shape': [2, 3], 'kind': 'input'},"
	           "{'id': 1, 'name': 'y', 'shape': [2, 6], 'kind': 'activation'}],"
	           "'nodes': [{'id': 0, 'name': 'cat', 'op': 'concat', 'inputs': [0, 0], "
	           "'outputs': [1], 'attrs': {'axis': 6}}]}",
	           "nodes[0] (\"cat\").attrs.axis: expected an axis from 0 to 5, got 6", NULL);
#undef SGD_DOC
}

static void test_graph_input_huge_arrays(void **state)
{
	/* a concat of 5000 inputs: past any real network, refused before anything is allocated */
	size_t cap = 64 * 1024;
	char *q = malloc(cap);
	assert_non_null(q);
	size_t used = (size_t)snprintf(q, cap, "{'format': 'autotm-graph', 'version': 1, 'tensors': ["
	                               "{'id': 0, 'name': 'a', 'shape': [1], 'kind': 'input'},"
	                               "{'id': 1, 'name': 'y', 'shape': [5000], 'kind': 'activation'}],"
	                               "'nodes': [{'id': 0, 'name': 'cat', 'op': 'concat', "
	                               "'attrs': {'axis': 0}, 'outputs': [1], 'inputs': [0");
	for (int i = 1; i < 5000; i++)
		used += (size_t)snprintf(q + used, cap - used, ", 0");
	snprintf(q + used, cap - used, "]}]}");
	expect_bad(q, "nodes[0] (\"cat\").inputs: 5000 tensors; a node takes at most 4096", NULL);
	free(q);
}

/* ---------------------------------------------------------------- files */

static void test_graph_input_nonexistent_file(void **state)
{
	atm_graph *g = (atm_graph *)&g;
	assert_int_equal(atm_graph_load(&g, "/nonexistent/dir/net.json", NULL), ATM_E_NOTFOUND);
	assert_null(g);
	check_msg("cannot open /nonexistent/dir/net.json", "No such file", NULL);
	assert_int_equal(atm_graph_load(&g, "/tmp", NULL), ATM_E_IO);
	check_msg("cannot read /tmp", "directory", NULL);
}

static void test_graph_input_bad_files(void **state)
{
	char dir[] = "/tmp/atm_test_graph_input_XXXXXX", path[128], empty[128];
	char *json = dq(VALID);
	atm_graph *g = (atm_graph *)&g;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/cut.json", dir);
	snprintf(empty, sizeof empty, "%s/empty.json", dir);
	assert_int_equal(atm_write_file_atomic(path, json, strlen(json) / 2), ATM_OK);
	assert_int_equal(atm_write_file_atomic(empty, "", 0), ATM_OK);

	assert_int_equal(atm_graph_load(&g, path, NULL), ATM_E_INPUT);
	assert_null(g);
	check_msg(path, ": line 1 column", "JSON syntax error");
	assert_int_equal(atm_graph_load(&g, empty, NULL), ATM_E_INPUT);
	check_msg(empty, ": the file is empty", NULL);

	unlink(path);
	unlink(empty);
	rmdir(dir);
	free(json);
}

/* A jansson allocator that fails from the first call on, as with a too small address space. */
static void *no_malloc(size_t n)
{
	(void)n;
	return NULL;
}

/* test_graph_input_out_of_memory -- a graph or plan the parser cannot allocate for is out of
 * memory (exit 7), not a syntax error with an empty reason */
static void test_graph_input_out_of_memory(void **state)
{
	(void)state;
	char *text = dq("{'format': 'autotm-graph', 'version': 1, 'name': 'g', 'tensors': [], "
	                "'nodes': []}");
	json_malloc_t old_malloc;
	json_free_t old_free;
	json_get_alloc_funcs(&old_malloc, &old_free);
	json_set_alloc_funcs(no_malloc, free);
	atm_graph *g = NULL;
	atm_status rc = atm_graph_load_buffer(&g, text, strlen(text), "g.json", NULL);
	json_set_alloc_funcs(old_malloc, old_free);
	free(text);
	assert_int_equal(rc, ATM_E_NOMEM);
	assert_null(g);
	assert_non_null(strstr(atm_errmsg(), "out of memory"));
	assert_int_equal(atm_exit_code(rc), 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_graph_input_pieces_make_a_valid_graph),
		cmocka_unit_test(test_graph_input_syntax_error),
		cmocka_unit_test(test_graph_input_truncated),
		cmocka_unit_test(test_graph_input_empty),
		cmocka_unit_test(test_graph_input_top_level_not_object),
		cmocka_unit_test(test_graph_input_bytes_that_are_not_json),
		cmocka_unit_test(test_graph_input_deep_nesting),
		cmocka_unit_test(test_graph_input_wrong_format),
		cmocka_unit_test(test_graph_input_wrong_version),
		cmocka_unit_test(test_graph_input_unknown_top_level_key),
		cmocka_unit_test(test_graph_input_missing_or_wrong_sections),
		cmocka_unit_test(test_graph_input_bad_parameters),
		cmocka_unit_test(test_graph_input_tensor_wrong_types),
		cmocka_unit_test(test_graph_input_tensor_missing_keys),
		cmocka_unit_test(test_graph_input_tensor_unknown_key),
		cmocka_unit_test(test_graph_input_negative_id),
		cmocka_unit_test(test_graph_input_bad_dimensions),
		cmocka_unit_test(test_graph_input_byte_size_overflow),
		cmocka_unit_test(test_graph_input_unknown_parameter),
		cmocka_unit_test(test_graph_input_unknown_dtype_and_kind),
		cmocka_unit_test(test_graph_input_bad_locations),
		cmocka_unit_test(test_graph_input_duplicate_tensor_id),
		cmocka_unit_test(test_graph_input_duplicate_tensor_name),
		cmocka_unit_test(test_graph_input_long_name),
		cmocka_unit_test(test_graph_input_node_wrong_types),
		cmocka_unit_test(test_graph_input_node_missing_and_unknown_keys),
		cmocka_unit_test(test_graph_input_unknown_op),
		cmocka_unit_test(test_graph_input_missing_tensor_id),
		cmocka_unit_test(test_graph_input_duplicate_node_id),
		cmocka_unit_test(test_graph_input_duplicate_node_name),
		cmocka_unit_test(test_graph_input_used_before_produced),
		cmocka_unit_test(test_graph_input_never_produced),
		cmocka_unit_test(test_graph_input_produced_twice),
		cmocka_unit_test(test_graph_input_shape_mismatch),
		cmocka_unit_test(test_graph_input_wrong_arity),
		cmocka_unit_test(test_graph_input_kernel_writes_a_param),
		cmocka_unit_test(test_graph_input_unknown_attr),
		cmocka_unit_test(test_graph_input_bad_attr_values),
		cmocka_unit_test(test_graph_input_bad_float_attrs),
		cmocka_unit_test(test_graph_input_huge_arrays),
		cmocka_unit_test(test_graph_input_nonexistent_file),
		cmocka_unit_test(test_graph_input_bad_files),
		cmocka_unit_test(test_graph_input_out_of_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
