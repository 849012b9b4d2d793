/* milp.c -- the solver-neutral mixed-integer program: building, checking, pricing, writing */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "milp.h"

void milp_init(struct milp *p)
{
	memset(p, 0, sizeof *p);
	p->row_start = calloc(1, sizeof *p->row_start);
	p->failed = !p->row_start;
}

void milp_free(struct milp *p)
{
	free(p->obj);
	free(p->col_lo);
	free(p->col_hi);
	free(p->col_int);
	free(p->row_lo);
	free(p->row_hi);
	free(p->row_start);
	free(p->ind);
	free(p->val);
	memset(p, 0, sizeof *p);
}

/* grow -- *a (of elem bytes each) to room for n, doubling; false when out of memory */
static bool grow(void **a, size_t elem, int64_t n)
{
	void *q = realloc(*a, (size_t)n * elem);
	if (!q)
		return false;
	*a = q;
	return true;
}

int32_t milp_col(struct milp *p, double lo, double hi, double obj, bool binary)
{
	if (p->failed)
		return -1;
	if (p->n_cols == p->cap_cols) {
		int32_t cap = p->cap_cols ? p->cap_cols * 2 : 1024;
		if (!grow((void **)&p->obj, sizeof *p->obj, cap) ||
		    !grow((void **)&p->col_lo, sizeof *p->col_lo, cap) ||
		    !grow((void **)&p->col_hi, sizeof *p->col_hi, cap) ||
		    !grow((void **)&p->col_int, sizeof *p->col_int, cap)) {
			p->failed = true;
			return -1;
		}
		p->cap_cols = cap;
	}
	int32_t j = p->n_cols++;
	p->obj[j] = obj;
	p->col_lo[j] = binary ? 0 : lo;
	p->col_hi[j] = binary ? 1 : hi;
	p->col_int[j] = binary;
	p->n_bin += binary;
	return j;
}

void milp_row(struct milp *p, const int32_t *ind, const double *val, int32_t n, double lo,
              double hi)
{
	if (p->failed)
		return;
	if (p->n_rows == p->cap_rows) {
		int32_t cap = p->cap_rows ? p->cap_rows * 2 : 1024;
		if (!grow((void **)&p->row_lo, sizeof *p->row_lo, cap) ||
		    !grow((void **)&p->row_hi, sizeof *p->row_hi, cap) ||
		    !grow((void **)&p->row_start, sizeof *p->row_start, (int64_t)cap + 1)) {
			p->failed = true;
			return;
		}
		p->cap_rows = cap;
	}
	if (p->n_nz + n > p->cap_nz) {
		int64_t cap = p->cap_nz ? p->cap_nz : 4096;
		while (cap < p->n_nz + n)
			cap *= 2;
		if (!grow((void **)&p->ind, sizeof *p->ind, cap) ||
		    !grow((void **)&p->val, sizeof *p->val, cap)) {
			p->failed = true;
			return;
		}
		p->cap_nz = cap;
	}
	memcpy(p->ind + p->n_nz, ind, (size_t)n * sizeof *ind);
	memcpy(p->val + p->n_nz, val, (size_t)n * sizeof *val);
	p->n_nz += n;
	p->row_lo[p->n_rows] = lo;
	p->row_hi[p->n_rows] = hi;
	p->row_start[++p->n_rows] = p->n_nz;
}

double milp_objective(const struct milp *p, const double *x)
{
	double v = p->obj_const;
	for (int32_t j = 0; j < p->n_cols; j++)
		v += p->obj[j] * x[j];
	return v;
}

atm_status milp_check(const struct milp *p, const double *x, const char *who)
{
	for (int32_t i = 0; i < p->n_rows; i++) {
		double a = 0, mag = 1;
		for (int64_t e = p->row_start[i]; e < p->row_start[i + 1]; e++) {
			a += p->val[e] * x[p->ind[e]];
			mag += fabs(p->val[e] * x[p->ind[e]]);
		}
		double tol = 1e-7 * mag;
		if (a < p->row_lo[i] - tol || a > p->row_hi[i] + tol)
			return atm_err(ATM_E_INTERNAL, "%s breaks row %d of the model (%g not in [%g, %g])",
			               who, i + 1, a, p->row_lo[i], p->row_hi[i]);
	}
	for (int32_t j = 0; j < p->n_cols; j++) {
		double tol = 1e-7 * (1 + fabs(x[j]));
		if (x[j] < p->col_lo[j] - tol || x[j] > p->col_hi[j] + tol)
			return atm_err(ATM_E_INTERNAL, "%s breaks the bounds of column %d of the model "
			               "(%g not in [%g, %g])", who, j + 1, x[j], p->col_lo[j], p->col_hi[j]);
	}
	return ATM_OK;
}

/* ---------------------------------------------------------------- writing */

