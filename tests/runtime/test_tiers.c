/* test_tiers.c -- tier discovery, the slow-tier choice on this and on made-up machines, option and pmem dir errors, the default pmem folder */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "atm_core.h"
#include "atm_formats.h"
#include "memory.h"

static char tmp[128];

/* ---------------------------------------------------------------- helpers */

/* rm_one -- nftw callback removing one entry */
static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* setup -- a fresh temporary directory for every test */
static int setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof tmp, "/tmp/atm-test-tiers-XXXXXX");
	return mkdtemp(tmp) ? 0 : -1;
}

/* teardown -- remove it and everything in it */
static int teardown(void **state)
{
	(void)state;
	chmod(tmp, 0700);
	return nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* has -- the current error message contains s */
static void has(const char *s)
{
	if (!strstr(atm_errmsg(), s))
		fail_msg("message \"%s\" lacks \"%s\"", atm_errmsg(), s);
}

/* A NUMA node of a made-up machine. pkg is 0 or 1 (two packages of two
 * PUs); bandwidths are MiB/s and latency ns as hwloc stores them, 0 = none. */
typedef struct {
	int os;
	int pkg;
	const char *subtype;
	int64_t mem;
	unsigned bw, rbw, wbw, lat;
} fake_node;

/* bytes of a memory-side cache in front of node 0 (Memory Mode) in the next write_xml; 0: none */
static int64_t fake_memcache;

/* write_xml -- an hwloc XML topology with these nodes; returns its path */
static const char *write_xml(const char *name, const fake_node *nodes, int n)
{
	static char path[256];
	static const char *const pkg_cpus[2] = {"0x00000003", "0x0000000c"};
	char buf[16384];
	size_t at = 0;
	unsigned all_nodes = 0, pkg_nodes[2] = {0, 0};
	int gp = 100;
	for (int i = 0; i < n; i++) {
		all_nodes |= 1u << nodes[i].os;
		pkg_nodes[nodes[i].pkg] |= 1u << nodes[i].os;
	}
#define OUT(...) at += (size_t)snprintf(buf + at, sizeof buf - at, __VA_ARGS__)
	OUT("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
	    "<topology version=\"2.0\">\n"
	    "<object type=\"Machine\" os_index=\"0\" cpuset=\"0x0000000f\" complete_cpuset=\"0x0000000f\" "
	    "allowed_cpuset=\"0x0000000f\" nodeset=\"0x%08x\" complete_nodeset=\"0x%08x\" "
	    "allowed_nodeset=\"0x%08x\" gp_index=\"1\">\n",
	    all_nodes, all_nodes, all_nodes);
	for (int p = 0; p < 2; p++) {
		OUT("<object type=\"Package\" os_index=\"%d\" cpuset=\"%s\" complete_cpuset=\"%s\" "
		    "nodeset=\"0x%08x\" complete_nodeset=\"0x%08x\" gp_index=\"%d\">\n",
		    p, pkg_cpus[p], pkg_cpus[p], pkg_nodes[p], pkg_nodes[p], 2 + p);
		for (int i = 0; i < n; i++) {
			if (nodes[i].pkg != p)
				continue;
			bool cached = nodes[i].os == 0 && fake_memcache;
			if (cached)
				OUT("<object type=\"MemCache\" cpuset=\"%s\" complete_cpuset=\"%s\" "
				    "nodeset=\"0x%08x\" complete_nodeset=\"0x%08x\" gp_index=\"%d\" "
				    "cache_size=\"%lld\" depth=\"1\" cache_linesize=\"64\" "
				    "cache_associativity=\"1\" cache_type=\"0\">\n",
				    pkg_cpus[p], pkg_cpus[p], 1u << nodes[i].os, 1u << nodes[i].os, 90 + i,
				    (long long)fake_memcache);
			OUT("<object type=\"NUMANode\" os_index=\"%d\" cpuset=\"%s\" complete_cpuset=\"%s\" "
			    "nodeset=\"0x%08x\" complete_nodeset=\"0x%08x\" gp_index=\"%d\" "
			    "local_memory=\"%lld\"%s%s%s/>\n",
			    nodes[i].os, pkg_cpus[p], pkg_cpus[p], 1u << nodes[i].os, 1u << nodes[i].os,
			    gp + i, (long long)nodes[i].mem, nodes[i].subtype ? " subtype=\"" : "",
			    nodes[i].subtype ? nodes[i].subtype : "", nodes[i].subtype ? "\"" : "");
			if (cached)
				OUT("</object>\n");
		}
		for (int c = 0; c < 2; c++) {
			int cpu = 2 * p + c;
			OUT("<object type=\"Core\" os_index=\"%d\" cpuset=\"0x%08x\" complete_cpuset=\"0x%08x\" "
			    "nodeset=\"0x%08x\" complete_nodeset=\"0x%08x\" gp_index=\"%d\">\n"
			    "<object type=\"PU\" os_index=\"%d\" cpuset=\"0x%08x\" complete_cpuset=\"0x%08x\" "
			    "nodeset=\"0x%08x\" complete_nodeset=\"0x%08x\" gp_index=\"%d\"/>\n</object>\n",
			    cpu, 1u << cpu, 1u << cpu, pkg_nodes[p], pkg_nodes[p], 10 + 2 * cpu, cpu, 1u << cpu,
			    1u << cpu, pkg_nodes[p], pkg_nodes[p], 11 + 2 * cpu);
		}
		OUT("</object>\n");
	}
	OUT("</object>\n");
	/* attributes as seen from package 0's CPUs, where the test "runs" */
	static const struct {
		const char *name;
		unsigned flags;
		size_t off;
	} attrs[] = {
		{"Bandwidth", 5, offsetof(fake_node, bw)},
		{"ReadBandwidth", 5, offsetof(fake_node, rbw)},
		{"WriteBandwidth", 5, offsetof(fake_node, wbw)},
		{"Latency", 6, offsetof(fake_node, lat)},
	};
	for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; a++) {
		OUT("<memattr name=\"%s\" flags=\"%u\">\n", attrs[a].name, attrs[a].flags);
		for (int i = 0; i < n; i++) {
			unsigned v = *(const unsigned *)((const char *)&nodes[i] + attrs[a].off);
			if (v)
				OUT("<memattr_value target_obj_type=\"NUMANode\" target_obj_gp_index=\"%d\" "
				    "value=\"%u\" initiator_cpuset=\"%s\"/>\n",
				    gp + i, v, pkg_cpus[0]);
		}
		OUT("</memattr>\n");
	}
	OUT("</topology>\n");
#undef OUT
	assert_true(at < sizeof buf);
	snprintf(path, sizeof path, "%s/%s.xml", tmp, name);
	assert_int_equal(atm_write_file_atomic(path, buf, at), ATM_OK);
	return path;
}

