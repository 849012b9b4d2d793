/* backend_cpu.c -- the CPU backend: oneDNN kernels, memory tiers and pools, the mover thread, tier emulation; its parts the simulated GPU shares */
#include <dnnl.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_cpu.h"

static struct cpu_ctx *ctx_of(const atm_backend *b)
{
	return b->ctx;
}

/* ---------------------------------------------------------------- copies */

/* pool_of -- the pool a copy of loc lives in */
static atm_pool *pool_of(struct cpu_ctx *c, unsigned loc)
{
	return loc == ATM_LOC_FAST ? c->arena : c->heap;
}

/* copy_now -- one copy and the wait that makes slow memory slow */
static atm_status copy_now(struct cpu_ctx *c, unsigned to, void *dst, const void *src,
                           int64_t bytes)
{
	atm_status rc = atm_pool_copy(pool_of(c, to), dst, src, bytes);
	if (rc < 0 || !c->emu)
		return rc;
	bool to_slow = to == ATM_LOC_SLOW;
	return atm_emu_wait(c->emu, to_slow ? 0 : bytes, to_slow ? bytes : 0, NULL);
}

static void *mover_main(void *arg)
{
	struct cpu_ctx *c = arg;
	struct cpu_mover *mv = &c->mover;
	pthread_mutex_lock(&mv->lock);
	for (;;) {
		while (!mv->quit && mv->head == mv->tail)
			pthread_cond_wait(&mv->wake, &mv->lock);
		if (mv->quit)
			break;
		struct cpu_job *j = &mv->jobs[mv->queue[mv->head % mv->cap]];
		pthread_mutex_unlock(&mv->lock);
		atm_status rc = copy_now(c, j->to, j->dst, j->src, j->bytes);
		if (rc < 0)
			snprintf(j->msg, sizeof j->msg, "%s", atm_errmsg());
		pthread_mutex_lock(&mv->lock);
		mv->head++;
		j->rc = rc;
		j->state = JOB_DONE;
		pthread_cond_broadcast(&mv->done);
	}
	pthread_mutex_unlock(&mv->lock);
	return NULL;
}

static atm_status mover_start(struct cpu_ctx *c)
{
	struct cpu_mover *mv = &c->mover;
	pthread_mutex_init(&mv->lock, NULL);
	pthread_cond_init(&mv->wake, NULL);
	pthread_cond_init(&mv->done, NULL);
	if (pthread_create(&mv->thread, NULL, mover_main, c) != 0) {
		pthread_cond_destroy(&mv->done);
		pthread_cond_destroy(&mv->wake);
		pthread_mutex_destroy(&mv->lock);
		return atm_err(ATM_E_INTERNAL, "cannot start the mover thread");
	}
	mv->started = true;
	return ATM_OK;
}

static void mover_stop(struct cpu_ctx *c)
{
	struct cpu_mover *mv = &c->mover;
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
	free(mv->jobs);
	mv->queue = NULL;
	mv->jobs = NULL;
}

atm_status atm_cpu_bk_copy(atm_backend *b, unsigned to, void *dst, const void *src, int64_t bytes)
{
	return copy_now(ctx_of(b), to, dst, src, bytes);
}

atm_status atm_cpu_bk_reserve(atm_backend *b, int32_t n_copies, int32_t n_marks)
{
	struct cpu_ctx *c = ctx_of(b);
	struct cpu_mover *mv = &c->mover;
	if (n_copies > mv->n_jobs) {
		/* the mover is idle between steps: no job is queued while this grows */
		struct cpu_job *jobs = calloc((size_t)n_copies, sizeof *jobs);
		int32_t *queue = malloc(((size_t)n_copies + 1) * sizeof *queue);
		if (!jobs || !queue) {
			free(jobs);
			free(queue);
			return atm_err(ATM_E_NOMEM, "out of memory starting the mover");
		}
		pthread_mutex_lock(&mv->lock);
		free(mv->jobs);
		free(mv->queue);
		mv->jobs = jobs;
		mv->queue = queue;
		mv->n_jobs = n_copies;
		mv->cap = n_copies + 1;
		mv->head = mv->tail = 0;
		pthread_mutex_unlock(&mv->lock);
	}
	if (n_marks > c->n_marks) {
		double *m = realloc(c->marks, (size_t)n_marks * sizeof *m);
		if (!m)
			return atm_err(ATM_E_NOMEM, "out of memory reserving timing marks");
		c->marks = m;
		c->n_marks = n_marks;
	}
	return ATM_OK;
}

