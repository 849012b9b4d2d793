/* atm_job.h -- the whole job of autotm run: profile what the cache lacks, plan, train, write the results
 *
 * Usage:
 *
 *     atm_job_opts o;
 *     atm_job_opts_default(&o);
 *     o.formulation = ATM_OPT_SYNCHRONOUS;
 *     o.optimize = true;
 *     o.ratio_slow = 4, o.ratio_fast = 1;             // fast = a fifth of the peak footprint
 *     o.mem.emulate = "optane";
 *     o.results_path = "vgg19.json", o.append = true;
 *     atm_job *j = NULL;
 *     if (atm_job_new(&j, g, &o) < 0 ||              // checks the GPU and the results path
 *         atm_job_plan(j) < 0 ||                     // profiles what is missing, solves
 *         atm_job_execute(j) < 0 ||                  // trains for real
 *         atm_job_write_results(j) < 0) ...;         // appends the run, under the file's lock
 *     printf("%g s\n", atm_job_exec_result(j)->actual_runtime_s);
 *     atm_job_destroy(j);
 *
 * The command line (cli/) and anything else that runs experiments share this one path, so
 * a run made by a driver is the run 'autotm run' makes. Messages go to stderr as
 * "autotm WHO: ..." unless quiet.
 */
#ifndef ATM_JOB_H
#define ATM_JOB_H

#include <signal.h>

#include "atm_comm.h"
#include "atm_core.h"
#include "atm_formats.h"
#include "atm_twolm.h"
#include "atm_optimizer.h"
#include "atm_profiler.h"
#include "atm_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a job's memories are: the tiers (and their emulation), or a GPU. */
typedef struct {
	atm_tier_opts tiers;
	const char *emulate; /* NULL, a preset or a tier spec file */
	atm_gpu_opts gpu;    /* gpu.mode NULL: the CPU */
} atm_job_memory;

typedef struct {
	const char *who;           /* names the command in messages ("run", "plan"); NULL: "run" */
	atm_job_memory mem;
	/* the placement: the optimizer's (optimize), or a built-in one or a plan file */
	bool optimize;
	atm_opt_formulation formulation;
	double ratio_slow, ratio_fast; /* the limit as slow:fast; both 0: limit_bytes */
	int64_t limit_bytes;       /* without a ratio; 0: none (on a GPU: the device memory) */
	atm_opt_options opt;       /* the solver, its threads and limits, window, rounds */
	const char *placement;     /* without optimize: all-fast, all-slow, random, managed (GPU)
	                            * or a plan file; NULL: all-fast */
	uint64_t placement_seed;   /* of the random placement */
	/* with optimize: plan files (autotm plan -o, run --plans-out) of the same graph and
	 * formulation, typically planned for smaller limits, read by atm_job_new (ATM_E_INPUT when
	 * one is another graph's or formulation's); those that fit the job's limit start the
	 * optimizer's plan (atm_opt_options.starts), which is then never predicted slower than
	 * they are; one that does not fit is passed over, said on stderr unless quiet */
	const char *const *starts;
	int n_starts;              /* at most ATM_JOB_MAX_STARTS */
	const char *plans_out;     /* with optimize: a folder (made when missing) the plan is written
	                            * into as FORMULATION.json once planned (NULL: none) */
	const char *cache;         /* the profile cache; NULL: atm_job_default_cache */
	bool estimate;             /* plan from an estimated (roofline) profile; nothing runs */
	bool isolated;             /* price kernels by their isolated times: no in-step
	                            * calibration is measured or used (atm_profile_in_step) */
	bool keep_search;          /* with optimize and an ILP formulation under a limit: plan
	                            * through atm_opt_search_new, the search over the ILP's model
	                            * kept for atm_job_search */
	/* the run */
	int iters, warmup;         /* as atm_exec_opts */
	uint64_t seed;             /* weights and data */
	int64_t twolm_bytes;       /* emulate 2LM with a cache of this size (all-slow plans) */
	/* weights and data in and out (safetensors, docs/formats.md), checked against the graph
	 * by atm_job_new before any work (atm_st_check) */
	const char *weights_in;    /* the parameters' starting values; NULL: the seed's */
	const char *data_in;       /* the step's inputs and labels; NULL: the seed's */
	const char *weights_out;   /* the parameters after the last step, written atomically by
	                            * atm_job_execute; NULL: none */
	atm_st_dtype weights_dtype; /* the parameters' dtype there: ATM_ST_F32 (the default, 0),
	                             * ATM_ST_BF16 or ATM_ST_F16, rounded to nearest even
	                             * (atm_st_narrow); the optimizer's states stay F32. Without
	                             * weights_out it changes nothing */
	/* the results */
	const char *results_path;  /* NULL: none */
	bool append;
	atm_results_workload workload;
	bool quiet;
	volatile sig_atomic_t *stop; /* set by a signal handler: the job ends with ATM_E_INTERRUPTED */
	/* data parallelism (mpirun): the job is one rank's of comm (NULL or one rank: a process
	 * alone); its graph averages its gradients over the ranks (atm_graph_with_allreduce) and
	 * trains this rank's shard of the batch of whole, the graph at the whole batch, against
	 * which --data is checked. Rank 0 profiles, plans and writes the results and the weights;
	 * every rank runs. */
	atm_comm *comm;
	const atm_graph *whole;
} atm_job_opts;

