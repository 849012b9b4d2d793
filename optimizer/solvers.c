/* solvers.c -- the solver registry: names, what this build has, the best available */
#include <string.h>

#include "milp.h"

/* The only place that knows which optional backends were compiled in. */
#ifdef ATM_WITH_CBC
#define CBC_BACKEND (&milp_cbc)
#else
#define CBC_BACKEND NULL
#endif

static const char *const names[ATM_OPT_N_SOLVERS] = {"auto", "glpk", "cbc"};

/* by preference: auto takes the first built in */
static const atm_opt_solver preference[] = {ATM_OPT_SOLVER_CBC, ATM_OPT_SOLVER_GLPK};

const struct milp_solver *milp_solver_of(atm_opt_solver s)
{
	switch (s) {
	case ATM_OPT_SOLVER_GLPK:
		return &milp_glpk;
	case ATM_OPT_SOLVER_CBC:
		return CBC_BACKEND;
	default:
		return NULL;
	}
}

const char *atm_opt_solver_name(atm_opt_solver s)
{
	return s >= 0 && s < ATM_OPT_N_SOLVERS ? names[s] : "unknown";
}

atm_status atm_opt_solver_from_name(const char *s, atm_opt_solver *out)
{
	*out = ATM_OPT_SOLVER_AUTO;
	for (int i = 0; s && i < ATM_OPT_N_SOLVERS; i++)
		if (!strcmp(s, names[i])) {
			*out = (atm_opt_solver)i;
			return ATM_OK;
		}
	return atm_err(ATM_E_USAGE, "unknown solver '%s'; valid: auto (the best this build has), "
	               "glpk, cbc", s ? s : "(null)");
}

atm_status atm_opt_solver_resolve(atm_opt_solver s, atm_opt_solver *out)
{
	*out = s;
	if (s == ATM_OPT_SOLVER_AUTO) {
		for (size_t i = 0; i < sizeof preference / sizeof *preference; i++)
			if (milp_solver_of(preference[i])) {
				*out = preference[i];
				return ATM_OK;
			}
	}
	if (s < 0 || s >= ATM_OPT_N_SOLVERS)
		return atm_err(ATM_E_USAGE, "solver %d does not exist", (int)s);
	if (!milp_solver_of(s))
		return atm_err(ATM_E_UNSUPPORTED, "solver '%s' is not supported in this build: install "
		               "coinor-libcbc-dev (Debian) and rebuild autotm, or use --solver glpk",
		               names[s]);
	return ATM_OK;
}

const char *atm_opt_solver_version(atm_opt_solver s)
{
	atm_opt_solver r;
	if (atm_opt_solver_resolve(s, &r) < 0) {
		atm_err_clear();
		return "";
	}
	return milp_solver_of(r)->version();
}
