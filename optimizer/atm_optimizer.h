/* atm_optimizer.h -- tensor placement: ILP formulations on GLPK or CBC, baseline policies, the plan checker.
 *
 * Usage:
 *
 *     int64_t limit;
 *     atm_opt_limit_from_ratio(g, 4, 1, &limit);          // fast = peak footprint / 5
 *     atm_opt_options o;
 *     atm_opt_options_default(&o);                        // 1% gap, 60 s, quiet
 *     atm_opt_report rep;
 *     atm_plan *plan = NULL;
 *     if (atm_opt_plan(&plan, g, prof, limit, ATM_OPT_SYNCHRONOUS, &o, &rep) < 0)
 *             fprintf(stderr, "%s\n", atm_errmsg());     // infeasible: names the least limit
 *     atm_opt_check_result chk;
 *     atm_opt_check(plan, prof, &o, &chk);                // walks the schedule independently
 *     printf("%.3f s predicted, ILP said %.3f s\n", chk.predicted_s, rep.objective_s);
 *     atm_opt_explain(plan, prof, &o, stdout);            // a timeline a person can read
 *     atm_plan_destroy(plan);
 *
 * The optimizer reads a graph and a profile (kernel times per IO configuration,
 * copy bandwidths) and writes an atm_plan: initial locations, moves, the fast
 * limit, the predicted runtime and the solver's figures. It never runs kernels.
 * Formulations and their models are described in docs/optimizer.md.
 */
#ifndef ATM_OPTIMIZER_H
#define ATM_OPTIMIZER_H

#include <signal.h>
#include <stdio.h>

#include "atm_core.h"
#include "atm_formats.h"
#include "atm_twolm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
	ATM_OPT_STATIC = 0,   /* ILP: one location per tensor for its whole life */
	ATM_OPT_SYNCHRONOUS,  /* ILP: moves right before and after uses, blocking */
	ATM_OPT_ASYNCHRONOUS, /* ILP: synchronous moves plus copies overlapping kernels near uses */
	ATM_OPT_ALL_FAST,     /* every tensor fast, no limit */
	ATM_OPT_ALL_SLOW,     /* every tensor that may be slow is slow */
	ATM_OPT_NUMA,         /* first touch: fast while it fits, never moves */
	ATM_OPT_2LM,          /* all slow behind fast memory used as a hardware cache (predicted) */
	ATM_OPT_VDNN,         /* vDNN: offload convolution inputs, prefetch one layer early */
	ATM_OPT_N_FORMULATIONS
} atm_opt_formulation;

/* What a plan's formulation says after its name when it may recompute ("synchronous+recompute") */
#define ATM_OPT_RECOMPUTE_SUFFIX "+recompute"

/* atm_opt_formulation_name -- "static", "synchronous", ..., "2lm", "vdnn" */
const char *atm_opt_formulation_name(atm_opt_formulation f);
/* atm_opt_formulation_from_name -- ATM_E_USAGE listing the valid names when unknown */
atm_status atm_opt_formulation_from_name(const char *s, atm_opt_formulation *out);
/* atm_opt_is_ilp -- static, synchronous and asynchronous are solved as integer programs */
bool atm_opt_is_ilp(atm_opt_formulation f);

/* The integer-programming solver behind the ILP formulations. */
typedef enum {
	ATM_OPT_SOLVER_AUTO = 0, /* the best this build has: CBC when built with it, else GLPK */
	ATM_OPT_SOLVER_GLPK,     /* GNU GLPK: always built */
	ATM_OPT_SOLVER_CBC,      /* COIN-OR CBC (Clp's LP): built when coinor-libcbc-dev is found */
	ATM_OPT_N_SOLVERS
} atm_opt_solver;

/* atm_opt_solver_name -- "auto", "glpk", "cbc" */
const char *atm_opt_solver_name(atm_opt_solver s);
/* atm_opt_solver_from_name -- ATM_E_USAGE listing the valid names when unknown */
atm_status atm_opt_solver_from_name(const char *s, atm_opt_solver *out);
/* atm_opt_solver_resolve -- the solver s stands for in this build (auto: the best available),
 * or ATM_E_UNSUPPORTED naming the package to build with when s is not built in */
