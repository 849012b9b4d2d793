/* backend_cpu.h -- the CPU backend's parts, from which the simulated GPU (sim/backend_sim.c) is built too (private to runtime/)
 *
 * Both backends are one context (struct cpu_ctx: tiers, pools, emulation, the
 * oneDNN engine and the mover thread) and the functions below, which fill
 * most of their interfaces (ATM_CPU_BK_IFACE); each brings its own
 * constructor, description, profile key and arena. A constructor calls
 * atm_cpu_bk_new, opens its slow side (the heap, an emulator), then returns
 * atm_cpu_bk_start, which finishes or releases the backend.
 */
#ifndef ATM_RUNTIME_BACKEND_CPU_H
#define ATM_RUNTIME_BACKEND_CPU_H

#include <pthread.h>

#include "backend.h"
#include "kernels.h"
#include "memory.h"

/* One asynchronous copy's state. */
enum cpu_job_state { JOB_IDLE = 0, JOB_QUEUED, JOB_DONE };

struct cpu_job {
	void *dst;
	const void *src;
	int64_t bytes;
	unsigned to;
	enum cpu_job_state state;
	atm_status rc;
	char msg[256]; /* the mover thread's message when rc < 0 (messages are per thread) */
};

/* The mover: a thread that performs queued copies in order while kernels run. */
struct cpu_mover {
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake, done;
	struct cpu_job *jobs;
	int32_t n_jobs;
	int32_t *queue; /* job ids, FIFO */
	int32_t head, tail, cap;
	bool quit;
};

/* A CPU backend's context, b->ctx. */
struct cpu_ctx {
	atm_backend_opts o;
	atm_tier_topo *topo;
	atm_tier *fast, *slow;  /* slow: NULL when the heap lies in the fast tier (simulated GPU) */
	atm_pool *arena;        /* fast: tensors at the plan's offsets */
	atm_pool *heap;         /* slow tensors */
	atm_pool *fast_heap;    /* kernels' scratch */
	atm_emu *emu;           /* waits after slow bytes and copies; NULL: none */
	atm_cpu *cpu;
	void *scratch;
	struct cpu_mover mover;
	double *marks;
	int32_t n_marks;
};

/* atm_cpu_bk_new -- b with iface and a context: o kept, the topology, the fast tier and the
 * scratch heap open */
atm_status atm_cpu_bk_new(atm_backend **b, const atm_backend_i *iface, const atm_backend_opts *o);
/* atm_cpu_bk_start -- a constructor's last step, rc saying how opening the slow side went:
 * the emulator's stop flag, the oneDNN engine and the mover, and b in *out; b released
 * when rc or these failed */
atm_status atm_cpu_bk_start(atm_backend *b, atm_status rc, atm_backend **out);

/* The interface entries both backends take as they are. */
void atm_cpu_bk_destroy(atm_backend *b);
atm_status atm_cpu_bk_alloc(atm_backend *b, unsigned loc, int64_t offset, int64_t bytes, void **ptr);
atm_status atm_cpu_bk_free(atm_backend *b, unsigned loc, void *ptr);
atm_status atm_cpu_bk_scratch(atm_backend *b, int64_t bytes, void **ptr);
atm_status atm_cpu_bk_set(atm_backend *b, void *dst, const void *host_src, int64_t bytes);
atm_status atm_cpu_bk_get(atm_backend *b, void *host_dst, const void *src, int64_t bytes);
void atm_cpu_bk_mem_stats(const atm_backend *b, unsigned loc, atm_pool_stats *s);
void atm_cpu_bk_reset_high_water(atm_backend *b);
atm_status atm_cpu_bk_kernel_new(atm_backend *b, const atm_graph *g, int32_t node,
                                 atm_bk_kernel **k);
void atm_cpu_bk_kernel_destroy(atm_backend *b, atm_bk_kernel *k);
int64_t atm_cpu_bk_kernel_scratch_bytes(const atm_backend *b, const atm_bk_kernel *k);
int atm_cpu_bk_kernel_n_algos(const atm_backend *b, const atm_bk_kernel *k);
bool atm_cpu_bk_kernel_widened(const atm_backend *b, const atm_bk_kernel *k);
atm_status atm_cpu_bk_kernel_set_algo(atm_backend *b, atm_bk_kernel *k, int algo);
atm_status atm_cpu_bk_kernel_run(atm_backend *b, atm_bk_kernel *k, void *const *in,
                                 void *const *out, void *scratch);
atm_status atm_cpu_bk_emulate(atm_backend *b, int64_t read_bytes, int64_t written_bytes,
                              const atm_twolm_traffic *twolm, double *waited_s);
atm_status atm_cpu_bk_copy(atm_backend *b, unsigned to, void *dst, const void *src, int64_t bytes);
atm_status atm_cpu_bk_reserve(atm_backend *b, int32_t n_copies, int32_t n_marks);
atm_status atm_cpu_bk_copy_start(atm_backend *b, int32_t id, unsigned to, void *dst,
                                 const void *src, int64_t bytes);
atm_status atm_cpu_bk_copy_wait(atm_backend *b, int32_t id);
void atm_cpu_bk_copy_drain(atm_backend *b);
atm_status atm_cpu_bk_sync(atm_backend *b);
atm_status atm_cpu_bk_mark(atm_backend *b, int32_t slot);
double atm_cpu_bk_elapsed(atm_backend *b, int32_t from, int32_t to);
double atm_cpu_bk_waited_s(const atm_backend *b);

/* The entries a backend built on these parts shapes itself, here the CPU's own, for it to
 * call and then change. */
atm_status atm_cpu_bk_arena_new(atm_backend *b, int64_t bytes);
void atm_cpu_bk_machine(const atm_backend *b, atm_profile_machine *m);
void atm_cpu_bk_describe(const atm_backend *b, atm_backend_desc *d);

/* ATM_CPU_BK_IFACE -- the shared entries of an atm_backend_i initializer; the backend adds
 * .describe, .machine and .arena_new */
#define ATM_CPU_BK_IFACE                                                                        \
	.destroy = atm_cpu_bk_destroy, .alloc = atm_cpu_bk_alloc, .free = atm_cpu_bk_free,          \
	.scratch = atm_cpu_bk_scratch, .set = atm_cpu_bk_set, .get = atm_cpu_bk_get,                \
	.mem_stats = atm_cpu_bk_mem_stats, .reset_high_water = atm_cpu_bk_reset_high_water,         \
	.kernel_new = atm_cpu_bk_kernel_new, .kernel_destroy = atm_cpu_bk_kernel_destroy,           \
	.kernel_scratch_bytes = atm_cpu_bk_kernel_scratch_bytes,                                    \
	.kernel_n_algos = atm_cpu_bk_kernel_n_algos, .kernel_set_algo = atm_cpu_bk_kernel_set_algo, \
	.kernel_widened = atm_cpu_bk_kernel_widened,                                                \
	.kernel_run = atm_cpu_bk_kernel_run, .emulate = atm_cpu_bk_emulate,                         \
	.copy = atm_cpu_bk_copy, .reserve = atm_cpu_bk_reserve,                                     \
	.copy_start = atm_cpu_bk_copy_start, .copy_wait = atm_cpu_bk_copy_wait,                     \
	.copy_drain = atm_cpu_bk_copy_drain, .sync = atm_cpu_bk_sync, .mark = atm_cpu_bk_mark,      \
	.elapsed = atm_cpu_bk_elapsed, .waited_s = atm_cpu_bk_waited_s

#endif /* ATM_RUNTIME_BACKEND_CPU_H */
