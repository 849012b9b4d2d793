/* memory.h -- memory tiers (hwloc discovery, memkind/libpmem2/hwloc allocation), pools and tier emulation
 *
 * Usage:
 *
 *     atm_tier_topo *topo = NULL;
 *     atm_tier *fast = NULL, *slow = NULL;
 *     atm_pool *arena = NULL, *heap = NULL;
 *     atm_tier_opts o = {0};                         // fast and slow "auto"
 *     atm_tier_topo_new(&topo);                      // NUMA nodes, kinds, bandwidths
 *     atm_tier_open_fast(&fast, topo, &o);           // local DRAM
 *     atm_tier_open_slow(&slow, topo, &o);           // kmem-DAX, slower node, fsdax file or pmem dir
 *     atm_pool_arena_new(&arena, fast, 1 << 30);     // one block; tensors at planned offsets
 *     atm_pool_heap_new(&heap, slow, 0);             // one allocation per slow tensor
 *     void *a, *b;
 *     atm_pool_alloc_at(arena, 0, 4096, &a);
 *     atm_pool_alloc(heap, 4096, &b);
 *     atm_pool_copy(heap, b, a, 4096);               // non-temporal into an fsdax mapping
 *     atm_emu_spec spec;                             // make the slow tier behave like Optane
 *     atm_emu *emu = NULL;
 *     atm_emu_spec_resolve("optane", &spec);
 *     atm_emu_new(&emu, &spec, topo, 0);
 *     atm_tier_set_emulation(slow, &spec);           // the description says so
 *     atm_emu_wait(emu, 0, 4096, NULL);              // after writing 4096 slow bytes
 *     atm_emu_destroy(emu);
 *     atm_pool_destroy(heap);
 *     atm_pool_destroy(arena);
 *     atm_tier_destroy(slow);
 *     atm_tier_destroy(fast);
 *     atm_tier_topo_destroy(topo);
 *
 * Lifetimes: a topology outlives the tiers opened from it, a tier outlives its
 * pools. A pool may be used from several threads (the executor allocates while
 * its mover thread copies): allocation, freeing, statistics and the range check
 * of a copy take the pool's lock; the copy itself does not. Functions that can fail return an atm_status and leave a message in
 * atm_errmsg(); out-parameters are NULL (or zeroed) on failure. The order in
 * which the slow tier is chosen, and the sources of the emulation presets, are
 * in docs/tiers.md.
 */
#ifndef ATM_RUNTIME_MEMORY_H
#define ATM_RUNTIME_MEMORY_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atm_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- tiers */

typedef enum {
	ATM_TIER_DRAM = 0,   /* DRAM of the node we run on (or of a node in the same package) */
	ATM_TIER_KMEM_DAX,   /* PMM (or other memory) onlined as a CPU-less node by the kmem DAX driver */
	ATM_TIER_NUMA_FAR,   /* memory of another socket, or a node that hwloc says is slower */
	ATM_TIER_HBM,        /* high-bandwidth memory node: faster, so never chosen as slow */
	ATM_TIER_CXL,        /* CXL Type-3 memory expander node */
	ATM_TIER_PMEM_DIR,   /* memkind PMEM kind: a temporary file in a directory */
	ATM_TIER_FSDAX_FILE, /* a user's file mapped with libpmem2 */
	ATM_TIER_GPU_DEVICE, /* a GPU's own memory (cudaMalloc), or the simulated GPU's arena */
	ATM_TIER_PINNED_HOST, /* page-locked host memory a GPU copies to and from (cudaHostAlloc) */
	ATM_TIER_N_KINDS
} atm_tier_kind;

/* atm_tier_kind_name -- "dram", "kmem-dax", "numa-far", "hbm", "cxl", "pmem-dir", "fsdax-file",
 * "gpu-device", "pinned-host" */
const char *atm_tier_kind_name(atm_tier_kind kind);

#define ATM_TIER_NAME_MAX 160

/* What a tier (or a NUMA node) is. Speeds are 1e9 bytes per second and 0 when unknown. */
typedef struct {
	atm_tier_kind kind;
	char name[ATM_TIER_NAME_MAX]; /* "DRAM, NUMA node 0", "pmem dir /tmp/autotm-pmem (page cache)" */
	char subtype[16];             /* hwloc's subtype ("NVM", "HBM", "CXL-DRAM"), "" when none */
	int numa_node;                /* OS index of the node, -1 when the tier is not one node */
	int64_t capacity_bytes;       /* 0 unknown */
	double read_gbps;
	double write_gbps;
	double latency_ns;
	bool local;                   /* the node shares a package with the CPU we run on */
	bool kmem_dax;                /* the node is DAX memory onlined by the kmem driver */
	bool dax;                     /* file tiers: the file system maps PMM directly (DAX) */
	int64_t memside_cache_bytes;  /* a memory-side cache in front of the node (Memory Mode, 2LM:
	                               * DRAM caching PMM), its size; 0 when none */
	bool emulated;                /* speeds come from an emulation spec, not from the hardware */
	char emulation[32];           /* the spec's name when emulated */
} atm_tier_desc;

