/* test_emulate.c -- emulation presets and their sources, tier spec files and every nonsense in them, the waits */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atm_core.h"
#include "atm_formats.h"
#include "backend.h"
#include "memory.h"

static char tmp[128];

/* rm_one -- nftw callback removing one entry */
static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* setup -- a fresh temporary directory */
static int setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof tmp, "/tmp/atm-test-emulate-XXXXXX");
	return mkdtemp(tmp) ? 0 : -1;
}

/* teardown -- remove it */
static int teardown(void **state)
{
	(void)state;
	return nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* has -- the current error message contains s */
static void has(const char *s)
{
	if (!strstr(atm_errmsg(), s))
		fail_msg("message \"%s\" lacks \"%s\"", atm_errmsg(), s);
}

/* write_spec -- text into tmp/name; returns the path */
static const char *write_spec(const char *name, const char *text)
{
	static char path[256];
	snprintf(path, sizeof path, "%s/%s", tmp, name);
	assert_int_equal(atm_write_file_atomic(path, text, strlen(text)), ATM_OK);
	return path;
}

/* spec -- a made-up slow memory */
static atm_emu_spec spec(double read_gbps, double write_gbps)
{
	atm_emu_spec s = {.read_gbps = read_gbps, .write_gbps = write_gbps, .latency_ns = 100};
	snprintf(s.name, sizeof s.name, "test");
	return s;
}

/* ---------------------------------------------------------------- presets */

static void test_emulate_optane_matches_published_numbers(void **state)
{
	(void)state;
	atm_emu_spec s;
	assert_int_equal(atm_emu_preset("optane", &s), ATM_OK);
	assert_string_equal(s.name, "optane");
	/* AutoTM's cost model: 29 GB/s PMM -> DRAM, 12 GB/s DRAM -> PMM (sync) */
	assert_float_equal(s.read_gbps, 29.0, 1e-9);
	assert_float_equal(s.write_gbps, 12.0, 1e-9);
	/* below the device maxima of six interleaved DIMMs (Izraelevitz et al. 2019) */
	assert_true(s.read_gbps <= 39.4 && s.write_gbps <= 13.9);
	/* reads are much faster than writes on Optane, unlike DRAM */
	assert_true(s.read_gbps > 2 * s.write_gbps);
	/* idle random read latency (Izraelevitz 2019, Yang FAST'20) */
	assert_float_equal(s.latency_ns, 305.0, 1e-9);
	assert_non_null(strstr(s.source, "AutoTM"));
	assert_non_null(strstr(s.source, "Izraelevitz"));
	assert_non_null(strstr(s.source, "FAST'20"));
}

static void test_emulate_presets_are_sane(void **state)
{
	(void)state;
	static const char *const names[] = {"optane", "cxl", "numa"};
	atm_emu_spec s[3];
	for (int i = 0; i < 3; i++) {
		assert_int_equal(atm_emu_preset(names[i], &s[i]), ATM_OK);
		assert_string_equal(s[i].name, names[i]);
		/* slower than a server's DRAM, faster than any SSD */
		assert_true(s[i].read_gbps > 5 && s[i].read_gbps < 100);
		assert_true(s[i].write_gbps > 5 && s[i].write_gbps <= s[i].read_gbps);
		assert_true(s[i].latency_ns > 100 && s[i].latency_ns < 1000);
		assert_true(strlen(s[i].source) > 20);
	}
	/* CXL: about twice a local DDR5 load, a x8 PCIe 5.0 link (31.5 GB/s) at most */
	assert_true(s[1].latency_ns >= 200 && s[1].latency_ns <= 300);
	assert_true(s[1].read_gbps <= 31.5);
	/* one UPI hop is the nearest of the three, Optane the farthest */
	assert_true(s[2].latency_ns < s[1].latency_ns && s[1].latency_ns < s[0].latency_ns);
	assert_true(s[2].read_gbps <= 62.4);
}

static void test_emulate_unknown_preset(void **state)
{
	(void)state;
	atm_emu_spec s;
	s.read_gbps = 1;
	assert_int_equal(atm_emu_preset("optain", &s), ATM_E_USAGE);
	has("unknown emulation preset 'optain'");
	has("optane, cxl, numa");
	assert_float_equal(s.read_gbps, 0, 0);
	assert_int_equal(atm_emu_spec_resolve("Optane", &s), ATM_E_USAGE);
	/* the form twice: that is what is wrong, not the valid preset before it */
	assert_int_equal(atm_emu_spec_resolve("optane:absolute:absolute", &s), ATM_E_USAGE);
	has("'optane:absolute:absolute' gives the rates' form twice; give one at most: "
	    "'optane:absolute' or 'optane:proportional' (the default)");
	assert_int_equal(atm_emu_spec_resolve("cxl:proportional:absolute", &s), ATM_E_USAGE);
	has("gives the rates' form twice");
}

/* ---------------------------------------------------------------- arithmetic and waiting */

static void test_emulate_extra_time_arithmetic(void **state)
{
	(void)state;
	atm_emu *e = NULL;
	atm_emu_spec s = spec(1.0, 0.5);
	assert_int_equal(atm_emu_new(&e, &s, NULL, 10.0), ATM_OK);
	assert_string_equal(atm_emu_fast_source(e), "given");
	assert_float_equal(atm_emu_fast_gbps(e), 10.0, 0);
	/* 1 GB read: 1 s slow, 0.1 s fast */
	assert_float_equal(atm_emu_extra_s(e, 1000000000, 0), 0.9, 1e-12);
	/* 1 GB written: 2 s slow, 0.1 s fast */
	assert_float_equal(atm_emu_extra_s(e, 0, 1000000000), 1.9, 1e-12);
	/* both: 3 s slow, the 2 GB at 10 GB/s take 0.2 s */
	assert_float_equal(atm_emu_extra_s(e, 1000000000, 1000000000), 2.8, 1e-12);
	assert_float_equal(atm_emu_extra_s(e, 0, 0), 0, 0);
	assert_float_equal(atm_emu_extra_s(e, -5, -5), 0, 0);
	assert_string_equal(atm_emu_get_spec(e)->name, "test");
	atm_emu_destroy(e);
	atm_emu_destroy(NULL);
}

static void test_emulate_extra_never_negative(void **state)
{
	(void)state;
	atm_emu *e = NULL;
	/* "slow" memory faster than the fast tier: no extra time, no wait */
	atm_emu_spec s = spec(50.0, 40.0);
	assert_int_equal(atm_emu_new(&e, &s, NULL, 20.0), ATM_OK);
	assert_float_equal(atm_emu_extra_s(e, 1 << 30, 1 << 30), 0, 0);
	double waited = -1;
	assert_int_equal(atm_emu_wait(e, 1 << 30, 1 << 30, &waited), ATM_OK);
	assert_float_equal(waited, 0, 0);
	assert_float_equal(atm_emu_total_waited_s(e), 0, 0);
	atm_emu_destroy(e);
}

/* best_wait -- the shortest of three waits (the least disturbed by the scheduler) */
static double best_wait(atm_emu *e, int64_t bytes)
{
	double best = INFINITY;
	for (int i = 0; i < 3; i++) {
		double w;
		assert_int_equal(atm_emu_wait(e, bytes, 0, &w), ATM_OK);
		/* never shorter than the extra time, to the nanosecond */
		assert_true(w >= atm_emu_extra_s(e, bytes, 0) - 1e-9);
		if (w < best)
			best = w;
	}
	return best;
}

static void test_emulate_wait_covers_extra(void **state)
{
	(void)state;
	atm_emu *e = NULL;
	/* 1 GB/s against 1000 GB/s: 20 MB cost ~20 ms, 80 MB ~80 ms */
	atm_emu_spec s = spec(1.0, 1.0);
	assert_int_equal(atm_emu_new(&e, &s, NULL, 1000.0), ATM_OK);
	double small = best_wait(e, 20000000), big = best_wait(e, 80000000);
	assert_true(small >= atm_emu_extra_s(e, 20000000, 0) - 1e-9);
	assert_true(big >= atm_emu_extra_s(e, 80000000, 0) - 1e-9);
	/* never shorter than asked: lower bounds only, since a busy machine can make any wait
	 * longer (the ratio of two real waits is a benchmark's question, not a test's) */
	assert_true(atm_emu_total_waited_s(e) >= 3 * (small + big) - 1e-6);
	atm_emu_destroy(e);
}

/* test_emulate_extremes_do_not_overflow -- the slowest spec with the most bytes a tensor may
 * have: the extra time is finite, capped at ATM_EMU_MAX_WAIT_S, and never negative */
static void test_emulate_extremes_do_not_overflow(void **state)
{
	(void)state;
	atm_emu *e = NULL;
	atm_emu_spec s = spec(ATM_EMU_MIN_GBPS, ATM_EMU_MIN_GBPS);
	assert_int_equal(atm_emu_new(&e, &s, NULL, ATM_EMU_MAX_GBPS), ATM_OK);
	double x = atm_emu_extra_s(e, ATM_MAX_BYTES, ATM_MAX_BYTES);
	assert_true(isfinite(x) && x > 0 && x <= ATM_EMU_MAX_WAIT_S);
	assert_true(atm_emu_extra_s(e, 1000, 0) > 0);
	/* a kilobyte at 1 MB/s: about a millisecond, waited in full */
	double w = 0;
	assert_int_equal(atm_emu_wait(e, 1000, 0, &w), ATM_OK);
	assert_true(w >= atm_emu_extra_s(e, 1000, 0) - 1e-9);
	atm_emu_destroy(e);
}

/* raise_stop -- a thread that sets the stop flag (arg) after 100 ms, as a signal handler would */
static void *raise_stop(void *arg)
{
	usleep(100000);
	*(volatile sig_atomic_t *)arg = 1;
	return NULL;
}

/* test_emulate_wait_ends_on_stop -- a wait of days ends soon after its stop flag is set by
 * another thread, with ATM_E_INTERRUPTED and the time really waited; a flag already set ends
 * a wait at once */
static void test_emulate_wait_ends_on_stop(void **state)
{
	(void)state;
	atm_emu *e = NULL;
	volatile sig_atomic_t stop = 0;
	pthread_t t;
	atm_emu_spec s = spec(ATM_EMU_MIN_GBPS, ATM_EMU_MIN_GBPS);
	assert_int_equal(atm_emu_new(&e, &s, NULL, 100.0), ATM_OK);
	atm_emu_set_stop(e, &stop);
	int64_t bytes = (int64_t)1 << 40; /* a terabyte at 1 MB/s: about 12 days */
	assert_true(atm_emu_extra_s(e, bytes, 0) > 1e6);
	assert_int_equal(pthread_create(&t, NULL, raise_stop, (void *)&stop), 0);
	double w = -1;
	assert_int_equal(atm_emu_wait(e, bytes, 0, &w), ATM_E_INTERRUPTED);
	has("interrupted");
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(w >= 0.09 && w < atm_emu_extra_s(e, bytes, 0));
	assert_int_equal(atm_emu_wait(e, bytes, 0, &w), ATM_E_INTERRUPTED);
	atm_emu_set_stop(e, NULL);
	assert_int_equal(atm_emu_wait(e, 1000, 0, NULL), ATM_OK);
	atm_emu_destroy(e);
}

/* test_emulate_spec_warning -- a slow tier no slower than its fast one is flagged, a real one
 * is not */
static void test_emulate_spec_warning(void **state)
{
	(void)state;
	char why[256];
	atm_emu_spec s = spec(200, 150);
	s.fast_gbps = 100;
	assert_true(atm_emu_spec_warning(&s, why, sizeof why));
	assert_non_null(strstr(why, "no slower than its fast tier (100 GB/s)"));
	s = spec(200, 50);
	assert_false(atm_emu_spec_warning(&s, why, sizeof why));
	assert_int_equal(atm_emu_preset("optane", &s), ATM_OK);
	assert_false(atm_emu_spec_warning(&s, why, sizeof why));
}

static void test_emulate_wait_rejects_negative_bytes(void **state)
{
	(void)state;
	atm_emu *e = NULL;
	atm_emu_spec s = spec(1.0, 1.0);
	assert_int_equal(atm_emu_new(&e, &s, NULL, 10.0), ATM_OK);
	double w = 5;
	assert_int_equal(atm_emu_wait(e, -1, 0, &w), ATM_E_USAGE);
	has("-1 read");
	assert_float_equal(w, 0, 0);
	assert_int_equal(atm_emu_wait(e, 0, 0, NULL), ATM_OK);
	atm_emu_destroy(e);
}

static void test_emulate_new_rejects_bad_input(void **state)
{
	(void)state;
	atm_emu *e = (atm_emu *)&e;
	atm_emu_spec s = spec(0, 1.0);
	assert_int_equal(atm_emu_new(&e, &s, NULL, 10.0), ATM_E_USAGE);
	assert_null(e);
	has("bandwidths must be from 0.001 to 10000 GB/s");
	s = spec(1e-300, 1.0);
	assert_int_equal(atm_emu_new(&e, &s, NULL, 10.0), ATM_E_USAGE);
	s = spec(NAN, 1.0);
	assert_int_equal(atm_emu_new(&e, &s, NULL, 10.0), ATM_E_USAGE);
	s = spec(1.0, 1.0);
	assert_int_equal(atm_emu_new(&e, &s, NULL, -3.0), ATM_E_USAGE);
	has("fast-tier bandwidth -3");
	assert_int_equal(atm_emu_new(&e, &s, NULL, NAN), ATM_E_USAGE);
	assert_null(e);
}

static void test_emulate_fast_bandwidth_sources(void **state)
{
	(void)state;
	atm_emu *e = NULL;
	atm_emu_spec s;
	assert_int_equal(atm_emu_preset("optane", &s), ATM_OK);

	/* no hwloc figure: measured once (or the documented default) */
	assert_int_equal(atm_emu_new(&e, &s, NULL, 0), ATM_OK);
	const char *src = atm_emu_fast_source(e);
	assert_true(strcmp(src, "measured") == 0 || strcmp(src, "default") == 0);
	assert_true(atm_emu_fast_gbps(e) > 0);
	if (strcmp(src, "default") == 0)
		assert_float_equal(atm_emu_fast_gbps(e), ATM_EMU_DEFAULT_FAST_GBPS, 0);
	atm_emu_destroy(e);

	/* this machine: hwloc's figure when the firmware gives one */
	atm_tier_topo *topo = NULL;
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	assert_int_equal(atm_emu_new(&e, &s, topo, 0), ATM_OK);
	if (atm_tier_topo_node(topo, atm_tier_topo_home(topo))->read_gbps > 0)
		assert_string_equal(atm_emu_fast_source(e), "hwloc");
	else
		assert_string_not_equal(atm_emu_fast_source(e), "hwloc");
	atm_emu_destroy(e);
	atm_tier_topo_destroy(topo);

	/* a machine whose HMAT reports 100000 MiB/s for its DRAM */
	const char *xml =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
		"<topology version=\"2.0\">\n"
		"<object type=\"Machine\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" "
		"allowed_cpuset=\"0x00000001\" nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" "
		"allowed_nodeset=\"0x00000001\" gp_index=\"1\">\n"
		"<object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" "
		"nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"2\" "
		"local_memory=\"1073741824\"/>\n"
		"<object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" "
		"nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"3\"/>\n"
		"</object>\n"
		"<memattr name=\"Bandwidth\" flags=\"5\">\n"
		"<memattr_value target_obj_type=\"NUMANode\" target_obj_gp_index=\"2\" value=\"100000\" "
		"initiator_cpuset=\"0x00000001\"/>\n</memattr>\n</topology>\n";
	assert_int_equal(atm_tier_topo_load_xml(&topo, write_spec("m.xml", xml)), ATM_OK);
	assert_int_equal(atm_emu_new(&e, &s, topo, 0), ATM_OK);
	assert_string_equal(atm_emu_fast_source(e), "hwloc");
	assert_float_equal(atm_emu_fast_gbps(e), 100000 * 1048576.0 / 1e9, 1e-9);
	/* 1 GB read from Optane: 1/29 s against 1/104.9 s */
	assert_float_equal(atm_emu_extra_s(e, 1000000000, 0), 1 / 29.0 - 1 / 104.8576, 1e-9);
	atm_emu_destroy(e);
	atm_tier_topo_destroy(topo);
}

/* ---------------------------------------------------------------- proportional emulation */

static double stub_gbps;
/* stub_measure -- the streaming copy, stubbed: stub_gbps; counts its calls */
static int stub_calls;
static double stub_measure(void)
{
	stub_calls++;
	return stub_gbps;
}

/* stub -- this machine measured at gbps from now on, nothing known yet, no call counted */
static void stub(double gbps)
{
	stub_gbps = gbps;
	stub_calls = 0;
	atm_emu_set_measure(stub_measure);
}

/* machine_file -- tmp/machine.json's path */
static const char *machine_file(void)
{
	static char path[256];
	snprintf(path, sizeof path, "%s/machine.json", tmp);
	return path;
}

static void test_emulate_scale_follows_bandwidth(void **state)
{
	(void)state;
	atm_emu_spec s;
	char note[1024];
	/* a machine that streams 25 GB/s: Optane's rates a quarter of the reference's */
	stub(25);
	assert_int_equal(atm_emu_spec_resolve_scaled("optane", machine_file(), NULL, &s, note,
	                                             sizeof note), ATM_OK);
	assert_int_equal(stub_calls, 1);
	assert_false(s.absolute);
	assert_float_equal(s.scale, 0.25, 1e-12);
	assert_float_equal(s.read_gbps, 29.0 * 0.25, 1e-9);
	assert_float_equal(s.write_gbps, 12.0 * 0.25, 1e-9);
	assert_float_equal(s.fast_gbps, 25, 1e-12);
	assert_float_equal(s.machine_gbps, 25, 1e-12);
	assert_float_equal(s.reference_gbps, ATM_EMU_REFERENCE_FAST_GBPS, 1e-12);
	assert_non_null(strstr(note, "measured now, kept in"));
	/* the slow tier is as much slower than this machine's DRAM as Optane was than the
	 * reference's: a GB read costs 1/7.25 - 1/25 s here, four times 1/29 - 1/100 */
	atm_emu *e = NULL;
	assert_int_equal(atm_emu_new(&e, &s, NULL, s.fast_gbps), ATM_OK);
	assert_float_equal(atm_emu_extra_s(e, 1000000000, 0), 4 * (1 / 29.0 - 1 / 100.0), 1e-9);
	atm_emu_destroy(e);

	/* kept with the machine's key: a new process reads it, measures nothing */
	stub(50);
	assert_int_equal(atm_emu_spec_resolve_scaled("cxl", machine_file(), NULL, &s, note,
	                                             sizeof note), ATM_OK);
	assert_int_equal(stub_calls, 0);
	assert_float_equal(s.machine_gbps, 25, 1e-12);
	assert_float_equal(s.scale, 25 / 250.0, 1e-12); /* the cxl preset's own DDR5 reference */
	assert_non_null(strstr(note, "kept in"));

	/* another machine's bandwidth file: measured again; the scale follows */
	assert_int_equal(remove(machine_file()), 0);
	stub(50);
	assert_int_equal(atm_emu_spec_resolve_scaled("optane", machine_file(), NULL, &s, NULL, 0),
	                 ATM_OK);
	assert_int_equal(stub_calls, 1);
	assert_float_equal(s.scale, 0.5, 1e-12);
	assert_float_equal(s.read_gbps, 14.5, 1e-9);
	atm_emu_set_measure(NULL);
}

static void test_emulate_absolute_form(void **state)
{
	(void)state;
	atm_emu_spec s;
	stub(25);
	/* ":absolute" keeps the published rates beside the reference DRAM, measuring nothing */
	assert_int_equal(atm_emu_spec_resolve_scaled("optane:absolute", machine_file(), NULL, &s,
	                                             NULL, 0), ATM_OK);
	assert_int_equal(stub_calls, 0);
	assert_true(s.absolute);
	assert_float_equal(s.scale, 1, 0);
	assert_float_equal(s.read_gbps, 29.0, 0);
	assert_float_equal(s.write_gbps, 12.0, 0);
	assert_float_equal(s.fast_gbps, ATM_EMU_REFERENCE_FAST_GBPS, 0);
	assert_true(atm_emu_is_preset("optane:absolute") && atm_emu_is_preset("numa:proportional"));
	assert_false(atm_emu_is_preset("mine.json:absolute") || atm_emu_is_preset("optane:fast"));
	/* a spec file asks for either; the suffix overrides it */
	const char *abs = write_spec("abs.json", "{\"name\": \"box7\", \"read_gbps\": 8, "
	                                         "\"write_gbps\": 4, \"latency_ns\": 300, "
	                                         "\"fast_gbps\": 20, \"rates\": \"absolute\"}");
	assert_int_equal(atm_emu_spec_resolve_scaled(abs, machine_file(), NULL, &s, NULL, 0), ATM_OK);
	assert_true(s.absolute);
	assert_float_equal(s.read_gbps, 8, 0);
	assert_int_equal(stub_calls, 0);
	char with[300];
	snprintf(with, sizeof with, "%s:proportional", abs);
	assert_int_equal(atm_emu_spec_resolve_scaled(with, machine_file(), NULL, &s, NULL, 0), ATM_OK);
	assert_false(s.absolute);
	assert_float_equal(s.scale, 25 / 20.0, 1e-12);
	assert_float_equal(s.read_gbps, 10, 1e-9);
	const char *bad = write_spec("bad.json", "{\"name\": \"x\", \"read_gbps\": 8, "
	                                         "\"write_gbps\": 4, \"latency_ns\": 300, "
	                                         "\"rates\": \"relative\"}");
	assert_int_equal(atm_emu_spec_resolve(bad, &s), ATM_E_INPUT);
	has("field 'rates' is \"relative\"");
	has("\"absolute\"");
	/* a GPU's host link is absolute: the link is what it is */
	assert_int_equal(atm_emu_spec_resolve("pcie4", &s), ATM_OK);
	assert_true(s.absolute);
	atm_emu_set_measure(NULL);
}

static void test_emulate_unmeasurable_bandwidth(void **state)
{
	(void)state;
	atm_emu_spec s;
	char note[1024];
	/* the measurement fails: an error naming the spec, no fallback to absolute rates */
	stub(0);
	assert_int_equal(atm_emu_spec_resolve_scaled("optane", machine_file(), NULL, &s, NULL, 0),
	                 ATM_E_UNSUPPORTED);
	has("--emulate optane");
	has("could not be measured");
	has("optane:absolute");
	/* a corrupt kept bandwidth, or one of another machine: measured again, with a note */
	static const char *const kept[] = {
		"{\"format\": \"autotm-machine\", \"version\": 1, \"bandwidth\": {\"other cpu|64\": "
		"{\"copy_gbps\": 300}}}",
		"{\"format\": \"autotm-machine\", \"version\": 1, \"bandwidth\": 7}",
		"{\"format\": \"autotm-machine\", \"version\": 1, \"bandwidth\": {}}",
		"not json",
	};
	for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
		assert_int_equal(atm_write_file_atomic(machine_file(), kept[i], strlen(kept[i])), ATM_OK);
		stub(40);
		assert_int_equal(atm_emu_spec_resolve_scaled("optane", machine_file(), NULL, &s, note,
		                                             sizeof note), ATM_OK);
		assert_int_equal(stub_calls, 1);
		assert_float_equal(s.scale, 0.4, 1e-12);
		assert_non_null(strstr(note, "measured now"));
	}
	/* an entry of this machine that is corrupt: measured again, the note says why */
	char cpu[256], text[1024];
	atm_cpu_model(cpu, sizeof cpu);
	snprintf(text, sizeof text, "{\"format\": \"autotm-machine\", \"version\": 1, "
	         "\"bandwidth\": {\"%s|%d\": {\"copy_gbps\": -3}}}", cpu, atm_emu_test_threads());
	assert_int_equal(atm_write_file_atomic(machine_file(), text, strlen(text)), ATM_OK);
	stub(40);
	assert_int_equal(atm_emu_spec_resolve_scaled("optane", machine_file(), NULL, &s, note,
	                                             sizeof note), ATM_OK);
	assert_int_equal(stub_calls, 1);
	assert_non_null(strstr(note, "unusable"));
	atm_emu_set_measure(NULL);
}

