/* test_profile.c -- a profile in memory and its cache file's text: unsaved entries, reading a machine's section, merging into a file of many machines, allocation failures */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "atm_core.h"
#include "atm_formats.h"
/* every allocation of the formats and core (the test links with --wrap=malloc and the others) */
#define ALLOC_FAIL_WRAP
#include "common/alloc_fail.h"
#include "common/small_graph.h"


/* machine -- a machine key; threads tell two apart */
static atm_profile_machine machine(int n_threads)
{
	atm_profile_machine m = {.cpu = "Test CPU", .n_threads = n_threads, .backend = "cpu-test",
	                         .fast_tier = "dram:0", .slow_tier = "pmem-dir"};
	return m;
}

/* fill -- every configuration of every node of g into p, at times scaled by scale */
static int64_t fill(atm_profile *p, const atm_graph *g, double scale)
{
	int64_t n = 0;
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++)
		for (int i = 0; i < atm_node_n_configs(g, k); i++) {
			double t = scale * (k + 1) * (i + 1) * 1e-4;
			atm_profile_entry e = {.min_s = t, .median_s = t, .count = 1};
			assert_int_equal(atm_profile_put(p, g, k, atm_node_config_at(g, k, i), &e), ATM_OK);
			n++;
		}
	atm_profile_moves mv = {.to_fast_gbps = 10 * scale, .to_slow_gbps = 5 * scale};
	assert_int_equal(atm_profile_set_moves(p, &mv), ATM_OK);
	return n;
}

/* test_profile_new_checks_the_machine -- an empty or unterminated field is refused by name */
/* fill_cal -- g's calibration step, 0.5 s on the last day of January 2025 */
static void fill_cal(atm_profile *p, const atm_graph *g)
{
	atm_profile_calibration cal = {.step_s = 0.5, .measured_at = "2025-01-31T12:00:00Z"};
	assert_int_equal(atm_profile_put_calibration(p, g, &cal), ATM_OK);
}

/* test_profile_calibration -- a graph's calibration step is kept by its digest, saved and
 * read back, merged beside another process's, dropped by a rebuild; bad ones are refused at
 * the call and in a file; a cache without any (an earlier autotm's) reads as before */
