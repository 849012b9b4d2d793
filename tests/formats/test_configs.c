/* test_configs.c -- kernel signatures and IO configurations on hand-made kernels: counts, fast-only tensors, grouped nodes */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_core.h"
#include "atm_formats.h"

/* tensor -- a tensor of g with up to 4 dims (0 ends the list) */
static int32_t tensor(atm_graph *g, const char *name, unsigned locs, int64_t d0, int64_t d1,
                      int64_t d2, int64_t d3)
{
	int64_t dims[4] = {d0, d1, d2, d3};
	int nd = d1 ? d2 ? d3 ? 4 : 3 : 2 : 1;
	int32_t id;
	assert_int_equal(atm_graph_add_tensor(g, name, ATM_F32, nd, dims, ATM_KIND_ACTIVATION, locs,
	                                      &id),
	                 ATM_OK);
	return id;
}

/* node -- a node of g, its id */
static int32_t node(atm_graph *g, const char *name, atm_op op, const atm_attrs *a, int n_in,
                    const int32_t *in, int n_out, const int32_t *out)
{
	int32_t id;
	assert_int_equal(atm_graph_add_node(g, name, op, a, n_in, in, n_out, out, &id), ATM_OK);
	return id;
}

/* masks -- every configuration of node, checking they are distinct and start at 0 */
static int masks(const atm_graph *g, int32_t n, uint32_t *out)
{
	int k = atm_node_n_configs(g, n);
	for (int i = 0; i < k; i++) {
		out[i] = atm_node_config_at(g, n, i);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(out[i], out[j]);
	}
	assert_int_equal(out[0], 0);
	return k;
}

static void test_configs_every_operand_free(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	assert_int_equal(atm_graph_new(&g, "ip"), ATM_OK);
	int32_t x = tensor(g, "x", ATM_LOC_ANY, 4, 8, 0, 0);
	int32_t w = tensor(g, "w", ATM_LOC_ANY, 3, 8, 0, 0);
	int32_t b = tensor(g, "b", ATM_LOC_ANY, 3, 0, 0, 0);
	int32_t y = tensor(g, "y", ATM_LOC_ANY, 4, 3, 0, 0);
	int32_t n = node(g, "fc", ATM_OP_IP_FWD, NULL, 3, (int32_t[]){x, w, b}, 1, &y);
	uint32_t m[256];
	assert_int_equal(masks(g, n, m), 16);
	uint32_t seen = 0;
	for (int i = 0; i < 16; i++) {
		assert_true(m[i] < 16);
		seen |= 1u << m[i];
	}
	assert_int_equal(seen, 0xffffu); /* all 16 masks of 4 bits */
	char name[32];
	assert_string_equal(atm_node_config_name(g, n, 0x5, name, sizeof name), "SFS/F");
	assert_string_equal(atm_node_config_name(g, n, 0x8, name, sizeof name), "FFF/S");
	assert_int_equal(atm_node_config_loc(g, n, 0x5, 0), ATM_LOC_SLOW);
	assert_int_equal(atm_node_config_loc(g, n, 0x5, 1), ATM_LOC_FAST);
	assert_int_equal(atm_node_config_loc(g, n, 0x5, 3), ATM_LOC_FAST);
	unsigned locs[4] = {ATM_LOC_FAST, ATM_LOC_SLOW, ATM_LOC_FAST, ATM_LOC_SLOW};
	uint32_t c = 0;
	assert_int_equal(atm_node_config_of(g, n, locs, &c), ATM_OK);
	assert_int_equal(c, 0xa);
	/* out of range: no configurations, everything fast */
	assert_int_equal(atm_node_n_configs(g, 7), 0);
	assert_int_equal(atm_node_config_at(g, n, 16), 0);
	atm_graph_destroy(g);
}

static void test_configs_fast_only_never_slow(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	assert_int_equal(atm_graph_new(&g, "ip"), ATM_OK);
	int32_t x = tensor(g, "x", ATM_LOC_ANY, 4, 8, 0, 0);
	int32_t w = tensor(g, "w", ATM_LOC_FAST, 3, 8, 0, 0);
	int32_t b = tensor(g, "b", ATM_LOC_FAST, 3, 0, 0, 0);
	int32_t y = tensor(g, "y", ATM_LOC_ANY, 4, 3, 0, 0);
	int32_t n = node(g, "fc", ATM_OP_IP_FWD, NULL, 3, (int32_t[]){x, w, b}, 1, &y);
	uint32_t m[256];
	assert_int_equal(masks(g, n, m), 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(m[i] & 0x6u, 0); /* w and b stay fast */
		assert_int_equal(atm_node_config_loc(g, n, m[i], 1), ATM_LOC_FAST);
	}
	unsigned locs[4] = {ATM_LOC_FAST, ATM_LOC_SLOW, ATM_LOC_FAST, ATM_LOC_FAST};
	uint32_t c = 99;
	assert_int_equal(atm_node_config_of(g, n, locs, &c), ATM_E_NOTFOUND);
	assert_int_equal(c, 0);
	assert_non_null(strstr(atm_errmsg(), "tensor 'w' may only be in fast memory"));
	assert_non_null(strstr(atm_errmsg(), "'fc'"));
	atm_graph_destroy(g);
}

