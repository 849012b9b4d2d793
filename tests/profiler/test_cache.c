/* test_cache.c -- the profile cache: round trip, machine separation, corrupt and unwritable files, concurrent writers, look-ups; the machine file of calibrations */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "atm_core.h"
#include "atm_formats.h"
#include "atm_profiler.h"
#include "common/small_graph.h"

static char tmpdir[] = "/tmp/atm_cache_XXXXXX";

/* setup -- a scratch folder for cache files */
static int setup(void **state)
{
	(void)state;
	return mkdtemp(tmpdir) ? 0 : -1;
}

/* teardown -- remove the scratch folder */
static int teardown(void **state)
{
	(void)state;
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* path_of -- tmpdir/name */
static const char *path_of(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
	return buf;
}

/* machine -- the machine key the tests profile for */
static atm_profile_machine machine(void)
{
	atm_profile_machine m = {.cpu = "Test CPU 9000", .n_threads = 2, .backend = "cpu-test-1.0",
	                      .fast_tier = "dram:0", .slow_tier = "pmem-dir", .emulation = "optane"};
	return m;
}

/* value -- a distinct time for node k in config c, with more digits than are kept */
static double value(int32_t k, uint32_t c)
{
	return (double)(k + 1) * 1e-3 + (double)c * 1e-6 + 1.0 / 3.0 * 1e-7;
}

/* near -- x is v kept to 10 significant digits */
static bool near(double x, double v)
{
	return fabs(x - v) <= 1e-9 * v;
}

/* fill -- every configuration of every node of g into p */
static int64_t fill(atm_profile *p, const atm_graph *g)
{
	int64_t n = 0;
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++)
		for (int i = 0; i < atm_node_n_configs(g, k); i++) {
			uint32_t c = atm_node_config_at(g, k, i);
			atm_profile_entry e = {.min_s = value(k, c), .median_s = 2 * value(k, c), .count = 3,
			                    .scratch_bytes = k * 64};
			assert_int_equal(atm_profile_put(p, g, k, c, &e), ATM_OK);
			n++;
		}
	return n;
}

static void test_cache_round_trip(void **state)
{
	(void)state;
	struct small s;
	char path[512];
	atm_profile *p = NULL, *q = NULL;
	atm_profile_machine m = machine();
	small_build(&s);
	path_of("round.json", path, sizeof path);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	assert_int_equal(atm_profile_n_entries(p), 0);
	int64_t n = fill(p, s.g);
	atm_profile_moves mv = {.to_fast_gbps = 7.25, .to_slow_gbps = 3.5};
	assert_int_equal(atm_profile_set_moves(p, &mv), ATM_OK);
	assert_int_equal(atm_prof_cache_save(p), ATM_OK);
	/* what comes back is bit for bit what a get gave before the save */
	assert_int_equal(atm_prof_cache_open(&q, path, &m, false), ATM_OK);
	assert_int_equal(atm_profile_n_entries(q), n);
	for (int32_t k = 0; k < atm_graph_n_nodes(s.g); k++)
		for (int i = 0; i < atm_node_n_configs(s.g, k); i++) {
			uint32_t c = atm_node_config_at(s.g, k, i);
			atm_profile_entry a, b;
			assert_int_equal(atm_profile_get(p, s.g, k, c, &a), ATM_OK);
			assert_int_equal(atm_profile_get(q, s.g, k, c, &b), ATM_OK);
			assert_true(a.min_s == b.min_s && a.median_s == b.median_s);
			assert_true(near(a.min_s, value(k, c)));
			assert_int_equal(b.count, 3);
			assert_int_equal(b.scratch_bytes, k * 64);
			assert_false(b.estimated);
		}
	atm_profile_moves back;
	assert_int_equal(atm_profile_get_moves(q, &back), ATM_OK);
	assert_true(back.to_fast_gbps == 7.25 && back.to_slow_gbps == 3.5);
	atm_profile_destroy(q);
	atm_profile_destroy(p);
	/* the file is the documented JSON */
	json_error_t jerr;
	json_t *doc = json_load_file(path, 0, &jerr);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "format")), "autotm-profile");
	json_t *sec = json_array_get(json_object_get(doc, "machines"), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(sec, "machine"), "cpu")),
	                    "Test CPU 9000");
	json_t *fc = json_object_get(json_object_get(sec, "kernels"),
	                             "ip_fwd/f32[1,4],f32[3,4],f32[3]->f32[1,3]");
	assert_non_null(json_object_get(fc, "SFF/S"));
	json_decref(doc);
	atm_graph_destroy(s.g);
}

