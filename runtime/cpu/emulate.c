/* emulate.c -- make a slow tier that is really DRAM behave like Optane, CXL or a far socket */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <omp.h>

#include "memory.h"

/* The presets. Each number's source is in the comment above it and in
 * docs/tiers.md; a spec measured on your own machine goes in a JSON file. The memories
 * (optane, cxl, numa) are proportional by default: their rates are scaled by this machine's
 * bandwidth over fast_gbps. A GPU's host link is what it is: absolute. */
static const atm_emu_spec presets[] = {
	/* Optane DC PMM in App Direct mode, 6 interleaved DIMMs per socket (the
	 * AutoTM machine). read/write: the synchronous copy bandwidths AutoTM's cost
	 * model uses, cpu_pmem_dram_sync = 29000 MB/s and cpu_dram_pmem_sync =
	 * 12000 MB/s (darchr/AutoTM, optimizer BANDWIDTHS table); they sit below
	 * the device maxima Izraelevitz et al. measured ("Basic Performance
	 * Measurements of the Intel Optane DC Persistent Memory Module", arXiv
	 * 1903.05714, 2019: 39.4 GB/s read, 13.9 GB/s write for six DIMMs), as a
	 * copy that also touches DRAM should. latency: idle random read, 305 ns
	 * (Izraelevitz et al. 2019; Yang et al., "An Empirical Guide to the
	 * Behavior and Use of Scalable Persistent Memory", FAST '20), about 3x DRAM. */
	{"optane", 29.0, 12.0, 305.0, ATM_EMU_REFERENCE_FAST_GBPS,
	 "AutoTM cost model (29/12 GB/s sync copies); Izraelevitz et al. 2019 and Yang et al. "
	 "FAST'20 (39.4/13.9 GB/s device maxima, 305 ns random read)",
	 .absolute = false},
	/* A CXL Type-3 DRAM expander on a PCIe 5.0 x8 link. read: the link carries
	 * 32 GT/s x 8 lanes x 128/130 = 31.5 GB/s each way; at the ~80% CXL.mem
	 * flit efficiency that leaves ~25 GB/s. write: 20 GB/s, an assumption
	 * (writes need completions back and ran below reads on early devices).
	 * latency: 250 ns, about twice a local DDR5 load (~110-120 ns on Sapphire
	 * Rapids), the low end of the 2-5x Liu et al. measured on three commercial
	 * expanders ("Exploring and Evaluating Real-world CXL", arXiv 2405.14209)
	 * and in line with Sun et al. ("Demystifying CXL Memory with Genuine
	 * CXL-Ready Systems and Devices", MICRO '23). An estimate: measure yours.
	 * fast: the local DDR5 beside it, 8 channels of DDR5-4800 (307 GB/s peak),
	 * about 250 GB/s reached. */
	{"cxl", 25.0, 20.0, 250.0, 250.0,
	 "PCIe 5.0 x8 link arithmetic (31.5 GB/s/direction, ~80% CXL.mem efficiency); latency ~2x "
	 "local DDR5 (Sun et al. MICRO'23; Liu et al. arXiv 2405.14209); estimate",
	 .absolute = false},
	/* The other socket of a 2-socket Cascade Lake (the AutoTM machine's CPU).
	 * read/write: three UPI links at 10.4 GT/s carry 62.4 GB/s in all (NASA
	 * HECC, "Cascade Lake Processors"); remote streams reach roughly half of
	 * that, 34 GB/s read and 30 GB/s write. latency: 140 ns, the usual Intel
	 * MLC remote figure on 2-socket Xeon SP next to ~85 ns local. An estimate
	 * from link arithmetic and typical MLC output: measure yours with MLC. */
	{"numa", 34.0, 30.0, 140.0, ATM_EMU_REFERENCE_FAST_GBPS,
	 "2-socket Cascade Lake: 3 UPI links, 62.4 GB/s peak (NASA HECC); ~half reached by remote "
	 "streams; ~140 ns remote load (Intel MLC, typical); estimate",
	 .absolute = false},
	/* Host links of a GPU: the simulated GPU's copies (--gpu=sim --gpu-link),
	 * read = host to device, write = device to host, fast = the GPU's own
	 * memory beside them. latency: a small copy's round trip, reported only.
	 * pcie4: PCIe 4.0 x16 carries 16 GT/s x 16 lanes x 128/130 = 31.5 GB/s
	 * each way; pinned cudaMemcpy reaches about 25 GB/s on A100 PCIe
	 * machines; fast: an A100 40GB's HBM2, 1555 GB/s (NVIDIA datasheet). */
	{"pcie4", 25.0, 25.0, 1000.0, 1555.0,
	 "PCIe 4.0 x16 link arithmetic (31.5 GB/s/direction), ~25 GB/s pinned copies; A100 HBM2 "
	 "1555 GB/s (NVIDIA datasheet); estimate",
	 .absolute = true},
	/* pcie5: PCIe 5.0 x16, 63 GB/s each way on paper; pinned copies on an
	 * H100 80GB HBM3 (SXM) measured by autotm's GPU backend (docs/gpu.md);
	 * fast: that H100's HBM3, 3350 GB/s (NVIDIA datasheet). */
	{"pcie5", 55.0, 55.0, 1000.0, 3350.0,
	 "PCIe 5.0 x16 (63 GB/s/direction on paper); pinned copies measured on an H100 SXM "
	 "(docs/gpu.md); H100 HBM3 3350 GB/s (NVIDIA datasheet)",
	 .absolute = true},
	/* nvlink-c2c: Grace Hopper's chip-to-chip link, 900 GB/s both ways
	 * together (NVIDIA GH200 datasheet), 450 GB/s each way on paper; host
	 * to device copies reach roughly 85% of that. fast: GH200's HBM3, 4000
	 * GB/s. An estimate from the datasheet: measure yours. */
	{"nvlink-c2c", 380.0, 380.0, 800.0, 4000.0,
	 "NVLink-C2C (GH200 datasheet: 900 GB/s bidirectional), ~85% of 450 GB/s/direction; "
	 "GH200 HBM3 4000 GB/s; estimate",
	 .absolute = true},
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

/* Below this the wait only spins: a sleep wakes tens of microseconds late
 * (timer slack, scheduling), so it ends this far before the deadline. */
#define SPIN_NS 200000

struct atm_emu {
	atm_emu_spec spec;
	double fast_gbps;
	const char *fast_source;
	_Atomic int64_t waited_ns; /* the mover thread and the executor both wait */
	volatile sig_atomic_t *stop;
};

/* atm_emu_preset -- copy a preset */
atm_status atm_emu_preset(const char *name, atm_emu_spec *out)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < N_PRESETS; i++)
		if (strcmp(name, presets[i].name) == 0) {
			*out = presets[i];
			return ATM_OK;
		}
	return atm_err(ATM_E_USAGE,
	               "unknown emulation preset '%s' (valid: optane, cxl, numa, pcie4, pcie5, "
	               "nvlink-c2c, or the path of a JSON tier spec; either may end in ':absolute' "
	               "or ':proportional', the default)",
	               name);
}