static void test_profile_calibration(void **state)
{
	struct small *sm = *state;
	atm_profile_machine m2 = machine(2);
	atm_profile *a = NULL, *b = NULL, *est = NULL;
	atm_profile_calibration cal;
	char *t1 = NULL, *t2 = NULL, *t3 = NULL;
	size_t l1 = 0, l2 = 0, l3 = 0;
	assert_int_equal(atm_profile_new(&a, &m2, "c.json"), ATM_OK);
	int64_t n = fill(a, sm->g, 1);
	/* a cache without calibration steps reads, and holds none */
	assert_int_equal(atm_profile_merge_cache(a, NULL, 0, &t1, &l1), ATM_OK);
	assert_null(strstr(t1, "all_fast_steps"));
	assert_int_equal(atm_profile_new(&b, &m2, "c.json"), ATM_OK);
	assert_int_equal(atm_profile_read_cache(b, t1, l1, false), ATM_OK);
	assert_int_equal(atm_profile_n_entries(b), n);
	assert_int_equal(atm_profile_get_calibration(b, sm->g, &cal), ATM_E_NOTFOUND);
	assert_non_null(strstr(atm_errmsg(), "no calibration step of 'small'"));
	/* refused at the call */
	cal = (atm_profile_calibration){.step_s = 0, .measured_at = "2025-01-31T12:00:00Z"};
	assert_int_equal(atm_profile_put_calibration(a, sm->g, &cal), ATM_E_USAGE);
	cal = (atm_profile_calibration){.step_s = NAN, .measured_at = "2025-01-31T12:00:00Z"};
	assert_int_equal(atm_profile_put_calibration(a, sm->g, &cal), ATM_E_USAGE);
	cal = (atm_profile_calibration){.step_s = 1, .measured_at = "2025-01-31 12:00:00"};
	assert_int_equal(atm_profile_put_calibration(a, sm->g, &cal), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "not a UTC time"));
	atm_profile_machine me = m2;
	me.estimated = true;
	assert_int_equal(atm_profile_new(&est, &me, NULL), ATM_OK);
	cal = (atm_profile_calibration){.step_s = 1, .measured_at = "2025-01-31T12:00:00Z"};
	assert_int_equal(atm_profile_put_calibration(est, sm->g, &cal), ATM_E_USAGE);
	atm_profile_destroy(est);
	/* put, merged onto the file, read back to ten digits */
	cal = (atm_profile_calibration){.step_s = 0.123456789012, .measured_at = "2025-01-31T12:00:00Z"};
	assert_int_equal(atm_profile_put_calibration(a, sm->g, &cal), ATM_OK);
	assert_true(atm_profile_unsaved(a));
	assert_int_equal(atm_profile_merge_cache(a, t1, l1, &t2, &l2), ATM_OK);
	assert_non_null(strstr(t2, "\"all_fast_steps\": {\n    \""));
	assert_non_null(strstr(t2, "\"graph\": \"small\""));
	atm_profile_saved(a);
	assert_false(atm_profile_unsaved(a));
	atm_profile_destroy(b);
	assert_int_equal(atm_profile_new(&b, &m2, "c.json"), ATM_OK);
	assert_int_equal(atm_profile_read_cache(b, t2, l2, false), ATM_OK);
	assert_int_equal(atm_profile_get_calibration(b, sm->g, &cal), ATM_OK);
	assert_true(cal.step_s == 0.1234567890);
	assert_string_equal(cal.measured_at, "2025-01-31T12:00:00Z");
	/* another process's save keeps ours: b knew none of them when it merged */
	atm_profile_destroy(b);
	assert_int_equal(atm_profile_new(&b, &m2, "c.json"), ATM_OK);
	fill(b, sm->g, 2);
	assert_int_equal(atm_profile_merge_cache(b, t2, l2, &t3, &l3), ATM_OK);
	assert_int_equal(atm_profile_get_calibration(b, sm->g, &cal), ATM_OK);
	assert_true(cal.step_s == 0.1234567890);
	free(t3);
	t3 = NULL;
	/* a rebuild drops it with the rest */
	atm_profile_destroy(b);
	assert_int_equal(atm_profile_new(&b, &m2, "c.json"), ATM_OK);
	assert_int_equal(atm_profile_read_cache(b, t2, l2, true), ATM_OK);
	fill(b, sm->g, 2);
	assert_int_equal(atm_profile_merge_cache(b, t2, l2, &t3, &l3), ATM_OK);
	assert_null(strstr(t3, "all_fast_steps"));
	assert_int_equal(atm_profile_get_calibration(b, sm->g, &cal), ATM_E_NOTFOUND);
	/* bad ones in a file are refused, named */
	static const struct { const char *from, *to, *msg; } bad[] = {
		{"\"2025-01-31T12:00:00Z\"", "\"2025-01-32T12:00:00Z\"", "measured_at: must be a UTC time"},
		{"\"step_s\": 0.123456789", "\"step_s\": 0", "step_s: must be more than 0"},
		{"\"graph\": \"small\", ", "", "graph: missing"},
		{"\"graph\"", "\"grph\"", "unknown field 'grph'"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *edit = strdup(t2), *at = strstr(edit, bad[i].from);
		assert_non_null(at);
		char *text = malloc(strlen(edit) + strlen(bad[i].to) + 1);
		*at = '\0';
		sprintf(text, "%s%s%s", edit, bad[i].to, at + strlen(bad[i].from));
		atm_profile_destroy(b);
		assert_int_equal(atm_profile_new(&b, &m2, "c.json"), ATM_OK);
		assert_int_equal(atm_profile_read_cache(b, text, strlen(text), false), ATM_E_INPUT);
		if (!strstr(atm_errmsg(), bad[i].msg) || !strstr(atm_errmsg(), "all_fast_steps"))
			fail_msg("%s: %s", bad[i].msg, atm_errmsg());
		free(text);
		free(edit);
	}
	atm_profile_destroy(b);
	atm_profile_destroy(a);
	free(t1);
	free(t2);
	free(t3);
}

static void test_profile_new_checks_the_machine(void **state)
{
	(void)state;
	atm_profile *p = (atm_profile *)1;
	atm_profile_machine m = machine(2);
	m.backend[0] = '\0';
	assert_int_equal(atm_profile_new(&p, &m, NULL), ATM_E_USAGE);
	assert_null(p);
	assert_non_null(strstr(atm_errmsg(), "backend is empty"));
	m = machine(0);
	assert_int_equal(atm_profile_new(&p, &m, NULL), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "0 threads"));
	m = machine(2);
	assert_int_equal(atm_profile_new(&p, &m, "cache.json"), ATM_OK);
	assert_string_equal(atm_profile_path(p), "cache.json");
	assert_int_equal(atm_profile_machine_get(p)->n_threads, 2);
	assert_false(atm_profile_unsaved(p));
	atm_profile_destroy(p);
	atm_profile_destroy(NULL);
}

/* test_profile_merge_and_read -- what is merged into a cache text reads back in another profile
 * of the machine, each machine's section apart; once saved nothing is unsaved */