/* test_cache_algorithms -- a kernel's other algorithms keep their own entries, saved as
 * "FF/F#a", and a malformed algorithm key is refused */
static void test_cache_algorithms(void **state)
{
	(void)state;
	struct small s;
	char path[512];
	atm_profile *p = NULL, *q = NULL;
	atm_profile_machine m = machine();
	small_build(&s);
	path_of("algos.json", path, sizeof path);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	atm_profile_entry d = {.min_s = 2e-3, .median_s = 2e-3, .count = 1, .scratch_bytes = 0};
	atm_profile_entry f = {.min_s = 1e-3, .median_s = 1e-3, .count = 1, .scratch_bytes = 4096};
	assert_int_equal(atm_profile_put(p, s.g, 0, 0, &d), ATM_OK);
	assert_int_equal(atm_profile_put_algo(p, s.g, 0, 0, 2, &f), ATM_OK);
	assert_int_equal(atm_profile_put_algo(p, s.g, 0, 0, ATM_MAX_ALGOS, &f), ATM_E_USAGE);
	assert_int_equal(atm_prof_cache_save(p), ATM_OK);
	assert_int_equal(atm_prof_cache_open(&q, path, &m, false), ATM_OK);
	atm_profile_entry e;
	assert_int_equal(atm_profile_get_algo(q, s.g, 0, 0, 2, &e), ATM_OK);
	assert_true(e.min_s == 1e-3 && e.scratch_bytes == 4096);
	assert_int_equal(atm_profile_get(q, s.g, 0, 0, &e), ATM_OK);
	assert_true(e.min_s == 2e-3);
	assert_int_equal(atm_profile_get_algo(q, s.g, 0, 0, 1, &e), ATM_E_NOTFOUND);
	assert_non_null(strstr(atm_errmsg(), "#1"));
	atm_profile_destroy(q);
	atm_profile_destroy(p);
	/* a key with algorithm 0 written out, or past the largest, is not one autotm writes */
	char *text = NULL;
	size_t len;
	assert_int_equal(atm_read_file(path, &text, &len), ATM_OK);
	char *at = strstr(text, "#2");
	assert_non_null(at);
	at[1] = '0';
	assert_int_equal(atm_write_file_atomic(path, text, len), ATM_OK);
	assert_int_equal(atm_prof_cache_open(&q, path, &m, false), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "not a configuration name"));
	assert_null(q);
	free(text);
	atm_graph_destroy(s.g);
}

static void test_cache_identical_kernels_share_entries(void **state)
{
	(void)state;
	struct small s, t;
	atm_profile *p = NULL;
	atm_profile_machine m = machine();
	small_build(&s);
	small_build(&t);
	assert_int_equal(atm_profile_new(&p, &m, NULL), ATM_OK);
	atm_profile_entry e = {.min_s = 1, .median_s = 1, .count = 1};
	assert_int_equal(atm_profile_put(p, s.g, 6, 0, &e), ATM_OK);
	/* the same kernel in another graph is the same entry */
	assert_true(atm_profile_has(p, t.g, 6, 0));
	/* sgd.b updates another shape than sgd.w: another kernel */
	assert_false(atm_profile_has(p, s.g, 7, 0));
	assert_int_equal(atm_prof_cache_save(p), ATM_OK); /* in memory: nothing to write */
	atm_profile_destroy(p);
	atm_graph_destroy(s.g);
	atm_graph_destroy(t.g);
}

static void test_cache_missing_kernel_named(void **state)
{
	(void)state;
	struct small s;
	char path[512];
	atm_profile *p = NULL;
	atm_profile_machine m = machine();
	small_build(&s);
	assert_int_equal(atm_prof_cache_open(&p, path_of("missing.json", path, sizeof path), &m, false),
	                 ATM_OK);
	atm_profile_entry e = {.min_s = 1};
	assert_int_equal(atm_profile_get(p, s.g, 5, 0x3, &e), ATM_E_NOTFOUND);
	assert_true(e.min_s == 0 && e.count == 0);
	const char *msg = atm_errmsg();
	assert_non_null(strstr(msg, "kernel 'fc.bwd_w' (node 5 of 'small', ip_bwd_weights/"));
	assert_non_null(strstr(msg, "in configuration SS/FF"));
	assert_non_null(strstr(msg, "Test CPU 9000"));
	assert_non_null(strstr(msg, "emulating optane"));
	assert_non_null(strstr(msg, "autotm profile"));
	atm_profile_moves mv;
	assert_int_equal(atm_profile_get_moves(p, &mv), ATM_E_NOTFOUND);
	assert_non_null(strstr(atm_errmsg(), "move bandwidths"));
	/* a configuration the node does not have is a caller's mistake */
	assert_int_equal(atm_profile_get(p, s.g, 6, 0x10, &e), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "is not one of node 'sgd.w'"));
	atm_profile_destroy(p);
	atm_graph_destroy(s.g);
}

