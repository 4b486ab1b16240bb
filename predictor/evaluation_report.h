// An evaluation as `perfcast evaluate` asks for it: profiles described,
// the held-out split run (predictor/evaluate.h), the model a fit on the whole
// selection gives (what the report's reader would deploy; under the transfer
// protocol the one fitted on the training GPUs instead), and the report as
// JSON for --json and --html.
//
// Thread-safe: pure functions.
#ifndef PERFCAST_PREDICTOR_EVALUATION_REPORT_H_
#define PERFCAST_PREDICTOR_EVALUATION_REPORT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/hardware.h"
#include "models/profile.h"
#include "predictor/evaluate.h"

namespace perfcast::predictor {

struct EvaluationResult {
  EvaluationReport report;
  // The threshold kHeldOutSizes used (the median inner modules of the model
  // profiles when none was asked); 0 for the other splits.
  int64_t size_threshold = 0;
  // Per report.points entry: the held-out profile's workload key.
  std::vector<std::string> workload_keys;
  // Of the model the report shows (see SelectedFeatures): under
  // kTrainTestGpus the one fitted on the training GPUs, which predicted the
  // test GPUs; otherwise one fitted on the whole selection.
  std::vector<std::string> selected_features;
  // The report's notes, and why the full fit failed if it did.
  std::vector<std::string> notes;
  std::string report_json;
};

// Called between the long steps; a non-OK status stops the evaluation and
// is returned as is (a server passes its call deadline here).
using KeepGoing = std::function<absl::Status()>;

// What the report says about the profiles it was given.
struct SelectionInfo {
  std::string description;         // see DescribeSelection
  std::optional<int> method_version;  // the measurement method; none: several
  std::string method_note;            // serving::Selection::method_note; empty: MethodNote
};

// Evaluates `profiles` (all on `nodes`) under `options`; `selection` says
// which profiles these are, for the report. options.size_threshold 0 with
// kHeldOutSizes means the median. Errors: InvalidArgument naming a profile
// whose workload cannot be described; FailedPrecondition for the size splits
// without model profiles; those of EvaluateDescribed; and whatever
// `keep_going` returns.
absl::StatusOr<EvaluationResult> EvaluateAndReport(std::vector<models::Profile> profiles,
                                                   const std::map<std::string, models::Node>& nodes,
                                                   EvaluateOptions options,
                                                   const SelectionInfo& selection,
                                                   const KeepGoing& keep_going);

// "kfold", "gpu", "sizes", "largest-size-per-family", "train-test-gpus":
// the split's name in reports.
absl::string_view SplitName(Split split);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_EVALUATION_REPORT_H_