static void test_profile_merge_and_read(void **state)
{
	struct small *sm = *state;
	atm_profile_machine m2 = machine(2), m4 = machine(4);
	atm_profile *a = NULL, *b = NULL, *c = NULL;
	char *t1 = NULL, *t2 = NULL;
	size_t l1 = 0, l2 = 0;
	assert_int_equal(atm_profile_new(&a, &m2, "c.json"), ATM_OK);
	int64_t n = fill(a, sm->g, 1);
	assert_true(atm_profile_unsaved(a));
	assert_int_equal(atm_profile_merge_cache(a, NULL, 0, &t1, &l1), ATM_OK);
	assert_int_equal(strlen(t1), l1);
	assert_true(atm_profile_unsaved(a)); /* until the text is in the file */
	atm_profile_saved(a);
	assert_false(atm_profile_unsaved(a));
	/* another machine merges into that text: both sections are kept */
	assert_int_equal(atm_profile_new(&b, &m4, "c.json"), ATM_OK);
	fill(b, sm->g, 2);
	assert_int_equal(atm_profile_merge_cache(b, t1, l1, &t2, &l2), ATM_OK);
	json_error_t e;
	json_t *doc = json_loadb(t2, l2, 0, &e);
	assert_non_null(doc);
	assert_int_equal(json_array_size(json_object_get(doc, "machines")), 2);
	json_decref(doc);
	/* a fresh profile of the first machine reads its own section only */
	assert_int_equal(atm_profile_new(&c, &m2, "c.json"), ATM_OK);
	assert_int_equal(atm_profile_read_cache(c, t2, l2, false), ATM_OK);
	assert_int_equal(atm_profile_n_entries(c), n);
	atm_profile_entry got;
	assert_int_equal(atm_profile_get(c, sm->g, 0, 0, &got), ATM_OK);
	assert_true(got.min_s == 1e-4);
	atm_profile_moves mv;
	assert_int_equal(atm_profile_get_moves(c, &mv), ATM_OK);
	assert_true(mv.to_fast_gbps == 10);
	/* no text (no file yet) is an empty profile; with rebuild the next merge drops the section */
	atm_profile_destroy(c);
	assert_int_equal(atm_profile_new(&c, &m2, "c.json"), ATM_OK);
	assert_int_equal(atm_profile_read_cache(c, NULL, 0, false), ATM_OK);
	assert_int_equal(atm_profile_n_entries(c), 0);
	assert_int_equal(atm_profile_read_cache(c, t2, l2, true), ATM_OK);
	assert_int_equal(atm_profile_n_entries(c), 0);
	assert_true(atm_profile_unsaved(c));
	free(t1);
	t1 = NULL;
	assert_int_equal(atm_profile_merge_cache(c, t2, l2, &t1, &l1), ATM_OK);
	assert_int_equal(atm_profile_n_entries(c), 0);
	atm_profile_destroy(c);
	assert_int_equal(atm_profile_new(&c, &m4, "c.json"), ATM_OK);
	assert_int_equal(atm_profile_read_cache(c, t1, l1, false), ATM_OK);
	assert_int_equal(atm_profile_n_entries(c), n); /* the other machine's section stays */
	free(t1);
	free(t2);
	atm_profile_destroy(a);
	atm_profile_destroy(b);
	atm_profile_destroy(c);
}

/* test_profile_broken_text_refused -- a broken cache text is ATM_E_INPUT naming the file and
 * where; nothing is taken and a merge onto it refuses too, unless rebuilding */
