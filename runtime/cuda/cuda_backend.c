/* cuda_backend.c -- the CUDA backend: one cudaMalloc arena, pinned host memory, cuDNN/cuBLAS kernels, copy streams */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "backend.h"
#include "cuda_kernels.h"

/* Pinned host allocations are rounded to this, and kept for reuse by size:
 * pinning and unpinning take milliseconds and cudaFreeHost waits for the
 * whole device, while a static schedule asks for the same sizes every step. */
#define PIN_ALIGN 256

/* A live allocation: where it is and how long, for the statistics. */
struct live {
	void *ptr;
	int64_t bytes;
};

/* Memory of one location: the live table and its figures. */
struct space {
	struct live *live;
	int64_t n_live, cap;
	int64_t in_use, high_water, extent, n_allocs;
};

/* A pinned block kept for reuse. */
struct spare {
	void *ptr;
	int64_t bytes;
};

struct cuda_ctx {
	atm_backend_opts o;
	atm_cuda_ctx *kc;
	int device;
	char pci_bus[32]; /* its PCI bus id, for NVML ("" until asked; "-" when CUDA has none) */
	char name[128];
	char versions[128];
	int64_t total_bytes;
	cudaStream_t compute, to_device, to_host;
	cudaEvent_t ready;        /* the compute stream's point an asynchronous copy starts after */
	cudaEvent_t *done;        /* per asynchronous copy: its completion */
	int32_t n_done;
	cudaEvent_t *marks;
	int32_t n_marks;
	char *arena;              /* device memory */
	int64_t arena_bytes;
	void *scratch;            /* device memory outside the arena */
	struct space fast, slow;
	struct spare *spares;     /* pinned blocks free for reuse */
	int64_t n_spares, cap_spares;
};

static struct cuda_ctx *ctx_of(const atm_backend *b)
{
	return b->ctx;
}

/* cuda_fail -- a status for a failed CUDA call, naming what was being done */
static atm_status cuda_fail(atm_status code, cudaError_t e, const char *what)
{
	return atm_err(code, "%s: CUDA error %s (%s)", what, cudaGetErrorName(e),
	               cudaGetErrorString(e));
}

/* ---------------------------------------------------------------- accounting */

static atm_status space_add(struct space *s, void *ptr, int64_t bytes, int64_t end)
{
	if (s->n_live == s->cap) {
		int64_t cap = s->cap ? 2 * s->cap : 64;
		struct live *l = realloc(s->live, (size_t)cap * sizeof *l);
		if (!l)
			return atm_err(ATM_E_NOMEM, "out of memory tracking allocations");
		s->live = l;
		s->cap = cap;
	}
	s->live[s->n_live++] = (struct live){ptr, bytes};
	s->in_use += bytes;
	s->n_allocs++;
	if (s->in_use > s->high_water)
		s->high_water = s->in_use;
	if (end > s->extent)
		s->extent = end;
	return ATM_OK;
}

/* space_remove -- forget ptr; its bytes, or -1 when it was not handed out */
static int64_t space_remove(struct space *s, void *ptr)
{
	for (int64_t i = s->n_live - 1; i >= 0; i--)
		if (s->live[i].ptr == ptr) {
			int64_t bytes = s->live[i].bytes;
			s->live[i] = s->live[--s->n_live];
			s->in_use -= bytes;
			return bytes;
		}
	return -1;
}

/* ---------------------------------------------------------------- memory */

/* managed_arena -- the arena as managed memory: never more than the device has free, since
 * oversubscribed managed memory can hang a GPU, unless the user insists */
