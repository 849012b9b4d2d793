/* backend.h -- the interface every runtime backend implements (private to runtime/)
 *
 * A backend is an {iface, ctx} pair, as ggml's: the executor (exec.c) and the
 * kernel timer (kbench.c) are written once against it, and a backend brings
 * the memories, the kernels and the copies of one kind of machine:
 *
 *   cpu      oneDNN kernels, DRAM arena and slow tier (memkind, libpmem2), the
 *            mover thread, tier emulation            (cpu/backend_cpu.c)
 *   cuda     cuDNN/cuBLAS kernels, one cudaMalloc arena, pinned host memory,
 *            copy streams with events                 (cuda/cuda_backend.c)
 *   gpu-sim  a GPU stand-in: a byte-limited host arena as device memory, the
 *            CPU kernels, copies on a worker thread at a link's bandwidth
 *                                                     (sim/backend_sim.c, built from
 *                                                      the CPU's parts, cpu/backend_cpu.h)
 *
 * The registry (backend_reg.c, the only file with an #ifdef for optional
 * backends) holds one atm_backend_reg per backend: what it can do
 * (atm_backend_caps, public), and how to open and probe one; atm_backend_open
 * makes one by its choice. docs/extending.md lists what a new
 * backend touches.
 *
 * Memory. Fast memory is one arena of a fixed size, made once, where the
 * caller places tensors at offsets (the plan's layout); slow memory is a heap
 * with one allocation per tensor. Pointers handed out are the backend's own
 * (device pointers on a GPU): the host never dereferences them and reads or
 * writes tensor bytes only through get/set.
 *
 * Ordering. kernel_run and copy may return before the work is done (a GPU
 * queues them on its compute stream); everything issued on the compute
 * stream runs in issue order, and sync waits for all of it. An asynchronous
 * copy (copy_start) begins after everything issued before it and overlaps
 * what is issued after; copy_wait orders everything issued after the wait
 * behind the copy's completion (a CPU blocks; a GPU makes its compute stream
 * wait on the copy's event). The schedule frees a copy's source only after
 * its wait, so no buffer is reused while a copy reads it.
 *
 * Timing. mark records a point on the compute stream in a numbered slot;
 * elapsed gives the seconds between two marked slots once the work between
 * them is done (after sync): a host clock on the CPU, events on a GPU.
 */
#ifndef ATM_RUNTIME_BACKEND_H
#define ATM_RUNTIME_BACKEND_H

#include "atm_runtime.h"

typedef struct atm_backend atm_backend;
typedef struct atm_bk_kernel atm_bk_kernel; /* one node's kernel, the backend's own type */

/* What a backend's memory reports for one location (a pool's figures on the CPU). */
typedef struct {
	int64_t limit_bytes;      /* arena: its size; heap: its cap, 0 when none */
	int64_t in_use_bytes;     /* bytes of live allocations (arena: overlaps count twice) */
	int64_t high_water_bytes; /* largest in_use_bytes since creation or the last reset */
	int64_t extent_bytes;     /* arena: highest end offset placed since then; heap: high water */
	int64_t n_live;
	int64_t n_allocs;         /* allocations ever made */
	int64_t n_reused;         /* heap: allocations served by a block a tensor gave back */
	int64_t spare_bytes;      /* heap: bytes of given-back blocks kept for reuse */
} atm_pool_stats;

/* What a backend is, for results and messages. */
typedef struct {
	char name[16];          /* "cpu", "cuda", "gpu-sim" */
	char device[128];       /* "Intel Xeon ...", "NVIDIA H100 80GB HBM3" */
	char versions[128];     /* "onednn-2.7.3", "cuda-13.0 cudnn-9.19.0 ..." */
	atm_tier_desc fast, slow; /* kernels may take operands in either (a GPU's host memory
	                           * is mapped into its address space) */
	bool simulated;         /* a stand-in for hardware this machine lacks */
} atm_backend_desc;

