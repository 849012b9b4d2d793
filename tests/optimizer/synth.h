/* synth.h -- deterministic synthetic profiles for the optimizer tests: slow bytes cost in proportion
 *
 * Test data fed through the real profile API (atm_profile_put on an in-memory profile), not a
 * mock: a kernel takes 2 us + its bytes at 20 GB/s, and every byte of an operand in slow memory
 * adds the difference to 4 GB/s; copies run at 4 GB/s to fast memory and 2 GB/s to slow.
 */
#ifndef ATM_TEST_SYNTH_H
#define ATM_TEST_SYNTH_H

#include "atm_core.h"

#define SYNTH_FAST_BPS 20e9
#define SYNTH_SLOW_BPS 4e9

/* synth_time -- the synthetic seconds of node k in config */
static inline double synth_time(const atm_graph *g, int32_t k, uint32_t config)
{
	const atm_node *n = atm_graph_node(g, k);
	double t = 2e-6;
	for (int i = 0; i < n->n_in + n->n_out; i++) {
		int32_t x = i < n->n_in ? n->in[i] : n->out[i - n->n_in];
		double b = (double)atm_graph_tensor(g, x)->bytes;
		t += b / SYNTH_FAST_BPS;
		if (atm_node_config_loc(g, k, config, i) == ATM_LOC_SLOW)
			t += b / SYNTH_SLOW_BPS - b / SYNTH_FAST_BPS;
	}
	return t;
}

/* synth_profile_mixed -- an in-memory profile of every configuration of every node of g; a
 * configuration with two or more slow operand groups takes `mixed` times its synthetic time (1:
 * every kernel's time is the sum of what each group costs slow; above 1 the groups interact) */
static inline atm_status synth_profile_mixed(const atm_graph *g, double mixed, atm_profile **out)
{
	atm_profile_machine m = {.cpu = "synthetic", .n_threads = 1, .backend = "test",
	                      .fast_tier = "dram:0", .slow_tier = "synthetic", .estimated = true};
	atm_profile *p = NULL;
	atm_status rc = atm_profile_new(&p, &m, NULL);
	for (int32_t k = 0; rc == ATM_OK && k < atm_graph_n_nodes(g); k++)
		for (int i = 0; rc == ATM_OK && i < atm_node_n_configs(g, k); i++) {
			uint32_t c = atm_node_config_at(g, k, i);
			double t = synth_time(g, k, c) * (__builtin_popcount((unsigned)i) >= 2 ? mixed : 1);
			atm_profile_entry e = {.min_s = t, .median_s = t, .count = 1, .estimated = true};
			rc = atm_profile_put(p, g, k, c, &e);
		}
	if (rc == ATM_OK)
		rc = atm_profile_set_moves(p, &(atm_profile_moves){.to_fast_gbps = 4, .to_slow_gbps = 2,
		                                                .estimated = true});
	if (rc < 0) {
		atm_profile_destroy(p);
		return rc;
	}
	*out = p;
	return ATM_OK;
}

/* synth_profile -- the synthetic profile, each kernel's slow groups costing what they do alone */
static inline atm_status synth_profile(const atm_graph *g, atm_profile **out)
{
	return synth_profile_mixed(g, 1, out);
}

#endif /* ATM_TEST_SYNTH_H */
