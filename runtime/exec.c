/* exec.c -- the executor: performs a schedule's events with real memory, kernels and a mover thread */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "data.h"

struct atm_exec {
	const atm_plan *plan;
	const atm_graph *g;
	atm_exec_opts opts;
	atm_schedule *sched;
	atm_backend *b;
	atm_backend_desc desc;
	atm_twolm *twolm;      /* emulated Memory Mode, NULL when off */
	uintptr_t twolm_base;        /* its addresses are the slow copies' places past this: the
	                              * first slow copy's, so that sets do not move with the mapping */
	atm_bk_kernel **kernels;
	int32_t *kernel_owner;       /* per node: the node whose kernel it runs (itself, or an
	                              * earlier node of its signature: atm_backend_caps.shared_kernels) */
	void *scratch;
	void **fast_ptr, **slow_ptr; /* per tensor: its copies, NULL when absent */
	void **in_ptrs, **out_ptrs;  /* per kernel call, sized for the widest node */
	void *host;                  /* host staging for tensor bytes: the largest persistent tensor */
	int64_t host_bytes;
	double *kernel_s, *step_kernel_s, *best_kernel_s; /* min per node; this step; fastest step */
	double *node_wait_s;         /* per node, this step: an allreduce's wait for the other ranks */
	float *losses;
	int n_losses_cap;
	int n_steps;                 /* run since the measurement began, the warm-up first */
	double sum_s, emu_sum_s, wait_sum_s; /* over the measured steps */
	double energy_sum_j;                 /* a GPU's energy over them; < 0: not measured */
	double move_wait_s;          /* this step: the schedule waited on asynchronous moves */
	int32_t step_n_recomputes;   /* this step: recomputations run */
	int64_t hw_end;              /* the fast arena's highest end held so far (every step) */
	const atm_event *hw_event;   /* the claim that set it (NULL: none yet) */
	atm_twolm_traffic step_twolm; /* this step: the 2LM cache's slow-memory traffic */
	double step_recompute_s;     /* this step: their kernels' time */
	atm_exec_result result;
};

/* ---------------------------------------------------------------- data */

/* uniform -- in [-1, 1) */
static float uniform(uint64_t *s)
{
	return (float)((double)(atm_bk_mix(s) >> 11) * 0x1p-53 * 2.0 - 1.0);
}

/* How a parameter is used decides how it starts: weights He-uniform,
 * biases and batch-norm shifts zero, batch-norm scales one; the first op that
 * gives it a parameter role decides (atm_op_desc.in_role). An input an op
 * reads as labels holds one-hot rows; one it reads as tokens (ids, labels per position) holds
 * ids drawn uniformly below the rows or classes they index, so none can be out of range. */
enum init { INIT_WEIGHT, INIT_ZERO, INIT_ONE, INIT_DATA, INIT_LABELS, INIT_TOKENS };

/* takes_params -- op names the roles of the parameters it reads */
static bool takes_params(atm_op op)
{
	for (int i = 0; i < ATM_OP_MAX_ROLES; i++) {
		atm_op_role r = atm_op_in_role(op, i);
		if (r == ATM_ROLE_WEIGHT || r == ATM_ROLE_SCALE || r == ATM_ROLE_SHIFT)
			return true;
	}
	return false;
}

/* param_init -- how parameter t starts: as the first op that reads it in a parameter role
 * says, read through casts (a bf16 copy's reader decides); -1 when none does */
static int param_init(const atm_graph *g, int32_t t)
{
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		const atm_node *n = atm_graph_node(g, k);
		if (!takes_params(n->op) && n->op != ATM_OP_CAST)
			continue;
		for (int i = 0; i < n->n_in; i++) {
			if (n->in[i] != t)
				continue;
			if (n->op == ATM_OP_CAST) {
				int r = param_init(g, n->out[0]);
				if (r >= 0)
					return r;
				continue;
			}
			switch (atm_op_in_role(n->op, i)) {
			case ATM_ROLE_WEIGHT:
				return INIT_WEIGHT;
			case ATM_ROLE_SCALE:
				return INIT_ONE;
			default:
				return INIT_ZERO;
			}
		}
	}
	return -1;
}

static enum init init_of(const atm_graph *g, int32_t t)
{
	const atm_tensor *x = atm_graph_tensor(g, t);
	if (x->kind == ATM_KIND_INPUT)
		return atm_tensor_is_labels(g, t)         ? INIT_LABELS
		       : atm_tensor_token_limit(g, t) > 0 ? INIT_TOKENS
		                                          : INIT_DATA;
	if (x->kind != ATM_KIND_PARAM)
		return INIT_ZERO;
	int r = param_init(g, t);
	return r >= 0 ? (enum init)r : INIT_WEIGHT;
}

static void fill(const atm_graph *g, int32_t t, float *data, const atm_exec_opts *o);

/* fill_shard -- this rank's rows of batched input t, made whole (o->whole's tensor of its name)
 * and cut: the batch is the first dimension, so the rows are one run of bytes */
static atm_status fill_shard(const atm_graph *g, int32_t t, float *data, const atm_exec_opts *o)
{
	const atm_tensor *x = atm_graph_tensor(g, t);
	int32_t wt = atm_graph_find_tensor(o->whole, x->name);
	const atm_tensor *w = wt >= 0 ? atm_graph_tensor(o->whole, wt) : NULL;
	if (!w || w->bytes != x->bytes * o->n_shards)
		return atm_err(ATM_E_INPUT, "input '%s': the whole batch's graph has %s of it; expected "
		               "%d times its %lld bytes", x->name, w ? "another size" : "none",
		               o->n_shards, (long long)x->bytes);
	char *whole = malloc((size_t)w->bytes);
	if (!whole)
		return atm_err(ATM_E_NOMEM, "input '%s': out of memory making the whole batch",
		               x->name);
	atm_exec_opts one = *o;
	one.whole = NULL;
	fill(o->whole, wt, (float *)whole, &one);
	memcpy(data, whole + (int64_t)o->shard * x->bytes, (size_t)x->bytes);
	free(whole);
	return ATM_OK;
}