typedef struct atm_job atm_job;

/* The most start plans a job takes. */
#define ATM_JOB_MAX_STARTS 64

/* atm_job_plan_file_formulation -- the formulation plan file path names ("synchronous"), read
 * against g into buf: ATM_E_INPUT (or ATM_E_IO) prefixed with "--start PATH: " when it is no
 * plan of g */
atm_status atm_job_plan_file_formulation(const atm_graph *g, const char *path, char *buf,
                                         size_t len);

/* atm_job_opts_default -- synchronous, no limit, the optimizer's defaults, 5 steps after 1 */
void atm_job_opts_default(atm_job_opts *o);

/* atm_job_new -- a job for g (borrowed: it must outlive j). With optimize, the solver
 * (o->opt.solver) must be built in (ATM_E_UNSUPPORTED naming the package when not). With a
 * GPU the device is probed (ATM_E_UNSUPPORTED with the reason when there is none) and the
 * plan's limit capped at its memory; a results path is checked (atm_results_check) before
 * any work. */
atm_status atm_job_new(atm_job **j, const atm_graph *g, const atm_job_opts *o);
void atm_job_destroy(atm_job *j);

/* atm_job_ranks_get -- under mpirun, after atm_job_execute: m's data-parallel fields (ranks,
 * rank_batch, rank_step_s, allreduce_s and allreduce_pred_s) and the losses, the mean over the
 * ranks (n_losses of them); false (m untouched) for a process alone or before the run */
bool atm_job_ranks_get(const atm_job *j, atm_run_measured *m);

/* atm_job_ranks_status -- every rank's status after a step of the job, agreed (c NULL or one
 * rank: rc): ATM_OK when every rank's is; this rank's own failure with its message; else the
 * first failed rank's code, the message naming it. Where rank 0 failed, the other ranks' message
 * is ATM_JOB_SAID_BY_RANK0: rank 0 says why, once. Collective. */
#define ATM_JOB_SAID_BY_RANK0 "the ranks failed with rank 0, which said why"

/* atm_job_ranks_agree -- atm_comm_agree, its message (every rank's alike) said by rank 0: the
 * other ranks' is ATM_JOB_SAID_BY_RANK0. Collective. */
atm_status atm_job_ranks_agree(atm_comm *c, const char *what, uint64_t digest);
atm_status atm_job_ranks_status(atm_comm *c, atm_status rc);

/* atm_job_plan -- the job's plan: with optimize, the profile is completed (what the cache
 * lacks is measured, or estimated) and the formulation solved under the limit; the plan's
 * info records the ratio. Otherwise the built-in placement or the plan file. */