/* The machine as hwloc sees it: one description per NUMA node. */
typedef struct atm_tier_topo atm_tier_topo;

/* atm_tier_topo_new -- discover this machine */
atm_status atm_tier_topo_new(atm_tier_topo **topo);
/* atm_tier_topo_load_xml -- a topology exported by `lstopo --of xml` (another
 * machine's, or a made-up one): good for choosing and planning, not for
 * allocating (opening a tier from it is ATM_E_UNSUPPORTED) */
atm_status atm_tier_topo_load_xml(atm_tier_topo **topo, const char *path);
void atm_tier_topo_destroy(atm_tier_topo *topo);

int atm_tier_topo_n_nodes(const atm_tier_topo *topo);
/* NULL when i is out of range; nodes are in hwloc's logical order */
const atm_tier_desc *atm_tier_topo_node(const atm_tier_topo *topo, int i);
/* atm_tier_topo_home -- index of the node whose CPUs we run on (the fast tier) */
int atm_tier_topo_home(const atm_tier_topo *topo);
/* atm_tier_topo_memory_mode -- the home node sits behind a memory-side cache (the machine is
 * in Memory Mode): its size, 0 when not */
int64_t atm_tier_topo_memory_mode(const atm_tier_topo *topo);

/* How to choose tiers. A zeroed struct means: fast and slow "auto", the default
 * pmem directory, no size limit. */
typedef struct {
	/* "auto" (or NULL): memkind's default kind on a one-node machine, bound to
	 * the home node otherwise; "memkind": MEMKIND_DEFAULT; "numa:N": bound to node N */
	const char *fast;
	/* "auto" (or NULL), "kmem-dax", "numa:N", "pmem-dir", "fsdax" */
	const char *slow;
	/* pmem-dir: NULL means ATM_TIER_DEFAULT_PMEM_DIR, created if missing; a
	 * directory given here must exist */
	const char *pmem_dir;
	/* fsdax: the file to map; "auto" picks fsdax over pmem-dir when it is set */
	const char *fsdax_path;
	/* pmem-dir: the kind's size limit (0: the file system's free space, else at
	 * least 16 MiB, memkind's minimum); fsdax: the file's size when it is
	 * created or shorter (0: use the file as it is) */
	int64_t slow_bytes;
} atm_tier_opts;

#define ATM_TIER_DEFAULT_PMEM_DIR "/tmp/autotm-pmem"

/* A decision of atm_tier_choose, before anything is opened. */
typedef struct {
	atm_tier_kind kind;
	int numa_node;   /* for node kinds; -1 otherwise */
	char why[160];   /* "NUMA node 2 is kmem-DAX (NVM)", "one NUMA node: no slower memory" */
} atm_tier_choice;

/* atm_tier_choose -- which slow tier o asks for on topo, in the order of
 * docs/tiers.md. ATM_E_USAGE for a malformed choice, ATM_E_UNSUPPORTED for one
 * this machine does not have. */
atm_status atm_tier_choose(const atm_tier_topo *topo, const atm_tier_opts *o, atm_tier_choice *out);

typedef struct atm_tier atm_tier;

/* atm_tier_open_fast -- the fast tier (local DRAM) */
atm_status atm_tier_open_fast(atm_tier **t, atm_tier_topo *topo, const atm_tier_opts *o);
/* atm_tier_open_slow -- the slow tier atm_tier_choose picks. A pmem directory
 * that is missing, not a directory or not writable is ATM_E_IO before anything
 * is allocated; an fsdax file that cannot be made as large as asked is
 * ATM_E_NOSPACE. */
atm_status atm_tier_open_slow(atm_tier **t, atm_tier_topo *topo, const atm_tier_opts *o);
void atm_tier_destroy(atm_tier *t);

const atm_tier_desc *atm_tier_describe(const atm_tier *t);
/* atm_tier_alignment -- alignment of every allocation from t: 64 bytes (a cache
 * line, a full AVX-512 vector), 256 on PMM-backed tiers (Optane's internal
 * 256-byte line, so that no two tensors share one) */
int64_t atm_tier_alignment(const atm_tier *t);
/* atm_tier_set_emulation -- label t as emulating spec: speeds become the
 * spec's, the name says "emulating NAME", emulated is true */
struct atm_emu_spec;
atm_status atm_tier_set_emulation(atm_tier *t, const struct atm_emu_spec *spec);

/* The primitives pools are built on; most callers want a pool instead. */

