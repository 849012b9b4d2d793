/* solve_glpk.c -- the GLPK backend: the root relaxation by dual simplex, then seeded branch and cut
 *
 * The solve runs in a child process (solve_child.c), which the parent kills at once on Ctrl-C:
 * on large models GLPK calls none of our hooks for tens of seconds at a time (its feasibility
 * pump, its pseudocost initialisation and its cut generators at the root), so a stop flag looked
 * at from inside it could wait that long. For the same reason GLPK overran its own time limit by
 * 13 to 18 s on large models; the child is ended OVERRUN_S past the deadline, and the incumbent it
 * copied into shared memory each time it improved (GLPK's problem object holds it during the
 * search) is the answer then, so ending it loses no plan GLPK had found.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <glpk.h>

#include "milp.h"

/* How often GLPK reports its progress (milliseconds), on stderr with --verbose */
#define GLPK_OUT_MS 100
/* seconds past the deadline before the child is ended: GLPK looks at its clock between
 * subproblems, but its pump and pseudocost initialisation run for many seconds without looking */
#define OVERRUN_S 3.0
/* binary columns above which branch and cut runs without Gomory and clique cuts */
#define LARGE_MODEL_BINARIES 20000

static const char *glpk_version(void)
{
	static char v[32];
	snprintf(v, sizeof v, "GLPK %s", glp_version());
	return v;
}

/* load -- p as a GLPK problem (columns and rows 1-based) */
static glp_prob *load(const struct milp *p)
{
	glp_prob *lp = glp_create_prob();
	int *ia = malloc(((size_t)p->n_nz + 1) * sizeof *ia);
	int *ja = malloc(((size_t)p->n_nz + 1) * sizeof *ja);
	if (!ia || !ja) {
		free(ia);
		free(ja);
		glp_delete_prob(lp);
		return NULL;
	}
	glp_set_obj_dir(lp, GLP_MIN);
	glp_set_obj_coef(lp, 0, p->obj_const);
	if (p->n_cols)
		glp_add_cols(lp, p->n_cols);
	for (int32_t j = 0; j < p->n_cols; j++) {
		double lo = p->col_lo[j], hi = p->col_hi[j];
		if (p->col_int[j])
			glp_set_col_kind(lp, j + 1, GLP_BV);
		else
			glp_set_col_bnds(lp, j + 1, lo == hi ? GLP_FX : isinf(hi) ? GLP_LO : GLP_DB, lo,
			                 isinf(hi) ? 0 : hi);
		glp_set_obj_coef(lp, j + 1, p->obj[j]);
	}
	if (p->n_rows)
		glp_add_rows(lp, p->n_rows);
	for (int32_t i = 0; i < p->n_rows; i++) {
		double lo = p->row_lo[i], hi = p->row_hi[i];
		int type = isinf(lo) && isinf(hi) ? GLP_FR : lo == hi ? GLP_FX : isinf(hi) ? GLP_LO :
		           isinf(lo) ? GLP_UP : GLP_DB;
		glp_set_row_bnds(lp, i + 1, type, isinf(lo) ? 0 : lo, isinf(hi) ? 0 : hi);
		for (int64_t e = p->row_start[i]; e < p->row_start[i + 1]; e++) {
			ia[e + 1] = i + 1;
			ja[e + 1] = p->ind[e] + 1;
		}
	}
	glp_load_matrix(lp, (int)p->n_nz, ia, ja, p->val - 1);
	free(ia);
	free(ja);
	return lp;
}

/* The best solution GLPK has found so far, copied where the parent can read it after ending the
 * child: seq is odd while a copy is under way, so a child ended in the middle of one leaves a
 * torn x that the parent knows to ignore. */
struct incumbent {
	volatile int seq;       /* even: x and obj agree; 0: nothing copied */
	double obj;             /* its objective, the constant included */
	double bound;           /* the best bound known when it was copied */
	double *x;              /* n_cols values */
	volatile int has_root;  /* root is set: the root relaxation's bound */
	double root;
};

