// stgcn: spatio-temporal graph CNN after Yu et al. (IJCAI 2018). Input
// [batch, 1, seq_len, nodes]. Each of `blocks` ST-Conv blocks is
//   temporal Conv2d(kernel_t x 1) + ReLU
//   graph conv: X A^T with the fixed, dense, symmetrically normalised
//     adjacency (with self loops) of the system's graph, then a 1x1 Conv2d
//     mixing channels (first-order Chebyshev form) + ReLU
//   temporal Conv2d(kernel_t x 1) + ReLU
// (ReLU instead of the paper's GLU gate, no per-block norm). The output layer
// is a Conv2d(T_left x 1) from `channels` to `horizon` channels: one value per
// future step and node. MSE loss.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "models/architecture.h"
#include "models/families/families.h"
#include "models/iteration_builder.h"

namespace perfcast::models::families {
namespace {

absl::Status Check(const WorkloadSpec& spec) {
  const int64_t left =
      StgcnOutputSteps(Param(spec, "seq_len"), Param(spec, "blocks"), Param(spec, "kernel_t"));
  if (left < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "stgcn: parameter 'seq_len' (", Param(spec, "seq_len"),
        ") must exceed 2 * blocks * (kernel_t - 1): every block shortens the window"));
  }
  return absl::OkStatus();
}

WorkloadDescriptor Describe(const WorkloadSpec& spec) {
  const int64_t blocks = Param(spec, "blocks");
  const int64_t nodes = Param(spec, "nodes");
  const int64_t channels = Param(spec, "channels");
  const int64_t seq_len = Param(spec, "seq_len");
  const int64_t kt = Param(spec, "kernel_t");
  const int64_t horizon = Param(spec, "horizon");
  const double batch = static_cast<double>(spec.batch_size);
  IterationBuilder b(spec);
  int64_t steps = seq_len;
  int64_t channels_in = 1;
  auto temporal = [&](const std::string& name, bool input_grad) {
    ConvShape shape;
    shape.batch = spec.batch_size;
    shape.channels_in = channels_in;
    shape.channels_out = channels;
    shape.in_h = steps;
    shape.out_h = steps - kt + 1;
    shape.in_w = shape.out_w = nodes;
    shape.kernel_h = kt;
    b.Conv(name, shape, /*bias=*/true, input_grad);
    steps = shape.out_h;
    channels_in = channels;
    b.Elementwise(name + ".relu", batch * channels * steps * nodes, 1, 1);
  };
  for (int64_t k = 0; k < blocks; ++k) {
    const std::string block = absl::StrCat("block", k);
    temporal(block + ".tconv1", /*input_grad=*/k > 0);
    b.Matmul(block + ".gconv.propagate", batch * channels * steps, nodes, nodes, 1,
             /*rhs_constant=*/true);
    ConvShape theta;
    theta.batch = spec.batch_size;
    theta.channels_in = theta.channels_out = channels;
    theta.in_h = theta.out_h = steps;
    theta.in_w = theta.out_w = nodes;
    b.Conv(block + ".gconv.theta", theta, /*bias=*/true);
    b.Elementwise(block + ".gconv.relu", batch * channels * steps * nodes, 1, 1);
    temporal(block + ".tconv2", /*input_grad=*/true);
  }
  ConvShape output;
  output.batch = spec.batch_size;
  output.channels_in = channels;
  output.channels_out = horizon;
  output.in_h = steps;
  output.kernel_h = steps;
  output.in_w = output.out_w = nodes;
  b.Conv("output", output, /*bias=*/true);
  b.Loss("loss.mse", batch * nodes * horizon, 1);
  const double input_bytes = 4 * batch * nodes * (seq_len + horizon);
  return b.Finish(input_bytes, 2, blocks);
}

}  // namespace

FamilyDef StgcnFamily() {
  return {{"stgcn",
           WorkloadKind::kModel,
           "Spatio-temporal graph CNN (Yu et al.): blocks of temporal conv, dense "
           "normalised-adjacency graph conv, temporal conv; output conv to the next "
           "horizon steps of every node; MSE loss.",
           {{"blocks", 2, 1, 32, "ST-Conv blocks (inner modules)"},
            {"nodes", 32, 1, 20000, "graph nodes of the dynamical system"},
            {"channels", 64, 1, 4096, "channels of every conv"},
            {"seq_len", 12, 2, 4096, "input window length in time steps"},
            {"kernel_t", 3, 1, 15, "temporal kernel size"},
            {"horizon", 3, 1, 1024, "predicted future steps"}}},
          &Check,
          &Describe};
}

}  // namespace perfcast::models::families
