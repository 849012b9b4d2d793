/* builder.h -- private: the layer builder the networks are written with, and the network entry points.
 *
 * A network is written as straight-line forward code; the builder appends the
 * forward nodes to a graph and zb_finish derives the rest of the training step
 * from them (loss, backward pass in reverse order, gradient sums, SGD):
 *
 *     zb *b = NULL;
 *     if ((rc = zb_new(&b, spec)) < 0) return rc;
 *     int32_t x = zb_image(b, 3, 224, 224);
 *     x = zb_conv(b, "conv1", x, 64, 3, 3, 1, 1, 1, true);
 *     x = zb_relu(b, "relu1", x);
 *     x = zb_fc(b, "fc", x, 10);
 *     rc = zb_finish(b, x, &g);   // the first error of any call above, or ok
 *     zb_destroy(b);
 *
 * Errors are sticky: once a call fails, later calls return -1 and do nothing,
 * and zb_finish returns the first failure (its message stays in atm_errmsg()).
 * Layer names must be unique; a layer "conv1" owns the tensors "conv1.w",
 * "conv1.b", "conv1.y" and, after zb_finish, "conv1.y.grad".
 */
#ifndef ATM_ZOO_BUILDER_H
#define ATM_ZOO_BUILDER_H

#include <stdbool.h>
#include <stdint.h>

#include "atm_core.h"

/* What a network is built at; the catalogue fills it with defaults applied. */
typedef struct {
	const char *name;  /* graph name: the catalogue name */
	int variant;       /* depth (16, 50, 121, ...) or another per-family choice */
	int64_t batch;     /* >= 1 */
	int64_t n_classes; /* >= 1 */
	int64_t image;     /* input height and width, >= 1 */
	float lr;          /* SGD learning rate */
	int64_t seq;       /* sequence length of the transformers, >= 1 */
	bool autocast;     /* bf16 mixed precision as torch.autocast: convolutions, linear layers
	                    * and matrix products read bf16 copies (of weights too, one per weight)
	                    * and write bf16; softmax, the norms and the losses compute and write
	                    * f32 (a bf16 input read widened, exactly); other ops run in their
	                    * inputs' dtype, f32 where they mix; parameters stay f32 */
} zb_spec;

typedef struct zb zb;

#define ZB_EPSILON 1e-5f

/* zb_new -- a builder over a new empty graph named spec->name */
atm_status zb_new(zb **b, const zb_spec *spec);
/* zb_destroy -- frees the builder and, unless zb_finish handed it out, its graph */
void zb_destroy(zb *b);

/* Forward layers. Each returns the id of the layer's output, or -1 after a
 * failure (this call's or an earlier one's). Spatial layers take NCHW tensors;
 * output sizes are floor((in + 2 * pad - k) / stride) + 1 and a window that
 * does not fit is ATM_E_USAGE ("the image is too small"). */

/* zb_image -- the graph input "image" [batch, c, h, w] */
int32_t zb_image(zb *b, int64_t c, int64_t h, int64_t w);
/* zb_conv -- convolution with out_c filters of kh x kw, symmetric padding ph, pw */
int32_t zb_conv(zb *b, const char *name, int32_t x, int64_t out_c, int kh, int kw, int stride,
                int ph, int pw, bool bias);
/* zb_conv_groups -- the same over groups of channels (depthwise: as many groups as channels),
 * weights [out_c, in_c / groups, kh, kw]; groups divide in_c and out_c */
int32_t zb_conv_groups(zb *b, const char *name, int32_t x, int64_t out_c, int kh, int kw,
                       int stride, int ph, int pw, int64_t groups, bool bias);
/* zb_bn -- batch normalization (training: batch statistics), gamma and beta per channel */
int32_t zb_bn(zb *b, const char *name, int32_t x);
/* zb_bn_eps -- the same with its own epsilon (zb_bn: ZB_EPSILON), above 0 and at most 1 */
int32_t zb_bn_eps(zb *b, const char *name, int32_t x, float epsilon);
int32_t zb_relu(zb *b, const char *name, int32_t x);
/* zb_maxpool -- k x k max pooling; also produces the i32 argmax "name.argmax" */
int32_t zb_maxpool(zb *b, const char *name, int32_t x, int k, int stride, int pad);
/* zb_avgpool -- k x k average pooling; exclude_pad: padding is not counted in the divisor */
int32_t zb_avgpool(zb *b, const char *name, int32_t x, int k, int stride, int pad,
                   bool exclude_pad);
/* zb_pool_ceil -- either pooling with PyTorch's ceil_mode: the output rounds up, its last
 * windows reach past the far sides (average pooling that counts the padding is refused there) */
