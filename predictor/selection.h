// Which stored profiles a fit or an evaluation uses: the rules of
// perfcast.v1.ProfileSelection as plain values.
//
// GPU filters apply to every profile (by its node's GPU model); family and
// phase filters only to whole-model profiles, so that operation profiles
// (level 1) stay in a selection of, say, "lstm, train".
//
// Thread-safe: ProfileSelector is immutable once built.
#ifndef PERFCAST_PREDICTOR_SELECTION_H_
#define PERFCAST_PREDICTOR_SELECTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "models/hardware.h"
#include "models/profile.h"
#include "models/workload.h"

namespace perfcast::predictor {

struct ProfileSelection {
  std::vector<std::string> gpu_models;          // empty: every GPU
  std::vector<std::string> exclude_gpu_models;  // wins over gpu_models
  std::vector<std::string> families;            // empty: every family
  std::optional<models::Phase> phase;           // none: both phases
  int64_t since_us = 0;                         // measured at or after; 0: any time
  // Measurement methods measure different quantities (a steady-state step
  // is not a synchronised one), so a fit learns from one: this one, or the
  // newest among the selected profiles; all_methods keeps every method.
  std::optional<int> method_version;
  bool all_methods = false;
  // The newest method of each GPU model instead: GPUs measured by different
  // agent versions (each GPU's own rows stay of one method).
  bool newest_per_gpu = false;
  // Profiles imported from elsewhere (not models::MeasuredByAgent: a user's
  // own runs, public measurements) are used whatever their method unless
  // this leaves them out; the methods above order the agent's profiles.
  bool exclude_imported = false;
};

// "measurement method 2" or "all measurement methods" (none): what a fit
// or an evaluation says about the data it learned from.
std::string MethodNote(std::optional<int> method_version);

// "gpu_models=a,b families=lstm phase=train", or "all profiles": for
// messages and reports.
std::string DescribeSelection(const ProfileSelection& selection);

class ProfileSelector {
 public:
  explicit ProfileSelector(const ProfileSelection& selection);

  // Whether `profile`, measured on a node with GPU `gpu_model`, is selected.
  // since_us is not checked here: the store's scan filters by time.
  bool Selects(const models::Profile& profile, const std::string& gpu_model) const;

 private:
  absl::flat_hash_set<std::string> gpus_;
  absl::flat_hash_set<std::string> excluded_;
  absl::flat_hash_set<std::string> families_;
  std::optional<models::Phase> phase_;
};

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_SELECTION_H_