/* atm_tier_alloc -- bytes of t, aligned to atm_tier_alignment, no accounting.
 * A full tier is ATM_E_NOSPACE; an fsdax file is one mapping and gives
 * ATM_E_USAGE (take it whole with atm_tier_map_acquire). */
atm_status atm_tier_alloc(atm_tier *t, int64_t bytes, void **ptr);
/* atm_tier_free -- give back an atm_tier_alloc of bytes (NULL does nothing) */
void atm_tier_free(atm_tier *t, void *ptr, int64_t bytes);
/* atm_tier_is_mapping -- t is one mapping (fsdax file) rather than a heap */
bool atm_tier_is_mapping(const atm_tier *t);
/* atm_tier_map_acquire -- the whole mapping of an fsdax tier, for one pool at a
 * time (ATM_E_USAGE when taken or when t is not a mapping) */
atm_status atm_tier_map_acquire(atm_tier *t, void **base, int64_t *bytes);
void atm_tier_map_release(atm_tier *t);
/* atm_tier_copy -- copy into memory of t with its routine: the mapping's
 * non-temporal memcpy for fsdax files (stores bypass the cache, which is how
 * PMM wants to be written), memcpy otherwise */
void atm_tier_copy(const atm_tier *t, void *dst, const void *src, size_t n);

/* ---------------------------------------------------------------- pools */

/* A pool allocates from one tier: an arena is one block of a fixed size where
 * the caller places tensors at offsets (the plan's); a heap allocates each
 * tensor separately. Neither falls back to another tier when full. */
typedef struct atm_pool atm_pool;

typedef struct {
	int64_t limit_bytes;      /* arena: its size; heap: its cap, 0 when none */
	int64_t in_use_bytes;     /* bytes of live allocations (arena: overlaps count twice) */
	int64_t high_water_bytes; /* largest in_use_bytes since creation or the last reset */
	int64_t extent_bytes;     /* arena: highest end offset placed since then; heap: high water */
	int64_t n_live;
	int64_t n_allocs;         /* allocations ever made */
	int64_t n_reused;         /* heap: allocations served by a block a tensor gave back */
	int64_t spare_bytes;      /* heap: bytes of given-back blocks kept for reuse */
} atm_pool_stats;

/* atm_pool_arena_new -- one block of limit_bytes from t, allocated now */
atm_status atm_pool_arena_new(atm_pool **p, atm_tier *t, int64_t limit_bytes);
/* atm_pool_heap_new -- per-tensor allocations from t, at most limit_bytes in
 * use (0: no cap but the tier's). Freed blocks are kept and reused for tensors of the same
 * footprint (no page faults again in later steps); they go back to the tier on destroy, or
 * when the tier is full. */
atm_status atm_pool_heap_new(atm_pool **p, atm_tier *t, int64_t limit_bytes);
/* atm_pool_destroy -- releases every live allocation and the pool's memory */
void atm_pool_destroy(atm_pool *p);

/* atm_pool_alloc_at -- arena only: bytes at offset (a multiple of 64). Ending
 * past the limit is ATM_E_NOSPACE; overlapping live tensors is the caller's
 * business (the plan reuses memory). */
atm_status atm_pool_alloc_at(atm_pool *p, int64_t offset, int64_t bytes, void **ptr);
/* atm_pool_alloc -- heap only: bytes aligned to atm_tier_alignment */
atm_status atm_pool_alloc(atm_pool *p, int64_t bytes, void **ptr);
/* atm_pool_free -- give back ptr (NULL does nothing); ATM_E_USAGE when p did not hand it out */
atm_status atm_pool_free(atm_pool *p, void *ptr);
/* atm_pool_copy -- n bytes from src to dst, where dst lies in an allocation of
 * dst_pool: the mapping's non-temporal copy for fsdax files, memcpy otherwise */
atm_status atm_pool_copy(atm_pool *dst_pool, void *dst, const void *src, int64_t n);

void atm_pool_get_stats(const atm_pool *p, atm_pool_stats *out);
/* atm_pool_reset_high_water -- start measuring again from what is in use now */
void atm_pool_reset_high_water(atm_pool *p);
const atm_tier *atm_pool_tier(const atm_pool *p);
/* atm_pool_base -- arena: the block's address (offset 0); heap: NULL */
void *atm_pool_base(const atm_pool *p);

/* ---------------------------------------------------------------- emulation */

/* How an emulated slow tier behaves. Bandwidths are 1e9 bytes per second. */
typedef struct atm_emu_spec {
	char name[32];
	double read_gbps;  /* slow -> fast copies, and kernels reading slow tensors */
	double write_gbps; /* fast -> slow copies, and kernels writing slow tensors */
	double latency_ns; /* idle load latency: reported, not waited (docs/tiers.md says why) */
	double fast_gbps;  /* the fast memory beside which read/write were measured: waits add
	                    * what slow bytes take beyond the same bytes at this speed, so the
	                    * slow tier is as much slower as on that machine, whatever the
	                    * speed of this one (0: ATM_EMU_REFERENCE_FAST_GBPS) */
	char source[200];  /* where the numbers come from */
} atm_emu_spec;

