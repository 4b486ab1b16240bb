#include "predictor/model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/quantile.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace perfcast::predictor {
namespace {

using nlohmann::json;

absl::Status CheckFinite(const json& value, absl::string_view where) {
  if (value.is_number_float() && !std::isfinite(value.get<double>())) {
    return absl::InvalidArgumentError(absl::StrCat("model: non-finite number in ", where));
  }
  if (value.is_array() || value.is_object()) {
    for (const auto& [key, item] : value.items()) {
      RETURN_IF_ERROR(CheckFinite(item, absl::StrCat(where, "/", key)));
    }
  }
  return absl::OkStatus();
}

json ToJson(const FittedModel& m) {
  return json{
      {"level", m.level},
      {"target", m.target},
      {"scope", m.scope},
      {"reduced", m.reduced},
      {"features", m.features},
      {"mean", m.fit.mean},
      {"scale", m.fit.scale},
      {"coefficients", m.fit.coefficients},
      {"intercept", m.fit.intercept},
      {"ridge", m.regression.ridge},
      {"non_negative", m.regression.non_negative},
      {"relative_weights", m.regression.relative_weights},
      {"loss", std::string(LossName(m.regression.loss))},
      {"scoring", std::string(ScoringName(m.scoring))},
      {"cv_loss", m.cv_loss},
      {"cv_mape", m.cv_mape},
      {"cv_error_quantiles", m.cv_error_quantiles},
      {"transfer_error_quantiles", m.transfer_error_quantiles},
      {"narrow_cv_error_quantiles", m.narrow_cv_error_quantiles},
      {"narrow_transfer_error_quantiles", m.narrow_transfer_error_quantiles},
      {"wide_cv_error_quantiles", m.wide_cv_error_quantiles},
      {"wide_transfer_error_quantiles", m.wide_transfer_error_quantiles},
      {"batched_cv_error_quantiles", m.batched_cv_error_quantiles},
      {"batched_transfer_error_quantiles", m.batched_transfer_error_quantiles},
      {"reference_error_quantiles", m.reference_error_quantiles},
      {"distance_scale", m.distance_scale},
      {"training_rows", m.training_rows},
      {"training_gpus", m.training_gpus},
      {"feature_min", m.feature_min},
      {"feature_max", m.feature_max},
      {"created_at_us", m.created_at_us},
  };
}

// Reads field `key` of `object` into `out`, InvalidArgument when absent or
// of the wrong type. nlohmann's get<> would throw; this never does.
template <typename T>
absl::Status Read(const json& object, const char* key, T& out) {
  auto it = object.find(key);
  if (it == object.end()) {
    return absl::InvalidArgumentError(absl::StrCat("model: missing field '", key, "'"));
  }
  const json& v = *it;
  bool ok = false;
  if constexpr (std::is_same_v<T, bool>) {
    ok = v.is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    ok = v.is_number_integer();
  } else if constexpr (std::is_floating_point_v<T>) {
    ok = v.is_number();
  } else if constexpr (std::is_same_v<T, std::string>) {
    ok = v.is_string();
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    ok = v.is_array() && std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number(); });
  } else {
    ok = v.is_array() && std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_string(); });
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat("model: field '", key, "' has the wrong type"));
  }
  out = v.get<T>();
  return absl::OkStatus();
}