atm_status atm_opt_solver_resolve(atm_opt_solver s, atm_opt_solver *out);
/* atm_opt_solver_version -- the library's version text ("GLPK 5.0", "CBC 2.10.8"; "" when
 * not built in) */
const char *atm_opt_solver_version(atm_opt_solver s);

typedef struct {
	double mip_gap;        /* relative gap at which the search stops (default 0.01; 0: optimal) */
	double time_limit_s;   /* wall-clock limit of the whole plan, every defragmentation round
	                        * together (default 60; a round that starts after it uses the
	                        * heuristic alone) */
	int verbosity;         /* 0 quiet, 1 the solver's progress, 2 its full log */
	int async_window;      /* kernels before a use where an asynchronous fetch may overlap (default 2) */
	int max_rounds;        /* defragmentation rounds before giving up (default and at most
	                        * ATM_PLAN_MAX_ROUNDS) */
	int64_t pin_bytes;     /* tensors up to this size stay in fast memory, out of the model
	                        * (default -1: min(64 KiB, peak / 4096); 0: none) */
	bool workspace_in_limit; /* count kernels' workspace against the limit (the CPU runtime
	                          * keeps scratch outside the arena, so default false). With
	                          * device_only it is the workspace of each kernel's algorithm,
	                          * chosen by the formulations against the room for tensors, and
	                          * the plan reserves it in the fast arena while the kernel runs */
	bool no_seed;          /* do not hand the solver the heuristic's plan (for tests and
	                        * comparisons) */
	bool full_model;       /* solve the full program, every phase of every tensor with its
	                        * states and every gate's stays as columns, not the reduced one
	                        * (the default), whose optimum and relaxation are the same: for
	                        * checking the reduction */
	bool recompute;        /* static, synchronous and asynchronous: a tensor may also be
	                        * dropped after a use and computed again before a later one
	                        * (atm_recompute); the baselines refuse it (ATM_E_USAGE) */
	atm_opt_solver solver; /* default ATM_OPT_SOLVER_AUTO */
	int threads;           /* solver threads (CBC; GLPK has one): 0, the default, is one per
	                        * core the process may run on */
	const char *write_model; /* write each round's model here, MPS (".mps") or CPLEX LP (".lp"),
	                          * replaced atomically: the file holds the final round's (NULL:
	                          * none) */
	bool device_only;      /* a GPU: every kernel reads and writes fast (device) memory only,
	                        * so a tensor in slow (host) memory is fetched before its use; the
	                        * profile holds each kernel's all-fast configuration alone */
	volatile sig_atomic_t *stop; /* set (by a signal handler) to end the plan: the heuristic
	                              * and GLPK stop within a fraction of a second and atm_opt_plan
	                              * returns ATM_E_INTERRUPTED (NULL: never) */
	/* plans found before, typically at smaller limits, of the same graph (the very graph
	 * object: load a plan file against it with atm_plan_load) and formulation: each is
	 * re-labelled with the new limit, laid out and checked (atm_opt_start_check), and where the
	 * fastest that fits is predicted faster than the plan found, it is the plan returned
	 * ("Monotone in the budget" in docs/optimizer.md). A start that does not fit is passed
	 * over (atm_opt_report's start_note says why); one of another graph or formulation fails
	 * the plan with ATM_E_INPUT. Borrowed: they must outlive the call */
	const atm_plan *const *starts;
	int n_starts;
} atm_opt_options;

/* The solver status of a plan that is a start plan re-labelled with a larger limit (the plan
 * found at that limit was predicted slower, or none was found) */
#define ATM_OPT_STATUS_START "smaller limit's plan"

/* atm_opt_options_default -- the defaults above */
void atm_opt_options_default(atm_opt_options *o);

