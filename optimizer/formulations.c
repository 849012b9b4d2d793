/* formulations.c -- the formulations' names and which of them are solved as integer programs */
#include <string.h>

#include "atm_optimizer.h"

static const char *const names[ATM_OPT_N_FORMULATIONS] = {
	"static", "synchronous", "asynchronous", "all-fast", "all-slow", "numa", "2lm", "vdnn",
};

/* atm_opt_formulation_name -- the name plans, results and the command line use */
const char *atm_opt_formulation_name(atm_opt_formulation f)
{
	return f >= 0 && f < ATM_OPT_N_FORMULATIONS ? names[f] : "unknown";
}

/* atm_opt_formulation_from_name -- the formulation of a name, or ATM_E_USAGE listing them */
atm_status atm_opt_formulation_from_name(const char *s, atm_opt_formulation *out)
{
	*out = ATM_OPT_SYNCHRONOUS;
	for (int i = 0; s && i < ATM_OPT_N_FORMULATIONS; i++)
		if (!strcmp(s, names[i])) {
			*out = (atm_opt_formulation)i;
			return ATM_OK;
		}
	return atm_err(ATM_E_USAGE, "unknown formulation '%s'; valid: static, synchronous, "
	               "asynchronous, all-fast, all-slow, numa, 2lm, vdnn", s ? s : "(null)");
}

/* atm_opt_is_ilp -- f is solved as an integer program, not a baseline */
bool atm_opt_is_ilp(atm_opt_formulation f)
{
	return f == ATM_OPT_STATIC || f == ATM_OPT_SYNCHRONOUS || f == ATM_OPT_ASYNCHRONOUS;
}