/* node_by_os -- the description of the node with OS index os */
static const atm_tier_desc *node_by_os(const atm_tier_topo *topo, int os)
{
	for (int i = 0; i < atm_tier_topo_n_nodes(topo); i++)
		if (atm_tier_topo_node(topo, i)->numa_node == os)
			return atm_tier_topo_node(topo, i);
	fail_msg("no node %d", os);
	return NULL;
}

#define GB ((int64_t)1 << 30)

/* ---------------------------------------------------------------- this machine */

static void test_tiers_kind_names(void **state)
{
	(void)state;
	assert_string_equal(atm_tier_kind_name(ATM_TIER_DRAM), "dram");
	assert_string_equal(atm_tier_kind_name(ATM_TIER_KMEM_DAX), "kmem-dax");
	assert_string_equal(atm_tier_kind_name(ATM_TIER_NUMA_FAR), "numa-far");
	assert_string_equal(atm_tier_kind_name(ATM_TIER_HBM), "hbm");
	assert_string_equal(atm_tier_kind_name(ATM_TIER_CXL), "cxl");
	assert_string_equal(atm_tier_kind_name(ATM_TIER_PMEM_DIR), "pmem-dir");
	assert_string_equal(atm_tier_kind_name(ATM_TIER_FSDAX_FILE), "fsdax-file");
	assert_string_equal(atm_tier_kind_name(ATM_TIER_N_KINDS), "unknown");
}

static void test_tiers_discovery_finds_dram(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	int n = atm_tier_topo_n_nodes(topo);
	assert_true(n >= 1);
	assert_null(atm_tier_topo_node(topo, n));
	assert_null(atm_tier_topo_node(topo, -1));
	int home = atm_tier_topo_home(topo);
	assert_true(home >= 0 && home < n);
	const atm_tier_desc *h = atm_tier_topo_node(topo, home);
	assert_int_equal(h->kind, ATM_TIER_DRAM);
	assert_true(h->local);
	assert_true(h->capacity_bytes > 0);
	assert_true(h->numa_node >= 0);
	assert_false(h->emulated);
	assert_non_null(strstr(h->name, "DRAM"));
	/* unknown speeds are 0, never negative or NaN */
	for (int i = 0; i < n; i++) {
		const atm_tier_desc *d = atm_tier_topo_node(topo, i);
		assert_true(d->read_gbps >= 0 && d->write_gbps >= 0 && d->latency_ns >= 0);
	}
	atm_tier_topo_destroy(topo);
	atm_tier_topo_destroy(NULL);
}

static void test_tiers_fast_tier_is_local_dram(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *fast = NULL;
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	assert_int_equal(atm_tier_open_fast(&fast, topo, NULL), ATM_OK);
	const atm_tier_desc *d = atm_tier_describe(fast);
	assert_int_equal(d->kind, ATM_TIER_DRAM);
	assert_int_equal(d->numa_node, atm_tier_topo_node(topo, atm_tier_topo_home(topo))->numa_node);
	assert_int_equal(atm_tier_alignment(fast), 64);
	assert_false(atm_tier_is_mapping(fast));
	void *p = NULL;
	assert_int_equal(atm_tier_alloc(fast, 100000, &p), ATM_OK);
	assert_int_equal((uintptr_t)p % 64, 0);
	memset(p, 0x5a, 100000);
	assert_int_equal(((unsigned char *)p)[99999], 0x5a);
	atm_tier_free(fast, p, 100000);
	atm_tier_free(fast, NULL, 0);
	assert_int_equal(atm_tier_alloc(fast, 0, &p), ATM_E_USAGE);
	assert_null(p);
	atm_tier_destroy(fast);
	atm_tier_destroy(NULL);
	atm_tier_topo_destroy(topo);
}

static void test_tiers_fast_bound_to_node(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *fast = NULL;
	char spec[32];
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	int os = atm_tier_topo_node(topo, atm_tier_topo_home(topo))->numa_node;
	snprintf(spec, sizeof spec, "numa:%d", os);
	atm_tier_opts o = {.fast = spec};
	assert_int_equal(atm_tier_open_fast(&fast, topo, &o), ATM_OK);
	assert_int_equal(atm_tier_describe(fast)->numa_node, os);
	void *p = NULL;
	/* the bind is strict: the pages are on node os or the allocation fails */
	assert_int_equal(atm_tier_alloc(fast, 1 << 20, &p), ATM_OK);
	memset(p, 1, 1 << 20);
	atm_tier_free(fast, p, 1 << 20);
	atm_tier_destroy(fast);
	atm_tier_topo_destroy(topo);
}

static void test_tiers_bad_fast_choice(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *fast = (atm_tier *)&fast;
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	atm_tier_opts o = {.fast = "gpu"};
	assert_int_equal(atm_tier_open_fast(&fast, topo, &o), ATM_E_USAGE);
	assert_null(fast);
	has("unknown fast tier 'gpu'");
	has("numa:N");
	o.fast = "numa:999";
	assert_int_equal(atm_tier_open_fast(&fast, topo, &o), ATM_E_UNSUPPORTED);
	assert_null(fast);
	has("no NUMA node 999");
	has("(dram)");
	atm_tier_topo_destroy(topo);
}

