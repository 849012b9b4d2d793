/* solve_cbc.c -- the CBC backend: COIN-OR branch and cut (Clp's simplex at the root), run in a
 * child process.
 *
 * CBC's C interface has no way to stop a solve from outside and prints to stdout. So the solve
 * runs in a child process (solve_child.c) that writes its answer into shared memory: Ctrl-C and
 * an overrun of the time limit end it at once (SIGKILL), a crash inside CBC leaves the
 * heuristic's plan standing, and its log goes to stderr (or nowhere), never into the command's
 * stdout.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>
#include <signal.h>

#include <Cbc_C_Interface.h>

#include "milp.h"

/* seconds past the deadline before the child is ended: CBC checks its clock between nodes */
#define OVERRUN_S 2.0
/* the columns below which a model's columns are named, so that CBC reads the start as given
 * (see child) */
#define NAMED_COLS 100000
/* CBC's message number for "MIPStart provided solution with cost ..." (Cbc0045I) */
#define CBC_MSG_START 45

/* What the child hands back, followed by n_cols values of x. */
struct answer {
	volatile int has_root;  /* root_bound is set: the root relaxation is solved */
	volatile double root_bound; /* its objective, the constant included */
	int done;               /* the child got to the end */
	int status, secondary;  /* Cbc_status, Cbc_secondaryStatus */
	int optimal, infeasible, has_x;
	double obj, bound;      /* CBC's, the objective's constant included (its column's) */
	double x[];
};

static const char *cbc_version(void)
{
	static char v[32];
	snprintf(v, sizeof v, "CBC %s", Cbc_getVersion());
	return v;
}

/* big -- CBC's infinity for ours */
static double big(double v)
{
	return isinf(v) ? (v > 0 ? DBL_MAX : -DBL_MAX) : v;
}

/* p's matrix by column, as Clp and CBC take it (their own type of column starts), with their
 * infinities */
struct csc {
	struct milp_csc m;
	CoinBigIndex *cs;
	double *clo, *chi, *rlo, *rhi;
};

static void csc_free(struct csc *c)
{
	milp_csc_free(&c->m);
	free(c->cs);
	free(c->clo);
	free(c->chi);
	free(c->rlo);
	free(c->rhi);
}

/* csc_of -- p by column; false when out of memory, or when p has more entries than CBC's
 * column starts can count */
static bool csc_of(const struct milp *p, struct csc *c)
{
	if ((CoinBigIndex)p->n_nz != p->n_nz || !milp_by_column(p, &c->m))
		return false;
	c->cs = malloc(((size_t)p->n_cols + 1) * sizeof *c->cs);
	c->clo = malloc(((size_t)p->n_cols + 1) * sizeof *c->clo);
	c->chi = malloc(((size_t)p->n_cols + 1) * sizeof *c->chi);
	c->rlo = malloc(((size_t)p->n_rows + 1) * sizeof *c->rlo);
	c->rhi = malloc(((size_t)p->n_rows + 1) * sizeof *c->rhi);
	if (!c->cs || !c->clo || !c->chi || !c->rlo || !c->rhi)
		return false;
	for (int32_t j = 0; j <= p->n_cols; j++)
		c->cs[j] = (CoinBigIndex)c->m.cs[j];
	for (int32_t j = 0; j < p->n_cols; j++) {
		c->clo[j] = big(p->col_lo[j]);
		c->chi[j] = big(p->col_hi[j]);
	}
	for (int32_t i = 0; i < p->n_rows; i++) {
		c->rlo[i] = big(p->row_lo[i]);
		c->rhi[i] = big(p->row_hi[i]);
	}
	return true;
}

/* set -- a CBC parameter from a number */
static void set(Cbc_Model *cm, const char *name, double v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%.10g", v);
	Cbc_setParameter(cm, name, buf);
}

/* The answer the child's message callback writes to: CBC's C callback takes no user data, and
 * the child is a process of its own that solves one model. */
static struct answer *child_answer;

/* on_message -- CBC's messages in the child: the first about the start comes once the root
 * relaxation is solved (CBC reads a start after it), and the bound known then is that
 * relaxation's, which the parent may use at once */
static void COINLINKAGE_CB on_message(Cbc_Model *cm, int msgno, int nd, const double *dv, int ni,
                                      const int *iv, int nc, char **cv)
{
	(void)nd, (void)dv, (void)ni, (void)iv, (void)nc, (void)cv;
	if (msgno != CBC_MSG_START || child_answer->has_root)
		return;
	double b = Cbc_getBestPossibleObjValue(cm);
	if (isfinite(b) && fabs(b) < 1e30) {
		child_answer->root_bound = b;
		__atomic_store_n(&child_answer->has_root, 1, __ATOMIC_RELEASE);
	}
}