static atm_status managed_arena(struct cuda_ctx *c, int64_t bytes)
{
	size_t fr = 0, tot = 0;
	char a[32], f[32], r[32];
	cudaError_t e = cudaMemGetInfo(&fr, &tot);
	if (e != cudaSuccess)
		return cuda_fail(ATM_E_UNSUPPORTED, e, "reading the GPU's free memory");
	int64_t room = (int64_t)fr - ATM_GPU_RESERVE_BYTES;
	if (bytes > room && !c->o.gpu.allow_oversubscribe)
		return atm_err(ATM_E_NOSPACE, "the cudaMallocManaged baseline needs %s of managed "
		               "memory but %s has %s free after the %s reserve: asking for more "
		               "managed memory than the device has free can hang the GPU, so it is not "
		               "run (--allow-oversubscribe runs it anyway, at that risk)",
		               atm_format_bytes(bytes, a, sizeof a), c->name,
		               atm_format_bytes(room > 0 ? room : 0, f, sizeof f),
		               atm_format_bytes(ATM_GPU_RESERVE_BYTES, r, sizeof r));
	e = cudaMallocManaged((void **)&c->arena, (size_t)bytes, cudaMemAttachGlobal);
	if (e != cudaSuccess) {
		c->arena = NULL;
		cudaGetLastError();
		return cuda_fail(ATM_E_NOSPACE, e, "allocating managed memory");
	}
	c->arena_bytes = bytes;
	return ATM_OK;
}

static atm_status cu_arena_new(atm_backend *b, int64_t bytes)
{
	struct cuda_ctx *c = ctx_of(b);
	char a[32], f[32];
	if (c->arena) {
		cudaFree(c->arena);
		c->arena = NULL;
	}
	if (bytes <= 0)
		bytes = 256;
	if (c->o.gpu.managed)
		return managed_arena(c, bytes);
	if (c->o.gpu.memory_bytes > 0 && bytes > c->o.gpu.memory_bytes)
		return atm_err(ATM_E_INFEASIBLE, "the step needs a device arena of %s but the GPU's "
		               "limit is %s (--gpu-memory)", atm_format_bytes(bytes, a, sizeof a),
		               atm_format_bytes(c->o.gpu.memory_bytes, f, sizeof f));
	cudaError_t e = cudaMalloc((void **)&c->arena, (size_t)bytes);
	if (e != cudaSuccess) {
		c->arena = NULL;
		size_t fr = 0, tot = 0;
		cudaGetLastError();
		cudaMemGetInfo(&fr, &tot);
		return atm_err(ATM_E_UNSUPPORTED, "cannot take a device arena of %s on %s: %s (%s free "
		               "now); give a smaller --gpu-memory or free the GPU",
		               atm_format_bytes(bytes, a, sizeof a), c->name, cudaGetErrorString(e),
		               atm_format_bytes((int64_t)fr, f, sizeof f));
	}
	c->arena_bytes = bytes;
	return ATM_OK;
}

/* pinned_alloc -- a pinned host block of bytes (rounded), reused when one is spare */
static atm_status pinned_alloc(struct cuda_ctx *c, int64_t bytes, void **ptr)
{
	int64_t want = (bytes + PIN_ALIGN - 1) / PIN_ALIGN * PIN_ALIGN;
	for (int64_t i = c->n_spares - 1; i >= 0; i--)
		if (c->spares[i].bytes == want) {
			*ptr = c->spares[i].ptr;
			c->spares[i] = c->spares[--c->n_spares];
			return ATM_OK;
		}
	cudaError_t e = cudaHostAlloc(ptr, (size_t)want, cudaHostAllocMapped | cudaHostAllocPortable);
	if (e == cudaSuccess)
		return ATM_OK;
	*ptr = NULL;
	cudaGetLastError();
	struct rlimit rl;
	char a[32], l[32];
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		return atm_err(ATM_E_NOSPACE, "cannot pin %s of host memory: %s; the locked-memory "
		               "limit is %s: raise it (ulimit -l unlimited, or memlock in "
		               "/etc/security/limits.conf)", atm_format_bytes(want, a, sizeof a),
		               cudaGetErrorString(e), atm_format_bytes((int64_t)rl.rlim_cur, l, sizeof l));
	return atm_err(ATM_E_NOSPACE, "cannot pin %s of host memory: %s",
	               atm_format_bytes(want, a, sizeof a), cudaGetErrorString(e));
}