/* racing_measure -- the streaming copy, while another process keeps its own measurement of
 * this machine (30 GB/s) in the machine file: this one measures 40 */
static double racing_measure(void)
{
	char cpu[256], text[1024];
	atm_cpu_model(cpu, sizeof cpu);
	snprintf(text, sizeof text, "{\"format\": \"autotm-machine\", \"version\": 1, "
	         "\"bandwidth\": {\"%s|%d\": {\"copy_gbps\": 30, \"measured_at\": "
	         "\"2026-01-02T03:04:05Z\"}}}", cpu, atm_emu_test_threads());
	assert_int_equal(atm_write_file_atomic(machine_file(), text, strlen(text)), ATM_OK);
	stub_calls++;
	return 40;
}

/* test_emulate_first_kept_bandwidth_wins -- two processes that measure the machine at once
 * both use the measurement kept first, so that their emulations scale alike and their profiles
 * key to one machine */
static void test_emulate_first_kept_bandwidth_wins(void **state)
{
	(void)state;
	atm_emu_spec s;
	char note[1024];
	stub(0);
	atm_emu_set_measure(racing_measure);
	assert_int_equal(atm_emu_spec_resolve_scaled("optane", machine_file(), NULL, &s, note,
	                                             sizeof note), ATM_OK);
	assert_int_equal(stub_calls, 1);
	assert_float_equal(s.machine_gbps, 30, 1e-12);
	assert_float_equal(s.scale, 0.3, 1e-12);
	assert_non_null(strstr(note, "measured 2026-01-02T03:04:05Z by another process"));
	assert_non_null(strstr(note, "this one measured 40.0"));
	/* the file keeps the first one */
	stub(50);
	assert_int_equal(atm_emu_spec_resolve_scaled("optane", machine_file(), NULL, &s, NULL, 0),
	                 ATM_OK);
	assert_int_equal(stub_calls, 0);
	assert_float_equal(s.machine_gbps, 30, 1e-12);
	atm_emu_set_measure(NULL);
}