struct cb {
	const double *seed; /* 1-based, as GLPK's columns */
	bool seeded;
	double gap, bound;
	struct incumbent *inc; /* NULL: not kept (GLPK's presolver renumbered the columns) */
	int32_t n_cols;
};

/* keep_incumbent -- GLPK's incumbent into c->inc when it is better than the last copied: during
 * the search the problem object holds it (GLPK records every better solution there, the start
 * handed over too) */
static void keep_incumbent(glp_tree *tree, struct cb *c)
{
	glp_prob *lp = glp_ios_get_prob(tree);
	struct incumbent *inc = c->inc;
	int st = glp_mip_status(lp);
	if (st != GLP_FEAS && st != GLP_OPT)
		return;
	double obj = glp_mip_obj_val(lp);
	if (inc->seq && obj >= inc->obj)
		return;
	__atomic_add_fetch(&inc->seq, 1, __ATOMIC_ACQ_REL);
	for (int32_t j = 0; j < c->n_cols; j++)
		inc->x[j] = glp_mip_col_val(lp, j + 1);
	inc->obj = obj;
	inc->bound = c->bound;
	__atomic_add_fetch(&inc->seq, 1, __ATOMIC_ACQ_REL);
}

/* callback -- hand GLPK the start once, follow the gap */
static void callback(glp_tree *tree, void *info)
{
	struct cb *c = info;
	int reason = glp_ios_reason(tree);
	if (reason == GLP_IHEUR && c->seed && !c->seeded) {
		c->seeded = true;
		glp_ios_heur_sol(tree, c->seed);
	}
	/* GLPK tests the gap and the time limit just before GLP_IPREPRO: what it sees there is
	 * what it stopped on, give or take the last subproblem */
	if (reason == GLP_IPREPRO || reason == GLP_ISELECT || reason == GLP_IBINGO ||
	    reason == GLP_IHEUR) {
		int best = glp_ios_best_node(tree);
		if (best)
			c->bound = glp_ios_node_bound(tree, best);
		double gap = glp_ios_mip_gap(tree);
		if (gap < DBL_MAX)
			c->gap = gap;
		if (c->inc)
			keep_incumbent(tree, c);
	}
}

/* One GLPK solve. */
struct run {
	const struct milp *p;
	const struct milp_params *par;
	struct milp_out *out;
	glp_prob *lp;       /* NULL once GLPK has been abandoned (see guarded) */
	jmp_buf escape;     /* where GLPK's error hook jumps to */
	int msg;            /* GLPK's message level */
	struct cb cb;
};

/* time_left_ms -- GLPK's time limit: what is left until the deadline */
static int time_left_ms(const struct run *v)
{
	double left = v->par->deadline - atm_now_s();
	return (int)((left > 0.05 ? left : 0.05) * 1000);
}

/* on_glpk_error -- GLPK's assertions (a model it cannot solve numerically) would abort the
 * process: jump back to guarded instead */
static void on_glpk_error(void *info)
{
	struct run *v = info;
	longjmp(v->escape, 1);
}

/* on_glpk_output -- every line GLPK prints, to stderr when the user asked for the solver's
 * output (stdout is the command's: plan --json) */
static int on_glpk_output(void *info, const char *s)
{
	struct run *v = info;
	if (v->par->verbosity)
		fputs(s, stderr);
	return 1; /* GLPK itself prints nothing */
}

/* root_lp -- the root relaxation. GLPK's MIP presolver renumbers columns, and the start is
 * given in ours; so the LP presolver presolves the root and branch and bound runs on the
 * original columns. *stop when there is nothing to branch on: the relaxation proves the start
 * within the gap, or it failed (out's status says which) */