atm_status atm_job_plan(atm_job *j);
/* atm_job_execute -- train the planned step for real (not with estimate) */
atm_status atm_job_execute(atm_job *j);
/* atm_job_write_results -- the run into o->results_path (appended with o->append): what
 * atm_job_execute measured, or, when nothing ran, the plan alone (actual times null) */
atm_status atm_job_write_results(atm_job *j);
/* atm_job_run -- plan, execute (unless estimate) and write the results (when a path is set) */
atm_status atm_job_run(atm_job *j);

const atm_graph *atm_job_graph(const atm_job *j);
const atm_plan *atm_job_plan_get(const atm_job *j);
/* the optimizer's report and check of the plan; NULL unless the optimizer made it */
const atm_opt_report *atm_job_report(const atm_job *j);
const atm_opt_check_result *atm_job_check(const atm_job *j);
/* atm_job_kernel_predictions -- per node, its kernel's predicted time in the plan (the
 * checker's); NULL when the optimizer did not plan the job */
const double *atm_job_kernel_predictions(const atm_job *j);
/* atm_job_search -- the search over the plan's model (keep_search); NULL without one */
atm_opt_search *atm_job_search(const atm_job *j);
/* the profile the plan was priced with; NULL unless the optimizer made it */
const atm_profile *atm_job_profile(const atm_job *j);
/* what the run measured; NULL before atm_job_execute */
const atm_exec_result *atm_job_exec_result(const atm_job *j);

/* How far the machine has drifted since the profile was calibrated: the all-fast step a run
 * measures over the one the profile's in-step calibration measured for the graph
 * (atm_profile_calibration). A prediction in seconds is off by about as much; a slowdown
 * against all-fast measured beside it is not. When all-fast's step differs by more than this
 * share, the job says so on stderr (unless quiet). */
#define ATM_JOB_DRIFT_SAID 0.10
/* atm_job_calibration -- the calibration step of the job's graph in the profile that priced it
 * (in a comparison, any of its placements' profile); NULL when there is none */
const atm_profile_calibration *atm_job_calibration(const atm_job *j);
/* atm_job_profile_drift -- all-fast's measured step over the calibration's: set by
 * atm_job_execute when the job is the optimizer's all-fast, and for every placement of a
 * comparison with all-fast; <= 0 when unknown */
double atm_job_profile_drift(const atm_job *j);
/* atm_job_drift_note -- the message said for a drift (two lines, no prefix, no final newline)
 * into buf, when |drift - 1| > ATM_JOB_DRIFT_SAID; false (buf empty) when it is smaller or
 * unknown */
bool atm_job_drift_note(double drift, const atm_profile_calibration *cal, char *buf, size_t len);

/* ------------------------------------------------------------ comparisons */

/* Several placements of one workload compared side by side (docs/comparisons.md):
 *
 *     atm_job_placement pl[3] = {{.optimize = true, .formulation = ATM_OPT_ALL_FAST},
 *                                {.optimize = true, .formulation = ATM_OPT_SYNCHRONOUS},
 *                                {.placement = "plan.json"}};
 *     atm_job_compare_opts co = {.turns = 7};
 *     atm_job_compare *c = NULL;
 *     if (atm_job_compare_new(&c, g, &o, pl, 3, &co) < 0 ||   // bad lists refused here
 *         atm_job_compare_plan(c) < 0 ||                      // an infeasible one is left out
 *         atm_job_compare_run(c) < 0 ||                       // trained in turns
 *         atm_job_compare_write_results(c) < 0) ...;          // every run in one append
 *     atm_job_compare_destroy(c);
 *
 * Every placement is planned first, then trained in turns in this process, the order rotated
 * from turn to turn, so that a ratio of two placements pairs steps measured side by side: a
 * machine whose speed drifts over minutes moves both alike. Weights and data start from
 * o->seed for every placement and every placement runs as many steps, so all of them train to
 * bitwise the same weights. */

/* One placement of a comparison: a formulation the optimizer plans (optimize), or a built-in
 * placement or plan file (placement), as atm_job_opts says them. */
