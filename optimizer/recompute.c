/* recompute.c -- the recomputations the model may choose, and their price under a placement
 *
 * A candidate is a gap between two consecutive uses d < u of a movable, eligible tensor
 * (atm_recompute_eligible) with at least one node between them. Chosen, the tensor is fast at
 * d, stays so through the gap (no move) and takes no memory from M(d) to M(u - 1); before u,
 * the node k that made it runs again, writing its other outputs into scratch. Each input of k
 * is available at u (a persistent tensor not written since k, or one whose life reaches u) or
 * is made again first: a chain of links, each an eligible tensor dead at u whose producer's
 * inputs are available or linked in turn, at most RC_MAX_LINKS kernels before k's. Without
 * links, k is priced in the configuration its operands have at K(u); with links, every kernel
 * of the chain is priced all fast and the chain's movable operands must be fast at K(u). The
 * links and scratch outputs count at K(u), beyond what u's outputs take there (the chain runs
 * before they are made). A candidate whose operand another chosen candidate
 * drops at u excludes it: a dropped tensor is never made again for another's chain.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opt_internal.h"

/* written_between -- persistent x is written (in place, or as an output) by a node in (k, u) */
static bool written_between(const atm_graph *g, int32_t x, int32_t k, int32_t u)
{
	for (int32_t j = k + 1; j < u; j++)
		if (opt_writes_over(g, atm_graph_node(g, j), x))
			return true;
	return false;
}

/* available -- input x of node k has a copy at u fit to read: a persistent tensor not written
 * since k, or one whose life reaches u */
static bool available(const struct model *m, const atm_liveness *lv, int32_t x, int32_t k,
                      int32_t u)
{
	return m->t[x].persistent ? !written_between(m->g, x, k, u) : atm_liveness_last(lv, x) >= u;
}

/* linked -- x is a link of c */
static bool linked(const struct rcand *c, int32_t x)
{
	for (int i = 0; i < c->n_links; i++)
		if (c->links[i] == x)
			return true;
	return false;
}

/* gather -- the links node k needs at c->u, appended to c after their own (so in the order
 * they must be made): each input not available there, an eligible tensor whose producer's
 * inputs are available or linked in turn; false when one is neither, or the chain would run
 * more than RC_MAX_LINKS kernels before the tensor's own */
static bool gather(const struct model *m, const atm_liveness *lv, struct rcand *c, int32_t k)
{
	const atm_node *n = atm_graph_node(m->g, k);
	for (int i = 0; i < n->n_in; i++) {
		int32_t x = n->in[i], kx;
		if (available(m, lv, x, k, c->u) || linked(c, x))
			continue;
		if (m->t[x].persistent || c->n_links == RC_MAX_LINKS ||
		    !atm_recompute_eligible(m->g, x, NULL) || (kx = atm_recompute_producer(m->g, x)) < 0)
			return false;
		if (!gather(m, lv, c, kx) || c->n_links == RC_MAX_LINKS)
			return false;
		c->links[c->n_links++] = x;
	}
	return true;
}

/* chain_node -- the i-th kernel c runs: its links' producers, then k */
static int32_t chain_node(const struct model *m, const struct rcand *c, int i)
{
	return i < c->n_links ? atm_recompute_producer(m->g, c->links[i]) : c->k;
}

/* made -- x is an output of one of c's kernels: the tensor, a link, or scratch */
static bool made(const struct model *m, const struct rcand *c, int32_t x)
{
	for (int i = 0; i <= c->n_links; i++) {
		const atm_node *n = atm_graph_node(m->g, chain_node(m, c, i));
		for (int j = 0; j < n->n_out; j++)
			if (n->out[j] == x)
				return true;
	}
	return false;
}

/* operands -- c's ops: what its kernels read that they do not make, each once; and the bytes
 * beside its tensor (links and other outputs); false on running out of memory */
static bool operands(const struct model *m, struct rcand *c)
{
	int32_t n_in = 0;
	for (int i = 0; i <= c->n_links; i++)
		n_in += atm_graph_node(m->g, chain_node(m, c, i))->n_in;
	if (!(c->ops = malloc(((size_t)n_in + 1) * sizeof *c->ops)))
		return false;
	c->scratch = 0;
	for (int i = 0; i <= c->n_links; i++) {
		const atm_node *n = atm_graph_node(m->g, chain_node(m, c, i));
		for (int j = 0; j < n->n_in; j++) {
			int32_t x = n->in[j], o = 0;
			while (o < c->n_ops && c->ops[o] != x)
				o++;
			if (o == c->n_ops && !made(m, c, x))
				c->ops[c->n_ops++] = x;
		}
		for (int j = 0; j < n->n_out; j++)
			if (n->out[j] != c->t)
				c->scratch += m->t[n->out[j]].abytes;
	}
	return true;
}