/* What one round of solving did (a round per defragmentation attempt). */
typedef struct {
	int64_t fast_limit_bytes;    /* the tightest per-node limit the round used */
	double creation_s, solve_s;  /* model building; heuristic + LP + branch and bound */
	double objective_s;          /* the round's plan as the model prices it */
	double ilp_objective_s;      /* the same plan priced by the model's objective (< 0: no
	                              * solver was run this round) */
	double bound_s;              /* best lower bound proved (< 0: none) */
	double mip_gap;              /* final relative gap (< 0: unknown) */
	char status[32];             /* "optimal", "within gap", "time-limit", "heuristic", ... */
	bool fits;                   /* the plan fitted the fast arena (first fit) */
} atm_opt_round;

/* Model size and outcome of atm_opt_plan. */
typedef struct {
	int32_t n_columns, n_rows, n_binaries;
	int64_t n_nonzeros;
	int32_t n_movable;           /* tensors the model places (others are fixed or pinned) */
	int64_t pinned_bytes;        /* bytes of tensors kept in fast memory out of the model */
	double objective_s;          /* the final plan's step time as the model prices it */
	double heuristic_s;          /* the heuristic incumbent's step time (< 0: none) */
	double nested_s;             /* asynchronous: the synchronous program's plan, solved first
	                              * as a start (< 0: none) */
	char solver[16];             /* the solver that ran: "glpk", "cbc" ("" for baselines) */
	int n_rounds;
	atm_opt_round rounds[ATM_PLAN_MAX_ROUNDS];
	/* the options' start plans (o->starts): */
	int32_t n_starts_fit;        /* how many fit this limit */
	int32_t start_used;          /* the index of the start returned, faster than the plan found
	                              * here or standing where none was found (-1: the plan found) */
	double start_s;              /* the fastest start that fits, predicted (< 0: none) */
	double found_s;              /* the plan found here, predicted (< 0: none or not compared) */
	char start_note[640];        /* the start taken and why, or the first one passed over and
	                              * why ("": nothing to say) */
} atm_opt_report;

/* atm_opt_plan -- a plan of g under fast_limit_bytes (0: no limit) with formulation f, priced
 * by prof. ILP formulations build a model, seed the solver (o->solver) with a heuristic plan,
 * solve within o->time_limit_s to o->mip_gap, and fall back to the heuristic plan when the
 * solver finds nothing better or fails (a model it cannot solve numerically: solver_status says so). The plan is
 * laid out with first fit; when it does not fit the arena for fragmentation, the limit is
 * tightened around the nodes that overflow and the model solved again, each round recorded in
 * rep and in the plan's info. The plan's predicted runtime
 * is atm_opt_check's. Errors: ATM_E_INFEASIBLE when no plan fits (the message names the node
 * and the smallest limit that could work), ATM_E_NOTFOUND for a kernel configuration or move
 * bandwidth missing from the profile (run 'autotm profile'), ATM_E_USAGE for bad options,
 * ATM_E_INTERRUPTED when o->stop was set, ATM_E_UNSUPPORTED when o->solver is not built in,
 * ATM_E_IO when o->write_model cannot be written, ATM_E_INPUT (before any work) for a start plan
 * (o->starts) of another graph or formulation. With starts, the plan returned is never predicted
 * slower than the fastest start that fits limit: that start, re-labelled, where it is faster than
 * the plan found or none was found (rep's start fields say which and why). rep may be NULL. prof and g must outlive the plan's use of them; the plan refers to g. */
atm_status atm_opt_plan(atm_plan **plan, const atm_graph *g, const atm_profile *prof,
                        int64_t fast_limit_bytes, atm_opt_formulation f, const atm_opt_options *o,
                        atm_opt_report *rep);

/* atm_opt_start_check -- start as a plan of g under limit with formulation f (and o's
 * recomputation), priced by prof: ATM_E_INPUT when it is a plan of another graph object or
 * formulation (the message names them), ATM_E_INFEASIBLE when, re-labelled with limit and laid
 * out again, it does not fit (the checker's message, prefixed with both limits). Else its
 * predicted step in *predicted_s and, when out is not NULL, the re-labelled copy in *out (the
 * caller's to destroy) */