atm_status atm_cpu_bk_copy_start(atm_backend *b, int32_t id, unsigned to, void *dst,
                                 const void *src, int64_t bytes)
{
	struct cpu_mover *mv = &ctx_of(b)->mover;
	if (id < 0 || id >= mv->n_jobs)
		return atm_err(ATM_E_INTERNAL, "copy %d was not reserved (%d are)", id, mv->n_jobs);
	pthread_mutex_lock(&mv->lock);
	struct cpu_job *j = &mv->jobs[id];
	*j = (struct cpu_job){.dst = dst, .src = src, .bytes = bytes, .to = to, .state = JOB_QUEUED};
	mv->queue[mv->tail % mv->cap] = id;
	mv->tail++;
	pthread_cond_signal(&mv->wake);
	pthread_mutex_unlock(&mv->lock);
	return ATM_OK;
}

atm_status atm_cpu_bk_copy_wait(atm_backend *b, int32_t id)
{
	struct cpu_mover *mv = &ctx_of(b)->mover;
	if (id < 0 || id >= mv->n_jobs)
		return atm_err(ATM_E_INTERNAL, "copy %d was not reserved (%d are)", id, mv->n_jobs);
	pthread_mutex_lock(&mv->lock);
	struct cpu_job *j = &mv->jobs[id];
	while (j->state == JOB_QUEUED)
		pthread_cond_wait(&mv->done, &mv->lock);
	atm_status rc = j->state == JOB_DONE ? j->rc : ATM_OK;
	j->state = JOB_IDLE;
	pthread_mutex_unlock(&mv->lock);
	return rc < 0 ? atm_err(rc, "%s", j->msg) : ATM_OK;
}

void atm_cpu_bk_copy_drain(atm_backend *b)
{
	struct cpu_mover *mv = &ctx_of(b)->mover;
	for (int32_t id = 0; id < mv->n_jobs; id++)
		if (mv->jobs[id].state != JOB_IDLE)
			(void)atm_cpu_bk_copy_wait(b, id);
}

atm_status atm_cpu_bk_sync(atm_backend *b)
{
	(void)b; /* kernels and synchronous copies are done when they return */
	return ATM_OK;
}

/* ---------------------------------------------------------------- memory */

atm_status atm_cpu_bk_arena_new(atm_backend *b, int64_t bytes)
{
	struct cpu_ctx *c = ctx_of(b);
	atm_pool_destroy(c->arena);
	c->arena = NULL;
	return atm_pool_arena_new(&c->arena, c->fast, bytes > 0 ? bytes : ATM_ARENA_ALIGN);
}

atm_status atm_cpu_bk_alloc(atm_backend *b, unsigned loc, int64_t offset, int64_t bytes, void **ptr)
{
	struct cpu_ctx *c = ctx_of(b);
	if (loc == ATM_LOC_FAST)
		return atm_pool_alloc_at(c->arena, offset, bytes, ptr);
	return atm_pool_alloc(c->heap, bytes, ptr);
}

atm_status atm_cpu_bk_free(atm_backend *b, unsigned loc, void *ptr)
{
	return atm_pool_free(pool_of(ctx_of(b), loc), ptr);
}

atm_status atm_cpu_bk_scratch(atm_backend *b, int64_t bytes, void **ptr)
{
	struct cpu_ctx *c = ctx_of(b);
	atm_pool_free(c->fast_heap, c->scratch);
	c->scratch = NULL;
	*ptr = NULL;
	if (bytes <= 0)
		return ATM_OK;
	atm_status rc = atm_pool_alloc(c->fast_heap, bytes, &c->scratch);
	if (rc < 0)
		return atm_err_prefix(rc, "kernel scratch: ");
	*ptr = c->scratch;
	return ATM_OK;
}