static void test_cache_bad_entries_refused(void **state)
{
	(void)state;
	struct small s;
	atm_profile *p = NULL;
	atm_profile_machine m = machine();
	small_build(&s);
	assert_int_equal(atm_profile_new(&p, &m, NULL), ATM_OK);
	atm_profile_entry neg = {.min_s = -1, .median_s = 1, .count = 1};
	assert_int_equal(atm_profile_put(p, s.g, 0, 0, &neg), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "min_s <= median_s"));
	atm_profile_entry est = {.min_s = 1, .median_s = 1, .count = 1, .estimated = true};
	assert_int_equal(atm_profile_put(p, s.g, 0, 0, &est), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "an estimated entry in a measured profile"));
	atm_profile_moves mv = {.to_fast_gbps = 0, .to_slow_gbps = 1};
	assert_int_equal(atm_profile_set_moves(p, &mv), ATM_E_USAGE);
	assert_int_equal(atm_profile_n_entries(p), 0);
	atm_profile_destroy(p);
	atm_graph_destroy(s.g);
}

static void test_cache_machines_kept_apart(void **state)
{
	(void)state;
	struct small s;
	char path[512];
	atm_profile *p = NULL;
	atm_profile_machine m = machine();
	small_build(&s);
	path_of("machines.json", path, sizeof path);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	int64_t n = fill(p, s.g);
	assert_int_equal(atm_prof_cache_save(p), ATM_OK);
	atm_profile_destroy(p);
	atm_profile_machine other[6];
	for (int i = 0; i < 6; i++)
		other[i] = machine();
	snprintf(other[0].emulation, sizeof other[0].emulation, "cxl");
	other[1].n_threads = 4;
	snprintf(other[2].slow_tier, sizeof other[2].slow_tier, "kmem-dax:2");
	snprintf(other[3].cpu, sizeof other[3].cpu, "Another CPU");
	snprintf(other[4].backend, sizeof other[4].backend, "cpu-onednn-3.0.0");
	other[5].estimated = true;
	for (int i = 0; i < 6; i++) {
		assert_int_equal(atm_prof_cache_open(&p, path, &other[i], false), ATM_OK);
		assert_int_equal(atm_profile_n_entries(p), 0);
		assert_false(atm_profile_has(p, s.g, 0, 0));
		if (i == 5) {
			/* an estimated profile lives beside the measured one */
			atm_profile_entry e = {.min_s = 5, .median_s = 5, .count = 1, .estimated = true};
			assert_int_equal(atm_profile_put(p, s.g, 0, 0, &e), ATM_OK);
			assert_int_equal(atm_prof_cache_save(p), ATM_OK);
		}
		atm_profile_destroy(p);
	}
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	assert_int_equal(atm_profile_n_entries(p), n);
	atm_profile_entry e;
	assert_int_equal(atm_profile_get(p, s.g, 0, 0, &e), ATM_OK);
	assert_true(near(e.min_s, value(0, 0)) && !e.estimated);
	atm_profile_destroy(p);
	assert_int_equal(atm_prof_cache_open(&p, path, &other[5], false), ATM_OK);
	assert_int_equal(atm_profile_get(p, s.g, 0, 0, &e), ATM_OK);
	assert_true(e.min_s == 5 && e.estimated);
	atm_profile_destroy(p);
	atm_graph_destroy(s.g);
}

/* corrupt -- text in a cache file is refused at open, naming the file and the
 * place (frag), and the file is left byte for byte */
static void corrupt(const char *text, const char *frag)
{
	char path[512], *back = NULL;
	size_t len;
	atm_profile *p = (atm_profile *)&len;
	atm_profile_machine m = machine();
	path_of("corrupt.json", path, sizeof path);
	assert_int_equal(atm_write_file_atomic(path, text, strlen(text)), ATM_OK);
	atm_status rc = atm_prof_cache_open(&p, path, &m, false);
	if (rc != ATM_E_INPUT || !strstr(atm_errmsg(), frag) || !strstr(atm_errmsg(), path))
		fail_msg("'%s': status %d, message '%s' (want '%s')", text, rc, atm_errmsg(), frag);
	assert_null(p);
	assert_non_null(strstr(atm_errmsg(), "left as it is"));
	assert_int_equal(atm_read_file(path, &back, &len), ATM_OK);
	assert_string_equal(back, text);
	free(back);
}

