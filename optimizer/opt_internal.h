/* opt_internal.h -- the optimizer's private model: per-tensor gate chains, kernel units, memory slots */
#ifndef ATM_OPT_INTERNAL_H
#define ATM_OPT_INTERNAL_H

#include <stdint.h>

#include "atm_optimizer.h"

/* A tensor's location between two moves: slow only, fast with no valid slow copy,
 * or fast with a valid slow copy (evicting it is free). */
enum { ST_S = 0, ST_F, ST_B, N_ST };
#define EDGE(a, b) ((a) * N_ST + (b))
#define N_EDGES (N_ST * N_ST)
#define EDGE_FROM(e) ((e) / N_ST)
#define EDGE_TO(e) ((e) % N_ST)
#define IS_FAST(st) ((st) != ST_S)

/* Memory slots, in time order: M(-1) before node 0 (setup moves), then for every node k
 * K(k) while it runs and M(k) after the moves that follow it. */
#define SLOT_K(k) (2 * (k) + 1)
#define SLOT_M(k) (2 * (k) + 2)

enum gate_kind {
	G_SOURCE, /* where the tensor starts: edges from ST_S to its initial state */
	G_SYNC,   /* moves after node at (-1: before node 0), blocking */
	G_ASYNC,  /* copies overlapping node at: start after at - 1, done before at + 1 */
};

/* A point of a tensor's life where its location may change; its edges are the moves
 * (or stays) it allows, each a binary column of the ILP. */
struct gate {
	uint8_t kind;
	bool inplace;           /* sync gate right after a kernel that overwrote the tensor */
	bool fetch;             /* async gate that fetches (else it evicts): its slots differ */
	int32_t at;
	uint16_t edges;         /* allowed: bit EDGE(from, to) */
	double cost[N_EDGES];   /* seconds of copying (sync: blocking; async: on the channel) */
};

enum { TC_MOVABLE = 0, TC_FAST, TC_SLOW };

/* One tensor in the model. Phase i lies between gates[i] and gates[i + 1] (the last phase
 * runs to the end of the tensor's life). */
struct tmodel {
	int32_t id;
	uint8_t cls;            /* movable, fixed fast (fast-only or pinned), fixed slow */
	bool pinned;            /* fixed fast by pin_bytes, not by the graph */
	bool persistent;
	int64_t bytes;          /* what copies move */
	int64_t abytes;         /* what it takes in the arena: bytes rounded up to its alignment */
	int32_t first, last;    /* nodes of its life */
	int32_t slot_lo, slot_hi;
	int32_t n_gates;        /* also the number of phases */
	struct gate *gates;
	int32_t *ph_lo, *ph_hi; /* slots of each phase (empty when lo > hi) */
	uint8_t *ph_states;     /* states each phase may take: bits 1 << ST_x */
	int32_t ph_off;         /* index of phase 0 in a solution's state array */
};

/* A configuration group of a node whose tensors the model places. */
struct unit {
	uint32_t mask;
	int n_members;
	int32_t *members;       /* tensor ids, distinct (a grouped node's group has many) */
	int32_t *phase;         /* each member's phase covering the node */
};

/* A tensor whose place at a node is forced by its group (a pinned or slow-only partner). */
struct forced {
	int32_t tensor, phase;
	bool slow;
};

struct nmodel {
	uint32_t base;          /* bits always set: groups holding a tensor fixed slow */
	int n_free;
	struct unit units[ATM_CONFIG_MAX_OPERANDS];
	int n_forced;
	struct forced *forced;
	int n_cfg;              /* 1 << n_free */
	double *time;           /* per free-unit configuration: seconds (< 0: not profiled) */
	bool has_async;         /* some tensor may copy while this node runs */
	/* device_only: the profiled algorithms the model chooses among, fastest first, none both
	 * slower and needing at least the workspace of another (1: the kernel's one choice) */
	int n_algo;
	int8_t algos[ATM_MAX_ALGOS];      /* the profile's index of each */
	double algo_time[ATM_MAX_ALGOS];  /* seconds, all fast */
	int64_t algo_ws[ATM_MAX_ALGOS];   /* workspace in the arena (aligned; 0 when not counted):
	                                   * the last, the smallest, is in fixed at K(k) */
};