static void root_lp(struct run *v, bool *stop)
{
	const struct milp_params *par = v->par;
	struct milp_out *out = v->out;
	bool seeded = par->start != NULL;
	glp_smcp sp;
	*stop = false;
	glp_init_smcp(&sp);
	sp.msg_lev = v->msg;
	sp.out_frq = GLPK_OUT_MS;
	sp.out_dly = 0;
	sp.meth = GLP_DUALP;
	sp.presolve = seeded ? GLP_ON : GLP_OFF;
	sp.tm_lim = time_left_ms(v);
	double t_lp = atm_now_s();
	int ret = seeded ? glp_simplex(v->lp, &sp) : 0;
	if (seeded && ret == 0 && glp_get_status(v->lp) == GLP_OPT) {
		/* the presolver gives back a solution but not always a basis branch and bound
		 * can start from: a warm pass without it is cheap and provides one */
		sp.presolve = GLP_OFF;
		sp.tm_lim = time_left_ms(v);
		ret = glp_simplex(v->lp, &sp);
	}
	out->root_s = atm_now_s() - t_lp;
	if (par->verbosity)
		fprintf(stderr, "optimizer: GLPK root LP %.2f s\n", out->root_s);
	/* a relaxation GLPK cannot solve (its presolver calls a model with extreme times
	 * infeasible, a basis goes singular): the start stands */
	if (ret || (seeded && glp_get_status(v->lp) != GLP_OPT)) {
		out->status = ret == GLP_ETMLIM ? MILP_LP_TIME : MILP_LP_FAILED;
		if (par->verbosity && ret && ret != GLP_ETMLIM)
			fprintf(stderr, "optimizer: GLPK could not solve the root relaxation (code %d); "
			        "the heuristic's plan stands\n", ret);
		*stop = true;
		return;
	}
	if (!seeded)
		return;
	out->bound = glp_get_obj_val(v->lp);
	v->cb.bound = out->bound;
	if (v->cb.inc) {
		v->cb.inc->root = out->bound;
		__atomic_store_n(&v->cb.inc->has_root, 1, __ATOMIC_RELEASE);
	}
	/* the relaxation already proves the start within the gap: nothing to branch on */
	double start = milp_objective(v->p, par->start);
	double gap = (start - out->bound) / (start > 0 ? start : 1);
	if (gap <= par->gap) {
		out->status = gap > 0 ? MILP_WITHIN_GAP : MILP_OPTIMAL;
		out->gap = gap > 0 ? gap : 0;
		*stop = true;
	}
}

/* branch_and_cut -- GLPK's search from the root, seeded with the start */
static atm_status branch_and_cut(struct run *v)
{
	const struct milp_params *par = v->par;
	struct milp_out *out = v->out;
	glp_iocp ip;
	glp_init_iocp(&ip);
	ip.msg_lev = v->msg;
	ip.br_tech = GLP_BR_PCH;
	ip.bt_tech = GLP_BT_BLB;
	ip.presolve = par->presolve ? GLP_ON : GLP_OFF;
	ip.binarize = GLP_OFF;
	/* the pump, with a start: on resnet200's asynchronous 8:1 model (gap 0.1%) it found a plan
	 * 0.22% faster than the start at once, where without it branch and cut improved nothing in
	 * the same time (docs/optimizer.md); its overrun is bounded by OVERRUN_S now */
	ip.fp_heur = GLP_ON;
	/* Gomory and clique cuts pay on small models; on large ones GLPK spends tens of seconds
	 * building the conflict graph and separating at the root, past its own time limit, and
	 * they do not close the gap there */
	bool large = v->p->n_bin > LARGE_MODEL_BINARIES;
	ip.gmi_cuts = large ? GLP_OFF : GLP_ON;
	ip.mir_cuts = GLP_ON;
	ip.cov_cuts = GLP_ON;
	ip.clq_cuts = large ? GLP_OFF : GLP_ON;
	ip.mip_gap = par->gap;
	ip.tm_lim = time_left_ms(v);
	ip.out_frq = GLPK_OUT_MS;
	ip.out_dly = 0;
	ip.cb_func = callback;
	ip.cb_info = &v->cb;
	double t_bb = atm_now_s();
	int ret = glp_intopt(v->lp, &ip);
	if (par->verbosity)
		fprintf(stderr, "optimizer: GLPK branch and cut %.2f s (code %d)\n", atm_now_s() - t_bb,
		        ret);
	int st = glp_mip_status(v->lp);
	if (v->cb.bound > -DBL_MAX / 2 && v->cb.bound > out->bound)
		out->bound = v->cb.bound;
	if (st != GLP_OPT && st != GLP_FEAS) {
		out->status = ret == GLP_ETMLIM ? MILP_NO_SOLUTION : st == GLP_NOFEAS ? MILP_INFEASIBLE :
		              MILP_FAILED;
		return ATM_OK;
	}
	for (int32_t j = 0; j < v->p->n_cols; j++)
		out->x[j] = glp_mip_col_val(v->lp, j + 1);
	out->has_x = true;
	out->obj = glp_mip_obj_val(v->lp);
	out->gap = ret == 0 ? 0 : v->cb.gap;
	out->status = ret == 0 ? MILP_OPTIMAL : ret == GLP_EMIPGAP ? MILP_WITHIN_GAP :
	              ret == GLP_ETMLIM ? MILP_TIME_LIMIT : MILP_STOPPED;
	return ATM_OK;
}

