/* tiers.c -- find the machine's memories with hwloc, choose fast and slow tiers, open them */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <hwloc.h>
#include <libpmem2.h>
#include <memkind.h>

#include "memory.h"

/* hwloc reports bandwidths in MiB/s; descriptions use 1e9 bytes per second */
#define MIB_S_TO_GBPS (1048576.0 / 1e9)

/* How a tier gets its memory. */
typedef enum {
	BACKEND_MEMKIND, /* memkind kind: MEMKIND_DEFAULT, MEMKIND_DAX_KMEM or a PMEM kind */
	BACKEND_BIND,    /* hwloc_alloc_membind strictly bound to one node */
	BACKEND_MAP,     /* one libpmem2 mapping of a file */
} backend;

struct atm_tier_topo {
	hwloc_topology_t hw;
	bool thissystem;     /* false for XML topologies: describe, never allocate */
	int n_nodes;
	hwloc_obj_t *objs;   /* NUMA node objects, logical order */
	atm_tier_desc *descs;
	int home;
};

struct atm_tier {
	atm_tier_desc desc;
	char base_name[ATM_TIER_NAME_MAX]; /* desc.name before an emulation label */
	backend be;
	int64_t align;
	atm_tier_topo *topo;
	/* BACKEND_MEMKIND */
	memkind_t kind;
	bool own_kind;                     /* a PMEM kind we created and must destroy */
	/* BACKEND_BIND */
	hwloc_nodeset_t nodeset;
	/* BACKEND_MAP */
	int fd;
	struct pmem2_map *map;
	pmem2_memcpy_fn memcpy_fn;
	char *map_base;
	int64_t map_bytes;
	bool map_taken;
};

static const char *const kind_names[ATM_TIER_N_KINDS] = {
	"dram", "kmem-dax", "numa-far", "hbm", "cxl", "pmem-dir", "fsdax-file", "gpu-device",
	"pinned-host",
};

/* atm_tier_kind_name -- the kind as docs and results JSON spell it */
const char *atm_tier_kind_name(atm_tier_kind kind)
{
	if ((int)kind < 0 || kind >= ATM_TIER_N_KINDS)
		return "unknown";
	return kind_names[kind];
}

/* ---------------------------------------------------------------- discovery */

/* subtype_is -- hwloc subtype equals s, ignoring case (firmware spells them loosely) */
static bool subtype_is(const hwloc_obj_t o, const char *s)
{
	return o->subtype && strcasecmp(o->subtype, s) == 0;
}

/* is_kmem_dax -- memory the kernel onlined from a DAX device: hwloc names the
 * device, and on Linux an NVM node can only be such a node */
static bool is_kmem_dax(const hwloc_obj_t o)
{
	return hwloc_obj_get_info_by_name(o, "DAXDevice") != NULL || subtype_is(o, "NVM");
}

/* is_cxl -- hwloc's "CXL-DRAM" (2.10+) and kin */
static bool is_cxl(const hwloc_obj_t o)
{
	return o->subtype && strncasecmp(o->subtype, "CXL", 3) == 0;
}

/* is_hbm -- on-package high-bandwidth memory (Xeon Max, KNL MCDRAM) */
static bool is_hbm(const hwloc_obj_t o)
{
	return subtype_is(o, "HBM") || subtype_is(o, "MCDRAM");
}

/* same_package -- a and b hang under one package; without packages (some XML
 * and VM topologies) CPU locality stands in for it */
static bool same_package(hwloc_topology_t hw, hwloc_obj_t a, hwloc_obj_t b)
{
	hwloc_obj_t pa = hwloc_get_ancestor_obj_by_type(hw, HWLOC_OBJ_PACKAGE, a);
	hwloc_obj_t pb = hwloc_get_ancestor_obj_by_type(hw, HWLOC_OBJ_PACKAGE, b);
	if (pa && pb)
		return pa == pb;
	return hwloc_bitmap_intersects(a->cpuset, b->cpuset);
}

/* find_home -- the node of the CPU this thread last ran on, preferring plain
 * DRAM: CPU-less PMM and CXL nodes report their package's CPUs as locality */
static int find_home(atm_tier_topo *tp)
{
	int best = -1;
	hwloc_bitmap_t here = hwloc_bitmap_alloc();
	bool known = here && tp->thissystem &&
	             hwloc_get_last_cpu_location(tp->hw, here, HWLOC_CPUBIND_THREAD) == 0 &&
	             !hwloc_bitmap_iszero(here);
	/* passes: near our CPU and plain DRAM, near our CPU, plain DRAM, anything
	 * with memory (some machines have CPUs on memory-less nodes) */
	for (int pass = 0; pass < 4 && best < 0; pass++) {
		for (int i = 0; i < tp->n_nodes && best < 0; i++) {
			hwloc_obj_t o = tp->objs[i];
			if (hwloc_bitmap_iszero(o->cpuset) || o->attr->numanode.local_memory == 0)
				continue;
			if (pass % 2 == 0 && (is_kmem_dax(o) || is_cxl(o) || is_hbm(o)))
				continue;
			if (pass < 2 && known && !hwloc_bitmap_intersects(o->cpuset, here))
				continue;
			best = i;
		}
	}
	hwloc_bitmap_free(here);
	return best < 0 ? 0 : best;
}

/* get_attr -- a memory attribute of node o seen from the home CPUs, 0 when unknown */
static uint64_t get_attr(atm_tier_topo *tp, hwloc_memattr_id_t id, hwloc_obj_t o)
{
	struct hwloc_location loc = {.type = HWLOC_LOCATION_TYPE_CPUSET};
	loc.location.cpuset = tp->objs[tp->home]->cpuset;
	hwloc_uint64_t v = 0;
	if (hwloc_memattr_get_value(tp->hw, id, o, &loc, 0, &v) < 0)
		return 0;
	return v;
}