int32_t zb_pool_ceil(zb *b, const char *name, int32_t x, int k, int stride, int pad, bool max,
                     bool exclude_pad);
/* zb_global_avgpool -- average over the whole H x W of x: [N, C, 1, 1] */
int32_t zb_global_avgpool(zb *b, const char *name, int32_t x);
/* zb_fc -- inner product over all dims past N, with bias: [N, out] */
int32_t zb_fc(zb *b, const char *name, int32_t x, int64_t out);
/* zb_add -- element-wise sum of two tensors of one shape (residual connections) */
int32_t zb_add(zb *b, const char *name, int32_t x0, int32_t x1);
/* zb_mul -- element-wise product x0 * x1 of x0's shape, x1 broadcast to it (its dims x0's
 * trailing ones, each equal or 1: a gate of one shape, a per-channel scale [N, C, 1, 1]) */
int32_t zb_mul(zb *b, const char *name, int32_t x0, int32_t x1);
/* zb_scale -- x times a learned parameter "name.weight" of dims (x's trailing ones, each equal
 * or 1: ConvNeXt's layer scale [C, 1, 1]), which starts at one */
int32_t zb_scale(zb *b, const char *name, int32_t x, int ndim, const int64_t *dims);
/* zb_concat -- concatenation along channels; n == 1 returns xs[0] and adds no node */
int32_t zb_concat(zb *b, const char *name, int n, const int32_t *xs);

/* zb_concat_axis -- concatenation along any axis, the other dims equal */
int32_t zb_concat_axis(zb *b, const char *name, int n, const int32_t *xs, int axis);

/* Transformer layers. Their parameters are LAYER.weight and LAYER.bias as PyTorch names them
 * (zb_param_names overrides); a parameter name given again is the same tensor (tied), its
 * gradient summed over its uses before its SGD. */

/* zb_dim -- dim i of tensor x, 0 when there is none */
int64_t zb_dim(zb *b, int32_t x, int i);
/* zb_tokens -- an i32 graph input [batch, seq] named name (token ids, token types) */
int32_t zb_tokens(zb *b, const char *name, int64_t seq);
/* zb_embedding -- rows of a [rows, dim] table picked by ids: [..., dim] */
int32_t zb_embedding(zb *b, const char *name, int32_t ids, int64_t rows, int64_t dim);
/* zb_positions -- the first seq rows of a table param of `rows` rows ([rows, dim], or
 * [1, rows, dim] when lead_one), one copy per batch entry: [batch, seq, dim] */
int32_t zb_positions(zb *b, const char *name, const char *param, int64_t seq, int64_t rows,
                     int64_t dim, bool lead_one);
int32_t zb_layer_norm(zb *b, const char *name, int32_t x, float epsilon);
/* zb_rms_norm -- over the last dimension: x / sqrt(mean of x^2 + epsilon), times a scale [C]
 * (LLaMA's RMSNorm; the scale's parameter is LAYER.weight) */
int32_t zb_rms_norm(zb *b, const char *name, int32_t x, float epsilon);
/* zb_linear -- x [..., in] times a weight [out, in] (+ bias [out]): [..., out] */
int32_t zb_linear(zb *b, const char *name, int32_t x, int64_t out, bool bias);
/* zb_matmul -- batched: x [..., m, k] times y [..., k, n] (transposes as said), scaled */
int32_t zb_matmul(zb *b, const char *name, int32_t x, int32_t y, bool trans_a, bool trans_b,
                  float scale);
int32_t zb_gelu(zb *b, const char *name, int32_t x, bool tanh_form);
int32_t zb_tanh(zb *b, const char *name, int32_t x);
/* zb_rope -- rotary position embeddings over x [..., T, D] (D even), the rotate-half form
 * with base theta */
int32_t zb_rope(zb *b, const char *name, int32_t x, float theta);
/* zb_silu -- x * sigmoid(x) (SiLU, swish) */
int32_t zb_silu(zb *b, const char *name, int32_t x);
/* zb_sigmoid, zb_hardswish, zb_hardsigmoid, zb_relu6 -- PyTorch's activations of those names */
int32_t zb_sigmoid(zb *b, const char *name, int32_t x);
int32_t zb_hardswish(zb *b, const char *name, int32_t x);
int32_t zb_hardsigmoid(zb *b, const char *name, int32_t x);
int32_t zb_relu6(zb *b, const char *name, int32_t x);
/* zb_softmax -- over the last dim; causal masks entry j of row i of the last two when j > i */
int32_t zb_softmax(zb *b, const char *name, int32_t x, bool causal);
/* zb_permute -- x (or the reshape of x to the output's dims before permuting) with its axes
 * in perm's order, as [ndim] dims */