int32_t opt_recompute_phase_u(const struct tmodel *x, int32_t u)
{
	int32_t ph = opt_phase_at(x, SLOT_K(u));
	for (int32_t g = 1; ph < 0 && g < x->n_gates; g++)
		if (x->gates[g].kind == G_ASYNC && x->gates[g].at == u)
			ph = g;
	return ph;
}

/* slowest_algo_s -- the slowest of node model nm's algorithms, all fast (0: none) */
static double slowest_algo_s(const struct nmodel *nm)
{
	double worst = 0;
	for (int i = 0; i < nm->n_algo; i++)
		worst = fmax(worst, nm->algo_time[i]);
	return worst;
}

/* at_u -- the phase before u of tensor x, a member of k's groups: -1 for a tensor made again
 * (fast), -2 when x has none there (not live: the candidate is void) */
static int32_t at_u(const struct model *m, const struct rcand *c, int32_t x)
{
	if (made(m, c, x))
		return -1;
	int32_t ph = opt_recompute_phase_u(&m->t[x], c->u);
	return ph >= 0 ? ph : -2;
}

/* fill -- candidate c's phases at K(u) of k's operands; false when one has none */
static bool fill(const struct model *m, struct rcand *c)
{
	const struct nmodel *nm = &m->n[c->k];
	int32_t n = 0;
	c->t_unit = -1;
	for (int u = 0; u < nm->n_free; u++)
		for (int j = 0; j < nm->units[u].n_members; j++) {
			int32_t x = nm->units[u].members[j];
			if ((c->uph[n++] = at_u(m, c, x)) == -2)
				return false;
			if (x == c->t)
				c->t_unit = u;
		}
	for (int j = 0; j < nm->n_forced; j++) {
		const struct forced *f = &nm->forced[j];
		if (made(m, c, f->tensor) && f->slow)
			return false; /* made again in fast memory, where its group may not be */
		if ((c->fph[j] = at_u(m, c, f->tensor)) == -2)
			return false;
	}
	c->max_algo_s = slowest_algo_s(nm);
	return true;
}

/* all_fast_s -- node k's kernel with its operands fast (device_only: its slowest algorithm);
 * < 0 when that is no configuration of it */
static double all_fast_s(const struct model *m, int32_t k)
{
	const struct nmodel *nm = &m->n[k];
	if (nm->base)
		return -1;
	for (int j = 0; j < nm->n_forced; j++)
		if (nm->forced[j].slow)
			return -1;
	if (nm->n_algo <= 1 && !m->o.device_only)
		return nm->time[0];
	return slowest_algo_s(nm);
}

/* fill_chain -- candidate c with links: its kernels' price, all fast, and its movable operands
 * with their phases at K(u), which must be fast; false when it is no candidate */
static bool fill_chain(const struct model *m, struct rcand *c)
{
	c->t_unit = -1;
	c->chain_s = 0;
	for (int i = 0; i <= c->n_links; i++) {
		double s = all_fast_s(m, chain_node(m, c, i));
		if (s < 0)
			return false;
		c->chain_s += s;
	}
	if (!(c->root = malloc(((size_t)c->n_ops + 1) * sizeof *c->root)) ||
	    !(c->root_ph = malloc(((size_t)c->n_ops + 1) * sizeof *c->root_ph)))
		return false;
	for (int32_t j = 0; j < c->n_ops; j++) {
		const struct tmodel *x = &m->t[c->ops[j]];
		if (x->cls == TC_SLOW)
			return false;
		if (x->cls != TC_MOVABLE)
			continue;
		int32_t ph = opt_recompute_phase_u(x, c->u);
		if (ph < 0)
			return false;
		c->root[c->n_roots] = x->id;
		c->root_ph[c->n_roots++] = ph;
	}
	return true;
}

static void rcand_free(struct rcand *c)
{
	free(c->uph);
	free(c->fph);
	free(c->ops);
	free(c->root);
	free(c->root_ph);
}