static void test_configs_repeated_tensor_moves_as_one(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	assert_int_equal(atm_graph_new(&g, "add"), ATM_OK);
	int32_t a = tensor(g, "a", ATM_LOC_ANY, 16, 0, 0, 0);
	int32_t y = tensor(g, "y", ATM_LOC_ANY, 16, 0, 0, 0);
	int32_t n = node(g, "double", ATM_OP_ADD, NULL, 2, (int32_t[]){a, a}, 1, &y);
	uint32_t m[256];
	assert_int_equal(masks(g, n, m), 4);
	for (int i = 0; i < 4; i++)
		assert_true(m[i] == 0 || m[i] == 3 || m[i] == 4 || m[i] == 7);
	unsigned locs[3] = {ATM_LOC_SLOW, ATM_LOC_FAST, ATM_LOC_FAST};
	uint32_t c;
	assert_int_equal(atm_node_config_of(g, n, locs, &c), ATM_E_NOTFOUND);
	assert_non_null(strstr(atm_errmsg(), "uses twice"));
	atm_graph_destroy(g);
}

static void test_configs_sgd_has_no_outputs(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	assert_int_equal(atm_graph_new(&g, "sgd"), ATM_OK);
	int32_t w = tensor(g, "w", ATM_LOC_ANY, 16, 0, 0, 0);
	int32_t dw = tensor(g, "dw", ATM_LOC_ANY, 16, 0, 0, 0);
	atm_attrs a = {.lr = 0.1f};
	int32_t n = node(g, "w.sgd", ATM_OP_SGD, &a, 2, (int32_t[]){w, dw}, 0, NULL);
	uint32_t m[256];
	assert_int_equal(masks(g, n, m), 4);
	char name[32];
	assert_string_equal(atm_node_config_name(g, n, 1, name, sizeof name), "SF/");
	atm_graph_destroy(g);
}

/* concat_graph -- a concatenation of n_in inputs [2, 1, 4]; input 0 fast-only when pin */
static int32_t concat_graph(atm_graph **g, int n_in, bool pin)
{
	int32_t in[16], y;
	char name[16];
	assert_int_equal(atm_graph_new(g, "cat"), ATM_OK);
	for (int i = 0; i < n_in; i++) {
		snprintf(name, sizeof name, "x%d", i);
		in[i] = tensor(*g, name, pin && i == 0 ? ATM_LOC_FAST : ATM_LOC_ANY, 2, 1, 4, 0);
	}
	y = tensor(*g, "y", ATM_LOC_ANY, 2, n_in, 4, 0);
	atm_attrs a = {.axis = 1};
	return node(*g, "cat", ATM_OP_CONCAT, &a, n_in, in, 1, &y);
}

static void test_configs_many_operands_grouped(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	uint32_t m[256];
	char name[32];
	/* at the limit every operand is free */
	int32_t n = concat_graph(&g, ATM_CONFIG_MAX_OPERANDS - 1, false);
	assert_int_equal(masks(g, n, m), 1 << ATM_CONFIG_MAX_OPERANDS);
	atm_graph_destroy(g);
	/* past it the inputs move together, and the outputs */
	n = concat_graph(&g, 12, false);
	assert_int_equal(masks(g, n, m), 4);
	assert_string_equal(atm_node_config_name(g, n, 1, name, sizeof name), "S+/F+");
	assert_string_equal(atm_node_config_name(g, n, 2, name, sizeof name), "F+/S+");
	for (int i = 0; i < 12; i++)
		assert_int_equal(atm_node_config_loc(g, n, 1, i), ATM_LOC_SLOW);
	assert_int_equal(atm_node_config_loc(g, n, 1, 12), ATM_LOC_FAST);
	assert_int_equal(atm_node_config_loc(g, n, 2, 12), ATM_LOC_SLOW);
	unsigned locs[13];
	for (int i = 0; i < 13; i++)
		locs[i] = i < 12 ? ATM_LOC_SLOW : ATM_LOC_FAST;
	uint32_t c;
	assert_int_equal(atm_node_config_of(g, n, locs, &c), ATM_OK);
	assert_int_equal(c, 1);
	locs[5] = ATM_LOC_FAST;
	assert_int_equal(atm_node_config_of(g, n, locs, &c), ATM_E_NOTFOUND);
	assert_non_null(strstr(atm_errmsg(), "its 12 inputs are profiled together"));
	atm_graph_destroy(g);
	/* a fast-only input pins its whole group */
	n = concat_graph(&g, 12, true);
	assert_int_equal(masks(g, n, m), 2);
	assert_int_equal(m[1], 2);
	atm_graph_destroy(g);
}

