/* survey.c -- what `autotm tiers` shows: the machine's nodes and the tiers a run would open,
 * described and closed again (above tiers.c and emulate.c, which it calls) */
#include <stdlib.h>

#include "memory.h"

struct atm_tiers {
	atm_tier_topo *topo;
	atm_tier_desc fast, slow;
	atm_tier_choice choice;
};

/* atm_tiers_survey -- the machine, and the tiers o chooses opened, described and closed */
atm_status atm_tiers_survey(atm_tiers **out, const atm_tier_opts *o, const char *emulate)
{
	atm_tier *fast = NULL, *slow = NULL;
	atm_emu_spec spec;
	atm_status rc;
	*out = NULL;
	atm_tiers *t = calloc(1, sizeof *t);
	if (!t)
		return atm_err(ATM_E_NOMEM, "out of memory surveying the tiers");
	if ((rc = atm_tier_topo_new(&t->topo)) < 0 ||
	    (rc = atm_tier_choose(t->topo, o, &t->choice)) < 0 ||
	    (rc = atm_tier_open_fast(&fast, t->topo, o)) < 0 ||
	    (rc = atm_tier_open_slow(&slow, t->topo, o)) < 0)
		goto fail;
	if (emulate && ((rc = atm_emu_spec_resolve(emulate, &spec)) < 0 ||
	                (rc = atm_tier_set_emulation(slow, &spec)) < 0))
		goto fail;
	t->fast = *atm_tier_describe(fast);
	t->slow = *atm_tier_describe(slow);
	atm_tier_destroy(slow);
	atm_tier_destroy(fast);
	*out = t;
	return ATM_OK;
fail:
	atm_tier_destroy(slow);
	atm_tier_destroy(fast);
	atm_tiers_destroy(t);
	return rc;
}

/* atm_tiers_destroy -- NULL is fine */
void atm_tiers_destroy(atm_tiers *t)
{
	if (t) {
		atm_tier_topo_destroy(t->topo);
		free(t);
	}
}

/* atm_tiers_n_nodes -- NUMA nodes hwloc found */
int atm_tiers_n_nodes(const atm_tiers *t)
{
	return atm_tier_topo_n_nodes(t->topo);
}

/* atm_tiers_node -- node i, NULL out of range */
const atm_tier_desc *atm_tiers_node(const atm_tiers *t, int i)
{
	return atm_tier_topo_node(t->topo, i);
}

/* atm_tiers_fast -- the fast tier a run would use */
const atm_tier_desc *atm_tiers_fast(const atm_tiers *t)
{
	return &t->fast;
}

/* atm_tiers_slow -- the slow tier a run would use */
const atm_tier_desc *atm_tiers_slow(const atm_tiers *t)
{
	return &t->slow;
}

/* atm_tiers_slow_reason -- why that slow tier */
const char *atm_tiers_slow_reason(const atm_tiers *t)
{
	return t->choice.why;
}

/* atm_tiers_memory_mode -- the memory-side cache in front of the home node, 0 when none */
atm_status atm_tiers_memory_mode(int64_t *cache_bytes)
{
	atm_tier_topo *topo = NULL;
	atm_status rc = atm_tier_topo_new(&topo);
	*cache_bytes = rc < 0 ? 0 : atm_tier_topo_memory_mode(topo);
	atm_tier_topo_destroy(topo);
	return rc;
}
