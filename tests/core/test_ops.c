/* test_ops.c -- the op table: an entry for every op, names that round-trip, numbers and keys that files hold staying put */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "atm_formats.h"
#include "common/small_graph.h"
#include "core_internal.h"

/* test_ops_every_op_has_an_entry -- an op added to the enum without its entry (or with half
 * of one) fails here wherever it sits in the enum */
static void test_ops_every_op_has_an_entry(void **state)
{
	(void)state;
	for (int op = 0; op < ATM_N_OPS; op++) {
		const atm_op_desc *d = atm_op_describe((atm_op)op);
		const struct atm_op_entry *e = atm_op_entry((atm_op)op);
		assert_non_null(d);
		assert_ptr_equal(d, &e->d);
		if (!d->name || !d->name[0])
			fail_msg("op %d has no entry in core/ops.c", op);
		assert_true(d->min_in >= 1 && d->min_in <= d->max_in);
		assert_true(d->min_out >= 0 && d->min_out <= d->max_out);
		/* an op that writes nothing must write its input in place */
		assert_true(d->max_out > 0 || d->inplace);
		assert_true(d->attrs < 1u << ATM_N_ATTRS);
		if (!e->shape || !e->work)
			fail_msg("op %s has no %s rule", d->name, e->shape ? "work" : "shape");
		assert_int_equal(atm_op_is_inplace((atm_op)op), d->inplace != 0);
		/* what it writes in place is among its inputs */
		assert_true(d->max_in >= 32 || d->inplace < 1u << d->max_in);
		for (int i = 0; i < d->max_in && i < 32; i++)
			assert_int_equal(atm_op_writes_input((atm_op)op, i), (d->inplace >> i & 1u) != 0);
		assert_false(atm_op_writes_input((atm_op)op, d->max_in));
	}
}

/* test_ops_names_round_trip -- every name reads back as its op and no two ops share one */
static void test_ops_names_round_trip(void **state)
{
	(void)state;
	for (int op = 0; op < ATM_N_OPS; op++) {
		atm_op back = ATM_N_OPS;
		assert_int_equal(atm_op_from_name(atm_op_name((atm_op)op), &back), ATM_OK);
		assert_int_equal(back, op);
		for (int other = 0; other < op; other++)
			assert_string_not_equal(atm_op_name((atm_op)op), atm_op_name((atm_op)other));
	}
	atm_op x;
	assert_int_equal(atm_op_from_name("sgd_nesterov", &x), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "unknown op 'sgd_nesterov' (valid: conv_fwd, "));
	assert_non_null(strstr(atm_errmsg(), ", sgd, matmul, "));
	assert_non_null(strstr(atm_errmsg(), ", sgd_momentum, adamw, allreduce, cast)"));
}

/* test_ops_out_of_range -- a value that is no op has no entry and no roles */
static void test_ops_out_of_range(void **state)
{
	(void)state;
	assert_null(atm_op_describe(ATM_N_OPS));
	assert_null(atm_op_describe((atm_op)-1));
	assert_null(atm_op_entry(ATM_N_OPS));
	assert_string_equal(atm_op_name(ATM_N_OPS), "?");
	assert_false(atm_op_is_inplace(ATM_N_OPS));
	assert_int_equal(atm_op_in_role(ATM_N_OPS, 1), ATM_ROLE_DATA);
	assert_int_equal(atm_op_out_role((atm_op)-1, 0), ATM_ROLE_DATA);
	assert_int_equal(atm_op_in_role(ATM_OP_CONV_FWD, -1), ATM_ROLE_DATA);
	assert_int_equal(atm_op_in_role(ATM_OP_CONCAT, ATM_OP_MAX_ROLES), ATM_ROLE_DATA);
}

/* test_ops_digest_ids_stay_put -- plans hold graph digests, which hash these numbers: each
 * op keeps its own whatever its place in the enum, and no two ops share one */