static void test_profile_broken_text_refused(void **state)
{
	struct small *sm = *state;
	static const char *const bad[][2] = {
		{"", "the file is empty"},
		{"{\"format\": \"autotm-profile\", \"vers", "c.json:1:"},
		{"{\"format\": \"autotm-profile\", \"version\": 1, \"machines\": [], \"x\": 1}",
		 "unknown field 'x'"},
		{"{\"format\": \"autotm-profile\", \"version\": 9, \"machines\": []}", "version"},
		/* the whole file of the wrong type: no empty place in the message */
		{"[]", "c.json: a profile cache is a JSON object"},
		/* times no sum can hold, bandwidths no memory has */
		{"{\"format\": \"autotm-profile\", \"version\": 1, \"machines\": [{\"machine\": "
		 "{\"cpu\": \"c\", \"n_threads\": 1, \"backend\": \"b\", \"fast_tier\": \"f\", "
		 "\"slow_tier\": \"s\", \"emulation\": \"\", \"estimated\": false}, \"kernels\": "
		 "{\"relu_fwd/f32[1]->f32[1]\": {\"F/F\": {\"min_s\": 1e308, \"median_s\": 1e308, "
		 "\"count\": 1, \"scratch_bytes\": 0}}}}]}",
		 "[\"F/F\"].min_s: must be at most 86400, not 1e+308"},
		{"{\"format\": \"autotm-profile\", \"version\": 1, \"machines\": [{\"machine\": "
		 "{\"cpu\": \"c\", \"n_threads\": 1, \"backend\": \"b\", \"fast_tier\": \"f\", "
		 "\"slow_tier\": \"s\", \"emulation\": \"\", \"estimated\": false}, \"moves\": "
		 "{\"to_fast_gbps\": 1e-300, \"to_slow_gbps\": 1}, \"kernels\": {}}]}",
		 "moves.to_fast_gbps: must be at least 1e-06, not 1e-300"},
		/* an in-step time over no nodes, and one with a field no format has */
		{"{\"format\": \"autotm-profile\", \"version\": 1, \"machines\": [{\"machine\": "
		 "{\"cpu\": \"c\", \"n_threads\": 1, \"backend\": \"b\", \"fast_tier\": \"f\", "
		 "\"slow_tier\": \"s\", \"emulation\": \"\", \"estimated\": false}, \"kernels\": "
		 "{\"relu_fwd/f32[1]->f32[1]\": {\"in_step\": {\"step_s\": 1e-3, \"isolated_s\": "
		 "1e-3, \"n_nodes\": 0}}}}]}",
		 "[\"in_step\"].n_nodes: must be from 1 to 2147483647, not 0"},
		{"{\"format\": \"autotm-profile\", \"version\": 1, \"machines\": [{\"machine\": "
		 "{\"cpu\": \"c\", \"n_threads\": 1, \"backend\": \"b\", \"fast_tier\": \"f\", "
		 "\"slow_tier\": \"s\", \"emulation\": \"\", \"estimated\": false}, \"kernels\": "
		 "{\"relu_fwd/f32[1]->f32[1]\": {\"in_step\": {\"step_s\": 1e-3, \"isolated_s\": "
		 "1e-3, \"n_nodes\": 1, \"scale\": 2}}}}]}",
		 "unknown field 'scale'"},
		/* a statistic this autotm does not keep */
		{"{\"format\": \"autotm-profile\", \"version\": 1, \"machines\": [{\"machine\": "
		 "{\"cpu\": \"c\", \"n_threads\": 1, \"backend\": \"b\", \"fast_tier\": \"f\", "
		 "\"slow_tier\": \"s\", \"emulation\": \"\", \"estimated\": false}, \"kernels\": "
		 "{\"relu_fwd/f32[1]->f32[1]\": {\"in_step\": {\"step_s\": 1e-3, \"isolated_s\": "
		 "1e-3, \"n_nodes\": 1, \"statistic\": \"min\"}}}}]}",
		 "[\"in_step\"].statistic: must be \"fastest_step\""},
		/* an isolated time that would predict the kernel at 0 s */
		{"{\"format\": \"autotm-profile\", \"version\": 1, \"machines\": [{\"machine\": "
		 "{\"cpu\": \"c\", \"n_threads\": 1, \"backend\": \"b\", \"fast_tier\": \"f\", "
		 "\"slow_tier\": \"s\", \"emulation\": \"\", \"estimated\": false}, \"kernels\": "
		 "{\"relu_fwd/f32[1]->f32[1]\": {\"F/F\": {\"min_s\": 1e-3, \"median_s\": 1e-3, "
		 "\"count\": 1, \"scratch_bytes\": 0}, \"in_step\": {\"step_s\": 1e-3, \"isolated_s\": "
		 "5, \"n_nodes\": 1, \"statistic\": \"fastest_step\"}}}}]}",
		 "[\"in_step\"].isolated_s: 5 s is more than step_s (0.001 s) plus the time of "
		 "configuration F/F"},
	};
	atm_profile_machine m = machine(2);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		atm_profile *p = NULL;
		char *out = (char *)1;
		size_t len = 1;
		assert_int_equal(atm_profile_new(&p, &m, "c.json"), ATM_OK);
		fill(p, sm->g, 1);
		assert_int_equal(atm_profile_read_cache(p, bad[i][0], strlen(bad[i][0]), false),
		                 ATM_E_INPUT);
		if (!strstr(atm_errmsg(), bad[i][1]) || strncmp(atm_errmsg(), "c.json", 6))
			fail_msg("message '%s' lacks '%s'", atm_errmsg(), bad[i][1]);
		assert_int_equal(atm_profile_merge_cache(p, bad[i][0], strlen(bad[i][0]), &out, &len),
		                 ATM_E_INPUT);
		assert_null(out);
		assert_true(atm_profile_unsaved(p));
		atm_profile_destroy(p);
	}
}

/* MOVES -- a cache whose one section has moves "{...}" */
#define MOVES(m)                                                                                  \
	"{\"format\": \"autotm-profile\", \"version\": 1, \"machines\": [{\"machine\": "                \
	"{\"cpu\": \"Test CPU\", \"n_threads\": 2, \"backend\": \"cpu-test\", \"fast_tier\": "        \
	"\"dram:0\", \"slow_tier\": \"pmem-dir\", \"emulation\": \"\", \"estimated\": false}, "        \
	"\"moves\": "                                                                            \
	"{\"to_fast_gbps\": 2, \"to_slow_gbps\": 1" m "}, \"kernels\": {}}]}"

/* test_profile_overlap_by_direction -- the copies' overlap by direction and the conditions it
 * was measured in are kept and read back; a cache from before them reads as one loss both
 * ways and no stretch; half of them, or a stretch below 1, is refused by name */
