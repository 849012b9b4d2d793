/* tier_file.c -- where a file-backed slow tier keeps its file: the default pmem folder (a tmpfs for emulation), file systems, the writeback warning */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>
#include <memkind.h>

#include "memory.h"

/* The file systems a folder's f_type names when /proc/self/mountinfo does not say. */
static const struct {
	unsigned long magic;
	const char *name;
} fs_names[] = {
	{TMPFS_MAGIC, "tmpfs"},          {RAMFS_MAGIC, "ramfs"},       {EXT4_SUPER_MAGIC, "ext4"},
	{XFS_SUPER_MAGIC, "xfs"},        {BTRFS_SUPER_MAGIC, "btrfs"}, {OVERLAYFS_SUPER_MAGIC, "overlay"},
	{NFS_SUPER_MAGIC, "nfs"},        {0x2fc12fc1, "zfs"},          {F2FS_SUPER_MAGIC, "f2fs"},
	{FUSE_SUPER_MAGIC, "fuse"},      {V9FS_MAGIC, "9p"},
};

/* existing_part -- the longest leading part of path that exists (a folder not made yet is
 * judged by the one it would be made in), into buf */
static void existing_part(const char *path, char *buf, size_t len)
{
	struct stat st;
	snprintf(buf, len, "%s", path);
	while (stat(buf, &st) < 0) {
		char *slash = strrchr(buf, '/');
		if (!slash || slash == buf) {
			snprintf(buf, len, "%s", slash == buf ? "/" : ".");
			return;
		}
		*slash = '\0';
	}
}

