/* backend_reg.c -- the registry of runtime backends: the only place that knows which ones this build has */
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* The CUDA backend is compiled only when the CUDA toolkit and cuDNN are
 * found (runtime/CMakeLists.txt defines ATM_HAVE_CUDA); this is the one
 * #ifdef for it. */
#ifdef ATM_HAVE_CUDA
static const bool have_cuda = true;
#define cuda_new atm_backend_cuda_new
#else
static const bool have_cuda = false;
/* cuda_new -- the answer of a build without CUDA */
static atm_status cuda_new(atm_backend **b, const atm_backend_opts *o)
{
	(void)b;
	(void)o;
	return atm_err(ATM_E_UNSUPPORTED, "GPU runs are not supported in this build: it was made "
	               "without the CUDA toolkit and cuDNN (install them and rebuild, or use "
	               "--gpu=sim for a simulated GPU)");
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

/* atm_backend_have_cuda -- this build has the CUDA backend */
bool atm_backend_have_cuda(void)
{
	return have_cuda;
}