static void test_profile_overlap_by_direction(void **state)
{
	(void)state;
	atm_profile_machine m = machine(2);
	atm_profile *p = NULL;
	atm_profile_moves mv = {.to_fast_gbps = 2, .to_slow_gbps = 1, .overlap_loss = 0.4,
	                        .overlap_measured = true, .by_direction = true,
	                        .kernel_loss = {0.5, 0.3}, .copy_stretch = {1.8, 1.25},
	                        .overlap_threads = 2, .overlap_wait_policy = "passive"}, back;
	double loss, stretch;
	char *out = NULL;
	size_t len = 0;
	assert_int_equal(atm_profile_new(&p, &m, "c.json"), ATM_OK);
	assert_int_equal(atm_profile_set_moves(p, &mv), ATM_OK);
	assert_int_equal(atm_profile_merge_cache(p, NULL, 0, &out, &len), ATM_OK);
	atm_profile_destroy(p);
	assert_int_equal(atm_profile_new(&p, &m, "c.json"), ATM_OK);
	assert_int_equal(atm_profile_read_cache(p, out, len, false), ATM_OK);
	assert_int_equal(atm_profile_get_moves(p, &back), ATM_OK);
	assert_true(back.by_direction && back.overlap_threads == 2);
	assert_string_equal(back.overlap_wait_policy, "passive");
	atm_profile_overlap(&back, ATM_LOC_FAST, &loss, &stretch);
	assert_true(loss == 0.5 && stretch == 1.8);
	atm_profile_overlap(&back, ATM_LOC_SLOW, &loss, &stretch);
	assert_true(loss == 0.3 && stretch == 1.25);
	atm_profile_destroy(p);
	free(out);
	/* an older cache: one loss, no stretch */
	static const char old[] = MOVES(", \"overlap_loss\": 0.25");
	assert_int_equal(atm_profile_new(&p, &m, "c.json"), ATM_OK);
	assert_int_equal(atm_profile_read_cache(p, old, strlen(old), false), ATM_OK);
	assert_int_equal(atm_profile_get_moves(p, &back), ATM_OK);
	assert_false(back.by_direction);
	atm_profile_overlap(&back, ATM_LOC_SLOW, &loss, &stretch);
	assert_true(loss == 0.25 && stretch == 1);
	atm_profile_destroy(p);
	static const char *const bad[][2] = {
		{MOVES(", \"overlap_loss\": 0.25, \"kernel_loss_to_fast\": 0.5"),
		 "moves.kernel_loss_to_slow: missing: the overlap by direction has all of"},
		{MOVES(", \"overlap_loss\": 0.25, \"kernel_loss_to_fast\": 0.5, \"kernel_loss_to_slow\": "
		       "0.5, \"copy_stretch_to_fast\": 0.5, \"copy_stretch_to_slow\": 1"),
		 "moves.copy_stretch_to_fast: must be at least 1, not 0.5"},
		{MOVES(", \"kernel_loss_to_fast\": 0.5, \"kernel_loss_to_slow\": 0.5, "
		       "\"copy_stretch_to_fast\": 1, \"copy_stretch_to_slow\": 1"),
		 "has the overlap by direction but no overlap_loss"},
		{MOVES(", \"overlap_loss\": 0.25, \"overlap_threads\": 0"),
		 "moves.overlap_threads: must be from 1 to"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(atm_profile_new(&p, &m, "c.json"), ATM_OK);
		assert_int_equal(atm_profile_read_cache(p, bad[i][0], strlen(bad[i][0]), false),
		                 ATM_E_INPUT);
		if (!strstr(atm_errmsg(), bad[i][1]))
			fail_msg("message '%s' lacks '%s'", atm_errmsg(), bad[i][1]);
		atm_profile_destroy(p);
	}
}

/* test_profile_tier_rates -- the slow tier's own rates and the fast bandwidth (what a 2LM
 * miss costs) are kept and read back; a cache without them reads them as 0 (unknown); a rate
 * out of range is refused by name, in the file and from the caller */
static void test_profile_tier_rates(void **state)
{
	(void)state;
	atm_profile_machine m = machine(2);
	atm_profile *p = NULL;
	atm_profile_moves mv = {.to_fast_gbps = 2, .to_slow_gbps = 1, .slow_read_gbps = 7.76,
	                        .slow_write_gbps = 3.21, .fast_gbps = 26.8}, back;
	char *out = NULL;
	size_t len = 0;
	assert_int_equal(atm_profile_new(&p, &m, "c.json"), ATM_OK);
	assert_int_equal(atm_profile_set_moves(p, &mv), ATM_OK);
	assert_int_equal(atm_profile_merge_cache(p, NULL, 0, &out, &len), ATM_OK);
	atm_profile_destroy(p);
	assert_non_null(strstr(out, "\"slow_read_gbps\""));
	assert_int_equal(atm_profile_new(&p, &m, "c.json"), ATM_OK);
	assert_int_equal(atm_profile_read_cache(p, out, len, false), ATM_OK);
	assert_int_equal(atm_profile_get_moves(p, &back), ATM_OK);
	assert_true(back.slow_read_gbps == 7.76 && back.slow_write_gbps == 3.21 &&
	            back.fast_gbps == 26.8);
	atm_profile_destroy(p);
	free(out);
	static const char old[] = MOVES("");
	assert_int_equal(atm_profile_new(&p, &m, "c.json"), ATM_OK);
	assert_int_equal(atm_profile_read_cache(p, old, strlen(old), false), ATM_OK);
	assert_int_equal(atm_profile_get_moves(p, &back), ATM_OK);
	assert_true(back.slow_read_gbps == 0 && back.slow_write_gbps == 0 && back.fast_gbps == 0);
	atm_profile_destroy(p);
	static const char bad[] = MOVES(", \"fast_gbps\": 0");
	assert_int_equal(atm_profile_new(&p, &m, "c.json"), ATM_OK);
	assert_int_equal(atm_profile_read_cache(p, bad, strlen(bad), false), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "moves.fast_gbps"));
	mv.slow_write_gbps = -1;
	assert_int_equal(atm_profile_set_moves(p, &mv), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "the slow tier's rates"));
	atm_profile_destroy(p);
}