/* Reasonable bounds for a tier spec: beyond them it is a typo, not a memory. */
#define ATM_EMU_MIN_GBPS 0.001    /* 1 MB/s: slower than that is not memory but storage */
#define ATM_EMU_MAX_GBPS 10000.0  /* 10 TB/s: above any memory made so far */
#define ATM_EMU_MAX_LATENCY_NS 1e6 /* 1 ms: slower than that is storage */
/* The DRAM of a 2-socket Cascade Lake socket (six channels of DDR4-2666/2933):
 * about 100 GB/s in STREAM-like copies, the machine the optane and numa
 * presets describe. */
#define ATM_EMU_REFERENCE_FAST_GBPS 100.0
/* Fast-tier bandwidth when hwloc does not know it and measuring fails: one
 * channel of DDR4-2666 (2666 MT/s x 8 bytes = 21.3 GB/s peak), rounded down. */
#define ATM_EMU_DEFAULT_FAST_GBPS 20.0

/* atm_emu_preset -- "optane", "cxl" or "numa"; ATM_E_USAGE names the valid ones */
atm_status atm_emu_preset(const char *name, atm_emu_spec *out);
/* atm_emu_spec_parse -- {"name", "read_gbps", "write_gbps", "latency_ns"[, "fast_gbps", "source"]};
 * ATM_E_INPUT names origin and the field */
atm_status atm_emu_spec_parse(const char *text, size_t len, const char *origin, atm_emu_spec *out);
/* atm_emu_spec_load -- the same from a file (ATM_E_IO when it cannot be read) */
atm_status atm_emu_spec_load(const char *path, atm_emu_spec *out);
/* atm_emu_spec_resolve -- a preset name, or a path to a JSON tier spec (it
 * contains a '/' or ends in ".json") */
atm_status atm_emu_spec_resolve(const char *tierspec, atm_emu_spec *out);
/* atm_emu_spec_warning -- when spec's slow tier is no slower than its fast one (reads and
 * writes at least fast_gbps), so that emulating it adds no time: true, and why in buf */
bool atm_emu_spec_warning(const atm_emu_spec *spec, char *buf, size_t len);

/* Waits for the time slow bytes would take beyond what they take at the fast
 * tier's bandwidth. Safe to use from several threads at once. */
typedef struct atm_emu atm_emu;

/* atm_emu_new -- fast_gbps > 0 is the fast tier's bandwidth; 0 takes it from
 * topo's home node (hwloc), else measures a memcpy once, else uses
 * ATM_EMU_DEFAULT_FAST_GBPS. topo may be NULL. */
atm_status atm_emu_new(atm_emu **e, const atm_emu_spec *spec, const atm_tier_topo *topo,
                       double fast_gbps);
void atm_emu_destroy(atm_emu *e);
/* atm_emu_set_stop -- a flag (set by a signal handler) that ends every wait early with
 * ATM_E_INTERRUPTED; NULL: waits run their course */
void atm_emu_set_stop(atm_emu *e, volatile sig_atomic_t *stop);

const atm_emu_spec *atm_emu_get_spec(const atm_emu *e);
double atm_emu_fast_gbps(const atm_emu *e);
/* atm_emu_fast_source -- "given", "hwloc", "measured" or "default" */
const char *atm_emu_fast_source(const atm_emu *e);
/* atm_emu_extra_s -- seconds read_bytes and written_bytes of slow memory take
 * beyond the same bytes at the fast bandwidth; never negative */
double atm_emu_extra_s(const atm_emu *e, int64_t read_bytes, int64_t written_bytes);
/* atm_emu_wait -- wait atm_emu_extra_s (sleeps of at most ATM_EMU_WAIT_SLICE_S, then a
 * spin on CLOCK_MONOTONIC for the last stretch), ended early with ATM_E_INTERRUPTED when
 * the stop flag is set; waited_s (may be NULL) gets the time really waited */
atm_status atm_emu_wait(atm_emu *e, int64_t read_bytes, int64_t written_bytes, double *waited_s);
/* A wait checks its stop flag this often (seconds), and lasts at most ATM_EMU_MAX_WAIT_S (a
 * year: what any byte count at the slowest spec takes fits a 64-bit count of nanoseconds). */
#define ATM_EMU_WAIT_SLICE_S 0.05
#define ATM_EMU_MAX_WAIT_S (365.0 * 86400)
/* atm_emu_total_waited_s -- everything waited so far, to report emulation overhead */
double atm_emu_total_waited_s(const atm_emu *e);

#ifdef __cplusplus
}
#endif

#endif /* ATM_RUNTIME_MEMORY_H */