#define HEAD "{\"format\": \"autotm-profile\", \"version\": 1, \"machines\": [{\"machine\": " \
             "{\"cpu\": \"Test CPU 9000\", \"n_threads\": 2, \"backend\": \"cpu-test-1.0\", "   \
             "\"fast_tier\": \"dram:0\", \"slow_tier\": \"pmem-dir\", \"emulation\": "          \
             "\"optane\", \"estimated\": false}, \"kernels\": {\"relu_fwd/f32[1,3]->f32[1,3]\": {"
#define TAIL "}}}]}"
/* ENTRY -- an entry whose fields are a, b, c, d */
#define ENTRY(a, b, c, d) \
	"\"F/F\": {\"min_s\": " a ", \"median_s\": " b ", \"count\": " c ", \"scratch_bytes\": " d


static void test_cache_corrupt_refused_untouched(void **state)
{
	(void)state;
	corrupt("{\"format\": \"autotm-profile\", \"version\": 1, \"machines\": [", ":1:");
	corrupt("", "empty");
	corrupt("[1, 2]", "is a JSON object");
	corrupt("{\"format\": \"autotm-plan\", \"version\": 1, \"machines\": []}", "format");
	corrupt("{\"format\": \"autotm-profile\", \"version\": 7, \"machines\": []}",
	        "version: 7 is not supported");
	corrupt(HEAD ENTRY("\"fast\"", "1", "1", "0") "}" TAIL,
	        "machines[0].kernels[\"relu_fwd/f32[1,3]->f32[1,3]\"][\"F/F\"].min_s: must be a number, "
	        "not a string");
	corrupt(HEAD ENTRY("-0.5", "1", "1", "0") "}" TAIL,
	        "[\"F/F\"].min_s: must be at least 0, not -0.5");
	corrupt(HEAD ENTRY("2", "1", "1", "0") "}" TAIL,
	        "median_s: 1 is below min_s 2");
	corrupt(HEAD ENTRY("1", "1", "0", "0") "}" TAIL,
	        "count: must be from 1");
	corrupt(HEAD ENTRY("1", "1", "1.5", "0") "}" TAIL,
	        "count: must be an integer, not a fraction");
	corrupt(HEAD "\"F/X\": {\"min_s\": 1, \"median_s\": 1, \"count\": 1, \"scratch_bytes\": 0}" TAIL,
	        "[\"F/X\"]: not a configuration name");
	corrupt(HEAD ENTRY("1", "1", "1", "0") ", \"colour\": 1}" TAIL, "unknown field 'colour'");
	corrupt(HEAD "\"F/F\": 3" TAIL, "must be an object");
	/* a file cut short anywhere is refused */
	const char *whole = HEAD ENTRY("1", "1", "1", "0") "}" TAIL;
	char cut[1024];
	for (size_t n = 1; n < strlen(whole); n += 7) {
		memcpy(cut, whole, n);
		cut[n] = '\0';
		corrupt(cut, "corrupt.json");
	}
}

static void test_cache_rebuild_replaces_corrupt(void **state)
{
	(void)state;
	struct small s;
	char path[512];
	atm_profile *p = NULL;
	atm_profile_machine m = machine();
	small_build(&s);
	path_of("rebuild.json", path, sizeof path);
	const char *junk = "{\"format\": \"autotm-profile\", \"vers";
	assert_int_equal(atm_write_file_atomic(path, junk, strlen(junk)), ATM_OK);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, true), ATM_OK);
	int64_t n = fill(p, s.g);
	assert_int_equal(atm_prof_cache_save(p), ATM_OK);
	atm_profile_destroy(p);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	assert_int_equal(atm_profile_n_entries(p), n);
	atm_profile_destroy(p);
	/* on a sound file, rebuild drops this machine's entries and keeps the others' */
	atm_profile_machine other = machine();
	other.n_threads = 1;
	assert_int_equal(atm_prof_cache_open(&p, path, &other, false), ATM_OK);
	fill(p, s.g);
	assert_int_equal(atm_prof_cache_save(p), ATM_OK);
	atm_profile_destroy(p);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, true), ATM_OK);
	assert_int_equal(atm_profile_n_entries(p), 0);
	atm_profile_entry e = {.min_s = 9, .median_s = 9, .count = 1};
	assert_int_equal(atm_profile_put(p, s.g, 1, 0, &e), ATM_OK);
	assert_int_equal(atm_prof_cache_save(p), ATM_OK);
	atm_profile_destroy(p);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	assert_int_equal(atm_profile_n_entries(p), 1);
	atm_profile_destroy(p);
	assert_int_equal(atm_prof_cache_open(&p, path, &other, false), ATM_OK);
	assert_int_equal(atm_profile_n_entries(p), n);
	atm_profile_destroy(p);
	atm_graph_destroy(s.g);
}

