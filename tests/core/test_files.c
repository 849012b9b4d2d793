/* test_files.c -- the file and small helpers every module shares: writable paths, the clock, FNV-1a, the arena alignment */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "atm_core.h"

static char dir[] = "/tmp/atm-files-XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[64];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* n_entries -- files in dir */
static int n_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* test_files_check_writable -- a folder that takes a new file is fine and is left as it was; a
 * missing or read-only folder is ATM_E_IO naming the path; an existing file is left alone */
static void test_files_check_writable(void **state)
{
	char path[192], ro[128];
	(void)state;
	snprintf(path, sizeof path, "%s/out.json", dir);
	assert_int_equal(atm_check_writable(path), ATM_OK);
	assert_int_equal(n_entries(dir), 0);
	assert_int_equal(atm_write_file_atomic(path, "{}", 2), ATM_OK);
	assert_int_equal(atm_check_writable(path), ATM_OK);
	char *text = NULL;
	size_t len = 0;
	assert_int_equal(atm_read_file(path, &text, &len), ATM_OK);
	assert_string_equal(text, "{}");
	free(text);
	assert_int_equal(n_entries(dir), 1);
	assert_int_equal(atm_check_writable("/nonexistent-atm/out.json"), ATM_E_IO);
	assert_non_null(strstr(atm_errmsg(), "/nonexistent-atm/out.json"));
	snprintf(ro, sizeof ro, "%s/ro", dir);
	assert_int_equal(mkdir(ro, 0555), 0);
	snprintf(path, sizeof path, "%s/out.json", ro);
	/* root writes anywhere: the read-only folder says nothing then */
	if (geteuid() != 0) {
		assert_int_equal(atm_check_writable(path), ATM_E_IO);
		assert_non_null(strstr(atm_errmsg(), path));
	}
	assert_int_equal(n_entries(ro), 0);
}

/* test_files_clock -- atm_now_s never goes back and counts seconds */
static void test_files_clock(void **state)
{
	(void)state;
	double a = atm_now_s();
	usleep(20000);
	double b = atm_now_s();
	assert_true(b > a);
	assert_true(b - a >= 0.019);
}

/* test_files_fnv1a -- FNV-1a's prime over autotm's starting value (not the published offset
 * basis: graph digests in plan and results files depend on it, so it stays), pinned here so
 * that a digest never changes by accident; hashing in pieces is hashing whole */
static void test_files_fnv1a(void **state)
{
	(void)state;
	assert_true(atm_fnv1a(ATM_FNV1A_INIT, "", 0) == ATM_FNV1A_INIT);
	assert_true(atm_fnv1a(ATM_FNV1A_INIT, "a", 1) == 0x44bd8ad473cd9906ull);
	assert_true(atm_fnv1a(ATM_FNV1A_INIT, "foobar", 6) == 0x88fad7c0a8ff07f2ull);
	assert_true(atm_fnv1a(atm_fnv1a(ATM_FNV1A_INIT, "foo", 3), "bar", 3) ==
	            atm_fnv1a(ATM_FNV1A_INIT, "foobar", 6));
	assert_true(atm_fnv1a(ATM_FNV1A_INIT, "ab", 2) != atm_fnv1a(ATM_FNV1A_INIT, "ba", 2));
}

/* test_files_arena_alignment -- sizes round up, limits round down, to ATM_ARENA_ALIGN */
static void test_files_arena_alignment(void **state)
{
	(void)state;
	assert_int_equal(ATM_ARENA_ALIGN, 64);
	assert_int_equal(atm_arena_align_up(0), 0);
	assert_int_equal(atm_arena_align_up(1), 64);
	assert_int_equal(atm_arena_align_up(64), 64);
	assert_int_equal(atm_arena_align_up(65), 128);
	assert_int_equal(atm_arena_align_down(63), 0);
	assert_int_equal(atm_arena_align_down(127), 64);
	assert_int_equal(atm_arena_align_down((int64_t)1 << 40), (int64_t)1 << 40);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_files_check_writable),
		cmocka_unit_test(test_files_clock),
		cmocka_unit_test(test_files_fnv1a),
		cmocka_unit_test(test_files_arena_alignment),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
