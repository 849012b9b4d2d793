/* test_parts.h -- one test executable run as several ctest tests, each a named part of its cases
 *
 * A long executable holds ctest -j back: its cases run one after another while the other
 * cores wait for it. Its cases are then groups with names, and atm_add_test's PARTS
 * (cmake/atm.cmake) registers each group as a ctest test of its own, which runs it alone by
 * naming it in ATM_TEST_PART. Run by hand without it, the executable runs every part. A case
 * belongs to the part whose array holds it, so renaming one moves nothing.
 *
 *     int main(void)
 *     {
 *             static const struct CMUnitTest main_cases[] = {...}, slow_cases[] = {...};
 *             const struct test_part parts[] = {TEST_PART("main", main_cases),
 *                                               TEST_PART("slow", slow_cases)};
 *             return test_parts_run(parts, 2, setup, teardown);
 *     }
 *
 * By hand, ATM_TEST_FILTER and ATM_TEST_SKIP (cmocka patterns, '*' and '?') narrow the cases of
 * any test; scripts/gpu-check.sh --sim picks a few of test_runtime_gpu's that way.
 */
#ifndef ATM_TEST_PARTS_H
#define ATM_TEST_PARTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A named group of an executable's cases. */
struct test_part {
	const char *name;
	const struct CMUnitTest *tests;
	size_t n;
};
#define TEST_PART(name, cases) {name, cases, sizeof cases / sizeof cases[0]}

/* test_parts_select -- the cmocka patterns of ATM_TEST_FILTER and ATM_TEST_SKIP, when set */
static inline void test_parts_select(void)
{
	const char *only = getenv("ATM_TEST_FILTER"), *skip = getenv("ATM_TEST_SKIP");
	if (only && *only)
		cmocka_set_test_filter(only);
	if (skip && *skip)
		cmocka_set_skip_filter(skip);
}

/* test_parts_run -- the part ATM_TEST_PART names, or every part when it is unset, each as a
 * cmocka group with setup and teardown; the failures (1 for a part name the executable lacks) */
static inline int test_parts_run(const struct test_part *parts, int n, CMFixtureFunction setup,
                                 CMFixtureFunction teardown)
{
	const char *want = getenv("ATM_TEST_PART");
	int failed = 0, found = 0;
	test_parts_select();
	for (int i = 0; i < n; i++) {
		if (want && *want && strcmp(want, parts[i].name))
			continue;
		found++;
		failed += _cmocka_run_group_tests(parts[i].name, parts[i].tests, parts[i].n, setup,
		                                  teardown);
	}
	if (!found) {
		fprintf(stderr, "ATM_TEST_PART '%s' names no part of this test; its parts:", want);
		for (int i = 0; i < n; i++)
			fprintf(stderr, " %s", parts[i].name);
		fprintf(stderr, "\n");
		return 1;
	}
	return failed;
}

#endif /* ATM_TEST_PARTS_H */
