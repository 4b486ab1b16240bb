// Fitting and evaluating models over the profiles a store holds: the
// selection read from the store, the predictor run on it, and (for a fit)
// the model saved as the next version of its name.
//
// Thread-safe: plain functions; the store serialises its own writes.
#ifndef PERFCAST_SERVING_TRAINING_H_
#define PERFCAST_SERVING_TRAINING_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "db/store.h"
#include "models/hardware.h"
#include "models/profile.h"
#include "predictor/evaluation_report.h"
#include "predictor/predictor.h"
#include "predictor/selection.h"
#include "predictor/summary.h"
#include "serving/model_cache.h"

namespace perfcast::serving {

// The selected profiles and every registered node (by name).
struct Selection {
  std::vector<models::Profile> profiles;
  std::map<std::string, models::Node> nodes;
  std::optional<int> method_version;  // of every profile; none: several methods
  // What a fit or report says of the methods: "measurement method 4", "all
  // measurement methods", "the newest measurement method of each GPU
  // (H100-SXM5-80GB: 3, H200-SXM-141GB: 4)".
  std::string method_note;
  // Agent profiles the selection matched but left out for an older method.
  int64_t older_methods = 0;
  // Imported profiles (not models::MeasuredByAgent) used, and left out as
  // ProfileSelection::exclude_imported asks.
  int64_t imported = 0;
  int64_t imported_left_out = 0;
};

// Reads every node and the profiles `selection` keeps: the agent's of one
// measurement method (the one asked for, else the newest present) unless it
// asks for all, and every imported profile (a user's own runs) unless it
// asks to exclude them. FailedPrecondition (naming the selection) when none
// match; the store's errors.
absl::StatusOr<Selection> LoadSelection(db::Store& store,
                                        const predictor::ProfileSelection& selection);

// What `loaded` left out and why, and how many imported profiles it keeps:
// one sentence each, for a fit's notes.
std::vector<std::string> SelectionNotes(const Selection& loaded);

struct SavedFit {
  std::shared_ptr<const LoadedModel> loaded;  // as saved: id and version set
  predictor::ModelSummary summary;
  int64_t profiles = 0;  // how many the fit used
};

// Fits model `name` (empty: the default) on `selection` and saves it as its
// next version. `keep_going` is asked before the fit and before saving; a
// fit it stops saves nothing. Errors: FailedPrecondition when no profiles
// match, no model could be fitted, or no feature varies (every regression
// would answer a constant); InvalidArgument for bad options or undescribable
// stored workloads; the store's errors.
absl::StatusOr<SavedFit> FitAndSave(db::Store& store, absl::string_view name,
                                       const predictor::ProfileSelection& selection,
                                       const predictor::FitOptions& options,
                                       const predictor::KeepGoing& keep_going);

// Evaluates `options` on `selection` (see predictor::EvaluateAndReport). A
// train/test GPU list the selection has no profiles for, where profiles of
// older measurement methods were left out, says so in its InvalidArgument.
absl::StatusOr<predictor::EvaluationResult> EvaluateSelection(
    db::Store& store, const predictor::ProfileSelection& selection,
    const predictor::EvaluateOptions& options, const predictor::KeepGoing& keep_going);

}  // namespace perfcast::serving

#endif  // PERFCAST_SERVING_TRAINING_H_
