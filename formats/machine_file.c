/* machine_file.c -- the machine file (machine.json): what autotm measures once per machine,
 * kept by machine key in named sections ("machines": the roofline's calibrations, the
 * profiler's; "bandwidth": the fast tier's streaming bandwidth, proportional emulation's) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "atm_formats.h"

#define FORMAT "autotm-machine"
/* Raised when what is kept is measured differently: a file of another version is replaced
 * (1: the first kept calibrations and bandwidths). */
#define VERSION 1

atm_status atm_machine_file_check(const char *path)
{
	struct stat st;
	if (!path || !path[0] || stat(path, &st) < 0 || S_ISREG(st.st_mode))
		return ATM_OK;
	return atm_err(ATM_E_INPUT, "the machine file %s is %s: it must be a regular file or none "
	               "yet (it is read and replaced); set AUTOTM_MACHINE_FILE to another path, or "
	               "to 'none' to keep nothing", path,
	               S_ISDIR(st.st_mode) ? "a folder" : S_ISFIFO(st.st_mode) ? "a pipe"
	               : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "not a regular file");
}

atm_status atm_machine_file_path(char *path, size_t len)
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
		return ATM_OK; /* nowhere to keep it: measure every time */
	if (n < 0 || (size_t)n >= len) {
		path[0] = '\0';
		return atm_err(ATM_E_USAGE, "the machine file's path is too long");
	}
	atm_status rc = atm_machine_file_check(path);
	if (rc < 0)
		path[0] = '\0';
	return rc;
}

atm_status atm_machine_file_section(const char *path, const char *text, size_t len,
                                    const char *section, struct json_t **root,
                                    struct json_t **sec)
{
	json_error_t je;
	*sec = NULL;
	if (!(*root = json_loadb(text, len, 0, &je)))
		return atm_err(ATM_E_INPUT, "%s: not JSON: %s (line %d)", path, je.text, je.line);
	const json_t *f = json_object_get(*root, "format"), *v = json_object_get(*root, "version");
	if (!json_is_object(*root) || !json_is_string(f) || strcmp(json_string_value(f), FORMAT))
		return atm_err(ATM_E_INPUT, "%s: not an autotm machine file (its \"format\" is not "
		               "\"%s\")", path, FORMAT);
	if (!json_is_integer(v) || json_integer_value(v) != VERSION)
		return atm_err(ATM_E_INPUT, "%s: version %s, this autotm keeps version %d", path,
		               json_is_integer(v) ? "other" : "missing", VERSION);
	json_t *s = json_object_get(*root, section);
	if (!s)
		return atm_err(ATM_E_NOTFOUND, "%s holds no '%s'", path, section);
	if (!json_is_object(s))
		return atm_err(ATM_E_INPUT, "%s: '%s' must be an object of entries by machine", path,
		               section);
	*sec = s;
	return ATM_OK;
}

atm_status atm_machine_file_put(const char *path, const char *section, const char *key,
                                struct json_t *entry, struct json_t **had)
{
	char *text = NULL, *out = NULL, dir[4096];
	size_t len = 0;
	int fd = -1;
	json_t *root = NULL, *sec = NULL;
	atm_status rc = ATM_OK;
	if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) {
		json_decref(entry);
		return atm_err(ATM_E_USAGE, "machine file path is too long: %s", path);
	}
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		rc = atm_make_dirs(dir, 0777);
	}
	if (rc >= 0)
		rc = atm_machine_file_check(path);
	if (rc < 0 || (rc = atm_file_lock(path, &fd)) < 0) {
		json_decref(entry);
		return atm_err_prefix(rc, "keeping %s in %s: ", section, path);
	}
	/* the other sections and machines are kept; an unusable file is replaced */
	if (atm_read_file_max(path, ATM_MACHINE_FILE_MAX_BYTES, "machine file", &text, &len) == ATM_OK) {
		rc = atm_machine_file_section(path, text, len, section, &root, &sec);
		if (rc == ATM_E_NOTFOUND && (sec = json_object()) &&
		    json_object_set_new(root, section, sec) < 0)
			sec = NULL;
		else if (rc < 0 && rc != ATM_E_NOTFOUND) {
			json_decref(root);
			root = sec = NULL;
		}
	}
	atm_err_clear();
	rc = ATM_OK;
	bool ok = true;
	if (!root || !sec) {
		json_decref(root);
		root = json_object();
		sec = json_object();
		atm_json_set_new(root, "format", json_string(FORMAT), &ok);
		atm_json_set_new(root, "version", json_integer(VERSION), &ok);
		atm_json_set_new(root, section, sec, &ok);
	}
	json_t *there = had ? json_object_get(sec, key) : NULL;
	if (had)
		*had = there ? json_incref(there) : NULL;
	if (there) { /* another process kept its measurement first: that one stays */
		json_decref(entry);
		json_decref(root);
		free(text);
		atm_file_unlock(fd);
		return ATM_OK;
	}
	if (!ok || !entry || json_object_set_new(sec, key, entry) < 0)
		rc = atm_err(ATM_E_NOMEM, "out of memory keeping %s", section);
	if (rc >= 0 && (rc = atm_json_text(root, JSON_INDENT(1) | JSON_SORT_KEYS, &out)) >= 0)
		rc = atm_write_file_atomic(path, out, strlen(out));
	free(out);
	free(text);
	json_decref(root);
	atm_file_unlock(fd);
	return rc < 0 ? atm_err_prefix(rc, "keeping %s in %s: ", section, path) : ATM_OK;
}
