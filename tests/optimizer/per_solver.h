/* per_solver.h -- run an optimizer test group once per solver this build has (GLPK, then CBC when built in) */
#ifndef ATM_TEST_PER_SOLVER_H
#define ATM_TEST_PER_SOLVER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atm_optimizer.h"
#include "common/test_parts.h"

/* per_solver_run -- tests[0..n) as group "glpk" with *solver set to GLPK, then as "cbc" with
 * it set to CBC when the build has CBC (else says so); ATM_TEST_FILTER and ATM_TEST_SKIP pick
 * tests by name (tests/common/test_parts.h), ATM_TEST_PART (glpk or cbc) runs one group only,
 * so that ctest can run the two side by side (atm_add_test's PARTS). The failures. */
static inline int per_solver_run(const struct CMUnitTest *tests, size_t n, atm_opt_solver *solver,
                                 CMFixtureFunction setup, CMFixtureFunction teardown)
{
	atm_opt_solver s;
	const char *only = getenv("ATM_TEST_PART");
	if (only && strcmp(only, "glpk") && strcmp(only, "cbc")) {
		fprintf(stderr, "ATM_TEST_PART '%s' is not valid; expected glpk or cbc (unset: both)\n",
		        only);
		return 1;
	}
	test_parts_select();
	int failed = 0;
	if (!only || !strcmp(only, "glpk")) {
		*solver = ATM_OPT_SOLVER_GLPK;
		failed += _cmocka_run_group_tests("glpk", tests, n, setup, teardown);
	}
	if (only && strcmp(only, "cbc"))
		return failed;
	if (atm_opt_solver_resolve(ATM_OPT_SOLVER_CBC, &s) == ATM_OK) {
		*solver = ATM_OPT_SOLVER_CBC;
		failed += _cmocka_run_group_tests("cbc", tests, n, setup, teardown);
	} else {
		printf("cbc: not built in, its group skipped\n");
		if (only)
			return 77;
	}
	return failed;
}

#endif /* ATM_TEST_PER_SOLVER_H */