static void test_tiers_slow_falls_back_to_pmem_dir(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *slow = NULL;
	atm_tier_choice c;
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	atm_tier_opts o = {.pmem_dir = tmp};
	assert_int_equal(atm_tier_choose(topo, &o, &c), ATM_OK);
	if (atm_tier_topo_n_nodes(topo) == 1) {
		/* a one-node machine (this project's build machines) has no slower memory */
		assert_int_equal(c.kind, ATM_TIER_PMEM_DIR);
		assert_int_equal(c.numa_node, -1);
		assert_non_null(strstr(c.why, "one NUMA node"));
	}
	/* a pmem dir works on every machine, whatever auto would pick */
	o.slow = "pmem-dir";
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_OK);
	const atm_tier_desc *d = atm_tier_describe(slow);
	assert_int_equal(d->kind, ATM_TIER_PMEM_DIR);
	assert_int_equal(d->numa_node, -1);
	assert_non_null(strstr(d->name, tmp));
	assert_non_null(strstr(d->name, d->dax ? "(DAX)" : "(page cache, not PMM)"));
	assert_true(d->capacity_bytes > 0);
	assert_int_equal(atm_tier_alignment(slow), 256);
	unsigned char *p = NULL;
	assert_int_equal(atm_tier_alloc(slow, 3 << 20, (void **)&p), ATM_OK);
	assert_int_equal((uintptr_t)p % 256, 0);
	for (int i = 0; i < 3 << 20; i++)
		p[i] = (unsigned char)(i * 7);
	for (int i = 0; i < 3 << 20; i += 4093)
		assert_int_equal(p[i], (unsigned char)(i * 7));
	atm_tier_free(slow, p, 3 << 20);
	atm_tier_destroy(slow);
	atm_tier_topo_destroy(topo);
}

/* test_tiers_fsdax_map_and_copy -- an fsdax tier is one mapping, taken whole by one pool at a
 * time; atm_tier_copy writes into it (non-temporal stores) and into a heap tier alike */
static void test_tiers_fsdax_map_and_copy(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *slow = NULL, *fast = NULL;
	char path[192];
	void *base = NULL, *again = NULL;
	int64_t bytes = 0, n = 0;
	snprintf(path, sizeof path, "%s/pool", tmp);
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	atm_tier_opts o = {.slow = "fsdax", .fsdax_path = path, .slow_bytes = 8 << 20};
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_OK);
	assert_true(atm_tier_is_mapping(slow));
	assert_int_equal(atm_tier_map_acquire(slow, &base, &bytes), ATM_OK);
	assert_non_null(base);
	assert_true(bytes >= 8 << 20);
	/* one pool at a time */
	assert_int_equal(atm_tier_map_acquire(slow, &again, &n), ATM_E_USAGE);
	static unsigned char src[1 << 16];
	for (size_t i = 0; i < sizeof src; i++)
		src[i] = (unsigned char)(i * 13 + 1);
	/* an odd offset and length: the copy routine handles the ragged ends */
	atm_tier_copy(slow, (char *)base + 3, src, sizeof src - 5);
	assert_memory_equal((char *)base + 3, src, sizeof src - 5);
	atm_tier_map_release(slow);
	assert_int_equal(atm_tier_map_acquire(slow, &again, &n), ATM_OK);
	assert_ptr_equal(again, base);
	atm_tier_map_release(slow);
	/* a heap tier is no mapping: it copies with memcpy and has nothing to acquire */
	assert_int_equal(atm_tier_open_fast(&fast, topo, &(atm_tier_opts){0}), ATM_OK);
	assert_false(atm_tier_is_mapping(fast));
	assert_int_equal(atm_tier_map_acquire(fast, &again, &n), ATM_E_USAGE);
	void *dst = NULL;
	assert_int_equal(atm_tier_alloc(fast, sizeof src, &dst), ATM_OK);
	atm_tier_copy(fast, dst, src, sizeof src);
	assert_memory_equal(dst, src, sizeof src);
	atm_tier_free(fast, dst, sizeof src);
	atm_tier_destroy(fast);
	atm_tier_destroy(slow);
	atm_tier_topo_destroy(topo);
}

/* tmp_dir, shm_dir -- this user's default pmem folders (atm_tier_default_pmem_dir) */
static const char *tmp_dir(void)
{
	static char buf[256];
	atm_tier_default_pmem_dir(false, buf, sizeof buf);
	return buf;
}

static const char *shm_dir(void)
{
	static char buf[256];
	atm_tier_default_pmem_dir(true, buf, sizeof buf);
	return buf;
}

/* test_tiers_default_dirs_are_each_users -- the default folders carry the user's id, and one
 * that another user owns in this user's place is refused by name, never written into (run as
 * root, the test makes such a folder: chowned to nobody) */
static void test_tiers_default_dirs_are_each_users(void **state)
{
	(void)state;
	char want[64];
	snprintf(want, sizeof want, "/tmp/autotm-pmem-%lu", (unsigned long)geteuid());
	assert_string_equal(tmp_dir(), want);
	snprintf(want, sizeof want, "/dev/shm/autotm-pmem-%lu", (unsigned long)geteuid());
	assert_string_equal(shm_dir(), want);
	struct stat st;
	if (geteuid() != 0 || stat(tmp_dir(), &st) == 0)
		return; /* only root can make a folder for another user; an existing one is kept */
	atm_tier_topo *topo = NULL;
	atm_tier *slow = NULL;
	assert_int_equal(mkdir(tmp_dir(), 0755), 0);
	assert_int_equal(chown(tmp_dir(), 65534, 65534), 0);
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	atm_tier_opts o = {.slow = "pmem-dir"};
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_E_IO);
	assert_null(slow);
	has(tmp_dir());
	has("belongs to user 65534, not to you (0)");
	has("--pmem-dir");
	atm_tier_topo_destroy(topo);
	assert_int_equal(rmdir(tmp_dir()), 0);
}

