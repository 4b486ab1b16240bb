#include "models/architecture.h"

#include <algorithm>

namespace perfcast::models {

int64_t Param(const WorkloadSpec& spec, const std::string& name) {
  auto it = spec.params.find(name);
  return it == spec.params.end() ? 0 : it->second;
}

int64_t ConvOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t padding) {
  return (in + 2 * padding - kernel) / stride + 1;
}

std::vector<ResNetBlockShape> ResNetLayout(int64_t blocks, int64_t width, int64_t image) {
  std::vector<ResNetBlockShape> layout;
  layout.reserve(blocks);
  int64_t channels = width;
  int64_t size = image;
  int64_t stage = 0;
  for (int64_t i = 0; i < blocks; ++i) {
    const int64_t block_stage = i * 3 / blocks;
    ResNetBlockShape block;
    block.in_channels = channels;
    block.in_size = size;
    if (block_stage != stage) {
      stage = block_stage;
      block.stride = 2;
    }
    block.out_channels = width << stage;
    block.out_size = ConvOutputSize(size, 3, block.stride, 1);
    block.downsample = block.stride != 1 || block.in_channels != block.out_channels;
    channels = block.out_channels;
    size = block.out_size;
    layout.push_back(block);
  }
  return layout;
}

std::vector<int64_t> ImageNetResNetStages(int64_t depth) {
  switch (depth) {
    case 18: return {2, 2, 2, 2};
    case 34: return {3, 4, 6, 3};
    case 50: return {3, 4, 6, 3};
    case 101: return {3, 4, 23, 3};
    case 152: return {3, 8, 36, 3};
    default: return {};
  }
}

ImageNetResNetShape ImageNetResNetLayout(int64_t depth, int64_t image) {
  ImageNetResNetShape shape;
  const bool bottleneck = depth >= 50;
  const int64_t expansion = bottleneck ? 4 : 1;
  shape.stem_size = ConvOutputSize(image, 7, 2, 3);
  shape.pool_size = ConvOutputSize(shape.stem_size, 3, 2, 1);
  int64_t channels = 64;
  int64_t size = shape.pool_size;
  const std::vector<int64_t> stages = ImageNetResNetStages(depth);
  for (size_t stage = 0; stage < stages.size(); ++stage) {
    const int64_t mid = int64_t{64} << stage;
    for (int64_t i = 0; i < stages[stage]; ++i) {
      ImageNetBlockShape block;
      block.bottleneck = bottleneck;
      block.in_channels = channels;
      block.mid_channels = mid;
      block.out_channels = mid * expansion;
      block.stride = stage > 0 && i == 0 ? 2 : 1;
      block.in_size = size;
      block.out_size = ConvOutputSize(size, 3, block.stride, 1);
      block.downsample = block.stride != 1 || block.in_channels != block.out_channels;
      channels = block.out_channels;
      size = block.out_size;
      shape.blocks.push_back(block);
    }
  }
  shape.final_channels = channels;
  shape.final_size = size;
  return shape;
}

int64_t VitTokens(int64_t image, int64_t patch) {
  const int64_t side = image / patch;
  return side * side + 1;
}

int64_t StgcnOutputSteps(int64_t seq_len, int64_t blocks, int64_t kernel_t) {
  return seq_len - 2 * blocks * (kernel_t - 1);
}

int64_t DlrmInteractionFeatures(int64_t tables, int64_t emb_dim) {
  return (tables + 1) * tables / 2 + emb_dim;
}

}  // namespace perfcast::models
