/* explain.c -- a plan as a timeline a person can read: where tensors live, what moves when, which kernels slow down */
#include <stdlib.h>
#include <string.h>

#include "opt_internal.h"

/* mib -- bytes for a person */
static const char *mib(int64_t bytes, char *buf, size_t len)
{
	return atm_format_bytes(bytes, buf, len);
}

/* ms -- seconds in the unit that reads best */
static const char *ms(double s, char *buf, size_t len)
{
	if (s < 1e-3)
		snprintf(buf, len, "%.1f us", s * 1e6);
	else if (s < 1)
		snprintf(buf, len, "%.2f ms", s * 1e3);
	else
		snprintf(buf, len, "%.3f s", s);
	return buf;
}

/* slow_operands -- "a, b (in); c (out)" for the operands cfg puts in slow memory */
static void slow_operands(const atm_graph *g, const atm_node *n, const unsigned *cfg, char *buf,
                          size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < n->n_in + n->n_out && used < len; i++) {
		if (cfg[i] != ATM_LOC_SLOW)
			continue;
		int32_t t = i < n->n_in ? n->in[i] : n->out[i - n->n_in];
		used += (size_t)snprintf(buf + used, len - used, "%s'%s'%s", used ? ", " : "",
		                         atm_graph_tensor(g, t)->name, i < n->n_in ? "" : " (out)");
	}
}

/* explain_summary -- the lines above the table: limit, predicted step, solver, fast memory,
 * moves */
static void explain_summary(FILE *f, const atm_plan *p, const atm_opt_check_result *chk,
                            const atm_schedule_stats *st)
{
	const atm_graph *g = atm_plan_graph(p);
	const atm_plan_info *info = atm_plan_info_get(p);
	char a[32], b[32], c[32], d[32], list[32];
	fprintf(f, "plan of '%s': %s, fast limit %s\n", atm_graph_name(g), info->formulation,
	        info->fast_limit_bytes ? mib(info->fast_limit_bytes, a, sizeof a) : "none");
	fprintf(f, "predicted step %s: kernels %s (all fast: %s), blocking moves %s, waits for "
	        "overlapped moves %s%s\n", ms(chk->predicted_s, a, sizeof a), ms(chk->kernel_s, b, sizeof b),
	        ms(chk->all_fast_kernel_s, c, sizeof c), ms(chk->sync_move_s, d, sizeof d),
	        ms(chk->async_wait_s, list, sizeof list),
	        strcmp(info->formulation, "2lm") ? "" : " (2LM: all slow behind a cache of the limit's size)");
	if (info->solve_s >= 0)
		fprintf(f, "solver: %s, gap %.2f%%, %d round(s), model %.2f s, solve %.2f s\n",
		        info->solver_status, info->mip_gap >= 0 ? info->mip_gap * 100 : -1.0,
		        info->n_rounds, info->creation_s, info->solve_s);
	fprintf(f, "fast memory: peak %s at node %d, arena %s; persistent tensors %s fast, %s slow\n",
	        mib(st->fast_peak_bytes, a, sizeof a), st->fast_peak_node,
	        mib(st->fast_arena_bytes, b, sizeof b), mib(st->persistent_fast_bytes, c, sizeof c),
	        mib(st->persistent_slow_bytes, d, sizeof d));
	fprintf(f, "moves per step: %d to fast (%d overlapped), %d to slow (%d overlapped)\n\n",
	        st->n_moves_to_fast, st->n_async_to_fast, st->n_moves_to_slow, st->n_async_to_slow);
}

/* explain_move -- a move's line (its cost from mv, where the profile has the copy rates) */
static void explain_move(FILE *f, const atm_plan *p, const atm_event *ev,
                         const atm_profile_moves *mv)
{
	const atm_tensor *x = atm_graph_tensor(atm_plan_graph(p), ev->tensor);
	char a[32];
	const atm_move *m = atm_plan_move(p, ev->move);
	double bw = !mv ? 0 : m->to == ATM_LOC_FAST ? mv->to_fast_gbps : mv->to_slow_gbps;
	char cost[32] = "?";
	if (bw > 0)
		ms((double)x->bytes / (bw * 1e9), cost, sizeof cost);
	if (m->async)
		fprintf(f, "%6s  %s '%s' to %s memory, overlapped, done before node %d (%s, %s)\n",
		        "", m->to == ATM_LOC_FAST ? "=> fetch" : "=> evict", x->name,
		        m->to == ATM_LOC_FAST ? "fast" : "slow", m->until,
		        mib(x->bytes, a, sizeof a), cost);
	else
		fprintf(f, "%6s  %s '%s' to %s memory, blocking (%s, %s)\n", "",
		        m->to == ATM_LOC_FAST ? "-> fetch" : "-> write", x->name,
		        m->to == ATM_LOC_FAST ? "fast" : "slow", mib(x->bytes, a, sizeof a), cost);
}