/* describe_node -- kind, name, capacity and speeds of node i */
static void describe_node(atm_tier_topo *tp, int i)
{
	hwloc_obj_t o = tp->objs[i], home = tp->objs[tp->home];
	atm_tier_desc *d = &tp->descs[i];
	memset(d, 0, sizeof *d);
	d->numa_node = (int)o->os_index;
	d->capacity_bytes = (int64_t)o->attr->numanode.local_memory;
	if (o->subtype)
		snprintf(d->subtype, sizeof d->subtype, "%s", o->subtype);
	d->kmem_dax = is_kmem_dax(o);
	/* memory-side caches are the NUMA node's parents (hwloc 2.1 and later) */
	for (hwloc_obj_t p = o->parent; p && p->type == HWLOC_OBJ_MEMCACHE; p = p->parent)
		d->memside_cache_bytes += (int64_t)p->attr->cache.size;
	d->local = i == tp->home || same_package(tp->hw, o, home);
	if (i == tp->home)
		d->kind = ATM_TIER_DRAM;
	else if (is_hbm(o))
		d->kind = ATM_TIER_HBM;
	else if (is_cxl(o))
		d->kind = ATM_TIER_CXL;
	else if (d->kmem_dax)
		d->kind = ATM_TIER_KMEM_DAX;
	else if (d->local)
		d->kind = ATM_TIER_DRAM; /* a sub-NUMA cluster of our own package */
	else
		d->kind = ATM_TIER_NUMA_FAR;

	uint64_t rd = get_attr(tp, HWLOC_MEMATTR_ID_READ_BANDWIDTH, o);
	uint64_t wr = get_attr(tp, HWLOC_MEMATTR_ID_WRITE_BANDWIDTH, o);
	uint64_t bw = get_attr(tp, HWLOC_MEMATTR_ID_BANDWIDTH, o);
	uint64_t lat = get_attr(tp, HWLOC_MEMATTR_ID_READ_LATENCY, o);
	if (!lat)
		lat = get_attr(tp, HWLOC_MEMATTR_ID_LATENCY, o);
	d->read_gbps = (double)(rd ? rd : bw) * MIB_S_TO_GBPS;
	d->write_gbps = (double)(wr ? wr : bw) * MIB_S_TO_GBPS;
	d->latency_ns = (double)lat;

	const char *what = "DRAM";
	switch (d->kind) {
	case ATM_TIER_KMEM_DAX: what = "kmem-DAX"; break;
	case ATM_TIER_NUMA_FAR: what = "far DRAM"; break;
	case ATM_TIER_HBM: what = "HBM"; break;
	case ATM_TIER_CXL: what = "CXL"; break;
	default: break;
	}
	int at;
	if (d->subtype[0])
		at = snprintf(d->name, sizeof d->name, "%s (%s), NUMA node %d", what, d->subtype,
		              d->numa_node);
	else
		at = snprintf(d->name, sizeof d->name, "%s, NUMA node %d", what, d->numa_node);
	if (d->memside_cache_bytes && at > 0 && (size_t)at < sizeof d->name) {
		char size[32];
		snprintf(d->name + at, sizeof d->name - (size_t)at, " behind a %s memory-side cache",
		         atm_format_bytes(d->memside_cache_bytes, size, sizeof size));
	}
}

/* topo_finish -- load hw and describe its nodes; takes hw (destroys it on failure) */
static atm_status topo_finish(atm_tier_topo **out, hwloc_topology_t hw, const char *origin)
{
	atm_status rc = ATM_OK;
	atm_tier_topo *tp = calloc(1, sizeof *tp);
	if (!tp) {
		hwloc_topology_destroy(hw);
		return atm_err(ATM_E_NOMEM, "out of memory describing %s", origin);
	}
	tp->hw = hw;
	/* memory-side caches tell Memory Mode apart */
	hwloc_topology_set_type_filter(hw, HWLOC_OBJ_MEMCACHE, HWLOC_TYPE_FILTER_KEEP_ALL);
	if (hwloc_topology_load(hw) < 0) {
		rc = atm_err(ATM_E_INPUT, "hwloc could not load the topology of %s: %s", origin,
		             strerror(errno));
		goto fail;
	}
	tp->thissystem = hwloc_topology_is_thissystem(hw) != 0;
	int n = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_NUMANODE);
	if (n <= 0) {
		rc = atm_err(ATM_E_INPUT, "%s has no NUMA node with memory", origin);
		goto fail;
	}
	tp->n_nodes = n;
	tp->objs = calloc((size_t)n, sizeof *tp->objs);
	tp->descs = calloc((size_t)n, sizeof *tp->descs);
	if (!tp->objs || !tp->descs) {
		rc = atm_err(ATM_E_NOMEM, "out of memory describing %s", origin);
		goto fail;
	}
	for (int i = 0; i < n; i++)
		tp->objs[i] = hwloc_get_obj_by_type(hw, HWLOC_OBJ_NUMANODE, (unsigned)i);
	tp->home = find_home(tp);
	for (int i = 0; i < n; i++)
		describe_node(tp, i);
	*out = tp;
	return ATM_OK;
fail:
	atm_tier_topo_destroy(tp);
	return rc;
}