absl::StatusOr<FittedModel> FittedFromJson(const json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("model: a fitted model must be an object");
  FittedModel m;
  std::string scoring;
  RETURN_IF_ERROR(Read(j, "level", m.level));
  RETURN_IF_ERROR(Read(j, "target", m.target));
  RETURN_IF_ERROR(Read(j, "scope", m.scope));
  if (j.contains("reduced")) RETURN_IF_ERROR(Read(j, "reduced", m.reduced));
  RETURN_IF_ERROR(Read(j, "features", m.features));
  RETURN_IF_ERROR(Read(j, "mean", m.fit.mean));
  RETURN_IF_ERROR(Read(j, "scale", m.fit.scale));
  RETURN_IF_ERROR(Read(j, "coefficients", m.fit.coefficients));
  RETURN_IF_ERROR(Read(j, "intercept", m.fit.intercept));
  RETURN_IF_ERROR(Read(j, "ridge", m.regression.ridge));
  RETURN_IF_ERROR(Read(j, "non_negative", m.regression.non_negative));
  RETURN_IF_ERROR(Read(j, "relative_weights", m.regression.relative_weights));
  // Absent from models saved before the loss was a choice: squared.
  if (j.contains("loss")) {
    std::string loss;
    RETURN_IF_ERROR(Read(j, "loss", loss));
    absl::StatusOr<Loss> parsed = ParseLoss(loss);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("model: ", parsed.status().message()));
    }
    m.regression.loss = *parsed;
  }
  RETURN_IF_ERROR(Read(j, "scoring", scoring));
  RETURN_IF_ERROR(Read(j, "cv_loss", m.cv_loss));
  RETURN_IF_ERROR(Read(j, "cv_mape", m.cv_mape));
  RETURN_IF_ERROR(Read(j, "cv_error_quantiles", m.cv_error_quantiles));
  // Absent from models saved before leave-one-GPU-out errors were kept.
  if (j.contains("transfer_error_quantiles")) {
    RETURN_IF_ERROR(Read(j, "transfer_error_quantiles", m.transfer_error_quantiles));
  }
  // Absent from models saved before errors were kept per load regime.
  if (j.contains("narrow_cv_error_quantiles")) {
    RETURN_IF_ERROR(Read(j, "narrow_cv_error_quantiles", m.narrow_cv_error_quantiles));
    RETURN_IF_ERROR(Read(j, "narrow_transfer_error_quantiles", m.narrow_transfer_error_quantiles));
    RETURN_IF_ERROR(Read(j, "wide_cv_error_quantiles", m.wide_cv_error_quantiles));
    RETURN_IF_ERROR(Read(j, "wide_transfer_error_quantiles", m.wide_transfer_error_quantiles));
  }
  // Absent from models saved before batched GEMMs had a regime of their own.
  if (j.contains("batched_cv_error_quantiles")) {
    RETURN_IF_ERROR(Read(j, "batched_cv_error_quantiles", m.batched_cv_error_quantiles));
    RETURN_IF_ERROR(
        Read(j, "batched_transfer_error_quantiles", m.batched_transfer_error_quantiles));
  }
  // Absent from models saved before a family's band had the global one's as reference.
  if (j.contains("reference_error_quantiles")) {
    RETURN_IF_ERROR(Read(j, "reference_error_quantiles", m.reference_error_quantiles));
  }
  // Absent from models saved before the distance spread was scaled per model.
  if (j.contains("distance_scale")) {
    RETURN_IF_ERROR(Read(j, "distance_scale", m.distance_scale));
    if (!(m.distance_scale >= 0)) {
      return absl::InvalidArgumentError("model: 'distance_scale' must be at least 0");
    }
  }
  RETURN_IF_ERROR(Read(j, "training_rows", m.training_rows));
  RETURN_IF_ERROR(Read(j, "training_gpus", m.training_gpus));
  RETURN_IF_ERROR(Read(j, "feature_min", m.feature_min));
  RETURN_IF_ERROR(Read(j, "feature_max", m.feature_max));
  RETURN_IF_ERROR(Read(j, "created_at_us", m.created_at_us));
  ASSIGN_OR_RETURN(m.scoring, ParseScoring(scoring));
  const size_t p = m.features.size();
  if (m.fit.mean.size() != p || m.fit.scale.size() != p || m.fit.coefficients.size() != p ||
      m.feature_min.size() != p || m.feature_max.size() != p) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", m.scope, "': per-feature vectors disagree in length"));
  }
  for (double s : m.fit.scale) {
    if (!(s > 0)) return absl::InvalidArgumentError("model: a feature scale is not positive");
  }
  return m;
}

json ToJson(const MemoryModel& m) {
  json out = json::object();
  for (const auto& [scope, c] : m.calibrations) {
    out[scope] = {{"coefficients", c.coefficients}, {"rows", c.rows},
                  {"fit_mape", c.fit_mape},         {"cv_mape", c.cv_mape},
                  {"cv_max_error", c.cv_max_error}, {"error_p10", c.error_p10},
                  {"error_p90", c.error_p90}};
  }
  return out;
}

json ToJson(const PowerModel& m) {
  json out = json::object();
  for (const auto& [scope, c] : m.calibrations) {
    out[scope] = {{"utilisation", c.utilisation}, {"p10", c.p10}, {"p90", c.p90}, {"rows", c.rows}};
  }
  return out;
}