static void test_tiers_default_pmem_dir_is_created(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *slow = NULL;
	struct stat st;
	bool existed = stat(tmp_dir(), &st) == 0;
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	atm_tier_opts o = {.slow = "pmem-dir"};
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_OK);
	assert_int_equal(stat(tmp_dir(), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_non_null(strstr(atm_tier_describe(slow)->name, tmp_dir()));
	atm_tier_destroy(slow);
	atm_tier_topo_destroy(topo);
	if (!existed)
		rmdir(tmp_dir()); /* memkind left no file in it */
}

/* ---------------------------------------------------------------- the default pmem folder */

static void test_tiers_tmpfs_room_rule(void **state)
{
	(void)state;
	const int64_t mib = 1 << 20;
	atm_tier_opts o = {.emulated = true, .slow_need_bytes = 400 * mib};
	/* the need, a quarter more for the allocator, and the slack */
	int64_t need = 400 * mib + 100 * mib + ATM_TIER_TMPFS_SLACK_BYTES;
	assert_int_equal(atm_tier_tmpfs_need(&o), need);
	assert_true(atm_tier_tmpfs_has_room(&o, need, -1));
	assert_false(atm_tier_tmpfs_has_room(&o, need - 1, -1));
	/* a tmpfs's pages are memory: the fast need and the slow one must both be available */
	o.fast_need_bytes = 300 * mib;
	assert_true(atm_tier_tmpfs_has_room(&o, need, need + 300 * mib));
	assert_false(atm_tier_tmpfs_has_room(&o, 8 * need, need + 300 * mib - 1));
	/* a --slow-size cap bounds what the kind can hold */
	o.slow_bytes = 100 * mib;
	assert_int_equal(atm_tier_tmpfs_need(&o), 100 * mib + 25 * mib + ATM_TIER_TMPFS_SLACK_BYTES);
	/* unknown: the allowance */
	atm_tier_opts unknown = {.emulated = true};
	assert_int_equal(atm_tier_tmpfs_need(&unknown), ATM_TIER_TMPFS_UNKNOWN_BYTES);
	unknown.slow_bytes = 32 * mib;
	assert_int_equal(atm_tier_tmpfs_need(&unknown), 40 * mib + ATM_TIER_TMPFS_SLACK_BYTES);
}

/* test_tiers_default_without_room_falls_back -- told that the tmpfs has too little room (or
 * the memory too little), or that there is none, an emulated tier takes the old default and
 * says why; on a disk that is the warning's case */
static void test_tiers_default_without_room_falls_back(void **state)
{
	(void)state;
	const int64_t gib = (int64_t)1 << 30;
	atm_tier_opts o = {.slow = "pmem-dir", .emulated = true, .slow_need_bytes = 2 * gib,
	                   .fast_need_bytes = gib};
	atm_tier_file f;
	char warning[512];
	atm_tier_pmem_default(&o, gib, -1, &f);
	assert_string_equal(f.path, tmp_dir());
	assert_false(f.given);
	assert_true(f.folder);
	char need[32], why[96];
	snprintf(why, sizeof why, "the run needs %s",
	         atm_format_bytes(atm_tier_tmpfs_need(&o), need, sizeof need));
	assert_non_null(strstr(f.why, "1.00 GiB free"));
	assert_non_null(strstr(f.why, why));
	/* the warning names the folder, its file system, the writeback and the way out */
	bool warned = atm_tier_file_warning(&f, "optane", warning, sizeof warning);
	assert_int_equal(warned, f.writeback);
	if (warned) {
		assert_non_null(strstr(warning, tmp_dir()));
		assert_non_null(strstr(warning, f.fs));
		assert_non_null(strstr(warning, "writeback"));
		assert_non_null(strstr(warning, "emulated optane"));
		assert_non_null(strstr(warning, "1.00 GiB free"));
		assert_non_null(strstr(warning, "--pmem-dir"));
		assert_null(strchr(warning, '\n'));
	}
	/* not emulated: nothing to warn about */
	assert_false(atm_tier_file_warning(&f, NULL, warning, sizeof warning));
	assert_string_equal(warning, "");
	/* room on the tmpfs, but not in memory beside the fast need */
	atm_tier_pmem_default(&o, 100 * gib, 3 * gib, &f);
	assert_string_equal(f.path, tmp_dir());
	assert_non_null(strstr(f.why, "memory"));
	/* no tmpfs at all */
	atm_tier_pmem_default(&o, -1, -1, &f);
	assert_string_equal(f.path, tmp_dir());
	assert_non_null(strstr(f.why, "no tmpfs"));
	/* room enough: the tmpfs folder */
	atm_tier_pmem_default(&o, 100 * gib, 100 * gib, &f);
	assert_string_equal(f.path, shm_dir());
	assert_non_null(strstr(f.why, "a tmpfs with room"));
	/* a tier that is not emulated keeps the old default, room or none */
	o.emulated = false;
	atm_tier_pmem_default(&o, 100 * gib, 100 * gib, &f);
	assert_string_equal(f.path, tmp_dir());
}

/* test_tiers_given_dir_is_kept -- a folder the caller names is used as it is, emulated or not,
 * and its file system is reported; on a disk, an emulated tier's warning says so */
static void test_tiers_given_dir_is_kept(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *slow = NULL;
	atm_tier_file f;
	char warning[512];
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	atm_tier_opts o = {.slow = "pmem-dir", .pmem_dir = tmp, .emulated = true,
	                   .slow_need_bytes = 1 << 20};
	assert_int_equal(atm_tier_file_choose(&o, &f), ATM_OK);
	assert_string_equal(f.path, tmp);
	assert_true(f.given);
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_OK);
	const atm_tier_desc *d = atm_tier_describe(slow);
	assert_string_equal(d->file.path, tmp);
	assert_true(d->file.given);
	assert_true(d->file.folder);
	assert_string_equal(d->file.fs, f.fs);
	struct statfs sf;
	assert_int_equal(statfs(tmp, &sf), 0);
	bool memory_fs = (unsigned long)sf.f_type == TMPFS_MAGIC || (unsigned long)sf.f_type == RAMFS_MAGIC;
	if ((unsigned long)sf.f_type == TMPFS_MAGIC)
		assert_string_equal(d->file.fs, "tmpfs");
	if (memory_fs)
		assert_false(d->file.writeback);
	else
		assert_int_equal(d->file.writeback, !d->dax);
	assert_int_equal(atm_tier_file_warning(&d->file, "optane", warning, sizeof warning),
	                 d->file.writeback);
	if (d->file.writeback) {
		assert_non_null(strstr(warning, tmp));
		assert_non_null(strstr(warning, d->file.fs));
	}
	atm_tier_destroy(slow);
	/* not emulated: the same folder, and no warning */
	o.emulated = false;
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_OK);
	assert_string_equal(atm_tier_describe(slow)->file.path, tmp);
	assert_false(atm_tier_file_warning(&atm_tier_describe(slow)->file, NULL, warning,
	                                   sizeof warning));
	atm_tier_destroy(slow);
	/* a memory slow tier has no file */
	atm_tier_opts numa = {.slow = "kmem-dax"};
	if (atm_tier_file_choose(&numa, &f) == ATM_OK)
		assert_string_equal(f.path, "");
	atm_tier_topo_destroy(topo);
}