/* atm_tier_topo_new -- hwloc's view of this machine */
atm_status atm_tier_topo_new(atm_tier_topo **topo)
{
	hwloc_topology_t hw;
	*topo = NULL;
	if (hwloc_topology_init(&hw) < 0)
		return atm_err(ATM_E_NOMEM, "hwloc could not start: %s", strerror(errno));
	return topo_finish(topo, hw, "this machine");
}

/* atm_tier_topo_load_xml -- a topology from an lstopo XML export */
atm_status atm_tier_topo_load_xml(atm_tier_topo **topo, const char *path)
{
	hwloc_topology_t hw;
	*topo = NULL;
	if (access(path, R_OK) < 0)
		return atm_err(ATM_E_IO, "cannot read topology %s: %s", path, strerror(errno));
	if (hwloc_topology_init(&hw) < 0)
		return atm_err(ATM_E_NOMEM, "hwloc could not start: %s", strerror(errno));
	if (hwloc_topology_set_xml(hw, path) < 0) {
		hwloc_topology_destroy(hw);
		return atm_err(ATM_E_INPUT, "%s is not an hwloc XML topology", path);
	}
	return topo_finish(topo, hw, path);
}

/* atm_tier_topo_destroy -- free the descriptions and hwloc's topology */
void atm_tier_topo_destroy(atm_tier_topo *topo)
{
	if (!topo)
		return;
	free(topo->descs);
	free(topo->objs);
	if (topo->hw)
		hwloc_topology_destroy(topo->hw);
	free(topo);
}

/* atm_tier_topo_n_nodes -- NUMA nodes hwloc found */
int atm_tier_topo_n_nodes(const atm_tier_topo *topo)
{
	return topo->n_nodes;
}

/* atm_tier_topo_node -- description of node i */
const atm_tier_desc *atm_tier_topo_node(const atm_tier_topo *topo, int i)
{
	if (i < 0 || i >= topo->n_nodes)
		return NULL;
	return &topo->descs[i];
}

/* atm_tier_topo_home -- the node we run on */
int atm_tier_topo_home(const atm_tier_topo *topo)
{
	return topo->home;
}

int64_t atm_tier_topo_memory_mode(const atm_tier_topo *topo)
{
	return topo->descs[topo->home].memside_cache_bytes;
}

/* ---------------------------------------------------------------- choosing */

/* parse_numa -- "numa:N" into N; false when it is not that form */
static bool parse_numa(const char *s, int *node)
{
	if (strncmp(s, "numa:", 5) != 0)
		return false;
	char *end;
	errno = 0;
	long v = strtol(s + 5, &end, 10);
	if (errno || end == s + 5 || *end || v < 0 || v > INT_MAX)
		return false;
	*node = (int)v;
	return true;
}

/* find_os_node -- index of the node with OS index os, -1 when none */
static int find_os_node(const atm_tier_topo *tp, int os)
{
	for (int i = 0; i < tp->n_nodes; i++)
		if (tp->descs[i].numa_node == os)
			return i;
	return -1;
}

/* list_nodes -- "0 (dram), 1 (numa-far)" for messages */
static void list_nodes(const atm_tier_topo *tp, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = '\0';
	for (int i = 0; i < tp->n_nodes && at < len; i++) {
		int w = snprintf(buf + at, len - at, "%s%d (%s)", i ? ", " : "", tp->descs[i].numa_node,
		                 atm_tier_kind_name(tp->descs[i].kind));
		if (w < 0)
			break;
		at += (size_t)w;
	}
}

/* slow_score -- how clearly node i is slow memory: 4 kmem-DAX, 3 CXL, 2 hwloc
 * measures it slower than home, 1 another socket, 0 not a slow tier */
static int slow_score(const atm_tier_topo *tp, int i)
{
	const atm_tier_desc *d = &tp->descs[i], *h = &tp->descs[tp->home];
	if (i == tp->home || d->capacity_bytes <= 0 || d->kind == ATM_TIER_HBM)
		return 0;
	if (d->kind == ATM_TIER_KMEM_DAX)
		return 4;
	if (d->kind == ATM_TIER_CXL)
		return 3;
	/* 10% margins: firmware tables round, and equal memories must not look slower */
	bool slower_bw = d->read_gbps > 0 && h->read_gbps > 0 && d->read_gbps < 0.9 * h->read_gbps;
	bool slower_lat = d->latency_ns > 0 && h->latency_ns > 0 && d->latency_ns > 1.1 * h->latency_ns;
	if (slower_bw || slower_lat)
		return 2;
	if (d->kind == ATM_TIER_NUMA_FAR)
		return 1;
	return 0;
}

/* kmem_available -- memkind can allocate from a kmem-DAX node here */
static bool kmem_available(const atm_tier_topo *tp)
{
	return tp->thissystem && memkind_check_available(MEMKIND_DAX_KMEM) == MEMKIND_SUCCESS;
}

/* choose_file -- the file-backed fallback: the user's fsdax file if given, else a pmem dir */
static void choose_file(const atm_tier_opts *o, atm_tier_choice *out, const char *why)
{
	out->numa_node = -1;
	if (o->fsdax_path) {
		out->kind = ATM_TIER_FSDAX_FILE;
		snprintf(out->why, sizeof out->why, "%s; an fsdax file was given", why);
	} else {
		out->kind = ATM_TIER_PMEM_DIR;
		snprintf(out->why, sizeof out->why, "%s; a PMEM kind in a directory", why);
	}
}