static void test_ops_digest_ids_stay_put(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		int32_t id;
	} fixed[] = {
		{"conv_fwd", 0},     {"conv_bwd_data", 1}, {"conv_bwd_weights", 2},
		{"ip_fwd", 3},       {"ip_bwd_data", 4},   {"ip_bwd_weights", 5},
		{"relu_fwd", 6},     {"relu_bwd", 7},      {"maxpool_fwd", 8},
		{"maxpool_bwd", 9},  {"avgpool_fwd", 10},  {"avgpool_bwd", 11},
		{"bn_fwd", 12},      {"bn_bwd", 13},       {"concat", 14},
		{"split", 15},       {"add", 16},          {"softmax_xent_fwd", 17},
		{"softmax_xent_bwd", 18}, {"sgd", 19},    {"matmul", 20},
		{"reduce_sum", 21},  {"layer_norm_fwd", 22}, {"layer_norm_bwd", 23},
		{"gelu_fwd", 24},    {"gelu_bwd", 25},     {"tanh_fwd", 26},
		{"tanh_bwd", 27},    {"softmax_fwd", 28},  {"softmax_bwd", 29},
		{"embedding_fwd", 30}, {"embedding_bwd", 31}, {"permute", 32},
		{"narrow_fwd", 33},  {"narrow_bwd", 34},   {"token_xent_fwd", 35},
		{"token_xent_bwd", 36}, {"silu_fwd", 37}, {"silu_bwd", 38},
		{"mul", 39},         {"mul_bwd", 40},      {"rms_norm_fwd", 41},
		{"rms_norm_bwd", 42}, {"rope_fwd", 43},     {"rope_bwd", 44},
		{"sigmoid_fwd", 45}, {"sigmoid_bwd", 46},  {"hardswish_fwd", 47},
		{"hardswish_bwd", 48}, {"hardsigmoid_fwd", 49}, {"hardsigmoid_bwd", 50},
		{"relu6_fwd", 51},   {"relu6_bwd", 52},     {"cast", 56},
	};
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
		atm_op op;
		assert_int_equal(atm_op_from_name(fixed[i].name, &op), ATM_OK);
		assert_int_equal(atm_op_entry(op)->digest_id, fixed[i].id);
	}
	for (int a = 0; a < ATM_N_OPS; a++)
		for (int b = 0; b < a; b++)
			if (atm_op_entry((atm_op)a)->digest_id == atm_op_entry((atm_op)b)->digest_id)
				fail_msg("%s and %s share digest number %d", atm_op_name((atm_op)a),
				         atm_op_name((atm_op)b), atm_op_entry((atm_op)a)->digest_id);
}

/* test_ops_roles_fit_arity -- a role names an operand the op can have; parameter roles
 * only on inputs; indices are what dtype checks exempt from f32 */
static void test_ops_roles_fit_arity(void **state)
{
	(void)state;
	for (int op = 0; op < ATM_N_OPS; op++) {
		const atm_op_desc *d = atm_op_describe((atm_op)op);
		for (int i = 0; i < ATM_OP_MAX_ROLES; i++) {
			if (d->in_role[i] != ATM_ROLE_DATA)
				assert_true(i < d->max_in);
			if (d->in_role[i] == ATM_ROLE_TOKENS) /* ids and labels per position */
				assert_true(op == ATM_OP_EMBEDDING_FWD || op == ATM_OP_EMBEDDING_BWD ||
				            op == ATM_OP_TOKEN_XENT_FWD || op == ATM_OP_TOKEN_XENT_BWD);
			if (d->out_role[i] != ATM_ROLE_DATA) {
				assert_true(i < d->max_out);
				assert_int_equal(d->out_role[i], ATM_ROLE_INDEX);
			}
		}
	}
	assert_int_equal(atm_op_in_role(ATM_OP_CONV_FWD, 1), ATM_ROLE_WEIGHT);
	assert_int_equal(atm_op_in_role(ATM_OP_BN_FWD, 1), ATM_ROLE_SCALE);
	assert_int_equal(atm_op_in_role(ATM_OP_IP_FWD, 2), ATM_ROLE_SHIFT);
	assert_int_equal(atm_op_in_role(ATM_OP_SOFTMAX_XENT_FWD, 1), ATM_ROLE_LABELS);
	assert_int_equal(atm_op_out_role(ATM_OP_MAXPOOL_FWD, 1), ATM_ROLE_INDEX);
	assert_int_equal(atm_op_in_role(ATM_OP_MAXPOOL_BWD, 1), ATM_ROLE_INDEX);
}

