/* fuzz_profile.c -- libFuzzer target: any bytes as a profile cache's text; what is read holds only bounded times, and merges into text that reads back */
#include <math.h>

#include "fuzz_common.h"

/* The machine whose section the target reads; the seeds hold sections of it. */
static const atm_profile_machine fuzz_machine = {
	.cpu = "Fuzz CPU", .n_threads = 2, .backend = "cpu-fuzz", .fast_tier = "dram:0",
	.slow_tier = "pmem-dir", .emulation = "optane"};

/* fuzz_profile_load -- how the corpus replay asks whether an input is a profile cache */
__attribute__((unused)) static atm_status fuzz_profile_load(const char *data, size_t len,
                                                            const char *origin)
{
	atm_profile *p = NULL;
	atm_status rc = atm_profile_new(&p, &fuzz_machine, origin);
	if (rc == ATM_OK)
		rc = atm_profile_read_cache(p, data, len, false);
	atm_profile_destroy(p);
	return rc;
}

/* fuzz_profile_bounded -- every entry p has for the fuzz graph, and its moves, within the
 * bounds a profile promises */
static void fuzz_profile_bounded(const atm_profile *p)
{
	const atm_graph *g = fuzz_graph_of_inputs();
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++)
		for (int i = 0; i < atm_node_n_configs(g, k); i++) {
			atm_profile_entry e;
			atm_status rc = atm_profile_get(p, g, k, atm_node_config_at(g, k, i), &e);
			if (rc == ATM_E_NOTFOUND)
				continue;
			if (rc < 0)
				fuzz_die("fuzz_profile", "a look-up failed otherwise than 'not found'", rc);
			if (!(e.min_s >= 0 && e.min_s <= e.median_s && e.median_s <= ATM_PROFILE_MAX_S) ||
			    e.count < 1 || e.scratch_bytes < 0)
				fuzz_die("fuzz_profile", "an entry out of bounds was read", ATM_OK);
		}
	atm_profile_moves mv;
	if (atm_profile_get_moves(p, &mv) == ATM_OK &&
	    !(mv.to_fast_gbps >= ATM_PROFILE_MIN_GBPS && mv.to_fast_gbps <= ATM_PROFILE_MAX_GBPS &&
	      mv.to_slow_gbps >= ATM_PROFILE_MIN_GBPS && mv.to_slow_gbps <= ATM_PROFILE_MAX_GBPS))
		fuzz_die("fuzz_profile", "move bandwidths out of bounds were read", ATM_OK);
	for (unsigned loc = ATM_LOC_FAST; loc <= ATM_LOC_SLOW; loc++) {
		double loss, stretch;
		if (atm_profile_get_moves(p, &mv) < 0)
			break;
		atm_profile_overlap(&mv, loc, &loss, &stretch);
		if (!(loss >= 0 && loss <= 1 && stretch >= 1 && stretch <= ATM_PROFILE_MAX_STRETCH))
			fuzz_die("fuzz_profile", "an overlap out of bounds was read", ATM_OK);
	}
	atm_profile_calibration cal;
	atm_status rc = atm_profile_get_calibration(p, g, &cal);
	if (rc < 0 && rc != ATM_E_NOTFOUND)
		fuzz_die("fuzz_profile", "a calibration look-up failed otherwise than 'not found'", rc);
	if (rc == ATM_OK && (!(cal.step_s > 0 && cal.step_s <= ATM_PROFILE_MAX_S) ||
	                     !atm_utc_valid(cal.measured_at)))
		fuzz_die("fuzz_profile", "a calibration step out of bounds was read", ATM_OK);
}

/* fuzz_profile_merged -- merge one new entry into text for p; the result reads back whole,
 * with every entry p holds; the merged text is returned (caller frees), *out_len bytes */
static char *fuzz_profile_merged(atm_profile *p, const char *text, size_t len, size_t *out_len)
{
	const atm_graph *g = fuzz_graph_of_inputs();
	atm_profile_entry e = {.min_s = 1e-3, .median_s = 2e-3, .count = 3};
	char *out = NULL;
	atm_profile *back = NULL;
	atm_profile_calibration cal = {.step_s = 0.25, .measured_at = "2025-01-31T12:00:00Z"};
	atm_status rc = atm_profile_put(p, g, 0, atm_node_config_at(g, 0, 0), &e);
	if (rc == ATM_OK)
		rc = atm_profile_put_calibration(p, g, &cal);
	if (rc < 0 || (rc = atm_profile_merge_cache(p, text, len, &out, out_len)) < 0)
		fuzz_die("fuzz_profile", "a text that reads does not merge", rc);
	if ((rc = atm_profile_new(&back, &fuzz_machine, "merged.json")) < 0 ||
	    (rc = atm_profile_read_cache(back, out, *out_len, false)) < 0)
		fuzz_die("fuzz_profile", "a merged text does not read back", rc);
	if (atm_profile_n_entries(back) != atm_profile_n_entries(p))
		fuzz_die("fuzz_profile", "a merged text lost or gained entries", ATM_OK);
	fuzz_profile_bounded(back);
	atm_profile_destroy(back);
	return out;
}

/* LLVMFuzzerTestOneInput -- read the fuzz machine's section; a refusal is an input error naming
 * the file that a merge refuses too, and a rebuild gets past; what reads is bounded, merges,
 * and merging the merged text again changes nothing */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	atm_profile *p = NULL;
	char *out = NULL, *again = NULL;
	size_t len = 0, again_len = 0;
	atm_status rc = atm_profile_new(&p, &fuzz_machine, "fuzz.json");
	if (rc < 0)
		fuzz_die("fuzz_profile", "no profile to read into", rc);
	rc = atm_profile_read_cache(p, text, size, false);
	if (rc < 0) {
		fuzz_check_refusal("fuzz_profile", rc, NULL, "fuzz.json", 1, ATM_E_INPUT);
		if (atm_profile_merge_cache(p, text, size, &out, &len) != ATM_E_INPUT || out)
			fuzz_die("fuzz_profile", "a merge took a text the reader refused", rc);
		atm_profile_destroy(p);
		/* a rebuild starts over on purpose: the broken text is dropped whole */
		if ((rc = atm_profile_new(&p, &fuzz_machine, "fuzz.json")) < 0 ||
		    (rc = atm_profile_read_cache(p, text, size, true)) < 0)
			fuzz_die("fuzz_profile", "a rebuild did not get past a broken text", rc);
		free(fuzz_profile_merged(p, text, size, &len));
		atm_profile_destroy(p);
		return 0;
	}
	fuzz_profile_bounded(p);
	out = fuzz_profile_merged(p, text, size, &len);
	atm_profile_saved(p);
	if ((rc = atm_profile_merge_cache(p, out, len, &again, &again_len)) < 0)
		fuzz_die("fuzz_profile", "a merged text does not merge again", rc);
	if (again_len != len || memcmp(out, again, len) != 0)
		fuzz_die("fuzz_profile", "merging a merged text with nothing new changed it", ATM_OK);
	free(again);
	free(out);
	atm_profile_destroy(p);
	return 0;
}