/* steps -- scale, the root relaxation and, unless it settles the solve, branch and cut */
static atm_status steps(struct run *v)
{
	bool stop = false;
	glp_scale_prob(v->lp, GLP_SF_AUTO);
	root_lp(v, &stop);
	return stop ? ATM_OK : branch_and_cut(v);
}

/* guarded -- steps with GLPK's hooks set. GLPK cannot be returned to from its error hook, so
 * when it jumps, everything GLPK holds is freed (glp_free_env, as the hook's documentation
 * asks) and the solve ends with MILP_FAILED. (v lives in the caller's frame, so what the hooks
 * change in it is still there after the jump.) */
static atm_status guarded(struct run *v)
{
	glp_error_hook(on_glpk_error, v);
	glp_term_hook(on_glpk_output, v);
	glp_term_out(GLP_ON);
	if (setjmp(v->escape)) {
		glp_free_env();
		v->lp = NULL;
		v->out->status = MILP_FAILED;
		v->out->has_x = false;
		if (v->par->verbosity)
			fprintf(stderr, "optimizer: GLPK failed on this model; the heuristic's plan stands\n");
		return ATM_OK;
	}
	atm_status rc = steps(v);
	glp_term_hook(NULL, NULL);
	glp_error_hook(NULL, NULL);
	return rc;
}

/* solve_here -- p loaded into GLPK and solved under guarded, in this process; its incumbents
 * copied into inc as they improve (NULL: not kept) */
static atm_status solve_here(const struct milp *p, const struct milp_params *par,
                             struct milp_out *out, struct incumbent *inc)
{
	struct run v = {.p = p, .par = par, .out = out,
	                .cb = {.gap = -1, .bound = -DBL_MAX, .n_cols = p->n_cols}};
	/* GLPK's presolver (asked for without a start) renumbers the columns of the problem the
	 * search sees */
	v.cb.inc = par->presolve ? NULL : inc;
	double *seed1 = NULL;
	/* GLPK writes to the terminal unless told not to (restored below); while it solves, its
	 * output goes through the hook instead */
	int term = glp_term_out(par->verbosity ? GLP_ON : GLP_OFF);
	if (par->start) {
		if (!(seed1 = malloc(((size_t)p->n_cols + 1) * sizeof *seed1))) {
			glp_term_out(term);
			return atm_err(ATM_E_NOMEM, "out of memory seeding GLPK");
		}
		seed1[0] = 0;
		memcpy(seed1 + 1, par->start, (size_t)p->n_cols * sizeof *seed1);
	}
	v.cb.seed = seed1;
	v.msg = par->verbosity >= 2 ? GLP_MSG_ALL : GLP_MSG_ON;
	atm_status rc = (v.lp = load(p)) ? guarded(&v)
	                : atm_err(ATM_E_NOMEM, "out of memory loading the model into GLPK");
	if (v.lp)
		glp_delete_prob(v.lp);
	glp_term_out(term);
	free(seed1);
	return rc;
}