// Reads `j`, an object of objects keyed by scope (`what`: "memory",
// "power", "calibrations"), into `out` with `read_one(scope, object)`.
template <typename T, typename ReadOne>
absl::Status ReadScoped(const json& j, absl::string_view what, ReadOne read_one,
                        std::map<std::string, T>& out) {
  if (!j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("model: '", what, "' must be an object"));
  }
  for (const auto& [scope, value] : j.items()) {
    if (!value.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat("model: bad ", what, " entry '", scope, "'"));
    }
    ASSIGN_OR_RETURN(out[scope], read_one(scope, value));
  }
  return absl::OkStatus();
}

// One group's efficiencies (an architecture's or a class's), by rate key.
absl::StatusOr<std::map<std::string, double>> EfficienciesFromJson(const std::string& group,
                                                                   const json& rates) {
  std::map<std::string, double> out;
  for (const auto& [key, value] : rates.items()) {
    if (!value.is_number()) {
      return absl::InvalidArgumentError(
          absl::StrCat("model: bad efficiency value '", key, "' of '", group, "'"));
    }
    out[key] = value.get<double>();
  }
  return out;
}

absl::StatusOr<MemoryCalibration> MemoryCalibrationFromJson(const std::string& scope,
                                                            const json& value) {
  MemoryCalibration c;
  c.scope = scope;
  RETURN_IF_ERROR(Read(value, "coefficients", c.coefficients));
  RETURN_IF_ERROR(Read(value, "rows", c.rows));
  RETURN_IF_ERROR(Read(value, "fit_mape", c.fit_mape));
  RETURN_IF_ERROR(Read(value, "cv_mape", c.cv_mape));
  RETURN_IF_ERROR(Read(value, "cv_max_error", c.cv_max_error));
  RETURN_IF_ERROR(Read(value, "error_p10", c.error_p10));
  RETURN_IF_ERROR(Read(value, "error_p90", c.error_p90));
  // Models saved before the memory fit split the transient bytes into
  // activations and inputs and added the fp32 largest operation carry five
  // coefficients: constant, activations + inputs, fp32 activations,
  // largest operation, forward bytes. The same answer in today's order:
  if (c.coefficients.size() == 5) {
    const std::vector<double> old = c.coefficients;
    c.coefficients = {old[0], old[1], old[1], old[2], old[3], 0.0, old[4]};
  }
  if (c.coefficients.size() != kMemoryFeatures) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model: memory calibration '", scope, "' needs ", kMemoryFeatures, " coefficients"));
  }
  return c;
}

absl::StatusOr<PowerCalibration> PowerCalibrationFromJson(const std::string& scope,
                                                          const json& value) {
  PowerCalibration c;
  c.scope = scope;
  RETURN_IF_ERROR(Read(value, "utilisation", c.utilisation));
  RETURN_IF_ERROR(Read(value, "p10", c.p10));
  RETURN_IF_ERROR(Read(value, "p90", c.p90));
  RETURN_IF_ERROR(Read(value, "rows", c.rows));
  if (!(c.utilisation > 0)) {
    return absl::InvalidArgumentError("model: a power utilisation is not positive");
  }
  return c;
}

absl::StatusOr<Calibration> CalibrationFromJson(const std::string& key, const json& value) {
  Calibration c;
  RETURN_IF_ERROR(Read(value, "factor", c.factor));
  RETURN_IF_ERROR(Read(value, "log_sd", c.log_sd));
  RETURN_IF_ERROR(Read(value, "rows", c.rows));
  RETURN_IF_ERROR(Read(value, "raw_log_ratio", c.raw_log_ratio));
  // Older models have no sizes: every size gets log_sd.
  if (value.contains("max_inner_modules")) {
    RETURN_IF_ERROR(Read(value, "min_inner_modules", c.min_inner_modules));
    RETURN_IF_ERROR(Read(value, "max_inner_modules", c.max_inner_modules));
    RETURN_IF_ERROR(Read(value, "beyond_log_sd", c.beyond_log_sd));
  }
  if (!(c.factor > 0) || !(c.log_sd >= 0) || c.rows < 1 || !(c.beyond_log_sd >= 0) ||
      c.min_inner_modules > c.max_inner_modules) {
    return absl::InvalidArgumentError(
        absl::StrCat("model: calibration '", key,
                     "' needs a positive factor and rows, spreads >= 0 and min size <= max"));
  }
  return c;
}

}  // namespace

absl::string_view OpClassKey(models::OpClass op_class) { return models::OpClassName(op_class); }

absl::StatusOr<models::OpClass> ParseOpClassKey(absl::string_view name) {
  absl::StatusOr<models::OpClass> op_class = models::ParseOpClass(name);
  if (!op_class.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("model: ", op_class.status().message()));
  }
  return op_class;
}