/* field_near -- the last "key": before offset pos of text, so that a parse
 * error (NaN, 1e999) can still name the field it sits in */
static void field_near(const char *text, size_t len, size_t pos, char *field, size_t flen)
{
	field[0] = '\0';
	if (pos > len)
		pos = len;
	for (size_t i = pos; i-- > 0;) {
		if (text[i] != ':')
			continue;
		size_t j = i;
		while (j > 0 && (text[j - 1] == ' ' || text[j - 1] == '\t' || text[j - 1] == '\n' ||
		                 text[j - 1] == '\r'))
			j--;
		if (j == 0 || text[j - 1] != '"')
			return;
		size_t end = j - 1, start = end;
		while (start > 0 && text[start - 1] != '"')
			start--;
		if (start == 0 || end - start >= flen)
			return;
		memcpy(field, text + start, end - start);
		field[end - start] = '\0';
		return;
	}
}

/* get_number -- a required field in [min, max] (min 0: above 0) */
static atm_status get_number(json_t *root, const char *origin, const char *key, const char *unit,
                             double min, double max, double *out)
{
	json_t *v = json_object_get(root, key);
	if (!v)
		return atm_err(ATM_E_INPUT, "%s: missing field '%s' (%s)", origin, key, unit);
	if (!json_is_number(v))
		return atm_err(ATM_E_INPUT, "%s: field '%s' must be a number (%s), not %s", origin, key,
		               unit, atm_json_type_name(v));
	double x = json_number_value(v);
	if (!isfinite(x) || x <= 0)
		return atm_err(ATM_E_INPUT, "%s: field '%s' must be above 0 %s, not %g", origin, key, unit, x);
	if (x < min)
		return atm_err(ATM_E_INPUT, "%s: field '%s' = %g %s is not a memory (at least %g)", origin,
		               key, x, unit, min);
	if (x > max)
		return atm_err(ATM_E_INPUT, "%s: field '%s' = %g %s is not a memory (at most %g)", origin,
		               key, x, unit, max);
	*out = x;
	return ATM_OK;
}