/* explain_recompute -- a recomputation's line; the kernel's time run again (0 unknown) */
static double explain_recompute(FILE *f, const atm_plan *p, const atm_profile *prof,
                                const atm_event *ev)
{
	const atm_graph *g = atm_plan_graph(p);
	const atm_tensor *x = atm_graph_tensor(g, ev->tensor);
	char a[32];
	double t = -1, t0 = -1;
	char tt[32] = "?";
	if (opt_kernel_time(prof, g, ev->node, ev->cfg, atm_plan_algo(p, ev->node), &t,
	                    &t0) == ATM_OK)
		ms(t, tt, sizeof tt);
	const atm_recompute *r = atm_plan_recompute(p, ev->recompute);
	/* a link was freed at its last use and feeds only the recomputations after it */
	if (atm_recompute_is_link(g, r))
		fprintf(f, "%6s  <> recompute '%s' (%s) by running node %d ('%s') again: %s; a "
		        "link, freed after node %d, made again for the recomputations before "
		        "node %d that read it\n", "", x->name, mib(x->bytes, a, sizeof a),
		        ev->node, atm_graph_node(g, ev->node)->name, tt, r->drop_after,
		        r->before);
	else
		fprintf(f, "%6s  <> recompute '%s' (%s) by running node %d ('%s') again: %s; "
		        "dropped after node %d\n", "", x->name, mib(x->bytes, a, sizeof a),
		        ev->node, atm_graph_node(g, ev->node)->name, tt, r->drop_after);
	return t > 0 ? t : 0;
}

/* atm_opt_explain -- the plan as a table of its step: every kernel with its time, slowdown,
 * live tensors and slow operands, every move and recomputation, after a summary */
atm_status atm_opt_explain(const atm_plan *p, const atm_profile *prof, const atm_opt_options *o,
                           FILE *f)
{
	const atm_graph *g = atm_plan_graph(p);
	atm_opt_check_result chk;
	atm_schedule *s = NULL;
	atm_profile_moves mv = {0};
	char a[32], b[32], list[512];
	atm_status rc = atm_opt_check(p, prof, o, &chk);
	if (rc < 0)
		return rc;
	if ((rc = atm_schedule_new(&s, p)) < 0)
		return rc;
	bool have_mv = atm_profile_get_moves(prof, &mv) == ATM_OK;
	const atm_schedule_stats *st = atm_schedule_stats_get(s);
	explain_summary(f, p, &chk, st);
	fprintf(f, "%6s  %-36s %10s %10s  %-20s %s\n", "node", "kernel", "time", "slowdown",
	        "fast / slow live", "slow operands");
	int32_t n_setup = atm_schedule_n_setup(s), nf = 0, ns = 0;
	int64_t bf = 0, bs = 0;
	for (int32_t i = 0; i < n_setup; i++) {
		const atm_event *ev = atm_schedule_setup(s, i);
		int64_t x = atm_graph_tensor(g, ev->tensor)->bytes;
		if (ev->loc == ATM_LOC_FAST)
			nf++, bf += x;
		else
			ns++, bs += x;
	}
	double slowed = 0, again_s = 0;
	int32_t n_slowed = 0, n_again = 0;
	for (int32_t i = 0; i < atm_schedule_n_events(s); i++) {
		const atm_event *ev = atm_schedule_event(s, i);
		const atm_tensor *x = ev->tensor >= 0 ? atm_graph_tensor(g, ev->tensor) : NULL;
		switch (ev->kind) {
		case ATM_EV_ALLOC:
		case ATM_EV_FREE: {
			int sign = ev->kind == ATM_EV_ALLOC ? 1 : -1;
			if (ev->loc == ATM_LOC_FAST)
				nf += sign, bf += sign * x->bytes;
			else
				ns += sign, bs += sign * x->bytes;
			break;
		}
		case ATM_EV_KERNEL: {
			const atm_node *n = atm_graph_node(g, ev->node);
			double t = -1, t0 = -1;
			if (opt_kernel_time(prof, g, ev->node, ev->cfg, atm_plan_algo(p, ev->node), &t, &t0) < 0)
				t = t0 = -1;
			slow_operands(g, n, ev->cfg, list, sizeof list);
			char live[64];
			snprintf(live, sizeof live, "%d %s / %d %s", nf, mib(bf, a, sizeof a), ns,
			         mib(bs, b, sizeof b));
			bool slow = t >= 0 && t0 >= 0 && list[0] && t > t0;
			if (slow) {
				slowed += t - t0;
				n_slowed++;
			}
			char tt[32] = "?", dd[32] = "";
			if (t >= 0)
				ms(t, tt, sizeof tt);
			if (slow) {
				dd[0] = '+';
				ms(t - t0, dd + 1, sizeof dd - 1);
			}
			fprintf(f, "%6d  %-36.36s %10s %10s  %-20s %s\n", ev->node, n->name, tt, dd, live, list);
			break;
		}
		case ATM_EV_MOVE_START:
			explain_move(f, p, ev, have_mv ? &mv : NULL);
			break;
		case ATM_EV_MOVE_WAIT:
			if (atm_plan_move(p, ev->move)->async)
				fprintf(f, "%6s  .. '%s' arrives in %s memory\n", "", x->name,
				        ev->loc == ATM_LOC_FAST ? "fast" : "slow");
			break;
		case ATM_EV_RECOMPUTE:
			again_s += explain_recompute(f, p, prof, ev);
			n_again++;
			break;
		}
	}
	fprintf(f, "\n%d kernel(s) slowed by slow operands, %s in all; predicted step %s\n", n_slowed,
	        ms(slowed, a, sizeof a), ms(chk.predicted_s, b, sizeof b));
	if (n_again)
		fprintf(f, "%d tensor(s) recomputed, %s of kernels run again\n", n_again,
		        ms(again_s, a, sizeof a));
	atm_schedule_destroy(s);
	return ATM_OK;
}