/* atm_tier_choose -- the slow tier o asks for, in the order of docs/tiers.md */
atm_status atm_tier_choose(const atm_tier_topo *topo, const atm_tier_opts *o, atm_tier_choice *out)
{
	static const atm_tier_opts none = {0};
	char nodes[256];
	int node = -1;
	if (!o)
		o = &none;
	const char *s = o->slow ? o->slow : "auto";
	memset(out, 0, sizeof *out);
	out->numa_node = -1;

	if (strcmp(s, "auto") == 0) {
		int best = -1, best_score = 0;
		for (int i = 0; i < topo->n_nodes; i++) {
			int sc = slow_score(topo, i);
			if (sc == 0)
				continue;
			/* among equals the larger node: the slow tier is the capacity tier */
			if (sc > best_score || (sc == best_score && topo->descs[i].capacity_bytes >
			                                               topo->descs[best].capacity_bytes)) {
				best = i;
				best_score = sc;
			}
		}
		if (best < 0) {
			choose_file(o, out, topo->n_nodes == 1 ? "one NUMA node: no slower memory"
			                                       : "no NUMA node is slower than ours");
			return ATM_OK;
		}
		const atm_tier_desc *d = &topo->descs[best];
		out->kind = d->kind == ATM_TIER_DRAM ? ATM_TIER_NUMA_FAR : d->kind;
		out->numa_node = d->numa_node;
		static const char *const reason[] = {"", "is another socket's memory",
		                                     "is slower by hwloc's memory attributes", "is CXL memory",
		                                     "is kmem-DAX memory"};
		snprintf(out->why, sizeof out->why, "NUMA node %d %s%s%s%s", d->numa_node, reason[best_score],
		         d->subtype[0] ? " (" : "", d->subtype, d->subtype[0] ? ")" : "");
		return ATM_OK;
	}
	if (strcmp(s, "kmem-dax") == 0) {
		int best = -1;
		for (int i = 0; i < topo->n_nodes; i++)
			if (topo->descs[i].kind == ATM_TIER_KMEM_DAX &&
			    (best < 0 || topo->descs[i].capacity_bytes > topo->descs[best].capacity_bytes))
				best = i;
		if (best < 0 && !kmem_available(topo)) {
			char msg[MEMKIND_ERROR_MESSAGE_SIZE] = "";
			if (topo->thissystem)
				memkind_error_message(memkind_check_available(MEMKIND_DAX_KMEM), msg, sizeof msg);
			return atm_err(ATM_E_UNSUPPORTED,
			               "slow=kmem-dax: no kmem-DAX NUMA node here%s%s%s; online PMM as system "
			               "RAM (daxctl reconfigure-device --mode=system-ram) or choose pmem-dir",
			               msg[0] ? " (memkind: " : "", msg, msg[0] ? ")" : "");
		}
		out->kind = ATM_TIER_KMEM_DAX;
		out->numa_node = best < 0 ? -1 : topo->descs[best].numa_node;
		snprintf(out->why, sizeof out->why, "kmem-DAX asked for");
		return ATM_OK;
	}
	if (strncmp(s, "numa:", 5) == 0) {
		if (!parse_numa(s, &node))
			return atm_err(ATM_E_USAGE, "slow=%s: expected numa:N with N a NUMA node number", s);
		int i = find_os_node(topo, node);
		list_nodes(topo, nodes, sizeof nodes);
		if (i < 0)
			return atm_err(ATM_E_UNSUPPORTED, "slow=%s: no NUMA node %d here (nodes: %s)", s, node,
			               nodes);
		if (i == topo->home)
			return atm_err(ATM_E_USAGE,
			               "slow=%s: node %d is the one we run on, the fast tier (nodes: %s)", s,
			               node, nodes);
		if (topo->descs[i].capacity_bytes <= 0)
			return atm_err(ATM_E_UNSUPPORTED, "slow=%s: NUMA node %d has no memory", s, node);
		out->kind = topo->descs[i].kind == ATM_TIER_DRAM ? ATM_TIER_NUMA_FAR : topo->descs[i].kind;
		out->numa_node = node;
		snprintf(out->why, sizeof out->why, "NUMA node %d asked for", node);
		return ATM_OK;
	}
	if (strcmp(s, "pmem-dir") == 0) {
		out->kind = ATM_TIER_PMEM_DIR;
		snprintf(out->why, sizeof out->why, "pmem-dir asked for");
		return ATM_OK;
	}
	if (strcmp(s, "fsdax") == 0) {
		if (!o->fsdax_path || !o->fsdax_path[0])
			return atm_err(ATM_E_USAGE, "slow=fsdax needs the path of a file to map");
		out->kind = ATM_TIER_FSDAX_FILE;
		snprintf(out->why, sizeof out->why, "fsdax asked for");
		return ATM_OK;
	}
	return atm_err(ATM_E_USAGE, "unknown slow tier '%s' (valid: auto, kmem-dax, numa:N, pmem-dir, fsdax)",
	               s);
}

/* ---------------------------------------------------------------- opening */

/* tier_new -- an empty tier of topo into *out, to be opened on this machine (which: "fast" or
 * "slow", for the message); ATM_E_UNSUPPORTED when topo describes another one */
static atm_status tier_new(atm_tier **out, atm_tier_topo *topo, const char *which)
{
	atm_tier *t;
	*out = NULL;
	if (!topo->thissystem)
		return atm_err(ATM_E_UNSUPPORTED,
		               "the topology was loaded from XML: it describes another machine, tiers are "
		               "opened on this one");
	t = calloc(1, sizeof *t);
	if (!t)
		return atm_err(ATM_E_NOMEM, "out of memory opening the %s tier", which);
	t->topo = topo;
	t->fd = -1;
	t->align = ATM_ARENA_ALIGN;
	*out = t;
	return ATM_OK;
}

