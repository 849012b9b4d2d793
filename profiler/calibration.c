/* calibration.c -- the roofline's calibration kept per machine (machine.json), so that estimates calibrate once per machine, not once per profile cache */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "atm_profiler.h"

/* The longest key: the CPU, threads, backend and fast tier of atm_profile_machine. */
#define KEY_MAX 512

/* machine_key -- "CPU|threads|backend|fast tier": what the calibration depends on (it runs
 * without emulation, on fast memory only) */
static void machine_key(const atm_profile_machine *m, char *key, size_t len)
{
	snprintf(key, len, "%s|%d|%s|%s", m->cpu, m->n_threads, m->backend, m->fast_tier);
}

/* positive -- v is a number above 0 and finite, into *out; else a message naming what */
static atm_status positive(const json_t *o, const char *name, const char *where, double *out)
{
	const json_t *v = json_object_get(o, name);
	double x = json_is_number(v) ? json_number_value(v) : NAN;
	if (json_is_number(v) && !(x > 0 && isfinite(x)))
		return atm_err(ATM_E_INPUT, "%s: '%s' must be a number above 0 (it is %g)", where, name,
		               x);
	if (!json_is_number(v))
		return atm_err(ATM_E_INPUT, "%s: '%s' must be a number above 0 (it is %s)", where, name,
		               v ? atm_json_type_name(v) : "missing");
	*out = x;
	return ATM_OK;
}

/* roofline_from -- the calibrated side of a roofline from entry e (of the key), checked */
static atm_status roofline_from(const json_t *e, const char *key, atm_prof_roofline *rf)
{
	char where[KEY_MAX + 64];
	double x = 0;
	atm_status rc;
	snprintf(where, sizeof where, "machine '%s'", key);
	if (!json_is_object(e))
		return atm_err(ATM_E_INPUT, "%s: expected an object", where);
	const json_t *ops = json_object_get(e, "ops");
	if (!json_is_object(ops))
		return atm_err(ATM_E_INPUT, "%s: 'ops' must be an object of each op's rates", where);
	if ((rc = positive(e, "fast_gbps", where, &rf->fast_gbps)) < 0 ||
	    (rc = positive(e, "cache_bytes", where, &x)) < 0)
		return rc;
	if (x > 1e15)
		return atm_err(ATM_E_INPUT, "%s: 'cache_bytes' %g is not a cache's size", where, x);
	rf->cache_bytes = (int64_t)x;
	for (int op = 0; op < ATM_N_OPS; op++) {
		const char *name = atm_op_name((atm_op)op);
		const json_t *o = json_object_get(ops, name);
		snprintf(where, sizeof where, "machine '%s', op '%s'", key, name);
		if (!json_is_object(o))
			return atm_err(ATM_E_INPUT, "%s: missing (an older calibration)", where);
		if ((rc = positive(o, "gflops", where, &rf->gflops[op])) < 0 ||
		    (rc = positive(o, "gbps", where, &rf->gbps[op])) < 0 ||
		    (rc = positive(o, "overhead_s", where, &rf->overhead_s[op])) < 0)
			return rc;
		rf->gflops_1x1[op] = 0;
		if (atm_op_describe((atm_op)op)->pointwise_rate &&
		    (rc = positive(o, "gflops_1x1", where, &rf->gflops_1x1[op])) < 0)
			return rc;
	}
	rf->calibrated = true;
	return ATM_OK;
}

/* entry_of -- rf's calibrated side as a machine entry (NULL: out of memory) */
static json_t *entry_of(const atm_prof_roofline *rf)
{
	char now[ATM_UTC_TEXT_MAX];
	bool ok = true;
	json_t *e = json_object(), *ops = json_object();
	atm_utc_now(now);
	atm_json_set_new(e, "measured_at", json_string(now), &ok);
	atm_json_set_new(e, "fast_gbps", json_real(rf->fast_gbps), &ok);
	atm_json_set_new(e, "cache_bytes", json_integer(rf->cache_bytes), &ok);
	for (int op = 0; op < ATM_N_OPS; op++) {
		json_t *o = json_object();
		atm_json_set_new(o, "gflops", json_real(rf->gflops[op]), &ok);
		if (atm_op_describe((atm_op)op)->pointwise_rate)
			atm_json_set_new(o, "gflops_1x1", json_real(rf->gflops_1x1[op]), &ok);
		atm_json_set_new(o, "gbps", json_real(rf->gbps[op]), &ok);
		atm_json_set_new(o, "overhead_s", json_real(rf->overhead_s[op]), &ok);
		atm_json_set_new(ops, atm_op_name((atm_op)op), o, &ok);
	}
	atm_json_set_new(e, "ops", ops, &ok);
	if (!ok) {
		json_decref(e);
		return NULL;
	}
	return e;
}

/* machines_of -- the "machines" section of a machine file's text, checked (borrowed from
 * *root, which the caller releases) */
static atm_status machines_of(const char *path, const char *text, size_t len, json_t **root,
                              json_t **machines)
{
	atm_status rc = atm_machine_file_section(path, text, len, "machines", root, machines);
	if (rc == ATM_E_NOTFOUND)
		atm_err_clear();
	return rc == ATM_E_NOTFOUND
	           ? atm_err(ATM_E_NOTFOUND, "%s holds no calibration of this machine", path)
	           : rc;
}

atm_status atm_prof_calibration_parse(const char *path, const char *text, size_t len,
                                      const atm_profile_machine *m, atm_prof_roofline *rf)
{
	char key[KEY_MAX];
	json_t *root = NULL, *machines;
	atm_status rc = machines_of(path, text, len, &root, &machines);
	machine_key(m, key, sizeof key);
	if (rc >= 0) {
		const json_t *e = json_object_get(machines, key);
		atm_prof_roofline got = *rf;
		if (!e)
			rc = atm_err(ATM_E_NOTFOUND, "%s holds no calibration of this machine", path);
		else if ((rc = roofline_from(e, key, &got)) < 0)
			atm_err_prefix(rc, "%s: ", path);
		else
			*rf = got;
	}
	json_decref(root);
	return rc;
}

atm_status atm_prof_calibration_load(const char *path, const atm_profile_machine *m,
                                     atm_prof_roofline *rf)
{
	char *text = NULL;
	size_t len = 0;
	atm_status rc = atm_read_file_max(path, ATM_MACHINE_FILE_MAX_BYTES, "machine file", &text, &len);
	if (rc == ATM_E_NOTFOUND) /* no machine file yet */
		return rc;
	if (rc < 0) /* there, but not to be read: unusable, as a corrupt one is */
		return atm_err_prefix(ATM_E_INPUT, "%s", "");
	rc = atm_prof_calibration_parse(path, text, len, m, rf);
	free(text);
	return rc;
}

atm_status atm_prof_calibration_save(const char *path, const atm_profile_machine *m,
                                     const atm_prof_roofline *rf)
{
	char key[KEY_MAX];
	machine_key(m, key, sizeof key);
	json_t *e = entry_of(rf);
	if (!e)
		return atm_err(ATM_E_NOMEM, "out of memory keeping the calibration");
	return atm_machine_file_put(path, "machines", key, e, NULL);
}