/* in_step_without_statistic -- the cache text with its in-step objects as an earlier autotm
 * wrote them (no "statistic": each kernel's own fastest over the steps) reads, but the times are
 * not used and count as missing, so that the next profile measures them again */
static void in_step_without_statistic(struct small *sm, const char *text)
{
	json_t *root = json_loads(text, 0, NULL), *mach, *cfgs;
	assert_non_null(root);
	size_t i;
	const char *sig;
	int n_stripped = 0;
	json_array_foreach(json_object_get(root, "machines"), i, mach)
		json_object_foreach(json_object_get(mach, "kernels"), sig, cfgs) {
			json_t *st = json_object_get(cfgs, "in_step");
			if (st) {
				assert_string_equal(json_string_value(json_object_get(st, "statistic")),
				                    "fastest_step");
				assert_int_equal(json_object_del(st, "statistic"), 0);
				n_stripped++;
			}
		}
	assert_true(n_stripped > 0);
	char *old = json_dumps(root, 0);
	atm_profile_machine m2 = machine(2);
	atm_profile *d = NULL;
	atm_profile_in_step st;
	atm_profile_entry e;
	assert_int_equal(atm_profile_new(&d, &m2, "c.json"), ATM_OK);
	assert_int_equal(atm_profile_read_cache(d, old, strlen(old), false), ATM_OK);
	assert_int_equal(atm_profile_get_in_step(d, sm->g, 0, &st), ATM_E_NOTFOUND);
	assert_int_equal(atm_profile_get(d, sm->g, 0, 0, &e), ATM_OK);
	assert_true(e.min_s == 1e-4);
	/* measured again, it replaces the old one */
	st = (atm_profile_in_step){.step_s = 2e-4, .isolated_s = 1e-4, .n_nodes = 1};
	assert_int_equal(atm_profile_put_in_step(d, sm->g, 0, &st), ATM_OK);
	assert_int_equal(atm_profile_get(d, sm->g, 0, 0, &e), ATM_OK);
	assert_true(fabs(e.min_s - 2e-4) < 1e-15);
	atm_profile_destroy(d);
	free(old);
	json_decref(root);
}

/* test_profile_in_step -- an in-step time shifts every configuration of its kernel (and its
 * algorithms) by step - isolated, never below 0, until turned off; it is checked at the call,
 * not counted as an entry, saved and read back with the machine's section, and a profile of
 * another machine or a kernel of other shapes does not get it */