atm_status atm_cpu_bk_set(atm_backend *b, void *dst, const void *host_src, int64_t bytes)
{
	(void)b;
	memcpy(dst, host_src, (size_t)bytes);
	return ATM_OK;
}

atm_status atm_cpu_bk_get(atm_backend *b, void *host_dst, const void *src, int64_t bytes)
{
	(void)b;
	memcpy(host_dst, src, (size_t)bytes);
	return ATM_OK;
}

void atm_cpu_bk_mem_stats(const atm_backend *b, unsigned loc, atm_pool_stats *s)
{
	struct cpu_ctx *c = ctx_of(b);
	atm_pool *p = pool_of(c, loc);
	if (p)
		atm_pool_get_stats(p, s);
	else
		memset(s, 0, sizeof *s);
}

void atm_cpu_bk_reset_high_water(atm_backend *b)
{
	struct cpu_ctx *c = ctx_of(b);
	if (c->arena)
		atm_pool_reset_high_water(c->arena);
	atm_pool_reset_high_water(c->heap);
}

/* ---------------------------------------------------------------- kernels */

atm_status atm_cpu_bk_kernel_new(atm_backend *b, const atm_graph *g, int32_t node,
                                 atm_bk_kernel **k)
{
	return atm_kernel_new((atm_kernel **)k, ctx_of(b)->cpu, g, node);
}

void atm_cpu_bk_kernel_destroy(atm_backend *b, atm_bk_kernel *k)
{
	(void)b;
	atm_kernel_destroy((atm_kernel *)k);
}

int64_t atm_cpu_bk_kernel_scratch_bytes(const atm_backend *b, const atm_bk_kernel *k)
{
	(void)b;
	return atm_kernel_scratch_bytes((const atm_kernel *)k);
}

int atm_cpu_bk_kernel_n_algos(const atm_backend *b, const atm_bk_kernel *k)
{
	(void)b;
	(void)k;
	return 1; /* oneDNN picks its implementation itself */
}

bool atm_cpu_bk_kernel_widened(const atm_backend *b, const atm_bk_kernel *k)
{
	(void)b;
	return atm_kernel_widened((const atm_kernel *)k);
}

atm_status atm_cpu_bk_kernel_set_algo(atm_backend *b, atm_bk_kernel *k, int algo)
{
	(void)b;
	(void)k;
	return algo == 0 ? ATM_OK
	                 : atm_err(ATM_E_USAGE, "algorithm %d: CPU kernels have one (0)", algo);
}

atm_status atm_cpu_bk_kernel_run(atm_backend *b, atm_bk_kernel *k, void *const *in,
                                 void *const *out, void *scratch)
{
	(void)b;
	return atm_kernel_run((atm_kernel *)k, in, out, scratch);
}

atm_status atm_cpu_bk_emulate(atm_backend *b, int64_t read_bytes, int64_t written_bytes,
                              const atm_twolm_traffic *twolm, double *waited_s)
{
	struct cpu_ctx *c = ctx_of(b);
	*waited_s = 0;
	if (!c->emu)
		return ATM_OK;
	if (twolm)
		return atm_emu_wait_2lm(c->emu, twolm, waited_s);
	if (!read_bytes && !written_bytes)
		return ATM_OK;
	return atm_emu_wait(c->emu, read_bytes, written_bytes, waited_s);
}

/* ---------------------------------------------------------------- timing and description */

atm_status atm_cpu_bk_mark(atm_backend *b, int32_t slot)
{
	struct cpu_ctx *c = ctx_of(b);
	if (slot < 0 || slot >= c->n_marks)
		return atm_err(ATM_E_INTERNAL, "timing mark %d was not reserved (%d are)", slot,
		               c->n_marks);
	c->marks[slot] = atm_now_s();
	return ATM_OK;
}

double atm_cpu_bk_elapsed(atm_backend *b, int32_t from, int32_t to)
{
	struct cpu_ctx *c = ctx_of(b);
	if (from < 0 || to < 0 || from >= c->n_marks || to >= c->n_marks)
		return NAN;
	return c->marks[to] - c->marks[from];
}