/* get_text -- an optional (or required) string field into buf */
static atm_status get_text(json_t *root, const char *origin, const char *key, bool required,
                           char *buf, size_t len)
{
	json_t *v = json_object_get(root, key);
	if (!v) {
		if (required)
			return atm_err(ATM_E_INPUT, "%s: missing field '%s'", origin, key);
		return ATM_OK;
	}
	if (!json_is_string(v))
		return atm_err(ATM_E_INPUT, "%s: field '%s' must be a string, not %s", origin, key,
		               atm_json_type_name(v));
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (n == 0 || n >= len)
		return atm_err(ATM_E_INPUT, "%s: field '%s' must have 1 to %zu characters", origin, key,
		               len - 1);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20)
			return atm_err(ATM_E_INPUT, "%s: field '%s' has a control character", origin, key);
	memcpy(buf, s, n + 1);
	return ATM_OK;
}

/* atm_emu_spec_parse -- a tier spec from JSON text, every field checked */
atm_status atm_emu_spec_parse(const char *text, size_t len, const char *origin, atm_emu_spec *out)
{
	static const char *const known[] = {"name", "read_gbps", "write_gbps", "latency_ns",
	                                    "fast_gbps", "rates", "source", NULL};
	atm_status rc = ATM_OK;
	json_error_t jerr;
	atm_emu_spec s;
	memset(&s, 0, sizeof s);
	memset(out, 0, sizeof *out);
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		char field[32];
		field_near(text, len, (size_t)jerr.position, field, sizeof field);
		/* NaN, Infinity and 1e999 stop the parser, so say what a number must be */
		enum json_error_code code = json_error_code(&jerr);
		bool number = code == json_error_invalid_syntax || code == json_error_numeric_overflow;
		/* jansson stops just after a duplicated key, before its colon: the key itself, not
		 * the field before it, is the one to name */
		if (code == json_error_duplicate_key)
			return atm_err(ATM_E_INPUT, "%s:%d:%d: %s", origin, jerr.line, jerr.column,
			               jerr.text);
		if (field[0])
			return atm_err(ATM_E_INPUT, "%s:%d:%d: field '%s': %s%s", origin, jerr.line,
			               jerr.column, field, jerr.text,
			               number ? " (numbers must be finite JSON numbers)" : "");
		return atm_err(ATM_E_INPUT, "%s:%d:%d: %s", origin, jerr.line, jerr.column, jerr.text);
	}
	if (!json_is_object(root)) {
		rc = atm_err(ATM_E_INPUT,
		             "%s: a tier spec is a JSON object {\"name\", \"read_gbps\", \"write_gbps\", "
		             "\"latency_ns\"}, not %s",
		             origin, atm_json_type_name(root));
		goto fail;
	}
	char valid[128];
	const char *key = atm_json_unknown_key(root, known, valid, sizeof valid);
	if (key) {
		rc = atm_err(ATM_E_INPUT, "%s: unknown field '%s' (valid: %s)", origin, key, valid);
		goto fail;
	}
	if ((rc = get_text(root, origin, "name", true, s.name, sizeof s.name)) < 0 ||
	    (rc = get_number(root, origin, "read_gbps", "GB/s", ATM_EMU_MIN_GBPS, ATM_EMU_MAX_GBPS,
	                     &s.read_gbps)) < 0 ||
	    (rc = get_number(root, origin, "write_gbps", "GB/s", ATM_EMU_MIN_GBPS, ATM_EMU_MAX_GBPS,
	                     &s.write_gbps)) < 0 ||
	    (rc = get_number(root, origin, "latency_ns", "ns", 0, ATM_EMU_MAX_LATENCY_NS,
	                     &s.latency_ns)) < 0 ||
	    (rc = get_text(root, origin, "source", false, s.source, sizeof s.source)) < 0)
		goto fail;
	if (json_object_get(root, "fast_gbps") &&
	    (rc = get_number(root, origin, "fast_gbps", "GB/s", ATM_EMU_MIN_GBPS, ATM_EMU_MAX_GBPS,
	                     &s.fast_gbps)) < 0)
		goto fail;
	if (!s.fast_gbps)
		s.fast_gbps = ATM_EMU_REFERENCE_FAST_GBPS;
	char rates[16] = "";
	if ((rc = get_text(root, origin, "rates", false, rates, sizeof rates)) < 0)
		goto fail;
	if (rates[0] && strcmp(rates, "absolute") && strcmp(rates, "proportional")) {
		rc = atm_err(ATM_E_INPUT, "%s: field 'rates' is \"%s\" (valid: \"proportional\", the "
		             "default, or \"absolute\")", origin, rates);
		goto fail;
	}
	s.absolute = !strcmp(rates, "absolute");
	if (!s.source[0])
		snprintf(s.source, sizeof s.source, "%s", origin);
	json_decref(root);
	*out = s;
	return ATM_OK;