/* fill -- the starting bytes of persistent tensor t, the same for every plan: the weights
 * or data files' where they were given, else the seed's */
static void fill(const atm_graph *g, int32_t t, float *data, const atm_exec_opts *o)
{
	const atm_tensor *x = atm_graph_tensor(g, t);
	if (((x->kind == ATM_KIND_PARAM || x->kind == ATM_KIND_OPTIMIZER_STATE) &&
	     atm_st_fill(o->weights, g, t, data)) ||
	    (x->kind == ATM_KIND_INPUT && atm_st_fill(o->data, g, t, data)))
		return;
	uint64_t s = atm_bk_tensor_seed(o->seed, t);
	int64_t n = x->n_elems;
	switch (init_of(g, t)) {
	case INIT_WEIGHT: {
		int64_t fan_in = x->ndim > 1 ? n / x->dims[0] : n;
		float a = sqrtf(6.0f / (float)(fan_in ? fan_in : 1));
		for (int64_t i = 0; i < n; i++)
			data[i] = a * uniform(&s);
		break;
	}
	case INIT_DATA:
		for (int64_t i = 0; i < n; i++)
			data[i] = uniform(&s);
		break;
	case INIT_LABELS: {
		int64_t rows = x->dims[0], cols = n / rows;
		memset(data, 0, (size_t)x->bytes);
		for (int64_t r = 0; r < rows; r++)
			data[r * cols + (int64_t)(atm_bk_mix(&s) % (uint64_t)cols)] = 1.0f;
		break;
	}
	case INIT_ONE:
		for (int64_t i = 0; i < n; i++)
			data[i] = 1.0f;
		break;
	case INIT_TOKENS: {
		uint64_t limit = (uint64_t)atm_tensor_token_limit(g, t);
		int32_t *ids = (int32_t *)data;
		for (int64_t i = 0; i < n; i++)
			ids[i] = (int32_t)(atm_bk_mix(&s) % limit);
		break;
	}
	default:
		memset(data, 0, (size_t)x->bytes);
		break;
	}
}

/* ---------------------------------------------------------------- events */

/* recompute_mark -- the first of recomputation i's two timing marks, after the nodes' */
static int32_t recompute_mark(const atm_exec *e, int32_t i)
{
	return 2 * atm_graph_n_nodes(e->g) + 2 * i;
}

/* claim_where -- "tensor 'x' after node 'n'", or a workspace's "the workspace of node 'n'",
 * for a message about ev's claim of fast memory */
static void claim_where(const atm_exec *e, const atm_event *ev, char *buf, size_t len)
{
	const char *node = ev->node >= 0 ? atm_graph_node(e->g, ev->node)->name : NULL;
	if (ev->kind == ATM_EV_KERNEL || ev->kind == ATM_EV_RECOMPUTE)
		snprintf(buf, len, "the workspace of node '%s'%s", node,
		         ev->kind == ATM_EV_RECOMPUTE ? " run again" : "");
	else if (node)
		snprintf(buf, len, "tensor '%s' after node '%s'", atm_graph_tensor(e->g, ev->tensor)->name,
		         node);
	else
		snprintf(buf, len, "tensor '%s' before the first node",
		         atm_graph_tensor(e->g, ev->tensor)->name);
}

/* fast_claim -- ev is about to hold bytes of the fast arena at offset: the high-water mark
 * follows it, and a claim that ends past the plan's limit is refused before anything is
 * written there. atm_exec_new lays out only plans within their limit, so this is the last
 * guard of the promise (a GPU's arena is the layout's, not the limit), not a check of input. */
static atm_status fast_claim(atm_exec *e, const atm_event *ev, int64_t offset, int64_t bytes)
{
	int64_t end = offset + bytes, limit = atm_plan_info_get(e->plan)->fast_limit_bytes;
	if (end > e->hw_end) {
		e->hw_end = end;
		e->hw_event = ev;
	}
	if (limit <= 0 || end <= limit)
		return ATM_OK;
	char where[256];
	claim_where(e, ev, where, sizeof where);
	return atm_err(ATM_E_OVER_LIMIT, "fast memory: %s would hold it up to byte %lld, past the "
	               "plan's limit of %lld bytes by %lld", where, (long long)end, (long long)limit,
	               (long long)(end - limit));
}

static atm_status do_alloc(atm_exec *e, const atm_event *ev)
{
	const atm_tensor *x = atm_graph_tensor(e->g, ev->tensor);
	atm_status rc;
	if (ev->loc == ATM_LOC_FAST && (rc = fast_claim(e, ev, ev->offset, x->bytes)) < 0)
		return rc;
	void **slot = ev->loc == ATM_LOC_FAST ? &e->fast_ptr[ev->tensor] : &e->slow_ptr[ev->tensor];
	rc = e->b->iface->alloc(e->b, ev->loc, ev->offset, x->bytes, slot);
	if (rc < 0)
		return atm_err_prefix(rc, "tensor '%s': ", x->name);
	if (e->twolm && ev->loc == ATM_LOC_SLOW && !e->twolm_base)
		e->twolm_base = (uintptr_t)*slot;
	return ATM_OK;
}

static atm_status do_free(atm_exec *e, const atm_event *ev)
{
	/* a freed copy's lines stay in the 2LM cache: the hardware is never told */
	void **slot = ev->loc == ATM_LOC_FAST ? &e->fast_ptr[ev->tensor] : &e->slow_ptr[ev->tensor];
	atm_status rc = e->b->iface->free(e->b, ev->loc, *slot);
	*slot = NULL;
	return rc;
}