/* What the child hands back, followed by n_cols values of x, then n_cols of the incumbent's. */
struct answer {
	int done;               /* the child got to the end */
	atm_status rc;          /* solve_here's, and its message when it failed */
	char msg[256];
	struct milp_out out;    /* what it found (its x pointer is the child's) */
	struct incumbent inc;   /* the best solution so far (its x pointer is the child's) */
	double x[];
};

/* child -- solve_here into shared; runs in the child process */
static void child(const struct milp *p, const struct milp_params *par, const struct milp_out *out,
                  void *shared)
{
	struct answer *a = shared;
	struct milp_out o = *out;
	o.x = a->x;
	a->inc.x = a->x + p->n_cols;
	a->rc = solve_here(p, par, &o, &a->inc);
	if (a->rc < 0)
		snprintf(a->msg, sizeof a->msg, "%s", atm_errmsg());
	a->out = o;
	a->done = 1;
}

/* overran -- out from a child ended for overrunning the deadline: its last incumbent copied
 * whole (the start's, at worst, once branch and cut had it), else nothing but the root's bound */
static void overran(const struct milp *p, const struct milp_params *par, const struct answer *a,
                    struct milp_out *out, double took_s)
{
	int seq = __atomic_load_n(&a->inc.seq, __ATOMIC_ACQUIRE);
	bool whole = seq > 0 && seq % 2 == 0;
	if (__atomic_load_n(&a->inc.has_root, __ATOMIC_ACQUIRE) && a->inc.root > out->bound)
		out->bound = a->inc.root;
	if (whole && a->inc.bound > -DBL_MAX / 2 && a->inc.bound > out->bound)
		out->bound = a->inc.bound;
	out->has_x = whole;
	out->status = whole ? MILP_TIME_LIMIT : out->bound > -1e300 ? MILP_NO_SOLUTION : MILP_LP_TIME;
	if (whole) {
		memcpy(out->x, a->x + p->n_cols, (size_t)p->n_cols * sizeof *out->x);
		out->obj = a->inc.obj;
		if (out->bound > -1e300)
			out->gap = fmax(0, (out->obj - out->bound) / (fabs(out->obj) > 0 ? fabs(out->obj) : 1));
	}
	if (par->verbosity)
		fprintf(stderr, "optimizer: GLPK overran the time limit and was ended after %.1f s; %s\n",
		        took_s, whole ? "its best solution so far stands" : "the heuristic's plan stands");
}

/* glpk_solve -- p solved by GLPK in a child process (see the top of the file) */
static atm_status glpk_solve(const struct milp *p, const struct milp_params *par,
                             struct milp_out *out)
{
	struct milp_child_opts o = {
		.who = "GLPK",
		.shared_bytes = sizeof(struct answer) + (2 * (size_t)p->n_cols + 1) * sizeof(double),
		.overrun_s = OVERRUN_S,
		.body = child,
	};
	struct milp_child c;
	double t0 = atm_now_s();
	atm_status rc = milp_child_run(p, par, out, &o, &c);
	if (rc < 0)
		return rc;
	const struct answer *a = c.shared;
	if (a->done && milp_child_exited_ok(&c)) {
		if (a->rc < 0) {
			rc = atm_err(a->rc, "%s", a->msg);
		} else {
			double *x = out->x;
			*out = a->out;
			out->x = x;
			if (out->has_x)
				memcpy(x, a->x, (size_t)p->n_cols * sizeof *x);
		}
	} else if (c.end == MILP_CHILD_OVERRAN) {
		overran(p, par, a, out, atm_now_s() - t0);
	} else {
		/* a crash inside GLPK: the heuristic's plan stands */
		out->status = MILP_FAILED;
		out->has_x = false;
		if (par->verbosity)
			fprintf(stderr, "optimizer: the GLPK process %s; the heuristic's plan stands\n",
			        WIFSIGNALED(c.wstatus) ? strsignal(WTERMSIG(c.wstatus)) : "failed");
	}
	milp_child_release(&c);
	return rc;
}

const struct milp_solver milp_glpk = {
	.name = "glpk",
	.version = glpk_version,
	.solve = glpk_solve,
};
