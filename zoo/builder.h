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
/* zb_global_avgpool -- average over the whole H x W of x: [N, C, 1, 1] */
int32_t zb_global_avgpool(zb *b, const char *name, int32_t x);
/* zb_fc -- inner product over all dims past N, with bias: [N, out] */
int32_t zb_fc(zb *b, const char *name, int32_t x, int64_t out);
/* zb_add -- element-wise sum of two tensors of one shape (residual connections) */
int32_t zb_add(zb *b, const char *name, int32_t x0, int32_t x1);
/* zb_concat -- concatenation along channels; n == 1 returns xs[0] and adds no node */
int32_t zb_concat(zb *b, const char *name, int n, const int32_t *xs);

/* zb_param_names -- the names of the next layer's parameters instead of LAYER.w and LAYER.b
 * (LAYER.gamma and LAYER.beta): first names its weight (scale), second its bias (shift); NULL
 * keeps the layer's own. The next conv, bn or fc call uses them, and they are forgotten. An
 * imported network names them as its framework does (PyTorch: "layer1.0.conv1.weight"). */
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

/* zb_namef -- snprintf into buf of ZB_NAME_MAX bytes, for layer names; returns buf.
 * It truncates, but a layer name that long leaves no room for the tensor names
 * derived from it, so the layer call fails with a message instead. */
#define ZB_NAME_MAX 256
const char *zb_namef(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Networks (one file each); spec is complete (defaults applied). */
atm_status zb_net_vgg(atm_graph **g, const zb_spec *spec);        /* variant: 16, 19, 416 */
atm_status zb_net_resnet(atm_graph **g, const zb_spec *spec);     /* variant: 50, 101, 152, 200 */
atm_status zb_net_inception(atm_graph **g, const zb_spec *spec);  /* variant: 4 */
atm_status zb_net_densenet(atm_graph **g, const zb_spec *spec);   /* variant: 121, 169, 201, 264 */
atm_status zb_net_tiny_cnn(atm_graph **g, const zb_spec *spec);   /* variant unused */
atm_status zb_net_tiny_mlp(atm_graph **g, const zb_spec *spec);   /* variant unused */

#endif /* ATM_ZOO_BUILDER_H */