/* test_ops_attr_names -- one JSON key per attribute bit, none for anything else */
static void test_ops_attr_names(void **state)
{
	(void)state;
	for (int i = 0; i < ATM_N_ATTRS; i++) {
		const char *name = atm_attr_name(1u << i);
		assert_non_null(name);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(name, atm_attr_name(1u << j));
	}
	assert_string_equal(atm_attr_name(ATM_ATTR_EXCLUDE_PAD), "exclude_pad");
	assert_null(atm_attr_name(0));
	assert_null(atm_attr_name(ATM_ATTR_KERNEL | ATM_ATTR_STRIDE));
	assert_null(atm_attr_name(1u << ATM_N_ATTRS));
}

/* test_ops_keys_stay_put -- kernel signatures key profile caches and the graph digest ties
 * plans to graphs: both read the same as the files on disk */
static void test_ops_keys_stay_put(void **state)
{
	struct small *sm = *state;
	char sig[ATM_SIGNATURE_MAX], digest[17];
	static const char *const want[] = {
		"ip_fwd/f32[1,4],f32[3,4],f32[3]->f32[1,3]",
		"relu_fwd/f32[1,3]->f32[1,3]",
		"softmax_xent_fwd/f32[1,3],f32[1,3]->f32[1,3],f32[1]",
		"softmax_xent_bwd/f32[1,3],f32[1,3]->f32[1,3]",
		"relu_bwd/f32[1,3],f32[1,3]->f32[1,3]",
		"ip_bwd_weights/f32[1,4],f32[1,3]->f32[3,4],f32[3]",
		"sgd/lr0.1/f32[3,4],f32[3,4]->",
		"sgd/lr0.1/f32[3],f32[3]->",
	};
	for (int32_t k = 0; k < atm_graph_n_nodes(sm->g); k++) {
		assert_int_equal(atm_node_signature(sm->g, k, sig, sizeof sig), ATM_OK);
		assert_string_equal(sig, want[k]);
	}
	atm_graph_digest(sm->g, digest);
	assert_string_equal(digest, "31695f5395ab04d5");
}

/* test_ops_node_work -- the op's rule on top of every operand's bytes; a node out of range is
 * the caller's mistake */
static void test_ops_node_work(void **state)
{
	struct small *sm = *state;
	atm_work w;
	/* loss.bwd: (probs - labels) / N, two operations an element */
	assert_int_equal(atm_node_work(sm->g, 3, &w), ATM_OK);
	assert_true(w.flops == 6 && w.traffic_bytes == 36 && !w.pointwise);
	assert_int_equal(atm_node_work(sm->g, 8, &w), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "node 8 is out of range"));
	assert_true(w.flops == 0 && w.traffic_bytes == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ops_every_op_has_an_entry),
		cmocka_unit_test(test_ops_names_round_trip),
		cmocka_unit_test(test_ops_out_of_range),
		cmocka_unit_test(test_ops_digest_ids_stay_put),
		cmocka_unit_test(test_ops_roles_fit_arity),
		cmocka_unit_test(test_ops_attr_names),
		cmocka_unit_test_setup_teardown(test_ops_keys_stay_put, small_setup, small_teardown),
		cmocka_unit_test_setup_teardown(test_ops_node_work, small_setup, small_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
