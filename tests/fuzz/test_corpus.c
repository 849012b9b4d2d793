/* test_corpus.c -- replays every seed of fuzz/corpus through the fuzz target, built by the ordinary compiler */
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

/* The target itself: it aborts on a broken promise (a crash fails this test too). */
#include "../../fuzz/fuzz_graph.c"

/* corpus_dir -- fuzz/corpus of the source tree (ATM_SOURCE_DIR is set by ctest) */
static void corpus_dir(char *buf, size_t len)
{
	const char *src = getenv("ATM_SOURCE_DIR");
	if (!src)
		fail_msg("ATM_SOURCE_DIR is not set; run the test through ctest");
	snprintf(buf, len, "%s/fuzz/corpus", src);
}

/* name_cmp -- qsort order of file names */
static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* corpus_files -- the file names of the corpus, sorted (caller frees each and the array) */
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

static void test_fuzz_corpus_replays(void **state)
{
	char dir[1024], path[2048];
	int n = 0, n_ok = 0, n_bad = 0;
	char **names;
	corpus_dir(dir, sizeof dir);
	names = corpus_files(dir, &n);
	for (int i = 0; i < n; i++) {
		char *data = NULL;
		size_t len = 0;
		atm_graph *g = NULL;
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if (atm_read_file(path, &data, &len) != ATM_OK)
			fail_msg("%s", atm_errmsg());
		LLVMFuzzerTestOneInput((const uint8_t *)data, len);

		/* seeds say in their name whether they are valid */
		atm_status rc = atm_graph_load_buffer(&g, data, len, names[i], NULL);
		if (strncmp(names[i], "ok-", 3) == 0) {
			if (rc != ATM_OK)
				fail_msg("valid seed %s does not load: %s", names[i], atm_errmsg());
			n_ok++;
		} else if (strncmp(names[i], "bad-", 4) == 0) {
			if (rc != ATM_E_INPUT)
				fail_msg("invalid seed %s gave status %d, not ATM_E_INPUT", names[i], rc);
			assert_int_equal(strncmp(atm_errmsg(), names[i], strlen(names[i])), 0);
			n_bad++;
		}
		atm_graph_destroy(g);
		free(data);
		free(names[i]);
	}
	free(names);
	/* an empty or misplaced corpus must not pass silently */
	assert_true(n_ok >= 4);
	assert_true(n_bad >= 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz_corpus_replays),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
