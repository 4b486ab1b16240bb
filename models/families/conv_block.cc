#include "models/families/conv_block.h"

namespace perfcast::models::families {

void AddConvBatchNorm(IterationBuilder& b, const std::string& name, int64_t batch,
                      const SquareConv& conv, bool input_grad) {
  ConvShape shape;
  shape.batch = batch;
  shape.channels_in = conv.channels_in;
  shape.channels_out = conv.channels_out;
  shape.in_h = shape.in_w = conv.in_size;
  shape.out_h = shape.out_w = conv.out_size;
  shape.kernel_h = shape.kernel_w = conv.kernel;
  shape.stride = conv.stride;
  b.Conv(name, shape, /*bias=*/false, input_grad);
  b.BatchNorm(name + ".bn", batch, conv.channels_out, conv.out_size * conv.out_size);
}

}  // namespace perfcast::models::families