double FittedModel::ErrorQuantile(double q, bool unseen_gpu, LoadWidth width) const {
  // The regime's own quantiles where the model kept them, else the pooled.
  auto pick = [&](const std::vector<double>& narrow, const std::vector<double>& wide,
                  const std::vector<double>& batched,
                  const std::vector<double>& pooled) -> const std::vector<double>& {
    const std::vector<double>* own = width == LoadWidth::kNarrow    ? &narrow
                                     : width == LoadWidth::kWide    ? &wide
                                     : width == LoadWidth::kBatched ? &batched
                                                                    : &pooled;
    return own->empty() ? pooled : *own;
  };
  const std::vector<double>& cv = pick(narrow_cv_error_quantiles, wide_cv_error_quantiles,
                                       batched_cv_error_quantiles, cv_error_quantiles);
  const std::vector<double>& transfer =
      pick(narrow_transfer_error_quantiles, wide_transfer_error_quantiles,
           batched_transfer_error_quantiles, transfer_error_quantiles);
  // Quantile curves are ascending: interpolated between their percents.
  return SortedQuantile(unseen_gpu && !transfer.empty() ? transfer : cv, q);
}

double FittedModel::ReferenceErrorQuantile(double q) const {
  return SortedQuantile(reference_error_quantiles, q);
}

absl::StatusOr<std::string> SerializeModel(const PredictorModel& model) {
  json level1 = json::object();
  for (const auto& [op_class, fitted] : model.level1) {
    level1[std::string(OpClassKey(op_class))] = ToJson(fitted);
  }
  json level2 = json::object();
  for (const auto& [phase, fitted] : model.level2) {
    level2[std::string(models::PhaseName(phase))] = ToJson(fitted);
  }
  json level2_by_family = json::object();
  for (const auto& [key, fitted] : model.level2_by_family) level2_by_family[key] = ToJson(fitted);
  json root = {
      {"format_version", model.format_version},
      {"level1", level1},
      {"level2", level2},
      {"level2_by_family", level2_by_family},
      {"efficiency_by_architecture", model.efficiencies.by_architecture},
      {"efficiency_by_class", model.efficiencies.by_class},
      {"power_cap_by_class", model.efficiencies.power_cap_by_class},
      {"efficiency_global", model.efficiencies.global},
      {"profile_rates", model.profile_rates},
      {"rate_spread", model.rate_spread},
      {"training_vendors", model.training_vendors},
      {"training_power_classes", model.training_power_classes},
      {"memory", ToJson(model.memory)},
      {"power", ToJson(model.power)},
      {"notes", model.notes},
      {"created_at_us", model.created_at_us},
  };
  // Only where there are any: an uncalibrated model's file is as before.
  for (const auto& [name, table] : {std::pair{"calibrations", &model.calibrations},
                                    std::pair{"measured_calibrations",
                                              &model.measured_calibrations},
                                    std::pair{"run_calibrations", &model.run_calibrations}}) {
    if (table->empty()) continue;
    json calibrations = json::object();
    for (const auto& [key, c] : *table) {
      calibrations[key] = {{"factor", c.factor},
                           {"log_sd", c.log_sd},
                           {"rows", c.rows},
                           {"raw_log_ratio", c.raw_log_ratio}};
      if (c.max_inner_modules > 0) {
        calibrations[key]["min_inner_modules"] = c.min_inner_modules;
        calibrations[key]["max_inner_modules"] = c.max_inner_modules;
        calibrations[key]["beyond_log_sd"] = c.beyond_log_sd;
      }
    }
    root[name] = std::move(calibrations);
  }
  RETURN_IF_ERROR(CheckFinite(root, ""));
  return root.dump(1);
}