static void test_emulate_measured_bandwidth_is_real(void **state)
{
	(void)state;
	double gbps = 0;
	char note[1024];
	/* the real streaming copy, nothing kept: a bandwidth a memory can have */
	atm_emu_set_measure(NULL);
	assert_int_equal(atm_emu_machine_gbps("", NULL, &gbps, note, sizeof note), ATM_OK);
	assert_true(gbps > 0.5 && gbps < ATM_EMU_MAX_GBPS);
	assert_non_null(strstr(note, "nowhere to keep it"));
	/* stopped before it starts: interrupted, nothing known */
	volatile sig_atomic_t stop = 1;
	atm_emu_set_measure(NULL);
	assert_int_equal(atm_emu_machine_gbps("", &stop, &gbps, NULL, 0), ATM_E_INTERRUPTED);
	assert_false(atm_emu_machine_known(&gbps));
	atm_emu_set_measure(NULL);
}

/* emulation_of -- the emulation key a CPU backend emulating tierspec gives its timings, on a
 * machine that streams gbps */
static void emulation_of(const char *tierspec, double gbps, char *key, size_t len)
{
	atm_backend_opts o = {.emulate = tierspec};
	atm_backend *b = NULL;
	atm_profile_machine m;
	o.tiers.pmem_dir = tmp;
	stub(gbps);
	if (atm_backend_cpu_new(&b, &o) < 0)
		fail_msg("%s", atm_errmsg());
	b->iface->machine(b, &m);
	snprintf(key, len, "%s", m.emulation);
	atm_backend_destroy(b);
	atm_emu_set_measure(NULL);
}

