/* tight_graph.h -- a graph whose all-fast step fits its limit by bytes but in no layout: the
 * defragmentation loop's test case (cmocka asserts: include after cmocka.h) */
#ifndef ATM_TEST_TIGHT_GRAPH_H
#define ATM_TEST_TIGHT_GRAPH_H

#include <stdio.h>

#include "atm_core.h"
#include "atm_optimizer.h"
#include "optimizer/synth.h"

/* ip -- a node y = x w^T + b with w and b slow-only parameters of their own */
static inline int32_t ip(atm_graph *g, const char *name, int32_t x, int64_t in, int64_t out)
{
	char buf[64];
	int32_t w, b, y, n;
	int64_t wd[] = {out, in}, bd[] = {out}, yd[] = {1, out};
	snprintf(buf, sizeof buf, "%s.w", name);
	assert_int_equal(atm_graph_add_tensor(g, buf, ATM_F32, 2, wd, ATM_KIND_PARAM, ATM_LOC_SLOW, &w), 0);
	snprintf(buf, sizeof buf, "%s.b", name);
	assert_int_equal(atm_graph_add_tensor(g, buf, ATM_F32, 1, bd, ATM_KIND_PARAM, ATM_LOC_SLOW, &b), 0);
	snprintf(buf, sizeof buf, "%s.y", name);
	assert_int_equal(atm_graph_add_tensor(g, buf, ATM_F32, 2, yd, ATM_KIND_ACTIVATION, ATM_LOC_ANY, &y), 0);
	assert_int_equal(atm_graph_add_node(g, name, ATM_OP_IP_FWD, NULL, 3, (int32_t[]){x, w, b}, 1, &y, &n), 0);
	return y;
}

/* tight_graph -- copies of 3, 2, 3, 2, 2, 2 and 4 units of 64 bytes whose lives are such that
 * at most 8 units live at once but no layout of all of them fits 8 units: first fit needs 11,
 * by size 10 (found by search) */
static inline atm_graph *tight_graph(void)
{
	atm_graph *g = NULL;
	int64_t xd[] = {1, 16};
	int32_t x, n;
	assert_int_equal(atm_graph_new(&g, "tight"), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "x", ATM_F32, 2, xd, ATM_KIND_INPUT, ATM_LOC_SLOW, &x), 0);
	int32_t t0 = ip(g, "n0", x, 16, 48);
	int32_t t1 = ip(g, "n1", x, 16, 32);
	int32_t t2 = ip(g, "n2", t0, 48, 48);
	int32_t t3 = ip(g, "n3", t2, 48, 32);
	int32_t t4 = ip(g, "n4", t3, 32, 32);
	int32_t t5 = ip(g, "n5", t1, 32, 32);
	int64_t yd[] = {1, 64};
	int32_t y;
	atm_attrs cat = {.axis = 1};
	assert_int_equal(atm_graph_add_tensor(g, "y", ATM_F32, 2, yd, ATM_KIND_ACTIVATION, ATM_LOC_ANY, &y), 0);
	assert_int_equal(atm_graph_add_node(g, "n6", ATM_OP_CONCAT, &cat, 2, (int32_t[]){t4, t5}, 1, &y, &n), 0);
	assert_int_equal(atm_graph_validate(g), ATM_OK);
	return g;
}

/* tight_setup -- tight_graph, its synthetic profile (optimizer/synth.h) and the options its
 * tests plan with: exact solves (gap 0), nothing pinned */
static inline void tight_setup(atm_graph **g, atm_profile **prof, atm_opt_options *o)
{
	*g = tight_graph();
	atm_opt_options_default(o);
	o->mip_gap = 0;
	o->pin_bytes = 0;
	assert_int_equal(synth_profile(*g, prof), ATM_OK);
}

#endif /* ATM_TEST_TIGHT_GRAPH_H */
