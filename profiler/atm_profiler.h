/* atm_profiler.h -- the profiler: every kernel of a graph in every IO configuration, timed or estimated, into a profile cache
 *
 * Usage:
 *
 *     atm_prof_opts o = {.emulate = "optane", .reps = 5};
 *     atm_prof *pr = NULL;
 *     atm_profile *p = NULL;
 *     atm_prof_report r;
 *     atm_profile_machine m;
 *     if (atm_prof_new(&pr, g, &o) < 0) ...;          // opens the tiers; runs nothing yet
 *     atm_prof_get_machine(pr, &m);                   // what the timings will be comparable with
 *     if (atm_prof_cache_open(&p, "profiles.json", &m, false) < 0) ...;  // read and checked whole
 *     if (atm_prof_run(pr, p, &r) < 0) ...;           // measures what p lacks, saves in batches
 *     printf("%lld configurations, %lld measured\n", (long long)r.n_configs,
 *            (long long)r.n_configs_measured);
 *     atm_profile_destroy(p);
 *     atm_prof_destroy(pr);
 *
 * Identical kernels (same op, attributes, shapes and dtypes: one signature) are
 * profiled once. With estimate set nothing of the graph runs: a roofline of
 * each kernel's FLOPs and bytes against the tiers' bandwidths and a compute
 * peak gives the times, and the profile is a separate, estimated one
 * (docs/profile.md has the model and its error on this machine).
 */
#ifndef ATM_PROFILER_H
#define ATM_PROFILER_H

#include <limits.h>
#include <signal.h>

#include "atm_core.h"
#include "atm_formats.h"
#include "atm_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
	atm_tier_opts tiers;         /* which memories are fast and slow, as for a run */
	const char *emulate;         /* NULL, a preset or a tier spec file, as for a run */
	atm_gpu_opts gpu;            /* on a GPU (real or simulated): the all-device configuration
	                              * of each kernel only, timed on the device */
	int reps;                    /* timed runs per configuration after one warm-up; 0: 5 */
	uint64_t seed;               /* of the data kernels are timed on */
	bool estimate;               /* roofline estimates instead of measurements */
	bool isolated;               /* time kernels alone only: no all-fast steps are run to
	                              * measure each kernel inside a step (atm_profile_in_step) */
	const struct atm_prof_roofline *roofline; /* estimate with this model; NULL: the machine
	                                           * file's calibration, else calibrate one */
	const char *machine_file;    /* where calibrations are kept per machine (NULL: the
	                              * default, atm_machine_file_path; "": none, calibrate) */
	volatile sig_atomic_t *stop; /* set (by a signal handler) to stop: what was measured is saved */
	bool progress;               /* progress on stderr (the caller decides: a terminal, no --quiet) */
	int flush_configs;           /* save after this many new configurations... (0: 50) */
	double flush_s;              /* ...or this many seconds, whichever is first (0: 30) */
} atm_prof_opts;

/* What a profiling run found and did. */
typedef struct {
	int32_t n_kernels;          /* nodes of the graph */
	int32_t n_unique_kernels;   /* distinct signatures among them */
	int64_t n_configs;          /* distinct (signature, configuration) pairs: what a plan may ask */
	int64_t n_configs_measured; /* timed (or estimated) by this run */
	int64_t n_configs_cached;   /* in the profile before this run */
	bool moves_measured;        /* the move bandwidths were timed (or estimated) by this run */
	int32_t n_in_step_measured; /* signatures whose time inside a step this run measured */
	char in_step_note[256];     /* why no step was run (nor the copy overlap measured) where
	                             * one was missing: a step too large, a read-only cache ("":
	                             * none) */
	char calibration_note[PATH_MAX + 320]; /* where an estimate's calibration came from or
	                                        * went, and why a kept one was not used ("":
	                                        * none was needed) */
	double seconds;             /* wall-clock time of atm_prof_run */
	bool estimated;
} atm_prof_report;

/* All-fast steps timed, after one warm-up step, to measure kernels inside a step: each
 * kernel's fastest time in them is kept. */
#define ATM_PROF_IN_STEP_ITERS 5

typedef struct atm_prof atm_prof;

/* atm_prof_new -- a profiler for g (validated; g outlives pr): opens the tiers
 * and the emulation, builds nothing yet. Errors as atm_exec_new's tiers. */
atm_status atm_prof_new(atm_prof **pr, const atm_graph *g, const atm_prof_opts *o);
void atm_prof_destroy(atm_prof *pr);
/* atm_prof_slow_tier -- the slow tier kernels are timed with (its file, what it emulates);
 * NULL when nothing is timed here (a GPU model) */
