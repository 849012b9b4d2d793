/* atm_runtime.h -- the runtime: executes a plan for real, kernels on oneDNN, tensors in memory tiers.
 *
 * Usage:
 *
 *     atm_plan *plan = NULL;
 *     atm_plan_uniform(&plan, g, ATM_LOC_SLOW);          // or atm_plan_load, atm_plan_random
 *     atm_exec_opts o = {.iters = 5, .emulate = "optane"};
 *     atm_exec *e = NULL;
 *     if (atm_exec_new(&e, plan, &o) < 0 || atm_exec_run(e) < 0)
 *             fprintf(stderr, "%s\n", atm_errmsg());
 *     const atm_exec_result *r = atm_exec_result_get(e);
 *     printf("%.3f s per step, loss %g\n", r->actual_runtime_s, r->losses[r->n_losses - 1]);
 *     atm_exec_destroy(e);
 *
 * Every tensor lives where the plan says: fast copies at the plan's offsets in
 * one fast-memory arena of fixed size, slow copies in the slow tier's heap.
 * Synchronous moves run inline, asynchronous ones on a mover thread that
 * overlaps the kernels. For a fixed seed and thread count the losses and final
 * weights are bitwise the same whatever the plan.
 */
#ifndef ATM_RUNTIME_H
#define ATM_RUNTIME_H

#include <signal.h>

#include "atm_core.h"
#include "memory.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which GPU, when the run is on one. A zeroed struct means the CPU. */
typedef struct {
	const char *mode;       /* NULL: the CPU; "cuda": a real NVIDIA GPU; "sim": a simulated one */
	int device;             /* cuda: device index */
	int64_t memory_bytes;   /* device memory the fast arena may take; 0: the device's free
	                         * memory less ATM_GPU_RESERVE_BYTES (sim: ATM_GPU_SIM_BYTES) */
	const char *link;       /* sim: the host link it stands for, "pcie4" (default), "pcie5",
	                         * "nvlink-c2c" (docs/gpu.md) */
	bool managed;           /* cuda: the fast arena is cudaMallocManaged memory (the baseline
	                         * of Figure 12: the driver pages it on demand) */
	bool allow_oversubscribe; /* managed: allow more managed memory than the device has free,
	                         * which can hang a GPU; never set by tests or experiments */
} atm_gpu_opts;

/* Device memory left to the CUDA context, cuDNN and cuBLAS (their handles,
 * kernels' modules, the convolution workspace of the default algorithms) when
 * --gpu-memory is not given: AutoTM's GPU_MEMORY_OVERHEAD, 1 GB on an RTX
 * 2080 Ti with nGraph; 1.5 GiB here, measured on an H100 with CUDA 13 and
 * cuDNN 9 (docs/gpu.md). */
#define ATM_GPU_RESERVE_BYTES ((int64_t)3 << 29)
/* The simulated GPU's memory when none is given: an RTX 2080 Ti's 11 GB less
 * the reserve, as the paper's Figure 12 ran. */
#define ATM_GPU_SIM_BYTES ((int64_t)11000000000 - ATM_GPU_RESERVE_BYTES)

/* A GPU as a run would find it. */
typedef struct {
	char name[128];         /* "NVIDIA H100 80GB HBM3", "simulated GPU" */
	int64_t free_bytes;     /* device memory free now */
	int64_t total_bytes;
	int64_t memory_bytes;   /* what the fast arena may take: o->memory_bytes when given,
	                         * else free_bytes less ATM_GPU_RESERVE_BYTES */
	bool simulated;
} atm_gpu_info;

/* atm_gpu_probe -- the GPU o names, before anything is planned: ATM_E_UNSUPPORTED with the
 * reason when this build has no CUDA, there is no such device or no driver, o->memory_bytes
 * exceeds what is free, or nothing is left after the reserve */
atm_status atm_gpu_probe(const atm_gpu_opts *o, atm_gpu_info *info);

