/* exec.c -- the executor: performs a schedule's events with real memory, kernels and a mover thread */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atm_runtime.h"
#include "kernels.h"

/* One asynchronous move's state within a step. */
enum job_state { JOB_IDLE = 0, JOB_QUEUED, JOB_DONE };

struct job {
	void *dst;
	const void *src;
	int64_t bytes;
	atm_pool *dst_pool;
	bool to_slow;
	enum job_state state;
	atm_status rc;
	char msg[256];  /* the mover thread's message when rc < 0 (messages are per thread) */
};

/* The mover: a thread that copies queued moves in order while kernels run. */
struct mover {
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake, done;
	int32_t *queue; /* move indices, FIFO */
	int32_t head, tail, cap;
	bool quit;
};

struct atm_exec {
	const atm_plan *plan;
	const atm_graph *g;
	atm_exec_opts opts;
	atm_schedule *sched;
	atm_tier_topo *topo;
	atm_tier *fast, *slow;
	atm_pool *arena, *heap, *fast_heap;
	atm_emu *emu;
	atm_cache_model *twolm; /* emulated Memory Mode, NULL when off */
	atm_cpu *cpu;
	atm_kernel **kernels;
	void *scratch;
	void **fast_ptr, **slow_ptr; /* per tensor: its copies, NULL when absent */
	void **in_ptrs, **out_ptrs;  /* per kernel call, sized for the widest node */
	struct job *jobs;            /* per plan move */
	struct mover mover;
	double *kernel_s, *step_kernel_s;
	float *losses;
	double emu_s, move_wait_s;   /* this step, main thread */
	double mover_emu_s;          /* this step, mover thread (under the mover's lock) */
	atm_exec_result result;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- mover */

/* copy_move -- perform one move's copy and the wait that makes slow memory slow */
static atm_status copy_move(atm_exec *e, struct job *j, double *emu_s)
{
	atm_status rc = atm_pool_copy(j->dst_pool, j->dst, j->src, j->bytes);
	if (rc < 0 || !e->emu)
		return rc;
	double waited = 0;
	rc = atm_emu_wait(e->emu, j->to_slow ? 0 : j->bytes, j->to_slow ? j->bytes : 0, &waited);
	*emu_s += waited;
	return rc;
}

static void *mover_main(void *arg)
{
	atm_exec *e = arg;
	struct mover *mv = &e->mover;
	pthread_mutex_lock(&mv->lock);
	for (;;) {
		while (!mv->quit && mv->head == mv->tail)
			pthread_cond_wait(&mv->wake, &mv->lock);
		if (mv->quit)
			break;
		int32_t m = mv->queue[mv->head % mv->cap];
		pthread_mutex_unlock(&mv->lock);
		double waited = 0;
		atm_status rc = copy_move(e, &e->jobs[m], &waited);
		if (rc < 0)
			snprintf(e->jobs[m].msg, sizeof e->jobs[m].msg, "%s", atm_errmsg());
		pthread_mutex_lock(&mv->lock);
		mv->head++;
		e->jobs[m].rc = rc;
		e->jobs[m].state = JOB_DONE;
		e->mover_emu_s += waited;
		pthread_cond_broadcast(&mv->done);
	}
	pthread_mutex_unlock(&mv->lock);
	return NULL;
}

static atm_status mover_start(atm_exec *e)
{
	struct mover *mv = &e->mover;
	mv->cap = atm_plan_n_moves(e->plan) + 1;
	mv->queue = malloc((size_t)mv->cap * sizeof *mv->queue);
	if (!mv->queue)
		return atm_err(ATM_E_NOMEM, "out of memory starting the mover");
	pthread_mutex_init(&mv->lock, NULL);
	pthread_cond_init(&mv->wake, NULL);
	pthread_cond_init(&mv->done, NULL);
	if (pthread_create(&mv->thread, NULL, mover_main, e) != 0) {
		pthread_cond_destroy(&mv->done);
		pthread_cond_destroy(&mv->wake);
		pthread_mutex_destroy(&mv->lock);
		return atm_err(ATM_E_INTERNAL, "cannot start the mover thread");
	}
	mv->started = true;
	return ATM_OK;
}

static void mover_stop(atm_exec *e)
{
	struct mover *mv = &e->mover;
	if (mv->started) {
		pthread_mutex_lock(&mv->lock);
		mv->quit = true;
		pthread_cond_broadcast(&mv->wake);
		pthread_mutex_unlock(&mv->lock);
		pthread_join(mv->thread, NULL);
		pthread_cond_destroy(&mv->done);
		pthread_cond_destroy(&mv->wake);
		pthread_mutex_destroy(&mv->lock);
		mv->started = false;
	}
	free(mv->queue);
	mv->queue = NULL;
}

static void mover_push(atm_exec *e, int32_t m)
{
	struct mover *mv = &e->mover;
	pthread_mutex_lock(&mv->lock);
	e->jobs[m].state = JOB_QUEUED;
	mv->queue[mv->tail % mv->cap] = m;
	mv->tail++;
	pthread_cond_signal(&mv->wake);
	pthread_mutex_unlock(&mv->lock);
}

/* mover_wait -- block until move m is copied; its status */
static atm_status mover_wait(atm_exec *e, int32_t m)
{
	struct mover *mv = &e->mover;
	double t0 = now_s();
	pthread_mutex_lock(&mv->lock);
	while (e->jobs[m].state != JOB_DONE)
		pthread_cond_wait(&mv->done, &mv->lock);
	atm_status rc = e->jobs[m].rc;
	e->jobs[m].state = JOB_IDLE;
	pthread_mutex_unlock(&mv->lock);
	e->move_wait_s += now_s() - t0;
	return rc;
}

/* mover_drain -- wait for everything queued (after an error or an interrupt) */
static void mover_drain(atm_exec *e)
{
	for (int32_t m = 0; m < atm_plan_n_moves(e->plan); m++)
		if (e->jobs[m].state == JOB_QUEUED)
			(void)mover_wait(e, m);
}

/* ---------------------------------------------------------------- data */

/* splitmix64 -- the same stream on every machine, unlike rand() */
static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* uniform -- in [-1, 1) */
static float uniform(uint64_t *s)
{
	return (float)((double)(mix(s) >> 11) * 0x1p-53 * 2.0 - 1.0);
}

/* How a parameter is used decides how it starts: weights He-uniform,
 * biases and batch-norm shifts zero, batch-norm scales one. */
enum init { INIT_WEIGHT, INIT_ZERO, INIT_ONE, INIT_DATA, INIT_LABELS };

static enum init init_of(const atm_graph *g, int32_t t)
{
	const atm_tensor *x = atm_graph_tensor(g, t);
	if (x->kind == ATM_KIND_INPUT) {
		for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
			const atm_node *n = atm_graph_node(g, k);
			if ((n->op == ATM_OP_SOFTMAX_XENT_FWD || n->op == ATM_OP_SOFTMAX_XENT_BWD) &&
			    n->in[1] == t)
				return INIT_LABELS;
		}
		return INIT_DATA;
	}
	if (x->kind != ATM_KIND_PARAM)
		return INIT_ZERO;
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		const atm_node *n = atm_graph_node(g, k);
		for (int i = 0; i < n->n_in; i++) {
			if (n->in[i] != t)
				continue;
			if (n->op == ATM_OP_BN_FWD)
				return i == 1 ? INIT_ONE : INIT_ZERO;
			if (n->op == ATM_OP_CONV_FWD || n->op == ATM_OP_IP_FWD)
				return i == 1 ? INIT_WEIGHT : INIT_ZERO;
		}
	}
	return INIT_WEIGHT;
}

