// The agent's Python probe (DESIGN.md, "Whose loop"): where a python with
// torch exists on the node, the agent runs a small script
// (profiler/python_probe.py, compiled into the agent and written to a
// temporary file for each run, so that a build tree and an installed agent
// behave alike) that times tiny in-place ops queued without a host sync from
// a Python loop and from TorchScript's interpreter, and stores the host
// microseconds per operation with the node and every profile of the run. The
// same script times a tiny nn.Module model's training loop (forward,
// backward, optimizer) and inference per kernel launch, which the agent
// reports with the run.
// Without Python or torch, or when the probe fails or times out, the run
// goes on and the fields stay empty ("not measured").
//
// Plain POSIX; no LibTorch. Thread-compatible.
#ifndef PERFCAST_PROFILER_PYTHON_PROBE_H_
#define PERFCAST_PROFILER_PYTHON_PROBE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "models/hardware.h"

namespace perfcast::profiler {

struct PythonProbeOptions {
  // Interpreters to try in order, each a path or a name looked up on PATH;
  // the first that imports torch measures. Empty: DefaultProbePythons().
  std::vector<std::string> pythons;
  std::string device = "cuda";  // torch.device of the probe: "cuda" or "cpu"
  absl::Duration timeout = absl::Seconds(120);  // per interpreter, killed after
};

// Host microseconds per kernel launch of a tiny nn.Module model's loop
// trained from Python (the script's loop_*_us_per_launch keys): what a
// training loop pays per launch, which a queue of tiny adds does not show.
struct LoopPerLaunch {
  double forward_us = 0;    // the training forward, with its loss
  double backward_us = 0;
  double optimizer_us = 0;  // AdamW's step and zero_grad
  double inference_us = 0;  // a forward under no_grad
  double train_us = 0;      // forward, backward and optimizer together
};

// What one probe measured.
struct PythonProbe {
  std::string python;  // the interpreter that ran it, as given
  std::string python_version;
  std::string torch_version;
  double python_op_us = 0;
  std::optional<double> torchscript_op_us;  // empty where TorchScript failed
  // Empty where the script predates the loop keys or could not measure
  // them; reported with the run, not stored (no column holds it yet).
  std::optional<LoopPerLaunch> loop;
};

// $PERFCAST_PYTHON when set, then the python deploy/gpu/build-agent.sh built
// the agent against (compiled in), then "python3".
std::vector<std::string> DefaultProbePythons();

// Reads the probe script's output: its last non-empty line, a JSON object.
// InvalidArgument when it is not one or a time is missing, not finite or not
// positive. The loop keys are an addition: `loop` stays empty unless all
// five are positive, finite numbers.
absl::StatusOr<PythonProbe> ParsePythonProbeOutput(absl::string_view output);

// Runs the probe with each interpreter of `options` until one measures.
// NotFound when none starts or none imports torch, DeadlineExceeded or
// Internal when the one that imports torch times out or fails; each with one
// line saying why, for the "not measured" note.
absl::StatusOr<PythonProbe> RunPythonProbe(const PythonProbeOptions& options);

// Stores `probe` on `node`: measured python_op_us and torchscript_op_us, the
// host's python_version and python_torch_version.
void ApplyPythonProbe(const PythonProbe& probe, models::Node& node);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_PYTHON_PROBE_H_