static void test_emulate_profiles_never_mix(void **state)
{
	(void)state;
	char a[64], b[64], c[64], d[64];
	setenv("AUTOTM_MACHINE_FILE", "none", 1);
	/* the same preset scaled to two machines, and its absolute form: three keys, so that a
	 * profile cache never serves one emulation's timings to another */
	emulation_of("optane", 25, a, sizeof a);
	emulation_of("optane", 50, b, sizeof b);
	emulation_of("optane:absolute", 25, c, sizeof c);
	emulation_of("optane", 25, d, sizeof d);
	unsetenv("AUTOTM_MACHINE_FILE");
	assert_string_not_equal(a, b);
	assert_string_not_equal(a, c);
	assert_string_not_equal(b, c);
	assert_string_equal(a, d); /* the same machine, the same key */
	assert_string_equal(c, "optane"); /* the absolute form keeps the key of earlier caches */
	assert_non_null(strstr(a, "optane"));
}

/* ---------------------------------------------------------------- spec files */

static void test_emulate_spec_file_parses(void **state)
{
	(void)state;
	atm_emu_spec s;
	const char *path = write_spec("mine.json", "{\"name\": \"lab-cxl\", \"read_gbps\": 21.5, "
	                                           "\"write_gbps\": 18, \"latency_ns\": 271,\n"
	                                           " \"source\": \"Intel MLC on box 7\"}");
	assert_int_equal(atm_emu_spec_load(path, &s), ATM_OK);
	assert_string_equal(s.name, "lab-cxl");
	assert_float_equal(s.read_gbps, 21.5, 0);
	assert_float_equal(s.write_gbps, 18, 0);
	assert_float_equal(s.latency_ns, 271, 0);
	assert_string_equal(s.source, "Intel MLC on box 7");
	/* without a source, the file is the source */
	path = write_spec("plain.json", "{\"name\": \"x\", \"read_gbps\": 1e1, \"write_gbps\": 5, "
	                                "\"latency_ns\": 500}");
	assert_int_equal(atm_emu_spec_resolve(path, &s), ATM_OK);
	assert_string_equal(s.source, path);
	assert_float_equal(s.read_gbps, 10, 0);
	/* a bare preset name resolves to the preset */
	assert_int_equal(atm_emu_spec_resolve("cxl", &s), ATM_OK);
	assert_string_equal(s.name, "cxl");
}