/* Columns and rows are named by kind-less numbers, 1-based as solvers print them: x1.., r1... */

void milp_csc_free(struct milp_csc *c)
{
	free(c->cs);
	free(c->ri);
	free(c->rv);
	memset(c, 0, sizeof *c);
}

bool milp_by_column(const struct milp *p, struct milp_csc *c)
{
	c->cs = calloc((size_t)p->n_cols + 1, sizeof *c->cs);
	c->ri = malloc(((size_t)p->n_nz + 1) * sizeof *c->ri);
	c->rv = malloc(((size_t)p->n_nz + 1) * sizeof *c->rv);
	int64_t *fill = malloc(((size_t)p->n_cols + 1) * sizeof *fill);
	if (!c->cs || !c->ri || !c->rv || !fill) {
		free(fill);
		milp_csc_free(c);
		return false;
	}
	for (int64_t e = 0; e < p->n_nz; e++)
		c->cs[p->ind[e] + 1]++;
	for (int32_t j = 0; j < p->n_cols; j++)
		c->cs[j + 1] += c->cs[j];
	memcpy(fill, c->cs, ((size_t)p->n_cols + 1) * sizeof *fill);
	for (int32_t i = 0; i < p->n_rows; i++)
		for (int64_t e = p->row_start[i]; e < p->row_start[i + 1]; e++) {
			int64_t k = fill[p->ind[e]]++;
			c->ri[k] = i;
			c->rv[k] = p->val[e];
		}
	free(fill);
	return true;
}

/* The objective's constant is written as a column of its own, CONST_COL, fixed at 1 with the
 * constant as its cost: an objective row's right-hand side is read as minus the constant by
 * GLPK (glpsol) and as plus it by CBC, and an LP objective's bare number is refused by glpsol
 * and dropped by CBC, while a fixed column means one objective to every solver. */
#define CONST_COL "objconst"

/* write_mps -- free MPS: ROWS, COLUMNS (binaries between integer markers), RHS, RANGES, BOUNDS */
static bool write_mps(const struct milp *p, FILE *f)
{
	struct milp_csc c;
	bool ok = milp_by_column(p, &c);
	if (ok) {
		const int64_t *cs = c.cs;
		const int32_t *ri = c.ri;
		const double *rv = c.rv;
		fprintf(f, "NAME autotm FREE\nROWS\n N obj\n"); /* FREE: COIN reads it as free MPS */
		for (int32_t i = 0; i < p->n_rows; i++) {
			double lo = p->row_lo[i], hi = p->row_hi[i];
			fprintf(f, " %c r%d\n", lo == hi ? 'E' : isinf(lo) ? 'L' : 'G', i + 1);
		}
		fprintf(f, "COLUMNS\n");
		if (p->obj_const != 0)
			fprintf(f, " " CONST_COL " obj %.17g\n", p->obj_const);
		bool in_int = false;
		for (int32_t j = 0; j < p->n_cols; j++) {
			if (p->col_int[j] != in_int) {
				in_int = p->col_int[j];
				fprintf(f, " M%d 'MARKER' '%s'\n", j, in_int ? "INTORG" : "INTEND");
			}
			if (p->obj[j] != 0 || cs[j] == cs[j + 1])
				fprintf(f, " x%d obj %.17g\n", j + 1, p->obj[j]);
			for (int64_t k = cs[j]; k < cs[j + 1]; k++)
				fprintf(f, " x%d r%d %.17g\n", j + 1, ri[k] + 1, rv[k]);
		}
		if (in_int)
			fprintf(f, " M%d 'MARKER' 'INTEND'\n", p->n_cols);
		fprintf(f, "RHS\n");
		for (int32_t i = 0; i < p->n_rows; i++) {
			double lo = p->row_lo[i], hi = p->row_hi[i], rhs = isinf(lo) ? hi : lo;
			if (rhs != 0)
				fprintf(f, " rhs r%d %.17g\n", i + 1, rhs);
		}
		fprintf(f, "RANGES\n");
		for (int32_t i = 0; i < p->n_rows; i++)
			if (!isinf(p->row_lo[i]) && !isinf(p->row_hi[i]) && p->row_lo[i] != p->row_hi[i])
				fprintf(f, " rng r%d %.17g\n", i + 1, p->row_hi[i] - p->row_lo[i]);
		fprintf(f, "BOUNDS\n");
		if (p->obj_const != 0)
			fprintf(f, " FX bnd " CONST_COL " 1\n");
		for (int32_t j = 0; j < p->n_cols; j++) {
			double lo = p->col_lo[j], hi = p->col_hi[j];
			if (p->col_int[j])
				fprintf(f, " UP bnd x%d 1\n", j + 1); /* binaries: integers in [0, 1] */
			else if (lo == hi)
				fprintf(f, " FX bnd x%d %.17g\n", j + 1, lo);
			else {
				if (lo != 0)
					fprintf(f, isinf(lo) ? " MI bnd x%d\n" : " LO bnd x%d %.17g\n", j + 1, lo);
				if (!isinf(hi))
					fprintf(f, " UP bnd x%d %.17g\n", j + 1, hi);
			}
		}
		fprintf(f, "ENDATA\n");
		milp_csc_free(&c);
	}
	return ok;
}