/* twolm_addr -- tensor t's slow copy as an address of the emulated 2LM cache (ctx: the
 * executor) */
static int64_t twolm_addr(const void *ctx, int32_t t)
{
	const atm_exec *e = ctx;
	return (int64_t)((uintptr_t)e->slow_ptr[t] - e->twolm_base);
}

/* twolm_traffic -- in Memory Mode slow bytes cost only the lines that miss the DRAM cache, and
 * the dirty lines those misses evict: tr gets them */
static void twolm_traffic(atm_exec *e, const atm_event *ev, atm_twolm_traffic *out)
{
	*out = (atm_twolm_traffic){0};
	atm_twolm_node(e->twolm, e->g, ev, twolm_addr, e, out);
	atm_twolm_traffic_add(&e->step_twolm, out);
}

/* run_node -- ev's node on the operands its cfg places, between timing marks mark and
 * mark + 1: a node's kernel, or the same kernel run again by a recomputation */
static atm_status run_node(atm_exec *e, const atm_event *ev, int32_t mark)
{
	const atm_node *n = atm_graph_node(e->g, ev->node);
	const atm_backend_i *bi = e->b->iface;
	int64_t slow_read = 0, slow_written = 0;
	atm_status rc;
	for (int i = 0; i < n->n_in; i++) {
		int32_t t = n->in[i];
		bool fast = ev->cfg[i] == ATM_LOC_FAST;
		e->in_ptrs[i] = fast ? e->fast_ptr[t] : e->slow_ptr[t];
		if (!fast) {
			slow_read += atm_graph_tensor(e->g, t)->bytes;
			if (atm_op_writes_input(n->op, i))
				slow_written += atm_graph_tensor(e->g, t)->bytes;
		}
	}
	for (int i = 0; i < n->n_out; i++) {
		int32_t t = n->out[i];
		bool fast = ev->cfg[n->n_in + i] == ATM_LOC_FAST;
		e->out_ptrs[i] = fast ? e->fast_ptr[t] : e->slow_ptr[t];
		if (!fast)
			slow_written += atm_graph_tensor(e->g, t)->bytes;
	}
	/* a workspace the plan counts in the limit is the schedule's block of the fast arena,
	 * held while the kernel runs; the others share the backend's scratch outside it. A node
	 * run again writes its outputs but the one remade into that block too, after the
	 * workspace, each rounded up to the arena's alignment, and they are discarded. */
	void *ws = e->scratch, *block = NULL;
	bool again = ev->kind == ATM_EV_RECOMPUTE;
	int64_t own = again ? atm_plan_workspace(e->plan, ev->node) : ev->workspace_bytes;
	int64_t extra = ev->workspace_bytes - own;
	int64_t block_bytes = extra > 0 ? atm_arena_align_up(own) + extra : ev->workspace_bytes;
	if (ev->workspace_bytes > 0 && (rc = fast_claim(e, ev, ev->offset, block_bytes)) < 0)
		return rc; /* its message names the workspace */
	if (ev->workspace_bytes > 0 &&
	    (rc = bi->alloc(e->b, ATM_LOC_FAST, ev->offset, block_bytes, &block)) < 0)
		return atm_err_prefix(rc, "the workspace of node '%s': ", n->name);
	if (own > 0)
		ws = block;
	if (again && extra > 0) {
		char *at = (char *)block + atm_arena_align_up(own);
		for (int i = 0; i < n->n_out; i++)
			if (n->out[i] != ev->tensor) {
				e->out_ptrs[i] = at;
				at += atm_arena_align_up(atm_graph_tensor(e->g, n->out[i])->bytes);
			}
	}
	double ranks_waited = atm_bk_allreduce_waited_s();
	if ((rc = bi->mark(e->b, mark)) == ATM_OK)
		rc = bi->kernel_run(e->b, e->kernels[ev->node], e->in_ptrs, e->out_ptrs, ws);
	e->node_wait_s[ev->node] = atm_bk_allreduce_waited_s() - ranks_waited; /* 0 but an allreduce's */
	if (ev->workspace_bytes > 0) {
		atm_status fr = bi->free(e->b, ATM_LOC_FAST, block);
		if (rc == ATM_OK)
			rc = fr;
	}
	if (rc < 0)
		return rc;
	atm_twolm_traffic tr;
	if (e->twolm)
		twolm_traffic(e, ev, &tr);
	if (bi->emulate && (e->twolm || slow_read || slow_written)) {
		double waited = 0;
		if ((rc = bi->emulate(e->b, slow_read, slow_written, e->twolm ? &tr : NULL,
		                      &waited)) < 0)
			return rc;
	}
	return bi->mark(e->b, mark + 1);
}

static atm_status do_kernel(atm_exec *e, const atm_event *ev)
{
	return run_node(e, ev, 2 * ev->node);
}

/* do_recompute -- the node that made ev's tensor runs again, with the same kernel, on its
 * inputs where the schedule found them and into the fast copy just allocated (its other
 * outputs into the workspace block, discarded); timed in its
 * own marks (after the nodes'), so that the node's own kernel time stays its first run's */
static atm_status do_recompute(atm_exec *e, const atm_event *ev)
{
	atm_status rc = run_node(e, ev, recompute_mark(e, ev->recompute));
	if (rc < 0)
		return atm_err_prefix(rc, "recomputation %d of '%s': ", ev->recompute,
		                      atm_graph_tensor(e->g, ev->tensor)->name);
	e->step_n_recomputes++;
	return ATM_OK;
}