static void test_emulate_spec_rejects_nonsense(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		const char *field; /* the message names it */
		const char *what;  /* and says what is wrong */
	} bad[] = {
		{"{\"name\":\"x\",\"read_gbps\":-3,\"write_gbps\":1,\"latency_ns\":100}", "'read_gbps'",
		 "must be above 0"},
		{"{\"name\":\"x\",\"read_gbps\":3,\"write_gbps\":0,\"latency_ns\":100}", "'write_gbps'",
		 "must be above 0"},
		{"{\"name\":\"x\",\"read_gbps\":3,\"write_gbps\":-0.0,\"latency_ns\":100}", "'write_gbps'",
		 "must be above 0"},
		{"{\"name\":\"x\",\"read_gbps\":NaN,\"write_gbps\":1,\"latency_ns\":100}", "'read_gbps'",
		 "finite"},
		{"{\"name\":\"x\",\"read_gbps\":3,\"write_gbps\":Infinity,\"latency_ns\":100}",
		 "'write_gbps'", "finite"},
		{"{\"name\":\"x\",\"read_gbps\":3,\"write_gbps\":1,\"latency_ns\":1e999}", "'latency_ns'",
		 "overflow"},
		{"{\"name\":\"x\",\"read_gbps\":1e6,\"write_gbps\":1,\"latency_ns\":100}", "'read_gbps'",
		 "is not a memory"},
		{"{\"name\":\"x\",\"read_gbps\":1e-12,\"write_gbps\":1,\"latency_ns\":100}",
		 "'read_gbps'", "is not a memory (at least 0.001)"},
		{"{\"name\":\"x\",\"read_gbps\":1,\"write_gbps\":1e-300,\"latency_ns\":100}",
		 "'write_gbps'", "is not a memory (at least 0.001)"},
		{"{\"name\":\"x\",\"read_gbps\":3,\"write_gbps\":1,\"latency_ns\":5e9}", "'latency_ns'",
		 "is not a memory"},
		{"{\"name\":\"x\",\"read_gbps\":3,\"write_gbps\":1}", "'latency_ns'", "missing field"},
		{"{\"read_gbps\":3,\"write_gbps\":1,\"latency_ns\":100}", "'name'", "missing field"},
		{"{\"name\":\"x\",\"read_gbps\":\"29\",\"write_gbps\":1,\"latency_ns\":100}", "'read_gbps'",
		 "must be a number (GB/s), not a string"},
		{"{\"name\":\"x\",\"read_gbps\":3,\"write_gbps\":true,\"latency_ns\":100}", "'write_gbps'",
		 "not a boolean"},
		{"{\"name\":\"x\",\"read_gbps\":3,\"write_gbps\":1,\"latency_ns\":null}", "'latency_ns'",
		 "not null"},
		{"{\"name\":\"x\",\"read_gbps\":[3],\"write_gbps\":1,\"latency_ns\":100}", "'read_gbps'",
		 "not an array"},
		{"{\"name\":5,\"read_gbps\":3,\"write_gbps\":1,\"latency_ns\":100}", "'name'",
		 "must be a string, not a number"},
		{"{\"name\":\"\",\"read_gbps\":3,\"write_gbps\":1,\"latency_ns\":100}", "'name'",
		 "1 to 31 characters"},
		{"{\"name\":\"a-name-much-longer-than-thirty-one-chars\",\"read_gbps\":3,\"write_gbps\":1,"
		 "\"latency_ns\":100}",
		 "'name'", "1 to 31 characters"},
		{"{\"name\":\"x\",\"read_gpbs\":3,\"write_gbps\":1,\"latency_ns\":100}", "'read_gpbs'",
		 "unknown field"},
		{"{\"name\":\"x\",\"read_gbps\":3,\"read_gbps\":4,\"write_gbps\":1,\"latency_ns\":100}",
		 "read_gbps", "duplicate"},
		/* a key repeated after another field is named, not the field before it */
		{"{\"name\":\"x\",\"read_gbps\":3,\"write_gbps\":1,\"latency_ns\":100,\"read_gbps\":4}",
		 ":1:69: duplicate object key near '\"read_gbps\"'", "duplicate"},
		{"[29, 12, 305]", "tier spec is a JSON object", "not an array"},
		{"", "", "'[' or '{' expected"},
	};
	char name[32];
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		atm_emu_spec s;
		s.read_gbps = 7;
		snprintf(name, sizeof name, "bad%zu.json", i);
		const char *path = write_spec(name, bad[i].json);
		atm_status rc = atm_emu_spec_load(path, &s);
		if (rc != ATM_E_INPUT)
			fail_msg("case %zu (%s): status %d, message \"%s\"", i, bad[i].json, rc, atm_errmsg());
		if (!strstr(atm_errmsg(), path) || !strstr(atm_errmsg(), bad[i].field) ||
		    !strstr(atm_errmsg(), bad[i].what))
			fail_msg("case %zu (%s): message \"%s\" should name the file, %s and say \"%s\"", i,
			         bad[i].json, atm_errmsg(), bad[i].field, bad[i].what);
		assert_float_equal(s.read_gbps, 0, 0);
	}
}

