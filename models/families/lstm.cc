// lstm: an LSTM forecaster on spatio-temporal data. Input [batch, seq_len,
// nodes] (one feature per node of the dynamical system per time step), a
// stack of `layers` LSTM layers of width `hidden`, and a linear head from the
// last step's hidden state to the next `horizon` steps of every node.
#include "absl/strings/str_cat.h"
#include "models/architecture.h"
#include "models/families/families.h"
#include "models/iteration_builder.h"

namespace perfcast::models::families {
namespace {

WorkloadDescriptor Describe(const WorkloadSpec& spec) {
  const int64_t layers = Param(spec, "layers");
  const int64_t hidden = Param(spec, "hidden");
  const int64_t nodes = Param(spec, "nodes");
  const int64_t seq_len = Param(spec, "seq_len");
  const int64_t horizon = Param(spec, "horizon");
  const double batch = static_cast<double>(spec.batch_size);
  IterationBuilder b(spec);
  for (int64_t l = 0; l < layers; ++l) {
    b.Lstm(absl::StrCat("lstm.layer", l), l, l == 0 ? nodes : hidden, hidden, seq_len,
           /*input_grad=*/l > 0);
  }
  b.Linear("head", batch, hidden, nodes * horizon, /*bias=*/true);
  b.Loss("loss.mse", batch * nodes * horizon, 1);
  const double input_bytes = 4 * batch * nodes * (seq_len + horizon);
  return b.Finish(input_bytes, 2, layers);
}

}  // namespace

FamilyDef LstmFamily() {
  return {{"lstm",
           WorkloadKind::kModel,
           "LSTM forecaster: stacked LSTM over [batch, seq_len, nodes] windows of a "
           "dynamical system, linear head from the last hidden state to the next "
           "horizon steps of every node; MSE loss.",
           {{"layers", 2, 1, 64, "stacked LSTM layers (inner modules)"},
            {"hidden", 128, 1, 16384, "hidden units per layer"},
            {"nodes", 32, 1, 100000, "input features per step: signals of the graph nodes"},
            {"seq_len", 24, 1, 8192, "input window length in time steps"},
            {"horizon", 12, 1, 1024, "predicted future steps"}}},
          &NoConstraints,
          &Describe};
}

}  // namespace perfcast::models::families
