/* fuzz_tierspec.c -- libFuzzer target: any bytes as a tier spec; what parses is within the bounds of a memory and makes an emulator whose waits are finite */
#include <math.h>

#include "fuzz_common.h"
#include "memory.h"

/* fuzz_tierspec_load -- how the corpus replay asks whether an input is a tier spec */
__attribute__((unused)) static atm_status fuzz_tierspec_load(const char *data, size_t len,
                                                             const char *origin)
{
	atm_emu_spec s;
	return atm_emu_spec_parse(data, len, origin, &s);
}

/* fuzz_tierspec_bounded -- a bandwidth within what a spec may say */
static bool fuzz_tierspec_bounded(double gbps)
{
	return gbps >= ATM_EMU_MIN_GBPS && gbps <= ATM_EMU_MAX_GBPS;
}

/* LLVMFuzzerTestOneInput -- parse; a refusal is an input error naming the file and leaves the
 * spec zeroed; a spec that parses is bounded, named, and its emulator's longest wait finite */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	atm_emu_spec s;
	atm_emu *e = NULL;
	char why[256];
	atm_status rc = atm_emu_spec_parse((const char *)data, size, "fuzz.json", &s);
	if (rc < 0) {
		fuzz_check_refusal("fuzz_tierspec", rc, NULL, "fuzz.json", 1, ATM_E_INPUT);
		if (s.read_gbps != 0 || s.name[0])
			fuzz_die("fuzz_tierspec", "a refused spec was filled in", rc);
		return 0;
	}
	if (!fuzz_tierspec_bounded(s.read_gbps) || !fuzz_tierspec_bounded(s.write_gbps) ||
	    !fuzz_tierspec_bounded(s.fast_gbps) || !(s.latency_ns > 0) ||
	    !(s.latency_ns <= ATM_EMU_MAX_LATENCY_NS))
		fuzz_die("fuzz_tierspec", "a spec out of bounds parsed", rc);
	if (!s.name[0] || strnlen(s.name, sizeof s.name) == sizeof s.name ||
	    strnlen(s.source, sizeof s.source) == sizeof s.source)
		fuzz_die("fuzz_tierspec", "a spec's text fields are not terminated strings", rc);
	if ((rc = atm_emu_new(&e, &s, NULL, s.fast_gbps)) < 0)
		fuzz_die("fuzz_tierspec", "a spec that parsed makes no emulator", rc);
	double x = atm_emu_extra_s(e, ATM_MAX_BYTES, ATM_MAX_BYTES);
	if (!isfinite(x) || x < 0 || x > ATM_EMU_MAX_WAIT_S)
		fuzz_die("fuzz_tierspec", "the longest wait is not a finite time", rc);
	(void)atm_emu_spec_warning(&s, why, sizeof why);
	atm_emu_destroy(e);
	return 0;
}