static void test_tiers_missing_pmem_dir_is_io(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *slow = (atm_tier *)&slow;
	char dir[256];
	snprintf(dir, sizeof dir, "%s/not-here", tmp);
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	atm_tier_opts o = {.slow = "pmem-dir", .pmem_dir = dir};
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_E_IO);
	assert_null(slow);
	has(dir);
	has("does not exist");
	/* a directory the user names is never created behind their back */
	struct stat st;
	assert_int_not_equal(stat(dir, &st), 0);
	atm_tier_topo_destroy(topo);
}

static void test_tiers_pmem_dir_under_a_file_is_io(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *slow = NULL;
	char file[256], dir[300];
	snprintf(file, sizeof file, "%s/plain", tmp);
	assert_int_equal(atm_write_file_atomic(file, "x", 1), ATM_OK);
	snprintf(dir, sizeof dir, "%s/sub", file);
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	atm_tier_opts o = {.slow = "pmem-dir", .pmem_dir = dir};
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_E_IO);
	assert_null(slow);
	has(dir);
	has("Not a directory");
	o.pmem_dir = file;
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_E_IO);
	has("is not a directory");
	atm_tier_topo_destroy(topo);
}

static void test_tiers_readonly_pmem_dir_is_io(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *slow = NULL;
	char dir[256];
	if (geteuid() == 0) {
		/* root writes into a 0555 directory anyway; sysfs refuses new files to
		 * everyone, so it stands in for a read-only mount */
		snprintf(dir, sizeof dir, "/sys");
	} else {
		snprintf(dir, sizeof dir, "%s/ro", tmp);
		assert_int_equal(mkdir(dir, 0555), 0);
	}
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	atm_tier_opts o = {.slow = "pmem-dir", .pmem_dir = dir};
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_E_IO);
	assert_null(slow);
	has(dir);
	has("is not writable");
	atm_tier_topo_destroy(topo);
}

static void test_tiers_pmem_dir_limit_below_minimum(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *slow = NULL;
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	atm_tier_opts o = {.slow = "pmem-dir", .pmem_dir = tmp, .slow_bytes = 1 << 20};
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_E_USAGE);
	assert_null(slow);
	has("16 MiB");
	has("1048576");
	o.slow_bytes = -5;
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_E_USAGE);
	o.slow_bytes = 16 << 20;
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_OK);
	assert_int_equal(atm_tier_describe(slow)->capacity_bytes, 16 << 20);
	atm_tier_destroy(slow);
	atm_tier_topo_destroy(topo);
}

static void test_tiers_bad_slow_choices(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *slow = (atm_tier *)&slow;
	atm_tier_choice c;
	char spec[32];
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	atm_tier_opts o = {.slow = "tape", .pmem_dir = tmp};
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_E_USAGE);
	assert_null(slow);
	has("unknown slow tier 'tape'");
	has("auto, kmem-dax, numa:N, pmem-dir, fsdax");

	o.slow = "numa:x";
	assert_int_equal(atm_tier_choose(topo, &o, &c), ATM_E_USAGE);
	has("numa:N");
	o.slow = "numa:-1";
	assert_int_equal(atm_tier_choose(topo, &o, &c), ATM_E_USAGE);
	o.slow = "numa:999";
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_E_UNSUPPORTED);
	assert_null(slow);
	has("no NUMA node 999 here (nodes: ");

	snprintf(spec, sizeof spec, "numa:%d", atm_tier_topo_node(topo, atm_tier_topo_home(topo))->numa_node);
	o.slow = spec;
	assert_int_equal(atm_tier_choose(topo, &o, &c), ATM_E_USAGE);
	has("the fast tier");

	o.slow = "fsdax";
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_E_USAGE);
	has("slow=fsdax needs the path of a file");

	o.slow = "kmem-dax";
	atm_status rc = atm_tier_choose(topo, &o, &c);
	if (rc != ATM_OK) {
		/* no PMM or CXL onlined as system RAM here: say so and how to get it */
		assert_int_equal(rc, ATM_E_UNSUPPORTED);
		has("no kmem-DAX NUMA node here");
		has("daxctl reconfigure-device");
	} else {
		assert_int_equal(c.kind, ATM_TIER_KMEM_DAX);
	}
	atm_tier_topo_destroy(topo);
}

/* ---------------------------------------------------------------- made-up machines */