static atm_status cu_alloc(atm_backend *b, unsigned loc, int64_t offset, int64_t bytes, void **ptr)
{
	struct cuda_ctx *c = ctx_of(b);
	atm_status rc;
	*ptr = NULL;
	if (loc == ATM_LOC_FAST) {
		if (!c->arena)
			return atm_err(ATM_E_INTERNAL, "device allocation before the arena exists");
		if (offset < 0 || offset % 64 || offset + bytes > c->arena_bytes)
			return atm_err(ATM_E_NOSPACE, "%lld bytes at offset %lld do not fit the device "
			               "arena of %lld bytes", (long long)bytes, (long long)offset,
			               (long long)c->arena_bytes);
		void *p = c->arena + offset;
		if ((rc = space_add(&c->fast, p, bytes, offset + bytes)) < 0)
			return rc;
		*ptr = p;
		return ATM_OK;
	}
	void *p = NULL;
	if ((rc = pinned_alloc(c, bytes, &p)) < 0)
		return rc;
	if ((rc = space_add(&c->slow, p, bytes, 0)) < 0) {
		cudaFreeHost(p);
		return rc;
	}
	*ptr = p;
	return ATM_OK;
}

static atm_status cu_free(atm_backend *b, unsigned loc, void *ptr)
{
	struct cuda_ctx *c = ctx_of(b);
	if (!ptr)
		return ATM_OK;
	int64_t bytes = space_remove(loc == ATM_LOC_FAST ? &c->fast : &c->slow, ptr);
	if (bytes < 0)
		return atm_err(ATM_E_USAGE, "freeing %p, which the %s memory did not hand out", ptr,
		               loc == ATM_LOC_FAST ? "device" : "pinned host");
	if (loc == ATM_LOC_FAST)
		return ATM_OK;
	if (c->n_spares == c->cap_spares) {
		int64_t cap = c->cap_spares ? 2 * c->cap_spares : 64;
		struct spare *s = realloc(c->spares, (size_t)cap * sizeof *s);
		if (!s) {
			cudaFreeHost(ptr);
			return ATM_OK;
		}
		c->spares = s;
		c->cap_spares = cap;
	}
	c->spares[c->n_spares++] = (struct spare){ptr, (bytes + PIN_ALIGN - 1) / PIN_ALIGN * PIN_ALIGN};
	return ATM_OK;
}

static atm_status cu_scratch(atm_backend *b, int64_t bytes, void **ptr)
{
	struct cuda_ctx *c = ctx_of(b);
	char a[32];
	if (c->scratch) {
		cudaStreamSynchronize(c->compute);
		cudaFree(c->scratch);
		c->scratch = NULL;
	}
	*ptr = NULL;
	if (bytes <= 0)
		return ATM_OK;
	cudaError_t e = cudaMalloc(&c->scratch, (size_t)bytes);
	if (e != cudaSuccess) {
		c->scratch = NULL;
		cudaGetLastError();
		return atm_err(ATM_E_NOSPACE, "kernel workspace of %s on %s: %s",
		               atm_format_bytes(bytes, a, sizeof a), c->name, cudaGetErrorString(e));
	}
	*ptr = c->scratch;
	return ATM_OK;
}

/* host_copy -- bytes between the host and a tensor, in order on the compute stream, waited for */
static atm_status host_copy(atm_backend *b, void *dst, const void *src, int64_t bytes,
                            const char *what)
{
	struct cuda_ctx *c = ctx_of(b);
	cudaError_t e = cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDefault, c->compute);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(c->compute);
	return e == cudaSuccess ? ATM_OK : cuda_fail(ATM_E_INTERNAL, e, what);
}

static atm_status cu_set(atm_backend *b, void *dst, const void *host_src, int64_t bytes)
{
	return host_copy(b, dst, host_src, bytes, "writing a tensor");
}

static atm_status cu_get(atm_backend *b, void *host_dst, const void *src, int64_t bytes)
{
	return host_copy(b, host_dst, src, bytes, "reading a tensor");
}

static void cu_mem_stats(const atm_backend *b, unsigned loc, atm_pool_stats *st)
{
	struct cuda_ctx *c = ctx_of(b);
	const struct space *s = loc == ATM_LOC_FAST ? &c->fast : &c->slow;
	memset(st, 0, sizeof *st);
	st->limit_bytes = loc == ATM_LOC_FAST ? c->arena_bytes : 0;
	st->in_use_bytes = s->in_use;
	st->high_water_bytes = s->high_water;
	st->extent_bytes = loc == ATM_LOC_FAST ? s->extent : s->high_water;
	st->n_live = s->n_live;
	st->n_allocs = s->n_allocs;
}