atm_status atm_opt_start_check(const atm_plan *start, const atm_graph *g, const atm_profile *prof,
                               int64_t limit, atm_opt_formulation f, const atm_opt_options *o,
                               atm_plan **out, double *predicted_s);

/* atm_opt_plan_sweep -- a plan of g for each of the n limits (0: no limit) with formulation f,
 * planned from the smallest limit up, every plan found so far (and o's starts) a start of the
 * next: the predicted steps never rise with the limit. plans[i] is limits[i]'s (NULL where no
 * plan fits it: ATM_E_INFEASIBLE at that limit alone), reps[i] its report (reps may be NULL);
 * each limit gets o->time_limit_s. ATM_OK when at least one limit has a plan; the last
 * infeasible limit's error when none has; any other error (usage, interrupted, a profile
 * without an entry) ends the sweep, every plan released */
atm_status atm_opt_plan_sweep(atm_plan **plans, const atm_graph *g, const atm_profile *prof,
                              const int64_t *limits, int n, atm_opt_formulation f,
                              const atm_opt_options *o, atm_opt_report *reps);

/* ---------------------------------------------------------------- limits */

/* atm_opt_parse_ratio -- "S:F" (slow:fast, non-negative numbers, not both 0) */
atm_status atm_opt_parse_ratio(const char *s, double *slow, double *fast);
/* atm_opt_limit_from_ratio -- fast bytes for slow:fast: peak footprint * F / (S + F).
 * 0:1 gives 0 (no limit: all fast); 1:0 gives the least limit any plan needs (the tensors
 * that may only be fast; at least 1 byte, since 0 means no limit). */
atm_status atm_opt_limit_from_ratio(const atm_graph *g, double slow, double fast, int64_t *bytes);
/* atm_opt_choose_algos -- every node of p runs the fastest algorithm prof holds for it with
 * its operands fast and a workspace within ATM_GPU_WORKSPACE_BYTES (GPU plans; the
 * formulations do this themselves with device_only) */
atm_status atm_opt_choose_algos(atm_plan *p, const atm_profile *prof);
/* atm_opt_min_limit -- the least fast limit any formulation can meet: the bytes of tensors that
 * may only live in fast memory, each rounded up to the arena's 64-byte alignment (plus
 * workspace when counted, and with o->device_only every operand of the node), at the worst
 * node, returned in node (-1 when nothing must be fast) */
atm_status atm_opt_min_limit(const atm_graph *g, const atm_opt_options *o, int64_t *bytes,
                             int32_t *node);
/* atm_opt_min_limit_profiled -- the same, where a GPU's workspace (o->device_only and
 * o->workspace_in_limit) is the smallest any algorithm prof holds for the node needs
 * (atm_opt_min_limit, and prof NULL, count none there) */
/* atm_opt_least_limit -- the least fast limit formulation f can be planned at (--ratio 1:0):
 * atm_opt_min_limit_profiled's, and on a GPU (o->device_only) the most bytes the program
 * itself must hold on the device at any point (a kernel's operands from just before its use
 * to just after) */
atm_status atm_opt_least_limit(const atm_graph *g, const atm_profile *prof,
                               atm_opt_formulation f, const atm_opt_options *o, int64_t *bytes);
atm_status atm_opt_min_limit_profiled(const atm_graph *g, const atm_profile *prof,
                                      const atm_opt_options *o, int64_t *bytes, int32_t *node);

/* ---------------------------------------------------------------- checking */

/* What the checker found walking a plan's schedule. */
typedef struct {
	double predicted_s;       /* one step: kernels, blocking moves, waits for asynchronous ones */
	double kernel_s;          /* sum of kernel times in their IO configurations */
	double all_fast_kernel_s; /* the same kernels with every operand fast */
	double sync_move_s;       /* time blocked in synchronous moves */
	double async_wait_s;      /* time the schedule waited for asynchronous moves */
	double overlap_loss_s;    /* time kernels lost to the asynchronous copies beside them
	                           * (the profile's overlap_loss of each copy's time) */
	double cache_miss_s;      /* 2lm plans: time added by cache misses and write-backs */
	atm_twolm_traffic cache_traffic; /* 2lm plans: the slow traffic behind it (atm_twolm_wait_s) */
	int64_t fast_peak_bytes;  /* most bytes of fast copies at once (+ workspace when counted) */
	int32_t fast_peak_node;
	int64_t fast_arena_bytes; /* arena extent the offsets use */
	int32_t n_moves, n_async_moves;
	double recompute_s;       /* kernels run again for the plan's recomputations, in the
	                           * configuration their inputs have there (in predicted_s, not in
	                           * kernel_s) */
	int32_t n_recomputes;
} atm_opt_check_result;