static void test_emulate_spec_missing_file_is_io(void **state)
{
	(void)state;
	atm_emu_spec s;
	char path[256];
	snprintf(path, sizeof path, "%s/none.json", tmp);
	assert_int_equal(atm_emu_spec_load(path, &s), ATM_E_NOTFOUND);
	has("tier spec: ");
	has(path);
	assert_int_equal(atm_emu_spec_resolve(path, &s), ATM_E_NOTFOUND);
}

/* ---------------------------------------------------------------- labels */

static void test_emulate_tier_is_labelled(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *slow = NULL;
	atm_emu_spec s;
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	atm_tier_opts o = {.slow = "pmem-dir", .pmem_dir = tmp};
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_OK);
	assert_false(atm_tier_describe(slow)->emulated);
	assert_int_equal(atm_emu_preset("optane", &s), ATM_OK);
	assert_int_equal(atm_tier_set_emulation(slow, &s), ATM_OK);
	const atm_tier_desc *d = atm_tier_describe(slow);
	assert_true(d->emulated);
	assert_string_equal(d->emulation, "optane");
	assert_int_equal(d->kind, ATM_TIER_PMEM_DIR);
	assert_float_equal(d->read_gbps, 29, 0);
	assert_float_equal(d->write_gbps, 12, 0);
	assert_float_equal(d->latency_ns, 305, 0);
	assert_non_null(strstr(d->name, "pmem dir"));
	assert_non_null(strstr(d->name, " emulating optane"));
	/* a second label replaces the first */
	assert_int_equal(atm_emu_preset("cxl", &s), ATM_OK);
	assert_int_equal(atm_tier_set_emulation(slow, &s), ATM_OK);
	assert_null(strstr(d->name, "optane"));
	assert_non_null(strstr(d->name, " emulating cxl"));
	assert_string_equal(d->emulation, "cxl");
	atm_emu_spec none = {0};
	assert_int_equal(atm_tier_set_emulation(slow, &none), ATM_E_USAGE);
	atm_tier_destroy(slow);
	atm_tier_topo_destroy(topo);
}