static atm_status do_move_start(atm_exec *e, const atm_event *ev)
{
	const atm_move *m = atm_plan_move(e->plan, ev->move);
	bool to_slow = m->to == ATM_LOC_SLOW;
	int64_t bytes = atm_graph_tensor(e->g, ev->tensor)->bytes;
	const void *src = to_slow ? e->fast_ptr[ev->tensor] : e->slow_ptr[ev->tensor];
	void *dst = to_slow ? e->slow_ptr[ev->tensor] : e->fast_ptr[ev->tensor];
	if (!m->async)
		return e->b->iface->copy(e->b, m->to, dst, src, bytes);
	return e->b->iface->copy_start(e->b, ev->move, m->to, dst, src, bytes);
}

static atm_status do_move_wait(atm_exec *e, const atm_event *ev)
{
	if (!atm_plan_move(e->plan, ev->move)->async)
		return ATM_OK;
	double t0 = atm_now_s();
	atm_status rc = e->b->iface->copy_wait(e->b, ev->move);
	e->move_wait_s += atm_now_s() - t0;
	return rc < 0 ? atm_err_prefix(rc, "move %d: ", ev->move) : ATM_OK;
}

/* release_step -- after a failed step: wait for the copies in flight, then
 * give back what the step holds so that the memories stay consistent */
static void release_step(atm_exec *e)
{
	e->b->iface->copy_drain(e->b);
	(void)e->b->iface->sync(e->b);
	for (int32_t t = 0; t < atm_graph_n_tensors(e->g); t++) {
		if (atm_tensor_is_persistent(atm_graph_tensor(e->g, t)))
			continue;
		if (e->fast_ptr[t])
			e->b->iface->free(e->b, ATM_LOC_FAST, e->fast_ptr[t]);
		if (e->slow_ptr[t])
			e->b->iface->free(e->b, ATM_LOC_SLOW, e->slow_ptr[t]);
		e->fast_ptr[t] = e->slow_ptr[t] = NULL;
	}
}

/* step -- one training step: every event of the schedule in order, then
 * everything it issued is done */
static atm_status step(atm_exec *e)
{
	atm_status rc = ATM_OK;
	e->move_wait_s = 0;
	e->step_n_recomputes = 0;
	e->step_twolm = (atm_twolm_traffic){0};
	for (int32_t i = 0; i < atm_schedule_n_events(e->sched) && rc >= 0; i++) {
		const atm_event *ev = atm_schedule_event(e->sched, i);
		if (e->opts.stop && *e->opts.stop) {
			rc = atm_err(ATM_E_INTERRUPTED, "interrupted at node %d of %d", ev->node,
			             atm_graph_n_nodes(e->g));
			break;
		}
		switch (ev->kind) {
		case ATM_EV_ALLOC: rc = do_alloc(e, ev); break;
		case ATM_EV_FREE: rc = do_free(e, ev); break;
		case ATM_EV_KERNEL: rc = do_kernel(e, ev); break;
		case ATM_EV_MOVE_START: rc = do_move_start(e, ev); break;
		case ATM_EV_MOVE_WAIT: rc = do_move_wait(e, ev); break;
		case ATM_EV_RECOMPUTE: rc = do_recompute(e, ev); break;
		}
	}
	if (rc >= 0)
		rc = e->b->iface->sync(e->b);
	if (rc < 0)
		release_step(e);
	return rc;
}

/* ---------------------------------------------------------------- set-up */

/* check_plan -- a plan larger than the GPU's memory is refused before any kernel runs */
static atm_status check_plan(atm_exec *e)
{
	const atm_schedule_stats *st = atm_schedule_stats_get(e->sched);
	int64_t limit = atm_plan_info_get(e->plan)->fast_limit_bytes;
	char a[32], b[32];
	if (e->opts.gpu.mode && e->opts.gpu.memory_bytes > 0 &&
	    (limit > e->opts.gpu.memory_bytes || st->fast_arena_bytes > e->opts.gpu.memory_bytes))
		return atm_err(ATM_E_INFEASIBLE, "plan '%s' needs %s of device memory but the GPU's "
		               "limit is %s (--gpu-memory): plan again with that limit",
		               atm_plan_info_get(e->plan)->formulation,
		               atm_format_bytes(limit > st->fast_arena_bytes ? limit : st->fast_arena_bytes,
		                                a, sizeof a),
		               atm_format_bytes(e->opts.gpu.memory_bytes, b, sizeof b));
	return ATM_OK;
}

/* open_memory -- the backend, its fast arena and emulated 2LM */
static atm_status open_memory(atm_exec *e)
{
	const atm_schedule_stats *st = atm_schedule_stats_get(e->sched);
	int64_t limit = atm_plan_info_get(e->plan)->fast_limit_bytes;
	/* a GPU's arena is what the step's layout uses: the limit may be the whole device,
	 * part of which the CUDA context and the libraries take once they start */
	int64_t arena = limit && !e->opts.gpu.mode ? limit : st->fast_arena_bytes;
	atm_backend_opts bo = {.tiers = e->opts.tiers, .emulate = e->opts.emulate, .gpu = e->opts.gpu,
	                       .stop = e->opts.stop};
	atm_status rc;
	/* what the step holds, for the default pmem folder's room check (a plan with nothing in
	 * slow memory needs a byte, not the unknown need's allowance) */
	if (!bo.tiers.slow_need_bytes)
		bo.tiers.slow_need_bytes = st->slow_peak_bytes > 0 ? st->slow_peak_bytes : 1;
	if (!bo.tiers.fast_need_bytes)
		bo.tiers.fast_need_bytes = arena;
	if ((rc = atm_backend_open(&e->b, &bo)) < 0)
		return rc;
	e->b->iface->describe(e->b, &e->desc);
	if ((rc = check_plan(e)) < 0 || (rc = e->b->iface->arena_new(e->b, arena)) < 0 ||
	    (rc = e->b->iface->reserve(e->b, atm_plan_n_moves(e->plan),
	                               recompute_mark(e, atm_plan_n_recomputes(e->plan)))) < 0)
		return rc;
	e->result.arena_bytes = arena ? arena : ATM_ARENA_ALIGN;
	if (e->opts.twolm_bytes > 0) {
		if (!e->opts.emulate)
			return atm_err(ATM_E_USAGE, "emulating 2LM needs an emulated slow tier (--emulate) "
			               "to know what a cache miss costs");
		if (st->fast_peak_bytes > 0)
			return atm_err(ATM_E_USAGE, "2LM runs an all-slow plan (the hardware decides what is "
			               "in fast memory), but plan '%s' puts %lld bytes in fast memory",
			               atm_plan_info_get(e->plan)->formulation,
			               (long long)st->fast_peak_bytes);
		if ((rc = atm_twolm_new(&e->twolm, e->opts.twolm_bytes, ATM_2LM_LINE_BYTES)) < 0)
			return rc;
	}
	return ATM_OK;
}