/* atm_opt_check -- prove plan p within its fast limit and price it. It walks p's schedule
 * (atm_schedule_new) with its own bookkeeping: fast bytes at every allocation are at most the
 * limit, fast copies never overlap and lie inside the arena; then the step's time: kernels at
 * their profile times (min_s) in the configuration the schedule gives them, synchronous moves
 * blocking, asynchronous ones on one copy channel overlapping the kernels, waits where the
 * schedule waits. Plans of formulation "2lm" are priced with atm_opt_predict_2lm instead.
 * It shares no code with the ILP. o may be NULL (defaults). */
atm_status atm_opt_check(const atm_plan *p, const atm_profile *prof, const atm_opt_options *o,
                         atm_opt_check_result *out);
/* atm_opt_check_nodes -- atm_opt_check, and each node's predicted kernel time (its profile time
 * in the configuration the schedule gives it; for 2lm plans with its cache misses) in node_s,
 * an array of atm_graph_n_nodes doubles (NULL: not wanted) */
atm_status atm_opt_check_nodes(const atm_plan *p, const atm_profile *prof,
                               const atm_opt_options *o, atm_opt_check_result *out,
                               double *node_s);

/* atm_opt_predict_2lm -- a step of g with every tensor that may be slow in slow memory behind
 * a cache of cache_bytes (twolm's direct-mapped model, as the executor emulates it, over the
 * addresses a model of the runtime's slow heap gives): kernels at their all-fast time plus
 * missed lines at the copy-to-fast bandwidth and written back lines at the copy-to-slow
 * bandwidth, measured in a second step (a warm cache). ATM_E_USAGE when cache_bytes is not
 * positive or holds no whole line. */
atm_status atm_opt_predict_2lm(const atm_graph *g, const atm_profile *prof, int64_t cache_bytes,
                               atm_opt_check_result *out);

/* atm_opt_explain -- a readable timeline of p: what lives where, the moves each node starts
 * and waits for, and the kernels slowed by slow operands with their predicted cost */
atm_status atm_opt_explain(const atm_plan *p, const atm_profile *prof, const atm_opt_options *o,
                           FILE *f);

/* ---------------------------------------------------------------- searching */

/* A searching baseline that checks the ILP (docs/optimizer.md, "A searching baseline"):
 *
 *     atm_opt_search *s = NULL;
 *     atm_plan *ilp = NULL;
 *     atm_opt_search_new(&s, &ilp, g, prof, limit, ATM_OPT_ASYNCHRONOUS, &o, &rep);
 *     atm_opt_search_params sp = {.evaluations = 2000, .seed = 1};
 *     atm_opt_search_outcome r;
 *     atm_opt_search_run(s, ATM_OPT_SEARCH_HILL_SLOW, &sp, &r);   // r.best_s, r.candidate
 *     atm_plan *p = NULL;
 *     atm_opt_search_plan(s, r.candidate, &p);                     // a plan like the ILP's
 *
 * The search space is the ILP's own: a state for every phase of every movable tensor (moves
 * where the formulation's gates allow them), persistent tensors pinned or not, under the final
 * round's per-slot limits. Every candidate it keeps is feasible there, priced by the model
 * (the ILP's objective) and laid out by first fit in the fast arena (atm_schedule_new). The
 * candidates kept are numbered; 0 is the ILP's own placement. Deterministic for a seed. */