typedef struct {
	int iters;              /* measured steps after the warm-up; 0: 5 */
	int warmup;             /* steps run first and not timed; < 0: none, 0: 1 */
	uint64_t seed;          /* initial weights, inputs and labels */
	atm_tier_opts tiers;    /* which memories are fast and slow */
	const char *emulate;    /* NULL, a preset ("optane", "cxl", "numa") or a tier spec file */
	atm_gpu_opts gpu;       /* run on a GPU (real or simulated) rather than the CPU */
	volatile sig_atomic_t *stop; /* set (by a signal handler) to end the run early */
	int64_t twolm_bytes;    /* > 0: emulate 2LM, fast memory of this size caching the slow
	                         * tier (the plan must be all-slow; needs emulate) */
	bool quiet;             /* no progress on stderr */
} atm_exec_opts;

/* What a run measured. Times are seconds; per-step figures are of one step. */
typedef struct {
	double actual_runtime_s;   /* fastest measured step */
	double mean_runtime_s;
	int n_iters;               /* measured steps */
	int n_losses;
	const float *losses;       /* every step's loss, the warm-up first */
	char weights_checksum[17]; /* FNV-1a of every parameter's bytes after the last step */
	const double *kernel_s;    /* per node: fastest measured time, emulation waits included */
	const double *step_kernel_s; /* per node: its time in the fastest measured step */
	atm_schedule_stats moves;  /* moves and bytes of one step, persistent bytes, arena size */
	int64_t fast_high_water_bytes; /* arena extent actually used */
	int64_t slow_high_water_bytes;
	double emulation_wait_s;   /* per step: waited to make the slow tier slow (kernels and moves) */
	double move_wait_s;        /* per step: the schedule waited on asynchronous moves */
	atm_tier_desc fast_tier, slow_tier;
	bool emulated;
	char emulation[48];         /* the preset, "+2lm" when 2LM is emulated too */
	double emulation_fast_gbps; /* the fast bandwidth emulation measured against */
	int64_t twolm_bytes;        /* emulated 2LM cache size, 0 when not */
	int64_t scratch_bytes;      /* kernels' scratch, in fast memory outside the arena */
	char backend[16];           /* "cpu", "cuda", "gpu-sim" */
	char device[128];           /* the CPU model or the GPU's name */
	char versions[128];         /* the kernel libraries' versions */
	int n_threads;              /* threads the kernels ran on: the count a profile's machine
	                             * key has, so that a run and its profile agree */
	bool simulated;             /* the GPU was simulated: no GPU figure */
	int64_t arena_bytes;        /* the fast arena's size (on a GPU: device memory taken) */
} atm_exec_result;

typedef struct atm_exec atm_exec;

/* atm_openmp_passive -- call first in main(argv): unless the environment chose an
 * OMP_WAIT_POLICY, the program runs again (execv of /proc/self/exe) with passive waiting.
 * libgomp, oneDNN's threading, reads the policy when it loads, and its default spins idle
 * workers: they then take the cores from the mover thread (an asynchronous move waited a
 * whole scheduler slice behind them) and from everything else on a busy machine. Returns
 * when the policy was chosen already, or when the exec failed (the program goes on). */
void atm_openmp_passive(char **argv);

/* atm_exec_new -- open the tiers, lay out the plan's step, build every kernel and
 * allocate the persistent tensors. p (and its graph) must outlive e. Errors:
 * a plan that contradicts its graph (ATM_E_INPUT), a fast limit it exceeds
 * (ATM_E_INFEASIBLE), tiers that cannot be opened (ATM_E_IO, ATM_E_UNSUPPORTED),
 * a full tier (ATM_E_NOSPACE). */
atm_status atm_exec_new(atm_exec **e, const atm_plan *p, const atm_exec_opts *o);
/* atm_exec_run -- warm-up and measured steps, then atm_exec_finish; ATM_E_INTERRUPTED when
 * o->stop was set */
atm_status atm_exec_run(atm_exec *e);
/* atm_exec_step -- one more step, its wall time in *step_s (-1 on failure): the first
 * o->warmup steps of a new executor are warm-up, every later one is measured as atm_exec_run
 * measures (the fastest step, kernel times, mean, losses), so that several executors can take
 * their steps in turns. The weights checksum and memory figures wait for atm_exec_finish.
 * ATM_E_INTERRUPTED when o->stop was set */