/* unescape_mount -- mountinfo writes a space as \040, a tab \011, a newline \012, '\' \134 */
static void unescape_mount(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* mount_fs_name -- the file system type /proc/self/mountinfo gives the mount holding real
 * (a resolved path): the longest mount point that is a prefix of it; false when unknown */
static bool mount_fs_name(const char *real, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char *line = NULL, best[64] = "", type[64] = "";
	size_t cap = 0, best_len = 0;
	bool found = false;
	if (!f)
		return false;
	while (getline(&line, &cap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS...] - TYPE SOURCE SUPEROPTS */
		char mnt[PATH_MAX], *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		unescape_mount(mnt);
		size_t n = strlen(mnt);
		bool under = strcmp(mnt, "/") == 0 ||
		             (strncmp(real, mnt, n) == 0 && (real[n] == '/' || real[n] == '\0'));
		/* a later mount on the same point hides an earlier one: take the last */
		if (!under || n < best_len)
			continue;
		if (sscanf(dash + 3, "%63s", type) != 1)
			continue;
		best_len = n;
		snprintf(best, sizeof best, "%s", type);
		found = true;
	}
	free(line);
	fclose(f);
	if (found)
		snprintf(out, len, "%s", best);
	return found;
}

/* atm_tier_file_fs -- the file system of path (of the folder it would be made in when it does
 * not exist): its name in fs, and whether it writes dirty pages back to a disk (not a tmpfs
 * or ramfs, and not DAX); false when nothing of path can be looked at */
bool atm_tier_file_fs(const char *path, char *fs, size_t len, bool *writeback)
{
	char part[PATH_MAX], real[PATH_MAX];
	struct statfs sf;
	struct stat st;
	snprintf(fs, len, "unknown");
	*writeback = false;
	existing_part(path, part, sizeof part);
	if (statfs(part, &sf) < 0)
		return false;
	if (!realpath(part, real) || !mount_fs_name(real, fs, len)) {
		snprintf(fs, len, "0x%lx", (unsigned long)sf.f_type);
		for (size_t i = 0; i < sizeof fs_names / sizeof fs_names[0]; i++)
			if ((unsigned long)sf.f_type == fs_names[i].magic)
				snprintf(fs, len, "%s", fs_names[i].name);
	}
	if ((unsigned long)sf.f_type == TMPFS_MAGIC || (unsigned long)sf.f_type == RAMFS_MAGIC)
		return true;
	/* an fsdax mount of real PMM has no page cache to write back; memkind asks the folder
	 * (it maps a probe file with MAP_SYNC) */
	if (stat(part, &st) == 0 && !S_ISDIR(st.st_mode)) {
		char *slash = strrchr(part, '/');
		if (slash && slash != part)
			*slash = '\0';
		else
			snprintf(part, sizeof part, "%s", slash ? "/" : ".");
	}
	*writeback = memkind_check_dax_path(part) != MEMKIND_SUCCESS;
	return true;
}

/* is_tmpfs -- path (or the folder it would be made in) is on a tmpfs; its free bytes in *free */
static bool is_tmpfs(const char *path, int64_t *free_bytes)
{
	char part[PATH_MAX];
	struct statfs sf;
	existing_part(path, part, sizeof part);
	*free_bytes = -1;
	if (statfs(part, &sf) < 0 || (unsigned long)sf.f_type != TMPFS_MAGIC)
		return false;
	*free_bytes = (int64_t)sf.f_bavail * (int64_t)sf.f_bsize;
	return true;
}

/* atm_tier_tmpfs_need -- what the room rule asks of a tmpfs for o's run (atm_runtime.h) */
int64_t atm_tier_tmpfs_need(const atm_tier_opts *o)
{
	int64_t need = o->slow_need_bytes;
	/* the kind never grows past a --slow-size cap */
	if (o->slow_bytes > 0 && (need <= 0 || need > o->slow_bytes))
		need = o->slow_bytes;
	if (need <= 0)
		return ATM_TIER_TMPFS_UNKNOWN_BYTES;
	return need + need / 4 + ATM_TIER_TMPFS_SLACK_BYTES;
}

/* atm_tier_tmpfs_has_room -- the room rule (atm_runtime.h): a tmpfs with free_bytes free, on a
 * machine with mem_available_bytes available (< 0: unknown), holds o's run */
bool atm_tier_tmpfs_has_room(const atm_tier_opts *o, int64_t free_bytes, int64_t mem_available_bytes)
{
	int64_t need = atm_tier_tmpfs_need(o);
	int64_t fast = o->fast_need_bytes > 0 ? o->fast_need_bytes : 0;
	if (free_bytes < need)
		return false;
	return mem_available_bytes < 0 || need + fast <= mem_available_bytes;
}

void atm_tier_default_pmem_dir(bool tmpfs, char *buf, size_t len)
{
	snprintf(buf, len, "%s-%lu", tmpfs ? ATM_TIER_TMPFS_PMEM_DIR : ATM_TIER_DEFAULT_PMEM_DIR,
	         (unsigned long)geteuid());
}

/* atm_tier_pmem_default -- the default folder for o's pmem-dir tier (o->pmem_dir aside) into f,
 * given a tmpfs at ATM_TIER_TMPFS_PMEM_DIR's place with tmpfs_free_bytes free (< 0: none there)
 * and mem_available_bytes of memory available (< 0: unknown); its file system is looked at */
void atm_tier_pmem_default(const atm_tier_opts *o, int64_t tmpfs_free_bytes,
                           int64_t mem_available_bytes, atm_tier_file *f)
{
	char a[32], b[32], c[32];
	memset(f, 0, sizeof *f);
	bool tmpfs = false;
	if (!o->emulated) {
		snprintf(f->why, sizeof f->why, "the default of a tier that is not emulated");
	} else if (tmpfs_free_bytes < 0) {
		snprintf(f->why, sizeof f->why, "there is no tmpfs for " ATM_TIER_TMPFS_PMEM_DIR);
	} else if (atm_tier_tmpfs_has_room(o, tmpfs_free_bytes, mem_available_bytes)) {
		tmpfs = true;
		snprintf(f->why, sizeof f->why, "a tmpfs with room for %s (%s free)",
		         atm_format_bytes(atm_tier_tmpfs_need(o), a, sizeof a),
		         atm_format_bytes(tmpfs_free_bytes, b, sizeof b));
	} else if (tmpfs_free_bytes < atm_tier_tmpfs_need(o)) {
		snprintf(f->why, sizeof f->why, "the tmpfs of " ATM_TIER_TMPFS_PMEM_DIR " has %s free, "
		         "the run needs %s",
		         atm_format_bytes(tmpfs_free_bytes, b, sizeof b),
		         atm_format_bytes(atm_tier_tmpfs_need(o), a, sizeof a));
	} else {
		snprintf(f->why, sizeof f->why, "%s of memory is available, the run needs %s on a tmpfs "
		         "beside %s of fast memory", atm_format_bytes(mem_available_bytes, b, sizeof b),
		         atm_format_bytes(atm_tier_tmpfs_need(o), a, sizeof a),
		         atm_format_bytes(o->fast_need_bytes > 0 ? o->fast_need_bytes : 0, c, sizeof c));
	}
	atm_tier_default_pmem_dir(tmpfs, f->path, sizeof f->path);
	f->given = false;
	f->folder = true;
	atm_tier_file_fs(f->path, f->fs, sizeof f->fs, &f->writeback);
}

/* atm_tier_pmem_file -- the folder o's pmem-dir tier uses: o->pmem_dir as given, else the
 * default, measured now */
void atm_tier_pmem_file(const atm_tier_opts *o, atm_tier_file *f)
{
	int64_t free_bytes = -1;
	if (o->pmem_dir) {
		memset(f, 0, sizeof *f);
		snprintf(f->path, sizeof f->path, "%s", o->pmem_dir);
		f->given = true;
		f->folder = true;
		atm_tier_file_fs(f->path, f->fs, sizeof f->fs, &f->writeback);
		return;
	}
	/* measured only when it matters: a tier that is not emulated takes the old default */
	int64_t avail = -1;
	if (o->emulated && is_tmpfs(ATM_TIER_TMPFS_PMEM_DIR, &free_bytes))
		avail = atm_mem_available_bytes();
	atm_tier_pmem_default(o, free_bytes, avail, f);
}

/* atm_tier_file_warning -- the one line said when an emulated tier's file meets a disk */
bool atm_tier_file_warning(const atm_tier_file *f, const char *emulation, char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	if (!emulation || !emulation[0] || !f->path[0] || !f->writeback)
		return false;
	bool dir = f->folder;
	snprintf(buf, len, "the slow tier's %s %.200s is on %s%s%.120s%s: its writeback to the disk "
	         "adds to the cost of the emulated %s; %s", dir ? "folder" : "file", f->path, f->fs,
	         f->given ? "" : " (the default, as ", f->given ? "" : f->why, f->given ? "" : ")",
	         emulation,
	         dir ? "give --pmem-dir a folder on a tmpfs with room (/dev/shm) to leave the disk out"
	             : "give --fsdax a file on a tmpfs or a DAX mount to leave the disk out");
	return true;
}