fail:
	json_decref(root);
	return rc;
}

/* atm_emu_spec_load -- a tier spec file */
atm_status atm_emu_spec_load(const char *path, atm_emu_spec *out)
{
	char *text = NULL;
	size_t len = 0;
	atm_status rc;
	memset(out, 0, sizeof *out);
	if ((rc = atm_read_file_max(path, ATM_TIERSPEC_MAX_BYTES, "tier spec", &text, &len)) < 0)
		return atm_err_prefix(rc, "tier spec: ");
	rc = atm_emu_spec_parse(text, len, path, out);
	free(text);
	return rc;
}

/* split_rates -- tierspec less a ":absolute" or ":proportional" suffix into buf; the suffix's
 * choice in *absolute (-1: none given) */
static atm_status split_rates(const char *tierspec, char *buf, size_t len, int *absolute)
{
	static const char *const forms[] = {":absolute", ":proportional"};
	size_t n = strlen(tierspec);
	*absolute = -1;
	for (int i = 0; i < 2; i++) {
		size_t k = strlen(forms[i]);
		if (n > k && !strcmp(tierspec + n - k, forms[i])) {
			*absolute = i == 0;
			n -= k;
		}
	}
	if (n >= len)
		return atm_err(ATM_E_USAGE, "--emulate: '%.64s...' is too long", tierspec);
	/* one form at most: a second suffix is named as such, not as an unknown preset */
	for (int i = 0; *absolute >= 0 && i < 2; i++) {
		size_t k = strlen(forms[i]);
		if (n > k && !strncmp(tierspec + n - k, forms[i], k))
			return atm_err(ATM_E_USAGE, "'%.200s' gives the rates' form twice; give "
			               "one at most: '%.*s:absolute' or '%.*s:proportional' (the default)",
			               tierspec, (int)(n - k), tierspec, (int)(n - k), tierspec);
	}
	memcpy(buf, tierspec, n);
	buf[n] = '\0';
	return ATM_OK;
}

/* is_file -- a spec file's path, not a preset's name */
static bool is_file(const char *name)
{
	size_t n = strlen(name);
	return strchr(name, '/') || (n > 5 && strcmp(name + n - 5, ".json") == 0);
}

/* atm_emu_spec_resolve -- a preset name or a spec file's path, with its rates' form */
atm_status atm_emu_spec_resolve(const char *tierspec, atm_emu_spec *out)
{
	char name[4096];
	int absolute;
	atm_status rc = split_rates(tierspec, name, sizeof name, &absolute);
	if (rc >= 0)
		rc = is_file(name) ? atm_emu_spec_load(name, out) : atm_emu_preset(name, out);
	if (rc < 0)
		return rc;
	if (absolute >= 0)
		out->absolute = absolute;
	out->reference_gbps = out->fast_gbps;
	out->scale = out->absolute ? 1 : 0;
	return ATM_OK;
}

bool atm_emu_is_preset(const char *tierspec)
{
	char name[64];
	int absolute;
	atm_emu_spec spec;
	bool yes = split_rates(tierspec, name, sizeof name, &absolute) >= 0 && !is_file(name) &&
	           atm_emu_preset(name, &spec) >= 0;
	atm_err_clear();
	return yes;
}

atm_status atm_emu_spec_scale(atm_emu_spec *spec, double machine_gbps)
{
	if (spec->absolute) {
		spec->scale = 1;
		return ATM_OK;
	}
	if (!(machine_gbps >= ATM_EMU_MIN_GBPS && machine_gbps <= ATM_EMU_MAX_GBPS))
		return atm_err(ATM_E_USAGE, "tier spec '%s': this machine's bandwidth %g GB/s cannot "
		               "scale it (valid: %g to %g GB/s)", spec->name, machine_gbps,
		               ATM_EMU_MIN_GBPS, ATM_EMU_MAX_GBPS);
	double ref = spec->reference_gbps > 0 ? spec->reference_gbps
	             : spec->fast_gbps > 0    ? spec->fast_gbps
	                                      : ATM_EMU_REFERENCE_FAST_GBPS;
	spec->reference_gbps = ref;
	spec->scale = machine_gbps / ref;
	spec->read_gbps = fmax(spec->read_gbps * spec->scale, ATM_EMU_MIN_GBPS);
	spec->write_gbps = fmax(spec->write_gbps * spec->scale, ATM_EMU_MIN_GBPS);
	spec->fast_gbps = machine_gbps;
	spec->machine_gbps = machine_gbps;
	return ATM_OK;
}