/* fill -- the starting bytes of persistent tensor t, the same for every plan */
static void fill(const atm_graph *g, int32_t t, float *data, uint64_t seed)
{
	const atm_tensor *x = atm_graph_tensor(g, t);
	uint64_t s = seed * 0x100000001b3ull + (uint64_t)t;
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
			data[r * cols + (int64_t)(mix(&s) % (uint64_t)cols)] = 1.0f;
		break;
	}
	case INIT_ONE:
		for (int64_t i = 0; i < n; i++)
			data[i] = 1.0f;
		break;
	default:
		memset(data, 0, (size_t)x->bytes);
		break;
	}
}

/* ---------------------------------------------------------------- events */

static atm_status do_alloc(atm_exec *e, const atm_event *ev)
{
	const atm_tensor *x = atm_graph_tensor(e->g, ev->tensor);
	atm_status rc;
	if (ev->loc == ATM_LOC_FAST)
		rc = atm_pool_alloc_at(e->arena, ev->offset, x->bytes, &e->fast_ptr[ev->tensor]);
	else
		rc = atm_pool_alloc(e->heap, x->bytes, &e->slow_ptr[ev->tensor]);
	return rc < 0 ? atm_err_prefix(rc, "tensor '%s': ", x->name) : ATM_OK;
}

