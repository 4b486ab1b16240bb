// cnn: a temporal-convolution forecaster on the same data as lstm. The
// window [batch, seq_len, nodes] is transposed to [batch, nodes, seq_len];
// `layers` Conv1d(kernel, "same" padding) + ReLU with `channels` channels;
// the flattened [channels x seq_len] features go through a linear head to the
// next `horizon` steps of every node; MSE loss.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "models/architecture.h"
#include "models/families/families.h"
#include "models/iteration_builder.h"

namespace perfcast::models::families {
namespace {

absl::Status Check(const WorkloadSpec& spec) {
  // Odd kernels keep the sequence length with padding (kernel-1)/2, so the
  // head's input width does not depend on the depth.
  if (Param(spec, "kernel") % 2 == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cnn: parameter 'kernel' must be odd, got ", Param(spec, "kernel")));
  }
  return absl::OkStatus();
}

WorkloadDescriptor Describe(const WorkloadSpec& spec) {
  const int64_t layers = Param(spec, "layers");
  const int64_t channels = Param(spec, "channels");
  const int64_t kernel = Param(spec, "kernel");
  const int64_t nodes = Param(spec, "nodes");
  const int64_t seq_len = Param(spec, "seq_len");
  const int64_t horizon = Param(spec, "horizon");
  const double batch = static_cast<double>(spec.batch_size);
  IterationBuilder b(spec);
  // The time-major window becomes channel-major for Conv1d; the data needs no
  // gradient, so the copy has no backward.
  b.Copy("input.transpose", batch * seq_len * nodes, 4, /*backward=*/false);
  for (int64_t l = 0; l < layers; ++l) {
    ConvShape shape;
    shape.batch = spec.batch_size;
    shape.channels_in = l == 0 ? nodes : channels;
    shape.channels_out = channels;
    shape.in_w = shape.out_w = seq_len;
    shape.kernel_w = kernel;
    b.Conv(absl::StrCat("conv", l), shape, /*bias=*/true, /*input_grad=*/l > 0);
    b.Elementwise(absl::StrCat("conv", l, ".relu"), batch * channels * seq_len, 1, 1);
  }
  b.Linear("head", batch, channels * seq_len, nodes * horizon, /*bias=*/true);
  b.Loss("loss.mse", batch * nodes * horizon, 1);
  const double input_bytes = 4 * batch * nodes * (seq_len + horizon);
  return b.Finish(input_bytes, 2, layers);
}

}  // namespace

FamilyDef CnnFamily() {
  return {{"cnn",
           WorkloadKind::kModel,
           "Temporal CNN forecaster: Conv1d(kernel, same padding)+ReLU layers over the "
           "nodes as input channels, flattened linear head to the next horizon steps; "
           "MSE loss.",
           {{"layers", 3, 1, 64, "Conv1d layers (inner modules)"},
            {"channels", 64, 1, 8192, "channels of every conv layer"},
            {"kernel", 3, 1, 63, "temporal kernel size, odd"},
            {"nodes", 32, 1, 100000, "input channels: signals of the graph nodes"},
            {"seq_len", 24, 1, 8192, "input window length in time steps"},
            {"horizon", 12, 1, 1024, "predicted future steps"}}},
          &Check,
          &Describe};
}

}  // namespace perfcast::models::families
