/* survey.c -- what `autotm tiers` shows: the machine's nodes and the tiers a run would open,
 * described and closed again, and where a slow tier's file would go (above tiers.c,
 * tier_file.c and emulate.c, which it calls) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	atm_tier_opts to = {0};
	*out = NULL;
	if (o)
		to = *o;
	to.emulated = emulate != NULL; /* the default pmem folder a run emulating would take */
	o = &to;
	atm_tiers *t = calloc(1, sizeof *t);
	if (!t)
		return atm_err(ATM_E_NOMEM, "out of memory surveying the tiers");
	if ((rc = atm_tier_topo_new(&t->topo)) < 0 ||
	    (rc = atm_tier_choose(t->topo, o, &t->choice)) < 0 ||
	    (rc = atm_tier_open_fast(&fast, t->topo, o)) < 0 ||
	    (rc = atm_tier_open_slow(&slow, t->topo, o)) < 0)
		goto fail;
	if (emulate && ((rc = atm_emu_spec_resolve_scaled(emulate, NULL, NULL, &spec, NULL, 0)) < 0 ||
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

/* atm_tier_file_choose -- where the slow tier o chooses keeps its file, nothing opened */
atm_status atm_tier_file_choose(const atm_tier_opts *o, atm_tier_file *f)
{
	static const atm_tier_opts none = {0};
	atm_tier_topo *topo = NULL;
	atm_tier_choice c;
	atm_status rc;
	memset(f, 0, sizeof *f);
	if (!o)
		o = &none;
	if ((rc = atm_tier_topo_new(&topo)) < 0)
		return rc;
	rc = atm_tier_choose(topo, o, &c);
	atm_tier_topo_destroy(topo);
	if (rc < 0)
		return rc;
	if (c.kind == ATM_TIER_PMEM_DIR) {
		atm_tier_pmem_file(o, f);
	} else if (c.kind == ATM_TIER_FSDAX_FILE) {
		snprintf(f->path, sizeof f->path, "%s", o->fsdax_path);
		f->given = true;
		atm_tier_file_fs(f->path, f->fs, sizeof f->fs, &f->writeback);
	}
	return ATM_OK;
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
