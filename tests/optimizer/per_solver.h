/* per_solver.h -- run an optimizer test group once per solver this build has (GLPK, then CBC when built in) */
#ifndef ATM_TEST_PER_SOLVER_H
#define ATM_TEST_PER_SOLVER_H

#include <stdio.h>
#include <stdlib.h>

#include "atm_optimizer.h"

/* per_solver_run -- tests[0..n) as group "glpk" with *solver set to GLPK, then as "cbc" with
 * it set to CBC when the build has CBC (else says so); ATM_TEST_FILTER picks tests by name.
 * The failures. */
static inline int per_solver_run(const struct CMUnitTest *tests, size_t n, atm_opt_solver *solver,
                                 CMFixtureFunction setup, CMFixtureFunction teardown)
{
	atm_opt_solver s;
	if (getenv("ATM_TEST_FILTER"))
		cmocka_set_test_filter(getenv("ATM_TEST_FILTER"));
	*solver = ATM_OPT_SOLVER_GLPK;
	int failed = _cmocka_run_group_tests("glpk", tests, n, setup, teardown);
	if (atm_opt_solver_resolve(ATM_OPT_SOLVER_CBC, &s) == ATM_OK) {
		*solver = ATM_OPT_SOLVER_CBC;
		failed += _cmocka_run_group_tests("cbc", tests, n, setup, teardown);
	} else {
		printf("cbc: not built in, its group skipped\n");
	}
	return failed;
}

#endif /* ATM_TEST_PER_SOLVER_H */