static atm_status do_free(atm_exec *e, const atm_event *ev)
{
	if (e->twolm && ev->loc == ATM_LOC_SLOW)
		atm_cache_drop(e->twolm, ev->tensor);
	void **slot = ev->loc == ATM_LOC_FAST ? &e->fast_ptr[ev->tensor] : &e->slow_ptr[ev->tensor];
	atm_status rc = atm_pool_free(ev->loc == ATM_LOC_FAST ? e->arena : e->heap, *slot);
	*slot = NULL;
	return rc;
}

static atm_status do_kernel(atm_exec *e, const atm_event *ev)
{
	const atm_node *n = atm_graph_node(e->g, ev->node);
	int64_t slow_read = 0, slow_written = 0;
	double t0 = now_s();
	for (int i = 0; i < n->n_in; i++) {
		int32_t t = n->in[i];
		bool fast = ev->cfg[i] == ATM_LOC_FAST;
		e->in_ptrs[i] = fast ? e->fast_ptr[t] : e->slow_ptr[t];
		if (!fast) {
			slow_read += atm_graph_tensor(e->g, t)->bytes;
			if (i == 0 && atm_op_is_inplace(n->op))
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
	atm_status rc = atm_kernel_run(e->kernels[ev->node], e->in_ptrs, e->out_ptrs, e->scratch);
	if (rc < 0)
		return rc;
	if (e->twolm) {
		/* in Memory Mode slow bytes cost only when they miss the DRAM cache */
		atm_cache_traffic tr = {0};
		for (int i = 0; i < n->n_in; i++)
			if (ev->cfg[i] != ATM_LOC_FAST) {
				const atm_tensor *x = atm_graph_tensor(e->g, n->in[i]);
				atm_cache_access(e->twolm, x->id, x->bytes, false, &tr);
				if (i == 0 && atm_op_is_inplace(n->op))
					atm_cache_access(e->twolm, x->id, x->bytes, true, &tr);
			}
		for (int i = 0; i < n->n_out; i++)
			if (ev->cfg[n->n_in + i] != ATM_LOC_FAST) {
				const atm_tensor *x = atm_graph_tensor(e->g, n->out[i]);
				atm_cache_access(e->twolm, x->id, x->bytes, true, &tr);
			}
		slow_read = tr.read_bytes;
		slow_written = tr.written_bytes;
	}
	if (e->emu && (slow_read || slow_written)) {
		double waited = 0;
		rc = atm_emu_wait(e->emu, slow_read, slow_written, &waited);
		e->emu_s += waited;
		if (rc < 0)
			return rc;
	}
	e->step_kernel_s[ev->node] = now_s() - t0;
	return ATM_OK;
}

static atm_status do_move_start(atm_exec *e, const atm_event *ev)
{
	const atm_move *m = atm_plan_move(e->plan, ev->move);
	struct job *j = &e->jobs[ev->move];
	bool to_slow = m->to == ATM_LOC_SLOW;
	j->bytes = atm_graph_tensor(e->g, ev->tensor)->bytes;
	j->src = to_slow ? e->fast_ptr[ev->tensor] : e->slow_ptr[ev->tensor];
	j->dst = to_slow ? e->slow_ptr[ev->tensor] : e->fast_ptr[ev->tensor];
	j->dst_pool = to_slow ? e->heap : e->arena;
	j->to_slow = to_slow;
	j->rc = ATM_OK;
	if (m->async) {
		mover_push(e, ev->move);
		return ATM_OK;
	}
	j->state = JOB_IDLE;
	return copy_move(e, j, &e->emu_s);
}

static atm_status do_move_wait(atm_exec *e, const atm_event *ev)
{
	if (!atm_plan_move(e->plan, ev->move)->async)
		return ATM_OK;
	atm_status rc = mover_wait(e, ev->move);
	return rc < 0 ? atm_err(rc, "move %d: %s", ev->move, e->jobs[ev->move].msg) : ATM_OK;
}

/* step -- one training step: every event of the schedule in order */
static atm_status step(atm_exec *e)
{
	atm_status rc = ATM_OK;
	e->emu_s = e->move_wait_s = 0;
	pthread_mutex_lock(&e->mover.lock);
	e->mover_emu_s = 0;
	pthread_mutex_unlock(&e->mover.lock);
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
		}
	}
	if (rc < 0) {
		mover_drain(e);
		/* give back what the broken step holds so the pools stay consistent */
		for (int32_t t = 0; t < atm_graph_n_tensors(e->g); t++) {
			if (atm_tensor_is_persistent(atm_graph_tensor(e->g, t)))
				continue;
			if (e->fast_ptr[t])
				atm_pool_free(e->arena, e->fast_ptr[t]);
			if (e->slow_ptr[t])
				atm_pool_free(e->heap, e->slow_ptr[t]);
			e->fast_ptr[t] = e->slow_ptr[t] = NULL;
		}
	}
	pthread_mutex_lock(&e->mover.lock);
	e->emu_s += e->mover_emu_s;
	pthread_mutex_unlock(&e->mover.lock);
	return rc;
}