const atm_tier_desc *atm_prof_slow_tier(const atm_prof *pr);
/* atm_prof_get_machine -- the machine key of this run's timings (estimated when o->estimate) */
void atm_prof_get_machine(const atm_prof *pr, atm_profile_machine *m);
/* atm_prof_run -- everything of g that p lacks, measured or estimated into p,
 * saved in batches and at the end, then (unless o->isolated or o->estimate) the time of each
 * kernel inside a real all-fast step of g, for the signatures that lack one: the kernel
 * timer's tiers are closed and the executor runs ATM_PROF_IN_STEP_ITERS steps after a
 * warm-up (skipped, with r->in_step_note saying why, when the step does not fit the memory
 * at hand). p's machine must be atm_prof_get_machine's.
 * When there is something to measure (or to save), p's file must take a write first: ATM_E_IO
 * then, before any measuring. ATM_E_INTERRUPTED when o->stop was set (what was measured is saved);
 * another failure also saves what was measured before it. r says what was
 * done, after a failure too: its counts are what the cache gained. */
atm_status atm_prof_run(atm_prof *pr, atm_profile *p, atm_prof_report *r);

/* atm_prof_count -- kernels, unique kernels and configurations of g, nothing else */
atm_status atm_prof_count(const atm_graph *g, atm_prof_report *r);

/* ---------------------------------------------------------------- the cache */

/* The profile cache is one JSON file (docs/profile.md) that every profiler of the machine
 * shares: one section per machine key, each kernel configuration measured once. */

/* atm_prof_cache_open -- the profile of machine m in the cache file path (created on the
 * first save; NULL: a profile in memory only, as atm_profile_new). A corrupt cache is
 * ATM_E_INPUT naming the file and where it broke, and is never overwritten; with rebuild the
 * file's entries of this machine (or the whole file, when it is corrupt) are dropped on
 * purpose at the first save. Nothing is written, nor checked writable: a complete cache on
 * read-only storage is used as it is (atm_prof_run asks whether the file can be written
 * before it measures anything, not after hours of profiling). */
atm_status atm_prof_cache_open(atm_profile **p, const char *path, const atm_profile_machine *m,
                               bool rebuild);
/* atm_prof_cache_save -- merge the entries put since the last save into p's file atomically
 * (temporary file + rename), under a lock on "PATH.lock", keeping what another profiler wrote
 * meanwhile, and take in that profiler's entries; nothing to do for an in-memory profile. A
 * file that became corrupt since it was opened is ATM_E_INPUT and is left as it is. */
atm_status atm_prof_cache_save(atm_profile *p);

/* ---------------------------------------------------------------- roofline */

/* The analytic model behind --estimate. A kernel of op o takes
 *     overhead_s[o] + max(flops / gflops[o], traffic / gbps[o])
 * on fast memory of this machine: gflops[o] is what op o reaches with its
 * operands in cache (FLOPs as atm_prof_kernel_work counts them; a 1x1
 * convolution has its own rate, gflops_1x1), gbps[o] what it streams when its
 * operands exceed cache_bytes (within the cache only the compute rate
 * counts), and traffic counts the passes an op makes over its operands (batch
 * norm reads its input twice). Bytes in slow memory then cost what emulation
 * waits for, after the kernel:
 *     slow_read / slow_read_gbps + slow_written / slow_write_gbps
 *         - (slow_read + slow_written) / ref_fast_gbps   (never below 0)
 * when the slow tier is emulated; on real slow memory the slow operands
 * stream at their tier's bandwidth inside the max instead. Either way the time
 * grows with FLOPs and with bytes, and a slow operand never makes a kernel
 * faster. */
typedef struct atm_prof_roofline {
	double gflops[ATM_N_OPS];     /* each op's compute rate, operands in cache */
	double gflops_1x1[ATM_N_OPS]; /* each op with a pointwise form (atm_op_desc.pointwise_rate,
	                               * the convolutions) on a 1x1 kernel: one GEMM, far faster
	                               * than 3x3; 0 for the other ops */
	double gbps[ATM_N_OPS];       /* each op's streaming rate, operands beyond the cache */
	double overhead_s[ATM_N_OPS]; /* each op's call on almost no data */
	double fast_gbps;             /* a plain streaming kernel (ReLU): what moves use */
	int64_t cache_bytes;          /* operands up to this size stay in the caches between runs */
	double slow_read_gbps;        /* slow tier */
	double slow_write_gbps;
	double ref_fast_gbps;         /* emulation: the fast memory the slow figures are relative to */
	bool emulated;                /* slow time is waited after the kernel, as the emulator does */
	int n_threads;
	bool calibrated;              /* measured by atm_prof_roofline_calibrate, else defaults */
	bool gpu_model;               /* a GPU's datasheet (atm_prof_roofline_gpu) */
	double bf16_speedup;          /* the convolutions, inner products and matmuls on bf16 run this
	                               * much above gflops (a GPU model's tensor cores); 0 or 1: no
	                               * faster (a CPU's, calibrated on f32 kernels) */
} atm_prof_roofline;

