/* backend_reg.c -- the registry of runtime backends: the only place that knows which ones this build has */
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* The CUDA backend is compiled only when the CUDA toolkit and cuDNN are
 * found (runtime/CMakeLists.txt defines ATM_HAVE_CUDA); this is the one
 * #ifdef for it. */
#ifdef ATM_HAVE_CUDA
#define cuda_new atm_backend_cuda_new
#define cuda_probe atm_backend_cuda_probe
#else
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
#endif

/* atm_backend_open -- the CPU, a real GPU or a simulated one, as o->gpu.mode says */
atm_status atm_backend_open(atm_backend **b, const atm_backend_opts *o)
{
	static const atm_backend_opts none = {0};
	const char *mode = o ? o->gpu.mode : NULL;
	*b = NULL;
	if (!o)
		o = &none;
	if (!mode || !strcmp(mode, "cpu"))
		return atm_backend_cpu_new(b, o);
	if (!strcmp(mode, "cuda"))
		return cuda_new(b, o);
	if (!strcmp(mode, "sim"))
		return atm_backend_cpu_new(b, o);
	return atm_err(ATM_E_USAGE, "unknown backend '%s'; valid: cpu, cuda, sim", mode);
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
	char a[32], f[32];
	atm_status rc;
	memset(info, 0, sizeof *info);
	if (!o->mode || !strcmp(o->mode, "cpu"))
		return atm_err(ATM_E_USAGE, "atm_gpu_probe: no GPU asked for");
	if (!strcmp(o->mode, "sim")) {
		snprintf(info->name, sizeof info->name, "simulated GPU");
		info->simulated = true;
		info->total_bytes = info->free_bytes = o->memory_bytes > 0 ? o->memory_bytes
		                                                         : ATM_GPU_SIM_BYTES;
		info->memory_bytes = info->free_bytes;
		return ATM_OK;
	}
	if (strcmp(o->mode, "cuda"))
		return atm_err(ATM_E_USAGE, "unknown GPU mode '%s'; valid: cuda, sim", o->mode);
	if ((rc = cuda_probe(o->device, info)) < 0)
		return rc;
	if (o->memory_bytes > info->free_bytes)
		return atm_err(ATM_E_UNSUPPORTED, "--gpu-memory %s is more than %s has free (%s)",
		               atm_format_bytes(o->memory_bytes, a, sizeof a), info->name,
		               atm_format_bytes(info->free_bytes, f, sizeof f));
	info->memory_bytes = o->memory_bytes > 0 ? o->memory_bytes
	                                         : info->free_bytes - ATM_GPU_RESERVE_BYTES;
	if (info->memory_bytes <= 0)
		return atm_err(ATM_E_UNSUPPORTED, "%s has only %s free, less than the %s kept for the CUDA "
		               "context and cuDNN", info->name,
		               atm_format_bytes(info->free_bytes, f, sizeof f),
		               atm_format_bytes(ATM_GPU_RESERVE_BYTES, a, sizeof a));
	return ATM_OK;
}
