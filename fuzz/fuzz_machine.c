/* fuzz_machine.c -- libFuzzer target: any bytes as a machine file; a calibration that loads has every rate finite and above 0, a kept bandwidth that loads is one a memory can have, a refusal names the file */
#include <math.h>

#include "atm_profiler.h"
#include "atm_runtime.h"
#include "fuzz_common.h"

/* The machine every seed is read for: the key its entries are found under is
 * "fuzz cpu|2|cpu-onednn|dram:0". */
static const atm_profile_machine fuzz_machine_key = {
	.cpu = "fuzz cpu", .n_threads = 2, .backend = "cpu-onednn", .fast_tier = "dram:0"};

/* fuzz_machine_load -- how the corpus replay asks whether an input is a machine file holding a
 * calibration of the fuzz machine */
__attribute__((unused)) static atm_status fuzz_machine_load(const char *data, size_t len,
                                                            const char *origin)
{
	atm_prof_roofline rf;
	atm_prof_roofline_default(&rf, 2);
	return atm_prof_calibration_parse(origin, data, len, &fuzz_machine_key, &rf);
}

/* LLVMFuzzerTestOneInput -- parse; a refusal is an input error (or no entry for the machine)
 * naming the file and leaves the roofline as it was; a calibration that parses is usable */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	atm_prof_roofline rf, before;
	double gbps = -1;
	char when[ATM_UTC_TEXT_MAX];
	/* the bandwidth proportional emulation keeps, under "CPU|threads" */
	atm_status brc = atm_emu_bandwidth_parse("fuzz.json", (const char *)data, size,
	                                         "fuzz cpu|2", &gbps, when, sizeof when);
	if (brc < 0) {
		fuzz_check_refusal("fuzz_machine", brc, NULL, "fuzz.json", 2, ATM_E_INPUT, ATM_E_NOTFOUND);
		if (gbps != -1)
			fuzz_die("fuzz_machine", "a refused bandwidth was written", brc);
	} else if (!(gbps >= ATM_EMU_MIN_GBPS && gbps <= ATM_EMU_MAX_GBPS) || !when[0])
		fuzz_die("fuzz_machine", "a bandwidth no memory has parsed", brc);
	atm_err_clear();
	atm_prof_roofline_default(&rf, 2);
	before = rf;
	atm_status rc = atm_prof_calibration_parse("fuzz.json", (const char *)data, size,
	                                           &fuzz_machine_key, &rf);
	if (rc < 0) {
		fuzz_check_refusal("fuzz_machine", rc, NULL, "fuzz.json", 2, ATM_E_INPUT, ATM_E_NOTFOUND);
		if (memcmp(&rf, &before, sizeof rf))
			fuzz_die("fuzz_machine", "a refused file changed the roofline", rc);
		return 0;
	}
	if (!rf.calibrated || !(rf.fast_gbps > 0 && isfinite(rf.fast_gbps)) || rf.cache_bytes <= 0)
		fuzz_die("fuzz_machine", "a calibration without its streaming rate or cache parsed", rc);
	for (int op = 0; op < ATM_N_OPS; op++)
		if (!(rf.gflops[op] > 0 && isfinite(rf.gflops[op]) && rf.gbps[op] > 0 &&
		      isfinite(rf.gbps[op]) && rf.overhead_s[op] > 0 && isfinite(rf.overhead_s[op])))
			fuzz_die("fuzz_machine", "a calibration with a rate not above 0 parsed", rc);
	return 0;
}
