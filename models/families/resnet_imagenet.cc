// resnet_imagenet: torchvision's ImageNet ResNets (resnet18, 34, 50, 101,
// 152) on [batch, 3, image, image] images, any image size of at least the
// network's total stride; see ImageNetResNetLayout. Convs have no bias
// (BatchNorm follows each); the classifier is Linear(final, classes) after a
// global average pool; cross-entropy.
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "models/architecture.h"
#include "models/families/conv_block.h"
#include "models/families/families.h"
#include "models/iteration_builder.h"

namespace perfcast::models::families {
namespace {

absl::Status Check(const WorkloadSpec& spec) {
  if (ImageNetResNetStages(Param(spec, "depth")).empty()) {
    return absl::InvalidArgumentError(absl::StrCat("resnet_imagenet: parameter 'depth' (",
                                                   Param(spec, "depth"),
                                                   ") must be 18, 34, 50, 101 or 152"));
  }
  if (Param(spec, "image") < kImageNetResNetStride) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resnet_imagenet: parameter 'image' (", Param(spec, "image"),
        ") is smaller than the network's total stride (", kImageNetResNetStride, ")"));
  }
  return absl::OkStatus();
}

WorkloadDescriptor Describe(const WorkloadSpec& spec) {
  const int64_t depth = Param(spec, "depth");
  const int64_t image = Param(spec, "image");
  const int64_t classes = Param(spec, "classes");
  const int64_t batch = spec.batch_size;
  const ImageNetResNetShape net = ImageNetResNetLayout(depth, image);
  IterationBuilder b(spec);
  auto conv_bn = [&](const std::string& name, int64_t cin, int64_t cout, int64_t in_size,
                     int64_t out_size, int64_t kernel, int64_t stride, bool input_grad) {
    AddConvBatchNorm(b, name, batch, {cin, cout, in_size, out_size, kernel, stride}, input_grad);
  };
  auto relu = [&](const std::string& name, int64_t channels, int64_t size) {
    b.Elementwise(name, static_cast<double>(batch) * channels * size * size, 1, 1);
  };
  conv_bn("stem", 3, 64, image, net.stem_size, 7, 2, /*input_grad=*/false);
  relu("stem.relu", 64, net.stem_size);
  b.Reduce("stem.maxpool", static_cast<double>(batch) * 64 * net.stem_size * net.stem_size,
           static_cast<double>(batch) * 64 * net.pool_size * net.pool_size);
  for (size_t i = 0; i < net.blocks.size(); ++i) {
    const ImageNetBlockShape& s = net.blocks[i];
    const std::string name = absl::StrCat("block", i);
    if (s.bottleneck) {
      conv_bn(name + ".conv1", s.in_channels, s.mid_channels, s.in_size, s.in_size, 1, 1, true);
      relu(name + ".relu1", s.mid_channels, s.in_size);
      conv_bn(name + ".conv2", s.mid_channels, s.mid_channels, s.in_size, s.out_size, 3, s.stride,
              true);
      relu(name + ".relu2", s.mid_channels, s.out_size);
      conv_bn(name + ".conv3", s.mid_channels, s.out_channels, s.out_size, s.out_size, 1, 1, true);
    } else {
      conv_bn(name + ".conv1", s.in_channels, s.out_channels, s.in_size, s.out_size, 3, s.stride,
              true);
      relu(name + ".relu1", s.out_channels, s.out_size);
      conv_bn(name + ".conv2", s.out_channels, s.out_channels, s.out_size, s.out_size, 3, 1, true);
    }
    if (s.downsample) {
      conv_bn(name + ".downsample", s.in_channels, s.out_channels, s.in_size, s.out_size, 1,
              s.stride, true);
    }
    const double out_elems =
        static_cast<double>(batch) * s.out_channels * s.out_size * s.out_size;
    // The residual add passes gradients through: no backward kernel.
    b.Elementwise(name + ".add", out_elems, 2, 1, /*backward=*/false);
    b.Elementwise(name + ".relu_out", out_elems, 1, 1);
  }
  b.Reduce("avgpool",
           static_cast<double>(batch) * net.final_channels * net.final_size * net.final_size,
           static_cast<double>(batch) * net.final_channels);
  b.Linear("fc", static_cast<double>(batch), net.final_channels, classes, /*bias=*/true);
  b.Loss("loss.cross_entropy", static_cast<double>(batch) * classes, classes);
  const double input_bytes = 4.0 * batch * 3 * image * image + 8.0 * batch;
  return b.Finish(input_bytes, 2, static_cast<int64_t>(net.blocks.size()));
}

}  // namespace

FamilyDef ResNetImageNetFamily() {
  return {{"resnet_imagenet",
           WorkloadKind::kModel,
           "torchvision ImageNet ResNet (resnet18/34/50/101/152): 7x7 stride-2 stem, max "
           "pool, four stages of basic (18, 34) or bottleneck (50+) blocks, average pool, "
           "linear classifier; cross-entropy. Any image of at least 32 px.",
           {{"depth", 50, 18, 152, "18, 34, 50, 101 or 152"},
            {"image", 224, 1, 8192, "image height and width; at least the total stride 32"},
            {"classes", 1000, 2, 100000, "output classes"}}},
          &Check,
          &Describe};
}

}  // namespace perfcast::models::families