typedef enum {
	ATM_OPT_SEARCH_HILL_ILP = 0, /* hill climbing from the ILP's placement */
	ATM_OPT_SEARCH_HILL_SLOW,    /* ... from every movable tensor slow */
	ATM_OPT_SEARCH_HILL_RANDOM,  /* ... from a random feasible placement */
	ATM_OPT_SEARCH_GENETIC,      /* a population (the ILP's, all-slow, random ones): crossover by
	                              * tensor, mutation, repair of what exceeds the limit */
	ATM_OPT_SEARCH_N_METHODS
} atm_opt_search_method;

/* atm_opt_search_method_name -- "hill-ilp", "hill-slow", "hill-random", "genetic" */
const char *atm_opt_search_method_name(atm_opt_search_method m);
/* atm_opt_search_method_from_name -- ATM_E_USAGE listing the valid names when unknown */
atm_status atm_opt_search_method_from_name(const char *s, atm_opt_search_method *out);

typedef struct atm_opt_search atm_opt_search;

typedef struct {
	int evaluations;  /* candidates proposed (each one priced or refused) per run; 0: 2000 */
	uint64_t seed;    /* of every random choice */
	int population;   /* genetic: placements kept (0: 12; at least 4) */
} atm_opt_search_params;

/* What one run of a method did. */
typedef struct {
	double start_s;        /* the start's predicted step (genetic: its first population's best) */
	double best_s;         /* the best candidate's, feasible and laid out */
	int evaluations;       /* candidates proposed */
	int refused;           /* of them, over a slot's limit, invalid, or not laid out */
	int improvements;      /* times the best improved */
	int candidate;         /* the best's number (atm_opt_search_plan) */
} atm_opt_search_outcome;

/* atm_opt_search_new -- the ILP's plan of g under limit > 0 with formulation f (static,
 * synchronous or asynchronous; atm_opt_plan without recomputation, handed over in *ilp) and a
 * search over its final model. g and prof are borrowed: they outlive s. ATM_E_USAGE for a
 * baseline formulation, no limit or recomputation; atm_opt_plan's errors otherwise. */
atm_status atm_opt_search_new(atm_opt_search **s, atm_plan **ilp, const atm_graph *g,
                              const atm_profile *prof, int64_t limit, atm_opt_formulation f,
                              const atm_opt_options *o, atm_opt_report *rep);
void atm_opt_search_destroy(atm_opt_search *s);
/* atm_opt_search_run -- one run of method m within p->evaluations; its best into r (kept as a
 * candidate). ATM_E_USAGE for bad parameters, ATM_E_INTERRUPTED when o->stop was set. */
atm_status atm_opt_search_run(atm_opt_search *s, atm_opt_search_method m,
                              const atm_opt_search_params *p, atm_opt_search_outcome *r);
/* atm_opt_search_neighbours -- up to n new candidates next to candidate from (one move away:
 * a phase's state, a persistent tensor pinned or not, or a swap), each feasible, laid out and
 * unlike every kept one, the best predicted first, from tries proposals; their numbers into
 * idx, how many into *n_out (0 when none is left) */
atm_status atm_opt_search_neighbours(atm_opt_search *s, int from, int n, int tries, uint64_t seed,
                                     int *idx, int *n_out);
/* atm_opt_search_n -- candidates kept; atm_opt_search_predicted -- candidate i's predicted step */
int atm_opt_search_n(const atm_opt_search *s);
double atm_opt_search_predicted(const atm_opt_search *s, int i);
/* atm_opt_search_plan -- a new plan of candidate i, priced by the checker (its predicted
 * runtime), its formulation the ILP's (a placement of the same program) and its solver_status
 * how it was found ("search: hill-slow", "search: a neighbour", "search: the ILP's") */
atm_status atm_opt_search_plan(const atm_opt_search *s, int i, atm_plan **p);
/* atm_opt_search_diff -- where candidates a and b differ, tensor by tensor (its bytes, where
 * each starts and its moves), at most max_lines of them to f (NULL: none); how many tensors
 * differ (-1: no such candidates) */
int atm_opt_search_diff(const atm_opt_search *s, int a, int b, const char *name_a,
                        const char *name_b, int max_lines, FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* ATM_OPTIMIZER_H */
