/* nvml.c -- a GPU's energy counter, clocks and power limit from NVML, loaded at run time, so that
 * a machine without the NVIDIA driver builds and runs without it */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "atm_runtime.h"

/* NVML's own types and constants (nvml.h), declared here so that no header of the driver's is
 * needed to build */
typedef int nvml_return;
typedef struct nvml_device *nvml_device;
enum { NVML_SUCCESS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };

/* The library opened, and the calls read from it. */
static struct {
	char lib[256];
	void *h;
	char device_key[64]; /* the GPU whose handle dev is: its bus id, or "#index" */
	nvml_device dev;
	nvml_return (*init)(void);
	nvml_return (*by_index)(unsigned index, nvml_device *d);
	nvml_return (*by_pci)(const char *bus_id, nvml_device *d);
	nvml_return (*energy)(nvml_device d, unsigned long long *mj);
	nvml_return (*clock)(nvml_device d, int type, unsigned *mhz);
	nvml_return (*limit)(nvml_device d, unsigned *mw);
	const char *(*error)(nvml_return r);
} nv;

/* why -- NVML's words for r */
static const char *why(nvml_return r)
{
	const char *s = nv.error ? nv.error(r) : NULL;
	return s ? s : "unknown NVML error";
}

/* open_lib -- lib opened and initialised, once per process (again for another lib) */
static atm_status open_lib(const char *lib)
{
	if (nv.h && !strcmp(nv.lib, lib))
		return ATM_OK;
	if (nv.h)
		dlclose(nv.h);
	memset(&nv, 0, sizeof nv);
	if (!(nv.h = dlopen(lib, RTLD_NOW | RTLD_LOCAL)))
		return atm_err(ATM_E_UNSUPPORTED, "no NVML (%s): %s; the GPU's energy is not measured",
		               lib, dlerror());
	snprintf(nv.lib, sizeof nv.lib, "%s", lib);
	*(void **)&nv.init = dlsym(nv.h, "nvmlInit_v2");
	*(void **)&nv.by_index = dlsym(nv.h, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&nv.by_pci = dlsym(nv.h, "nvmlDeviceGetHandleByPciBusId_v2");
	*(void **)&nv.energy = dlsym(nv.h, "nvmlDeviceGetTotalEnergyConsumption");
	*(void **)&nv.clock = dlsym(nv.h, "nvmlDeviceGetClockInfo");
	*(void **)&nv.limit = dlsym(nv.h, "nvmlDeviceGetPowerManagementLimit");
	*(void **)&nv.error = dlsym(nv.h, "nvmlErrorString");
	nvml_return r = -1;
	if (!nv.init || !nv.by_index || !nv.energy || (r = nv.init()) != NVML_SUCCESS) {
		atm_status rc = atm_err(ATM_E_UNSUPPORTED, "NVML (%s) %s; the GPU's energy is not "
		                        "measured", lib, r == -1 ? "lacks the energy counter's calls"
		                                                 : why(r));
		dlclose(nv.h);
		memset(&nv, 0, sizeof nv);
		return rc;
	}
	return ATM_OK;
}

/* device -- the GPU's handle, looked up once (a run reads its counter around every step) */
static atm_status device(const char *pci_bus_id, int index, nvml_device *d)
{
	char key[64];
	if (pci_bus_id && nv.by_pci)
		snprintf(key, sizeof key, "%s", pci_bus_id);
	else
		snprintf(key, sizeof key, "#%d", index);
	if (nv.dev && !strcmp(nv.device_key, key)) {
		*d = nv.dev;
		return ATM_OK;
	}
	nvml_return r = pci_bus_id && nv.by_pci ? nv.by_pci(pci_bus_id, d)
	                                        : nv.by_index((unsigned)index, d);
	if (r != NVML_SUCCESS)
		return atm_err(ATM_E_UNSUPPORTED, "NVML finds no GPU %s: %s", pci_bus_id ? pci_bus_id
		               : "of that index", why(r));
	nv.dev = *d;
	snprintf(nv.device_key, sizeof nv.device_key, "%s", key);
	return ATM_OK;
}

atm_status atm_nvml_read(const char *lib, const char *pci_bus_id, int index, bool clocks,
                         atm_gpu_energy *out)
{
	nvml_device d = NULL;
	unsigned long long mj = 0;
	unsigned v = 0;
	nvml_return r;
	atm_status rc = open_lib(lib ? lib : "libnvidia-ml.so.1");
	*out = (atm_gpu_energy){0};
	if (rc < 0 || (rc = device(pci_bus_id, index, &d)) < 0)
		return rc;
	if ((r = nv.energy(d, &mj)) != NVML_SUCCESS)
		return atm_err(ATM_E_UNSUPPORTED, "the GPU has no energy counter NVML reads: %s", why(r));
	out->joules = (double)mj * 1e-3;
	if (!clocks)
		return ATM_OK;
	if (nv.clock && nv.clock(d, NVML_CLOCK_SM, &v) == NVML_SUCCESS)
		out->sm_mhz = (int)v;
	if (nv.clock && nv.clock(d, NVML_CLOCK_MEM, &v) == NVML_SUCCESS)
		out->mem_mhz = (int)v;
	if (nv.limit && nv.limit(d, &v) == NVML_SUCCESS)
		out->power_limit_w = v * 1e-3;
	return ATM_OK;
}