/* count_bf16 -- node k, when it reads or writes bf16 (a cast aside), counted as its kernel runs
 * it: on the backend's bf16 kernels or widened to f32 */
static void count_bf16(atm_exec *e, int32_t k)
{
	if (!atm_node_runs_bf16(e->g, k))
		return;
	if (!e->b->iface->kernel_widened || e->b->iface->kernel_widened(e->b, e->kernels[k]))
		e->result.n_bf16_widened++;
	else
		e->result.n_bf16_native++;
}

/* build_kernel -- node k's own kernel, with the plan's algorithm */
static atm_status build_kernel(atm_exec *e, int32_t k)
{
	const atm_node *n = atm_graph_node(e->g, k);
	atm_status rc;
	if ((rc = e->b->iface->kernel_new(e->b, e->g, k, &e->kernels[k])) < 0)
		return rc;
	int algo = atm_plan_algo(e->plan, k), n_algos;
	n_algos = e->b->iface->kernel_n_algos(e->b, e->kernels[k]);
	if (algo >= n_algos)
		return atm_err(ATM_E_INPUT, "plan '%s' runs node '%s' with algorithm %d, but here it "
		               "has %d: profile and plan on this machine",
		               atm_plan_info_get(e->plan)->formulation, n->name, algo, n_algos);
	if (algo && (rc = e->b->iface->kernel_set_algo(e->b, e->kernels[k], algo)) < 0)
		return rc;
	return ATM_OK;
}

/* kernel_scratch -- node k's kernel's scratch against the plan's workspace for it, and counted
 * in the scratch outside the arena where its workspace is not in it */
static atm_status kernel_scratch(atm_exec *e, int32_t k)
{
	int64_t sb = e->b->iface->kernel_scratch_bytes(e->b, e->kernels[k]);
	int64_t ws = atm_plan_workspace(e->plan, k);
	if (ws > 0 && ws < sb)
		return atm_err(ATM_E_INPUT, "plan '%s' gives node '%s' a workspace of %lld bytes in "
		               "the fast arena, but its kernel needs %lld here: profile and plan on "
		               "this machine", atm_plan_info_get(e->plan)->formulation,
		               atm_graph_node(e->g, k)->name, (long long)ws, (long long)sb);
	if (ws <= 0 && sb > e->result.scratch_bytes)
		e->result.scratch_bytes = sb;
	return ATM_OK;
}

/* Nodes of one signature and algorithm share a kernel where the backend allows: a graph of a
 * million identical layers builds one kernel for them, not a million (oneDNN's primitives take
 * kilobytes each). An open-addressed table of the signatures' hashes finds the first node of
 * each, whose key it keeps (a graph has few distinct ones) to compare on a match. */
struct kernel_table {
	int32_t *slot; /* node + 1 of each signature's first node, 0 empty */
	uint64_t *hash;
	char **key;    /* that node's key (kernel_key) */
	size_t mask;
};

/* kernel_key -- node k's signature and algorithm, and its hash */
static atm_status kernel_key(const atm_exec *e, int32_t k, char *buf, size_t len, uint64_t *hash)
{
	atm_status rc = atm_node_signature(e->g, k, buf, len);
	if (rc < 0)
		return rc;
	size_t n = strlen(buf);
	snprintf(buf + n, len - n, "#%d", atm_plan_algo(e->plan, k));
	*hash = atm_fnv1a(ATM_FNV1A_INIT, buf, strlen(buf));
	return ATM_OK;
}

/* shared_kernel -- the earlier node whose kernel node k runs, or k (entered in t as the first
 * of its key) */
static atm_status shared_kernel(const atm_exec *e, struct kernel_table *t, int32_t k,
                                int32_t *owner)
{
	char key[ATM_SIGNATURE_MAX + 16];
	uint64_t h;
	atm_status rc = kernel_key(e, k, key, sizeof key, &h);
	if (rc < 0)
		return rc;
	for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
		if (!t->slot[i]) {
			if (!(t->key[i] = strdup(key)))
				return atm_err(ATM_E_NOMEM, "out of memory building kernels");
			t->slot[i] = k + 1;
			t->hash[i] = h;
			*owner = k;
			return ATM_OK;
		}
		if (t->hash[i] == h && !strcmp(key, t->key[i])) {
			*owner = t->slot[i] - 1;
			return ATM_OK;
		}
	}
}

