// resnet: a CIFAR-style ResNet on [batch, 3, image, image] images: 3x3 stem
// conv + BN + ReLU, `blocks` basic residual blocks over up to three stages
// (see ResNetLayout), global average pool, linear classifier; cross-entropy.
// Convs have no bias (BatchNorm follows each).
#include "absl/strings/str_cat.h"
#include "models/architecture.h"
#include "models/families/conv_block.h"
#include "models/families/families.h"
#include "models/iteration_builder.h"

namespace perfcast::models::families {
namespace {

WorkloadDescriptor Describe(const WorkloadSpec& spec) {
  const int64_t blocks = Param(spec, "blocks");
  const int64_t width = Param(spec, "width");
  const int64_t image = Param(spec, "image");
  const int64_t classes = Param(spec, "classes");
  const int64_t batch = spec.batch_size;
  IterationBuilder b(spec);
  auto conv_bn = [&](const std::string& name, int64_t cin, int64_t cout, int64_t in_size,
                     int64_t out_size, int64_t kernel, int64_t stride, bool input_grad) {
    AddConvBatchNorm(b, name, batch, {cin, cout, in_size, out_size, kernel, stride}, input_grad);
  };
  conv_bn("stem", 3, width, image, image, 3, 1, /*input_grad=*/false);
  b.Elementwise("stem.relu", static_cast<double>(batch) * width * image * image, 1, 1);
  const std::vector<ResNetBlockShape> layout = ResNetLayout(blocks, width, image);
  for (size_t i = 0; i < layout.size(); ++i) {
    const ResNetBlockShape& s = layout[i];
    const std::string name = absl::StrCat("block", i);
    const double out_elems =
        static_cast<double>(batch) * s.out_channels * s.out_size * s.out_size;
    conv_bn(name + ".conv1", s.in_channels, s.out_channels, s.in_size, s.out_size, 3, s.stride,
            true);
    b.Elementwise(name + ".relu1", out_elems, 1, 1);
    conv_bn(name + ".conv2", s.out_channels, s.out_channels, s.out_size, s.out_size, 3, 1, true);
    if (s.downsample) {
      conv_bn(name + ".shortcut", s.in_channels, s.out_channels, s.in_size, s.out_size, 1,
              s.stride, true);
    }
    // The residual add passes gradients through: no backward kernel.
    b.Elementwise(name + ".add", out_elems, 2, 1, /*backward=*/false);
    b.Elementwise(name + ".relu2", out_elems, 1, 1);
  }
  const int64_t final_channels = layout.empty() ? width : layout.back().out_channels;
  const int64_t final_size = layout.empty() ? image : layout.back().out_size;
  b.Reduce("pool", static_cast<double>(batch) * final_channels * final_size * final_size,
           static_cast<double>(batch) * final_channels);
  b.Linear("fc", static_cast<double>(batch), final_channels, classes, /*bias=*/true);
  b.Loss("loss.cross_entropy", static_cast<double>(batch) * classes, classes);
  const double input_bytes = 4.0 * batch * 3 * image * image + 8.0 * batch;
  return b.Finish(input_bytes, 2, blocks);
}

}  // namespace

FamilyDef ResNetFamily() {
  return {{"resnet",
           WorkloadKind::kModel,
           "ResNet-style image classifier: stem conv, basic residual blocks (conv-BN-ReLU "
           "x2 + shortcut) over up to three stages (width, 2x, 4x), average pool, linear "
           "classifier; cross-entropy.",
           {{"blocks", 6, 1, 256, "basic residual blocks (inner modules)"},
            {"width", 16, 1, 2048, "channels of the first stage"},
            {"image", 32, 8, 1024, "image height and width"},
            {"classes", 10, 2, 100000, "output classes"}}},
          &NoConstraints,
          &Describe};
}

}  // namespace perfcast::models::families