double atm_cpu_bk_waited_s(const atm_backend *b)
{
	struct cpu_ctx *c = ctx_of(b);
	return c->emu ? atm_emu_total_waited_s(c->emu) : 0;
}

/* tier_key -- "dram:0", "pmem-dir": what kind of memory, and which node */
static void tier_key(const atm_tier *t, char *buf, size_t len)
{
	const atm_tier_desc *d = atm_tier_describe(t);
	if (d->numa_node >= 0)
		snprintf(buf, len, "%s:%d", atm_tier_kind_name(d->kind), d->numa_node);
	else
		snprintf(buf, len, "%s%s", atm_tier_kind_name(d->kind), d->dax ? "-dax" : "");
}

/* emulation_key -- an absolute preset's name ("optane"), or a spec's name, its scale when
 * proportional and a hash of its figures ("optane x0.622@1a2b3c4d", "mine@1a2b3c4d"): two
 * scales, or two spec files of one name but other bandwidths, must not share timings */
static void emulation_key(const atm_emu_spec *spec, char *buf, size_t len)
{
	atm_emu_spec preset;
	if (atm_emu_preset(spec->name, &preset) == ATM_OK && preset.read_gbps == spec->read_gbps &&
	    preset.write_gbps == spec->write_gbps && preset.fast_gbps == spec->fast_gbps) {
		snprintf(buf, len, "%s", spec->name);
		return;
	}
	atm_err_clear(); /* not a preset: no error */
	const double figures[3] = {spec->read_gbps, spec->write_gbps, spec->fast_gbps};
	uint64_t h = atm_fnv1a(ATM_FNV1A_INIT, figures, sizeof figures);
	char scale[16] = "";
	if (!spec->absolute && spec->scale > 0)
		snprintf(scale, sizeof scale, " x%.3g", spec->scale);
	snprintf(buf, len, "%.*s%s@%08x", (int)(len > 10 + strlen(scale) ? len - 10 - strlen(scale) : 0),
	         spec->name, scale, (unsigned)(h ^ (h >> 32)));
}

/* atm_cpu_bk_machine -- what makes these timings comparable. The thread count is
 * OpenMP's, which oneDNN (built on libgomp) uses: OMP_NUM_THREADS when set,
 * else the CPUs this process may run on. */
void atm_cpu_bk_machine(const atm_backend *b, atm_profile_machine *m)
{
	struct cpu_ctx *c = ctx_of(b);
	const dnnl_version_t *v = dnnl_version();
	memset(m, 0, sizeof *m);
	atm_cpu_model(m->cpu, sizeof m->cpu);
	m->n_threads = omp_get_max_threads();
	snprintf(m->backend, sizeof m->backend, "cpu-onednn-%d.%d.%d", v->major, v->minor, v->patch);
	tier_key(c->fast, m->fast_tier, sizeof m->fast_tier);
	if (c->slow)
		tier_key(c->slow, m->slow_tier, sizeof m->slow_tier);
	if (c->emu)
		emulation_key(atm_emu_get_spec(c->emu), m->emulation, sizeof m->emulation);
}

void atm_cpu_bk_describe(const atm_backend *b, atm_backend_desc *d)
{
	struct cpu_ctx *c = ctx_of(b);
	const dnnl_version_t *v = dnnl_version();
	memset(d, 0, sizeof *d);
	snprintf(d->name, sizeof d->name, "cpu");
	atm_cpu_model(d->device, sizeof d->device);
	snprintf(d->versions, sizeof d->versions, "onednn-%d.%d.%d", v->major, v->minor, v->patch);
	d->fast = *atm_tier_describe(c->fast);
	if (c->slow)
		d->slow = *atm_tier_describe(c->slow);
}

/* ---------------------------------------------------------------- life */