absl::StatusOr<PredictorModel> ParseModel(absl::string_view text) {
  json root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return absl::InvalidArgumentError("model: not a JSON object");
  }
  PredictorModel model;
  RETURN_IF_ERROR(Read(root, "format_version", model.format_version));
  if (model.format_version != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("model: unknown format version ", model.format_version));
  }
  RETURN_IF_ERROR(Read(root, "notes", model.notes));
  RETURN_IF_ERROR(Read(root, "created_at_us", model.created_at_us));
  for (const char* key : {"level1", "level2", "efficiency_by_architecture", "efficiency_global"}) {
    if (!root.contains(key) || !root[key].is_object()) {
      return absl::InvalidArgumentError(absl::StrCat("model: '", key, "' must be an object"));
    }
  }
  for (const auto& [name, value] : root["level1"].items()) {
    ASSIGN_OR_RETURN(models::OpClass op_class, ParseOpClassKey(name));
    ASSIGN_OR_RETURN(model.level1[op_class], FittedFromJson(value));
  }
  for (const auto& [name, value] : root["level2"].items()) {
    ASSIGN_OR_RETURN(models::Phase phase, models::ParsePhase(name));
    ASSIGN_OR_RETURN(model.level2[phase], FittedFromJson(value));
  }
  // Absent from models saved before family models existed.
  if (root.contains("level2_by_family")) {
    if (!root["level2_by_family"].is_object()) {
      return absl::InvalidArgumentError("model: 'level2_by_family' must be an object");
    }
    for (const auto& [key, value] : root["level2_by_family"].items()) {
      ASSIGN_OR_RETURN(model.level2_by_family[key], FittedFromJson(value));
    }
  }
  RETURN_IF_ERROR(ReadScoped(root["efficiency_by_architecture"], "efficiency_by_architecture",
                             EfficienciesFromJson, model.efficiencies.by_architecture));
  // Absent from models saved before efficiency classes existed.
  if (root.contains("efficiency_by_class")) {
    RETURN_IF_ERROR(ReadScoped(root["efficiency_by_class"], "efficiency_by_class",
                               EfficienciesFromJson, model.efficiencies.by_class));
  }
  // Absent from models saved before power caps were learned.
  if (root.contains("power_cap_by_class")) {
    RETURN_IF_ERROR(ReadScoped(root["power_cap_by_class"], "power_cap_by_class",
                               EfficienciesFromJson, model.efficiencies.power_cap_by_class));
  }
  for (const auto& [key, value] : root["efficiency_global"].items()) {
    if (!value.is_number()) return absl::InvalidArgumentError("model: bad efficiency value");
    model.efficiencies.global[key] = value.get<double>();
  }
  // Absent from models saved before rate spreads were kept.
  if (root.contains("rate_spread")) {
    if (!root["rate_spread"].is_object()) {
      return absl::InvalidArgumentError("model: 'rate_spread' must be an object");
    }
    for (const auto& [key, value] : root["rate_spread"].items()) {
      if (!value.is_number() || !(value.get<double>() >= 0)) {
        return absl::InvalidArgumentError("model: bad rate spread");
      }
      model.rate_spread[key] = value.get<double>();
    }
  }
  // Absent from models saved before distances were reported.
  for (auto [name, list] : {std::pair{"training_vendors", &model.training_vendors},
                            std::pair{"training_power_classes", &model.training_power_classes}}) {
    if (!root.contains(name)) continue;
    const json& values = root[name];
    if (!values.is_array() ||
        !std::all_of(values.begin(), values.end(), [](const json& v) { return v.is_string(); })) {
      return absl::InvalidArgumentError(
          absl::StrCat("model: '", name, "' must be a list of names"));
    }
    *list = values.get<std::vector<std::string>>();
  }
  // Absent from models saved before rates were read off profiles.
  if (root.contains("profile_rates")) {
    if (!root["profile_rates"].is_object()) {
      return absl::InvalidArgumentError("model: 'profile_rates' must be an object");
    }
    for (const auto& [node, rates] : root["profile_rates"].items()) {
      if (!rates.is_object()) return absl::InvalidArgumentError("model: bad profile rates");
      for (const auto& [key, value] : rates.items()) {
        if (!value.is_number() || !(value.get<double>() > 0)) {
          return absl::InvalidArgumentError("model: bad profile rate value");
        }
        model.profile_rates[node][key] = value.get<double>();
      }
    }
  }
  // Optional: models fitted before memory and power were modelled lack them.
  if (root.contains("memory")) {
    RETURN_IF_ERROR(ReadScoped(root["memory"], "memory", MemoryCalibrationFromJson,
                               model.memory.calibrations));
  }
  if (root.contains("power")) {
    RETURN_IF_ERROR(
        ReadScoped(root["power"], "power", PowerCalibrationFromJson, model.power.calibrations));
  }
  // Absent from models fitted without measured runs to calibrate on.
  for (const auto& [name, table] :
       {std::pair{"calibrations", &model.calibrations},
        std::pair{"measured_calibrations", &model.measured_calibrations},
        std::pair{"run_calibrations", &model.run_calibrations}}) {
    if (!root.contains(name)) continue;
    RETURN_IF_ERROR(ReadScoped(root[name], name, CalibrationFromJson, *table));
  }
  return model;
}

}  // namespace perfcast::predictor