/* ---------------------------------------------------------------- set-up */

/* open_memory -- tiers, pools and emulation for the schedule */
static atm_status open_memory(atm_exec *e)
{
	const atm_schedule_stats *st = atm_schedule_stats_get(e->sched);
	int64_t limit = atm_plan_info_get(e->plan)->fast_limit_bytes;
	int64_t arena = limit ? limit : st->fast_arena_bytes;
	atm_status rc;
	if ((rc = atm_tier_topo_new(&e->topo)) < 0 ||
	    (rc = atm_tier_open_fast(&e->fast, e->topo, &e->opts.tiers)) < 0 ||
	    (rc = atm_tier_open_slow(&e->slow, e->topo, &e->opts.tiers)) < 0)
		return rc;
	if ((rc = atm_pool_arena_new(&e->arena, e->fast, arena ? arena : 64)) < 0 ||
	    (rc = atm_pool_heap_new(&e->heap, e->slow, 0)) < 0 ||
	    (rc = atm_pool_heap_new(&e->fast_heap, e->fast, 0)) < 0)
		return rc;
	if (e->opts.twolm_bytes > 0) {
		if (!e->opts.emulate)
			return atm_err(ATM_E_USAGE, "emulating 2LM needs an emulated slow tier (--emulate) "
			               "to know what a cache miss costs");
		if (st->fast_peak_bytes > 0)
			return atm_err(ATM_E_USAGE, "2LM runs an all-slow plan (the hardware decides what is "
			               "in fast memory), but plan '%s' puts %lld bytes in fast memory",
			               atm_plan_info_get(e->plan)->formulation,
			               (long long)st->fast_peak_bytes);
		if ((rc = atm_cache_model_new(&e->twolm, e->opts.twolm_bytes,
		                              atm_graph_n_tensors(e->g))) < 0)
			return rc;
	}
	if (e->opts.emulate) {
		atm_emu_spec spec;
		if ((rc = atm_emu_spec_resolve(e->opts.emulate, &spec)) < 0 ||
		    (rc = atm_emu_new(&e->emu, &spec, e->topo, spec.fast_gbps)) < 0 ||
		    (rc = atm_tier_set_emulation(e->slow, &spec)) < 0)
			return rc;
	}
	return ATM_OK;
}

