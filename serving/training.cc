#include "serving/training.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "db/store_rules.h"

namespace perfcast::serving {
namespace {

absl::Status Prefixed(absl::string_view prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

// Keeps the agent's profiles of the newest measurement method in each group
// of `loaded.profiles` (a profile's group: `group_of(profile)`), counting the
// others in older_methods; returns each group's newest method among the
// agent's profiles. Imported profiles (not models::MeasuredByAgent: a user's
// own runs, public measurements) are not ordered by the agent's methods and
// stay.
template <typename GroupOf>
std::map<std::string, int> KeepNewestMethod(Selection& loaded, const GroupOf& group_of) {
  std::map<std::string, int> newest;
  for (const models::Profile& p : loaded.profiles) {
    if (!models::MeasuredByAgent(p)) continue;
    int& method = newest[group_of(p)];
    method = std::max(method, p.method_version);
  }
  loaded.older_methods = std::erase_if(loaded.profiles, [&](const models::Profile& p) {
    return models::MeasuredByAgent(p) && p.method_version != newest.at(group_of(p));
  });
  return newest;
}

}  // namespace

absl::StatusOr<Selection> LoadSelection(db::Store& store,
                                        const predictor::ProfileSelection& selection) {
  Selection loaded;
  if (absl::Status s = db::ForEachNode(
          store, {}, [&](models::Node& node) { loaded.nodes[node.name] = std::move(node); });
      !s.ok()) {
    return s;
  }
  const predictor::ProfileSelector selector(selection);
  db::ProfileFilter filter;
  if (selection.since_us != 0) filter.since_us = selection.since_us;
  filter.method_version = selection.method_version;
  absl::Status scanned = store.ScanProfiles(filter, [&](const models::Profile& p) {
    auto node = loaded.nodes.find(p.node_name);
    if (node != loaded.nodes.end() && selector.Selects(p, node->second.gpu.model)) {
      loaded.profiles.push_back(p);
    }
    return true;
  });
  if (!scanned.ok()) return scanned;
  if (selection.exclude_imported) {
    loaded.imported_left_out = std::erase_if(
        loaded.profiles, [](const models::Profile& p) { return !models::MeasuredByAgent(p); });
  }
  if (loaded.profiles.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no profiles match the selection (", predictor::DescribeSelection(selection), ")"));
  }
  loaded.imported = std::count_if(loaded.profiles.begin(), loaded.profiles.end(),
                                  [](const models::Profile& p) { return !models::MeasuredByAgent(p); });
  if (selection.newest_per_gpu) {
    const std::map<std::string, int> newest =
        KeepNewestMethod(loaded, [&](const models::Profile& p) -> const std::string& {
          return loaded.nodes.at(p.node_name).gpu.model;
        });
    std::set<int> methods;
    std::vector<std::string> parts;
    for (const auto& [gpu, method] : newest) {
      methods.insert(method);
      parts.push_back(absl::StrCat(gpu, ": ", method));
    }
    if (methods.size() == 1) loaded.method_version = *methods.begin();
    loaded.method_note = absl::StrCat("the newest measurement method of each GPU (",
                                      absl::StrJoin(parts, ", "), ")");
    return loaded;
  }
  if (!selection.all_methods) {
    // One group: the newest method among all the selected agent profiles.
    const std::map<std::string, int> newest =
        KeepNewestMethod(loaded, [](const models::Profile&) { return std::string(); });
    if (!newest.empty() && loaded.imported == 0) loaded.method_version = newest.begin()->second;
    loaded.method_note = newest.empty() ? "imported profiles only"
                         : loaded.imported == 0
                             ? predictor::MethodNote(newest.begin()->second)
                             : absl::StrCat(predictor::MethodNote(newest.begin()->second),
                                            " and ", loaded.imported, " imported profiles");
    return loaded;
  }
  loaded.method_note = predictor::MethodNote(loaded.method_version);
  return loaded;
}

std::vector<std::string> SelectionNotes(const Selection& loaded) {
  std::vector<std::string> notes;
  if (loaded.older_methods > 0) {
    notes.push_back(absl::StrCat(
        loaded.older_methods, " selected agent profiles of older measurement methods left out (",
        loaded.method_note,
        " used; --all-methods or --newest-per-gpu keep them, --method-version N picks one)"));
  }
  if (loaded.imported > 0) {
    notes.push_back(absl::StrCat(loaded.imported,
                                 " imported profiles (not measured by an agent) used beside the "
                                 "agent's; --exclude-imported leaves them out"));
  }
  if (loaded.imported_left_out > 0) {
    notes.push_back(absl::StrCat(loaded.imported_left_out,
                                 " imported profiles (not measured by an agent) left out, as "
                                 "asked (--exclude-imported)"));
  }
  return notes;
}

absl::StatusOr<SavedFit> FitAndSave(db::Store& store, absl::string_view name,
                                       const predictor::ProfileSelection& selection,
                                       const predictor::FitOptions& options,
                                       const predictor::KeepGoing& keep_going) {
  if (absl::Status s = db::ValidateModelName(name); !s.ok()) return Prefixed("fit: ", s);
  absl::StatusOr<Selection> loaded = LoadSelection(store, selection);
  if (!loaded.ok()) return Prefixed("fit: ", loaded.status());
  RETURN_IF_ERROR(keep_going());
  ASSIGN_OR_RETURN(predictor::PredictorModel model,
                   predictor::Fit(loaded->profiles, loaded->nodes, options));
  // What the selection left out, and why, first among the fit's notes.
  std::vector<std::string> notes = SelectionNotes(*loaded);
  if (options.calibrate && model.calibrations.empty()) {
    notes.push_back(
        "calibrate: no imported whole-model profile to calibrate on (import your measured runs "
        "as a CSV or JSON Lines file first)");
  }
  model.notes.insert(model.notes.begin(), notes.begin(), notes.end());
  RETURN_IF_ERROR(keep_going());
  if (!predictor::HasAnyFeature(model)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "fit: no feature varies over the ", loaded->profiles.size(),
        " selected profiles (a singular design): every regression would predict a constant; "
        "profile more shapes, sizes or GPUs"));
  }
  absl::StatusOr<std::string> payload = predictor::SerializeModel(model);
  if (!payload.ok()) return Prefixed("fit: ", payload.status());
  SavedFit fitted;
  fitted.summary = predictor::Summarize(model);
  fitted.profiles = static_cast<int64_t>(loaded->profiles.size());
  db::StoredModel stored;
  stored.name = ModelName(name);
  stored.target = fitted.summary.target;
  stored.summary =
      absl::StrCat(fitted.summary.line, "; ", loaded->method_note);
  stored.cv_mape = fitted.summary.cv_mape;
  stored.created_at_us = model.created_at_us;
  stored.payload = *std::move(payload);
  ASSIGN_OR_RETURN(db::StoredModel saved, store.SaveModel(stored));
  auto result = std::make_shared<LoadedModel>();
  result->meta = std::move(saved);
  result->meta.payload.clear();
  result->model = std::move(model);
  fitted.loaded = std::move(result);
  return fitted;
}