/* A recomputation the model may choose (recompute.c): movable tensor t, made by node k, is
 * dropped after its use at node d and made again before its next use u, where k runs once more
 * in the configuration its operands have at K(u). */
#define RC_MAX_LINKS 2     /* a chain runs at most this many kernels before the tensor's own */

struct rcand {
	int32_t t, k, d, u;
	int32_t pd, pu;         /* t's phases at K(d) and at K(u) */
	/* a chain: tensors dead at u made again first (their producers' order), for k to read */
	int n_links;
	int32_t links[RC_MAX_LINKS];
	/* priced by configuration (no links): */
	int32_t *uph;           /* per member of k's units, in order: its phase at K(u) (-1: made
	                         * again, fast: t or another output of k) */
	int32_t *fph;           /* per forced place of k: the tensor's phase at K(u) (-1: fixed) */
	int t_unit;             /* k's unit holding t (-1: none) */
	double max_algo_s;      /* device_only: the slowest of k's algorithms, which it is priced at */
	int32_t n_ops;
	int32_t *ops;           /* the operands its kernels read that they do not make */
	/* a chain (links): every kernel priced all fast, so its movable operands must be fast */
	int32_t n_roots;
	int32_t *root, *root_ph;  /* the movable ones among ops, and their phases at K(u) */
	double chain_s;         /* the chain's kernels, each all fast (device_only: slowest algorithm) */
	int64_t scratch;        /* fast bytes beside the tensor at K(u): its links and its kernels'
	                         * other outputs, beyond the bytes of u's outputs (not yet made) */
};

struct model {
	const atm_graph *g;
	const atm_profile *prof;
	atm_opt_formulation f;
	atm_opt_options o;
	int32_t n_nodes, n_slots, n_tensors;
	struct tmodel *t;       /* by tensor id */
	struct nmodel *n;       /* by node id */
	int64_t *limit;         /* per slot (INT64_MAX: none) */
	int64_t *fixed;         /* per slot: fixed fast tensors (+ workspace) */
	int64_t *floor;         /* per slot: what every plan holds in fast memory there: fixed, and
	                         * on a GPU (device_only) each movable tensor where a kernel uses it */
	int32_t n_phases;       /* over all movable tensors */
	int32_t n_movable;
	int64_t pinned_bytes;
	double to_fast_bps, to_slow_bps;
	/* by an asynchronous copy's direction, [0] to fast memory, [1] to slow (atm_profile_moves):
	 * of its time alone, what the kernel beside it loses, and its time beside the kernel over
	 * its time alone */
	double kernel_loss[2], copy_stretch[2];
	int32_t n_rc;           /* recomputations the model may choose (o.recompute) */
	struct rcand *rc;
	int32_t n_excl;         /* pairs of them that exclude each other: one drops an input the
	                         * other's kernel reads */
	int32_t (*excl)[2];
	int32_t *excl_at;       /* by candidate: its partners are excl_with[excl_at[i] ..
	                         * excl_at[i + 1]) */
	int32_t *excl_with;
};

/* opt_overlapped -- a kernel of time kt beside asynchronous copies that take their channel
 * chan seconds and cost the kernel lost seconds (opt_copy_cost, summed): the longer of the
 * kernel, slowed by its loss to the copies, and the copies */
static inline double opt_overlapped(double kt, double chan, double lost)
{
	double k = kt + lost;
	return k > chan ? k : chan;
}

/* opt_copy_cost -- an asynchronous copy along edge e that takes cost seconds alone, beside the
 * kernel it overlaps: adds its channel time (stretched) to *chan and the kernel's loss to *lost,
 * each times sign (1 to add, -1 to take back) */
static inline void opt_copy_cost(const struct model *m, int e, double cost, double sign,
                                 double *chan, double *lost)
{
	int d = EDGE_TO(e) == ST_S;
	*chan += sign * m->copy_stretch[d] * cost;
	*lost += sign * m->kernel_loss[d] * cost;
}

/* opt_copies_cost -- the kernels lose something to the copies beside them */
static inline bool opt_copies_cost(const struct model *m)
{
	return m->kernel_loss[0] > 0 || m->kernel_loss[1] > 0;
}