/* child -- load, solve and answer into shared; runs in the child process */
static void child(const struct milp *p, const struct milp_params *par, const struct milp_out *out,
                  void *shared)
{
	struct answer *a = shared;
	(void)out;
	/* CBC prints on stdout: that is the command's (plan --json), so the log goes to stderr
	 * when asked for, else nowhere */
	int null = open("/dev/null", O_WRONLY);
	if (null >= 0) {
		dup2(par->verbosity ? STDERR_FILENO : null, STDOUT_FILENO);
		if (!par->verbosity)
			dup2(null, STDERR_FILENO);
	}
	setvbuf(stdout, NULL, _IOLBF, 0); /* a child ended at the deadline keeps its log */
	/* the tests' way to make CBC crash as it does on some models (ilp.c's GLPK after a failure):
	 * the child dies of the same signal */
	if (getenv("ATM_TEST_CBC_CRASH"))
		raise(SIGSEGV);
	struct csc c = {0};
	if (!csc_of(p, &c))
		_exit(3);
	Cbc_Model *cm = Cbc_newModel();
	Cbc_loadProblem(cm, p->n_cols, p->n_rows, c.cs, c.m.ri, c.m.rv, c.clo, c.chi, p->obj, c.rlo,
	                c.rhi);
	csc_free(&c);
	for (int32_t j = 0; j < p->n_cols; j++)
		if (p->col_int[j])
			Cbc_setInteger(cm, j);
	/* the objective's constant as the cost of a column fixed at 1, so that CBC's objective,
	 * bound and relative gap are the model's, constant included */
	Cbc_addCol(cm, "constant", 1, 1, p->obj_const, 0, 0, NULL, NULL);
	/* CBC checks its clock between steps, some of them long (a feasibility pump pass over a
	 * large model takes seconds): it is given less than the parent waits for */
	double left = (par->deadline - atm_now_s()) * 0.9;
	Cbc_setParameter(cm, "timeMode", "elapsed");
	set(cm, "seconds", left > 0.05 ? left : 0.05);
	set(cm, "ratioGap", par->gap);
	/* 100 + n: n threads whose search is repeatable, so that one model gives one plan
	 * however the threads are scheduled (n < 100 lets the first thread to a tie win) */
	set(cm, "threads", par->threads > 1 ? 100 + par->threads : 0);
	set(cm, "log", par->verbosity >= 2 ? 3 : par->verbosity);
	if (!par->presolve)
		Cbc_setParameter(cm, "preprocess", "off");
	if (par->start) {
		int *idx = malloc(((size_t)p->n_cols + 2) * sizeof *idx);
		double *v = malloc(((size_t)p->n_cols + 2) * sizeof *v);
		if (!idx || !v)
			_exit(3);
		for (int32_t j = 0; j <= p->n_cols; j++) {
			idx[j] = j;
			v[j] = j < p->n_cols ? par->start[j] : 1;
		}
		/* CBC keeps a start by column name (Cbc_setMIPStartI looks the names up): columns
		 * loaded without names all have the empty one, so every value went to one column and
		 * CBC read a start 3,275 binaries from integral (gpt2-xl asynchronous, 1:1), spent 30 s
		 * completing it into a plan 5% slower than the start, and searched without it. Named,
		 * CBC reads the start before its root relaxation and reports nothing after it through
		 * the callback, so the root's bound (on_message) never comes; on DenseNet-264's
		 * asynchronous paper model (145,399 columns) CBC then ran to the deadline without a
		 * bound, where unnamed its root proved the start within the gap in 23 s. So only models
		 * below NAMED_COLS are named (docs/optimizer.md) */
		char name[32];
		for (int32_t j = 0; p->n_cols < NAMED_COLS && j < p->n_cols; j++) {
			snprintf(name, sizeof name, "x%d", j);
			Cbc_setColName(cm, j, name);
		}
		Cbc_setMIPStartI(cm, p->n_cols + 1, idx, v);
		free(idx);
		free(v);
		/* with a start the pump's first solution is rarely better, and on large models
		 * it takes most of the time */
		Cbc_setParameter(cm, "feas", "off");
		child_answer = a;
		Cbc_registerCallBack(cm, on_message);
	}
	Cbc_solve(cm);
	a->status = Cbc_status(cm);
	a->secondary = Cbc_secondaryStatus(cm);
	a->optimal = Cbc_isProvenOptimal(cm);
	a->infeasible = Cbc_isProvenInfeasible(cm);
	a->bound = Cbc_getBestPossibleObjValue(cm);
	const double *x = Cbc_bestSolution(cm);
	if (x) {
		memcpy(a->x, x, (size_t)p->n_cols * sizeof *x);
		a->obj = Cbc_getObjValue(cm);
		a->has_x = 1;
	}
	a->done = 1;
}