static void cu_reset_high_water(atm_backend *b)
{
	struct cuda_ctx *c = ctx_of(b);
	c->fast.high_water = c->fast.in_use;
	c->slow.high_water = c->slow.in_use;
	c->fast.extent = 0;
	for (int64_t i = 0; i < c->fast.n_live; i++) {
		int64_t end = (char *)c->fast.live[i].ptr - c->arena + c->fast.live[i].bytes;
		if (end > c->fast.extent)
			c->fast.extent = end;
	}
}

/* ---------------------------------------------------------------- kernels */

static atm_status cu_kernel_new(atm_backend *b, const atm_graph *g, int32_t node,
                                atm_bk_kernel **k)
{
	return atm_cuda_kernel_new((atm_cuda_kernel **)k, ctx_of(b)->kc, g, node);
}

static void cu_kernel_destroy(atm_backend *b, atm_bk_kernel *k)
{
	(void)b;
	atm_cuda_kernel_destroy((atm_cuda_kernel *)k);
}

static int64_t cu_kernel_scratch_bytes(const atm_backend *b, const atm_bk_kernel *k)
{
	(void)b;
	return atm_cuda_kernel_workspace_bytes((const atm_cuda_kernel *)k);
}

static int cu_kernel_n_algos(const atm_backend *b, const atm_bk_kernel *k)
{
	(void)b;
	return atm_cuda_kernel_n_algos((const atm_cuda_kernel *)k);
}

static atm_status cu_kernel_set_algo(atm_backend *b, atm_bk_kernel *k, int algo)
{
	(void)b;
	return atm_cuda_kernel_set_algo((atm_cuda_kernel *)k, algo);
}

static atm_status cu_kernel_run(atm_backend *b, atm_bk_kernel *k, void *const *in,
                                void *const *out, void *scratch)
{
	(void)b;
	return atm_cuda_kernel_run((atm_cuda_kernel *)k, in, out, scratch);
}

/* ---------------------------------------------------------------- copies */

/* copy_stream -- host-to-device and device-to-host copies each have a stream,
 * so that both directions overlap the kernels and each other */
static cudaStream_t copy_stream(struct cuda_ctx *c, unsigned to)
{
	return to == ATM_LOC_FAST ? c->to_device : c->to_host;
}

static atm_status cu_copy(atm_backend *b, unsigned to, void *dst, const void *src, int64_t bytes)
{
	struct cuda_ctx *c = ctx_of(b);
	/* synchronous moves block the schedule: in order on the compute stream */
	cudaError_t e = cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDefault, c->compute);
	return e == cudaSuccess ? ATM_OK
	                        : cuda_fail(ATM_E_INTERNAL, e, to == ATM_LOC_FAST
	                                    ? "copy to the device" : "copy to the host");
}

static atm_status cu_reserve(atm_backend *b, int32_t n_copies, int32_t n_marks)
{
	struct cuda_ctx *c = ctx_of(b);
	cudaError_t e = cudaSuccess;
	if (n_copies > c->n_done) {
		cudaEvent_t *d = realloc(c->done, (size_t)n_copies * sizeof *d);
		if (!d)
			return atm_err(ATM_E_NOMEM, "out of memory reserving copy events");
		c->done = d;
		for (; c->n_done < n_copies; c->n_done++)
			if ((e = cudaEventCreateWithFlags(&c->done[c->n_done], cudaEventDisableTiming)) !=
			    cudaSuccess)
				return cuda_fail(ATM_E_INTERNAL, e, "creating copy events");
	}
	if (n_marks > c->n_marks) {
		cudaEvent_t *m = realloc(c->marks, (size_t)n_marks * sizeof *m);
		if (!m)
			return atm_err(ATM_E_NOMEM, "out of memory reserving timing events");
		c->marks = m;
		for (; c->n_marks < n_marks; c->n_marks++)
			if ((e = cudaEventCreate(&c->marks[c->n_marks])) != cudaSuccess)
				return cuda_fail(ATM_E_INTERNAL, e, "creating timing events");
	}
	return ATM_OK;
}