/* add -- candidate (t, k, d, u) when it is one; false on running out of memory */
static bool add(struct model *m, const atm_liveness *lv, int32_t *cap, int32_t t, int32_t k,
                int32_t d, int32_t u)
{
	const struct nmodel *nm = &m->n[k];
	const struct tmodel *tm = &m->t[t];
	struct rcand c = {.t = t, .k = k, .d = d, .u = u};
	c.pd = opt_phase_at(tm, SLOT_K(d));
	c.pu = opt_phase_at(tm, SLOT_K(u));
	if (c.pd < 0 || c.pu < c.pd || !gather(m, lv, &c, k))
		return true;
	if (!operands(m, &c)) {
		rcand_free(&c);
		return false;
	}
	/* the chain runs before u's outputs are made: only what it holds beyond them counts */
	const atm_node *un = atm_graph_node(m->g, u);
	for (int j = 0; j < un->n_out; j++)
		c.scratch -= m->t[un->out[j]].abytes;
	if (c.scratch < 0)
		c.scratch = 0;
	bool ok;
	if (c.n_links) {
		ok = fill_chain(m, &c);
	} else {
		int32_t n_members = 0;
		for (int i = 0; i < nm->n_free; i++)
			n_members += nm->units[i].n_members;
		c.uph = malloc(((size_t)n_members + 1) * sizeof *c.uph);
		c.fph = malloc(((size_t)nm->n_forced + 1) * sizeof *c.fph);
		ok = c.uph && c.fph && fill(m, &c);
	}
	if (!ok) {
		bool oom = !c.ops || (c.n_links ? !c.root || !c.root_ph : !c.uph || !c.fph);
		rcand_free(&c);
		return !oom;
	}
	if (m->n_rc == *cap) {
		int32_t ncap = *cap ? *cap * 2 : 64;
		struct rcand *r = realloc(m->rc, (size_t)ncap * sizeof *r);
		if (!r) {
			rcand_free(&c);
			return false;
		}
		m->rc = r;
		*cap = ncap;
	}
	m->rc[m->n_rc++] = c;
	return true;
}

/* exclusions -- pairs where one candidate drops, at the other's u, an operand of its kernels
 * (candidates are found by tensor, in the order they were added) */
static atm_status exclusions(struct model *m)
{
	int32_t cap = 0, *by_t = calloc((size_t)m->n_tensors + 1, sizeof *by_t);
	if (!by_t)
		return atm_err(ATM_E_NOMEM, "out of memory building the model");
	/* candidates of tensor x are rc[by_t[x] .. by_t[x + 1]): add takes tensors in id order */
	for (int32_t b = 0; b < m->n_rc; b++)
		by_t[m->rc[b].t + 1]++;
	for (int32_t x = 0; x < m->n_tensors; x++)
		by_t[x + 1] += by_t[x];
	for (int32_t a = 0; a < m->n_rc; a++) {
		const struct rcand *c = &m->rc[a];
		for (int32_t j = 0; j < c->n_ops; j++)
			for (int32_t b = by_t[c->ops[j]]; b < by_t[c->ops[j] + 1]; b++) {
				const struct rcand *x = &m->rc[b];
				if (!(x->d < c->u && c->u <= x->u))
					continue;
				if (m->n_excl == cap) {
					cap = cap ? cap * 2 : 64;
					int32_t(*e)[2] = realloc(m->excl, (size_t)cap * sizeof *e);
					if (!e) {
						free(by_t);
						return atm_err(ATM_E_NOMEM, "out of memory building the model");
					}
					m->excl = e;
				}
				m->excl[m->n_excl][0] = a;
				m->excl[m->n_excl++][1] = b;
			}
	}
	free(by_t);
	/* and by candidate, both ways, for pricing */
	m->excl_at = calloc((size_t)m->n_rc + 2, sizeof *m->excl_at);
	m->excl_with = malloc(((size_t)m->n_excl * 2 + 1) * sizeof *m->excl_with);
	if (!m->excl_at || !m->excl_with)
		return atm_err(ATM_E_NOMEM, "out of memory building the model");
	for (int32_t e = 0; e < m->n_excl; e++) {
		m->excl_at[m->excl[e][0] + 2]++;
		m->excl_at[m->excl[e][1] + 2]++;
	}
	for (int32_t i = 0; i < m->n_rc; i++)
		m->excl_at[i + 2] += m->excl_at[i + 1];
	for (int32_t e = 0; e < m->n_excl; e++) {
		m->excl_with[m->excl_at[m->excl[e][0] + 1]++] = m->excl[e][1];
		m->excl_with[m->excl_at[m->excl[e][1] + 1]++] = m->excl[e][0];
	}
	return ATM_OK;
}

atm_status opt_recompute_build(struct model *m, const atm_liveness *lv, const int32_t *tstart,
                               const int32_t *touch)
{
	int32_t cap = 0;
	if (!m->o.recompute || !atm_opt_is_ilp(m->f))
		return ATM_OK;
	for (int32_t t = 0; t < m->n_tensors; t++) {
		if (m->t[t].cls != TC_MOVABLE || !atm_recompute_eligible(m->g, t, NULL))
			continue;
		int32_t k = atm_recompute_producer(m->g, t);
		for (int32_t i = tstart[t]; k >= 0 && i + 1 < tstart[t + 1]; i++) {
			int32_t d = touch[i], u = touch[i + 1];
			if (u - d >= 2 && !add(m, lv, &cap, t, k, d, u))
				return atm_err(ATM_E_NOMEM, "out of memory building the model");
		}
	}
	return exclusions(m);
}