/* A placement in the model's terms: a state per phase of every movable tensor. */
struct solution {
	uint8_t *st;            /* by tmodel.ph_off + phase */
	bool *pinned;           /* by tensor id: persistent movable tensor kept fast */
	uint8_t *algo;          /* by node: index into nmodel.algos */
	uint8_t *rc;            /* by recomputation candidate: chosen */
};

/* model.c */
/* opt_model_new -- the model of g for formulation f: tensors classed (movable, fixed fast or
 * slow, pinned), gate chains, configuration groups and times, per-slot limits (slot_limit,
 * or limit everywhere; 0 none) */
atm_status opt_model_new(struct model **m, const atm_graph *g, const atm_profile *prof,
                         atm_opt_formulation f, const atm_opt_options *o, int64_t limit,
                         const int64_t *slot_limit);
/* opt_model_destroy -- release m (NULL is fine) */
void opt_model_destroy(struct model *m);
/* opt_min_fixed -- the most fast bytes a slot must hold (floor), and ATM_E_INFEASIBLE when some slot's
 * exceed its limit */
atm_status opt_min_fixed(const struct model *m, int64_t *need, int32_t *slot);
/* opt_solution_new -- room for a placement of m; opt_solution_free releases it */
atm_status opt_solution_new(const struct model *m, struct solution *s);
void opt_solution_free(struct solution *s);
/* opt_solution_copy -- src's placement, algorithms and recomputations into dst (both of m) */
void opt_solution_copy(const struct model *m, struct solution *dst, const struct solution *src);
/* opt_solution_nest -- src, a placement of from, as the same placement of to, a formulation
 * that contains from's (the asynchronous program holds every gate of the synchronous one, and
 * through the others the placement stays where it is); false when it is no placement of to */
bool opt_solution_nest(const struct model *to, struct solution *dst, const struct model *from,
                       const struct solution *src);
/* opt_solution_all_slow -- every movable tensor slow all its life, every kernel with its
 * algorithm of the smallest workspace */
void opt_solution_all_slow(const struct model *m, struct solution *s);
/* opt_solution_small_algos -- every kernel with its algorithm of the smallest workspace */
void opt_solution_small_algos(const struct model *m, struct solution *s);
/* opt_algo_extra -- the workspace node k's algorithm under s takes over the smallest */
int64_t opt_algo_extra(const struct model *m, const struct solution *s, int32_t k);
/* opt_node_time -- node k's kernel seconds in configuration c with its algorithm under s
 * (< 0: not profiled) */
double opt_node_time(const struct model *m, const struct solution *s, int32_t k, int c);
/* the configuration index of node k under s; -1 when a group's members disagree */
int opt_node_config(const struct model *m, const struct solution *s, int32_t k);
/* opt_solution_cost -- the step's seconds under s as the model prices it (INFINITY: invalid) */
double opt_solution_cost(const struct model *m, const struct solution *s);
/* bytes per slot under s (fixed included) */
void opt_solution_bytes(const struct model *m, const struct solution *s, int64_t *bytes);
/* opt_present_in_gate -- an async gate's edge holds a fast copy while its copy runs */
bool opt_present_in_gate(int edge);
/* opt_solution_to_plan -- initial locations and moves of s into p, in the order the schedule
 * needs (evictions before fetches, blocking before overlapped, at each node) */
atm_status opt_solution_to_plan(const struct model *m, const struct solution *s, atm_plan *p);

/* optimizer.c */
/* opt_solution_plan -- a new plan of placement s of m under limit, as the ILP's solutions are
 * made into plans (the formulation named, the limit recorded; not laid out or priced) */
atm_status opt_solution_plan(const struct model *m, const struct solution *s, int64_t limit,
                             atm_plan **out);
/* opt_plan_keep -- atm_opt_plan of an ILP formulation f under limit > 0 without
 * recomputation, the final round's model (its slot limits as tightened) and placement handed
 * over in *m and *s (the caller's to destroy and free) */
atm_status opt_plan_keep(atm_plan **out, struct model **m, struct solution *s,
                         const atm_graph *g, const atm_profile *prof, int64_t limit,
                         atm_opt_formulation f, const atm_opt_options *o, atm_opt_report *rep);

/* phases.c */
/* opt_phase_at -- the phase of t covering slot s (-1: none) */
int32_t opt_phase_at(const struct tmodel *t, int32_t s);
/* opt_writes_over -- node n overwrites tensor x in place (SGD) or writes a persistent output */
bool opt_writes_over(const atm_graph *g, const atm_node *n, int32_t x);

