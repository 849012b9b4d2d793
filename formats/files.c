/* files.c -- atomic file writes, locks, whole-file reads, UTC dates, the CPU model, available memory */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atm_formats.h"

/* Symbolic links followed before a path is given up as a loop, as the kernel's limit. */
#define MAX_LINKS 40

/* resolve_links -- the path a write to path lands on: path itself, or the end of the chain
 * of symbolic links it starts (which need not exist yet), so that rewriting a linked file
 * keeps the link and changes its target. *out is malloc'd. */
static atm_status resolve_links(const char *path, char **out)
{
	char *cur = strdup(path);
	*out = NULL;
	for (int hops = 0; cur; hops++) {
		struct stat st;
		if (lstat(cur, &st) < 0 || !S_ISLNK(st.st_mode)) {
			*out = cur;
			return ATM_OK;
		}
		if (hops == MAX_LINKS) {
			free(cur);
			return atm_err(ATM_E_IO, "cannot write %s: too many levels of symbolic links", path);
		}
		char target[4096];
		ssize_t n = readlink(cur, target, sizeof target - 1);
		if (n < 0) {
			atm_status rc = atm_err(ATM_E_IO, "cannot follow the link %s: %s", cur,
			                        strerror(errno));
			free(cur);
			return rc;
		}
		target[n] = '\0';
		const char *slash = strrchr(cur, '/');
		size_t dir = target[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1;
		char *next = malloc(dir + (size_t)n + 1);
		if (next) {
			memcpy(next, cur, dir);
			memcpy(next + dir, target, (size_t)n + 1);
		}
		free(cur);
		cur = next;
	}
	return atm_err(ATM_E_NOMEM, "out of memory resolving %s", path);
}

/* special_kind -- what a path that is no regular file is, for messages */
static const char *special_kind(mode_t mode)
{
	return S_ISDIR(mode) ? "a folder" : S_ISCHR(mode) ? "a character device" :
	       S_ISBLK(mode) ? "a block device" : S_ISFIFO(mode) ? "a pipe" :
	       S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

/* write_all -- len bytes to fd; path names it in messages */
static atm_status write_all(int fd, const char *path, const char *data, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t w = write(fd, data + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return atm_err(errno == ENOSPC ? ATM_E_NOSPACE : ATM_E_IO, "cannot write %s: %s",
			               path, strerror(errno));
		done += (size_t)w;
	}
	return ATM_OK;
}

/* write_through -- a character device or a pipe (/dev/null, a terminal, a shell's process
 * substitution) is written in place: replacing it by rename would put a regular file where
 * the device was */
static atm_status write_through(const char *path, const char *data, size_t len)
{
	/* a pipe with no reader yet: wait for one, polled, so that Ctrl-C ends the wait */
	int fd;
	while ((fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0 &&
	       (errno == ENXIO || errno == EINTR)) {
		if (atm_stopped())
			return atm_err(ATM_E_INTERRUPTED, "interrupted while waiting for a reader of %s",
			               path);
		nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
	}
	if (fd < 0)
		return atm_err(ATM_E_IO, "cannot write %s: %s", path, strerror(errno));
	int flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK); /* the writes block as they would */
	atm_status rc = write_all(fd, path, data, len);
	if (close(fd) < 0 && rc == ATM_OK)
		rc = atm_err(ATM_E_IO, "cannot close %s: %s", path, strerror(errno));
	return rc;
}

/* Where a write to a path lands and how it is made. */
struct output {
	char *target;   /* the path, or the end of its chain of links (malloc'd) */
	struct stat st; /* the target's, when it exists */
	bool exists;
	bool through;   /* a character device or a pipe: written in place */
};

/* output_open -- how path takes a write: a new or regular file is replaced, a character
 * device or a pipe written through; a folder, an empty name, a block device and a socket are
 * refused. o->target is the caller's to free (also on failure: NULL then) */
static atm_status output_open(const char *path, struct output *o)
{
	memset(o, 0, sizeof *o);
	if (!path[0])
		return atm_err(ATM_E_USAGE, "the output path is empty; give a file name");
	atm_status rc = resolve_links(path, &o->target);
	if (rc < 0)
		return rc;
	if (stat(o->target, &o->st) < 0) {
		if (errno == ENOENT)
			return ATM_OK;
		return atm_err(ATM_E_IO, "cannot write %s: %s", path, strerror(errno));
	}
	o->exists = true;
	if (S_ISREG(o->st.st_mode))
		return ATM_OK;
	if (S_ISCHR(o->st.st_mode) || S_ISFIFO(o->st.st_mode)) {
		o->through = true;
		return ATM_OK;
	}
	if (S_ISDIR(o->st.st_mode))
		return atm_err(ATM_E_USAGE, "%s is a folder; give a file name in it", path);
	return atm_err(ATM_E_USAGE, "%s is %s; autotm writes regular files, character devices "
	               "and pipes only", path, special_kind(o->st.st_mode));
}

/* replace_file -- data into a temporary file beside target, then renamed over it; an
 * existing target's permissions (and, where allowed, owner) carry over to the new file */
static atm_status replace_file(const char *target, const char *asked, const struct stat *old,
                               const char *data, size_t len)
{
	size_t plen = strlen(target);
	char *tmp = malloc(plen + 16);
	atm_status rc = ATM_OK;
	int fd = -1;
	if (!tmp)
		return atm_err(ATM_E_NOMEM, "out of memory writing %s", asked);
	snprintf(tmp, plen + 16, "%s.tmp.XXXXXX", target);
	fd = mkstemp(tmp);
	if (fd < 0) {
		rc = atm_err(ATM_E_IO, "cannot write %s: %s", asked, strerror(errno));
		goto fail;
	}
	if (old) {
		(void)fchmod(fd, old->st_mode & 07777);
		(void)fchown(fd, old->st_uid, old->st_gid);
	} else {
		/* mkstemp creates 0600; results and caches are ordinary files a user shares */
		mode_t mask = umask(0);
		umask(mask);
		(void)fchmod(fd, 0666 & ~mask);
	}
	if ((rc = write_all(fd, asked, data, len)) < 0)
		goto fail;
	if (fsync(fd) < 0 && errno != EINVAL) {
		rc = atm_err(ATM_E_IO, "cannot flush %s: %s", asked, strerror(errno));
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = atm_err(ATM_E_IO, "cannot close %s: %s", asked, strerror(errno));
		goto fail;
	}
	fd = -1;
	if (rename(tmp, target) < 0) {
		rc = atm_err(ATM_E_IO, "cannot rename %s to %s: %s", tmp, target, strerror(errno));
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

atm_status atm_write_file_atomic(const char *path, const char *data, size_t len)
{
	struct output o;
	atm_status rc = output_open(path, &o);
	if (rc == ATM_OK)
		rc = o.through ? write_through(path, data, len)
		               : replace_file(o.target, path, o.exists ? &o.st : NULL, data, len);
	free(o.target);
	return rc;
}

atm_status atm_check_writable(const char *path)
{
	struct output o;
	char *tmp = NULL;
	atm_status rc = output_open(path, &o);
	if (rc < 0)
		goto done;
	if (o.through) {
		if (access(o.target, W_OK) < 0)
			rc = atm_err(ATM_E_IO, "cannot write %s: %s", path, strerror(errno));
		goto done;
	}
	/* the folder must take the temporary file a write renames over path */
	size_t plen = strlen(o.target);
	if (!(tmp = malloc(plen + 16))) {
		rc = atm_err(ATM_E_NOMEM, "out of memory checking %s", path);
		goto done;
	}
	snprintf(tmp, plen + 16, "%s.tmp.XXXXXX", o.target);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		int e = errno;
		char dir[4096];
		struct stat st;
		snprintf(dir, sizeof dir, "%s", o.target);
		/* a folder that exists yet "has no such file" (procfs, sysfs) takes no new files */
		const char *folder = dirname(dir);
		if (e == ENOENT && stat(folder, &st) == 0 && S_ISDIR(st.st_mode))
			rc = atm_err(ATM_E_IO, "cannot write %s: its folder %s takes no new files (a "
			             "system folder?); write it elsewhere", path, folder);
		else
			rc = atm_err(ATM_E_IO, "cannot write %s: %s", path, strerror(e));
		goto done;
	}
	close(fd);
	unlink(tmp);
done:
	free(tmp);
	free(o.target);
	return rc;
}

/* Refuse files larger than this: no graph, plan or profile comes near it. */
#define MAX_FILE_BYTES ((size_t)1 << 31)

/* the lock is on PATH.lock, not PATH: PATH is replaced by rename at every atomic write, so a
 * lock on it would lock a file about to vanish */
atm_status atm_file_lock(const char *path, int *fd)
{
	char *target = NULL;
	*fd = -1;
	/* two links to one file share its lock */
	atm_status rc0 = resolve_links(path, &target);
	if (rc0 < 0)
		return rc0;
	size_t n = strlen(target) + sizeof ".lock";
	char *lp = malloc(n);
	if (!lp) {
		free(target);
		return atm_err(ATM_E_NOMEM, "out of memory locking %s", path);
	}
	snprintf(lp, n, "%s.lock", target);
	free(target);
	int f = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (f < 0) {
		atm_status rc = atm_err(ATM_E_IO, "cannot open the lock file %s: %s", lp, strerror(errno));
		free(lp);
		return rc;
	}
	/* polled, so that Ctrl-C ends the wait for another process's lock */
	while (flock(f, LOCK_EX | LOCK_NB) < 0) {
		atm_status rc;
		if (errno == EWOULDBLOCK || errno == EINTR) {
			if (!atm_stopped()) {
				nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
				continue;
			}
			rc = atm_err(ATM_E_INTERRUPTED, "interrupted while waiting for the lock on %s "
			             "(another autotm is writing it)", lp);
		} else {
			rc = atm_err(ATM_E_IO, "cannot lock %s: %s", lp, strerror(errno));
		}
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

atm_status atm_make_dirs(const char *dir, unsigned mode)
{
	char part[PATH_MAX];
	if (snprintf(part, sizeof part, "%s", dir) >= (int)sizeof part)
		return atm_err(ATM_E_IO, "cannot make the folder '%s': the path is too long", dir);
	for (char *p = part + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(part, (mode_t)mode) < 0 && errno != EEXIST)
			return atm_err(ATM_E_IO, "cannot make the folder '%s'%s%s%s: %s", dir,
			               c ? " (making " : "", c ? part : "", c ? ")" : "", strerror(errno));
		*p = c;
		if (!c)
			return ATM_OK;
	}
}

atm_status atm_read_file(const char *path, char **data, size_t *len)
{
	return atm_read_file_max(path, MAX_FILE_BYTES, "file", data, len);
}

/* too_large -- path holds more than max bytes, more than any what ever does */
static atm_status too_large(const char *path, uint64_t bytes, size_t max, const char *what)
{
	char a[32], b[32];
	return atm_err(ATM_E_INPUT, "%s is %s%s; a %s is at most %s (docs/formats.md)", path,
	               bytes ? "" : "more than ", atm_format_bytes((int64_t)(bytes ? bytes : max),
	                                                           a, sizeof a),
	               what, atm_format_bytes((int64_t)max, b, sizeof b));
}

atm_status atm_read_file_max(const char *path, size_t max_bytes, const char *what, char **data,
                             size_t *len)
{
	struct stat st;
	char *buf = NULL;
	size_t cap = 0, used = 0;
	atm_status rc;
	/* never blocking: a pipe with no writer would hold open() forever, deaf to Ctrl-C (the
	 * signals go to a thread of their own); opened so, it reads as empty at once */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	*data = NULL;
	*len = 0;
	if (fd < 0)
		return atm_err(errno == ENOENT ? ATM_E_NOTFOUND : ATM_E_IO, "cannot open %s: %s", path,
		               strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = atm_err(ATM_E_IO, "cannot read %s: %s", path, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = atm_err(ATM_E_IO, "cannot read %s: it is a directory", path);
		goto fail;
	}
	/* a device never ends (/dev/zero) or is no file at all; a pipe is read to its end */
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode)) {
		rc = atm_err(ATM_E_INPUT, "cannot read %s: it is %s, not a file", path,
		             special_kind(st.st_mode));
		goto fail;
	}
	/* checked before a byte is read: a sparse file of a gigabyte is refused at once */
	if (max_bytes > MAX_FILE_BYTES)
		max_bytes = MAX_FILE_BYTES;
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max_bytes) {
		rc = too_large(path, (uint64_t)st.st_size, max_bytes, what);
		goto fail;
	}
	for (;;) {
		if (cap - used < 4096) {
			cap = cap ? cap * 2 : 65536;
			if (used > max_bytes) {
				rc = too_large(path, 0, max_bytes, what);
				goto fail;
			}
			if (cap > max_bytes + 4097)
				cap = max_bytes + 4097;
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
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* a pipe whose writer has not written yet: waited for, Ctrl-C ending the wait */
			if (atm_stopped()) {
				rc = atm_err(ATM_E_INTERRUPTED, "interrupted while reading %s (a pipe)", path);
				goto fail;
			}
			poll(&(struct pollfd){.fd = fd, .events = POLLIN}, 1, 50);
			continue;
		}
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

/* atm_utc_now -- the wall clock in UTC, to the second */
void atm_utc_now(char out[ATM_UTC_TEXT_MAX])
{
	time_t now = time(NULL);
	struct tm tm;
	if (!gmtime_r(&now, &tm) || !strftime(out, ATM_UTC_TEXT_MAX, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, ATM_UTC_TEXT_MAX, "1970-01-01T00:00:00Z");
}

/* atm_utc_valid -- "YYYY-MM-DDTHH:MM:SSZ" with every field in its range */
bool atm_utc_valid(const char *text)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
	if (strlen(text) != sizeof shape - 1)
		return false;
	for (size_t i = 0; shape[i]; i++)
		if (shape[i] == 'd' ? text[i] < '0' || text[i] > '9' : text[i] != shape[i])
			return false;
	int mon = atoi(text + 5), day = atoi(text + 8), h = atoi(text + 11), m = atoi(text + 14),
	    sec = atoi(text + 17);
	return mon >= 1 && mon <= 12 && day >= 1 && day <= 31 && h <= 23 && m <= 59 && sec <= 60;
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

int64_t atm_mem_available_bytes(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long long kib = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1)
			break;
	fclose(f);
	return kib < 0 ? -1 : (int64_t)kib * 1024;
}
