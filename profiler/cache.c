/* cache.c -- the on-disk profile cache: one file many profilers share, read whole at open, merged into under a lock, replaced atomically */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "atm_profiler.h"

/* read_text -- the cache file's text; *text NULL when there is no file yet */
static atm_status read_text(const char *path, char **text, size_t *len)
{
	struct stat st;
	*text = NULL;
	*len = 0;
	int got = stat(path, &st);
	if (got < 0 && errno == ENOENT)
		return ATM_OK;
	/* read, merged into and replaced: a pipe would read as empty and be written through
	 * (devices and folders are refused by atm_read_file) */
	if (got == 0 && S_ISFIFO(st.st_mode))
		return atm_err(ATM_E_INPUT, "%s: a profile cache must be a regular file, not a pipe (it "
		               "is read, merged into and replaced); give another --cache", path);
	return atm_read_file_max(path, ATM_PROFILE_FILE_MAX_BYTES, "profile cache", text, len);
}

/* atm_prof_cache_open -- the profile of m in the cache file, checked whole */
atm_status atm_prof_cache_open(atm_profile **out, const char *path, const atm_profile_machine *m,
                               bool rebuild)
{
	atm_profile *p = NULL;
	char *text = NULL;
	size_t len = 0;
	atm_status rc;
	*out = NULL;
	if ((rc = atm_profile_new(&p, m, path)) < 0)
		return rc;
	if (!path)
		goto done;
	/* whether the folder takes the file of a save is asked when there is something to save
	 * (atm_prof_run, before it measures): a complete cache on read-only storage is used as is */
	if ((rc = read_text(path, &text, &len)) < 0)
		goto fail;
	if ((rc = atm_profile_read_cache(p, text, len, rebuild)) < 0) {
		if (rc == ATM_E_INPUT)
			atm_err_prefix(rc, "corrupt profile cache, left as it is (remove it or rebuild it): ");
		goto fail;
	}
done:
	free(text);
	*out = p;
	return ATM_OK;
fail:
	free(text);
	atm_profile_destroy(p);
	return rc;
}

/* atm_prof_cache_save -- merge what was put into the file, under the lock */
atm_status atm_prof_cache_save(atm_profile *p)
{
	const char *path = atm_profile_path(p);
	char *text = NULL, *merged = NULL;
	size_t len = 0, merged_len = 0;
	int fd = -1;
	atm_status rc;
	if (!path) {
		atm_profile_saved(p);
		return ATM_OK;
	}
	if (!atm_profile_unsaved(p))
		return ATM_OK;
	if ((rc = atm_file_lock(path, &fd)) < 0)
		return rc;
	/* read again under the lock: another profiler may have saved since */
	if ((rc = read_text(path, &text, &len)) < 0)
		goto done;
	if ((rc = atm_profile_merge_cache(p, text, len, &merged, &merged_len)) < 0) {
		if (rc == ATM_E_INPUT)
			atm_err_prefix(rc, "the profile cache became corrupt and was left as it is; "
			               "nothing saved: ");
		goto done;
	}
	if ((rc = atm_write_file_atomic(path, merged, merged_len)) == ATM_OK)
		atm_profile_saved(p);
done:
	free(merged);
	free(text);
	atm_file_unlock(fd);
	return rc;
}