/* identical 3x3 convolutions share a signature; stride and shape split them;
 * attributes a convolution never reads do not */
static void test_configs_signatures(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	char s[6][ATM_SIGNATURE_MAX];
	assert_int_equal(atm_graph_new(&g, "convs"), ATM_OK);
	int32_t x = tensor(g, "x", ATM_LOC_ANY, 2, 3, 8, 8), w = tensor(g, "w", ATM_LOC_ANY, 4, 3, 3, 3);
	int32_t y1 = tensor(g, "y1", ATM_LOC_ANY, 2, 4, 8, 8);
	int32_t y2 = tensor(g, "y2", ATM_LOC_ANY, 2, 4, 8, 8);
	int32_t y3 = tensor(g, "y3", ATM_LOC_ANY, 2, 4, 4, 4);
	int32_t x4 = tensor(g, "x4", ATM_LOC_ANY, 1, 3, 8, 8);
	int32_t y4 = tensor(g, "y4", ATM_LOC_ANY, 1, 4, 8, 8);
	int32_t y5 = tensor(g, "y5", ATM_LOC_ANY, 2, 4, 8, 8);
	atm_attrs a = {.pad = {1, 1, 1, 1}}, s2 = {.pad = {1, 1, 1, 1}, .stride = {2, 2}};
	atm_attrs noise = {.pad = {1, 1, 1, 1}, .axis = 3, .lr = 0.5f, .stride = {1, 1}};
	node(g, "c1", ATM_OP_CONV_FWD, &a, 2, (int32_t[]){x, w}, 1, &y1);
	node(g, "c2", ATM_OP_CONV_FWD, &a, 2, (int32_t[]){x, w}, 1, &y2);
	node(g, "c3", ATM_OP_CONV_FWD, &s2, 2, (int32_t[]){x, w}, 1, &y3);
	node(g, "c4", ATM_OP_CONV_FWD, &a, 2, (int32_t[]){x4, w}, 1, &y4);
	node(g, "c5", ATM_OP_CONV_FWD, &noise, 2, (int32_t[]){x, w}, 1, &y5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(atm_node_signature(g, i, s[i], sizeof s[i]), ATM_OK);
	assert_string_equal(s[0], "conv_fwd/s1,1/p1,1,1,1/f32[2,3,8,8],f32[4,3,3,3]->f32[2,4,8,8]");
	assert_string_equal(s[0], s[1]);
	assert_string_not_equal(s[0], s[2]);
	assert_string_not_equal(s[0], s[3]);
	/* stride 0 means 1, and axis and lr mean nothing to a convolution */
	assert_string_equal(s[0], s[4]);
	char small[16];
	assert_int_equal(atm_node_signature(g, 0, small, sizeof small), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "signature of node 'c1' needs 63 bytes"));
	assert_int_equal(atm_node_signature(g, 9, s[5], sizeof s[5]), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "node 9 is out of range"));
	atm_graph_destroy(g);
}

static void test_configs_signature_reads_op_attributes(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	char a[ATM_SIGNATURE_MAX], b[ATM_SIGNATURE_MAX], c[ATM_SIGNATURE_MAX];
	assert_int_equal(atm_graph_new(&g, "sgd"), ATM_OK);
	int32_t w = tensor(g, "w", ATM_LOC_ANY, 16, 0, 0, 0);
	int32_t dw = tensor(g, "dw", ATM_LOC_ANY, 16, 0, 0, 0);
	atm_attrs l1 = {.lr = 0.01f}, l2 = {.lr = 0.02f}, l3 = {.lr = 0.01f, .epsilon = 3};
	node(g, "s1", ATM_OP_SGD, &l1, 2, (int32_t[]){w, dw}, 0, NULL);
	node(g, "s2", ATM_OP_SGD, &l2, 2, (int32_t[]){w, dw}, 0, NULL);
	node(g, "s3", ATM_OP_SGD, &l3, 2, (int32_t[]){w, dw}, 0, NULL);
	assert_int_equal(atm_node_signature(g, 0, a, sizeof a), ATM_OK);
	assert_int_equal(atm_node_signature(g, 1, b, sizeof b), ATM_OK);
	assert_int_equal(atm_node_signature(g, 2, c, sizeof c), ATM_OK);
	assert_string_equal(a, "sgd/lr0.01/f32[16],f32[16]->");
	assert_string_not_equal(a, b);
	assert_string_equal(a, c);
	atm_graph_destroy(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_configs_every_operand_free),
		cmocka_unit_test(test_configs_fast_only_never_slow),
		cmocka_unit_test(test_configs_repeated_tensor_moves_as_one),
		cmocka_unit_test(test_configs_sgd_has_no_outputs),
		cmocka_unit_test(test_configs_many_operands_grouped),
		cmocka_unit_test(test_configs_signatures),
		cmocka_unit_test(test_configs_signature_reads_op_attributes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
