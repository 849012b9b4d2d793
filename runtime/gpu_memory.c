/* gpu_memory.c -- the device memory a plan may take on a GPU, real or described by a model */
#include "backend.h"

/* atm_gpu_take_memory -- the memory info's GPU gives a plan: what o asks (refused with code
 * past what is free), else what is free less the reserve */
atm_status atm_gpu_take_memory(const atm_gpu_opts *o, atm_gpu_info *info, atm_status code)
{
	char a[32], f[32];
	if (o->memory_bytes > info->free_bytes)
		return atm_err(code, "--gpu-memory %s is more than %s has free (%s)",
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