/* set_name -- desc.name and the name kept for emulation labels */
static void set_name(atm_tier *t, const char *name)
{
	snprintf(t->desc.name, sizeof t->desc.name, "%s", name);
	snprintf(t->base_name, sizeof t->base_name, "%s", name);
}

/* open_bind -- allocations strictly bound to node index i */
static atm_status open_bind(atm_tier *t, int i)
{
	t->be = BACKEND_BIND;
	t->desc = t->topo->descs[i];
	set_name(t, t->topo->descs[i].name);
	t->nodeset = hwloc_bitmap_alloc();
	if (!t->nodeset)
		return atm_err(ATM_E_NOMEM, "out of memory opening %s", t->desc.name);
	hwloc_bitmap_only(t->nodeset, t->topo->objs[i]->os_index);
	const struct hwloc_topology_support *sup = hwloc_topology_get_support(t->topo->hw);
	if (!sup->membind->alloc_membind || !sup->membind->bind_membind)
		return atm_err(ATM_E_UNSUPPORTED,
		               "%s: this system cannot bind memory to a NUMA node (hwloc has no membind "
		               "support)",
		               t->desc.name);
	return ATM_OK;
}

/* open_memkind_default -- MEMKIND_DEFAULT, described as the home node */
static atm_status open_memkind_default(atm_tier *t)
{
	char name[ATM_TIER_NAME_MAX];
	t->be = BACKEND_MEMKIND;
	t->kind = MEMKIND_DEFAULT;
	t->desc = t->topo->descs[t->topo->home];
	snprintf(name, sizeof name, "%.120s (memkind default kind)", t->topo->descs[t->topo->home].name);
	set_name(t, name);
	return ATM_OK;
}

/* atm_tier_open_fast -- local DRAM */
atm_status atm_tier_open_fast(atm_tier **out, atm_tier_topo *topo, const atm_tier_opts *o)
{
	static const atm_tier_opts none = {0};
	atm_status rc = ATM_OK;
	atm_tier *t = NULL;
	int node;
	*out = NULL;
	if (!o)
		o = &none;
	const char *s = o->fast ? o->fast : "auto";
	if ((rc = tier_new(&t, topo, "fast")) < 0)
		return rc;
	if (strcmp(s, "auto") == 0) {
		int with_memory = 0;
		for (int i = 0; i < topo->n_nodes; i++)
			with_memory += topo->descs[i].capacity_bytes > 0;
		/* With other nodes present the default policy spills into them when the
		 * home node fills, and one of them may be the slow tier: bind instead. */
		rc = with_memory > 1 ? open_bind(t, topo->home) : open_memkind_default(t);
	} else if (strcmp(s, "memkind") == 0) {
		rc = open_memkind_default(t);
	} else if (parse_numa(s, &node)) {
		int i = find_os_node(topo, node);
		if (i < 0 || topo->descs[i].capacity_bytes <= 0) {
			char nodes[256];
			list_nodes(topo, nodes, sizeof nodes);
			rc = atm_err(ATM_E_UNSUPPORTED, "fast=%s: no NUMA node %d with memory here (nodes: %s)",
			             s, node, nodes);
			goto fail;
		}
		rc = open_bind(t, i);
	} else {
		rc = atm_err(ATM_E_USAGE, "unknown fast tier '%s' (valid: auto, memkind, numa:N)", s);
	}
	if (rc < 0)
		goto fail;
	*out = t;
	return ATM_OK;
fail:
	atm_tier_destroy(t);
	return rc;
}

/* check_dir -- the pmem directory exists (a default one is made, with the folders above it),
 * is a directory and takes a new file; all before memkind allocates anything */