/* atm_emu_spec_warning -- the slow tier no slower than the fast one: emulation adds nothing */
bool atm_emu_spec_warning(const atm_emu_spec *spec, char *buf, size_t len)
{
	double fast = spec->fast_gbps > 0 ? spec->fast_gbps : ATM_EMU_REFERENCE_FAST_GBPS;
	if (spec->read_gbps < fast || spec->write_gbps < fast)
		return false;
	snprintf(buf, len, "tier spec '%s': its slow tier (read %g, write %g GB/s) is no slower "
	         "than its fast tier (%g GB/s), so emulating it adds no time", spec->name,
	         spec->read_gbps, spec->write_gbps, fast);
	return true;
}

/* now_ns -- CLOCK_MONOTONIC in nanoseconds */
static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* measure_memcpy_gbps -- one thread's copy bandwidth, best of three 64 MiB
 * copies (larger than the last-level caches this runs on); 0 on failure */
static double measure_memcpy_gbps(void)
{
	const size_t n = (size_t)64 << 20;
	char *a = malloc(n), *b = malloc(n);
	double best = 0;
	if (!a || !b)
		goto done;
	/* touch every page first: the first copy would otherwise time page faults */
	memset(a, 1, n);
	memset(b, 0, n);
	for (int rep = 0; rep < 3; rep++) {
		int64_t t0 = now_ns();
		memcpy(b, a, n);
		double dt = (double)(now_ns() - t0) * 1e-9;
		if (dt > 0 && (double)n / dt / 1e9 > best)
			best = (double)n / dt / 1e9;
	}
	/* use the copy so it cannot be optimized away */
	if (((volatile char *)b)[n - 1] != 1)
		best = 0;
done:
	free(a);
	free(b);
	return best;
}

/* ---------------------------------------------------------------- this machine's bandwidth */

/* The streaming copy's operands: each this large (beyond the last-level caches of the
 * machines autotm runs on), or STREAM_SMALL when memory is short. */
#define STREAM_BYTES ((size_t)256 << 20)
#define STREAM_SMALL ((size_t)64 << 20)
#define STREAM_REPS 5
#define STREAM_CHUNK ((size_t)1 << 20)

static double (*measure_hook)(void);
static double known_gbps; /* measured or read once, for the process */
static char known_note[8192];

/* stream_gbps -- a copy on OpenMP's threads, as the kernels run: bytes read and written per
 * second, the best of STREAM_REPS; 0 when it cannot run, -1 when stopped */
static double stream_gbps(volatile sig_atomic_t *stop)
{
	int64_t avail = atm_mem_available_bytes();
	size_t n = avail < 0 || avail > (int64_t)(8 * STREAM_BYTES) ? STREAM_BYTES : STREAM_SMALL;
	char *a = malloc(n), *b = malloc(n);
	double best = 0;
	long chunks = (long)(n / STREAM_CHUNK);
	if (!a || !b)
		goto done;
	/* first touch on the threads that copy, so that pages sit where they run */
#pragma omp parallel for schedule(static)
	for (long i = 0; i < chunks; i++) {
		memset(a + (size_t)i * STREAM_CHUNK, 1, STREAM_CHUNK);
		memset(b + (size_t)i * STREAM_CHUNK, 0, STREAM_CHUNK);
	}
	for (int rep = 0; rep < STREAM_REPS; rep++) {
		if (stop && *stop) {
			best = -1;
			break;
		}
		int64_t t0 = now_ns();
#pragma omp parallel for schedule(static)
		for (long i = 0; i < chunks; i++)
			memcpy(b + (size_t)i * STREAM_CHUNK, a + (size_t)i * STREAM_CHUNK, STREAM_CHUNK);
		double dt = (double)(now_ns() - t0) * 1e-9;
		if (dt > 0 && 2.0 * (double)n / dt / 1e9 > best)
			best = 2.0 * (double)n / dt / 1e9;
	}
	if (best > 0 && ((volatile char *)b)[n - 1] != 1)
		best = 0;
done:
	free(a);
	free(b);
	return best;
}

