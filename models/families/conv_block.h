// Conv2d (no bias) followed by BatchNorm2d on square feature maps: the unit
// of the resnet and resnet_imagenet families. Internal to perfcast_models.
#ifndef PERFCAST_MODELS_FAMILIES_CONV_BLOCK_H_
#define PERFCAST_MODELS_FAMILIES_CONV_BLOCK_H_

#include <cstdint>
#include <string>

#include "models/iteration_builder.h"

namespace perfcast::models::families {

struct SquareConv {
  int64_t channels_in = 0;
  int64_t channels_out = 0;
  int64_t in_size = 0;   // input height and width
  int64_t out_size = 0;  // output height and width
  int64_t kernel = 1;
  int64_t stride = 1;
};

// Adds the convolution `name` and its batch norm `name`.bn for `batch`
// images. `input_grad`: whether the backward pass needs the gradient of
// the input (false for the stem, whose input is the data).
void AddConvBatchNorm(IterationBuilder& b, const std::string& name, int64_t batch,
                      const SquareConv& conv, bool input_grad);

}  // namespace perfcast::models::families

#endif  // PERFCAST_MODELS_FAMILIES_CONV_BLOCK_H_