/* build_kernels -- one kernel per node (or per signature, shared) and the scratch they share */
static atm_status build_kernels(atm_exec *e)
{
	int32_t nn = atm_graph_n_nodes(e->g);
	int max_args = 1;
	atm_status rc = ATM_OK;
	atm_backend_caps caps = {0};
	struct kernel_table t = {0};
	if (atm_backend_caps_get(e->opts.gpu.mode, &caps) < 0)
		atm_err_clear();
	e->kernels = calloc((size_t)(nn ? nn : 1), sizeof *e->kernels);
	e->kernel_owner = calloc((size_t)(nn ? nn : 1), sizeof *e->kernel_owner);
	if (caps.shared_kernels) {
		size_t cap = 16;
		while (cap < 2 * (size_t)nn)
			cap *= 2;
		t.slot = calloc(cap, sizeof *t.slot);
		t.hash = calloc(cap, sizeof *t.hash);
		t.key = calloc(cap, sizeof *t.key);
		t.mask = cap - 1;
	}
	if (!e->kernels || !e->kernel_owner ||
	    (caps.shared_kernels && (!t.slot || !t.hash || !t.key))) {
		rc = atm_err(ATM_E_NOMEM, "out of memory building kernels");
		goto done;
	}
	for (int32_t k = 0; k < nn; k++) {
		const atm_node *n = atm_graph_node(e->g, k);
		int32_t owner = k;
		/* a graph of millions of nodes takes seconds here: Ctrl-C ends it too */
		if (k && k % 4096 == 0 && e->opts.stop && *e->opts.stop) {
			rc = atm_err(ATM_E_INTERRUPTED, "interrupted building kernels (%d of %d)", k, nn);
			break;
		}
		if (caps.shared_kernels && (rc = shared_kernel(e, &t, k, &owner)) < 0)
			break;
		e->kernel_owner[k] = owner;
		if (owner != k)
			e->kernels[k] = e->kernels[owner];
		else if ((rc = build_kernel(e, k)) < 0)
			break;
		count_bf16(e, k);
		if ((rc = kernel_scratch(e, k)) < 0)
			break;
		if (n->n_in > max_args)
			max_args = n->n_in;
		if (n->n_out > max_args)
			max_args = n->n_out;
	}
done:
	for (size_t i = 0; t.key && i <= t.mask; i++)
		free(t.key[i]);
	free(t.slot);
	free(t.hash);
	free(t.key);
	if (rc < 0)
		return rc;
	e->in_ptrs = calloc((size_t)max_args, sizeof *e->in_ptrs);
	e->out_ptrs = calloc((size_t)max_args, sizeof *e->out_ptrs);
	if (!e->in_ptrs || !e->out_ptrs)
		return atm_err(ATM_E_NOMEM, "out of memory building kernels");
	return e->b->iface->scratch(e->b, e->result.scratch_bytes, &e->scratch);
}

/* setup_persistent -- allocate inputs, parameters and outputs where the plan
 * starts them, and give them their first values */
static atm_status setup_persistent(atm_exec *e)
{
	for (int32_t t = 0; t < atm_graph_n_tensors(e->g); t++) {
		const atm_tensor *x = atm_graph_tensor(e->g, t);
		if (atm_tensor_is_persistent(x) && x->bytes > e->host_bytes)
			e->host_bytes = x->bytes;
	}
	e->host = malloc((size_t)(e->host_bytes ? e->host_bytes : 64));
	if (!e->host)
		return atm_err(ATM_E_NOMEM, "out of memory setting up the step's tensors");
	for (int32_t i = 0; i < atm_schedule_n_setup(e->sched); i++) {
		const atm_event *ev = atm_schedule_setup(e->sched, i);
		atm_status rc = do_alloc(e, ev);
		if (rc < 0)
			return rc;
		void *data = ev->loc == ATM_LOC_FAST ? e->fast_ptr[ev->tensor] : e->slow_ptr[ev->tensor];
		const atm_tensor *x = atm_graph_tensor(e->g, ev->tensor);
		if (e->opts.whole && x->kind == ATM_KIND_INPUT && x->batched) {
			if ((rc = fill_shard(e->g, ev->tensor, e->host, &e->opts)) < 0)
				return rc;
		} else {
			fill(e->g, ev->tensor, e->host, &e->opts);
		}
		if ((rc = e->b->iface->set(e->b, data, e->host, x->bytes)) < 0)
			return atm_err_prefix(rc, "tensor '%s': ", x->name);
	}
	return e->b->iface->sync(e->b);
}

atm_status atm_exec_new(atm_exec **out, const atm_plan *p, const atm_exec_opts *o)
{
	const atm_graph *g = atm_plan_graph(p);
	int32_t nt = atm_graph_n_tensors(g), nn = atm_graph_n_nodes(g);
	atm_status rc;
	*out = NULL;
	atm_exec *e = calloc(1, sizeof *e);
	if (!e)
		return atm_err(ATM_E_NOMEM, "out of memory creating the executor");
	e->plan = p;
	e->g = g;
	if (o)
		e->opts = *o;
	if (e->opts.iters <= 0)
		e->opts.iters = 5;
	e->opts.warmup = e->opts.warmup < 0 ? 0 : (e->opts.warmup ? e->opts.warmup : 1);
	e->fast_ptr = calloc((size_t)(nt ? nt : 1), sizeof *e->fast_ptr);
	e->slow_ptr = calloc((size_t)(nt ? nt : 1), sizeof *e->slow_ptr);
	e->kernel_s = calloc((size_t)nn + 1, sizeof *e->kernel_s);
	e->step_kernel_s = calloc((size_t)nn + 1, sizeof *e->step_kernel_s);
	e->node_wait_s = calloc((size_t)nn + 1, sizeof *e->node_wait_s);
	e->best_kernel_s = calloc((size_t)nn + 1, sizeof *e->best_kernel_s);
	e->n_losses_cap = e->opts.iters + e->opts.warmup;
	e->losses = calloc((size_t)e->n_losses_cap, sizeof *e->losses);
	if (!e->fast_ptr || !e->slow_ptr || !e->kernel_s || !e->step_kernel_s || !e->best_kernel_s ||
	    !e->node_wait_s ||
	    !e->losses) {
		rc = atm_err(ATM_E_NOMEM, "out of memory creating the executor");
		goto fail;
	}
	if ((rc = atm_schedule_new(&e->sched, p)) < 0 || (rc = open_memory(e)) < 0 ||
	    (rc = build_kernels(e)) < 0 || (rc = setup_persistent(e)) < 0)
		goto fail;
	*out = e;
	return ATM_OK;
fail:
	atm_exec_destroy(e);
	return rc;
}

