/* alloc_fail.h -- the allocation-failure sweep: a call run again and again with its k-th allocation failing, for every k
 *
 * Usage (in a test file that includes cmocka.h first):
 *
 *     static atm_status dump_once(void *arg)   // one whole call, releasing what it made
 *     {
 *             char *text = NULL;
 *             atm_status rc = atm_plan_dump(arg, &text);
 *             free(text);
 *             return rc;
 *     }
 *     alloc_fail_sweep("atm_plan_dump", dump_once, plan);
 *
 * A run that checks what it made allocates outside the count: alloc_fail_pause() first,
 * alloc_fail_resume() after.
 *
 * Every run whose allocation failed must return ATM_E_NOMEM (not succeed with a part
 * missing, not crash) and, under AddressSanitizer, leak nothing; the sweep ends at the first
 * run that makes no allocation fail, which must succeed. Allocations are counted in two places:
 * jansson's (json_set_alloc_funcs, installed by alloc_fail_sweep) and, in a test linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc and compiled with ALLOC_FAIL_WRAP defined,
 * every malloc, calloc and realloc of the code linked statically into the test (autotm's
 * libraries): system libraries allocate unseen.
 */
#ifndef ATM_TEST_ALLOC_FAIL_H
#define ATM_TEST_ALLOC_FAIL_H

#include <stdbool.h>
#include <stdlib.h>

#include <jansson.h>

#include "atm_core.h"

/* > 0: the alloc_fail_after-th allocation from now fails (then it is 0) */
static long alloc_fail_after;

/* alloc_fail_injected -- should this allocation fail? */
static inline bool alloc_fail_injected(void)
{
	return alloc_fail_after > 0 && --alloc_fail_after == 0;
}

/* alloc_fail_pause -- stop counting (to check what a run made); alloc_fail_resume(what it
 * returned) goes on where it stopped */
static inline long alloc_fail_pause(void)
{
	long left = alloc_fail_after;
	alloc_fail_after = 0;
	return left;
}

static inline void alloc_fail_resume(long left)
{
	alloc_fail_after = left;
}

#ifdef ALLOC_FAIL_WRAP
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);

void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
	return alloc_fail_injected() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size)
{
	return alloc_fail_injected() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
	return alloc_fail_injected() ? NULL : __real_realloc(p, n);
}

#define ALLOC_FAIL_REAL_MALLOC __real_malloc
#else
#define ALLOC_FAIL_REAL_MALLOC malloc
#endif

/* alloc_fail_json_malloc -- jansson's allocator, failing on request */
static inline void *alloc_fail_json_malloc(size_t n)
{
	return alloc_fail_injected() ? NULL : ALLOC_FAIL_REAL_MALLOC(n);
}

/* alloc_fail_run -- the sweep; with jansson, jansson's allocations are counted too */
static inline long alloc_fail_run(const char *what, atm_status (*attempt)(void *), void *arg,
                                  bool jansson)
{
	json_malloc_t old_malloc;
	json_free_t old_free;
	long k;
	json_get_alloc_funcs(&old_malloc, &old_free);
	if (jansson)
		json_set_alloc_funcs(alloc_fail_json_malloc, free);
	for (k = 1;; k++) {
		alloc_fail_after = k;
		atm_status rc = attempt(arg);
		bool hit = alloc_fail_after == 0;
		alloc_fail_after = 0;
		if (!hit) {
			json_set_alloc_funcs(old_malloc, old_free);
			if (rc != ATM_OK)
				fail_msg("%s with no allocation failing: status %d, '%s'", what, rc, atm_errmsg());
			return k - 1;
		}
		if (rc != ATM_E_NOMEM) {
			json_set_alloc_funcs(old_malloc, old_free);
			fail_msg("%s with allocation %ld failing: status %d, '%s' (want out of memory)", what,
			         k, rc, atm_errmsg());
		}
	}
}

/* alloc_fail_sweep -- attempt(arg) with its first, second, ... allocation failing, jansson's
 * and (ALLOC_FAIL_WRAP) autotm's; what names the call in messages. Returns how many
 * allocations a whole run makes. */
__attribute__((unused)) static long alloc_fail_sweep(const char *what, atm_status (*attempt)(void *),
                                                     void *arg)
{
	return alloc_fail_run(what, attempt, arg, true);
}

/* alloc_fail_sweep_own -- the same counting autotm's own allocations only (ALLOC_FAIL_WRAP),
 * for a call that parses JSON: jansson 2.14's parser can crash when its allocator fails, and
 * reports some such failures as syntax errors */
__attribute__((unused)) static long alloc_fail_sweep_own(const char *what,
                                                         atm_status (*attempt)(void *), void *arg)
{
	return alloc_fail_run(what, attempt, arg, false);
}

#endif /* ATM_TEST_ALLOC_FAIL_H */