void opt_recompute_free(struct model *m)
{
	for (int32_t i = 0; i < m->n_rc; i++)
		rcand_free(&m->rc[i]);
	free(m->rc);
	free(m->excl);
	free(m->excl_at);
	free(m->excl_with);
	m->rc = NULL;
	m->excl = NULL;
	m->excl_at = m->excl_with = NULL;
	m->n_rc = m->n_excl = 0;
}

/* slow_at -- tensor x in phase ph (-1: the tensor made again, fast) is slow under s */
static bool slow_at(const struct model *m, const struct solution *s, int32_t x, int32_t ph)
{
	if (ph < 0 || m->t[x].cls != TC_MOVABLE)
		return m->t[x].cls == TC_SLOW;
	return !s->pinned[x] && s->st[m->t[x].ph_off + ph] == ST_S;
}

/* stays_fast -- c's tensor is fast without a valid slow copy at d and moves nowhere to u */
static bool stays_fast(const struct model *m, const struct solution *s, const struct rcand *c)
{
	const struct tmodel *t = &m->t[c->t];
	for (int32_t ph = c->pd; ph <= c->pu; ph++)
		if (s->st[t->ph_off + ph] != ST_F)
			return false;
	return !s->pinned[c->t];
}

/* copies_beside -- an operand of c's kernels starts an overlapped copy after u - 1 under s (the
 * schedule would wait for it before making the tensor again, which the model does not price) */
static bool copies_beside(const struct model *m, const struct solution *s, const struct rcand *c)
{
	for (int32_t j = 0; j < c->n_ops; j++) {
		const struct tmodel *t = &m->t[c->ops[j]];
		if (t->cls != TC_MOVABLE || s->pinned[t->id])
			continue;
		int32_t g = opt_recompute_async_gate(c, t);
		if (g >= 0 && s->st[t->ph_off + g] != s->st[t->ph_off + g - 1])
			return true;
	}
	return false;
}

int32_t opt_recompute_async_gate(const struct rcand *c, const struct tmodel *t)
{
	for (int32_t g = 1; g < t->n_gates; g++)
		if (t->gates[g].kind == G_ASYNC && t->gates[g].at == c->u)
			return g;
	return -1;
}

double opt_recompute_time(const struct model *m, const struct solution *s, int32_t i)
{
	const struct rcand *c = &m->rc[i];
	const struct nmodel *nm = &m->n[c->k];
	if (!stays_fast(m, s, c) || copies_beside(m, s, c))
		return INFINITY;
	for (int32_t e = m->excl_at ? m->excl_at[i] : 0; m->excl_at && e < m->excl_at[i + 1]; e++)
		if (s->rc[m->excl_with[e]])
			return INFINITY;
	if (c->n_links) {
		for (int32_t j = 0; j < c->n_roots; j++)
			if (slow_at(m, s, c->root[j], c->root_ph[j]))
				return INFINITY;
		return c->chain_s;
	}
	for (int j = 0; j < nm->n_forced; j++)
		if (slow_at(m, s, nm->forced[j].tensor, c->fph[j]) != nm->forced[j].slow)
			return INFINITY;
	if (nm->n_algo > 1 || m->o.device_only)
		return c->max_algo_s;
	int cfg = 0;
	for (int u = 0, n = 0; u < nm->n_free; u++) {
		const struct unit *un = &nm->units[u];
		bool slow = slow_at(m, s, un->members[0], c->uph[n]);
		for (int j = 0; j < un->n_members; j++, n++)
			if (slow_at(m, s, un->members[j], c->uph[n]) != slow)
				return INFINITY;
		cfg |= slow << u;
	}
	return nm->time[cfg] >= 0 ? nm->time[cfg] : INFINITY;
}

double opt_recompute_again_s(const struct model *m, int32_t i)
{
	const struct rcand *c = &m->rc[i];
	const struct nmodel *nm = &m->n[c->k];
	if (c->n_links)
		return c->chain_s;
	return nm->n_algo > 1 || m->o.device_only ? c->max_algo_s : nm->time[0];
}

bool opt_recompute_touches(const struct model *m, int32_t i, int32_t x)
{
	const struct rcand *c = &m->rc[i];
	if (c->t == x)
		return true;
	for (int32_t j = 0; j < c->n_ops; j++)
		if (c->ops[j] == x)
			return true;
	return false;
}
