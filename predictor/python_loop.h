// A Python eager loop's step from the agent's C++ loop's (DESIGN.md, "Whose
// loop").
//
// Every profile times the agent's LibTorch loop; users run PyTorch from
// Python, whose interpreter does host work for every call the model's code
// makes (forward's module and function calls, the optimizer's per-parameter
// work) and the framework for every kernel it dispatches (each autograd node
// of backward too). The two counts part ways by family: one torch LSTM call
// launches cuDNN kernels for every time step, while a small convolutional
// model's optimizer does more Python work per tensor than it launches
// kernels. The host enqueues ahead of the GPU, so the two overlap: a step bound
// by the host takes its host time plus the tail of GPU work that follows the
// last launch; a step bound by the GPU takes its GPU time plus the host's
// first launches, before the GPU has work. With G the C++ loop's step and H
// the Python loop's host time per step,
//   H    = fixed_ms + (ops_per_call[phase] × Python calls
//                       + ops_per_launch[phase] × kernel launches) × per-op cost
//   step = max(H + tail × G, G + lead × H).
// A model's own implementation adds to it (models::ImplementationEffects):
// a heavier Python dispatcher scales H (× heavy_dispatch_host_scale);
// a host sync per forward drains the queue, which costs most where host and
// GPU time are alike (+ sync_drain[phase] × min(H, G)² / max(H, G)); the
// attention slow path scales the GPU's step (G × slow_path[autocast,
// phase], either loop).
// The terms are fitted on plain-loop rows against agent rows of the same
// configurations (data/tools/fit_loop_terms.py; python_loop_terms.json is
// compiled in) and validated leaving one model family out (data/README.md).
//
// The per-operation cost is the node's: estimated from the host's measured
// single-thread CPU score (the units the terms are fitted in), else the
// agent's Python probe on it (profiler/python_probe.h) in a loop's state,
// else (a GPU known only from its spec sheet) a reference host's; the
// estimates widen the interval and the answer says which it used. The score
// comes before the probe: one probe reading samples one of the two levels a
// host's cost per launch moves between (data/README.md).
//
// Thread-safe: pure functions over plain values.
#ifndef PERFCAST_PREDICTOR_PYTHON_LOOP_H_
#define PERFCAST_PREDICTOR_PYTHON_LOOP_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/descriptor.h"
#include "models/hardware.h"
#include "models/workload.h"

namespace perfcast::predictor {

// The fitted terms of the composition above.
struct PythonLoopTerms {
  // Host work, in units of the probe's operation, per Python-level call
  // (models::Operation::python_calls) and per kernel launch of the
  // descriptor, by phase (training's calls include the optimizer's
  // per-tensor work, its launches backward's autograd nodes).
  double ops_per_call_train = 0;
  double ops_per_call_inference = 0;
  double ops_per_launch_train = 0;
  double ops_per_launch_inference = 0;
  double fixed_ms = 0;  // host work per step outside the operations
  double tail = 0;      // of G: GPU work after the host's last launch
  double lead = 0;      // of H: host work before the GPU's first kernel
  // A host sync per forward: the share of min(H, G)² / max(H, G) it adds.
  double sync_drain_train = 0;
  double sync_drain_inference = 0;
  // A heavy Python dispatcher's host time over the family layout's.
  double heavy_dispatch_host_scale = 1;
  // The attention slow path's GPU step over the fused layout's.
  double slow_path_autocast_inference = 1;
  double slow_path_autocast_train = 1;
  double slow_path_train = 1;
  // The loop's own scatter on a host no fit saw: the 10th and 90th
  // percentile of held-out log(measured / composed) / share^power over
  // host-bound rows, where share is the host's share of the step (the time
  // the Python loop adds over the step). Steps near the host/GPU boundary
  // scatter far more than the host's share alone says (the loop's own
  // noise is largest there), hence a power below 1. By phase: an
  // inference forward's loop scatters more than a training step's.
  double log_error_share_power = 1;
  double log_error_p10_train = 0;
  double log_error_p90_train = 0;
  double log_error_p10_inference = 0;
  double log_error_p90_inference = 0;
  // Per-op cost × single-thread CPU score on the hosts where both were
  // measured (cost = score_us / score), and that estimate's 10-90% spread
  // as factors.
  double score_us = 0;
  double score_low = 1;
  double score_high = 1;
  // What a loop's process pays per operation over what the agent's probe
  // read on the same host (the terms are fitted in the loop's units: the
  // plain loop's readings before each configuration, which one short
  // reading in a fresh process undershoots): a probed cost is probe ×
  // factor. The loop's held-out scatter, measured at costs estimated as
  // loosely, carries its spread.
  double probe_state_factor = 1;
  // A host known only as "a GPU server": its per-op cost and 10-90% spread.
  double reference_us = 0;
  double reference_low = 1;
  double reference_high = 1;
  std::string source;  // what they were fitted on