atm_status atm_exec_step(atm_exec *e, double *step_s);
/* atm_exec_finish -- the result completed after atm_exec_step: the weights checksum, moves,
 * memory high-water marks and where it ran */
atm_status atm_exec_finish(atm_exec *e);
const atm_exec_result *atm_exec_result_get(const atm_exec *e);
void atm_exec_destroy(atm_exec *e);

/* ---------------------------------------------------------------- kernel timing */

/* Times single kernels with their tensors in chosen tiers: what the profiler
 * measures. Tensors are allocated in the real tiers (and the slow tier is
 * emulated when asked), like a run would place them, and each timed run
 * includes the emulation wait the executor adds after that kernel, so a
 * profile predicts a run. Inputs hold fixed positive values below 1 (never
 * NaN); a max-pooling argmax input is made by its forward kernel. */
typedef struct {
	atm_tier_opts tiers;
	const char *emulate;  /* as atm_exec_opts.emulate */
	atm_gpu_opts gpu;     /* as atm_exec_opts.gpu */
	int reps;             /* timed runs after one warm-up; 0: 5 */
	uint64_t seed;
	volatile sig_atomic_t *stop; /* set (by a signal handler): emulation waits end early */
} atm_kbench_opts;

typedef struct atm_kbench atm_kbench;

/* atm_kbench_new -- open the tiers for timing kernels of g (validated here; g
 * outlives kb). Nothing of g is allocated or built yet. */
atm_status atm_kbench_new(atm_kbench **kb, const atm_graph *g, const atm_kbench_opts *o);
void atm_kbench_destroy(atm_kbench *kb);
/* atm_kbench_time -- node with its operands in slow memory where config says
 * (atm_node_config_loc; ATM_E_USAGE when config is not one of node's); fills
 * e (min, median, count, scratch). The node's kernel is kept for the next
 * call, so time all configurations of a node one after another. */
atm_status atm_kbench_time(atm_kbench *kb, int32_t node, uint32_t config, atm_profile_entry *e);
/* atm_kbench_algos -- how many implementations node has here (a GPU's convolution
 * algorithms, deterministic ones only; 1 elsewhere) */
atm_status atm_kbench_algos(atm_kbench *kb, int32_t node, int *n);
/* atm_kbench_algo_workspace -- the workspace algorithm algo of node takes, nothing run */
atm_status atm_kbench_algo_workspace(atm_kbench *kb, int32_t node, int algo, int64_t *bytes);
/* atm_kbench_time_algo -- atm_kbench_time with implementation algo; e->scratch_bytes is its
 * workspace */
atm_status atm_kbench_time_algo(atm_kbench *kb, int32_t node, uint32_t config, int algo,
                                atm_profile_entry *e);
/* atm_kbench_moves -- bandwidth of synchronous copies each way, emulation included */
atm_status atm_kbench_moves(atm_kbench *kb, atm_profile_moves *m);
/* atm_kbench_overlap -- the fraction of an asynchronous copy's time that node's all-fast
 * kernel loses when the copy runs beside it (0: nothing, the copy is free; 1: the kernel
 * waits as long as the copy takes), the median of 2 * reps + 1 turns, each timing the copies
 * alone, the kernel alone and both together; on this backend's mover, as a plan's
 * asynchronous moves run */
atm_status atm_kbench_overlap(atm_kbench *kb, int32_t node, double *loss);
/* atm_kbench_machine -- what the timings are comparable with: CPU model,
 * OpenMP threads, oneDNN version, tier kinds and nodes, emulation name */
void atm_kbench_machine(const atm_kbench *kb, atm_profile_machine *m);
/* atm_kbench_tiers -- the fast and slow tiers it opened (the slow one says
 * what it emulates) */
void atm_kbench_tiers(const atm_kbench *kb, atm_tier_desc *fast, atm_tier_desc *slow);

#ifdef __cplusplus
}
#endif

#endif /* ATM_RUNTIME_H */