/* atm_prof_roofline_default -- round constants for this side of the model
 * (10 GFLOPS per thread for every op, 5 us a call, 10 GB/s, 4 MiB of cache)
 * and a slow tier as fast as the fast one: a model for tests, not for plans */
void atm_prof_roofline_default(atm_prof_roofline *rf, int n_threads);
/* atm_prof_roofline_gpu -- the model of a GPU described by its datasheet (--gpu-model): its
 * rates scaled by the shares its kernels reach, its L2 as the cache, its host link as the
 * slow tier's bandwidth (docs/gpu.md, "GPU models") */
void atm_prof_roofline_gpu(atm_prof_roofline *rf, const atm_gpu_model *m);
/* atm_prof_roofline_calibrate -- measure this side of the model: every op on
 * almost nothing, on operands that fit in the cache and (but convolutions,
 * which would take seconds) on operands twice its size, all of a made-up
 * graph (not the user's, no zoo shapes) in fast memory; the first two sets
 * three times over, keeping each op's fastest (5 to 15 s on a 2-core
 * machine); the slow figures stay as they are */
atm_status atm_prof_roofline_calibrate(atm_prof_roofline *rf, const atm_kbench_opts *o);

/* atm_prof_calibration_load -- rf's calibrated side (every op's rates, the streaming rate and
 * the cache size) from the machine file at path, kept there for machine m (its CPU, threads,
 * backend and fast tier): ATM_E_NOTFOUND when the file or m's entry is not there,
 * ATM_E_INPUT naming what is wrong when the file or the entry cannot be used (rf untouched
 * then) */
atm_status atm_prof_calibration_load(const char *path, const atm_profile_machine *m,
                                     atm_prof_roofline *rf);
/* atm_prof_calibration_parse -- the same from a machine file's text (named path in messages) */
atm_status atm_prof_calibration_parse(const char *path, const char *text, size_t len,
                                      const atm_profile_machine *m, atm_prof_roofline *rf);
/* atm_prof_calibration_save -- rf's calibrated side kept for machine m in the file at path
 * (folders made, other machines' entries kept, an unusable file replaced), atomically under a
 * lock on "PATH.lock" */
atm_status atm_prof_calibration_save(const char *path, const atm_profile_machine *m,
                                     const atm_prof_roofline *rf);
/* atm_prof_get_roofline -- the model an estimating run used; ATM_E_NOTFOUND
 * before one ran or when it estimated nothing */
atm_status atm_prof_get_roofline(const atm_prof *pr, atm_prof_roofline *rf);

/* Work of one kernel: FLOPs and bytes streamed by the kernel body (each op's rule is core's,
 * atm_node_work). */
typedef atm_work atm_prof_work;

/* atm_prof_kernel_work -- the work of node from its op and shapes (atm_node_work) */
atm_status atm_prof_kernel_work(const atm_graph *g, int32_t node, atm_prof_work *w);
/* atm_prof_roofline_s -- the model's seconds for a kernel of op with work w
 * whose operands are these bytes in fast and slow memory (each operand once) */
double atm_prof_roofline_s(const atm_prof_roofline *rf, atm_op op, const atm_prof_work *w,
                           int64_t fast_bytes, int64_t slow_read_bytes, int64_t slow_written_bytes);
/* atm_prof_estimate -- the estimated entry of node in config (estimated set,
 * count 1, min = median) */
atm_status atm_prof_estimate(const atm_prof_roofline *rf, const atm_graph *g, int32_t node,
                             uint32_t config, atm_profile_entry *e);

/* How far an estimated profile is from a measured one on g's configurations. */
typedef struct {
	int64_t n_configs;          /* configurations in both */
	double median_ape;          /* absolute percentage error of min_s, median over them */
	double mean_ape;
	double step_fast_est_s, step_fast_meas_s; /* sum over g's nodes, everything fast */
	double step_slow_est_s, step_slow_meas_s; /* everything that may be slow in slow memory */
} atm_prof_error;

/* atm_prof_compare -- est against meas over g; ATM_E_NOTFOUND when they share
 * no configuration of g */
atm_status atm_prof_compare(const atm_profile *est, const atm_profile *meas, const atm_graph *g,
                            atm_prof_error *out);

#ifdef __cplusplus
}
#endif

#endif /* ATM_PROFILER_H */