static void test_tiers_xml_pmm_machine_picks_kmem_dax(void **state)
{
	(void)state;
	/* a Cascade Lake with Optane onlined as node 2 next to socket 0 */
	const fake_node nodes[] = {
		{0, 0, NULL, 192 * GB, 100000, 0, 0, 80},
		{2, 0, "NVM", 768 * GB, 0, 37000, 13000, 305},
		{1, 1, NULL, 192 * GB, 0, 0, 0, 0},
	};
	atm_tier_topo *topo = NULL;
	atm_tier_choice c;
	assert_int_equal(atm_tier_topo_load_xml(&topo, write_xml("pmm", nodes, 3)), ATM_OK);
	assert_int_equal(atm_tier_topo_n_nodes(topo), 3);
	const atm_tier_desc *home = atm_tier_topo_node(topo, atm_tier_topo_home(topo));
	assert_int_equal(home->numa_node, 0);
	assert_int_equal(home->kind, ATM_TIER_DRAM);
	assert_float_equal(home->read_gbps, 100000 * 1048576.0 / 1e9, 1e-6);
	assert_float_equal(home->latency_ns, 80, 1e-9);

	const atm_tier_desc *pmm = node_by_os(topo, 2);
	assert_int_equal(pmm->kind, ATM_TIER_KMEM_DAX);
	assert_true(pmm->kmem_dax);
	assert_true(pmm->local);
	assert_string_equal(pmm->subtype, "NVM");
	assert_int_equal(pmm->capacity_bytes, 768 * GB);
	assert_float_equal(pmm->read_gbps, 37000 * 1048576.0 / 1e9, 1e-6);
	assert_float_equal(pmm->write_gbps, 13000 * 1048576.0 / 1e9, 1e-6);
	assert_float_equal(pmm->latency_ns, 305, 1e-9);
	assert_non_null(strstr(pmm->name, "kmem-DAX (NVM), NUMA node 2"));

	const atm_tier_desc *far = node_by_os(topo, 1);
	assert_int_equal(far->kind, ATM_TIER_NUMA_FAR);
	assert_false(far->local);
	assert_float_equal(far->read_gbps, 0, 0);

	assert_int_equal(atm_tier_choose(topo, NULL, &c), ATM_OK);
	assert_int_equal(c.kind, ATM_TIER_KMEM_DAX);
	assert_int_equal(c.numa_node, 2);
	assert_non_null(strstr(c.why, "kmem-DAX"));

	atm_tier_opts o = {.slow = "kmem-dax"};
	assert_int_equal(atm_tier_choose(topo, &o, &c), ATM_OK);
	assert_int_equal(c.numa_node, 2);
	o.slow = "numa:1";
	assert_int_equal(atm_tier_choose(topo, &o, &c), ATM_OK);
	assert_int_equal(c.kind, ATM_TIER_NUMA_FAR);
	assert_int_equal(c.numa_node, 1);
	atm_tier_topo_destroy(topo);
}

static void test_tiers_xml_two_sockets_picks_far_node(void **state)
{
	(void)state;
	const fake_node nodes[] = {
		{0, 0, NULL, 64 * GB, 0, 0, 0, 0},
		{1, 1, NULL, 64 * GB, 0, 0, 0, 0},
	};
	atm_tier_topo *topo = NULL;
	atm_tier_choice c;
	assert_int_equal(atm_tier_topo_load_xml(&topo, write_xml("2s", nodes, 2)), ATM_OK);
	assert_int_equal(atm_tier_choose(topo, NULL, &c), ATM_OK);
	assert_int_equal(c.kind, ATM_TIER_NUMA_FAR);
	assert_int_equal(c.numa_node, 1);
	assert_non_null(strstr(c.why, "another socket"));
	/* kmem-DAX asked for on a machine without it */
	atm_tier_opts o = {.slow = "kmem-dax"};
	assert_int_equal(atm_tier_choose(topo, &o, &c), ATM_E_UNSUPPORTED);
	has("no kmem-DAX NUMA node here");
	atm_tier_topo_destroy(topo);
}

static void test_tiers_xml_cxl_before_far_socket(void **state)
{
	(void)state;
	const fake_node nodes[] = {
		{0, 0, NULL, 256 * GB, 0, 0, 0, 0},
		{2, 0, "CXL-DRAM", 128 * GB, 0, 0, 0, 0},
		{1, 1, NULL, 256 * GB, 0, 0, 0, 0},
	};
	atm_tier_topo *topo = NULL;
	atm_tier_choice c;
	assert_int_equal(atm_tier_topo_load_xml(&topo, write_xml("cxl", nodes, 3)), ATM_OK);
	assert_int_equal(node_by_os(topo, 2)->kind, ATM_TIER_CXL);
	assert_int_equal(atm_tier_choose(topo, NULL, &c), ATM_OK);
	assert_int_equal(c.kind, ATM_TIER_CXL);
	assert_int_equal(c.numa_node, 2);
	assert_non_null(strstr(c.why, "CXL-DRAM"));
	atm_tier_topo_destroy(topo);
}

/* test_tiers_xml_memory_mode -- a memory-side cache in front of the home node is Memory Mode
 * (2LM), and its size is the cache's */
static void test_tiers_xml_memory_mode(void **state)
{
	(void)state;
	const fake_node nodes[] = {
		{0, 0, NULL, 1536 * GB, 0, 0, 0, 0},
		{1, 1, NULL, 1536 * GB, 0, 0, 0, 0},
	};
	atm_tier_topo *topo = NULL;
	fake_memcache = 192 * GB;
	const char *path = write_xml("2lm", nodes, 2);
	fake_memcache = 0;
	assert_int_equal(atm_tier_topo_load_xml(&topo, path), ATM_OK);
	assert_int_equal(atm_tier_topo_memory_mode(topo), 192 * GB);
	const atm_tier_desc *home = node_by_os(topo, 0);
	assert_int_equal(home->memside_cache_bytes, 192 * GB);
	assert_non_null(strstr(home->name, "behind a 192.00 GiB memory-side cache"));
	assert_int_equal(node_by_os(topo, 1)->memside_cache_bytes, 0);
	atm_tier_topo_destroy(topo);
	/* no cache: not Memory Mode */
	assert_int_equal(atm_tier_topo_load_xml(&topo, write_xml("1lm", nodes, 2)), ATM_OK);
	assert_int_equal(atm_tier_topo_memory_mode(topo), 0);
	atm_tier_topo_destroy(topo);
}

static void test_tiers_xml_hbm_is_never_slow(void **state)
{
	(void)state;
	const fake_node nodes[] = {
		{0, 0, NULL, 256 * GB, 0, 0, 0, 0},
		{1, 0, "HBM", 64 * GB, 0, 0, 0, 0},
	};
	atm_tier_topo *topo = NULL;
	atm_tier_choice c;
	assert_int_equal(atm_tier_topo_load_xml(&topo, write_xml("hbm", nodes, 2)), ATM_OK);
	assert_int_equal(node_by_os(topo, 1)->kind, ATM_TIER_HBM);
	assert_int_equal(atm_tier_choose(topo, NULL, &c), ATM_OK);
	assert_int_equal(c.kind, ATM_TIER_PMEM_DIR);
	assert_non_null(strstr(c.why, "no NUMA node is slower"));
	/* with an fsdax file given, auto maps it instead of making a pmem kind */
	atm_tier_opts o = {.fsdax_path = "/mnt/pmem/pool"};
	assert_int_equal(atm_tier_choose(topo, &o, &c), ATM_OK);
	assert_int_equal(c.kind, ATM_TIER_FSDAX_FILE);
	atm_tier_topo_destroy(topo);
}