void atm_cpu_bk_destroy(atm_backend *b)
{
	struct cpu_ctx *c = ctx_of(b);
	if (c) {
		mover_stop(c);
		atm_cpu_destroy(c->cpu);
		/* pools release every live allocation */
		atm_pool_destroy(c->fast_heap);
		atm_pool_destroy(c->heap);
		atm_pool_destroy(c->arena);
		atm_emu_destroy(c->emu);
		atm_tier_destroy(c->slow);
		atm_tier_destroy(c->fast);
		atm_tier_topo_destroy(c->topo);
		free(c->marks);
		free(c);
	}
	free(b);
}

atm_status atm_cpu_bk_new(atm_backend **out, const atm_backend_i *iface,
                          const atm_backend_opts *o)
{
	atm_status rc;
	*out = NULL;
	atm_backend *b = calloc(1, sizeof *b);
	struct cpu_ctx *c = calloc(1, sizeof *c);
	if (!b || !c) {
		free(b);
		free(c);
		return atm_err(ATM_E_NOMEM, "out of memory opening the CPU backend");
	}
	b->iface = iface;
	b->ctx = c;
	c->o = *o;
	if ((rc = atm_tier_topo_new(&c->topo)) < 0 ||
	    (rc = atm_tier_open_fast(&c->fast, c->topo, &o->tiers)) < 0 ||
	    (rc = atm_pool_heap_new(&c->fast_heap, c->fast, 0)) < 0) {
		atm_cpu_bk_destroy(b);
		return rc;
	}
	*out = b;
	return ATM_OK;
}

atm_status atm_cpu_bk_start(atm_backend *b, atm_status rc, atm_backend **out)
{
	struct cpu_ctx *c = ctx_of(b);
	if (rc >= 0 && c->emu)
		atm_emu_set_stop(c->emu, c->o.stop);
	if (rc >= 0 && (rc = atm_cpu_new(&c->cpu)) >= 0 && (rc = mover_start(c)) >= 0) {
		*out = b;
		return ATM_OK;
	}
	atm_cpu_bk_destroy(b);
	return rc;
}

/* ---------------------------------------------------------------- the CPU backend */

static const atm_backend_i cpu_iface = {
	ATM_CPU_BK_IFACE,
	.describe = atm_cpu_bk_describe,
	.machine = atm_cpu_bk_machine,
	.arena_new = atm_cpu_bk_arena_new,
};

/* atm_openmp_passive -- see atm_runtime.h */
void atm_openmp_passive(char **argv)
{
	if (!getenv("OMP_WAIT_POLICY") && setenv("OMP_WAIT_POLICY", "passive", 1) == 0)
		execv("/proc/self/exe", argv); /* on failure carry on, spinning */
}

/* atm_backend_cpu_new -- tiers, pools and emulation as o says, a oneDNN engine, the mover */
atm_status atm_backend_cpu_new(atm_backend **out, const atm_backend_opts *o)
{
	atm_backend *b = NULL;
	atm_status rc;
	*out = NULL;
	if ((rc = atm_cpu_bk_new(&b, &cpu_iface, o)) < 0)
		return rc;
	struct cpu_ctx *c = ctx_of(b);
	/* an emulated tier's default folder is one the disk's writeback stays out of */
	atm_tier_opts to = o->tiers;
	to.emulated = o->emulate != NULL;
	if ((rc = atm_tier_open_slow(&c->slow, c->topo, &to)) >= 0)
		rc = atm_pool_heap_new(&c->heap, c->slow, 0);
	if (rc >= 0 && o->emulate) {
		atm_emu_spec spec;
		if ((rc = atm_emu_spec_resolve_scaled(o->emulate, NULL, o->stop, &spec, NULL, 0)) >= 0 &&
		    (rc = atm_emu_new(&c->emu, &spec, c->topo, spec.fast_gbps)) >= 0)
			rc = atm_tier_set_emulation(c->slow, &spec);
	}
	return atm_cpu_bk_start(b, rc, out);
}

/* atm_backend_cpu_supports_op -- op has an entry in the CPU kernels' op table (the simulated GPU
 * runs the same kernels) */
bool atm_backend_cpu_supports_op(atm_op op)
{
	return atm_cpu_supports(op);
}