/* build_kernels -- one kernel per node and the scratch they share */
static atm_status build_kernels(atm_exec *e)
{
	int32_t nn = atm_graph_n_nodes(e->g);
	int max_args = 1;
	atm_status rc;
	e->kernels = calloc((size_t)(nn ? nn : 1), sizeof *e->kernels);
	if (!e->kernels)
		return atm_err(ATM_E_NOMEM, "out of memory building kernels");
	if ((rc = atm_cpu_new(&e->cpu)) < 0)
		return rc;
	for (int32_t k = 0; k < nn; k++) {
		const atm_node *n = atm_graph_node(e->g, k);
		if ((rc = atm_kernel_new(&e->kernels[k], e->cpu, e->g, k)) < 0)
			return rc;
		if (atm_kernel_scratch_bytes(e->kernels[k]) > e->result.scratch_bytes)
			e->result.scratch_bytes = atm_kernel_scratch_bytes(e->kernels[k]);
		if (n->n_in > max_args)
			max_args = n->n_in;
		if (n->n_out > max_args)
			max_args = n->n_out;
	}
	e->in_ptrs = calloc((size_t)max_args, sizeof *e->in_ptrs);
	e->out_ptrs = calloc((size_t)max_args, sizeof *e->out_ptrs);
	if (!e->in_ptrs || !e->out_ptrs)
		return atm_err(ATM_E_NOMEM, "out of memory building kernels");
	if (e->result.scratch_bytes &&
	    (rc = atm_pool_alloc(e->fast_heap, e->result.scratch_bytes, &e->scratch)) < 0)
		return atm_err_prefix(rc, "kernel scratch: ");
	return ATM_OK;
}

/* setup_persistent -- allocate inputs, parameters and outputs where the plan
 * starts them, and give them their first values */
static atm_status setup_persistent(atm_exec *e)
{
	for (int32_t i = 0; i < atm_schedule_n_setup(e->sched); i++) {
		const atm_event *ev = atm_schedule_setup(e->sched, i);
		atm_status rc = do_alloc(e, ev);
		if (rc < 0)
			return rc;
		void *data = ev->loc == ATM_LOC_FAST ? e->fast_ptr[ev->tensor] : e->slow_ptr[ev->tensor];
		fill(e->g, ev->tensor, data, e->opts.seed);
	}
	return ATM_OK;
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
	e->jobs = calloc((size_t)atm_plan_n_moves(p) + 1, sizeof *e->jobs);
	e->kernel_s = calloc((size_t)nn + 1, sizeof *e->kernel_s);
	e->step_kernel_s = calloc((size_t)nn + 1, sizeof *e->step_kernel_s);
	e->losses = calloc((size_t)(e->opts.iters + e->opts.warmup), sizeof *e->losses);
	if (!e->fast_ptr || !e->slow_ptr || !e->jobs || !e->kernel_s || !e->step_kernel_s ||
	    !e->losses) {
		rc = atm_err(ATM_E_NOMEM, "out of memory creating the executor");
		goto fail;
	}
	if ((rc = atm_schedule_new(&e->sched, p)) < 0 || (rc = open_memory(e)) < 0 ||
	    (rc = build_kernels(e)) < 0 || (rc = setup_persistent(e)) < 0 ||
	    (rc = mover_start(e)) < 0)
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
		return v ? v[0] : NAN;
	}
	return NAN;
}