static void test_tiers_xml_attributes_decide_in_one_package(void **state)
{
	(void)state;
	/* two nodes of one package (sub-NUMA clusters, or an unlabelled slow
	 * node): only the one hwloc measures slower is a slow tier */
	const fake_node equal[] = {
		{0, 0, NULL, 32 * GB, 50000, 0, 0, 90},
		{1, 0, NULL, 32 * GB, 49000, 0, 0, 92},
	};
	const fake_node slower[] = {
		{0, 0, NULL, 32 * GB, 50000, 0, 0, 90},
		{1, 0, NULL, 512 * GB, 20000, 0, 0, 90},
	};
	atm_tier_topo *topo = NULL;
	atm_tier_choice c;
	assert_int_equal(atm_tier_topo_load_xml(&topo, write_xml("snc", equal, 2)), ATM_OK);
	assert_int_equal(node_by_os(topo, 1)->kind, ATM_TIER_DRAM);
	assert_int_equal(atm_tier_choose(topo, NULL, &c), ATM_OK);
	assert_int_equal(c.kind, ATM_TIER_PMEM_DIR);
	atm_tier_topo_destroy(topo);

	assert_int_equal(atm_tier_topo_load_xml(&topo, write_xml("slow", slower, 2)), ATM_OK);
	assert_int_equal(atm_tier_choose(topo, NULL, &c), ATM_OK);
	assert_int_equal(c.kind, ATM_TIER_NUMA_FAR);
	assert_int_equal(c.numa_node, 1);
	assert_non_null(strstr(c.why, "memory attributes"));
	atm_tier_topo_destroy(topo);
}

static void test_tiers_xml_cannot_open(void **state)
{
	(void)state;
	const fake_node nodes[] = {{0, 0, NULL, 8 * GB, 0, 0, 0, 0}, {1, 1, NULL, 8 * GB, 0, 0, 0, 0}};
	atm_tier_topo *topo = NULL;
	atm_tier *t = (atm_tier *)&t;
	assert_int_equal(atm_tier_topo_load_xml(&topo, write_xml("far", nodes, 2)), ATM_OK);
	assert_int_equal(atm_tier_open_fast(&t, topo, NULL), ATM_E_UNSUPPORTED);
	assert_null(t);
	has("loaded from XML");
	t = (atm_tier *)&t;
	assert_int_equal(atm_tier_open_slow(&t, topo, NULL), ATM_E_UNSUPPORTED);
	assert_null(t);
	has("another machine");
	atm_tier_topo_destroy(topo);
}

static void test_tiers_xml_missing_or_malformed(void **state)
{
	(void)state;
	atm_tier_topo *topo = (atm_tier_topo *)&topo;
	char path[256];
	snprintf(path, sizeof path, "%s/none.xml", tmp);
	assert_int_equal(atm_tier_topo_load_xml(&topo, path), ATM_E_IO);
	assert_null(topo);
	has(path);
	assert_int_equal(atm_write_file_atomic(path, "<topology>nope", 14), ATM_OK);
	assert_int_equal(atm_tier_topo_load_xml(&topo, path), ATM_E_INPUT);
	assert_null(topo);
	has(path);
}

/* ---------------------------------------------------------------- a tmpfs */

/* test_tiers_emulated_default_is_on_tmpfs -- with /dev/shm a tmpfs with room, an emulated
 * pmem-dir tier given no folder takes shm_dir() (made when missing) and says
 * so; one that is not emulated keeps tmp_dir() */