/* bandwidth_key -- "CPU|threads": what the copy's bandwidth depends on */
static void bandwidth_key(char *key, size_t len)
{
	char cpu[256];
	atm_cpu_model(cpu, sizeof cpu);
	snprintf(key, len, "%s|%d", cpu, omp_get_max_threads());
}

/* entry_gbps -- a kept bandwidth's copy_gbps and measured_at (when "?" without one); false when
 * it is no usable bandwidth */
static bool entry_gbps(const json_t *e, double *gbps, char *when, size_t when_len)
{
	const json_t *g = json_object_get(e, "copy_gbps"), *at = json_object_get(e, "measured_at");
	double x = json_is_number(g) ? json_number_value(g) : NAN;
	if (!json_is_object(e) || !(x >= ATM_EMU_MIN_GBPS && x <= ATM_EMU_MAX_GBPS))
		return false;
	*gbps = x;
	if (when_len)
		snprintf(when, when_len, "%s", json_is_string(at) ? json_string_value(at) : "?");
	return true;
}

atm_status atm_emu_bandwidth_parse(const char *path, const char *text, size_t len,
                                   const char *key, double *gbps, char *when, size_t when_len)
{
	json_t *root = NULL, *sec = NULL;
	atm_status rc = atm_machine_file_section(path, text, len, "bandwidth", &root, &sec);
	if (when_len)
		when[0] = '\0';
	if (rc >= 0) {
		const json_t *e = json_object_get(sec, key);
		if (!e)
			rc = atm_err(ATM_E_NOTFOUND, "%s holds no bandwidth of this machine", path);
		else if (!entry_gbps(e, gbps, when, when_len))
			rc = atm_err(ATM_E_INPUT, "%s: its bandwidth of this machine is unusable "
			             "('copy_gbps' must be a number from %g to %g)", path, ATM_EMU_MIN_GBPS,
			             ATM_EMU_MAX_GBPS);
	}
	json_decref(root);
	return rc;
}

atm_status atm_emu_machine_gbps(const char *machine_file, volatile sig_atomic_t *stop,
                                double *gbps, char *note, size_t note_len)
{
	char path[4096], key[300], why[600] = "", when[ATM_UTC_TEXT_MAX] = "", *text = NULL;
	size_t len = 0;
	atm_status rc;
	*gbps = 0;
	if (known_gbps > 0) {
		*gbps = known_gbps;
		if (note)
			snprintf(note, note_len, "%s", known_note);
		return ATM_OK;
	}
	if (machine_file)
		snprintf(path, sizeof path, "%s", machine_file);
	else if ((rc = atm_machine_file_path(path, sizeof path)) < 0)
		return rc;
	bandwidth_key(key, sizeof key);
	if (path[0] && (rc = atm_read_file_max(path, ATM_MACHINE_FILE_MAX_BYTES, "machine file", &text,
	                                       &len)) >= 0) {
		double x = 0;
		if (atm_emu_bandwidth_parse(path, text, len, key, &x, when, sizeof when) >= 0)
			known_gbps = x;
		else
			snprintf(why, sizeof why, "%s", atm_errmsg());
		free(text);
	} else if (path[0] && rc != ATM_E_NOTFOUND)
		snprintf(why, sizeof why, "%s", atm_errmsg());
	atm_err_clear();
	if (known_gbps > 0) {
		snprintf(known_note, sizeof known_note, "%.1f GB/s, measured %s, kept in %s", known_gbps,
		         when, path);
	} else {
		double x = measure_hook ? measure_hook() : stream_gbps(stop);
		if (x < 0)
			return atm_err(ATM_E_INTERRUPTED, "interrupted measuring this machine's bandwidth");
		if (!(x >= ATM_EMU_MIN_GBPS && x <= ATM_EMU_MAX_GBPS))
			return atm_err(ATM_E_UNSUPPORTED, "this machine's memory bandwidth could not be "
			               "measured (a streaming copy gave %g GB/s)", x);
		known_gbps = x;
		char now[ATM_UTC_TEXT_MAX];
		atm_utc_now(now);
		bool kept = false;
		json_t *had = NULL;
		if (path[0]) {
			bool ok = true;
			json_t *e = json_object();
			atm_json_set_new(e, "copy_gbps", json_real(x), &ok);
			atm_json_set_new(e, "measured_at", json_string(now), &ok);
			/* takes e; another process's, kept since this one looked, stays and is this
			 * one's too (an unusable entry, why, is replaced) */
			if (ok)
				kept = atm_machine_file_put(path, "bandwidth", key, e, why[0] ? NULL : &had) >= 0;
			else
				json_decref(e);
		}
		if (had && entry_gbps(had, &known_gbps, when, sizeof when))
			snprintf(known_note, sizeof known_note, "%.1f GB/s, measured %s by another process "
			         "(this one measured %.1f beside it), kept in %s", known_gbps, when, x, path);
		else
			snprintf(known_note, sizeof known_note, "%.1f GB/s, measured now%s%s%s%s%s", x,
			         kept ? ", kept in " : path[0] ? " (not kept: " : " (nowhere to keep it)",
			         kept ? path : path[0] ? atm_errmsg() : "", kept || !path[0] ? "" : ")",
			         why[0] && path[0] ? "; " : "", why[0] && path[0] ? why : "");
		json_decref(had);
		atm_err_clear();
	}
	*gbps = known_gbps;
	if (note)
		snprintf(note, note_len, "%s", known_note);
	return ATM_OK;
}