typedef struct {
	bool optimize;
	atm_opt_formulation formulation;
	bool recompute;     /* an ILP formulation with recomputation ("synchronous+recompute") */
	const char *placement;
} atm_job_placement;

/* How the placements take turns. */
typedef enum {
	ATM_JOB_INTERLEAVE_AUTO = 0, /* step where every executor can stay alive (not on a real
	                              * GPU, and their memories fit what is available), else turn */
	ATM_JOB_INTERLEAVE_STEP,     /* every placement's executor alive for the whole comparison; a
	                              * turn is iters rounds of one step of each in the turn's order */
	ATM_JOB_INTERLEAVE_TURN,     /* a fresh executor per placement and turn (warm-up, then iters
	                              * steps), released before the next */
} atm_job_interleave;

/* A round (step) or a placement's turn (turn) is disturbed when other processes took more
 * than this share of a core while it ran; it is then measured again, a few times at most. */
#define ATM_JOB_DISTURBED_CORES 0.10
/* Rounds shorter than this are not judged: /proc/stat counts in ticks of 10 ms. */
#define ATM_JOB_JUDGED_S 0.5

typedef struct {
	int turns;                 /* 0: 5 */
	atm_job_interleave interleave;
	int max_reruns;            /* per turn, disturbed rounds (or, by turn, a placement's turns)
	                            * measured again at most this often; < 0: none; 0: iters */
	double disturbed_cores;    /* 0: ATM_JOB_DISTURBED_CORES */
	/* called after every turn (its index) and before the comparison goes on: a test's hook */
	void (*on_turn)(void *arg, int turn);
	void *arg;
} atm_job_compare_opts;

typedef struct atm_job_compare atm_job_compare;

/* What one placement of a comparison measured (after atm_job_compare_run). */
typedef struct {
	const char *name;          /* as listed: the formulation, built-in placement or plan file */
	atm_status left_out;       /* ATM_OK, or why it was not compared (ATM_E_INFEASIBLE: its
	                            * plan, or its executor, does not fit) */
	const char *why;           /* the message when left out */
	int n_turns;
	const double *turn_s;      /* per turn: its step (the fastest of the turn's steps) */
	const int *turn_position;  /* per turn: where it ran in the turn's order, 0 first */
	const double *turn_others; /* per turn: cores other processes took while it ran; < 0 unknown */
	const int *turn_reruns;    /* per turn: measured again because disturbed */
	double median_s;           /* the median of turn_s: the run's actual_runtime */
	double predicted_s;        /* the plan's predicted step with the machine's drift since it was
	                            * profiled (profile_drift) on every time but the emulated waits;
	                            * as planned where the drift is unknown; < 0 unknown */
	double predicted_raw_s;    /* the plan's predicted step as planned; < 0 unknown */
	double predicted_wait_s;   /* of that, the emulated slow tier's waits, which do not drift
	                            * (atm_schedule_emulated_wait_s; 0 without emulation or for 2lm) */
	/* against all-fast, turn by turn (< 0: no all-fast in the comparison, or unknown); the
	 * predicted slowdown from predicted_s, the raw one from predicted_raw_s */
	double predicted_slowdown, predicted_slowdown_raw, measured_slowdown, slowdown_min,
	       slowdown_max;
	double profile_drift;      /* all-fast's median step / the profile's calibration step, the
	                            * same for every placement; <= 0 unknown (atm_job_profile_drift) */
} atm_job_compared;

/* atm_job_compare_new -- a comparison of the n placements pl (copied) of g (borrowed: it
 * outlives c), each run as o says (its results path, checked now, takes every run at the end;
 * o's own placement and formulation are not used). Refused with ATM_E_USAGE before anything is
 * profiled: no placement, one listed twice, a list mixing placements that need a GPU (managed)
 * with ones a GPU cannot run (all-slow, 2lm) or either without its device, step interleaving
 * on a real GPU; a plan file is read now (ATM_E_INPUT when it is another graph's) */