static void test_profile_in_step(void **state)
{
	struct small *sm = *state;
	atm_profile_machine m2 = machine(2), m4 = machine(4);
	atm_profile *a = NULL, *b = NULL, *c = NULL;
	char *t1 = NULL, *t2 = NULL;
	size_t l1 = 0, l2 = 0;
	atm_profile_entry e;
	atm_profile_in_step st;
	assert_int_equal(atm_profile_new(&a, &m2, "c.json"), ATM_OK);
	int64_t n = fill(a, sm->g, 1);
	/* node 0 (fc): alone 1e-4 s all fast, 3e-4 s in a step */
	assert_int_equal(atm_profile_get_in_step(a, sm->g, 0, &st), ATM_E_NOTFOUND);
	assert_non_null(strstr(atm_errmsg(), "'fc'"));
	st = (atm_profile_in_step){.step_s = 3e-4, .isolated_s = 1e-4, .n_nodes = 1};
	assert_int_equal(atm_profile_put_in_step(a, sm->g, 0, &st), ATM_OK);
	assert_int_equal(atm_profile_n_entries(a), n);
	assert_true(atm_profile_uses_in_step(a));
	for (int i = 0; i < atm_node_n_configs(sm->g, 0); i++) {
		assert_int_equal(atm_profile_get(a, sm->g, 0, atm_node_config_at(sm->g, 0, i), &e), ATM_OK);
		assert_true(fabs(e.min_s - ((i + 1) * 1e-4 + 2e-4)) < 1e-15);
		assert_true(fabs(e.median_s - e.min_s) < 1e-15);
	}
	/* the other nodes keep their times */
	assert_int_equal(atm_profile_get(a, sm->g, 1, 0, &e), ATM_OK);
	assert_true(e.min_s == 2e-4);
	atm_profile_use_in_step(a, false);
	assert_false(atm_profile_uses_in_step(a));
	assert_int_equal(atm_profile_get(a, sm->g, 0, 0, &e), ATM_OK);
	assert_true(e.min_s == 1e-4);
	atm_profile_use_in_step(a, true);
	/* faster in a step than alone: shifted down, never below 0 */
	st = (atm_profile_in_step){.step_s = 0, .isolated_s = 5, .n_nodes = 2};
	assert_int_equal(atm_profile_put_in_step(a, sm->g, 1, &st), ATM_OK);
	assert_int_equal(atm_profile_get(a, sm->g, 1, 0, &e), ATM_OK);
	assert_true(e.min_s == 0 && e.median_s == 0);
	/* refused at the call */
	st = (atm_profile_in_step){.step_s = -1, .isolated_s = 1, .n_nodes = 1};
	assert_int_equal(atm_profile_put_in_step(a, sm->g, 2, &st), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "n_nodes >= 1"));
	st = (atm_profile_in_step){.step_s = 1, .isolated_s = 1, .n_nodes = 0};
	assert_int_equal(atm_profile_put_in_step(a, sm->g, 2, &st), ATM_E_USAGE);
	st = (atm_profile_in_step){.step_s = NAN, .isolated_s = 1, .n_nodes = 1};
	assert_int_equal(atm_profile_put_in_step(a, sm->g, 2, &st), ATM_E_USAGE);
	/* saved and read back by the same machine; another machine's section has none */
	assert_int_equal(atm_profile_merge_cache(a, NULL, 0, &t1, &l1), ATM_OK);
	assert_int_equal(atm_profile_new(&b, &m4, "c.json"), ATM_OK);
	fill(b, sm->g, 2);
	assert_int_equal(atm_profile_merge_cache(b, t1, l1, &t2, &l2), ATM_OK);
	assert_int_equal(atm_profile_get_in_step(b, sm->g, 0, &st), ATM_E_NOTFOUND);
	assert_int_equal(atm_profile_get(b, sm->g, 0, 0, &e), ATM_OK);
	assert_true(e.min_s == 2e-4);
	assert_int_equal(atm_profile_new(&c, &m2, "c.json"), ATM_OK);
	assert_int_equal(atm_profile_read_cache(c, t2, l2, false), ATM_OK);
	assert_int_equal(atm_profile_n_entries(c), n);
	assert_int_equal(atm_profile_get_in_step(c, sm->g, 0, &st), ATM_OK);
	assert_true(st.step_s == 3e-4 && st.isolated_s == 1e-4 && st.n_nodes == 1);
	assert_int_equal(atm_profile_get(c, sm->g, 0, 0, &e), ATM_OK);
	assert_true(fabs(e.min_s - 3e-4) < 1e-15);
	in_step_without_statistic(sm, t2);
	/* the same op on other shapes is another kernel: it has no in-step time */
	int64_t dims[2] = {2, 4};
	atm_graph *g2 = NULL;
	assert_int_equal(atm_graph_new(&g2, "wider"), ATM_OK);
	int32_t x, w, bias, y;
	assert_int_equal(atm_graph_add_tensor(g2, "x", ATM_F32, 2, dims, ATM_KIND_INPUT, ATM_LOC_ANY,
	                                      &x), ATM_OK);
	dims[0] = 3;
	assert_int_equal(atm_graph_add_tensor(g2, "w", ATM_F32, 2, dims, ATM_KIND_PARAM, ATM_LOC_ANY,
	                                      &w), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g2, "b", ATM_F32, 1, dims, ATM_KIND_PARAM, ATM_LOC_ANY,
	                                      &bias), ATM_OK);
	dims[0] = 2;
	dims[1] = 3;
	assert_int_equal(atm_graph_add_tensor(g2, "y", ATM_F32, 2, dims, ATM_KIND_OUTPUT, ATM_LOC_ANY,
	                                      &y), ATM_OK);
	int32_t node;
	assert_int_equal(atm_graph_add_node(g2, "fc", ATM_OP_IP_FWD, &(atm_attrs){0}, 3,
	                                    (int32_t[]){x, w, bias}, 1, &y, &node), ATM_OK);
	assert_int_equal(atm_profile_get_in_step(c, g2, node, &st), ATM_E_NOTFOUND);
	atm_graph_destroy(g2);
	/* an estimated profile holds no measured step */
	atm_profile_machine me = machine(2);
	me.estimated = true;
	atm_profile_destroy(b);
	assert_int_equal(atm_profile_new(&b, &me, NULL), ATM_OK);
	st = (atm_profile_in_step){.step_s = 1, .isolated_s = 1, .n_nodes = 1};
	assert_int_equal(atm_profile_put_in_step(b, sm->g, 0, &st), ATM_E_USAGE);
	free(t1);
	free(t2);
	atm_profile_destroy(a);
	atm_profile_destroy(b);
	atm_profile_destroy(c);
}

/* test_profile_bounds -- entries and bandwidths a sum cannot overflow on, at the call too:
 * the largest time is taken, one past it, an infinity or a NaN is ATM_E_USAGE */