absl::StatusOr<predictor::EvaluationResult> EvaluateSelection(
    db::Store& store, const predictor::ProfileSelection& selection,
    const predictor::EvaluateOptions& options, const predictor::KeepGoing& keep_going) {
  absl::StatusOr<Selection> loaded = LoadSelection(store, selection);
  if (!loaded.ok()) return Prefixed("evaluate: ", loaded.status());
  RETURN_IF_ERROR(keep_going());
  absl::StatusOr<predictor::EvaluationResult> result = predictor::EvaluateAndReport(
      std::move(loaded->profiles), loaded->nodes, options,
      {.description = predictor::DescribeSelection(selection),
       .method_version = loaded->method_version,
       .method_note = loaded->method_note},
      keep_going);
  // Public measurements import as method 1 beside an agent's newer ones: a
  // protocol that names their GPUs must learn why they are missing.
  if (!result.ok() && result.status().code() == absl::StatusCode::kInvalidArgument &&
      options.split == predictor::Split::kTrainTestGpus && loaded->older_methods > 0 &&
      !selection.newest_per_gpu) {
    return absl::InvalidArgumentError(absl::StrCat(
        result.status().message(), " (", loaded->older_methods,
        " selected profiles of older measurement methods were left out: only method ",
        *loaded->method_version, ", the newest, is used unless all methods or each GPU's newest are asked for)"));
  }
  return result;
}

}  // namespace perfcast::serving
