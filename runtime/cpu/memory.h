/* memory.h -- the CPU backend's memory tiers (hwloc discovery, memkind/libpmem2/hwloc allocation), pools and tier emulation (private to runtime/)
 *
 * The descriptions, the tier choices and the emulation specs these take and
 * give are public (atm_runtime.h); the tiers, pools and emulators themselves
 * are the CPU backend's and the simulated GPU's own. Tests that reach them
 * link atm_runtime_cpu_private.
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

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- tiers */

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

/* Where a file tier's file goes (tier_file.c; atm_tier_file_choose is the public face). */

/* atm_tier_file_fs -- path's file system (of the folder it would be made in, when it is not
 * made yet): its name ("tmpfs", "ext4": /proc/self/mountinfo's, else from statfs), and whether
 * it writes dirty pages back to a disk (not tmpfs or ramfs, not DAX); false when nothing of
 * path can be looked at */
bool atm_tier_file_fs(const char *path, char *fs, size_t len, bool *writeback);
/* atm_tier_tmpfs_need -- the free bytes the room rule (atm_runtime.h) asks of a tmpfs for o */
int64_t atm_tier_tmpfs_need(const atm_tier_opts *o);
/* atm_tier_tmpfs_has_room -- the room rule: a tmpfs with free_bytes free, on a machine with
 * mem_available_bytes available (< 0: unknown), holds o's run */
bool atm_tier_tmpfs_has_room(const atm_tier_opts *o, int64_t free_bytes, int64_t mem_available_bytes);
/* atm_tier_pmem_default -- the default folder of o's pmem-dir tier (o->pmem_dir aside) with
 * the tmpfs's free bytes (< 0: no tmpfs there) and the memory available (< 0: unknown) given
 * rather than measured: ATM_TIER_TMPFS_PMEM_DIR for an emulated tier with room, else
 * ATM_TIER_DEFAULT_PMEM_DIR, and why, its file system looked at */
void atm_tier_pmem_default(const atm_tier_opts *o, int64_t tmpfs_free_bytes,
                           int64_t mem_available_bytes, atm_tier_file *f);
/* atm_tier_pmem_file -- the folder o's pmem-dir tier uses: o->pmem_dir as given, else the
 * default, with the tmpfs and the memory measured now */
void atm_tier_pmem_file(const atm_tier_opts *o, atm_tier_file *f);

const atm_tier_desc *atm_tier_describe(const atm_tier *t);
/* atm_tier_alignment -- alignment of every allocation from t: 64 bytes (a cache
 * line, a full AVX-512 vector), 256 on PMM-backed tiers (Optane's internal
 * 256-byte line, so that no two tensors share one) */
int64_t atm_tier_alignment(const atm_tier *t);
/* atm_tier_set_emulation -- label t as emulating spec: speeds become the
 * spec's, the name says "emulating NAME", emulated is true */
atm_status atm_tier_set_emulation(atm_tier *t, const atm_emu_spec *spec);

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
/* (what a pool reports, atm_pool_stats, is every backend's memory report: backend.h) */

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

/* atm_emu_set_measure -- tests: fn in place of the streaming copy that measures this
 * machine's bandwidth (NULL: the copy), and what the process knew of it forgotten */
void atm_emu_set_measure(double (*fn)(void));
/* atm_emu_test_threads -- the thread count in this machine's bandwidth key */
int atm_emu_test_threads(void);

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
/* atm_emu_wait_2lm -- the same for the slow traffic of a 2LM cache in front of the emulated
 * tier: atm_twolm_wait_s at its rates */
atm_status atm_emu_wait_2lm(atm_emu *e, const atm_twolm_traffic *t, double *waited_s);
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