  // InvalidArgument when a term is missing, not finite, or out of range.
  static absl::StatusOr<PythonLoopTerms> FromJson(absl::string_view text);
};

// The terms compiled in (predictor/python_loop_terms.json).
const PythonLoopTerms& FittedPythonLoopTerms();

// Where a node's per-operation Python host cost comes from.
enum class HostCostSource { kProbe, kCpuScore, kReference };
// "probe", "cpu-score", "reference": the names the API reports.
absl::string_view HostCostSourceName(HostCostSource source);

// Host microseconds per operation a Python loop dispatches on one node, with
// its 10-90% band.
struct PythonHostCost {
  double per_op_us = 0;
  double low_us = 0;
  double high_us = 0;
  HostCostSource source = HostCostSource::kReference;
  // The node whose agent run measured a probe, and what it read (kProbe:
  // per_op_us before the state factor; kCpuScore: the probe the score
  // stood before; 0: none).
  std::string probed_on;
  double probed_us = 0;
  // kProbe for a catalog GPU: the registered nodes of that GPU model whose
  // probes it is the median of (0: one node's own probe).
  int probed_nodes = 0;
};

// `node`'s per-operation cost: from its CPU score (score_us / score, the
// score's band; a probe it also has is kept for the note); else its probe's
// (MeasuredRates::python_op_us) in the loop's state (× probe_state_factor; a
// band of that value alone: the loop's held-out scatter still widens the
// answer); for a catalog GPU, the median of the probes stored for nodes of
// that GPU model (MeasuredRates::python_op_us_of_gpu, the band spanning
// them), likewise; else the reference host (see the file comment).
PythonHostCost HostCostOf(const models::Node& node, const PythonLoopTerms& terms);

// What the host dispatches in one step: the descriptor's counts.
struct HostWork {
  double python_calls = 0;
  double launches = 0;
};
HostWork HostWorkOf(const models::WorkloadDescriptor& descriptor);

// One composed step.
struct PythonStep {
  double step_ms = 0;
  double host_ms = 0;      // H
  bool host_bound = false;  // H + tail × G won the max
};

// What `spec`'s implementation does to the GPU's step: the slow path's
// factor where `effects` has it (else 1), in either loop.
double ImplementationGpuFactor(const models::ImplementationEffects& effects,
                               const models::WorkloadSpec& spec, const PythonLoopTerms& terms);

// The composition above for a C++ step of `cpp_ms` dispatching `work` per
// step of `phase` at `per_op_us`, with the host syncs of `effects`.
PythonStep ComposePythonStep(double cpp_ms, const HostWork& work, models::Phase phase,
                             const models::ImplementationEffects& effects, double per_op_us,
                             const PythonLoopTerms& terms);

// What a Python loop made of a C++ answer (Prediction::python).
struct PythonLoopPart {
  PythonHostCost cost;
  PythonStep step;
  double cpp_ms = 0;    // the C++ loop's step it was composed from
  double added_ms = 0;  // step.step_ms - cpp_ms
};

// Composes a C++ answer of `ms` (band `lo_ms`..`hi_ms`) for a step
// dispatching `work` in `phase` into the Python loop's, in place:
// the step composed at the cost's centre, the band from the C++ band and
// the cost's band composed, and at least the phase's held-out scatter at the
// host's share around the step (a step the GPU binds keeps the C++ band;
// scatter and the other bands are not added: the scatter was measured
// around answers that carry the C++ error and an estimated cost's already).
PythonLoopPart ApplyPythonLoop(const HostWork& work, models::Phase phase,
                               const models::ImplementationEffects& effects,
                               const PythonHostCost& cost, const PythonLoopTerms& terms, double& ms,
                               double& lo_ms, double& hi_ms);

// The note an answer carries about where its per-op cost came from (never
// empty).
std::string PythonLoopNote(const PythonHostCost& cost, absl::string_view node_name);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_PYTHON_LOOP_H_