static atm_status cu_copy_start(atm_backend *b, int32_t id, unsigned to, void *dst,
                                const void *src, int64_t bytes)
{
	struct cuda_ctx *c = ctx_of(b);
	cudaStream_t s = copy_stream(c, to);
	if (id < 0 || id >= c->n_done)
		return atm_err(ATM_E_INTERNAL, "copy %d was not reserved (%d are)", id, c->n_done);
	/* the copy starts after everything issued so far on the compute stream */
	cudaError_t e = cudaEventRecord(c->ready, c->compute);
	if (e == cudaSuccess)
		e = cudaStreamWaitEvent(s, c->ready, 0);
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDefault, s);
	if (e == cudaSuccess)
		e = cudaEventRecord(c->done[id], s);
	return e == cudaSuccess ? ATM_OK
	                        : cuda_fail(ATM_E_INTERNAL, e, to == ATM_LOC_FAST
	                                    ? "asynchronous copy to the device"
	                                    : "asynchronous copy to the host");
}

static atm_status cu_copy_wait(atm_backend *b, int32_t id)
{
	struct cuda_ctx *c = ctx_of(b);
	if (id < 0 || id >= c->n_done)
		return atm_err(ATM_E_INTERNAL, "copy %d was not reserved (%d are)", id, c->n_done);
	/* kernels issued from now on run after the copy; the host goes on */
	cudaError_t e = cudaStreamWaitEvent(c->compute, c->done[id], 0);
	return e == cudaSuccess ? ATM_OK : cuda_fail(ATM_E_INTERNAL, e, "waiting for a copy");
}

static void cu_copy_drain(atm_backend *b)
{
	struct cuda_ctx *c = ctx_of(b);
	cudaStreamSynchronize(c->to_device);
	cudaStreamSynchronize(c->to_host);
}

static atm_status cu_sync(atm_backend *b)
{
	struct cuda_ctx *c = ctx_of(b);
	cudaError_t e = cudaStreamSynchronize(c->compute);
	cudaError_t e2 = cudaStreamSynchronize(c->to_device);
	cudaError_t e3 = cudaStreamSynchronize(c->to_host);
	if (e == cudaSuccess)
		e = e2 != cudaSuccess ? e2 : e3;
	/* kernels run behind the host: a fault shows here, after the kernel that caused it was
	 * issued; CUDA_LAUNCH_BLOCKING=1 makes each launch wait, so the error names it */
	return e == cudaSuccess ? ATM_OK
	                        : cuda_fail(ATM_E_INTERNAL, e, "a kernel or copy of the step failed on "
	                                    "the GPU (run with CUDA_LAUNCH_BLOCKING=1 to stop at the "
	                                    "one that failed)");
}

/* ---------------------------------------------------------------- timing */

static atm_status cu_mark(atm_backend *b, int32_t slot)
{
	struct cuda_ctx *c = ctx_of(b);
	if (slot < 0 || slot >= c->n_marks)
		return atm_err(ATM_E_INTERNAL, "timing mark %d was not reserved (%d are)", slot,
		               c->n_marks);
	cudaError_t e = cudaEventRecord(c->marks[slot], c->compute);
	return e == cudaSuccess ? ATM_OK : cuda_fail(ATM_E_INTERNAL, e, "recording a timing event");
}

static double cu_elapsed(atm_backend *b, int32_t from, int32_t to)
{
	struct cuda_ctx *c = ctx_of(b);
	float ms = 0;
	if (from < 0 || to < 0 || from >= c->n_marks || to >= c->n_marks ||
	    cudaEventElapsedTime(&ms, c->marks[from], c->marks[to]) != cudaSuccess) {
		cudaGetLastError();
		return NAN;
	}
	return (double)ms * 1e-3;
}

static double cu_waited_s(const atm_backend *b)
{
	(void)b; /* nothing is emulated on a real GPU */
	return 0;
}

/* ---------------------------------------------------------------- description */

/* cu_energy -- the device's energy counter and clocks, from NVML by the device's PCI bus id
 * (NVML's indices need not be CUDA's) */
static atm_status cu_energy(atm_backend *b, bool clocks, atm_gpu_energy *e)
{
	struct cuda_ctx *c = ctx_of(b);
	if (!c->pci_bus[0] &&
	    cudaDeviceGetPCIBusId(c->pci_bus, sizeof c->pci_bus, c->device) != cudaSuccess)
		snprintf(c->pci_bus, sizeof c->pci_bus, "-");
	return atm_nvml_read(NULL, strcmp(c->pci_bus, "-") ? c->pci_bus : NULL, c->device, clocks, e);
}