/* checksum -- FNV-1a over every parameter's bytes, in tensor order */
static void checksum(const atm_exec *e, char out[17])
{
	uint64_t h = 1469598103934665603ull;
	for (int32_t t = 0; t < atm_graph_n_tensors(e->g); t++) {
		const atm_tensor *x = atm_graph_tensor(e->g, t);
		if (x->kind != ATM_KIND_PARAM)
			continue;
		const unsigned char *b = e->fast_ptr[t] ? e->fast_ptr[t] : e->slow_ptr[t];
		for (int64_t i = 0; b && i < x->bytes; i++)
			h = (h ^ b[i]) * 1099511628211ull;
	}
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

atm_status atm_exec_run(atm_exec *e)
{
	atm_exec_result *r = &e->result;
	int32_t nn = atm_graph_n_nodes(e->g);
	int total = e->opts.warmup + e->opts.iters;
	double sum = 0, emu_sum = 0, wait_sum = 0;
	r->n_iters = 0;
	r->n_losses = 0;
	r->actual_runtime_s = INFINITY;
	for (int32_t k = 0; k < nn; k++)
		e->kernel_s[k] = INFINITY;
	atm_pool_reset_high_water(e->arena);
	atm_pool_reset_high_water(e->heap);
	for (int it = 0; it < total; it++) {
		double t0 = now_s();
		atm_status rc = step(e);
		double dt = now_s() - t0;
		if (rc < 0)
			return rc;
		e->losses[r->n_losses++] = loss_now(e);
		if (!e->opts.quiet)
			fprintf(stderr, "\r  step %d/%d%s: %.3f s, loss %.6g   ", it + 1, total,
			        it < e->opts.warmup ? " (warm-up)" : "", dt, (double)loss_now(e));
		if (it < e->opts.warmup)
			continue;
		r->n_iters++;
		sum += dt;
		emu_sum += e->emu_s;
		wait_sum += e->move_wait_s;
		if (dt < r->actual_runtime_s)
			r->actual_runtime_s = dt;
		for (int32_t k = 0; k < nn; k++)
			if (e->step_kernel_s[k] < e->kernel_s[k])
				e->kernel_s[k] = e->step_kernel_s[k];
	}
	if (!e->opts.quiet)
		fprintf(stderr, "\n");
	r->mean_runtime_s = r->n_iters ? sum / r->n_iters : 0;
	r->emulation_wait_s = r->n_iters ? emu_sum / r->n_iters : 0;
	r->move_wait_s = r->n_iters ? wait_sum / r->n_iters : 0;
	r->losses = e->losses;
	r->kernel_s = e->kernel_s;
	checksum(e, r->weights_checksum);
	r->moves = *atm_schedule_stats_get(e->sched);
	atm_pool_stats ps;
	atm_pool_get_stats(e->arena, &ps);
	r->fast_high_water_bytes = ps.extent_bytes;
	atm_pool_get_stats(e->heap, &ps);
	r->slow_high_water_bytes = ps.high_water_bytes;
	r->fast_tier = *atm_tier_describe(e->fast);
	r->slow_tier = *atm_tier_describe(e->slow);
	r->emulated = e->emu != NULL;
	r->twolm_bytes = e->twolm ? e->opts.twolm_bytes : 0;
	if (e->emu) {
		snprintf(r->emulation, sizeof r->emulation, "%s%s", atm_emu_get_spec(e->emu)->name,
		         e->twolm ? "+2lm" : "");
		r->emulation_fast_gbps = atm_emu_fast_gbps(e->emu);
	}
	return ATM_OK;
}

const atm_exec_result *atm_exec_result_get(const atm_exec *e)
{
	return &e->result;
}

void atm_exec_destroy(atm_exec *e)
{
	if (!e)
		return;
	mover_stop(e);
	if (e->kernels)
		for (int32_t k = 0; k < atm_graph_n_nodes(e->g); k++)
			atm_kernel_destroy(e->kernels[k]);
	free(e->kernels);
	atm_cpu_destroy(e->cpu);
	free(e->in_ptrs);
	free(e->out_ptrs);
	/* pools release every live allocation */
	atm_pool_destroy(e->fast_heap);
	atm_pool_destroy(e->heap);
	atm_pool_destroy(e->arena);
	atm_emu_destroy(e->emu);
	atm_cache_model_destroy(e->twolm);
	atm_tier_destroy(e->slow);
	atm_tier_destroy(e->fast);
	atm_tier_topo_destroy(e->topo);
	atm_schedule_destroy(e->sched);
	free(e->fast_ptr);
	free(e->slow_ptr);
	free(e->jobs);
	free(e->kernel_s);
	free(e->step_kernel_s);
	free(e->losses);
	free(e);
}