/* recompute.c */
/* opt_recompute_build -- the recomputations m may choose (none unless o.recompute), each
 * candidate a tensor's gap between two uses whose producer's inputs are all available at the
 * second (docs/optimizer.md, "Recomputation") */
atm_status opt_recompute_build(struct model *m, const atm_liveness *lv, const int32_t *tstart,
                               const int32_t *touch);
void opt_recompute_free(struct model *m);
/* opt_recompute_time -- candidate i's kernel seconds under s when it is valid there (t fast at
 * d and staying so to u, its operands' places a profiled configuration, no excluded partner
 * chosen); INFINITY otherwise */
double opt_recompute_time(const struct model *m, const struct solution *s, int32_t i);
/* opt_recompute_async_gate -- t's overlapped copy gate beside node u of c (-1: none), which
 * must take no move while c is chosen: the kernel run again would wait for it */
int32_t opt_recompute_async_gate(const struct rcand *c, const struct tmodel *t);
/* opt_recompute_phase_u -- the phase of operand x that a recomputation before node u reads: the
 * one covering K(u), or, where an overlapped copy gate spans u, the one after it (the gate may
 * not move x while the candidate is chosen: opt_recompute_async_gate); -1: none (not live) */
int32_t opt_recompute_phase_u(const struct tmodel *x, int32_t u);
/* opt_recompute_again_s -- candidate i's kernels with their operands fast: what running it
 * again costs at least (device_only: at the slowest algorithms) */
double opt_recompute_again_s(const struct model *m, int32_t i);
/* opt_recompute_touches -- candidate i's choice depends on tensor x's places (x is its tensor
 * or an operand its kernels read that they do not make) */
bool opt_recompute_touches(const struct model *m, int32_t i, int32_t x);

/* heuristic.c */
/* opt_heuristic -- a feasible placement in budget_s: Lagrangian pricing, then per-tensor
 * shortest paths under the limits (warm: start from s as it is, repaired) */
atm_status opt_heuristic(const struct model *m, struct solution *s, double budget_s, bool warm);
/* opt_polish -- drop moves that buy nothing, never slowing the step */
atm_status opt_polish(const struct model *m, struct solution *s);

/* ilp.c */
/* How a round's solve ended; the text (opt_ilp_status_text) is what plans and results say. */
enum ilp_status {
	ILP_OPTIMAL,
	ILP_WITHIN_GAP,
	ILP_TIME_LIMIT,         /* the solver's plan, out of time before proving the gap */
	ILP_STOPPED,
	ILP_HEURISTIC,          /* the heuristic's plan: the solver found nothing better */
	ILP_HEUR_LP_TIME,       /* ... the root relaxation did not finish in time */
	ILP_HEUR_LP_FAILED,     /* ... the root relaxation could not be solved */
	ILP_HEUR_FAILED,        /* ... the solver failed */
	ILP_HEUR_TIME_LIMIT,    /* ... out of time before the solver found a plan */
	ILP_HEUR_NO_SOLUTION,   /* ... the solver found none */
	ILP_N_STATUS
};
const char *opt_ilp_status_text(enum ilp_status s);

struct ilp_result {
	int n_columns, n_rows, n_binaries;
	int64_t n_nonzeros;
	double creation_s, solve_s, bound_s, gap;
	double ilp_objective_s; /* the final (polished) s as the program's objective prices it
	                         * (< 0: none) */
	enum ilp_status st;     /* its text: opt_ilp_status_text */
	char solver[16];        /* the backend that ran */
	bool improved;          /* the solver's solution replaced the seed */
	bool glpk_after_failure; /* the solver failed (CBC crashes on some models) and GLPK solved
	                          * the round in the time left */
};
/* opt_ilp_solve -- build the program of m (written to o.write_model when set), seed the solver
 * (o.solver) with s, solve within the time left since t_start; s becomes the better of the
 * seed and the solver's solution, polished, and is checked against every row of the program */
atm_status opt_ilp_solve(const struct model *m, struct solution *s, double t_start,
                         struct ilp_result *r);

/* check.c: what the checker and the explanation price a kernel at (not used by the model,
 * which keeps its own copy of the rule so that the two stay independent) */