static atm_status check_dir(const char *dir, bool is_default)
{
	struct stat st;
	char probe[PATH_MAX];
	atm_status rc;
	if (stat(dir, &st) < 0 && errno == ENOENT && is_default && (rc = atm_make_dirs(dir, 0700)) < 0)
		return atm_err_prefix(rc, "pmem dir: ");
	if (stat(dir, &st) < 0) {
		if (errno == ENOENT)
			return atm_err(ATM_E_IO,
			               "pmem dir '%s' does not exist: create it, or mount an fsdax file "
			               "system there",
			               dir);
		return atm_err(ATM_E_IO, "pmem dir '%s': %s", dir, strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		return atm_err(ATM_E_IO, "pmem dir '%s' is not a directory", dir);
	/* a default folder is this user's own: one that someone else made in its place is never
	 * written into (nor its files left to them) */
	if (is_default && st.st_uid != geteuid())
		return atm_err(ATM_E_IO, "pmem dir '%s' belongs to user %lu, not to you (%lu): the "
		               "default folder is made for each user; remove it, or give --pmem-dir a "
		               "folder of your own", dir, (unsigned long)st.st_uid,
		               (unsigned long)geteuid());
	if (is_default && (st.st_mode & 077) && chmod(dir, 0700) < 0)
		return atm_err(ATM_E_IO, "pmem dir '%s': cannot make it private (0700): %s", dir,
		               strerror(errno));
	/* access(W_OK) says yes to root on a read-only mount; creating a file does not lie */
	if (snprintf(probe, sizeof probe, "%s/.autotm-probe-XXXXXX", dir) >= (int)sizeof probe)
		return atm_err(ATM_E_IO, "pmem dir '%s': path too long", dir);
	int fd = mkstemp(probe);
	if (fd < 0 && errno == ENOENT) /* procfs, sysfs: a folder that takes no files */
		return atm_err(ATM_E_IO, "pmem dir '%s' takes no new files (a system folder?); give a "
		               "folder on a file system that can hold the slow tier's file", dir);
	if (fd < 0)
		return atm_err(ATM_E_IO, "pmem dir '%s' is not writable: %s", dir, strerror(errno));
	unlink(probe);
	close(fd);
	return ATM_OK;
}

/* open_pmem_dir -- a memkind PMEM kind on a temporary file in the directory */
static atm_status open_pmem_dir(atm_tier *t, const atm_tier_opts *o)
{
	atm_tier_file *f = &t->desc.file;
	char name[ATM_TIER_NAME_MAX];
	atm_status rc;
	/* the folder given, or the default for this run (a tmpfs when emulating) */
	atm_tier_pmem_file(o, f);
	const char *dir = o->pmem_dir ? o->pmem_dir : f->path; /* a given one whole, however long */
	if (o->slow_bytes < 0 || (o->slow_bytes > 0 && o->slow_bytes < MEMKIND_PMEM_MIN_SIZE))
		return atm_err(ATM_E_USAGE,
		               "pmem dir '%s': a size limit of %lld bytes is below memkind's minimum of "
		               "16 MiB (%d bytes); 0 means no limit",
		               dir, (long long)o->slow_bytes, (int)MEMKIND_PMEM_MIN_SIZE);
	if ((rc = check_dir(dir, !f->given)) < 0)
		return rc;
	/* now that it exists: a file system mounted on the folder itself is the one used */
	atm_tier_file_fs(dir, f->fs, sizeof f->fs, &f->writeback);
	t->be = BACKEND_MEMKIND;
	int err = memkind_create_pmem(dir, (size_t)o->slow_bytes, &t->kind);
	if (err != MEMKIND_SUCCESS) {
		char msg[MEMKIND_ERROR_MESSAGE_SIZE];
		memkind_error_message(err, msg, sizeof msg);
		t->kind = NULL;
		return atm_err(ATM_E_IO, "memkind could not make a PMEM kind in '%s': %s", dir, msg);
	}
	t->own_kind = true;
	t->desc.dax = memkind_check_dax_path(dir) == MEMKIND_SUCCESS;
	t->desc.kind = ATM_TIER_PMEM_DIR;
	t->desc.numa_node = -1;
	struct statvfs vfs;
	int64_t avail = statvfs(dir, &vfs) == 0 ? (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize : 0;
	t->desc.capacity_bytes = o->slow_bytes > 0 && (avail == 0 || o->slow_bytes < avail)
	                                 ? o->slow_bytes
	                                 : avail;
	/* 256-byte lines inside Optane: tensors sharing one would be written twice */
	t->align = 256;
	snprintf(name, sizeof name, "pmem dir %.120s (%s)", dir, t->desc.dax ? "DAX" : "page cache, not PMM");
	set_name(t, name);
	return ATM_OK;
}

/* open_fsdax -- map the user's file with libpmem2 (page granularity works on
 * any file; byte granularity only on a real DAX mount) */
static atm_status open_fsdax(atm_tier *t, const atm_tier_opts *o)
{
	const char *path = o->fsdax_path;
	struct pmem2_config *cfg = NULL;
	struct pmem2_source *src = NULL;
	char name[ATM_TIER_NAME_MAX];
	atm_status rc = ATM_OK;
	struct stat st;
	int64_t want = o->slow_bytes;
	t->be = BACKEND_MAP;
	if (want < 0)
		return atm_err(ATM_E_USAGE, "fsdax file '%s': negative size %lld", path, (long long)want);
	t->fd = open(path, O_RDWR | O_CLOEXEC | (want > 0 ? O_CREAT : 0), 0600);
	if (t->fd < 0) {
		if (errno == ENOENT)
			return atm_err(ATM_E_IO, "fsdax file '%s' does not exist (give a size to create it)",
			               path);
		return atm_err(ATM_E_IO, "cannot open fsdax file '%s': %s", path, strerror(errno));
	}
	if (fstat(t->fd, &st) < 0)
		return atm_err(ATM_E_IO, "fsdax file '%s': %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))
		return atm_err(ATM_E_IO, "fsdax file '%s' is neither a file nor a device-DAX device", path);
	if (S_ISREG(st.st_mode)) {
		int64_t page = sysconf(_SC_PAGESIZE);
		int64_t size = want > 0 ? (want + page - 1) / page * page : (int64_t)st.st_size;
		if (size == 0)
			return atm_err(ATM_E_USAGE, "fsdax file '%s' is empty: give the size to map", path);
		/* Allocate every block now: a store into a hole of a full file system
		 * is a SIGBUS, not an error we could report. */
		int err = posix_fallocate(t->fd, 0, (off_t)size);
		if (err == EOPNOTSUPP || err == EINVAL)
			err = size > st.st_size && ftruncate(t->fd, (off_t)size) < 0 ? errno : 0;
		if (err == ENOSPC || err == EFBIG)
			return atm_err(ATM_E_NOSPACE, "fsdax file '%s': no space for %lld bytes on its file system",
			               path, (long long)size);
		if (err)
			return atm_err(ATM_E_IO, "fsdax file '%s': cannot make it %lld bytes: %s", path,
			               (long long)size, strerror(err));
	}
	size_t src_bytes = 0, src_align = 0;
	int perr;
	if ((perr = pmem2_config_new(&cfg)) != 0 ||
	    (perr = pmem2_config_set_required_store_granularity(cfg, PMEM2_GRANULARITY_PAGE)) != 0 ||
	    (perr = pmem2_source_from_fd(&src, t->fd)) != 0 ||
	    (perr = pmem2_source_size(src, &src_bytes)) != 0 ||
	    (perr = pmem2_source_alignment(src, &src_align)) != 0) {
		const char *why = pmem2_errormsg();
		if (S_ISCHR(st.st_mode) && (!why || !*why))
			why = "a character device that is not device DAX (/dev/daxN.M)";
		rc = atm_err(ATM_E_UNSUPPORTED, "libpmem2 cannot use '%s': %s", path,
		             why && *why ? why : "no reason given");
		goto done;
	}
	size_t len = src_align ? src_bytes / src_align * src_align : src_bytes;
	if (want > 0 && (size_t)want < len)
		len = ((size_t)want + src_align - 1) / src_align * src_align;
	if (len == 0) {
		rc = atm_err(ATM_E_USAGE, "fsdax file '%s' is smaller than one page", path);
		goto done;
	}
	if ((perr = pmem2_config_set_length(cfg, len)) != 0 ||
	    (perr = pmem2_map_new(&t->map, cfg, src)) != 0) {
		t->map = NULL;
		rc = atm_err(ATM_E_UNSUPPORTED, "libpmem2 cannot map '%s': %s", path, pmem2_errormsg());
		goto done;
	}
	t->memcpy_fn = pmem2_get_memcpy_fn(t->map);
	t->map_base = pmem2_map_get_address(t->map);
	t->map_bytes = (int64_t)pmem2_map_get_size(t->map);
	/* Finer than a page means MAP_SYNC worked: the file sits on real DAX memory. */
	t->desc.dax = pmem2_map_get_store_granularity(t->map) != PMEM2_GRANULARITY_PAGE;
	t->desc.kind = ATM_TIER_FSDAX_FILE;
	t->desc.numa_node = -1;
	t->desc.capacity_bytes = t->map_bytes;
	snprintf(t->desc.file.path, sizeof t->desc.file.path, "%s", path);
	t->desc.file.given = true;
	atm_tier_file_fs(path, t->desc.file.fs, sizeof t->desc.file.fs, &t->desc.file.writeback);
	t->desc.file.writeback = t->desc.file.writeback && !t->desc.dax;
	t->align = 256; /* as for pmem dirs: Optane's 256-byte internal line */
	snprintf(name, sizeof name, "fsdax file %s (%s)", path, t->desc.dax ? "DAX" : "page cache, not PMM");
	set_name(t, name);
done:
	pmem2_source_delete(&src);
	pmem2_config_delete(&cfg);
	return rc;
}

/* open_kmem -- memkind's kmem-DAX kind, or a strict bind to the node when
 * memkind cannot use it (an old daxctl, say) */
static atm_status open_kmem(atm_tier *t, int numa_node)
{
	int i = numa_node >= 0 ? find_os_node(t->topo, numa_node) : -1;
	if (!kmem_available(t->topo)) {
		if (i < 0)
			return atm_err(ATM_E_UNSUPPORTED, "memkind cannot allocate from kmem-DAX memory here");
		return open_bind(t, i);
	}
	/* memkind takes the kmem-DAX node closest to the CPU; with several such
	 * nodes the description may name a sibling of the one it uses */
	t->be = BACKEND_MEMKIND;
	t->kind = MEMKIND_DAX_KMEM;
	t->align = 256;
	if (i >= 0) {
		t->desc = t->topo->descs[i];
		char name[ATM_TIER_NAME_MAX];
		snprintf(name, sizeof name, "%.120s (memkind DAX_KMEM)", t->topo->descs[i].name);
		set_name(t, name);
	} else {
		t->desc.kind = ATM_TIER_KMEM_DAX;
		t->desc.numa_node = -1;
		t->desc.kmem_dax = true;
		ssize_t cap = memkind_get_capacity(MEMKIND_DAX_KMEM);
		t->desc.capacity_bytes = cap > 0 ? (int64_t)cap : 0;
		set_name(t, "kmem-DAX memory (memkind DAX_KMEM)");
	}
	return ATM_OK;
}

/* atm_tier_open_slow -- open what atm_tier_choose picks */
atm_status atm_tier_open_slow(atm_tier **out, atm_tier_topo *topo, const atm_tier_opts *o)
{
	static const atm_tier_opts none = {0};
	atm_tier_choice c;
	atm_status rc;
	atm_tier *t = NULL;
	*out = NULL;
	if (!o)
		o = &none;
	if ((rc = atm_tier_choose(topo, o, &c)) < 0 || (rc = tier_new(&t, topo, "slow")) < 0)
		return rc;
	switch (c.kind) {
	case ATM_TIER_PMEM_DIR: rc = open_pmem_dir(t, o); break;
	case ATM_TIER_FSDAX_FILE: rc = open_fsdax(t, o); break;
	case ATM_TIER_KMEM_DAX: rc = open_kmem(t, c.numa_node); break;
	default:
		rc = open_bind(t, find_os_node(topo, c.numa_node));
		/* a same-package node chosen for its slower attributes is slow memory here */
		t->desc.kind = c.kind;
		break;
	}
	if (rc < 0)
		goto fail;
	*out = t;
	return ATM_OK;
fail:
	atm_tier_destroy(t);
	return rc;
}

/* atm_tier_destroy -- close the kind, binding or mapping; the fsdax file stays (it is the user's) */
void atm_tier_destroy(atm_tier *t)
{
	if (!t)
		return;
	/* memkind unlinks a PMEM kind's file when it makes it; destroying the kind frees the space */
	if (t->own_kind && t->kind)
		memkind_destroy_kind(t->kind);
	if (t->nodeset)
		hwloc_bitmap_free(t->nodeset);
	if (t->map)
		pmem2_map_delete(&t->map);
	if (t->fd >= 0)
		close(t->fd);
	free(t);
}

/* atm_tier_describe -- what t is */
const atm_tier_desc *atm_tier_describe(const atm_tier *t)
{
	return &t->desc;
}

/* atm_tier_alignment -- alignment of t's allocations */
int64_t atm_tier_alignment(const atm_tier *t)
{
	return t->align;
}

/* atm_tier_set_emulation -- take the spec's speeds and say so in the name */
atm_status atm_tier_set_emulation(atm_tier *t, const atm_emu_spec *spec)
{
	if (!spec->name[0] || !(spec->read_gbps > 0) || !(spec->write_gbps > 0))
		return atm_err(ATM_E_USAGE, "emulation spec '%s' has no name or no bandwidths", spec->name);
	t->desc.emulated = true;
	snprintf(t->desc.emulation, sizeof t->desc.emulation, "%s", spec->name);
	t->desc.read_gbps = spec->read_gbps;
	t->desc.write_gbps = spec->write_gbps;
	t->desc.latency_ns = spec->latency_ns;
	t->desc.emulation_absolute = spec->absolute || !(spec->scale > 0);
	t->desc.emulation_scale = spec->scale > 0 ? spec->scale : 1;
	t->desc.emulation_fast_gbps = spec->fast_gbps;
	t->desc.emulation_reference_gbps = spec->reference_gbps > 0 ? spec->reference_gbps
	                                                            : spec->fast_gbps;
	if (t->desc.emulation_absolute)
		snprintf(t->desc.name, sizeof t->desc.name, "%.100s emulating %s (absolute)",
		         t->base_name, spec->name);
	else
		snprintf(t->desc.name, sizeof t->desc.name, "%.100s emulating %s x%.3g", t->base_name,
		         spec->name, spec->scale);
	return ATM_OK;
}

/* ---------------------------------------------------------------- allocation */

/* atm_tier_alloc -- raw aligned memory from t */
atm_status atm_tier_alloc(atm_tier *t, int64_t bytes, void **ptr)
{
	*ptr = NULL;
	if (bytes <= 0)
		return atm_err(ATM_E_USAGE, "%s: cannot allocate %lld bytes", t->desc.name, (long long)bytes);
	if ((uint64_t)bytes > SIZE_MAX)
		return atm_err(ATM_E_NOSPACE, "%s: %lld bytes do not fit the address space", t->desc.name,
		               (long long)bytes);
	switch (t->be) {
	case BACKEND_MEMKIND: {
		void *p = NULL;
		int err = memkind_posix_memalign(t->kind, &p, (size_t)t->align, (size_t)bytes);
		if (err == ENOMEM || (err == 0 && !p))
			return atm_err(ATM_E_NOSPACE, "%s: no space for %lld bytes", t->desc.name,
			               (long long)bytes);
		if (err)
			return atm_err(ATM_E_INTERNAL, "%s: memkind_posix_memalign: %s", t->desc.name,
			               strerror(err));
		*ptr = p;
		return ATM_OK;
	}
	case BACKEND_BIND: {
		/* STRICT: a bound allocation that cannot be bound fails instead of landing elsewhere */
		errno = 0;
		void *p = hwloc_alloc_membind(t->topo->hw, (size_t)bytes, t->nodeset, HWLOC_MEMBIND_BIND,
		                              HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_STRICT);
		if (!p && errno == ENOMEM)
			return atm_err(ATM_E_NOSPACE, "%s: no space for %lld bytes", t->desc.name,
			               (long long)bytes);
		if (!p)
			return atm_err(ATM_E_UNSUPPORTED, "%s: cannot bind %lld bytes to the node: %s",
			               t->desc.name, (long long)bytes, strerror(errno));
		*ptr = p;
		return ATM_OK;
	}
	case BACKEND_MAP:
		break;
	}
	return atm_err(ATM_E_USAGE, "%s is one mapping: allocate in it through a heap pool", t->desc.name);
}

/* atm_tier_free -- release an atm_tier_alloc */
void atm_tier_free(atm_tier *t, void *ptr, int64_t bytes)
{
	if (!ptr)
		return;
	if (t->be == BACKEND_MEMKIND)
		memkind_free(t->kind, ptr);
	else if (t->be == BACKEND_BIND)
		hwloc_free(t->topo->hw, ptr, (size_t)bytes);
}

/* atm_tier_is_mapping -- t is an fsdax mapping */
bool atm_tier_is_mapping(const atm_tier *t)
{
	return t->be == BACKEND_MAP;
}

/* atm_tier_map_acquire -- lend the whole mapping to one pool */
atm_status atm_tier_map_acquire(atm_tier *t, void **base, int64_t *bytes)
{
	*base = NULL;
	*bytes = 0;
	if (t->be != BACKEND_MAP)
		return atm_err(ATM_E_USAGE, "%s is not a mapping", t->desc.name);
	if (t->map_taken)
		return atm_err(ATM_E_USAGE, "%s is already used by another pool", t->desc.name);
	t->map_taken = true;
	*base = t->map_base;
	*bytes = t->map_bytes;
	return ATM_OK;
}

/* atm_tier_map_release -- the pool is done with the mapping */
void atm_tier_map_release(atm_tier *t)
{
	t->map_taken = false;
}

/* atm_tier_copy -- copy into t's memory with its routine */
void atm_tier_copy(const atm_tier *t, void *dst, const void *src, size_t n)
{
	if (n == 0)
		return;
	if (t->be == BACKEND_MAP)
		t->memcpy_fn(dst, src, n, PMEM2_F_MEM_NONTEMPORAL);
	else
		memcpy(dst, src, n);
}
