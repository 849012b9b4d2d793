/* vgg.c -- VGG-16 and VGG-19 (Simonyan and Zisserman 2014, torchvision layout) and AutoTM's 416-layer VGG */
#include "builder.h"

/* Convolutions per group; every group ends with a 2x2 max pool. The 416-layer
 * network is AutoTM's "large" VGG: the same five groups, much deeper. */
static const int vgg16_groups[5] = {2, 2, 3, 3, 3};
static const int vgg19_groups[5] = {2, 2, 4, 4, 4};
static const int vgg416_groups[5] = {80, 81, 82, 83, 83};
static const int64_t group_width[5] = {64, 128, 256, 512, 512};

/* vgg -- 3x3 convolutions with bias and ReLU in the groups of arg (the variant's table), then
 * fc6, fc7 (4096) and fc8. Without torchvision's adaptive pooling the fc6 width follows the
 * image: 512 * (image / 32)^2, 25088 at 224. No dropout. */
static int32_t vgg(zb *b, int32_t x, const zb_spec *s, const void *arg)
{
	const int *groups = arg;
	char nm[ZB_NAME_MAX];
	for (int grp = 0; grp < 5; grp++) {
		for (int i = 0; i < groups[grp]; i++) {
			x = zb_conv(b, zb_namef(nm, "conv%d_%d", grp + 1, i + 1), x, group_width[grp], 3, 3, 1,
			            1, 1, true);
			x = zb_relu(b, zb_namef(nm, "relu%d_%d", grp + 1, i + 1), x);
		}
		x = zb_maxpool(b, zb_namef(nm, "pool%d", grp + 1), x, 2, 2, 0);
	}
	x = zb_fc(b, "fc6", x, 4096);
	x = zb_relu(b, "relu6", x);
	x = zb_fc(b, "fc7", x, 4096);
	x = zb_relu(b, "relu7", x);
	return zb_fc(b, "fc8", x, s->n_classes);
}

atm_status zb_net_vgg(atm_graph **g, const zb_spec *s)
{
	const int *groups;
	switch (s->variant) {
	case 16: groups = vgg16_groups; break;
	case 19: groups = vgg19_groups; break;
	case 416: groups = vgg416_groups; break;
	default: *g = NULL; return atm_err(ATM_E_INTERNAL, "vgg: no variant %d", s->variant);
	}
	return zb_build_image(g, s, 3, vgg, groups);
}
