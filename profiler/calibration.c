/* calibration.c -- the roofline's calibration kept per machine (machine.json), so that estimates calibrate once per machine, not once per profile cache */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "atm_profiler.h"

#define FORMAT "autotm-machine"
/* Raised when the calibration measures differently: entries of an older version are measured
 * again (1: the first kept calibrations). */
#define VERSION 1

/* The longest key: the CPU, threads, backend and fast tier of atm_profile_machine. */
#define KEY_MAX 512

/* make_parents -- path's folders, made where missing */
static atm_status make_parents(const char *path)
{
	char dir[PATH_MAX];
	if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
		return atm_err(ATM_E_USAGE, "machine file path is too long: %s", path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return ATM_OK;
	*slash = '\0';
	return atm_make_dirs(dir, 0777);
}

atm_status atm_prof_machine_file(char *path, size_t len)
{
	const char *env = getenv("AUTOTM_MACHINE_FILE"), *base = getenv("XDG_CACHE_HOME");
	int n;
	path[0] = '\0';
	if (env)
		n = snprintf(path, len, "%s", strcmp(env, "none") ? env : "");
	else if (base && base[0] == '/')
		n = snprintf(path, len, "%s/autotm/machine.json", base);
	else if ((base = getenv("HOME")) && base[0] == '/')
		n = snprintf(path, len, "%s/.cache/autotm/machine.json", base);
	else
		return ATM_OK; /* nowhere to keep it: calibrate every time */
	if (n < 0 || (size_t)n >= len) {
		path[0] = '\0';
		return atm_err(ATM_E_USAGE, "the machine file's path is too long");
	}
	return ATM_OK;
}

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

/* machines_of -- the "machines" object of a machine file's text, checked (borrowed from
 * *root, which the caller releases) */
static atm_status machines_of(const char *path, const char *text, size_t len, json_t **root,
                              json_t **machines)
{
	json_error_t je;
	*machines = NULL;
	if (!(*root = json_loadb(text, len, 0, &je)))
		return atm_err(ATM_E_INPUT, "%s: not JSON: %s (line %d)", path, je.text, je.line);
	const json_t *f = json_object_get(*root, "format"), *v = json_object_get(*root, "version");
	if (!json_is_object(*root) || !json_is_string(f) || strcmp(json_string_value(f), FORMAT))
		return atm_err(ATM_E_INPUT, "%s: not an autotm machine file (its \"format\" is not "
		               "\"%s\")", path, FORMAT);
	if (!json_is_integer(v) || json_integer_value(v) != VERSION)
		return atm_err(ATM_E_INPUT, "%s: version %s, this autotm keeps version %d", path,
		               json_is_integer(v) ? "other" : "missing", VERSION);
	*machines = json_object_get(*root, "machines");
	if (!json_is_object(*machines))
		return atm_err(ATM_E_INPUT, "%s: 'machines' must be an object of calibrations by "
		               "machine", path);
	return ATM_OK;
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
	atm_status rc = atm_read_file(path, &text, &len);
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
	char key[KEY_MAX], *text = NULL, *out = NULL;
	size_t len = 0;
	int fd = -1;
	json_t *root = NULL, *machines = NULL, *e = NULL;
	atm_status rc;
	machine_key(m, key, sizeof key);
	if ((rc = make_parents(path)) < 0 || (rc = atm_file_lock(path, &fd)) < 0)
		return rc;
	/* the other machines' calibrations are kept; an unusable file is replaced */
	if (atm_read_file(path, &text, &len) == ATM_OK &&
	    machines_of(path, text, len, &root, &machines) < 0) {
		json_decref(root);
		root = machines = NULL;
	}
	atm_err_clear();
	if (!root || !machines) {
		root = json_object();
		machines = json_object();
		bool ok = true;
		atm_json_set_new(root, "format", json_string(FORMAT), &ok);
		atm_json_set_new(root, "version", json_integer(VERSION), &ok);
		atm_json_set_new(root, "machines", machines, &ok);
		if (!ok) {
			rc = atm_err(ATM_E_NOMEM, "out of memory keeping the calibration");
			goto done;
		}
	}
	if (!(e = entry_of(rf)) || json_object_set_new(machines, key, e) < 0) {
		rc = atm_err(ATM_E_NOMEM, "out of memory keeping the calibration");
		goto done;
	}
	if ((rc = atm_json_text(root, JSON_INDENT(1) | JSON_SORT_KEYS, &out)) >= 0)
		rc = atm_write_file_atomic(path, out, strlen(out));
done:
	free(out);
	free(text);
	json_decref(root);
	atm_file_unlock(fd);
	return rc < 0 ? atm_err_prefix(rc, "keeping the calibration in %s: ", path) : ATM_OK;
}
