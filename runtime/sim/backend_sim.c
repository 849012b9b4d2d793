/* backend_sim.c -- the simulated GPU: a byte-limited host arena as device memory, the CPU's kernels, copies at a link's bandwidth */
#include <dnnl.h>
#include <stdio.h>
#include <string.h>

#include "backend_cpu.h"

/* The simulated GPU is the CPU backend's parts (backend_cpu.h) with other
 * memories: both of them DRAM, the fast one an arena of the device's size;
 * the link, not the memory behind it, makes the host side slow, so every copy
 * waits for the link's bandwidth (an emulator made from its preset) and
 * kernels, which take device operands only, wait for nothing. */

static struct cpu_ctx *ctx_of(const atm_backend *b)
{
	return b->ctx;
}

/* device_bytes -- the simulated device's memory */
static int64_t device_bytes(const struct cpu_ctx *c)
{
	return c->o.gpu.memory_bytes > 0 ? c->o.gpu.memory_bytes : ATM_GPU_SIM_BYTES;
}

/* sim_arena_new -- the CPU's arena, refused beyond the device's memory */
static atm_status sim_arena_new(atm_backend *b, int64_t bytes)
{
	char a[32], l[32];
	int64_t have = device_bytes(ctx_of(b));
	if (bytes > have)
		return atm_err(ATM_E_INFEASIBLE, "the step needs a device arena of %s but the simulated "
		               "GPU has %s (--gpu-memory)", atm_format_bytes(bytes, a, sizeof a),
		               atm_format_bytes(have, l, sizeof l));
	return atm_cpu_bk_arena_new(b, bytes);
}

/* sim_machine -- the CPU's key under the simulated GPU's name: its timings are the CPU's
 * kernels' but a profile of it is not a CPU's */
static void sim_machine(const atm_backend *b, atm_profile_machine *m)
{
	const dnnl_version_t *v = dnnl_version();
	atm_cpu_bk_machine(b, m);
	snprintf(m->backend, sizeof m->backend, "gpu-sim-onednn-%d.%d.%d", v->major, v->minor,
	         v->patch);
	snprintf(m->slow_tier, sizeof m->slow_tier, "sim-host");
}

/* sim_describe -- a GPU whose device memory is DRAM and whose pinned host memory sits
 * behind the link */
static void sim_describe(const atm_backend *b, atm_backend_desc *d)
{
	struct cpu_ctx *c = ctx_of(b);
	const atm_emu_spec *link = atm_emu_get_spec(c->emu);
	char a[32];
	atm_cpu_bk_describe(b, d);
	snprintf(d->name, sizeof d->name, "gpu-sim");
	snprintf(d->device, sizeof d->device, "simulated GPU: %s of host memory, %s link "
	         "(%.0f GB/s)", atm_format_bytes(device_bytes(c), a, sizeof a), link->name,
	         link->read_gbps);
	d->simulated = true;
	d->fast.kind = ATM_TIER_GPU_DEVICE;
	d->fast.capacity_bytes = device_bytes(c);
	snprintf(d->fast.name, sizeof d->fast.name, "simulated GPU memory (%s of DRAM, NUMA node "
	         "%d)", a, d->fast.numa_node);
	d->slow = d->fast;
	d->slow.kind = ATM_TIER_PINNED_HOST;
	d->slow.capacity_bytes = 0;
	d->slow.emulated = true;
	d->slow.read_gbps = link->read_gbps;
	d->slow.write_gbps = link->write_gbps;
	snprintf(d->slow.emulation, sizeof d->slow.emulation, "%s", link->name);
	snprintf(d->slow.name, sizeof d->slow.name, "host memory standing for pinned memory "
	         "behind a simulated %s link", link->name);
}

static const atm_backend_i sim_iface = {
	ATM_CPU_BK_IFACE,
	.describe = sim_describe,
	.machine = sim_machine,
	.arena_new = sim_arena_new,
};

/* atm_backend_sim_new -- the CPU's parts with both memories in DRAM and an emulator of
 * o->gpu.link (pcie4 when NULL) for the copies */
atm_status atm_backend_sim_new(atm_backend **out, const atm_backend_opts *o)
{
	atm_backend *b = NULL;
	atm_emu_spec link;
	atm_status rc;
	*out = NULL;
	if (o->emulate)
		return atm_err(ATM_E_USAGE, "--emulate makes a CPU's slow tier slow; the simulated GPU's "
		               "copies take the time of its link instead (--gpu-link)");
	if ((rc = atm_cpu_bk_new(&b, &sim_iface, o)) < 0)
		return rc;
	struct cpu_ctx *c = ctx_of(b);
	/* the emulator's fast bandwidth is this machine's (0: hwloc's, or measured): the link
	 * is that much slower than the DRAM standing for device memory */
	if ((rc = atm_pool_heap_new(&c->heap, c->fast, 0)) >= 0 &&
	    (rc = atm_emu_spec_resolve(o->gpu.link ? o->gpu.link : "pcie4", &link)) >= 0)
		rc = atm_emu_new(&c->emu, &link, c->topo, 0);
	return atm_cpu_bk_start(b, rc, out);
}

/* atm_backend_sim_probe -- the device a simulated run gets: all of its memory is free */
atm_status atm_backend_sim_probe(const atm_gpu_opts *o, atm_gpu_info *info)
{
	memset(info, 0, sizeof *info);
	if (o->device != 0)
		return atm_err(ATM_E_USAGE, "device %d: the simulated GPU is one device, 0 (--gpu-device "
		               "picks among a machine's real GPUs)", o->device);
	snprintf(info->name, sizeof info->name, "simulated GPU");
	info->simulated = true;
	info->total_bytes = info->free_bytes = o->memory_bytes > 0 ? o->memory_bytes
	                                                         : ATM_GPU_SIM_BYTES;
	info->memory_bytes = info->free_bytes;
	return ATM_OK;
}
