/* atm_zoo.h -- the network zoo: full training steps (forward, loss, backward, SGD) of published networks.
 *
 * Usage:
 *
 *     atm_graph *g = NULL;
 *     atm_zoo_opts o = {.batch = 16};
 *     if (atm_zoo_build(&g, "vgg19", &o) < 0) fprintf(stderr, "%s\n", atm_errmsg());
 *     ...
 *     atm_zoo_preset_sizes s;
 *     atm_zoo_preset("resnet200", "small", &s);   // s.batch[0], s.image
 *
 * Every network's graph holds, in schedule order: the forward pass, softmax
 * cross-entropy against one-hot labels (the transformers: token cross-entropy against i32
 * labels), the backward pass in reverse order, and an SGD update of each parameter right
 * after its gradient is complete (a tied parameter's after the sum of its parts).
 */
#ifndef ATM_ZOO_H
#define ATM_ZOO_H

#include "atm_core.h"
#include "atm_formats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
	int64_t batch;     /* 1 to 1,000,000 */
	int64_t n_classes; /* 0: 1000 (10 for the tiny networks); else 1 to 1,000,000 */
	int64_t image;     /* 0: the network's own input size (224; 299 for Inception, 32 for
	                    * tiny_cnn, 8 for tiny_mlp); else 1 to 65536. Global pooling keeps
	                    * the parameter count of ResNet, Inception and DenseNet at any size;
	                    * VGG's first fully connected layer follows it (512 * (image/32)^2). */
	float lr;          /* 0: 0.01; else a finite number > 0 */
	int64_t seq;       /* transformers' sequence length: 0: the model's default; else 1 to
	                    * its position table (1024 for GPT-2, 512 for BERT); ViT's follows
	                    * the image */
	bool bf16;         /* bf16 mixed precision, as torch.autocast (zoo/builder.h) */
} atm_zoo_opts;

typedef struct {
	const char *name;        /* "vgg19" */
	const char *family;      /* "vgg", "resnet", "inception", "densenet", "tiny" */
	const char *description; /* one line */
	int64_t default_image;
	int64_t default_classes;
	int64_t default_batch;    /* batch when none is given (16 for test_vgg, else the small preset) */
	int64_t published_params; /* parameter count of the published architecture at default size */
	int64_t default_seq;      /* a language model's sequence length by default (0: no sequence
	                           * option; the CNNs and ViT) */
} atm_zoo_model;

typedef struct {
	const char *name;        /* "paper", "large", "gpu", "small" */
	const char *description;
} atm_zoo_preset_info;

/* atm_zoo_n_models / atm_zoo_model_at -- the catalogue, in display order */
int atm_zoo_n_models(void);
const atm_zoo_model *atm_zoo_model_at(int i);
/* atm_zoo_find -- NULL and ATM_E_NOTFOUND with a message listing the valid names when unknown */
atm_status atm_zoo_find(const char *name, const atm_zoo_model **model);

/* atm_zoo_build -- the validated training step of model at opts (NULL: every
 * default, batch default_batch). ATM_E_NOTFOUND for an unknown name, ATM_E_USAGE for an option
 * out of range (the message lists what is valid) and for an image too small for
 * the network (the message names the layer where it runs out). Tensor names:
 * "image", "labels", "loss", and per layer "LAYER.w", "LAYER.b", "LAYER.gamma",
 * "LAYER.beta", "LAYER.y", "LAYER.mean", "LAYER.var", "LAYER.argmax"; the
 * gradient of tensor T is "T.grad" (its parts, when T feeds several layers,
 * "T.grad.1", "T.grad.2", ... summed through "T.grad.sumK"). The transformers name their
 * tensors as their PyTorch modules do ("transformer.h.0.attn.c_attn.weight"; zoo/README.md)
 * and take i32 "input_ids" (BERT also "token_type_ids") or an "image". */
atm_status atm_zoo_build(atm_graph **g, const char *name, const atm_zoo_opts *opts);

/* Presets: named sizes. A preset may hold several batches (the GPU runs) and
 * may shrink the image (the small preset of the deepest networks). */
typedef struct {
	int n_batch;      /* 0: the preset does not cover this model */
	int64_t batch[4];
	int64_t image;    /* 0: the network's default input size */
	int64_t seq;      /* 0: the language model's default sequence */
} atm_zoo_preset_sizes;

int atm_zoo_n_presets(void);
const atm_zoo_preset_info *atm_zoo_preset_at(int i);
/* atm_zoo_preset -- sizes of model under preset; unknown names are ATM_E_USAGE
 * with a message listing what is valid */
atm_status atm_zoo_preset(const char *model, const char *preset, atm_zoo_preset_sizes *out);

/* ---------------------------------------------------------------- forward graphs */

/* A network given by its forward pass alone, as the PyTorch importer writes it
 * (docs/graph-format.md, "Forward graphs": format "autotm-forward"): layers the zoo's builder
 * knows (conv, batch_norm, relu, max_pool, avg_pool, global_avg_pool, flatten, linear, add,
 * concat), their parameters named as the file says, built into the same full training step as
 * the zoo's networks (softmax cross-entropy of the output against one-hot labels, backward,
 * SGD). */

/* atm_zoo_is_forward -- text is a JSON object whose "format" is "autotm-forward" */
bool atm_zoo_is_forward(const char *text, size_t len);
/* atm_zoo_forward_load_buffer -- the training step of a forward graph in memory, at batch (0:
 * the file's "batch", else 1); ATM_E_INPUT naming origin and the layer for anything wrong */
atm_status atm_zoo_forward_load_buffer(atm_graph **g, const char *text, size_t len,
                                       const char *origin, int64_t batch);
/* atm_zoo_load -- a graph file of either format: a forward graph built here, an autotm-graph
 * read as atm_graph_load reads it */
atm_status atm_zoo_load(atm_graph **g, const char *path, const atm_graph_load_opts *o);

#ifdef __cplusplus
}
#endif

#endif /* ATM_ZOO_H */