/* root_proves -- the child's root relaxation bounds the start's objective seed_obj to within
 * the gap (its relative gap through *gap) */
static bool root_proves(const struct answer *a, double seed_obj, double want, double *gap)
{
	if (!__atomic_load_n(&a->has_root, __ATOMIC_ACQUIRE) || !isfinite(seed_obj))
		return false;
	*gap = fmax(0, (seed_obj - a->root_bound) / (fabs(seed_obj) > 0 ? fabs(seed_obj) : 1));
	return *gap <= want;
}

/* The start's objective (NAN: none) and the gap asked for, against which the parent weighs the
 * child's root bound. */
struct seed {
	double obj, gap;
};

/* root_enough -- the root relaxation proves the start within the gap: CBC reads the start
 * only after the root, and on large models that alone takes it past the minute, so the child
 * is ended then (arg: the seed) */
static bool root_enough(const void *shared, void *arg)
{
	const struct seed *sd = arg;
	double gap;
	return root_proves(shared, sd->obj, sd->gap, &gap);
}

/* read_answer -- out from the child's answer */
static void read_answer(const struct milp *p, const struct answer *a, struct milp_out *out)
{
	if (a->bound > -1e30 && a->bound < 1e30)
		out->bound = a->bound;
	if (a->has_x) {
		memcpy(out->x, a->x, (size_t)p->n_cols * sizeof *out->x);
		out->has_x = true;
		out->obj = a->obj;
		if (out->bound > -1e300)
			out->gap = fmax(0, (out->obj - out->bound) / (fabs(out->obj) > 0 ? fabs(out->obj) : 1));
	}
	if (a->status == 2) {
		out->status = MILP_FAILED;
	} else if (a->infeasible && !a->has_x) {
		out->status = MILP_INFEASIBLE;
	} else if (a->optimal && a->has_x) {
		out->status = out->gap > 1e-9 ? MILP_WITHIN_GAP : MILP_OPTIMAL;
	} else if (a->has_x) {
		/* secondary 2: stopped on the gap; 4: on time */
		out->status = a->secondary == 2 ? MILP_WITHIN_GAP : a->secondary == 4 ? MILP_TIME_LIMIT
		            : MILP_STOPPED;
	} else {
		/* out of time with nothing: before the root relaxation gave a bound, or after */
		out->status = out->bound > -1e300 ? MILP_NO_SOLUTION : MILP_LP_TIME;
	}
}

/* cbc_solve -- p solved by CBC in a child process (see the top of the file) */
static atm_status cbc_solve(const struct milp *p, const struct milp_params *par,
                            struct milp_out *out)
{
	struct seed sd = {.obj = par->start ? milp_objective(p, par->start) : NAN, .gap = par->gap};
	struct milp_child_opts o = {
		.who = "CBC",
		.shared_bytes = sizeof(struct answer) + ((size_t)p->n_cols + 1) * sizeof(double),
		.overrun_s = OVERRUN_S,
		.body = child,
		.enough = root_enough,
		.arg = &sd,
	};
	struct milp_child c;
	double t0 = atm_now_s(), gap;
	atm_status rc = milp_child_run(p, par, out, &o, &c);
	if (rc < 0)
		return rc;
	const struct answer *a = c.shared;
	if (c.end == MILP_CHILD_ENOUGH && root_proves(a, sd.obj, par->gap, &gap)) {
		out->status = gap > 0 ? MILP_WITHIN_GAP : MILP_OPTIMAL;
		out->bound = a->root_bound;
		out->gap = gap;
		if (par->verbosity)
			fprintf(stderr, "optimizer: CBC's root relaxation (bound %.6g) proves the start "
			        "within %.3g%% after %.1f s\n", a->root_bound, 100 * gap, atm_now_s() - t0);
	} else if (a->done && milp_child_exited_ok(&c)) {
		read_answer(p, a, out);
	} else {
		/* ended before it answered: only the root's bound survives, when it got that far */
		bool overran = c.end == MILP_CHILD_OVERRAN;
		out->status = overran ? (a->has_root ? MILP_NO_SOLUTION : MILP_LP_TIME) : MILP_FAILED;
		if (a->has_root)
			out->bound = a->root_bound;
		if (par->verbosity)
			fprintf(stderr, "optimizer: CBC %s after %.1f s; its search is lost\n",
			        overran ? "overran the time limit and was ended" :
			        WIFSIGNALED(c.wstatus) ? strsignal(WTERMSIG(c.wstatus)) : "failed",
			        atm_now_s() - t0);
	}
	if (par->verbosity)
		fprintf(stderr, "optimizer: CBC %.2f s\n", atm_now_s() - t0);
	milp_child_release(&c);
	return ATM_OK;
}

const struct milp_solver milp_cbc = {
	.name = "cbc",
	.version = cbc_version,
	.solve = cbc_solve,
};