/* main -- the emulation suite */
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_emulate_optane_matches_published_numbers),
		cmocka_unit_test(test_emulate_presets_are_sane),
		cmocka_unit_test(test_emulate_unknown_preset),
		cmocka_unit_test(test_emulate_extra_time_arithmetic),
		cmocka_unit_test(test_emulate_extra_never_negative),
		cmocka_unit_test(test_emulate_wait_covers_extra),
		cmocka_unit_test(test_emulate_extremes_do_not_overflow),
		cmocka_unit_test(test_emulate_wait_ends_on_stop),
		cmocka_unit_test(test_emulate_spec_warning),
		cmocka_unit_test(test_emulate_wait_rejects_negative_bytes),
		cmocka_unit_test(test_emulate_new_rejects_bad_input),
		cmocka_unit_test_setup_teardown(test_emulate_fast_bandwidth_sources, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emulate_scale_follows_bandwidth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emulate_absolute_form, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emulate_unmeasurable_bandwidth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emulate_first_kept_bandwidth_wins, setup, teardown),
		cmocka_unit_test(test_emulate_measured_bandwidth_is_real),
		cmocka_unit_test_setup_teardown(test_emulate_profiles_never_mix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emulate_spec_file_parses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emulate_spec_rejects_nonsense, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emulate_spec_missing_file_is_io, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emulate_tier_is_labelled, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