static void test_cache_corrupted_later_not_overwritten(void **state)
{
	(void)state;
	struct small s;
	char path[512], *back = NULL;
	size_t len;
	atm_profile *p = NULL;
	atm_profile_machine m = machine();
	small_build(&s);
	path_of("later.json", path, sizeof path);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	fill(p, s.g);
	const char *junk = "not json at all";
	assert_int_equal(atm_write_file_atomic(path, junk, strlen(junk)), ATM_OK);
	assert_int_equal(atm_prof_cache_save(p), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "became corrupt"));
	assert_non_null(strstr(atm_errmsg(), path));
	assert_int_equal(atm_read_file(path, &back, &len), ATM_OK);
	assert_string_equal(back, junk);
	free(back);
	atm_profile_destroy(p);
	atm_graph_destroy(s.g);
}

/* test_cache_unwritable_path_refused_before_measuring -- a cache file no save could write is
 * refused by atm_prof_run before it measures anything, naming the path; a path that cannot even
 * be read (under a file, a folder) is refused at open */
static void test_cache_unwritable_path_refused_before_measuring(void **state)
{
	(void)state;
	char path[512];
	struct small s;
	atm_prof *pr = NULL;
	atm_prof_report r;
	atm_profile *p = (atm_profile *)path;
	atm_profile_machine m;
	small_build(&s);
	assert_int_equal(atm_prof_new(&pr, s.g, &(atm_prof_opts){.seed = 1, .reps = 1}), ATM_OK);
	atm_prof_get_machine(pr, &m);
	assert_int_equal(atm_prof_cache_open(&p, "/nonexistent/autotm/profiles.json", &m, false),
	                 ATM_OK);
	assert_int_equal(atm_prof_run(pr, p, &r), ATM_E_IO);
	assert_non_null(strstr(atm_errmsg(), "/nonexistent/autotm/profiles.json"));
	assert_int_equal(r.n_configs_measured, 0);
	assert_int_equal(atm_profile_n_entries(p), 0);
	atm_profile_destroy(p);
	atm_prof_destroy(pr);
	atm_graph_destroy(s.g);
	/* a folder that is a file */
	path_of("plain", path, sizeof path);
	assert_int_equal(atm_write_file_atomic(path, "x", 1), ATM_OK);
	path_of("plain/profiles.json", path, sizeof path);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_E_IO);
	assert_null(p);
	assert_non_null(strstr(atm_errmsg(), "Not a directory"));
	/* a cache that is a folder */
	assert_int_equal(atm_prof_cache_open(&p, tmpdir, &m, false), ATM_E_IO);
	assert_non_null(strstr(atm_errmsg(), "directory"));
}

/* use_read_only -- a child process that cannot write folder ro (root gives up its rights for
 * nobody's first): opens the complete cache in it and profiles the small graph, which
 * measures nothing; 0 when that worked and nothing was written */