/* loss_now -- the loss output's value after a step */
static float loss_now(const atm_exec *e)
{
	for (int32_t t = 0; t < atm_graph_n_tensors(e->g); t++) {
		if (atm_graph_tensor(e->g, t)->kind != ATM_KIND_OUTPUT)
			continue;
		const float *v = e->fast_ptr[t] ? e->fast_ptr[t] : e->slow_ptr[t];
		float loss = NAN;
		if (v && e->b->iface->get(e->b, &loss, v, sizeof loss) < 0)
			return NAN;
		return loss;
	}
	return NAN;
}

atm_status atm_exec_read_tensor(const atm_exec *e, int32_t t, void *out)
{
	const atm_tensor *x = t >= 0 && t < atm_graph_n_tensors(e->g) ? atm_graph_tensor(e->g, t)
	                                                                : NULL;
	const void *b = x && atm_tensor_is_persistent(x)
	                    ? (e->fast_ptr[t] ? e->fast_ptr[t] : e->slow_ptr[t])
	                    : NULL;
	if (!b)
		return atm_err(ATM_E_USAGE, "atm_exec_read_tensor: tensor %d is not a persistent tensor "
		               "of the step", t);
	atm_status rc = e->b->iface->get(e->b, out, b, x->bytes);
	return rc < 0 ? atm_err_prefix(rc, "reading tensor '%s': ", x->name) : ATM_OK;
}

/* checksum -- FNV-1a over every parameter's bytes, in tensor order */
static atm_status checksum(const atm_exec *e, char out[17])
{
	uint64_t h = ATM_FNV1A_INIT;
	for (int32_t t = 0; t < atm_graph_n_tensors(e->g); t++) {
		const atm_tensor *x = atm_graph_tensor(e->g, t);
		if (x->kind != ATM_KIND_PARAM)
			continue;
		const void *b = e->fast_ptr[t] ? e->fast_ptr[t] : e->slow_ptr[t];
		if (!b)
			continue;
		atm_status rc = e->b->iface->get(e->b, e->host, b, x->bytes);
		if (rc < 0)
			return atm_err_prefix(rc, "reading parameter '%s': ", x->name);
		h = atm_fnv1a(h, e->host, (size_t)x->bytes);
	}
	snprintf(out, 17, "%016llx", (unsigned long long)h);
	return ATM_OK;
}

/* kernel_times -- this step's time of every kernel, from the marks around it, and of the
 * recomputations apart from them */
static void kernel_times(atm_exec *e)
{
	for (int32_t k = 0; k < atm_graph_n_nodes(e->g); k++) {
		double s = e->b->iface->elapsed(e->b, 2 * k, 2 * k + 1) - e->node_wait_s[k];
		e->step_kernel_s[k] = s > 0 ? s : 0;
	}
	e->step_recompute_s = 0;
	for (int32_t i = 0; i < atm_plan_n_recomputes(e->plan); i++)
		e->step_recompute_s += e->b->iface->elapsed(e->b, recompute_mark(e, i),
		                                            recompute_mark(e, i) + 1);
}

/* describe_result -- what ran where, for the results */
static void describe_result(atm_exec *e)
{
	atm_exec_result *r = &e->result;
	r->fast_tier = e->desc.fast;
	r->slow_tier = e->desc.slow;
	snprintf(r->backend, sizeof r->backend, "%s", e->desc.name);
	snprintf(r->device, sizeof r->device, "%s", e->desc.device);
	snprintf(r->versions, sizeof r->versions, "%s", e->desc.versions);
	r->simulated = e->desc.simulated;
	atm_profile_machine m;
	e->b->iface->machine(e->b, &m);
	r->n_threads = m.n_threads;
	r->twolm_bytes = e->twolm ? e->opts.twolm_bytes : 0;
	r->emulated = e->desc.slow.emulated;
	if (r->emulated) {
		snprintf(r->emulation, sizeof r->emulation, "%s%s", e->desc.slow.emulation,
		         e->twolm ? "+2lm" : "");
	}
}

/* begin_steps -- the measurement starts over: nothing measured, high-water marks reset */
static void begin_steps(atm_exec *e)
{
	atm_exec_result *r = &e->result;
	r->n_iters = 0;
	r->n_losses = 0;
	r->actual_runtime_s = INFINITY;
	r->mean_runtime_s = r->emulation_wait_s = r->move_wait_s = r->recompute_s = 0;
	r->allreduce_wait_s = 0;
	r->n_recomputes = 0;
	e->sum_s = e->emu_sum_s = e->wait_sum_s = 0;
	e->energy_sum_j = e->b->iface->energy ? 0 : -1;
	r->energy_per_step_j = -1;
	r->gpu_state = (atm_gpu_energy){0};
	for (int32_t k = 0; k < atm_graph_n_nodes(e->g); k++)
		e->kernel_s[k] = INFINITY;
	e->b->iface->reset_high_water(e->b);
}

/* keep_loss -- this step's loss after the others, the array grown when full */
static atm_status keep_loss(atm_exec *e)
{
	atm_exec_result *r = &e->result;
	if (r->n_losses == e->n_losses_cap) {
		int cap = e->n_losses_cap * 2;
		float *l = realloc(e->losses, (size_t)cap * sizeof *l);
		if (!l)
			return atm_err(ATM_E_NOMEM, "out of memory keeping the losses");
		e->losses = l;
		e->n_losses_cap = cap;
	}
	e->losses[r->n_losses++] = loss_now(e);
	r->losses = e->losses;
	return ATM_OK;
}

