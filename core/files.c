/* files.c -- atomic file writes, whole-file reads, byte-size parsing and printing, hashing, the clock, the CPU model */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atm_core.h"

atm_status atm_write_file_atomic(const char *path, const char *data, size_t len)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 16);
	int fd = -1;
	atm_status rc = ATM_OK;
	if (!tmp)
		return atm_err(ATM_E_NOMEM, "out of memory writing %s", path);
	snprintf(tmp, plen + 16, "%s.tmp.XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		rc = atm_err(ATM_E_IO, "cannot write %s: %s", path, strerror(errno));
		goto fail;
	}
	/* mkstemp creates 0600; results and caches are ordinary files a user shares */
	mode_t mask = umask(0);
	umask(mask);
	(void)fchmod(fd, 0666 & ~mask);
	for (size_t done = 0; done < len;) {
		ssize_t w = write(fd, data + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = atm_err(errno == ENOSPC ? ATM_E_NOSPACE : ATM_E_IO, "cannot write %s: %s",
			             path, strerror(errno));
			goto fail;
		}
		done += (size_t)w;
	}
	if (fsync(fd) < 0 && errno != EINVAL) {
		rc = atm_err(ATM_E_IO, "cannot flush %s: %s", path, strerror(errno));
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = atm_err(ATM_E_IO, "cannot close %s: %s", path, strerror(errno));
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		rc = atm_err(ATM_E_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
		goto fail;
	}
	free(tmp);
	return ATM_OK;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	return rc;
}

atm_status atm_check_writable(const char *path)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 16);
	if (!tmp)
		return atm_err(ATM_E_NOMEM, "out of memory checking %s", path);
	snprintf(tmp, plen + 16, "%s.tmp.XXXXXX", path);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		atm_status rc = atm_err(ATM_E_IO, "cannot write %s: %s", path, strerror(errno));
		free(tmp);
		return rc;
	}
	close(fd);
	unlink(tmp);
	free(tmp);
	return ATM_OK;
}

/* Refuse files larger than this: no graph, plan or profile comes near it. */
#define MAX_FILE_BYTES ((size_t)1 << 31)

/* the lock is on PATH.lock, not PATH: PATH is replaced by rename at every atomic write, so a
 * lock on it would lock a file about to vanish */
atm_status atm_file_lock(const char *path, int *fd)
{
	size_t n = strlen(path) + sizeof ".lock";
	char *lp = malloc(n);
	*fd = -1;
	if (!lp)
		return atm_err(ATM_E_NOMEM, "out of memory locking %s", path);
	snprintf(lp, n, "%s.lock", path);
	int f = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (f < 0) {
		atm_status rc = atm_err(ATM_E_IO, "cannot open the lock file %s: %s", lp, strerror(errno));
		free(lp);
		return rc;
	}
	while (flock(f, LOCK_EX) < 0) {
		if (errno == EINTR)
			continue;
		atm_status rc = atm_err(ATM_E_IO, "cannot lock %s: %s", lp, strerror(errno));
		close(f);
		free(lp);
		return rc;
	}
	free(lp);
	*fd = f;
	return ATM_OK;
}

void atm_file_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* closing releases the flock */
}

atm_status atm_read_file(const char *path, char **data, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	size_t cap = 0, used = 0;
	atm_status rc;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	*data = NULL;
	*len = 0;
	if (fd < 0)
		return atm_err(ATM_E_IO, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		rc = atm_err(ATM_E_IO, "cannot read %s: it is a directory", path);
		goto fail;
	}
	for (;;) {
		if (cap - used < 4096) {
			cap = cap ? cap * 2 : 65536;
			if (cap > MAX_FILE_BYTES + 1) {
				rc = atm_err(ATM_E_INPUT, "%s is larger than %zu bytes", path, MAX_FILE_BYTES);
				goto fail;
			}
			char *p = realloc(buf, cap);
			if (!p) {
				rc = atm_err(ATM_E_NOMEM, "out of memory reading %s", path);
				goto fail;
			}
			buf = p;
		}
		ssize_t r = read(fd, buf + used, cap - used - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = atm_err(ATM_E_IO, "cannot read %s: %s", path, strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		used += (size_t)r;
	}
	close(fd);
	buf[used] = '\0';
	*data = buf;
	*len = used;
	return ATM_OK;
fail:
	close(fd);
	free(buf);
	return rc;
}

atm_status atm_parse_bytes(const char *s, int64_t *out)
{
	char *end = NULL;
	double v, mult = 1;
	*out = 0;
	if (!s || !*s || isspace((unsigned char)*s) || *s == '-' || *s == '+')
		goto bad;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v))
		goto bad;
	switch (toupper((unsigned char)*end)) {
	case 'K': mult = 1024.0; end++; break;
	case 'M': mult = 1024.0 * 1024; end++; break;
	case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
	case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
	default: break;
	}
	if (mult > 1 && (end[0] == 'i' || end[0] == 'I') && toupper((unsigned char)end[1]) == 'B')
		end += 2;
	else if (toupper((unsigned char)*end) == 'B')
		end++;
	if (*end)
		goto bad;
	v *= mult;
	if (v < 1 || v > (double)ATM_MAX_BYTES)
		goto bad;
	*out = (int64_t)v;
	return ATM_OK;
bad:
	return atm_err(ATM_E_USAGE, "'%s' is not a byte size; use a positive number with an optional "
	               "K, M, G or T suffix (binary units), e.g. 4096, 512M, 1.5G", s ? s : "");
}

const char *atm_format_bytes(int64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)bytes;
	int u = 0;
	while (fabs(v) >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%lld B", (long long)bytes);
	else
		snprintf(buf, len, "%.2f %s", v, units[u]);
	return buf;
}

/* atm_fnv1a -- FNV-1a over len bytes, continuing from h */
uint64_t atm_fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* atm_now_s -- CLOCK_MONOTONIC in seconds */
double atm_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* atm_cpu_model -- "model name" of /proc/cpuinfo ("Model" or "cpu model" on other
 * architectures), "unknown" when there is none */
void atm_cpu_model(char *buf, size_t len)
{
	static const char *const keys[] = {"model name", "Model", "cpu model"};
	char line[512];
	FILE *f = fopen("/proc/cpuinfo", "r");
	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		bool match = false;
		for (size_t i = 0; i < sizeof keys / sizeof keys[0] && colon; i++)
			match = match || (strncmp(line, keys[i], strlen(keys[i])) == 0 &&
			                  strspn(line + strlen(keys[i]), " \t") ==
			                          (size_t)(colon - line) - strlen(keys[i]));
		if (!match)
			continue;
		colon += strspn(colon + 1, " \t") + 1;
		colon[strcspn(colon, "\n")] = '\0';
		if (*colon) {
			snprintf(buf, len, "%s", colon);
			break;
		}
	}
	fclose(f);
}