atm_status atm_job_compare_new(atm_job_compare **c, const atm_graph *g, const atm_job_opts *o,
                               const atm_job_placement *pl, int n, const atm_job_compare_opts *co);
void atm_job_compare_destroy(atm_job_compare *c);
/* atm_job_compare_plan -- every placement planned (the profile completed once); one whose plan
 * is infeasible is said on stderr (unless quiet) and left out; ATM_E_INFEASIBLE when none is
 * left */
atm_status atm_job_compare_plan(atm_job_compare *c);
/* atm_job_compare_run -- the placements trained in turns; an executor that cannot be made (its
 * plan exceeds the device, managed memory does not fit) leaves its placement out as above.
 * Progress on stderr unless quiet. ATM_E_INTERRUPTED when o->stop was set: nothing is kept */
atm_status atm_job_compare_run(atm_job_compare *c);
/* atm_job_compare_write_results -- every compared placement's run into o->results_path in one
 * append (or file) under its lock */
atm_status atm_job_compare_write_results(atm_job_compare *c);

int atm_job_compare_n(const atm_job_compare *c);
/* atm_job_compare_get -- placement i (in the order listed) as measured */
const atm_job_compared *atm_job_compare_get(const atm_job_compare *c, int i);
/* atm_job_compare_job -- placement i's job (its plan, report, exec result); NULL when left out */
const atm_job *atm_job_compare_job(const atm_job_compare *c, int i);
/* atm_job_compare_id -- the comparison's id, unique per process: time, process id, random bits */
const char *atm_job_compare_id(const atm_job_compare *c);
/* atm_job_compare_interleave -- how the turns were taken: "step" or "turn" (after run) */
const char *atm_job_compare_interleave(const atm_job_compare *c);
/* atm_job_compare_ratio -- after run: placement i's step over placement ref's, turn by turn,
 * their median and range; false when either was left out (or memory ran out) */
bool atm_job_compare_ratio(const atm_job_compare *c, int i, int ref, double *median, double *lo,
                           double *hi);
/* atm_job_compare_all_fast -- the index of all-fast among the compared placements; -1: none */
int atm_job_compare_all_fast(const atm_job_compare *c);

/* ------------------------------------------------------------ shared steps */

/* atm_job_default_cache -- $XDG_CACHE_HOME/autotm/profiles.json or
 * ~/.cache/autotm/profiles.json, its folders made when missing */
atm_status atm_job_default_cache(char *buf, size_t len);

/* atm_job_memory_resolve -- with mem->gpu.mode: check the GPU is there (ATM_E_UNSUPPORTED when
 * not) and fill in the device memory a plan may use; says which on stderr unless quiet. With
 * mem->emulate: the preset or tier spec is read now (a bad one is refused before any work),
 * with a warning unless quiet when its slow tier is no slower than its fast one */
atm_status atm_job_memory_resolve(const char *who, atm_job_memory *mem, bool quiet);

/* atm_job_fast_limit -- the limit a plan is made for: on a GPU its device memory unless limit
 * asks for less; limit itself elsewhere */
int64_t atm_job_fast_limit(const atm_job_memory *mem, int64_t limit);

/* atm_job_open_cache -- the profile of pr's machine in cache (NULL: the default), opened (and
 * read whole) before anything is measured; with rebuild its entries start over */
atm_status atm_job_open_cache(const atm_prof *pr, const char *cache, bool rebuild,
                              atm_profile **prof);

/* atm_job_profile_graph -- the profile of g on mem's memories from cache (NULL: the
 * default), with what it lacks profiled now (estimated with estimate; without its in-step
 * calibration, and not using it, with isolated); *pr and *prof are the caller's to destroy,
 * also on failure */
atm_status atm_job_profile_graph(const char *who, const atm_graph *g, const atm_job_memory *mem,
                                 const char *cache, bool estimate, bool isolated, bool quiet,
                                 volatile sig_atomic_t *stop, atm_prof **pr, atm_profile **prof);

#ifdef __cplusplus
}
#endif

#endif /* ATM_JOB_H */
