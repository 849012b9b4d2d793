/* fake_nvml.c -- a stand-in for the driver's NVML, built by the tests: one GPU (index 0, bus
 * 00000000:19:00.0) whose energy counter climbs 1.5 J a read; with FAKE_NVML_NO_ENERGY set it
 * has no counter, as older GPUs have none */
#include <stdlib.h>
#include <string.h>

typedef int nvml_return;
typedef struct nvml_device *nvml_device;

static unsigned long long counter_mj = 1000000;
static struct nvml_device *const gpu = (struct nvml_device *)0x19;

nvml_return nvmlInit_v2(void)
{
	return 0;
}

nvml_return nvmlDeviceGetHandleByIndex_v2(unsigned index, nvml_device *d)
{
	*d = index == 0 ? gpu : NULL;
	return index == 0 ? 0 : 2; /* NVML_ERROR_INVALID_ARGUMENT */
}

nvml_return nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvml_device *d)
{
	*d = !strcmp(bus, "00000000:19:00.0") ? gpu : NULL;
	return *d ? 0 : 6; /* NVML_ERROR_NOT_FOUND */
}

nvml_return nvmlDeviceGetTotalEnergyConsumption(nvml_device d, unsigned long long *mj)
{
	if (d != gpu || getenv("FAKE_NVML_NO_ENERGY"))
		return 3; /* NVML_ERROR_NOT_SUPPORTED */
	*mj = counter_mj += 1500;
	return 0;
}

nvml_return nvmlDeviceGetClockInfo(nvml_device d, int type, unsigned *mhz)
{
	*mhz = type == 1 ? 1980 : 2619;
	return d == gpu ? 0 : 2;
}

nvml_return nvmlDeviceGetPowerManagementLimit(nvml_device d, unsigned *mw)
{
	*mw = 700000;
	return d == gpu ? 0 : 2;
}

const char *nvmlErrorString(nvml_return r)
{
	return r == 3 ? "Not Supported" : r == 6 ? "Not Found" : r == 2 ? "Invalid Argument"
	                                                               : "Unknown Error";
}