static int use_read_only(const char *ro, const char *pmem, const char *cache)
{
	struct small s;
	atm_prof *pr = NULL;
	atm_profile *p = NULL;
	atm_prof_report r;
	atm_profile_machine m;
	if (geteuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
		return 2;
	if (access(ro, W_OK) == 0)
		return 3; /* the folder is writable after all: the test would prove nothing */
	small_build(&s);
	atm_prof_opts o = {.seed = 1, .reps = 1, .tiers = {.pmem_dir = pmem}};
	int code = 0;
	if (atm_prof_new(&pr, s.g, &o) < 0 || (atm_prof_get_machine(pr, &m), 0) ||
	    atm_prof_cache_open(&p, cache, &m, false) < 0 || atm_prof_run(pr, p, &r) < 0)
		code = 1;
	else if (r.n_configs_measured != 0)
		code = 4;
	if (code == 1)
		fprintf(stderr, "%s\n", atm_errmsg());
	atm_profile_destroy(p);
	atm_prof_destroy(pr);
	atm_graph_destroy(s.g);
	return code;
}

/* test_cache_complete_on_read_only_storage -- a cache that already holds everything a graph
 * needs is used from a folder nobody may write to: nothing is measured, written or probed */
static void test_cache_complete_on_read_only_storage(void **state)
{
	(void)state;
	char ro[512], pmem[512], cache[512];
	struct small s;
	atm_prof *pr = NULL;
	atm_profile *p = NULL;
	atm_profile_machine m;
	path_of("ro", ro, sizeof ro);
	path_of("pmem", pmem, sizeof pmem);
	path_of("ro/profiles.json", cache, sizeof cache);
	assert_int_equal(mkdir(ro, 0755), 0);
	assert_int_equal(mkdir(pmem, 0777), 0);
	assert_int_equal(chmod(pmem, 0777), 0);
	assert_int_equal(chmod(tmpdir, 0755), 0);
	small_build(&s);
	atm_prof_opts o = {.seed = 1, .reps = 1, .tiers = {.pmem_dir = pmem}};
	assert_int_equal(atm_prof_new(&pr, s.g, &o), ATM_OK);
	atm_prof_get_machine(pr, &m);
	assert_int_equal(atm_prof_cache_open(&p, cache, &m, false), ATM_OK);
	fill(p, s.g);
	assert_int_equal(atm_profile_set_moves(p,
		&(atm_profile_moves){.to_fast_gbps = 4, .to_slow_gbps = 2, .estimated = false}), ATM_OK);
	assert_int_equal(atm_prof_cache_save(p), ATM_OK);
	atm_profile_destroy(p);
	atm_prof_destroy(pr);
	atm_graph_destroy(s.g);
	assert_int_equal(chmod(cache, 0444), 0);
	assert_int_equal(chmod(ro, 0555), 0);
	pid_t pid = fork();
	if (pid == 0)
		_exit(use_read_only(ro, pmem, cache));
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(chmod(ro, 0755), 0);
	assert_int_equal(chmod(tmpdir, 0700), 0);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 3)
		skip(); /* a user no folder mode stops */
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* writer -- a child process: put the configurations of the small graph whose
 * index has parity `half`, saving after every one; 0 when all went well */
static int writer(const char *path, int half)
{
	struct small s;
	atm_profile *p = NULL;
	atm_profile_machine m = machine();
	int bad = 0;
	small_build(&s);
	if (atm_prof_cache_open(&p, path, &m, false) < 0)
		return 1;
	int i = 0;
	for (int32_t k = 0; k < atm_graph_n_nodes(s.g); k++)
		for (int j = 0; j < atm_node_n_configs(s.g, k); j++, i++) {
			if (i % 2 != half)
				continue;
			uint32_t c = atm_node_config_at(s.g, k, j);
			atm_profile_entry e = {.min_s = value(k, c), .median_s = value(k, c), .count = 1};
			bad |= atm_profile_put(p, s.g, k, c, &e) < 0;
			bad |= atm_prof_cache_save(p) < 0;
		}
	atm_profile_destroy(p);
	atm_graph_destroy(s.g);
	return bad;
}

static void test_cache_concurrent_writers_lose_nothing(void **state)
{
	(void)state;
	char path[512];
	pid_t pid[2];
	path_of("shared.json", path, sizeof path);
	for (int w = 0; w < 2; w++) {
		pid[w] = fork();
		assert_true(pid[w] >= 0);
		if (pid[w] == 0)
			_exit(writer(path, w));
	}
	for (int w = 0; w < 2; w++) {
		int status = 0;
		assert_int_equal(waitpid(pid[w], &status, 0), pid[w]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	struct small s;
	atm_profile *p = NULL;
	atm_profile_machine m = machine();
	small_build(&s);
	assert_int_equal(atm_prof_cache_open(&p, path, &m, false), ATM_OK);
	int64_t n = 0;
	for (int32_t k = 0; k < atm_graph_n_nodes(s.g); k++)
		for (int j = 0; j < atm_node_n_configs(s.g, k); j++, n++) {
			atm_profile_entry e;
			uint32_t c = atm_node_config_at(s.g, k, j);
			if (atm_profile_get(p, s.g, k, c, &e) < 0)
				fail_msg("lost: %s", atm_errmsg());
			assert_true(near(e.min_s, value(k, c)));
		}
	assert_int_equal(atm_profile_n_entries(p), n);
	atm_profile_destroy(p);
	atm_graph_destroy(s.g);
}

static void test_cache_save_takes_in_others_entries(void **state)
{
	(void)state;
	struct small s;
	char path[512];
	atm_profile *a = NULL, *b = NULL;
	atm_profile_machine m = machine();
	small_build(&s);
	path_of("others.json", path, sizeof path);
	assert_int_equal(atm_prof_cache_open(&a, path, &m, false), ATM_OK);
	assert_int_equal(atm_prof_cache_open(&b, path, &m, false), ATM_OK);
	atm_profile_entry e = {.min_s = 1, .median_s = 1, .count = 1};
	assert_int_equal(atm_profile_put(a, s.g, 0, 0, &e), ATM_OK);
	assert_int_equal(atm_profile_put(b, s.g, 1, 0, &e), ATM_OK);
	assert_int_equal(atm_prof_cache_save(a), ATM_OK);
	assert_int_equal(atm_prof_cache_save(b), ATM_OK);
	assert_true(atm_profile_has(b, s.g, 0, 0));
	assert_int_equal(atm_profile_n_entries(b), 2);
	atm_profile_destroy(a);
	atm_profile_destroy(b);
	atm_graph_destroy(s.g);
}

/* ---------------------------------------------------------------- the machine file */

/* calibration_of -- a roofline whose every rate is set from seed (as a calibration would) */
static atm_prof_roofline calibration_of(double seed)
{
	atm_prof_roofline rf;
	atm_prof_roofline_default(&rf, 2);
	for (int op = 0; op < ATM_N_OPS; op++) {
		rf.gflops[op] = seed + op;
		rf.gbps[op] = 2 * seed + op;
		rf.overhead_s[op] = 1e-6 * (seed + op);
		rf.gflops_1x1[op] = atm_op_describe((atm_op)op)->pointwise_rate ? 3 * seed + op : 0;
	}
	rf.fast_gbps = 4 * seed;
	rf.cache_bytes = (int64_t)seed << 20;
	rf.calibrated = true;
	return rf;
}

/* same_calibration -- a and b agree on every calibrated figure */
static void same_calibration(const atm_prof_roofline *a, const atm_prof_roofline *b)
{
	for (int op = 0; op < ATM_N_OPS; op++) {
		assert_true(a->gflops[op] == b->gflops[op] && a->gbps[op] == b->gbps[op]);
		assert_true(a->overhead_s[op] == b->overhead_s[op]);
		assert_true(a->gflops_1x1[op] == b->gflops_1x1[op]);
	}
	assert_true(a->fast_gbps == b->fast_gbps && a->cache_bytes == b->cache_bytes);
	assert_true(a->calibrated && b->calibrated);
}

/* test_cache_machine_file_round_trip -- a calibration kept for a machine comes back as it was,
 * in folders made for it; another machine's is kept beside it, and neither is the other's */
static void test_cache_machine_file_round_trip(void **state)
{
	(void)state;
	char path[600];
	snprintf(path, sizeof path, "%s/made/for/it/machine.json", tmpdir);
	atm_profile_machine a = {.cpu = "cpu a", .n_threads = 2, .backend = "cpu", .fast_tier = "dram:0"};
	atm_profile_machine b = a;
	b.n_threads = 4;
	atm_prof_roofline ka = calibration_of(10), kb = calibration_of(20), got;
	atm_prof_roofline_default(&got, 2);
	assert_int_equal(atm_prof_calibration_load(path, &a, &got), ATM_E_NOTFOUND);
	assert_int_equal(atm_prof_calibration_save(path, &a, &ka), ATM_OK);
	assert_int_equal(atm_prof_calibration_load(path, &b, &got), ATM_E_NOTFOUND);
	assert_non_null(strstr(atm_errmsg(), "holds no calibration of this machine"));
	assert_int_equal(atm_prof_calibration_save(path, &b, &kb), ATM_OK);
	assert_int_equal(atm_prof_calibration_load(path, &a, &got), ATM_OK);
	same_calibration(&got, &ka);
	assert_int_equal(atm_prof_calibration_load(path, &b, &got), ATM_OK);
	same_calibration(&got, &kb);
	/* another fast tier is another machine */
	b.n_threads = 2;
	snprintf(b.fast_tier, sizeof b.fast_tier, "numa:1");
	assert_int_equal(atm_prof_calibration_load(path, &b, &got), ATM_E_NOTFOUND);
}

/* test_cache_machine_file_unusable -- a corrupt machine file, or an entry missing an op, is
 * refused naming the file and what is wrong, the roofline left as it was; saving replaces it */
static void test_cache_machine_file_unusable(void **state)
{
	(void)state;
	char path[600];
	snprintf(path, sizeof path, "%s/bad-machine.json", tmpdir);
	atm_profile_machine m = {.cpu = "cpu", .n_threads = 2, .backend = "cpu", .fast_tier = "dram:0"};
	atm_prof_roofline k = calibration_of(5), got, before;
	atm_prof_roofline_default(&got, 2);
	before = got;
	static const struct {
		const char *text, *says;
	} bad[] = {
		{"{\"format\": \"autotm-machine\", \"version\": 1, \"machines\"", "not JSON"},
		{"{\"format\": \"autotm-profile\", \"version\": 1, \"machines\": {}}",
		 "not an autotm machine file"},
		{"{\"format\": \"autotm-machine\", \"version\": 7, \"machines\": {}}",
		 "this autotm keeps version 1"},
		{"{\"format\": \"autotm-machine\", \"version\": 1, \"machines\": "
		 "{\"cpu|2|cpu|dram:0\": {\"fast_gbps\": 10, \"cache_bytes\": 1024, \"ops\": {}}}}",
		 "op 'conv_fwd': missing"},
		{"{\"format\": \"autotm-machine\", \"version\": 1, \"machines\": "
		 "{\"cpu|2|cpu|dram:0\": {\"fast_gbps\": -1, \"cache_bytes\": 1024, \"ops\": {}}}}",
		 "'fast_gbps' must be a number above 0"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(atm_write_file_atomic(path, bad[i].text, strlen(bad[i].text)), ATM_OK);
		assert_int_equal(atm_prof_calibration_load(path, &m, &got), ATM_E_INPUT);
		if (strncmp(atm_errmsg(), path, strlen(path)) || !strstr(atm_errmsg(), bad[i].says))
			fail_msg("case %zu: '%s' (want the path and '%s')", i, atm_errmsg(), bad[i].says);
		assert_memory_equal(&got, &before, sizeof got);
	}
	/* what is kept there now replaces it */
	assert_int_equal(atm_prof_calibration_save(path, &m, &k), ATM_OK);
	assert_int_equal(atm_prof_calibration_load(path, &m, &got), ATM_OK);
	same_calibration(&got, &k);
}

/* test_cache_machine_file_where -- AUTOTM_MACHINE_FILE chooses the file ("none": nowhere),
 * else XDG_CACHE_HOME, else the home folder's .cache */
static void test_cache_machine_file_where(void **state)
{
	(void)state;
	char path[600], *keep = getenv("AUTOTM_MACHINE_FILE") ? strdup(getenv("AUTOTM_MACHINE_FILE")) : NULL;
	setenv("AUTOTM_MACHINE_FILE", "/some/where.json", 1);
	assert_int_equal(atm_machine_file_path(path, sizeof path), ATM_OK);
	assert_string_equal(path, "/some/where.json");
	setenv("AUTOTM_MACHINE_FILE", "none", 1);
	assert_int_equal(atm_machine_file_path(path, sizeof path), ATM_OK);
	assert_string_equal(path, "");
	unsetenv("AUTOTM_MACHINE_FILE");
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	assert_int_equal(atm_machine_file_path(path, sizeof path), ATM_OK);
	assert_string_equal(path, "/xdg/autotm/machine.json");
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", "/home/someone", 1);
	assert_int_equal(atm_machine_file_path(path, sizeof path), ATM_OK);
	assert_string_equal(path, "/home/someone/.cache/autotm/machine.json");
	if (keep) {
		setenv("AUTOTM_MACHINE_FILE", keep, 1);
		free(keep);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cache_round_trip),
		cmocka_unit_test(test_cache_algorithms),
		cmocka_unit_test(test_cache_identical_kernels_share_entries),
		cmocka_unit_test(test_cache_missing_kernel_named),
		cmocka_unit_test(test_cache_bad_entries_refused),
		cmocka_unit_test(test_cache_machines_kept_apart),
		cmocka_unit_test(test_cache_corrupt_refused_untouched),
		cmocka_unit_test(test_cache_rebuild_replaces_corrupt),
		cmocka_unit_test(test_cache_corrupted_later_not_overwritten),
		cmocka_unit_test(test_cache_unwritable_path_refused_before_measuring),
		cmocka_unit_test(test_cache_complete_on_read_only_storage),
		cmocka_unit_test(test_cache_concurrent_writers_lose_nothing),
		cmocka_unit_test(test_cache_save_takes_in_others_entries),
		cmocka_unit_test(test_cache_machine_file_round_trip),
		cmocka_unit_test(test_cache_machine_file_unusable),
		cmocka_unit_test(test_cache_machine_file_where),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