typedef struct {
	void (*destroy)(atm_backend *b);
	void (*describe)(const atm_backend *b, atm_backend_desc *d);

	/* memory */
	atm_status (*arena_new)(atm_backend *b, int64_t bytes);
	atm_status (*alloc)(atm_backend *b, unsigned loc, int64_t offset, int64_t bytes, void **ptr);
	atm_status (*free)(atm_backend *b, unsigned loc, void *ptr);
	/* scratch -- fast memory outside the arena for kernels' scratch; replaces the last one */
	atm_status (*scratch)(atm_backend *b, int64_t bytes, void **ptr);
	atm_status (*set)(atm_backend *b, void *dst, const void *host_src, int64_t bytes);
	atm_status (*get)(atm_backend *b, void *host_dst, const void *src, int64_t bytes);
	void (*mem_stats)(const atm_backend *b, unsigned loc, atm_pool_stats *s);
	void (*reset_high_water)(atm_backend *b);

	/* kernels */
	atm_status (*kernel_new)(atm_backend *b, const atm_graph *g, int32_t node, atm_bk_kernel **k);
	void (*kernel_destroy)(atm_backend *b, atm_bk_kernel *k);
	/* scratch of the algorithm in use */
	int64_t (*kernel_scratch_bytes)(const atm_backend *b, const atm_bk_kernel *k);
	/* implementations the kernel offers (a GPU's convolution algorithms; 1 elsewhere) */
	int (*kernel_n_algos)(const atm_backend *b, const atm_bk_kernel *k);
	atm_status (*kernel_set_algo)(atm_backend *b, atm_bk_kernel *k, int algo);
	/* the kernel runs in f32 on widened copies of its bf16 operands (NULL: every kernel with
	 * bf16 operands but a cast does) */
	bool (*kernel_widened)(const atm_backend *b, const atm_bk_kernel *k);
	atm_status (*kernel_run)(atm_backend *b, atm_bk_kernel *k, void *const *in, void *const *out,
	                         void *scratch);
	/* emulate -- after a kernel read and wrote these slow bytes: make the slow
	 * tier as slow as the emulated memory (NULL: nothing is emulated); with twolm the slow
	 * tier sits behind an emulated 2LM cache, and the traffic the kernel's accesses caused
	 * there (atm_twolm_wait_s) is waited for instead of the bytes */
	atm_status (*emulate)(atm_backend *b, int64_t read_bytes, int64_t written_bytes,
	                      const atm_twolm_traffic *twolm, double *waited_s);

	/* copies between the tiers; to is the destination's ATM_LOC_* */
	atm_status (*copy)(atm_backend *b, unsigned to, void *dst, const void *src, int64_t bytes);
	/* reserve -- room for asynchronous copies numbered 0..n_copies-1 and
	 * timing marks numbered 0..n_marks-1 */
	atm_status (*reserve)(atm_backend *b, int32_t n_copies, int32_t n_marks);
	atm_status (*copy_start)(atm_backend *b, int32_t id, unsigned to, void *dst, const void *src,
	                         int64_t bytes);
	atm_status (*copy_wait)(atm_backend *b, int32_t id);
	/* copy_drain -- wait for every copy started (after a failed step) */
	void (*copy_drain)(atm_backend *b);
	atm_status (*sync)(atm_backend *b);

	/* timing */
	atm_status (*mark)(atm_backend *b, int32_t slot);
	double (*elapsed)(atm_backend *b, int32_t from, int32_t to);
	/* waited_s -- emulation waits so far (kernels and copies, every thread) */
	double (*waited_s)(const atm_backend *b);
	/* machine -- fill the profile key: what makes kernel timings comparable */
	void (*machine)(const atm_backend *b, atm_profile_machine *m);
	/* energy -- the device's energy counter now, and with clocks its clocks (NULL: no such
	 * counter: the CPU, a simulated GPU); ATM_E_UNSUPPORTED where the device has none */
	atm_status (*energy)(atm_backend *b, bool clocks, atm_gpu_energy *e);
} atm_backend_i;