/* lp_terms -- " + 3 x1 - 2 x7", broken into lines a reader takes */
static void lp_terms(FILE *f, const int32_t *ind, const double *val, int64_t n)
{
	for (int64_t e = 0; e < n; e++)
		fprintf(f, "%s %s %.17g x%d", e && e % 6 == 0 ? "\n " : "", val[e] < 0 ? "-" : "+",
		        fabs(val[e]), ind[e] + 1);
}

/* write_lp -- CPLEX LP: objective (the constant on CONST_COL), constraints, bounds,
 * binaries */
static bool write_lp(const struct milp *p, FILE *f)
{
	fprintf(f, "\\ autotm placement model: objective in microseconds, memory in KiB\n"
	        "Minimize\n obj:");
	/* the objective's nonzero terms, written as a row's */
	int32_t *all = malloc(((size_t)p->n_cols + 1) * sizeof *all);
	double *coef = malloc(((size_t)p->n_cols + 1) * sizeof *coef);
	if (!all || !coef) {
		free(all);
		free(coef);
		return false;
	}
	int32_t n = 0;
	for (int32_t j = 0; j < p->n_cols; j++)
		if (p->obj[j] != 0) {
			coef[n] = p->obj[j];
			all[n++] = j;
		}
	lp_terms(f, all, coef, n);
	free(coef);
	if (p->obj_const != 0)
		fprintf(f, " %s %.17g " CONST_COL, p->obj_const < 0 ? "-" : "+", fabs(p->obj_const));
	else if (!n)
		fprintf(f, " 0 x1");
	fprintf(f, "\nSubject To\n");
	for (int32_t i = 0; i < p->n_rows; i++) {
		double lo = p->row_lo[i], hi = p->row_hi[i];
		int64_t b = p->row_start[i], len = p->row_start[i + 1] - b;
		bool ranged = !isinf(lo) && !isinf(hi) && lo != hi;
		fprintf(f, " r%d:", i + 1);
		if (ranged)
			fprintf(f, " %.17g <=", lo);
		if (len)
			lp_terms(f, p->ind + b, p->val + b, len);
		else
			fprintf(f, " 0 x1");
		if (ranged || isinf(lo))
			fprintf(f, " <= %.17g\n", hi);
		else
			fprintf(f, " %s %.17g\n", lo == hi ? "=" : ">=", lo);
	}
	fprintf(f, "Bounds\n");
	if (p->obj_const != 0)
		fprintf(f, " " CONST_COL " = 1\n");
	for (int32_t j = 0; j < p->n_cols; j++)
		if (!p->col_int[j])
			fprintf(f, isinf(p->col_hi[j]) ? " %.17g <= x%d\n" : " %.17g <= x%d <= %.17g\n",
			        p->col_lo[j], j + 1, p->col_hi[j]);
	fprintf(f, "Binaries\n");
	for (int32_t j = 0, k = 0; j < p->n_cols; j++)
		if (p->col_int[j])
			fprintf(f, "%sx%d", k++ % 10 ? " " : "\n ", j + 1);
	fprintf(f, "\nEnd\n");
	free(all);
	return true;
}

/* ends_with -- path ends in suffix, with a name before it */
static bool ends_with(const char *path, const char *suffix)
{
	size_t len = strlen(path), n = strlen(suffix);
	return len > n && !strcmp(path + len - n, suffix);
}

atm_status milp_write_check(const char *path)
{
	if (ends_with(path, ".mps") || ends_with(path, ".lp"))
		return ATM_OK;
	return atm_err(ATM_E_USAGE, "cannot write the model to '%s': the name must end in .mps "
	               "(free MPS) or .lp (CPLEX LP)", path);
}

atm_status milp_write(const struct milp *p, const char *path)
{
	bool mps = ends_with(path, ".mps");
	atm_status rc = milp_write_check(path);
	if (rc < 0)
		return rc;
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	if (!f)
		return atm_err(ATM_E_NOMEM, "out of memory writing the model");
	bool ok = mps ? write_mps(p, f) : write_lp(p, f);
	ok &= !ferror(f);
	ok &= fclose(f) == 0;
	rc = ok ? atm_write_file_atomic(path, text, n)
	        : atm_err(ATM_E_NOMEM, "out of memory writing the model");
	free(text);
	return rc;
}
