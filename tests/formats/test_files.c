/* test_files.c -- the files beneath every format (writable paths, atomic writes, locks) and the small helpers every module shares: the clock, FNV-1a, the arena alignment */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "atm_core.h"
#include "atm_formats.h"

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

/* slurp -- path's text (the caller frees) */
static char *slurp(const char *path)
{
	char *text = NULL;
	size_t len = 0;
	assert_int_equal(atm_read_file(path, &text, &len), ATM_OK);
	return text;
}

/* subdir -- a fresh folder for one test under the scratch folder */
static void subdir(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", dir, name);
	assert_int_equal(mkdir(buf, 0755), 0);
}

/* test_files_write_keeps_links -- a symbolic link (and a chain of them) stays a link and its
 * target gets the text; a dangling link makes its target; the lock of a link is its target's */
static void test_files_write_keeps_links(void **state)
{
	char target[192], link1[192], link2[192], dangling[192], made[192];
	struct stat st;
	char d[128];
	(void)state;
	subdir("write_keeps_links", d, sizeof d);
	snprintf(target, sizeof target, "%s/cache.json", d);
	snprintf(link1, sizeof link1, "%s/link1.json", d);
	snprintf(link2, sizeof link2, "%s/link2.json", d);
	assert_int_equal(atm_write_file_atomic(target, "old", 3), ATM_OK);
	assert_int_equal(symlink("cache.json", link1), 0); /* relative to the link's folder */
	assert_int_equal(symlink(link1, link2), 0);
	assert_int_equal(atm_check_writable(link2), ATM_OK);
	assert_int_equal(atm_write_file_atomic(link2, "new", 3), ATM_OK);
	assert_int_equal(lstat(link2, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(lstat(link1, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	char *text = slurp(target);
	assert_string_equal(text, "new");
	free(text);
	/* a link to a file not there yet: the file is made where the link points */
	snprintf(dangling, sizeof dangling, "%s/dangling.json", d);
	snprintf(made, sizeof made, "%s/made.json", d);
	assert_int_equal(symlink(made, dangling), 0);
	assert_int_equal(atm_write_file_atomic(dangling, "x", 1), ATM_OK);
	assert_int_equal(lstat(dangling, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(lstat(made, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	int fd = -1;
	assert_int_equal(atm_file_lock(link2, &fd), ATM_OK);
	atm_file_unlock(fd);
	char lock[200];
	snprintf(lock, sizeof lock, "%s.lock", target);
	assert_int_equal(access(lock, F_OK), 0);
}

/* test_files_write_keeps_mode -- a rewritten file keeps its permissions (a read-only cache
 * stays read-only); a new one gets the umask's */
static void test_files_write_keeps_mode(void **state)
{
	char path[192], fresh[192];
	struct stat st;
	char d[128];
	(void)state;
	subdir("write_keeps_mode", d, sizeof d);
	snprintf(path, sizeof path, "%s/ro.json", d);
	assert_int_equal(atm_write_file_atomic(path, "a", 1), ATM_OK);
	assert_int_equal(chmod(path, 0444), 0);
	assert_int_equal(atm_write_file_atomic(path, "b", 1), ATM_OK);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0444);
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(atm_write_file_atomic(path, "c", 1), ATM_OK);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	mode_t mask = umask(022);
	snprintf(fresh, sizeof fresh, "%s/fresh.json", d);
	assert_int_equal(atm_write_file_atomic(fresh, "d", 1), ATM_OK);
	umask(mask);
	assert_int_equal(stat(fresh, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
}

/* test_files_write_through_pipe -- a named pipe is written through, never replaced: what is
 * written comes out of its other end */
static void test_files_write_through_pipe(void **state)
{
	char d[128], path[192], got[64] = "";
	struct stat st;
	(void)state;
	subdir("write_through_pipe", d, sizeof d);
	snprintf(path, sizeof path, "%s/fifo", d);
	assert_int_equal(mkfifo(path, 0600), 0);
	/* the reading end open first, so that the write does not wait for one */
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	assert_true(fd >= 0);
	assert_int_equal(atm_check_writable(path), ATM_OK);
	assert_int_equal(atm_write_file_atomic(path, "through", 7), ATM_OK);
	ssize_t n = read(fd, got, sizeof got - 1);
	close(fd);
	assert_int_equal(n, 7);
	assert_string_equal(got, "through");
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(n_entries(d), 1);
}

/* test_files_devices -- a character device is written through and stays a device (root makes
 * one with mknod: the null device's numbers; skipped elsewhere); reading a device is refused
 * at once, never read to the size limit */
static void test_files_devices(void **state)
{
	char path[192];
	struct stat st;
	char *text = NULL;
	size_t len = 0;
	char d[128];
	(void)state;
	subdir("devices", d, sizeof d);
	double t0 = atm_now_s();
	assert_int_equal(atm_read_file("/dev/zero", &text, &len), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "/dev/zero: it is a character device"));
	assert_null(text);
	assert_true(atm_now_s() - t0 < 1.0); /* not 2 GiB of zeros first */
	if (geteuid() != 0)
		skip();
	snprintf(path, sizeof path, "%s/null", d);
	assert_int_equal(mknod(path, S_IFCHR | 0666, makedev(1, 3)), 0);
	assert_int_equal(atm_check_writable(path), ATM_OK);
	assert_int_equal(atm_write_file_atomic(path, "gone", 4), ATM_OK);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(n_entries(d), 1);
	assert_int_equal(atm_read_file(path, &text, &len), ATM_E_INPUT);
	assert_int_equal(unlink(path), 0);
}

/* test_files_refused_outputs -- an empty path and a folder are usage errors before anything
 * is written; a loop of symbolic links is refused by name */
static void test_files_refused_outputs(void **state)
{
	char d[128];
	(void)state;
	subdir("refused_outputs", d, sizeof d);
	assert_int_equal(atm_check_writable(""), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "empty"));
	assert_int_equal(atm_write_file_atomic("", "x", 1), ATM_E_USAGE);
	assert_int_equal(atm_check_writable(d), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "is a folder"));
	assert_int_equal(atm_write_file_atomic(d, "x", 1), ATM_E_USAGE);
	assert_int_equal(n_entries(d), 0);
	/* a symbolic link loop */
	char a[192], b[192];
	snprintf(a, sizeof a, "%s/a", d);
	snprintf(b, sizeof b, "%s/b", d);
	assert_int_equal(symlink(b, a), 0);
	assert_int_equal(symlink(a, b), 0);
	assert_int_equal(atm_write_file_atomic(a, "x", 1), ATM_E_IO);
	assert_non_null(strstr(atm_errmsg(), "symbolic links"));
	assert_int_equal(unlink(a), 0);
	assert_int_equal(unlink(b), 0);
}

/* test_files_make_dirs -- a folder is made as mkdir -p makes it, with the mode asked for, and
 * one that cannot be made is an error naming it and where it stopped */
static void test_files_make_dirs(void **state)
{
	(void)state;
	char d[128], made[200], file[200], under[240], stop[240];
	struct stat st;
	subdir("make_dirs", d, sizeof d);
	snprintf(made, sizeof made, "%s/a/b/c", d);
	assert_int_equal(atm_make_dirs(made, 0700), ATM_OK);
	assert_int_equal(stat(made, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0077, 0);
	assert_int_equal(atm_make_dirs(made, 0700), ATM_OK); /* there already: fine */
	snprintf(file, sizeof file, "%s/f", d);
	assert_int_equal(atm_write_file_atomic(file, "x", 1), ATM_OK);
	snprintf(under, sizeof under, "%.200s/x/y", file);
	snprintf(stop, sizeof stop, "(making %.200s/x)", file);
	assert_int_equal(atm_make_dirs(under, 0777), ATM_E_IO);
	assert_non_null(strstr(atm_errmsg(), under));
	assert_non_null(strstr(atm_errmsg(), stop));
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

/* test_files_sort_median -- sorted in place; the middle one, or the mean of the two middle
 * ones */
static void test_files_sort_median(void **state)
{
	(void)state;
	double odd[] = {3, -1, 2}, even[] = {4, 1, 3, 2}, one[] = {7};
	assert_true(atm_sort_median(odd, 3) == 2);
	assert_true(odd[0] == -1 && odd[1] == 2 && odd[2] == 3);
	assert_true(atm_sort_median(even, 4) == 2.5);
	assert_true(even[0] == 1 && even[3] == 4);
	assert_true(atm_sort_median(one, 1) == 7);
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
		cmocka_unit_test(test_files_write_keeps_links),
		cmocka_unit_test(test_files_write_keeps_mode),
		cmocka_unit_test(test_files_write_through_pipe),
		cmocka_unit_test(test_files_devices),
		cmocka_unit_test(test_files_refused_outputs),
		cmocka_unit_test(test_files_make_dirs),
		cmocka_unit_test(test_files_clock),
		cmocka_unit_test(test_files_fnv1a),
		cmocka_unit_test(test_files_sort_median),
		cmocka_unit_test(test_files_arena_alignment),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
