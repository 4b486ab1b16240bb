// Architecture helpers shared by the analytic descriptors and the LibTorch
// proxies, so that both build exactly the same network from the same
// parameters. Everything here takes values from a normalised WorkloadSpec
// (see NormalizeSpec in descriptor.h).
//
// Thread-safe: all functions are pure.
#ifndef PERFCAST_MODELS_ARCHITECTURE_H_
#define PERFCAST_MODELS_ARCHITECTURE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "models/workload.h"

namespace perfcast::models {

// The value of parameter `name` of a normalised spec (0 if absent).
int64_t Param(const WorkloadSpec& spec, const std::string& name);

// One basic residual block of the `resnet` family: conv3x3(stride) - BN -
// ReLU - conv3x3 - BN, plus a 1x1(stride) conv + BN shortcut when the shape
// changes, then add and ReLU.
struct ResNetBlockShape {
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t stride = 1;
  int64_t in_size = 0;   // input height = width
  int64_t out_size = 0;  // output height = width
  bool downsample = false;  // 1x1 conv shortcut
};

// The blocks of a ResNet with `blocks` basic blocks spread over up to three
// stages of width, 2x width, 4x width (block i goes to stage i*3/blocks; the
// first block of stages 1 and 2 halves the image with stride 2), after a
// 3x3 stem conv from 3 channels to `width` at full resolution.
std::vector<ResNetBlockShape> ResNetLayout(int64_t blocks, int64_t width, int64_t image);

// One residual block of a torchvision ImageNet ResNet. Basic (18, 34):
// conv3x3(stride) - BN - ReLU - conv3x3 - BN. Bottleneck (50, 101, 152;
// torchvision's "v1.5", stride on the 3x3): conv1x1 to `mid_channels` - BN -
// ReLU - conv3x3(stride) - BN - ReLU - conv1x1 to `out_channels` = 4 x mid -
// BN. A 1x1(stride) conv + BN shortcut when the shape changes; add, ReLU.
struct ImageNetBlockShape {
  bool bottleneck = false;
  int64_t in_channels = 0;
  int64_t mid_channels = 0;
  int64_t out_channels = 0;
  int64_t stride = 1;
  int64_t in_size = 0;
  int64_t out_size = 0;
  bool downsample = false;
};

// torchvision's resnet{18,34,50,101,152} on [batch, 3, image, image]: 7x7
// stride-2 stem conv (3 -> 64) + BN + ReLU, 3x3 stride-2 max pool, four
// stages of 64, 128, 256, 512 mid channels (stages 2-4 start with stride 2),
// adaptive average pool, Linear(final_channels, classes).
struct ImageNetResNetShape {
  int64_t stem_size = 0;  // after the stem conv
  int64_t pool_size = 0;  // after the max pool
  std::vector<ImageNetBlockShape> blocks;
  int64_t final_channels = 0;
  int64_t final_size = 0;
};

// Total stride of an ImageNet ResNet: images smaller than this are refused.
inline constexpr int64_t kImageNetResNetStride = 32;

// Blocks per stage of a torchvision depth; empty for any other depth.
std::vector<int64_t> ImageNetResNetStages(int64_t depth);
// The layout of a known depth (see ImageNetResNetStages).
ImageNetResNetShape ImageNetResNetLayout(int64_t depth, int64_t image);

// Tokens a ViT sees: one per patch plus the class token.
int64_t VitTokens(int64_t image, int64_t patch);

// Output size of a convolution (same for height and width).
int64_t ConvOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t padding);

// Time steps left after the STGCN blocks: each block has two temporal
// convolutions of kernel kt without padding.
int64_t StgcnOutputSteps(int64_t seq_len, int64_t blocks, int64_t kernel_t);

// Features of the DLRM pairwise dot interaction over `tables` embeddings and
// the bottom-MLP output: the strict upper triangle of the (tables+1)^2 dot
// products, concatenated with the bottom-MLP output of width emb_dim.
int64_t DlrmInteractionFeatures(int64_t tables, int64_t emb_dim);

}  // namespace perfcast::models

#endif  // PERFCAST_MODELS_ARCHITECTURE_H_
