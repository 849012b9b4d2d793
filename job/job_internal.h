/* job_internal.h -- the job's insides, shared by job.c and compare.c (private to job/) */
#ifndef ATM_JOB_INTERNAL_H
#define ATM_JOB_INTERNAL_H

#include "atm_job.h"

struct atm_job {
	atm_job_opts o;
	const atm_graph *g;
	const char *who;
	int64_t limit;         /* the plan's fast limit */
	atm_profile *prof;
	atm_plan *plan;
	bool planned;          /* by the optimizer: rep and chk hold */
	atm_opt_report rep;
	atm_opt_search *search; /* keep_search: the search over the ILP's model */
	atm_opt_check_result chk;
	double *kernel_pred_s; /* per node: the kernel's predicted time (with chk) */
	double oracle_s;       /* GPU: every kernel at its fastest, no moves; < 0 unknown */
	const char *memory_mode; /* 2LM: "hardware" or "emulated"; NULL otherwise */
	int64_t twolm_bytes;
	atm_exec *exec;
	/* a comparison's turns in fresh executors, merged as one run measures (kept_kernel_s
	 * NULL: none yet): the fastest step, each kernel's fastest time, means over every step */
	atm_exec_result kept;
	double *kept_kernel_s, *kept_step_kernel_s;
	float *kept_losses;
	/* the profile's calibration step of the graph (has_cal), and the drift since (<= 0:
	 * unknown) */
	atm_profile_calibration cal;
	bool has_cal;
	double drift;
	atm_st_file *weights, *data; /* o.weights_in and o.data_in, read and checked */
	char said_file[ATM_TIER_PATH_MAX]; /* the slow tier's file the writeback warning named */
	/* under mpirun: each rank's fastest step, and the mean over the ranks of each loss */
	double *rank_step_s;
	float *mean_losses;
	atm_plan **starts;     /* o.starts, read against g */
	int n_starts;
};

/* ---------------------------------------------------------------- the ranks (dist.c) */

/* job_dist -- the job is one of several ranks (o.comm active); job_rank -- which (0 alone) */
bool job_dist(const atm_job *j);
int job_rank(const atm_job *j);
/* job_dist_start -- the ranks run one job: the graph averages over as many ranks as there are,
 * and every rank has the same graph and options (the message names what differs) */
atm_status job_dist_start(atm_job *j);
/* job_dist_private_cache -- for ranks other than 0, a copy of the profile cache file cache in
 * path to profile alongside rank 0 ("" on rank 0, which keeps the cache) */
atm_status job_dist_private_cache(atm_job *j, const char *cache, char *path, size_t len);
/* job_dist_drop_private_cache -- that copy removed after profiling, with its lock file */
void job_dist_drop_private_cache(const char *path);
/* job_dist_plan -- rank 0's plan (its status rc: planned or not) on every rank, each checking it
 * against its own graph */
atm_status job_dist_plan(atm_job *j, atm_status rc);
/* job_dist_agree_plan -- every rank made the same plan (a built-in placement) */
atm_status job_dist_agree_plan(atm_job *j);
/* job_dist_gather -- after the run (r, what this rank measured): every rank's step (this rank's
 * step_s) and the mean losses, and the ranks' weights checked to be bitwise the same */
atm_status job_dist_gather(atm_job *j, const atm_exec_result *r, double step_s);
/* job_dist_fail_alone -- a failure rc < 0 that this rank met alone inside a step (the others are
 * in an allreduce or about to enter one): said with the rank, then every rank ended with its
 * exit code. Nothing when rc is ATM_OK or the job is not one of several ranks. */
void job_dist_fail_alone(const atm_job *j, atm_status rc);
/* job_dist_measured -- m's data-parallel fields from what the ranks gathered */
void job_dist_measured(const atm_job *j, const atm_exec_result *r, atm_run_measured *m);

/* job_write_weights -- the parameters j->exec holds now into path (safetensors, named as the
 * graph names them), atomically */
atm_status job_write_weights(const atm_job *j, const char *path, atm_st_dtype dtype);

/* job_say_drift -- the drift note on stderr unless quiet, when it is worth saying */
void job_say_drift(const char *who, bool quiet, double drift, const atm_profile_calibration *cal);

/* job_say_file -- unless quiet, the warning that the file f of a slow tier emulating emulation
 * (NULL: none) is on a disk whose writeback adds to its cost; said once per file: said holds
 * the last one named (ATM_TIER_PATH_MAX bytes) */
void job_say_file(const char *who, bool quiet, const atm_tier_file *f, const char *emulation,
                  char *said);
/* job_profile_graph -- atm_job_profile_graph, the writeback warning said once with said */
atm_status job_profile_graph(const char *who, const atm_graph *g, const atm_job_memory *mem,
                             const char *cache, bool estimate, bool isolated, bool quiet,
                             volatile sig_atomic_t *stop, atm_prof **pr, atm_profile **prof,
                             char *said);

/* job_exec_opts -- how the job's step is run */
atm_exec_opts job_exec_opts(const atm_job *j);
/* job_exec_open -- a new executor of the job's plan in j->exec */
atm_status job_exec_open(atm_job *j);
/* job_keep_turn -- what j->exec measured (finished) merged into the job's kept result, and the
 * executor released: its memory is given back before the next placement's turn */
atm_status job_keep_turn(atm_job *j);
/* job_measured -- the results record of what r measured for j (r's arrays borrowed) */
atm_run_measured job_measured(const atm_job *j, const atm_exec_result *r);

/* ---------------------------------------------------------------- start plans (starts.c) */

/* job_starts_load -- o.starts read against the graph into j->starts: ATM_E_INPUT naming the file
 * when one is another graph's or another formulation's plan, ATM_E_USAGE without optimize */
atm_status job_starts_load(atm_job *j);
void job_starts_free(atm_job *j);
/* job_starts_fit -- the start plans that fit the job's limit (its profile and limit settled)
 * under options oo, into fit, with their index in o.starts in map; each passed over said on
 * stderr unless quiet */
atm_status job_starts_fit(atm_job *j, const atm_opt_options *oo, const atm_plan **fit, int *map,
                          int *n_fit);
/* job_starts_said -- unless quiet, that the plan is a start plan's (j->rep.start_used, an index
 * into map) and why */
void job_starts_said(const atm_job *j, const int *map);
/* job_plans_out -- the job's plan into o.plans_out as FORMULATION.json (nothing without it) */
atm_status job_plans_out(const atm_job *j);

#endif /* ATM_JOB_INTERNAL_H */