int32_t zb_permute(zb *b, const char *name, int32_t x, int n_perm, const int32_t *perm, int ndim,
                   const int64_t *dims);
/* zb_narrow -- the first len entries of x along axis */
int32_t zb_narrow(zb *b, const char *name, int32_t x, int axis, int64_t len);
/* zb_split -- n equal parts of x along axis into ys; every part must reach the loss */
void zb_split(zb *b, const char *name, int32_t x, int axis, int n, int32_t *ys);

/* zb_param_names -- the names of the next layer's parameters instead of LAYER.w and LAYER.b
 * (LAYER.gamma and LAYER.beta): first names its weight (scale), second its bias (shift); NULL
 * keeps the layer's own. The next layer call uses them, and they are forgotten. An imported
 * network names them as its framework does (PyTorch: "layer1.0.conv1.weight"). A name given
 * again (a module applied twice, an alias, tied weights) is the same tensor, its gradient summed
 * over its uses before its one SGD; at another shape it is refused, naming both layers. */
void zb_param_names(zb *b, const char *first, const char *second);

/* Composites with names "PREFIX.conv", "PREFIX.bn", "PREFIX.relu". */
int32_t zb_conv_bn(zb *b, const char *prefix, int32_t x, int64_t out_c, int kh, int kw, int stride,
                   int ph, int pw);
int32_t zb_conv_bn_relu(zb *b, const char *prefix, int32_t x, int64_t out_c, int kh, int kw,
                        int stride, int ph, int pw);

/* zb_finish -- softmax cross-entropy of logits [N, K] against one-hot "labels",
 * then the backward pass and SGD updates; hands the graph to *g (NULL on failure).
 * The builder is spent afterwards: destroy it. */
atm_status zb_finish(zb *b, int32_t logits, atm_graph **g);

/* zb_finish_tokens -- for each of n logits [..., classes], the token cross-entropy against an
 * i32 input labels[i] of the logits' shape without its last dim, its loss output losses[i]
 * (the first is the step's loss); then the backward pass and SGD as zb_finish */
atm_status zb_finish_tokens(zb *b, int n, const int32_t *logits, const char *const *labels,
                            const char *const *losses, atm_graph **g);

/* zb_forward -- an image network's layers from its input x to its logits; arg is the
 * network's own (a variant's table), as zb_build_image was given it */
typedef int32_t (*zb_forward)(zb *b, int32_t x, const zb_spec *spec, const void *arg);

/* zb_build_image -- an image classifier's whole training step: a builder over spec, the input
 * "image" [batch, channels, spec->image, spec->image], forward's layers, zb_finish into *g
 * (NULL on failure) */
atm_status zb_build_image(atm_graph **g, const zb_spec *spec, int64_t channels,
                          zb_forward forward, const void *arg);

/* zb_namef -- snprintf into buf of ZB_NAME_MAX bytes, for layer names; returns buf.
 * It truncates, but a layer name that long leaves no room for the tensor names
 * derived from it, so the layer call fails with a message instead. */
#define ZB_NAME_MAX 256
const char *zb_namef(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Networks (one file each); spec is complete (defaults applied). */
enum { ZB_TINY_CNN, ZB_TINY_MLP, ZB_TINY_SE }; /* zb_net_tiny's networks */
atm_status zb_net_vgg(atm_graph **g, const zb_spec *spec);        /* variant: 16, 19, 416 */
atm_status zb_net_resnet(atm_graph **g, const zb_spec *spec);     /* variant: 50, 101, 152, 200 */
atm_status zb_net_inception(atm_graph **g, const zb_spec *spec);  /* variant: 4 */
atm_status zb_net_densenet(atm_graph **g, const zb_spec *spec);   /* variant: 121, 169, 201, 264 */
atm_status zb_net_tiny(atm_graph **g, const zb_spec *spec);       /* variant: ZB_TINY_* */
atm_status zb_net_gpt2(atm_graph **g, const zb_spec *spec);       /* variant: 12, 24, 36, 48 layers */
atm_status zb_net_bert(atm_graph **g, const zb_spec *spec);       /* variant unused */
atm_status zb_net_vit(atm_graph **g, const zb_spec *spec);        /* variant unused */
atm_status zb_net_llama(atm_graph **g, const zb_spec *spec);      /* variant: which sizes */

#endif /* ATM_ZOO_BUILDER_H */
