/* tiny.c -- three small networks for tests and quick runs: a CNN that reaches every CNN op, a CNN with a squeeze-and-excitation and a SiLU gate, and an MLP */
#include "builder.h"

/* tiny_cnn -- 32x32x3 in, 10 classes out, 4,178 parameters; every CNN op of
 * atm_op appears in its training step:
 *
 *   conv1 3->8 3x3 (bias), relu1                                   32x32x8
 *   conv2 8->16 3x3, bn2, relu2, pool2 max 2x2/2                   16x16x16
 *   res: conv 16->16 3x3, bn, add(pool2), relu                     16x16x16 (residual, fan-out)
 *   a: conv 1x1 16->8, relu  |  b: avg 3x3/1 pad 1 (exclude pad), conv 1x1 16->8 (bias)
 *   cat(a, b), pool3 avg 2x2/2, global avg pool                    1x1x16
 *   fc 16->10, softmax cross-entropy
 */
static int32_t tiny_cnn(zb *b, int32_t x, const zb_spec *s, const void *arg)
{
	(void)arg;
	x = zb_conv(b, "conv1", x, 8, 3, 3, 1, 1, 1, true);
	x = zb_relu(b, "relu1", x);
	x = zb_conv(b, "conv2", x, 16, 3, 3, 1, 1, 1, false);
	x = zb_bn(b, "bn2", x);
	x = zb_relu(b, "relu2", x);
	x = zb_maxpool(b, "pool2", x, 2, 2, 0);

	int32_t r = zb_conv(b, "res.conv", x, 16, 3, 3, 1, 1, 1, false);
	r = zb_bn(b, "res.bn", r);
	r = zb_add(b, "res.add", r, x);
	x = zb_relu(b, "res.relu", r);

	int32_t br[2];
	br[0] = zb_conv(b, "a.conv", x, 8, 1, 1, 1, 0, 0, false);
	br[0] = zb_relu(b, "a.relu", br[0]);
	br[1] = zb_avgpool(b, "b.pool", x, 3, 1, 1, true);
	br[1] = zb_conv(b, "b.conv", br[1], 8, 1, 1, 1, 0, 0, true);
	x = zb_concat(b, "cat", 2, br);

	x = zb_avgpool(b, "pool3", x, 2, 2, 0, false);
	x = zb_global_avgpool(b, "gap", x);
	return zb_fc(b, "fc", x, s->n_classes);
}

/* tiny_mlp -- a 1 x image x image input (8x8: 64 features) through fc
 * 64->32, ReLU, fc 32->32, ReLU, fc 32->10; 3,466 parameters at the default size */
static int32_t tiny_mlp(zb *b, int32_t x, const zb_spec *s, const void *arg)
{
	(void)arg;
	x = zb_fc(b, "fc1", x, 32);
	x = zb_relu(b, "relu1", x);
	x = zb_fc(b, "fc2", x, 32);
	x = zb_relu(b, "relu2", x);
	return zb_fc(b, "fc3", x, s->n_classes);
}

/* tiny_se -- 32x32x3 in, 10 classes out, 518 parameters: the ops of EfficientNet's,
 * MobileNet's, ConvNeXt's and LLaMA's blocks (SiLU, depthwise and grouped convolutions, a
 * ceil-mode pooling, a squeeze-and-excitation's sigmoid gate and per-channel scale, hardswish,
 * relu6, hardsigmoid, a learned layer scale, a gate of one shape, an RMS norm):
 *
 *   conv1 3->8 3x3 (bias), silu1, pool1 max 3x3/2 ceil_mode       16x16x8
 *   se: global avg pool, conv 1x1 8->4 (bias), silu, conv 1x1 4->8 (bias), sigmoid   1x1x8
 *   scale = pool1 * se (broadcast over H and W), hardswish         16x16x8
 *   dw: depthwise conv 3x3 (8 groups), layer scale [8, 1, 1]        16x16x8
 *   gate: conv 1x1 8->8 in 2 groups, relu6, hardsigmoid; gated = gate * dw (one shape)
 *   norm: RMS norm over the last dim (16, its scale [16])          16x16x8
 *   global avg pool, fc 8->10, softmax cross-entropy
 */
static int32_t tiny_se(zb *b, int32_t x, const zb_spec *s, const void *arg)
{
	(void)arg;
	x = zb_conv(b, "conv1", x, 8, 3, 3, 1, 1, 1, true);
	x = zb_silu(b, "silu1", x);
	x = zb_pool_ceil(b, "pool1", x, 3, 2, 0, true, false);

	int32_t e = zb_global_avgpool(b, "se.pool", x);
	e = zb_conv(b, "se.squeeze", e, 4, 1, 1, 1, 0, 0, true);
	e = zb_silu(b, "se.silu", e);
	e = zb_conv(b, "se.excite", e, 8, 1, 1, 1, 0, 0, true);
	e = zb_sigmoid(b, "se.gate", e);
	x = zb_mul(b, "se.scale", x, e);
	x = zb_hardswish(b, "hswish", x);
	x = zb_conv_groups(b, "dw", x, 8, 3, 3, 1, 1, 1, 8, false);
	x = zb_scale(b, "dw.scale", x, 3, (int64_t[]){8, 1, 1});

	int32_t gt = zb_conv_groups(b, "gate.conv", x, 8, 1, 1, 1, 0, 0, 2, false);
	gt = zb_hardsigmoid(b, "gate.hsigmoid", zb_relu6(b, "gate.relu6", gt));
	x = zb_mul(b, "gate.mul", gt, x);
	x = zb_rms_norm(b, "norm", x, 1e-6f);

	x = zb_global_avgpool(b, "gap", x);
	return zb_fc(b, "fc", x, s->n_classes);
}

atm_status zb_net_tiny(atm_graph **g, const zb_spec *s)
{
	static const struct {
		zb_forward forward;
		int64_t channels;
	} nets[] = {
		[ZB_TINY_CNN] = {tiny_cnn, 3},
		[ZB_TINY_MLP] = {tiny_mlp, 1},
		[ZB_TINY_SE] = {tiny_se, 3},
	};
	if (s->variant < 0 || s->variant >= (int)(sizeof nets / sizeof nets[0])) {
		*g = NULL;
		return atm_err(ATM_E_INTERNAL, "tiny: no variant %d", s->variant);
	}
	return zb_build_image(g, s, nets[s->variant].channels, nets[s->variant].forward, NULL);
}
