/* backend_model.c -- GPUs described by their datasheets (--gpu-model NAME): plans and estimates
 * for a GPU this machine does not have; nothing runs on one */
#include <stdio.h>
#include <string.h>

#include "backend.h"

/* FP32 rates are without tensor cores: autotm's cuDNN and cuBLAS calls run float32 with TF32
 * off; BF16 rates are the tensor cores' dense ones, for bf16 mixed precision. Host links are what pinned copies reach, not the bus's nominal rate. */
static const atm_gpu_model models[] = {
	{"h100", "NVIDIA H100 SXM5 80GB", (int64_t)81559 << 20, (int64_t)50 << 20, 67.0, 989.4,
	 3350.0, 55.0, 55.0,
	 "NVIDIA H100 datasheet (FP32 67 TFLOPS, BF16 989.4 dense, HBM3 3.35 TB/s, 50 MB L2); "
	 "memory and pinned "
	 "copies over PCIe 5.0 x16 (54.9 GB/s to the device, 55.0 back) measured by autotm on an "
	 "H100 80GB HBM3"},
	{"h200", "NVIDIA H200 SXM 141GB", (int64_t)143771 << 20, (int64_t)60 << 20, 67.0, 989.4,
	 4800.0, 55.0, 55.0,
	 "NVIDIA H200 datasheet (FP32 67 TFLOPS, BF16 989.4 dense, HBM3e 4.8 TB/s); memory and L2 as CUDA reports "
	 "them on an H200; its PCIe 5.0 x16 copies taken as the H100's"},
	{"a100", "NVIDIA A100 SXM4 40GB", (int64_t)40 << 30, (int64_t)40 << 20, 19.5, 312.0,
	 1555.0, 25.0, 25.0,
	 "NVIDIA A100 datasheet (FP32 19.5 TFLOPS, BF16 312 dense, HBM2 1,555 GB/s, 40 MB L2); PCIe 4.0 x16 "
	 "pinned copies about 25 GB/s (31.5 GB/s nominal)"},
	{"rtx2080ti", "NVIDIA GeForce RTX 2080 Ti", (int64_t)11 << 30, (int64_t)5632 << 10, 13.45,
	 0, 616.0, 12.0, 12.0,
	 "NVIDIA Turing TU102 whitepaper (FP32 13.45 TFLOPS at boost, no bf16 units, GDDR6 616 GB/s, 5.5 MB L2, "
	 "11 GB: the AutoTM paper's card); PCIe 3.0 x16 pinned copies about 12 GB/s (15.75 GB/s "
	 "nominal)"},
};

#define N_MODELS ((int)(sizeof models / sizeof models[0]))

const atm_gpu_model *atm_gpu_model_nth(int i)
{
	return i >= 0 && i < N_MODELS ? &models[i] : NULL;
}

atm_status atm_gpu_model_get(const char *name, const atm_gpu_model **m)
{
	char valid[96];
	size_t n = 0;
	*m = NULL;
	for (int i = 0; i < N_MODELS; i++) {
		if (name && !strcmp(models[i].name, name)) {
			*m = &models[i];
			return ATM_OK;
		}
		n += (size_t)snprintf(valid + n, sizeof valid - n, "%s%s", i ? ", " : "", models[i].name);
	}
	return atm_err(ATM_E_USAGE, "unknown GPU model '%s'; valid: %s", name ? name : "", valid);
}

/* atm_backend_model_probe -- the described GPU as a plan sees it: all of its memory free, the
 * reserve kept for the CUDA context as on a real one */
atm_status atm_backend_model_probe(const atm_gpu_opts *o, atm_gpu_info *info)
{
	const atm_gpu_model *m;
	memset(info, 0, sizeof *info);
	atm_status rc = atm_gpu_model_get(o->model, &m);
	if (rc < 0)
		return rc;
	if (o->device != 0)
		return atm_err(ATM_E_USAGE, "--gpu-device picks among a machine's real GPUs; a GPU "
		               "model is one device");
	snprintf(info->name, sizeof info->name, "%s", m->title);
	info->modelled = true;
	info->total_bytes = info->free_bytes = m->memory_bytes;
	return atm_gpu_take_memory(o, info, ATM_E_USAGE);
}

/* atm_backend_model_new -- nothing runs on a described GPU */
atm_status atm_backend_model_new(atm_backend **b, const atm_backend_opts *o)
{
	*b = NULL;
	return atm_err(ATM_E_UNSUPPORTED, "--gpu-model %s describes a GPU for plans and estimates "
	               "(autotm plan or profile with --estimate): nothing runs on it; run on the "
	               "GPU itself with --gpu", o && o->gpu.model ? o->gpu.model : "");
}