static void cu_machine(const atm_backend *b, atm_profile_machine *m)
{
	struct cuda_ctx *c = ctx_of(b);
	int drv = 0, rt = 0;
	memset(m, 0, sizeof *m);
	cudaDriverGetVersion(&drv);
	cudaRuntimeGetVersion(&rt);
	snprintf(m->cpu, sizeof m->cpu, "%s", c->name);
	m->n_threads = 1;
	snprintf(m->backend, sizeof m->backend, "cuda-%d.%d-cudnn-%zu-drv-%d.%d", rt / 1000,
	         rt % 1000 / 10, cudnnGetVersion(), drv / 1000, drv % 1000 / 10);
	snprintf(m->fast_tier, sizeof m->fast_tier, "gpu-device:%d", c->device);
	snprintf(m->slow_tier, sizeof m->slow_tier, "pinned-host");
}

static void cu_describe(const atm_backend *b, atm_backend_desc *d)
{
	struct cuda_ctx *c = ctx_of(b);
	char a[32];
	memset(d, 0, sizeof *d);
	snprintf(d->name, sizeof d->name, "cuda");
	snprintf(d->device, sizeof d->device, "%s", c->name);
	snprintf(d->versions, sizeof d->versions, "%s", c->versions);
	d->fast.kind = ATM_TIER_GPU_DEVICE;
	d->fast.numa_node = -1;
	d->fast.capacity_bytes = c->arena_bytes ? c->arena_bytes : c->total_bytes;
	snprintf(d->fast.name, sizeof d->fast.name, "GPU %d %s, %.60s (%s arena)", c->device,
	         c->o.gpu.managed ? "managed memory" : "device memory", c->name,
	         atm_format_bytes(c->arena_bytes, a, sizeof a));
	d->slow.kind = ATM_TIER_PINNED_HOST;
	d->slow.numa_node = -1;
	snprintf(d->slow.name, sizeof d->slow.name, "pinned host memory (cudaHostAlloc, mapped)");
}

/* ---------------------------------------------------------------- life */

static void cu_destroy(atm_backend *b)
{
	struct cuda_ctx *c = ctx_of(b);
	if (c) {
		if (c->compute)
			cudaDeviceSynchronize();
		for (int64_t i = 0; i < c->slow.n_live; i++)
			cudaFreeHost(c->slow.live[i].ptr);
		for (int64_t i = 0; i < c->n_spares; i++)
			cudaFreeHost(c->spares[i].ptr);
		free(c->slow.live);
		free(c->fast.live);
		free(c->spares);
		cudaFree(c->scratch);
		cudaFree(c->arena);
		for (int32_t i = 0; i < c->n_done; i++)
			cudaEventDestroy(c->done[i]);
		for (int32_t i = 0; i < c->n_marks; i++)
			cudaEventDestroy(c->marks[i]);
		free(c->done);
		free(c->marks);
		if (c->ready)
			cudaEventDestroy(c->ready);
		if (c->to_device)
			cudaStreamDestroy(c->to_device);
		if (c->to_host)
			cudaStreamDestroy(c->to_host);
		atm_cuda_ctx_destroy(c->kc);
		free(c);
	}
	free(b);
}

static const atm_backend_i cuda_iface = {
	.destroy = cu_destroy,
	.describe = cu_describe,
	.arena_new = cu_arena_new,
	.alloc = cu_alloc,
	.free = cu_free,
	.scratch = cu_scratch,
	.set = cu_set,
	.get = cu_get,
	.mem_stats = cu_mem_stats,
	.reset_high_water = cu_reset_high_water,
	.kernel_new = cu_kernel_new,
	.kernel_destroy = cu_kernel_destroy,
	.kernel_scratch_bytes = cu_kernel_scratch_bytes,
	.kernel_n_algos = cu_kernel_n_algos,
	.kernel_set_algo = cu_kernel_set_algo,
	.kernel_run = cu_kernel_run,
	.emulate = NULL,
	.copy = cu_copy,
	.reserve = cu_reserve,
	.copy_start = cu_copy_start,
	.copy_wait = cu_copy_wait,
	.copy_drain = cu_copy_drain,
	.sync = cu_sync,
	.mark = cu_mark,
	.elapsed = cu_elapsed,
	.waited_s = cu_waited_s,
	.machine = cu_machine,
	.energy = cu_energy,
};

