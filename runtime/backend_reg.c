/* backend_reg.c -- the registry of runtime backends: the only place that knows which ones this build has, and what each can do */
#include <stdio.h>
#include <string.h>

#include "backend.h"

/* The CUDA backend is compiled only when the CUDA toolkit and cuDNN are
 * found (runtime/CMakeLists.txt defines ATM_HAVE_CUDA); this is the one
 * #ifdef for it. */
#ifdef ATM_HAVE_CUDA
#define CUDA_BUILT true
#define cuda_new atm_backend_cuda_new
#define cuda_probe atm_backend_cuda_probe
#define cuda_supports_op atm_backend_cuda_supports_op
#else
#define CUDA_BUILT false
/* no_cuda -- the answer of a build without CUDA */
static atm_status no_cuda(void)
{
	return atm_err(ATM_E_UNSUPPORTED, "GPU runs are not supported in this build: it was made "
	               "without the CUDA toolkit and cuDNN (install them and rebuild, or use "
	               "--gpu=sim for a simulated GPU)");
}
static atm_status cuda_new(atm_backend **b, const atm_backend_opts *o)
{
	(void)b;
	(void)o;
	return no_cuda();
}
static atm_status cuda_probe(int device, atm_gpu_info *info)
{
	(void)device;
	(void)info;
	return no_cuda();
}
static bool cuda_supports_op(atm_op op)
{
	(void)op;
	return false;
}
#endif

/* cuda_probe_reserve -- the GPU a run would get, and the memory its arena may take: what was
 * asked, else what is free less the reserve */
static atm_status cuda_probe_reserve(const atm_gpu_opts *o, atm_gpu_info *info)
{
	atm_status rc = cuda_probe(o->device, info);
	return rc < 0 ? rc : atm_gpu_take_memory(o, info, ATM_E_UNSUPPORTED);
}

/* Every backend, in the order messages list them; the first is the default (a NULL choice). */
static const atm_backend_reg backends[] = {
	{
		.caps = {.choice = "cpu", .name = "cpu", .built = true, .host_tiers = true,
		         .shared_kernels = true},
		.open = atm_backend_cpu_new,
		.supports_op = atm_backend_cpu_supports_op,
	},
	{
		.caps = {.choice = "cuda", .name = "cuda", .built = CUDA_BUILT, .device_memory = true,
		         .device_only = true, .kernel_algos = true, .workspace_in_limit = true,
		         .copy_engine = true, .managed = true},
		.open = cuda_new,
		.probe = cuda_probe_reserve,
		.supports_op = cuda_supports_op,
	},
	{
		/* its CPU kernels have one algorithm each and keep their scratch outside the
		 * arena, as on the CPU; its copies stand for a GPU's copy engines */
		.caps = {.choice = "sim", .name = "gpu-sim", .built = true, .simulated = true,
		         .device_memory = true, .device_only = true, .copy_engine = true,
		         .link_presets = true, .shared_kernels = true},
		.open = atm_backend_sim_new,
		.probe = atm_backend_sim_probe,
		.supports_op = atm_backend_cpu_supports_op,
	},
	{
		/* a GPU described by its datasheet: planned as the CUDA backend runs (every operand
		 * on the device, copy engines), one estimated algorithm per kernel */
		.caps = {.choice = "model", .name = "gpu-model", .built = true, .device_memory = true,
		         .device_only = true, .copy_engine = true, .modelled = true},
		.open = atm_backend_model_new,
		.probe = atm_backend_model_probe,
		.supports_op = atm_backend_cpu_supports_op,
	},
};

#define N_BACKENDS ((int)(sizeof backends / sizeof backends[0]))

/* find -- the backend of choice (NULL: the first), or NULL */
static const atm_backend_reg *find(const char *choice)
{
	if (!choice)
		return &backends[0];
	for (int i = 0; i < N_BACKENDS; i++)
		if (!strcmp(backends[i].caps.choice, choice))
			return &backends[i];
	return NULL;
}

/* choices -- "cpu, cuda, sim": the choices of the backends with a device (devices_only) or of
 * all */
static const char *choices(bool devices_only, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < N_BACKENDS && n < len; i++)
		if (!devices_only || backends[i].probe)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
			                      backends[i].caps.choice);
	return buf;
}

/* lookup -- the backend of choice; ATM_E_USAGE naming the valid ones when there is none */
static atm_status lookup(const char *choice, const atm_backend_reg **r)
{
	char valid[64];
	if ((*r = find(choice)))
		return ATM_OK;
	return atm_err(ATM_E_USAGE, "unknown backend '%s'; valid: %s", choice,
	               choices(false, valid, sizeof valid));
}

atm_status atm_backend_caps_get(const char *choice, atm_backend_caps *caps)
{
	const atm_backend_reg *r;
	atm_status rc = lookup(choice, &r);
	memset(caps, 0, sizeof *caps);
	if (rc == ATM_OK)
		*caps = r->caps;
	return rc;
}

atm_status atm_backend_caps_nth(int i, atm_backend_caps *caps)
{
	memset(caps, 0, sizeof *caps);
	if (i < 0 || i >= N_BACKENDS)
		return atm_err(ATM_E_NOTFOUND, "no backend %d: the registry has %d", i, N_BACKENDS);
	*caps = backends[i].caps;
	return ATM_OK;
}

bool atm_backend_supports_op(const char *choice, atm_op op)
{
	const atm_backend_reg *r = find(choice);
	return r && r->caps.built && r->supports_op(op);
}

/* atm_backend_open -- the CPU, a real GPU or a simulated one, as o->gpu.mode chooses */
atm_status atm_backend_open(atm_backend **b, const atm_backend_opts *o)
{
	static const atm_backend_opts none = {0};
	const atm_backend_reg *r;
	*b = NULL;
	if (!o)
		o = &none;
	atm_status rc = lookup(o->gpu.mode, &r);
	return rc < 0 ? rc : r->open(b, o);
}

/* atm_backend_destroy -- the backend's own clean-up; NULL is fine */
void atm_backend_destroy(atm_backend *b)
{
	if (b)
		b->iface->destroy(b);
}

/* atm_gpu_probe -- the GPU a run would get, and the memory its arena may take */
atm_status atm_gpu_probe(const atm_gpu_opts *o, atm_gpu_info *info)
{
	char valid[64];
	const atm_backend_reg *r = find(o->mode);
	memset(info, 0, sizeof *info);
	if (r && !r->probe)
		return atm_err(ATM_E_USAGE, "atm_gpu_probe: no GPU asked for");
	if (!r)
		return atm_err(ATM_E_USAGE, "unknown GPU mode '%s'; valid: %s", o->mode,
		               choices(true, valid, sizeof valid));
	return r->probe(o, info);
}