atm_status atm_emu_spec_resolve_scaled(const char *tierspec, const char *machine_file,
                                       volatile sig_atomic_t *stop, atm_emu_spec *out,
                                       char *note, size_t note_len)
{
	double gbps = 0;
	atm_status rc = atm_emu_spec_resolve(tierspec, out);
	if (note && note_len)
		note[0] = '\0';
	if (rc < 0 || out->absolute)
		return rc;
	if ((rc = atm_emu_machine_gbps(machine_file, stop, &gbps, note, note_len)) < 0)
		return atm_err_prefix(rc, "--emulate %s (proportional, scaled by this machine's "
		                      "bandwidth; '%s:absolute' takes its rates as they are): ",
		                      tierspec, out->name);
	return atm_emu_spec_scale(out, gbps);
}

int atm_emu_test_threads(void)
{
	return omp_get_max_threads();
}

bool atm_emu_machine_known(double *gbps)
{
	*gbps = known_gbps;
	return known_gbps > 0;
}

void atm_emu_set_measure(double (*fn)(void))
{
	measure_hook = fn;
	known_gbps = 0;
	known_note[0] = '\0';
}

/* atm_emu_new -- an emulator of spec against the fast tier's bandwidth */
atm_status atm_emu_new(atm_emu **out, const atm_emu_spec *spec, const atm_tier_topo *topo,
                       double fast_gbps)
{
	*out = NULL;
	if (!(spec->read_gbps >= ATM_EMU_MIN_GBPS) || !(spec->write_gbps >= ATM_EMU_MIN_GBPS) ||
	    !(spec->read_gbps <= ATM_EMU_MAX_GBPS) || !(spec->write_gbps <= ATM_EMU_MAX_GBPS))
		return atm_err(ATM_E_USAGE, "emulation spec '%s': bandwidths must be from %g to %g GB/s",
		               spec->name, ATM_EMU_MIN_GBPS, ATM_EMU_MAX_GBPS);
	if (!(fast_gbps >= 0) || fast_gbps > ATM_EMU_MAX_GBPS)
		return atm_err(ATM_E_USAGE, "fast-tier bandwidth %g GB/s is out of range", fast_gbps);
	atm_emu *e = calloc(1, sizeof *e);
	if (!e)
		return atm_err(ATM_E_NOMEM, "out of memory making an emulator");
	e->spec = *spec;
	atomic_init(&e->waited_ns, 0);
	if (fast_gbps > 0) {
		e->fast_gbps = fast_gbps;
		e->fast_source = "given";
	} else if (topo && atm_tier_topo_node(topo, atm_tier_topo_home(topo))->read_gbps > 0) {
		e->fast_gbps = atm_tier_topo_node(topo, atm_tier_topo_home(topo))->read_gbps;
		e->fast_source = "hwloc";
	} else if ((e->fast_gbps = measure_memcpy_gbps()) > 0) {
		e->fast_source = "measured";
	} else {
		e->fast_gbps = ATM_EMU_DEFAULT_FAST_GBPS;
		e->fast_source = "default";
	}
	*out = e;
	return ATM_OK;
}

/* atm_emu_destroy -- free the emulator */
void atm_emu_destroy(atm_emu *e)
{
	free(e);
}

/* atm_emu_set_stop -- the flag that ends waits early */
void atm_emu_set_stop(atm_emu *e, volatile sig_atomic_t *stop)
{
	e->stop = stop;
}

