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

int64_t StgcnOutputSteps(int64_t seq_len, int64_t blocks, int64_t kernel_t) {
  return seq_len - 2 * blocks * (kernel_t - 1);
}

int64_t DlrmInteractionFeatures(int64_t tables, int64_t emb_dim) {
  return (tables + 1) * tables / 2 + emb_dim;
}

}  // namespace perfcast::models