static void test_profile_bounds(void **state)
{
	struct small *sm = *state;
	atm_profile_machine m = machine(2);
	atm_profile *p = NULL;
	assert_int_equal(atm_profile_new(&p, &m, NULL), ATM_OK);
	atm_profile_entry e = {.min_s = ATM_PROFILE_MAX_S, .median_s = ATM_PROFILE_MAX_S, .count = 1};
	uint32_t c = atm_node_config_at(sm->g, 0, 0);
	assert_int_equal(atm_profile_put(p, sm->g, 0, c, &e), ATM_OK);
	const double bad[] = {ATM_PROFILE_MAX_S * 1.5, 1e308, INFINITY, NAN};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		e.min_s = 0;
		e.median_s = bad[i];
		assert_int_equal(atm_profile_put(p, sm->g, 0, c, &e), ATM_E_USAGE);
		assert_non_null(strstr(atm_errmsg(), "median_s <= 86400 s"));
	}
	atm_profile_moves mv = {.to_fast_gbps = ATM_PROFILE_MIN_GBPS, .to_slow_gbps = ATM_PROFILE_MAX_GBPS};
	assert_int_equal(atm_profile_set_moves(p, &mv), ATM_OK);
	mv.to_fast_gbps = 1e-300;
	assert_int_equal(atm_profile_set_moves(p, &mv), ATM_E_USAGE);
	mv.to_fast_gbps = 1;
	mv.to_slow_gbps = INFINITY;
	assert_int_equal(atm_profile_set_moves(p, &mv), ATM_E_USAGE);
	atm_profile_destroy(p);
}

/* A merge to sweep and the text it must give. */
struct merge_case {
	const atm_graph *g;
	const char *onto; /* the file's text, or NULL */
	const char *want;
};

/* merge_once -- one merge of a filled profile: the whole text, or nothing and still unsaved */
static atm_status merge_once(void *arg)
{
	const struct merge_case *c = arg;
	atm_profile_machine m = machine(2);
	atm_profile *p = NULL;
	char *text = NULL;
	size_t len = 0;
	long left = alloc_fail_pause();
	assert_int_equal(atm_profile_new(&p, &m, "c.json"), ATM_OK);
	fill(p, c->g, 1);
	fill_cal(p, c->g);
	alloc_fail_resume(left);
	atm_status rc = atm_profile_merge_cache(p, c->onto, c->onto ? strlen(c->onto) : 0, &text,
	                                        &len);
	left = alloc_fail_pause();
	if (rc == ATM_OK)
		assert_string_equal(text, c->want);
	else
		assert_true(text == NULL && atm_profile_unsaved(p));
	free(text);
	atm_profile_destroy(p);
	alloc_fail_resume(left);
	return rc;
}

/* test_profile_allocation_failures -- every allocation of a merge failed in turn: each is
 * ATM_E_NOMEM, leaves the profile unsaved and (ASan) leaks nothing; never a text with an
 * entry missing */
static void test_profile_allocation_failures(void **state)
{
	struct small *sm = *state;
	atm_profile_machine m4 = machine(4);
	atm_profile *p = NULL, *q = NULL;
	char *fresh = NULL, *other = NULL, *onto = NULL;
	size_t len;
	struct merge_case c = {.g = sm->g};
	assert_int_equal(atm_profile_new(&q, &m4, "c.json"), ATM_OK);
	fill(q, sm->g, 3);
	assert_int_equal(atm_profile_merge_cache(q, NULL, 0, &other, &len), ATM_OK);
	atm_profile_machine m = machine(2);
	assert_int_equal(atm_profile_new(&p, &m, "c.json"), ATM_OK);
	fill(p, sm->g, 1);
	fill_cal(p, sm->g);
	assert_int_equal(atm_profile_merge_cache(p, NULL, 0, &fresh, &len), ATM_OK);
	c.want = fresh;
	/* the first save of a cache file: jansson's allocations and autotm's */
	assert_true(alloc_fail_sweep("atm_profile_merge_cache", merge_once, &c) > 10);
	/* onto a file another machine wrote: it is parsed, so autotm's allocations only */
	atm_profile_destroy(p);
	assert_int_equal(atm_profile_new(&p, &m, "c.json"), ATM_OK);
	fill(p, sm->g, 1);
	fill_cal(p, sm->g);
	assert_int_equal(atm_profile_merge_cache(p, other, strlen(other), &onto, &len), ATM_OK);
	c = (struct merge_case){.g = sm->g, .onto = other, .want = onto};
	assert_true(alloc_fail_sweep_own("atm_profile_merge_cache (onto a file)", merge_once, &c) > 3);
	free(fresh);
	free(other);
	free(onto);
	atm_profile_destroy(p);
	atm_profile_destroy(q);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, small_setup, small_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_new_checks_the_machine),
		T(test_profile_merge_and_read),
		T(test_profile_broken_text_refused),
		cmocka_unit_test(test_profile_overlap_by_direction),
		cmocka_unit_test(test_profile_tier_rates),
		T(test_profile_in_step),
		T(test_profile_calibration),
		T(test_profile_bounds),
		T(test_profile_allocation_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
