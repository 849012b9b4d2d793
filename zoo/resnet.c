/* resnet.c -- ResNet-50/101/152/200 with bottleneck blocks (He et al. 2015, torchvision v1.5: stride on the 3x3) */
#include "builder.h"

/* bottleneck -- 1x1 reduce, 3x3 (carrying the stride), 1x1 expand to 4 * planes,
 * plus the shortcut (a 1x1 projection in a stage's first block), then ReLU */
static int32_t bottleneck(zb *b, int stage, int block, int32_t x, int64_t planes, int stride)
{
	char p[ZB_NAME_MAX], nm[ZB_NAME_MAX];
	zb_namef(p, "layer%d.%d", stage, block);
	int32_t y = zb_conv(b, zb_namef(nm, "%s.conv1", p), x, planes, 1, 1, 1, 0, 0, false);
	y = zb_bn(b, zb_namef(nm, "%s.bn1", p), y);
	y = zb_relu(b, zb_namef(nm, "%s.relu1", p), y);
	y = zb_conv(b, zb_namef(nm, "%s.conv2", p), y, planes, 3, 3, stride, 1, 1, false);
	y = zb_bn(b, zb_namef(nm, "%s.bn2", p), y);
	y = zb_relu(b, zb_namef(nm, "%s.relu2", p), y);
	y = zb_conv(b, zb_namef(nm, "%s.conv3", p), y, 4 * planes, 1, 1, 1, 0, 0, false);
	y = zb_bn(b, zb_namef(nm, "%s.bn3", p), y);
	int32_t shortcut = x;
	if (block == 0)
		shortcut = zb_conv_bn(b, zb_namef(nm, "%s.downsample", p), x, 4 * planes, 1, 1, stride,
		                      0, 0);
	y = zb_add(b, zb_namef(nm, "%s.add", p), y, shortcut);
	return zb_relu(b, zb_namef(nm, "%s.relu", p), y);
}

/* resnet -- stem (7x7/2 conv, BN, ReLU, 3x3/2 max pool), four stages of bottlenecks at 64,
 * 128, 256, 512 planes (arg: the variant's blocks per stage), global average pool, fc */
static int32_t resnet(zb *b, int32_t x, const zb_spec *s, const void *arg)
{
	static const int64_t planes[4] = {64, 128, 256, 512};
	const int *blocks = arg;
	x = zb_conv(b, "conv1", x, 64, 7, 7, 2, 3, 3, false);
	x = zb_bn(b, "bn1", x);
	x = zb_relu(b, "relu", x);
	x = zb_maxpool(b, "maxpool", x, 3, 2, 1);
	for (int stage = 0; stage < 4; stage++)
		for (int i = 0; i < blocks[stage]; i++)
			x = bottleneck(b, stage + 1, i, x, planes[stage], i == 0 && stage > 0 ? 2 : 1);
	x = zb_global_avgpool(b, "avgpool", x);
	return zb_fc(b, "fc", x, s->n_classes);
}

atm_status zb_net_resnet(atm_graph **g, const zb_spec *s)
{
	static const int r50[4] = {3, 4, 6, 3}, r101[4] = {3, 4, 23, 3}, r152[4] = {3, 8, 36, 3},
	                 r200[4] = {3, 24, 36, 3};
	const int *blocks;
	switch (s->variant) {
	case 50: blocks = r50; break;
	case 101: blocks = r101; break;
	case 152: blocks = r152; break;
	case 200: blocks = r200; break;
	default: *g = NULL; return atm_err(ATM_E_INTERNAL, "resnet: no variant %d", s->variant);
	}
	return zb_build_image(g, s, 3, resnet, blocks);
}
