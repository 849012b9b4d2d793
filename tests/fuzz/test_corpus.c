/* test_corpus.c -- replays every seed of fuzz/corpus/TARGET through its fuzz target, built by the ordinary compiler */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_core.h"
#include "atm_formats.h"

/* The targets themselves, each entry point renamed: they abort on a broken promise (a crash
 * fails this test too). */
#define LLVMFuzzerTestOneInput fuzz_graph_one
#include "../../fuzz/fuzz_graph.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_plan_one
#include "../../fuzz/fuzz_plan.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_profile_one
#include "../../fuzz/fuzz_profile.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_tierspec_one
#include "../../fuzz/fuzz_tierspec.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_results_one
#include "../../fuzz/fuzz_results.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_forward_one
#include "../../fuzz/fuzz_forward.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_safetensors_one
#include "../../fuzz/fuzz_safetensors.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_machine_one
#include "../../fuzz/fuzz_machine.c"
#undef LLVMFuzzerTestOneInput

/* A target: its corpus folder, entry point, loader, the statuses a bad seed may get, and
 * how many valid and invalid seeds its corpus must at least hold. */
struct target {
	const char *name, *test; /* the corpus folder; the test's name */
	int (*one)(const uint8_t *data, size_t size);
	atm_status (*load)(const char *data, size_t len, const char *origin);
	atm_status bad[2];
	bool names_origin; /* a refusal's message starts with the seed's name */
	int min_ok, min_bad;
};

static const struct target targets[] = {
	{"graph", "test_fuzz_corpus_graph", fuzz_graph_one, fuzz_graph_load, {ATM_E_INPUT, ATM_E_INPUT}, true, 4, 20},
	{"plan", "test_fuzz_corpus_plan", fuzz_plan_one, fuzz_plan_load, {ATM_E_INPUT, ATM_E_INFEASIBLE}, true, 4, 10},
	{"profile", "test_fuzz_corpus_profile", fuzz_profile_one, fuzz_profile_load, {ATM_E_INPUT, ATM_E_INPUT}, true, 3, 10},
	{"tierspec", "test_fuzz_corpus_tierspec", fuzz_tierspec_one, fuzz_tierspec_load, {ATM_E_INPUT, ATM_E_INPUT}, true, 3, 10},
	/* the results loader reads a file: its messages name that file */
	{"results", "test_fuzz_corpus_results", fuzz_results_one, fuzz_results_load, {ATM_E_INPUT, ATM_E_USAGE}, false, 2, 8},
	{"forward", "test_fuzz_corpus_forward", fuzz_forward_one, fuzz_forward_load, {ATM_E_INPUT, ATM_E_INPUT}, true, 3, 10},
	{"safetensors", "test_fuzz_corpus_safetensors", fuzz_safetensors_one, fuzz_safetensors_load, {ATM_E_INPUT, ATM_E_INPUT}, true, 3, 10},
	/* a file without this machine's calibration is not found, and measured again */
	{"machine", "test_fuzz_corpus_machine", fuzz_machine_one, fuzz_machine_load, {ATM_E_INPUT, ATM_E_NOTFOUND}, true, 3, 15},
};

/* name_cmp -- qsort order of file names */
static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* corpus_files -- the file names in dir, sorted (caller frees each and the array) */
static char **corpus_files(const char *dir, int *n)
{
	DIR *d = opendir(dir);
	char **names = NULL;
	int cap = 0;
	struct dirent *e;
	*n = 0;
	if (!d)
		fail_msg("cannot open %s", dir);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, (size_t)cap * sizeof *names);
			assert_non_null(names);
		}
		names[(*n)++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, (size_t)*n, sizeof *names, name_cmp);
	return names;
}

/* replay -- every seed of target t's corpus (fuzz/corpus/NAME of the source tree, which ctest
 * names in ATM_SOURCE_DIR) through its entry point; seeds say in their names whether they are
 * valid ("ok-"), invalid ("bad-"), or what a fuzzer found ("found-", either) */
static void replay(const struct target *t)
{
	char dir[1024], path[2048];
	const char *src = getenv("ATM_SOURCE_DIR");
	int n = 0, n_ok = 0, n_bad = 0;
	if (!src)
		fail_msg("ATM_SOURCE_DIR is not set; run the test through ctest");
	snprintf(dir, sizeof dir, "%s/fuzz/corpus/%s", src, t->name);
	char **names = corpus_files(dir, &n);
	for (int i = 0; i < n; i++) {
		char *data = NULL;
		size_t len = 0;
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if (atm_read_file(path, &data, &len) != ATM_OK)
			fail_msg("%s", atm_errmsg());
		t->one((const uint8_t *)data, len);
		atm_status rc = t->load(data, len, names[i]);
		if (strncmp(names[i], "ok-", 3) == 0) {
			if (rc != ATM_OK)
				fail_msg("%s: valid seed %s is refused: %s", t->name, names[i], atm_errmsg());
			n_ok++;
		} else if (strncmp(names[i], "bad-", 4) == 0) {
			if (rc != t->bad[0] && rc != t->bad[1])
				fail_msg("%s: invalid seed %s gave status %d (%s)", t->name, names[i], rc,
				         atm_errmsg());
			if (t->names_origin && strncmp(atm_errmsg(), names[i], strlen(names[i])))
				fail_msg("%s: the message for %s does not name it: %s", t->name, names[i],
				         atm_errmsg());
			n_bad++;
		}
		free(data);
		free(names[i]);
	}
	free(names);
	/* an empty or misplaced corpus must not pass silently */
	if (n_ok < t->min_ok || n_bad < t->min_bad)
		fail_msg("%s: %d valid and %d invalid seeds; at least %d and %d expected", t->name, n_ok,
		         n_bad, t->min_ok, t->min_bad);
}

/* test_fuzz_corpus -- the corpus of the target the state names */
static void test_fuzz_corpus(void **state)
{
	replay(*state);
}

int main(void)
{
	struct CMUnitTest tests[sizeof targets / sizeof targets[0]];
	for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
		tests[i] = (struct CMUnitTest){.name = targets[i].test, .test_func = test_fuzz_corpus,
		                               .initial_state = (void *)&targets[i]};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