/* atm_emu_get_spec -- the spec it emulates */
const atm_emu_spec *atm_emu_get_spec(const atm_emu *e)
{
	return &e->spec;
}

/* atm_emu_fast_gbps -- the fast-tier bandwidth extra time is measured against */
double atm_emu_fast_gbps(const atm_emu *e)
{
	return e->fast_gbps;
}

/* atm_emu_fast_source -- where that bandwidth came from */
const char *atm_emu_fast_source(const atm_emu *e)
{
	return e->fast_source;
}

/* atm_emu_extra_s -- slow time minus fast time for these bytes (atm_emulated_extra_s, which
 * the schedule's prediction of the waits shares), at most ATM_EMU_MAX_WAIT_S */
double atm_emu_extra_s(const atm_emu *e, int64_t read_bytes, int64_t written_bytes)
{
	double extra = atm_emulated_extra_s((double)read_bytes, (double)written_bytes,
	                                    e->spec.read_gbps, e->spec.write_gbps, e->fast_gbps);
	return extra < ATM_EMU_MAX_WAIT_S ? extra : ATM_EMU_MAX_WAIT_S;
}

/* stopped -- the wait's stop flag is set */
static bool stopped(const atm_emu *e)
{
	return e->stop && *e->stop;
}

/* wait_for -- block for extra seconds (at most ATM_EMU_MAX_WAIT_S): sleep most of it, spin
 * the end */
static atm_status wait_for(atm_emu *e, double extra, double *waited_s)
{
	if (waited_s)
		*waited_s = 0;
	if (!(extra > 0))
		return ATM_OK;
	extra = extra < ATM_EMU_MAX_WAIT_S ? extra : ATM_EMU_MAX_WAIT_S;
	/* whole nanoseconds, rounded up, so the wait is never shorter than asked; extra is at
	 * most ATM_EMU_MAX_WAIT_S, which a 64-bit count of nanoseconds holds */
	const int64_t slice = (int64_t)(ATM_EMU_WAIT_SLICE_S * 1e9);
	int64_t start = now_ns(), deadline = start + (int64_t)ceil(extra * 1e9), t;
	/* absolute times, so a signal's EINTR sleeps the rest of the slice after a look at the
	 * stop flag; slices so that a flag set by another thread's signal is seen too */
	while (!stopped(e) && deadline - (t = now_ns()) > SPIN_NS) {
		int64_t wake = deadline - SPIN_NS < t + slice ? deadline - SPIN_NS : t + slice;
		struct timespec ts = {(time_t)(wake / 1000000000), (long)(wake % 1000000000)};
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	while ((t = now_ns()) < deadline && !stopped(e))
		;
	atomic_fetch_add(&e->waited_ns, t - start);
	if (waited_s)
		*waited_s = (double)(t - start) * 1e-9;
	if (t < deadline)
		return atm_err(ATM_E_INTERRUPTED, "interrupted in an emulated wait (%.3f s of %.3f s)",
		               (double)(t - start) * 1e-9, extra);
	return ATM_OK;
}

atm_status atm_emu_wait(atm_emu *e, int64_t read_bytes, int64_t written_bytes, double *waited_s)
{
	if (waited_s)
		*waited_s = 0;
	if (read_bytes < 0 || written_bytes < 0)
		return atm_err(ATM_E_USAGE, "emulation wait for %lld read and %lld written bytes",
		               (long long)read_bytes, (long long)written_bytes);
	return wait_for(e, atm_emu_extra_s(e, read_bytes, written_bytes), waited_s);
}

atm_status atm_emu_wait_2lm(atm_emu *e, const atm_twolm_traffic *t, double *waited_s)
{
	if (waited_s)
		*waited_s = 0;
	if (t->read_bytes < 0 || t->fill_bytes < 0 || t->fill_bytes > t->read_bytes ||
	    t->written_bytes < 0)
		return atm_err(ATM_E_USAGE, "2LM emulation wait for %lld read (%lld filled) and %lld "
		               "written bytes", (long long)t->read_bytes, (long long)t->fill_bytes,
		               (long long)t->written_bytes);
	return wait_for(e, atm_twolm_wait_s(t, e->spec.read_gbps, e->spec.write_gbps, e->fast_gbps),
	                waited_s);
}

/* atm_emu_total_waited_s -- all waiting so far */
double atm_emu_total_waited_s(const atm_emu *e)
{
	return (double)atomic_load(&e->waited_ns) * 1e-9;
}