static void test_tiers_emulated_default_is_on_tmpfs(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *slow = NULL;
	atm_tier_file f;
	char warning[512];
	struct stat st;
	bool existed = stat(shm_dir(), &st) == 0;
	atm_tier_opts o = {.slow = "pmem-dir", .emulated = true, .slow_need_bytes = 16 << 20,
	                   .fast_need_bytes = 16 << 20};
	assert_int_equal(atm_tier_file_choose(&o, &f), ATM_OK);
	assert_string_equal(f.path, shm_dir());
	assert_string_equal(f.fs, "tmpfs");
	assert_false(f.writeback);
	assert_false(f.given);
	assert_non_null(strstr(f.why, "a tmpfs with room"));
	assert_false(atm_tier_file_warning(&f, "optane", warning, sizeof warning));
	if (existed && access(shm_dir(), W_OK) != 0)
		skip(); /* another user's: opening it is the error test_tiers_default_pmem_dir_is_created checks */
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_OK);
	const atm_tier_desc *d = atm_tier_describe(slow);
	assert_string_equal(d->file.path, shm_dir());
	assert_string_equal(d->file.fs, "tmpfs");
	assert_false(d->file.writeback);
	assert_non_null(strstr(d->name, shm_dir()));
	assert_int_equal(stat(shm_dir(), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	void *p = NULL;
	assert_int_equal(atm_tier_alloc(slow, 4 << 20, &p), ATM_OK);
	memset(p, 5, 4 << 20);
	atm_tier_free(slow, p, 4 << 20);
	atm_tier_destroy(slow);
	/* memkind unlinked its file when it made it: nothing is left behind */
	if (!existed)
		assert_int_equal(rmdir(shm_dir()), 0);
	/* the same run, not emulated, keeps the disk default */
	o.emulated = false;
	assert_int_equal(atm_tier_file_choose(&o, &f), ATM_OK);
	assert_string_equal(f.path, tmp_dir());
	atm_tier_topo_destroy(topo);
}

/* test_tiers_given_tmpfs_dir_gives_no_warning -- a folder of one's own on a tmpfs is kept and
 * meets no disk */
static void test_tiers_given_tmpfs_dir_gives_no_warning(void **state)
{
	(void)state;
	char dir[] = "/dev/shm/atm-test-tiers-XXXXXX";
	atm_tier_file f;
	char warning[512];
	assert_non_null(mkdtemp(dir));
	atm_tier_opts o = {.slow = "pmem-dir", .pmem_dir = dir, .emulated = true};
	assert_int_equal(atm_tier_file_choose(&o, &f), ATM_OK);
	assert_string_equal(f.path, dir);
	assert_true(f.given);
	assert_string_equal(f.fs, "tmpfs");
	assert_false(atm_tier_file_warning(&f, "optane", warning, sizeof warning));
	assert_int_equal(rmdir(dir), 0);
}

/* shm_is_tmpfs -- /dev/shm is a tmpfs here */
static bool shm_is_tmpfs(void)
{
	struct statfs sf;
	return statfs("/dev/shm", &sf) == 0 && (unsigned long)sf.f_type == TMPFS_MAGIC;
}

/* ---------------------------------------------------------------- real hardware */

static void test_tiers_hw_kmem_dax_allocates(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *slow = NULL;
	atm_tier_choice c;
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	atm_tier_opts o = {.slow = "kmem-dax"};
	if (atm_tier_choose(topo, &o, &c) != ATM_OK) {
		atm_tier_topo_destroy(topo);
		skip();
	}
	assert_int_equal(atm_tier_open_slow(&slow, topo, &o), ATM_OK);
	assert_int_equal(atm_tier_describe(slow)->kind, ATM_TIER_KMEM_DAX);
	void *p = NULL;
	assert_int_equal(atm_tier_alloc(slow, 8 << 20, &p), ATM_OK);
	memset(p, 3, 8 << 20);
	assert_int_equal(((unsigned char *)p)[(8 << 20) - 1], 3);
	atm_tier_free(slow, p, 8 << 20);
	atm_tier_destroy(slow);
	atm_tier_topo_destroy(topo);
}

static void test_tiers_hw_slow_node_allocates(void **state)
{
	(void)state;
	atm_tier_topo *topo = NULL;
	atm_tier *slow = NULL;
	atm_tier_choice c;
	assert_int_equal(atm_tier_topo_new(&topo), ATM_OK);
	assert_int_equal(atm_tier_choose(topo, NULL, &c), ATM_OK);
	if (c.numa_node < 0) {
		atm_tier_topo_destroy(topo);
		skip();
	}
	assert_int_equal(atm_tier_open_slow(&slow, topo, NULL), ATM_OK);
	assert_int_equal(atm_tier_describe(slow)->numa_node, c.numa_node);
	void *p = NULL;
	assert_int_equal(atm_tier_alloc(slow, 8 << 20, &p), ATM_OK);
	memset(p, 3, 8 << 20);
	atm_tier_free(slow, p, 8 << 20);
	atm_tier_destroy(slow);
	atm_tier_topo_destroy(topo);
}

/* hardware_present -- this machine has a slow NUMA node or kmem-DAX memory */
static bool hardware_present(void)
{
	atm_tier_topo *topo = NULL;
	atm_tier_choice c;
	bool yes = false;
	if (atm_tier_topo_new(&topo) < 0)
		return false;
	atm_tier_opts o = {.slow = "kmem-dax"};
	yes = atm_tier_choose(topo, &o, &c) == ATM_OK ||
	      (atm_tier_choose(topo, NULL, &c) == ATM_OK && c.numa_node >= 0);
	atm_tier_topo_destroy(topo);
	return yes;
}

/* main -- the portable suite; with --hardware, the tests that need PMM, CXL or
 * a second socket, which exit 77 (skipped) on machines without them; with --tmpfs, those of
 * the default pmem folder on /dev/shm, skipped where it is not a tmpfs */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tiers_kind_names),
		cmocka_unit_test(test_tiers_discovery_finds_dram),
		cmocka_unit_test(test_tiers_fast_tier_is_local_dram),
		cmocka_unit_test(test_tiers_fast_bound_to_node),
		cmocka_unit_test(test_tiers_bad_fast_choice),
		cmocka_unit_test_setup_teardown(test_tiers_slow_falls_back_to_pmem_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tiers_fsdax_map_and_copy, setup, teardown),
		cmocka_unit_test(test_tiers_default_pmem_dir_is_created),
		cmocka_unit_test(test_tiers_default_dirs_are_each_users),
		cmocka_unit_test(test_tiers_tmpfs_room_rule),
		cmocka_unit_test(test_tiers_default_without_room_falls_back),
		cmocka_unit_test_setup_teardown(test_tiers_given_dir_is_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tiers_missing_pmem_dir_is_io, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tiers_pmem_dir_under_a_file_is_io, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tiers_readonly_pmem_dir_is_io, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tiers_pmem_dir_limit_below_minimum, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tiers_bad_slow_choices, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tiers_xml_pmm_machine_picks_kmem_dax, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tiers_xml_two_sockets_picks_far_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tiers_xml_cxl_before_far_socket, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tiers_xml_memory_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tiers_xml_hbm_is_never_slow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tiers_xml_attributes_decide_in_one_package, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_tiers_xml_cannot_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tiers_xml_missing_or_malformed, setup, teardown),
	};
	const struct CMUnitTest hardware[] = {
		cmocka_unit_test(test_tiers_hw_kmem_dax_allocates),
		cmocka_unit_test(test_tiers_hw_slow_node_allocates),
	};
	const struct CMUnitTest tmpfs[] = {
		cmocka_unit_test(test_tiers_emulated_default_is_on_tmpfs),
		cmocka_unit_test(test_tiers_given_tmpfs_dir_gives_no_warning),
	};
	if (argc > 1 && strcmp(argv[1], "--tmpfs") == 0) {
		if (!shm_is_tmpfs()) {
			printf("/dev/shm is not a tmpfs here: skipped\n");
			return 77;
		}
		return cmocka_run_group_tests(tmpfs, NULL, NULL);
	}
	if (argc > 1 && strcmp(argv[1], "--hardware") == 0) {
		if (!hardware_present()) {
			printf("no kmem-DAX memory and no slower NUMA node here: skipped\n");
			return 77;
		}
		return cmocka_run_group_tests(hardware, NULL, NULL);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