/* read_energy -- the backend's energy counter (and clocks); false, the message dropped, where it
 * cannot be read: the run goes on without energy */
static bool read_energy(atm_exec *e, bool clocks, atm_gpu_energy *en)
{
	if (e->b->iface->energy(e->b, clocks, en) == ATM_OK)
		return true;
	atm_err_clear();
	return false;
}

atm_status atm_exec_step(atm_exec *e, double *step_s)
{
	atm_exec_result *r = &e->result;
	int32_t nn = atm_graph_n_nodes(e->g);
	atm_status rc;
	*step_s = -1;
	if (!e->n_steps)
		begin_steps(e);
	double w0 = e->b->iface->waited_s(e->b), a0 = atm_bk_allreduce_waited_s();
	/* a GPU's energy counter around the step, its clocks after */
	atm_gpu_energy en0, en1;
	bool energy = e->energy_sum_j >= 0 && read_energy(e, false, &en0);
	double t0 = atm_now_s();
	rc = step(e);
	double dt = atm_now_s() - t0;
	energy = energy && rc == ATM_OK && read_energy(e, true, &en1);
	double ranks_wait_s = atm_bk_allreduce_waited_s() - a0;
	if (rc < 0)
		return rc;
	kernel_times(e);
	if ((rc = keep_loss(e)) < 0)
		return rc;
	*step_s = dt;
	if (++e->n_steps <= e->opts.warmup)
		return ATM_OK;
	r->n_iters++;
	e->sum_s += dt;
	/* a step whose counter could not be read leaves the energy unmeasured, never short */
	e->energy_sum_j = energy && e->energy_sum_j >= 0 ? e->energy_sum_j + en1.joules - en0.joules
	                                                 : -1;
	r->energy_per_step_j = e->energy_sum_j >= 0 ? e->energy_sum_j / r->n_iters : -1;
	if (energy)
		r->gpu_state = en1;
	e->emu_sum_s += e->b->iface->waited_s(e->b) - w0;
	e->wait_sum_s += e->move_wait_s;
	if (dt < r->actual_runtime_s) {
		r->actual_runtime_s = dt;
		memcpy(e->best_kernel_s, e->step_kernel_s, (size_t)nn * sizeof *e->best_kernel_s);
		r->recompute_s = e->step_recompute_s;
		r->allreduce_wait_s = ranks_wait_s;
	}
	r->n_recomputes = e->step_n_recomputes;
	r->twolm_step = e->step_twolm;
	for (int32_t k = 0; k < nn; k++)
		if (e->step_kernel_s[k] < e->kernel_s[k])
			e->kernel_s[k] = e->step_kernel_s[k];
	r->mean_runtime_s = e->sum_s / r->n_iters;
	r->emulation_wait_s = e->emu_sum_s / r->n_iters;
	r->move_wait_s = e->wait_sum_s / r->n_iters;
	r->kernel_s = e->kernel_s;
	r->step_kernel_s = e->best_kernel_s;
	return ATM_OK;
}

atm_status atm_exec_finish(atm_exec *e)
{
	atm_exec_result *r = &e->result;
	atm_status rc;
	if ((rc = checksum(e, r->weights_checksum)) < 0)
		return rc;
	r->moves = *atm_schedule_stats_get(e->sched);
	atm_pool_stats ps;
	e->b->iface->mem_stats(e->b, ATM_LOC_FAST, &ps);
	r->fast_high_water_bytes = ps.extent_bytes;
	r->fast_high_water_at[0] = '\0';
	if (e->hw_event)
		claim_where(e, e->hw_event, r->fast_high_water_at, sizeof r->fast_high_water_at);
	e->b->iface->mem_stats(e->b, ATM_LOC_SLOW, &ps);
	r->slow_high_water_bytes = ps.high_water_bytes;
	describe_result(e);
	return ATM_OK;
}

atm_status atm_exec_run(atm_exec *e)
{
	int total = e->opts.warmup + e->opts.iters;
	atm_status rc;
	e->n_steps = 0;
	for (int it = 0; it < total; it++) {
		double dt;
		if ((rc = atm_exec_step(e, &dt)) < 0)
			return rc;
		if (!e->opts.quiet)
			fprintf(stderr, "\r  step %d/%d%s: %.3f s, loss %.6g   ", it + 1, total,
			        it < e->opts.warmup ? " (warm-up)" : "", dt,
			        (double)e->losses[e->result.n_losses - 1]);
	}
	if (!e->opts.quiet)
		fprintf(stderr, "\n");
	return atm_exec_finish(e);
}

const atm_exec_result *atm_exec_result_get(const atm_exec *e)
{
	return &e->result;
}

/* atm_exec_slow_tier -- the slow tier the executor opened */
const atm_tier_desc *atm_exec_slow_tier(const atm_exec *e)
{
	return &e->desc.slow;
}

void atm_exec_destroy(atm_exec *e)
{
	if (!e)
		return;
	if (e->b) {
		e->b->iface->copy_drain(e->b);
		(void)e->b->iface->sync(e->b);
		if (e->kernels)
			for (int32_t k = 0; k < atm_graph_n_nodes(e->g); k++)
				if (e->kernels[k] && (!e->kernel_owner || e->kernel_owner[k] == k))
					e->b->iface->kernel_destroy(e->b, e->kernels[k]);
	}
	free(e->kernels);
	free(e->kernel_owner);
	free(e->in_ptrs);
	free(e->out_ptrs);
	/* the backend releases every live allocation */
	atm_backend_destroy(e->b);
	atm_twolm_destroy(e->twolm);
	atm_schedule_destroy(e->sched);
	free(e->host);
	free(e->fast_ptr);
	free(e->slow_ptr);
	free(e->kernel_s);
	free(e->step_kernel_s);
	free(e->node_wait_s);
	free(e->best_kernel_s);
	free(e->losses);
	free(e);
}