/* opt_best_algo -- the fastest profiled algorithm of node k with every operand fast whose
 * workspace fits ATM_GPU_WORKSPACE_BYTES (0, the default, when no other was profiled), and its
 * time */
atm_status opt_best_algo(const atm_profile *prof, const atm_graph *g, int32_t k, int *algo,
                         double *t);
atm_status opt_kernel_time(const atm_profile *prof, const atm_graph *g, int32_t k,
                           const unsigned *cfg, int algo, double *t, double *t_fast);
/* opt_counts_algo_ws -- o counts each kernel's workspace as its algorithm's, from the profile
 * (device_only and workspace_in_limit), not the graph's */
bool opt_counts_algo_ws(const atm_opt_options *o);
/* opt_algo_workspace -- the workspace the profile says node k's algorithm algo takes */
atm_status opt_algo_workspace(const atm_profile *prof, const atm_graph *g, int32_t k, int algo,
                              int64_t *bytes);
/* opt_fit_algos -- each node of a baseline's plan p runs its fastest algorithm (the same as
 * atm_opt_choose_algos) or, where o counts algorithms' workspaces, the fastest whose workspace
 * fits beside the tensors fast there under p's limit, else the smallest, recorded as its
 * workspace in the fast arena */
atm_status opt_fit_algos(atm_plan *p, const atm_profile *prof, const atm_opt_options *o);
/* opt_record_workspaces -- with o counting algorithms' workspaces, each node of p gets its
 * algorithm's as its workspace in the fast arena */
atm_status opt_record_workspaces(atm_plan *p, const atm_profile *prof, const atm_opt_options *o);

/* limits.c */
/* opt_infeasible -- the error for a limit below what the graph's fast-only tensors need */
atm_status opt_infeasible(const atm_graph *g, const atm_profile *prof, int64_t limit,
                          atm_opt_formulation f, const atm_opt_options *o);

/* starts.c */
/* opt_starts_match -- every start of o is a plan of g itself with formulation f: ATM_E_INPUT
 * naming the first that is not (before any work), ATM_E_USAGE for a bad count */
atm_status opt_starts_match(const atm_graph *g, atm_opt_formulation f, const atm_opt_options *o);
/* opt_solution_from_plan -- plan p (of m's graph) as a placement of m in s: *ok when its places,
 * moves, recomputations and algorithms are a path of m's gates and choices that writes p back
 * exactly (opt_solution_to_plan); false otherwise (a plan of another model: other pinned
 * tensors, gates, candidates), s then meaningless. Errors only for memory */
atm_status opt_solution_from_plan(const struct model *m, const atm_plan *p, struct solution *s,
                                  bool *ok);
/* opt_starts_apply -- after the planner's attempt (rc, *out: its plan when rc >= 0) at limit: the
 * fastest of o's starts that fits limit replaces *out when strictly faster, or stands for it when
 * the planner found none (rc ATM_E_INFEASIBLE); rep's start fields say what became of them. A
 * start of another graph or formulation ends the plan with ATM_E_INPUT; any other failure of the
 * planner's (rc) is returned as it is */
atm_status opt_starts_apply(atm_status rc, atm_plan **out, const atm_graph *g,
                            const atm_profile *prof, int64_t limit, atm_opt_formulation f,
                            const atm_opt_options *o, atm_opt_report *rep);

/* baselines.c */
atm_status opt_baseline(atm_plan **out, const atm_graph *g, const atm_profile *prof, int64_t limit,
                        atm_opt_formulation f, const atm_opt_options *o);

/* The runtime's slow heap as the 2LM prediction sees it (heap_model.c): an address per tensor. */
struct opt_heap;
atm_status opt_heap_new(struct opt_heap **h, int32_t n_tensors);
void opt_heap_destroy(struct opt_heap *h);
/* opt_heap_alloc -- tensor (bytes long) gets a block: a freed one of its rounded size, else new */
void opt_heap_alloc(struct opt_heap *h, int32_t tensor, int64_t bytes);
/* opt_heap_free -- tensor's block is kept for reuse */
atm_status opt_heap_free(struct opt_heap *h, int32_t tensor, int64_t bytes);
/* opt_heap_addr -- tensor's block's address */
int64_t opt_heap_addr(const struct opt_heap *h, int32_t tensor);

#endif /* ATM_OPT_INTERNAL_H */
