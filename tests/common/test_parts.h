/* test_parts.h -- one test executable run as several ctest tests, each a part of its cases
 *
 * A long executable holds ctest -j back: its cases run one after another while the other
 * cores wait for it. atm_test_split (cmake/atm.cmake) registers a part as a ctest test of its own
 * with ATM_TEST_FILTER (a cmocka pattern, '*' and '?') naming its cases; the whole test then
 * gets ATM_TEST_SKIP with the same pattern, so every case runs exactly once.
 *
 *     int main(void)
 *     {
 *             test_parts_select();
 *             return cmocka_run_group_tests(tests, setup, teardown);
 *     }
 */
#ifndef ATM_TEST_PARTS_H
#define ATM_TEST_PARTS_H

#include <stdlib.h>

/* test_parts_select -- the cases this run is to take, from the environment */
static inline void test_parts_select(void)
{
	const char *only = getenv("ATM_TEST_FILTER"), *skip = getenv("ATM_TEST_SKIP");
	if (only && *only)
		cmocka_set_test_filter(only);
	if (skip && *skip)
		cmocka_set_skip_filter(skip);
}

#endif /* ATM_TEST_PARTS_H */