/* atm_backend_cuda_new -- device o->gpu.device: its kernels' context, copy
 * streams and events; the arena comes with arena_new */
atm_status atm_backend_cuda_new(atm_backend **out, const atm_backend_opts *o)
{
	atm_status rc;
	cudaError_t e;
	*out = NULL;
	if (o->emulate)
		return atm_err(ATM_E_USAGE, "--emulate makes a CPU's slow tier slow; on a GPU the slow "
		               "tier is pinned host memory, as slow as the bus: leave it out");
	atm_backend *b = calloc(1, sizeof *b);
	struct cuda_ctx *c = calloc(1, sizeof *c);
	if (!b || !c) {
		free(b);
		free(c);
		return atm_err(ATM_E_NOMEM, "out of memory opening the CUDA backend");
	}
	b->iface = &cuda_iface;
	b->ctx = c;
	c->o = *o;
	c->device = o->gpu.device;
	atm_cuda_set_allreduce(atm_bk_allreduce);
	if ((rc = atm_cuda_ctx_new(&c->kc, c->device)) < 0)
		goto fail;
	c->compute = atm_cuda_ctx_stream(c->kc);
	struct cudaDeviceProp prop;
	if ((e = cudaGetDeviceProperties(&prop, c->device)) != cudaSuccess) {
		rc = cuda_fail(ATM_E_UNSUPPORTED, e, "reading the GPU's properties");
		goto fail;
	}
	snprintf(c->name, sizeof c->name, "%.127s", prop.name);
	atm_cuda_ctx_versions(c->kc, c->versions, sizeof c->versions);
	if ((e = cudaStreamCreateWithFlags(&c->to_device, cudaStreamNonBlocking)) != cudaSuccess ||
	    (e = cudaStreamCreateWithFlags(&c->to_host, cudaStreamNonBlocking)) != cudaSuccess ||
	    (e = cudaEventCreateWithFlags(&c->ready, cudaEventDisableTiming)) != cudaSuccess) {
		rc = cuda_fail(ATM_E_UNSUPPORTED, e, "creating copy streams");
		goto fail;
	}
	size_t fr = 0, tot = 0;
	if ((e = cudaMemGetInfo(&fr, &tot)) != cudaSuccess) {
		rc = cuda_fail(ATM_E_UNSUPPORTED, e, "reading the GPU's free memory");
		goto fail;
	}
	c->total_bytes = (int64_t)tot;
	*out = b;
	return ATM_OK;
fail:
	cu_destroy(b);
	return rc;
}

/* atm_backend_cuda_probe -- device's name and memory now, nothing kept */
atm_status atm_backend_cuda_probe(int device, atm_gpu_info *info)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess) {
		cudaGetLastError();
		return atm_err(ATM_E_UNSUPPORTED, "no usable GPU: %s (%s)", cudaGetErrorString(e),
		               e == cudaErrorInsufficientDriver
		                   ? "no NVIDIA driver is loaded, or it is older than this build's CUDA "
		                     "runtime needs: install or update it"
		                   : "is an NVIDIA GPU there, and its driver loaded?");
	}
	if (device < 0 || device >= n)
		return atm_err(ATM_E_UNSUPPORTED, "no GPU %d: this machine has %d (0 to %d)", device, n,
		               n - 1);
	size_t fr = 0, tot = 0;
	struct cudaDeviceProp prop;
	if ((e = cudaSetDevice(device)) != cudaSuccess || (e = cudaMemGetInfo(&fr, &tot)) != cudaSuccess ||
	    (e = cudaGetDeviceProperties(&prop, device)) != cudaSuccess) {
		cudaGetLastError();
		return cuda_fail(ATM_E_UNSUPPORTED, e, "reading the GPU's memory");
	}
	snprintf(info->name, sizeof info->name, "%.127s", prop.name);
	info->free_bytes = (int64_t)fr;
	info->total_bytes = (int64_t)tot;
	return ATM_OK;
}

/* atm_backend_cuda_supports_op -- op has an entry in the CUDA kernels' op table */
bool atm_backend_cuda_supports_op(atm_op op)
{
	return atm_cuda_supports(op);
}
