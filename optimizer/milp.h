/* milp.h -- a mixed-integer program in solver-neutral form, and the solvers that take one.
 *
 * ilp.c writes the placement model here once (columns with bounds, costs and integrality; rows
 * as sparse ranges), checks placements against it and prices them by its objective; a backend
 * (solve_glpk.c, solve_cbc.c) solves it, in a child process that the stop flag ends at once
 * (solve_child.c). solvers.c is the registry: the only place that knows which backends this
 * build has.
 */
#ifndef ATM_MILP_H
#define ATM_MILP_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "atm_optimizer.h"

/* A minimisation over columns 0..n_cols-1, rows lo <= a.x <= hi (either side may be infinite),
 * columns within [col_lo, col_hi]; binaries are the integer columns (bounds 0 and 1). Rows are
 * kept compressed: row i's entries are ind/val[row_start[i] .. row_start[i + 1]). */
struct milp {
	int32_t n_cols, n_rows, n_bin;
	int64_t n_nz;
	double obj_const;
	double *obj, *col_lo, *col_hi;
	uint8_t *col_int;
	double *row_lo, *row_hi;
	int64_t *row_start;
	int32_t *ind;
	double *val;
	int32_t cap_cols, cap_rows;
	int64_t cap_nz;
	bool failed;          /* an allocation failed while it was built */
};

void milp_init(struct milp *p);
void milp_free(struct milp *p);
/* milp_col -- a new column and its index (-1 once an allocation failed) */
int32_t milp_col(struct milp *p, double lo, double hi, double obj, bool binary);
/* milp_row -- a new row lo <= sum val[i] x[ind[i]] <= hi (entries with distinct columns) */
void milp_row(struct milp *p, const int32_t *ind, const double *val, int32_t n, double lo,
              double hi);
/* The matrix by column: column j's rows and values at ri/rv[cs[j] .. cs[j + 1]). */
struct milp_csc {
	int64_t *cs;
	int32_t *ri;
	double *rv;
};
/* milp_by_column -- p's matrix transposed; false when out of memory (nothing to free then) */
bool milp_by_column(const struct milp *p, struct milp_csc *c);
void milp_csc_free(struct milp_csc *c);
/* milp_objective -- the objective at x, constant included */
double milp_objective(const struct milp *p, const double *x);
/* milp_check -- ATM_OK when x satisfies every row and bound (relative tolerance 1e-7), else
 * ATM_E_INTERNAL naming the first that breaks, with who (e.g. "the heuristic placement") */
atm_status milp_check(const struct milp *p, const double *x, const char *who);
/* milp_write -- p as free MPS (path ends ".mps") or CPLEX LP (".lp"), replaced atomically;
 * the objective's constant is the cost of a column of its own fixed at 1 in both, which every
 * solver reads alike */
atm_status milp_write(const struct milp *p, const char *path);
/* milp_write_check -- ATM_E_USAGE naming the valid suffixes when path is neither */
atm_status milp_write_check(const char *path);

/* How a solve ended. */
enum milp_status {
	MILP_OPTIMAL,        /* x is optimal */
	MILP_WITHIN_GAP,     /* x is proved within the asked gap */
	MILP_TIME_LIMIT,     /* out of time with a solution x, gap unproved */
	MILP_NO_SOLUTION,    /* out of time (or stopped) before any solution */
	MILP_LP_TIME,        /* the root relaxation did not finish in time */
	MILP_LP_FAILED,      /* the root relaxation could not be solved */
	MILP_FAILED,         /* the solver failed: numerics or a crash */
	MILP_INFEASIBLE,     /* it proved that no solution exists (with a feasible start given,
	                      * a fault the caller reports) */
	MILP_STOPPED,        /* stopped for another reason, with a solution x */
};

/* What a backend is asked to do. */
struct milp_params {
	double deadline;        /* atm_now_s() at which to stop */
	double gap;             /* relative gap to stop at */
	const double *start;    /* a feasible solution to start from (NULL: none) */
	bool presolve;          /* the solver's own presolve (off when a start must keep its columns) */
	int threads;            /* >= 1 */
	int verbosity;          /* 0 quiet, 1 progress, 2 full log (on stderr) */
	volatile sig_atomic_t *stop; /* set: end at once with ATM_E_INTERRUPTED */
};

/* What it found. x is the caller's (n_cols values) and holds a solution when has_x. Bounds and
 * objectives are in the model's units, constant included; < -1e300 when unknown. */
struct milp_out {
	enum milp_status status;
	double *x;
	bool has_x;
	double obj, bound;
	double gap;             /* proved relative gap of x (< 0: unknown) */
	double root_s;          /* seconds of the root relaxation (< 0: not timed) */
};

/* A backend. solve returns ATM_OK with out filled (a failed solve is a status, not an error),
 * ATM_E_INTERRUPTED when params->stop was set, ATM_E_NOMEM. */
struct milp_solver {
	const char *name;       /* "glpk", "cbc" */
	const char *(*version)(void);
	atm_status (*solve)(const struct milp *p, const struct milp_params *params,
	                    struct milp_out *out);
};

/* How a backend runs its solve in a child process (solve_child.c). */
struct milp_child_opts {
	const char *who;        /* the solver, as messages name it: "GLPK", "CBC" */
	size_t shared_bytes;    /* the memory the child answers in (zeroed) */
	double overrun_s;       /* seconds past the deadline before the child is ended (< 0: never) */
	/* the solve, in the child: p, params (with no stop flag: the parent watches it), the
	 * caller's out as it was; writes its answer into shared. The child ends when it returns */
	void (*body)(const struct milp *p, const struct milp_params *params,
	             const struct milp_out *out, void *shared);
	/* polled by the parent with what the child has written so far: true ends the child, its
	 * answer being enough (NULL: never) */
	bool (*enough)(const void *shared, void *arg);
	void *arg;
};
/* Why the child ended. */
enum milp_child_end {
	MILP_CHILD_EXITED,      /* by itself: its answer is complete, or it failed */
	MILP_CHILD_OVERRAN,     /* killed for running overrun_s past the deadline */
	MILP_CHILD_ENOUGH,      /* killed because enough said so */
};
/* How the child ended, and what it wrote. */
struct milp_child {
	void *shared;           /* the child's answer, shared_bytes */
	size_t shared_bytes;
	int wstatus;            /* waitpid's status */
	enum milp_child_end end;
};
/* milp_child_run -- o->body in a child process that dies with its parent, waited for: when
 * params->stop is set the child is killed at once and ATM_E_INTERRUPTED returned; otherwise
 * ATM_OK with c filled, to be released (milp_child_release) once read. On an error (ATM_E_NOMEM:
 * no child could be started) nothing is left to release */
atm_status milp_child_run(const struct milp *p, const struct milp_params *params,
                          const struct milp_out *out, const struct milp_child_opts *o,
                          struct milp_child *c);
/* milp_child_exited_ok -- the child ended by itself, with status 0 */
bool milp_child_exited_ok(const struct milp_child *c);
void milp_child_release(struct milp_child *c);

/* milp_solver_of -- the backend of a resolved solver (never AUTO), NULL when not built in */
const struct milp_solver *milp_solver_of(atm_opt_solver s);

/* the backends, each defined only where built */
extern const struct milp_solver milp_glpk;
extern const struct milp_solver milp_cbc;

#endif /* ATM_MILP_H */