struct atm_backend {
	const atm_backend_i *iface;
	void *ctx;
};

/* How to open a backend. */
typedef struct {
	atm_tier_opts tiers;  /* cpu: which memories are fast and slow */
	const char *emulate;  /* cpu: NULL, a preset or a tier spec */
	atm_gpu_opts gpu;     /* gpu.mode NULL: the CPU */
	volatile sig_atomic_t *stop; /* set (by a signal handler): emulated waits end early */
} atm_backend_opts;

/* atm_backend_open -- the backend o->gpu.mode chooses, its memories open (no
 * arena yet). ATM_E_UNSUPPORTED when this build or this machine has no such
 * backend, naming why. */
atm_status atm_backend_open(atm_backend **b, const atm_backend_opts *o);
/* atm_backend_destroy -- NULL is fine */
void atm_backend_destroy(atm_backend *b);

/* One backend as the registry holds it. */
typedef struct {
	atm_backend_caps caps;
	/* open -- one with its memories open (no arena yet) */
	atm_status (*open)(atm_backend **b, const atm_backend_opts *o);
	/* probe -- the device a run would get and the memory its arena may take; NULL: no
	 * device (the CPU) */
	atm_status (*probe)(const atm_gpu_opts *o, atm_gpu_info *info);
	/* supports_op -- it has a kernel for op */
	bool (*supports_op)(atm_op op);
} atm_backend_reg;

/* What the registry calls: each backend's constructor, probe and kernel list. */
/* atm_bk_allreduce -- the mean of a bucket over ranks ranks, in place, through what
 * atm_runtime_set_allreduce set; a copy is already the mean of one rank; another count of
 * ranks than the communicator's is ATM_E_UNSUPPORTED (the allreduce kernels) */
atm_status atm_bk_allreduce(float *const *bufs, const int64_t *counts, int n, int ranks);
/* atm_bk_allreduce_waited_s -- seconds the allreduces have waited for the other ranks to
 * arrive, summed over the process (the executor takes a step's as a difference) */
double atm_bk_allreduce_waited_s(void);

atm_status atm_backend_cpu_new(atm_backend **b, const atm_backend_opts *o);
/* atm_backend_cpu_supports_op -- the CPU's kernels (the simulated GPU runs them too) */
bool atm_backend_cpu_supports_op(atm_op op);
atm_status atm_backend_sim_new(atm_backend **b, const atm_backend_opts *o);
/* atm_backend_sim_probe -- the simulated device: o->memory_bytes of host memory, or
 * ATM_GPU_SIM_BYTES */
atm_status atm_backend_sim_probe(const atm_gpu_opts *o, atm_gpu_info *info);
/* atm_gpu_take_memory -- the memory info's GPU gives a plan: o->memory_bytes (ATM_E_*
 * code when more than info->free_bytes), else what is free less ATM_GPU_RESERVE_BYTES */
atm_status atm_gpu_take_memory(const atm_gpu_opts *o, atm_gpu_info *info, atm_status code);
/* atm_backend_model_new -- refused: a GPU model (atm_gpu_opts.model) runs nothing;
 * atm_backend_model_probe -- the GPU the model describes, its memory less the reserve */
atm_status atm_backend_model_new(atm_backend **b, const atm_backend_opts *o);
atm_status atm_backend_model_probe(const atm_gpu_opts *o, atm_gpu_info *info);
atm_status atm_backend_cuda_new(atm_backend **b, const atm_backend_opts *o);
/* atm_backend_cuda_probe -- name, free and total memory of CUDA device */
atm_status atm_backend_cuda_probe(int device, atm_gpu_info *info);
bool atm_backend_cuda_supports_op(atm_op op);

#endif /* ATM_RUNTIME_BACKEND_H */
