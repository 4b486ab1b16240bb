#include "predictor/pricing_plan.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "base/status_macros.h"
#include "predictor/profile_rates.h"

namespace perfcast::predictor {
namespace {

using internal::BandFactors;
using internal::BandFor;
using internal::OutsideTrainingRange;

// Slots of a compiled table and feature values, on the stack for the
// tables and models there are.
using Scratch = absl::InlinedVector<double, 64>;

// `strict` (strict-fp32) as PyTorch's default fp32 runs it: the same
// operations, its convolutions in TF32.
models::WorkloadDescriptor Fp32Twin(const models::WorkloadDescriptor& strict) {
  models::WorkloadDescriptor fp32 = strict;
  fp32.spec.precision = models::Precision::kFp32;
  for (models::Operation& op : fp32.operations) {
    if (op.precision != models::Precision::kStrictFp32) continue;
    op.precision = op.op_class == models::OpClass::kConv ? models::Precision::kTf32
                                                         : models::Precision::kFp32;
  }
  return fp32;
}

// The key of PricingPlan's measured groups of one phase: a family's agent
// runs in one precision (the family and precision of MeasuredCalibrationKey).
std::string MeasuredGroupKey(absl::string_view family, absl::string_view precision) {
  return absl::StrCat(family, "/", precision);
}

// `model` on `values`, or FailedPrecondition when it answers a non-finite time.
absl::StatusOr<double> Evaluate(const FittedModel& model, absl::Span<const double> values) {
  const double y = model.fit.Predict(values);
  if (!std::isfinite(y)) {
    return absl::FailedPreconditionError(
        absl::StrCat("level", model.level, "/", model.scope, " predicts a non-finite time"));
  }
  return y;
}

std::vector<std::string> Labels(const FittedModel& model) {
  const std::string prefix = absl::StrCat("level", model.level, "/", model.scope, ":");
  std::vector<std::string> labels;
  labels.reserve(model.features.size());
  for (const std::string& feature : model.features) labels.push_back(prefix + feature);
  return labels;
}

// Appends `label` to `list` unless a label of that text is there already
// (internal::AddOnce on references), from `from` on.
void AddOnce(const std::string& label, absl::InlinedVector<const std::string*, 24>& list,
             size_t from = 0) {
  for (size_t i = from; i < list.size(); ++i) {
    if (*list[i] == label) return;
  }
  list.push_back(&label);
}

}  // namespace

Prediction PlannedPrediction::ToPrediction() const {
  Prediction prediction = numbers;
  for (const auto& [key, ms] : breakdown) {
    prediction.breakdown_ms.emplace_hint(prediction.breakdown_ms.end(), *key, ms);
  }
  auto copy = [](absl::Span<const std::string* const> from, std::vector<std::string>& to) {
    to.reserve(from.size());
    for (const std::string* text : from) to.push_back(*text);
  };
  copy(features_used, prediction.features_used);
  copy(extrapolated, prediction.extrapolated);
  copy(uncalibrated_classes, prediction.uncalibrated_classes);
  return prediction;
}

void PlannedPrediction::Clear() {
  numbers = Prediction();
  breakdown.clear();
  features_used.clear();
  extrapolated.clear();
  uncalibrated_classes.clear();
}

struct Level1Plan::Notes {
  std::array<bool, kOpClasses> listed{};
  absl::InlinedVector<bool, 64> extrapolated;  // per level-1 feature (Class::first_flag)
  // Per label of labels_: listed in features_used, in extrapolated;
  // and the labels in the order the lists take them.
  absl::InlinedVector<bool, 64> label_used;
  absl::InlinedVector<bool, 64> label_extrapolated;
  absl::InlinedVector<int, 32> used_order;
  absl::InlinedVector<int, 32> extrapolated_order;
  std::array<bool, kOpClasses> uncalibrated{};
  absl::InlinedVector<int, kOpClasses> uncalibrated_order;
  std::array<double, kOpClasses> breakdown_ms{};
  std::array<bool, kOpClasses> priced{};
  Scratch slots;
  FeatureValues values;
};

PreparedWorkload::PreparedWorkload(const models::WorkloadDescriptor& descriptor)
    : descriptor_(&descriptor),
      memory_(MemoryInputsOf(descriptor)),
      own_inputs_(WorkloadOwnInputs(descriptor)) {
  auto prepare = [](const models::Operation& op, bool ends_record) {
    return Operation{OperationWorkInputs(op), op.count,   op.op_class,
                     op.precision,            RegimeIndex(LoadRegime(op)), ends_record};
  };
  whole_.reserve(descriptor.operations.size());
  bool attention = false;
  for (const models::Operation& op : descriptor.operations) {
    whole_.push_back(prepare(op, /*ends_record=*/true));
    attention = attention || op.op_class == models::OpClass::kAttention;
  }
  LinkRepeats(whole_);
  if (!attention) return;  // Level1Plan::Sum reads whole_
  for (size_t i = 0; i < descriptor.operations.size(); ++i) {
    const models::Operation& op = descriptor.operations[i];
    if (op.op_class != models::OpClass::kAttention) {
      split_.push_back(whole_[i]);
      continue;
    }
    const std::vector<models::Operation> parts = internal::SplitAttention(op);
    for (size_t j = 0; j < parts.size(); ++j) {
      split_.push_back(prepare(parts[j], /*ends_record=*/j + 1 == parts.size()));
    }
  }
  LinkRepeats(split_);
}

void PreparedWorkload::LinkRepeats(std::vector<Operation>& operations) {
  // Keyed by the bytes a call's price reads, so that equal means the same
  // bits (a -0.0 is not a 0.0 here, nor a NaN ever equal).
  absl::flat_hash_map<std::string, int> first;
  std::string key;
  for (size_t i = 0; i < operations.size(); ++i) {
    Operation& op = operations[i];
    op.same_as = -1;
    key.clear();
    const int fields[] = {static_cast<int>(op.op_class), static_cast<int>(op.precision),
                          op.regime};
    key.append(reinterpret_cast<const char*>(fields), sizeof(fields));
    key.append(reinterpret_cast<const char*>(op.inputs.data()), sizeof(op.inputs));
    auto [it, inserted] = first.emplace(key, static_cast<int>(i));
    if (!inserted) op.same_as = it->second;
  }
}

WorkloadInputArray PreparedWorkload::InputValues(const EffectiveRates& rates) const {
  // WorkloadInputValues's sums, in its order, over the records' work.
  WorkloadInputArray values = own_inputs_;
  WorkloadTimes times;
  for (const Operation& op : whole_) {
    times.Add(rates, op.count, op.inputs[kFlopsInput], op.inputs[kBytesInput], op.precision);
  }
  SetWorkloadRateInputs(rates, times, values);
  return values;
}

models::Operation PreparedWorkload::Operation::Work() const {
  models::Operation work;
  work.op_class = op_class;
  work.precision = precision;
  work.flops = inputs[kFlopsInput];
  work.bytes = inputs[kBytesInput];
  work.launches = inputs[kLaunchesInput];
  work.count = count;
  return work;
}

Level1Plan::Level1Plan(const PredictorModel& model)
    : split_attention_(!model.level1.contains(models::OpClass::kAttention) &&
                       model.level1.contains(models::OpClass::kGemm)) {
  for (int c = 0; c < kOpClasses; ++c) {
    classes_[c].key = std::string(OpClassKey(static_cast<models::OpClass>(c)));
    by_key_[c] = c;
  }
  std::sort(by_key_.begin(), by_key_.end(),
            [&](int a, int b) { return classes_[a].key < classes_[b].key; });
  for (const auto& [op_class, fitted] : model.level1) {
    const int c = static_cast<int>(op_class);
    if (c < 0 || c >= kOpClasses) continue;
    Class& level1 = classes_[c];
    level1.model = &fitted;
    for (const std::string& name : fitted.features) {
      level1.slots.push_back(CompiledOperationTable().Slot(name));
    }
    level1.table = CompiledOperationTable().Pruned(level1.slots);
    for (std::string& label : Labels(fitted)) {
      auto known = std::find(labels_.begin(), labels_.end(), label);
      level1.label_ids.push_back(static_cast<int>(known - labels_.begin()));
      if (known == labels_.end()) labels_.push_back(std::move(label));
    }
    level1.first_flag = flags_;
    flags_ += static_cast<int>(fitted.features.size());
  }
}

PricingPlan::PricingPlan(const PredictorModel& model, const models::Node& node)
    : model_(model),
      node_name_(node.name),
      python_cost_(HostCostOf(node, FittedPythonLoopTerms())),
      rates_(ResolveRates(WithProfileRates(node, model.profile_rates), model.efficiencies)),
      level1_(model) {
  if (!rates_.ok()) return;  // every Predict answers its error
  launch_free_ = LaunchFree(*rates_);
  const internal::Target target{node.gpu.model, rates_->source != RateSource::kMeasured};
  // How far the node is from the training GPUs sets the spread its bands
  // carry; each precision's path adds its own (PredictPlanned).
  const models::Node rated = WithProfileRates(node, model.profile_rates);
  Distance hardware = HardwareDistance(model, rated);
  const double spread[2] = {DistanceSpread(model, false, hardware),
                            DistanceSpread(model, true, hardware)};
  for (int p = 0; p < models::kPrecisionCount; ++p) {
    distances_[p] = hardware;
    SetPrecisionPath(model, rated, static_cast<models::Precision>(p), distances_[p]);
    precision_spread_[p] = PrecisionPathSpread(model, distances_[p]);
  }
  for (const auto& [op_class, fitted] : model.level1) {
    const int c = static_cast<int>(op_class);
    if (c < 0 || c >= Level1Plan::kOpClasses) continue;
    for (bool memory_bound : {false, true}) {
      for (LoadWidth regime : {LoadWidth::kWide, LoadWidth::kNarrow, LoadWidth::kBatched}) {
        bands_[c][memory_bound][RegimeIndex(regime)] =
            BandFor(fitted, target, spread[memory_bound], regime);
      }
    }
  }
  for (const auto& [phase, fitted] : model.level2) {
    const int p = static_cast<int>(phase);
    if (p == 0 || p == 1) phases_[p].global = MakeLevel2(fitted, target, spread);
  }
  // Keys are FamilyScope(family, phase): the family is what precedes the
  // last '/'. A key of no phase is one Predict never looks up. A family's
  // model is fitted on a few rows of the training architectures, and its
  // memory and dispatch terms price them as those GPUs behave; a GPU of a new
  // architecture takes the global model, whose terms every family taught.
  for (const auto& [scope, fitted] : model.level2_by_family) {
    if (hardware.architecture_seen == Seen::kNew) break;
    const size_t slash = scope.rfind('/');
    if (slash == std::string::npos) continue;
    for (models::Phase phase : {models::Phase::kTrain, models::Phase::kInference}) {
      if (absl::string_view(scope).substr(slash + 1) == models::PhaseName(phase)) {
        phases_[static_cast<int>(phase)].by_family.emplace(scope.substr(0, slash),
                                                           MakeLevel2(fitted, target, spread));
      }
    }
  }
  // Keys are CalibrationKey(gpu, family, phase); only this node's GPU's serve.
  const std::string gpu_prefix = absl::StrCat(node.gpu.model, "/");
  for (const auto& [key, calibration] : model.calibrations) {
    if (!absl::StartsWith(key, gpu_prefix)) continue;
    for (models::Phase phase : {models::Phase::kTrain, models::Phase::kInference}) {
      const std::string suffix = absl::StrCat("/", models::PhaseName(phase));
      if (!absl::EndsWith(key, suffix) || key.size() <= gpu_prefix.size() + suffix.size()) {
        continue;
      }
      const std::string family =
          key.substr(gpu_prefix.size(), key.size() - gpu_prefix.size() - suffix.size());
      if (key != CalibrationKey(node.gpu.model, family, phase)) continue;
      phases_[static_cast<int>(phase)].calibrations.emplace(
          family, Calibrated{&calibration, CalibrationLabel(key)});
    }
  }
  // Keys are MeasuredCalibrationKey(gpu, family, phase, precision).
  for (const auto& [key, calibration] : model.measured_calibrations) {
    if (!absl::StartsWith(key, gpu_prefix)) continue;
    const std::vector<absl::string_view> parts =
        absl::StrSplit(absl::string_view(key).substr(gpu_prefix.size()), '/');
    if (parts.size() != 3) continue;
    for (models::Phase phase : {models::Phase::kTrain, models::Phase::kInference}) {
      if (parts[1] != models::PhaseName(phase)) continue;
      phases_[static_cast<int>(phase)].measured.emplace(
          MeasuredGroupKey(parts[0], parts[2]), Calibrated{&calibration, CalibrationLabel(key)});
    }
  }
  for (const auto& [key, calibration] : model.run_calibrations) {
    if (!absl::StartsWith(key, gpu_prefix)) continue;
    runs_.emplace(key.substr(gpu_prefix.size()), Calibrated{&calibration, CalibrationLabel(key)});
  }
}

PricingPlan::Level2 PricingPlan::MakeLevel2(const FittedModel& fitted,
                                            const internal::Target& target,
                                            const double spread[2]) const {
  Level2 level2;
  level2.model = &fitted;
  auto uses = [&](absl::string_view feature) {
    return std::find(fitted.features.begin(), fitted.features.end(), feature) !=
           fitted.features.end();
  };
  level2.uses_level1 = uses("level1_ms");
  level2.uses_gpu = uses("level1_gpu_ms");
  const CompiledFeatureTable& table = CompiledWorkloadTable(level2.uses_level1 || level2.uses_gpu);
  for (const std::string& name : fitted.features) level2.slots.push_back(table.Slot(name));
  level2.table = table.Pruned(level2.slots);
  level2.labels = Labels(fitted);
  level2.labels_apart = std::none_of(
      level2.labels.begin(), level2.labels.end(), [&](const std::string& label) {
        return std::find(level1_.labels_.begin(), level1_.labels_.end(), label) !=
               level1_.labels_.end();
      });
  for (bool memory_bound : {false, true}) {
    level2.band[memory_bound] = BandFor(fitted, target, spread[memory_bound]);
  }
  return level2;
}

absl::StatusOr<Level1Plan::CallPrice> Level1Plan::PriceCall(
    const PreparedWorkload::Operation& prepared, const EffectiveRates& rates, const Bands* bands,
    Notes& notes) const {
  const bool noting = bands != nullptr;
  const int c = static_cast<int>(prepared.op_class);
  if (c < 0 || c >= kOpClasses) {
    return absl::InvalidArgumentError(absl::StrCat("unknown operation class ", c));
  }
  const Class& level1 = classes_[c];
  CallPrice call;
  if (level1.model == nullptr) {
    // Classes without a level-1 model are rare: the record is rebuilt for them.
    call.ms = RooflineCallMs(prepared.Work(), rates);
    call.lo = call.hi = call.ms;
    if (noting && !notes.uncalibrated[c]) {
      notes.uncalibrated[c] = true;
      notes.uncalibrated_order.push_back(c);
    }
    return call;
  }
  const FittedModel& model = *level1.model;
  std::array<double, kOperationInputCount> inputs = prepared.inputs;
  SetNodeInputs(rates, prepared.precision, inputs);
  level1.table->Evaluate(inputs, absl::MakeSpan(notes.slots));
  if (absl::Status s = SelectFeatures(model.features, level1.slots, notes.slots, notes.values);
      !s.ok()) {
    return s;
  }
  if (noting) {
    const bool list = !notes.listed[c];
    notes.listed[c] = true;
    for (size_t j = 0; j < model.features.size(); ++j) {
      const int label = level1.label_ids[j];
      if (list && !notes.label_used[label]) {
        notes.label_used[label] = true;
        notes.used_order.push_back(label);
      }
      bool& extrapolated = notes.extrapolated[level1.first_flag + j];
      if (!extrapolated && OutsideTrainingRange(model, j, notes.values[j])) {
        extrapolated = true;
        if (!notes.label_extrapolated[label]) {
          notes.label_extrapolated[label] = true;
          notes.extrapolated_order.push_back(label);
        }
      }
    }
  }
  ASSIGN_OR_RETURN(double y, Evaluate(model, notes.values));
  // An intercept can push a tiny call below zero; it cannot take less than no time.
  call.ms = std::max(0.0, y);
  if (noting) {
    // The node's rates are in `inputs` already (SetNodeInputs).
    const double compute_s = inputs[kFlopsInput] / inputs[kFlopsPerSecondInput];
    const double memory_s = inputs[kBytesInput] / inputs[kMemoryBytesPerSecondInput];
    const BandFactors& band = (*bands)[c][compute_s >= memory_s ? 0 : 1][prepared.regime];
    call.lo = call.ms * band.lo;
    call.hi = call.ms * band.hi;
  }
  return call;
}

absl::StatusOr<double> Level1Plan::Sum(const PreparedWorkload& workload,
                                       const EffectiveRates& rates) const {
  return Sum(workload, rates, nullptr, nullptr, nullptr);
}

absl::StatusOr<std::vector<double>> Level1Plan::RecordTimes(const PreparedWorkload& workload,
                                                            const EffectiveRates& rates) const {
  std::vector<double> records;
  records.reserve(workload.descriptor().operations.size());
  RETURN_IF_ERROR(Sum(workload, rates, nullptr, nullptr, &records).status());
  return records;
}

absl::StatusOr<double> Level1Plan::Sum(const PreparedWorkload& workload,
                                       const EffectiveRates& rates, const Bands* bands,
                                       PlannedPrediction* prediction,
                                       std::vector<double>* records) const {
  if (prediction == nullptr) bands = nullptr;
  Notes notes;
  notes.extrapolated.assign(flags_, false);
  notes.label_used.assign(labels_.size(), false);
  notes.label_extrapolated.assign(labels_.size(), false);
  notes.slots.resize(CompiledOperationTable().size());
  const bool split = split_attention_ && !workload.split_.empty();
  const std::vector<PreparedWorkload::Operation>& operations =
      split ? workload.split_ : workload.whole_;
  // Each distinct call priced once: an operation the same as an earlier one
  // costs what that one cost (its notes are that one's too).
  absl::InlinedVector<CallPrice, 64> calls(operations.size());
  double total = 0, record_ms = 0;
  for (size_t i = 0; i < operations.size(); ++i) {
    const PreparedWorkload::Operation& op = operations[i];
    if (op.same_as >= 0) {
      calls[i] = calls[op.same_as];
    } else {
      ASSIGN_OR_RETURN(CallPrice call, PriceCall(op, rates, bands, notes));
      calls[i] = call;
    }
    const CallPrice& call = calls[i];
    if (prediction != nullptr) {
      const int c = static_cast<int>(op.op_class);
      notes.breakdown_ms[c] += op.count * call.ms;
      notes.priced[c] = true;
      prediction->numbers.lo_ms += op.count * call.lo;
      prediction->numbers.hi_ms += op.count * call.hi;
    }
    // A record's parts add up before the record joins the total: the sum's
    // rounding, and so fitted models, stay as they were when records were
    // priced one by one.
    record_ms += op.count * call.ms;
    if (op.ends_record) {
      total += record_ms;
      if (records != nullptr) records->push_back(record_ms);
      record_ms = 0;
    }
  }
  if (prediction != nullptr) {
    for (int c : by_key_) {
      if (notes.priced[c]) {
        prediction->breakdown.emplace_back(&classes_[c].key, notes.breakdown_ms[c]);
      }
    }
    for (int label : notes.used_order) prediction->features_used.push_back(&labels_[label]);
    for (int label : notes.extrapolated_order) {
      prediction->extrapolated.push_back(&labels_[label]);
    }
    for (int c : notes.uncalibrated_order) {
      prediction->uncalibrated_classes.push_back(&classes_[c].key);
    }
  }
  return total;
}

absl::StatusOr<double> PricingPlan::ApplyLevel2(const Level2& level2,
                                                const WorkloadInputArray& inputs,
                                                PlannedPrediction& prediction,
                                                double& host_ms) const {
  const bool with_level1 = level2.uses_level1 || level2.uses_gpu;
  Scratch slots(level2.table->size());
  const size_t input_count = kWorkloadInputCount + (with_level1 ? kLevel1InputCount : 0);
  level2.table->Evaluate(absl::MakeConstSpan(inputs.data(), input_count), absl::MakeSpan(slots));
  const FittedModel& model = *level2.model;
  FeatureValues values;
  if (absl::Status s = SelectFeatures(model.features, level2.slots, slots, values); !s.ok()) {
    return s;
  }
  const size_t used_from = level2.labels_apart ? prediction.features_used.size() : 0;
  const size_t extrapolated_from = level2.labels_apart ? prediction.extrapolated.size() : 0;
  for (size_t j = 0; j < model.features.size(); ++j) {
    AddOnce(level2.labels[j], prediction.features_used, used_from);
    if (OutsideTrainingRange(model, j, values[j])) {
      AddOnce(level2.labels[j], prediction.extrapolated, extrapolated_from);
    }
  }
  host_ms = internal::HostTermsMs(model, values);
  return Evaluate(model, values);
}

absl::StatusOr<Prediction> PricingPlan::Predict(const models::WorkloadDescriptor& descriptor,
                                                models::Loop loop) const {
  return Predict(PreparedWorkload(descriptor), loop);
}

absl::StatusOr<Prediction> PricingPlan::Predict(const PreparedWorkload& workload,
                                                models::Loop loop) const {
  PlannedPrediction planned;
  RETURN_IF_ERROR(PredictPlanned(workload, &planned, loop));
  return planned.ToPrediction();
}

void PricingPlan::ScaleBreakdown(double level1_ms, double host_ms,
                                 PlannedPrediction& planned) const {
  Prediction& prediction = planned.numbers;
  internal::SetBreakdownScale(level1_ms, host_ms, prediction);
  for (auto& [op_class, ms] : planned.breakdown) ms *= prediction.breakdown_scale;
  if (prediction.host_ms > 0) {
    const std::string& host =
        level1_.classes_[static_cast<int>(models::OpClass::kHostOverhead)].key;
    auto entry = std::lower_bound(
        planned.breakdown.begin(), planned.breakdown.end(), host,
        [](const std::pair<const std::string*, double>& e, const std::string& key) {
          return *e.first < key;
        });
    if (entry == planned.breakdown.end() || *entry->first != host) {
      entry = planned.breakdown.emplace(entry, &host, 0.0);
    }
    entry->second += prediction.host_ms;
  }
}

absl::StatusOr<PlannedPrediction> PricingPlan::PredictPlanned(
    const models::WorkloadDescriptor& descriptor, models::Loop loop) const {
  return PredictPlanned(PreparedWorkload(descriptor), loop);
}

absl::StatusOr<PlannedPrediction> PricingPlan::PredictPlanned(const PreparedWorkload& workload,
                                                              models::Loop loop) const {
  PlannedPrediction planned;
  RETURN_IF_ERROR(PredictPlanned(workload, &planned, loop));
  return planned;
}

absl::Status PricingPlan::PriceStep(const PreparedWorkload& workload, PlannedPrediction& planned,
                                    double& level1_ms, double& host_ms) const {
  const models::WorkloadDescriptor& descriptor = workload.descriptor();
  Prediction& prediction = planned.numbers;
  const bool operation = descriptor.spec.kind == models::WorkloadKind::kOperation;
  // The family's own level-2 model where it has one, else the global one.
  const Level2* level2 = nullptr;
  const int phase = static_cast<int>(descriptor.spec.phase);
  if (!operation && (phase == 0 || phase == 1)) {
    const Phase& models = phases_[phase];
    if (models.global.has_value()) level2 = &*models.global;
    auto family = models.by_family.find(descriptor.spec.family);
    if (family != models.by_family.end()) level2 = &family->second;
  }
  const bool have_level2 = level2 != nullptr;
  RETURN_IF_ERROR(internal::CheckCanPrice(model_, descriptor, have_level2));
  ASSIGN_OR_RETURN(level1_ms, level1_.Sum(workload, *rates_, &bands_, &planned, nullptr));
  prediction.level1_ms = level1_ms;
  // The operations' level-1 bands, before a level-2 band replaces them.
  const double level1_lo = prediction.lo_ms, level1_hi = prediction.hi_ms;
  bool use_level1 = !have_level2;
  double fallback_floor_ms = 0;  // the roofline a level-2 answer fell below
  host_ms = 0;
  if (have_level2) {
    WorkloadInputArray inputs = workload.InputValues(*rates_);
    inputs[kLevel1MsInput] = level1_ms;
    if (level2->uses_gpu) {
      // A second level-1 pass, for the family models that ask for it.
      ASSIGN_OR_RETURN(double gpu_ms, level1_.Sum(workload, launch_free_));
      inputs[kLevel1GpuMsInput] = gpu_ms;
    }
    ASSIGN_OR_RETURN(double y, ApplyLevel2(*level2, inputs, planned, host_ms));
    prediction.iteration_ms = y;
    prediction.method =
        internal::Level2Method(level2->uses_level1, level2->uses_gpu, level2->model->reduced);
    const int bound = inputs[kComputeMsInput] >= inputs[kMemoryMsInput] ? 0 : 1;
    // A family's model carries the global model's scatter on its rows as
    // the least its band shows (BandFor).
    prediction.lo_ms = y * level2->band[bound].lo;
    prediction.hi_ms = y * level2->band[bound].hi;
    // No step runs faster than its math and memory traffic at the node's
    // rates. A level-2 answer below that has extrapolated its correction
    // terms (e.g. host terms fitted on one host, applied to a slower one)
    // past their meaning: the level-1 sum answers instead, its band widened.
    if (!(y >= inputs[kRooflineMsInput])) {
      use_level1 = true;
      prediction.method = Method::kLevel1Fallback;
      fallback_floor_ms = inputs[kRooflineMsInput];
    }
  }
  if (use_level1) {
    internal::AnswerWithLevel1(level1_ms, level1_lo, level1_hi, fallback_floor_ms, operation,
                               prediction);
    host_ms = 0;
  }
  const int precision = static_cast<int>(descriptor.spec.precision);
  if (precision >= 0 && precision < models::kPrecisionCount) {
    prediction.distance = distances_[precision];
    internal::WidenBand(precision_spread_[precision], prediction);
  }
  if (!std::isfinite(prediction.iteration_ms) || !(prediction.iteration_ms > 0)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the model predicts ", prediction.iteration_ms, " ms for ", descriptor.spec.Key(),
        " on ", node_name_, ": outside what it can extrapolate to"));
  }
  // The model's own implementation's GPU work (the attention slow path),
  // whichever loop runs it.
  if (!operation) {
    const double factor =
        ImplementationGpuFactor(descriptor.implementation, descriptor.spec, FittedPythonLoopTerms());
    prediction.iteration_ms *= factor;
    prediction.lo_ms *= factor;
    prediction.hi_ms *= factor;
  }
  // The agent's runs of this GPU, family, phase and precision correct the
  // C++ step they timed, before a Python loop is composed on it.
  if (!operation && (phase == 0 || phase == 1) && !phases_[phase].measured.empty()) {
    auto measured = phases_[phase].measured.find(MeasuredGroupKey(
        descriptor.spec.family, models::PrecisionName(CalibrationPrecision(descriptor))));
    if (measured != phases_[phase].measured.end()) {
      internal::ApplyCalibration(*measured->second.calibration, descriptor.inner_modules, host_ms,
                                 prediction);
      planned.features_used.push_back(&measured->second.label);
    }
  }
  if (!operation && !runs_.empty()) {
    models::WorkloadSpec spec = descriptor.spec;
    spec.precision = CalibrationPrecision(descriptor);
    auto run = runs_.find(spec.Key());
    if (run != runs_.end()) {
      internal::ApplyCalibration(*run->second.calibration, descriptor.inner_modules, host_ms,
                                 prediction);
      planned.features_used.push_back(&run->second.label);
    }
  }
  return absl::OkStatus();
}

bool PricingPlan::PricesStrictFromFp32(const models::WorkloadDescriptor& descriptor) const {
  const int phase = static_cast<int>(descriptor.spec.phase);
  if (descriptor.spec.kind != models::WorkloadKind::kModel || (phase != 0 && phase != 1) ||
      CalibrationPrecision(descriptor) != models::Precision::kStrictFp32) {
    return false;
  }
  const bool measured_strict = phases_[phase].measured.contains(MeasuredGroupKey(
      descriptor.spec.family, models::PrecisionName(models::Precision::kStrictFp32)));
  return !measured_strict && !runs_.contains(descriptor.spec.Key());
}

void PricingPlan::AddStrictConvolutions(const models::WorkloadDescriptor& descriptor,
                                        PlannedPrediction& planned, double& level1_ms) const {
  const double strict_s_per_flop = 1 / rates_->FlopsPerSecond(models::Precision::kStrictFp32);
  const double tf32_s_per_flop = 1 / rates_->FlopsPerSecond(models::Precision::kTf32);
  const int conv_class = static_cast<int>(models::OpClass::kConv);
  double extra_ms = 0, extra_lo = 0, extra_hi = 0;
  for (const models::Operation& op : descriptor.operations) {
    if (op.op_class != models::OpClass::kConv || op.precision != models::Precision::kStrictFp32) {
      continue;
    }
    const double ms =
        std::max(0.0, 1e3 * op.count * op.flops * (strict_s_per_flop - tf32_s_per_flop));
    // No run measured this math: it carries level 1's band for a
    // compute-bound convolution on the node.
    const BandFactors& band = bands_[conv_class][0][RegimeIndex(LoadRegime(op))];
    extra_ms += ms;
    extra_lo += ms * band.lo;
    extra_hi += ms * band.hi;
  }
  Prediction& prediction = planned.numbers;
  prediction.iteration_ms += extra_ms;
  prediction.lo_ms += extra_lo;
  prediction.hi_ms += extra_hi;
  level1_ms += extra_ms;
  const std::string& conv = level1_.classes_[conv_class].key;
  for (auto& [op_class, ms] : planned.breakdown) {
    if (*op_class == conv) ms += extra_ms;
  }
}

absl::Status PricingPlan::PredictPlanned(const PreparedWorkload& workload, PlannedPrediction* out,
                                         models::Loop loop) const {
  const models::WorkloadDescriptor& descriptor = workload.descriptor();
  if (!rates_.ok()) return rates_.status();
  PlannedPrediction& planned = *out;
  planned.Clear();
  planned.numbers.rate_source = rates_->source;
  double level1_ms = 0;  // the operations' level-1 sum
  double host_ms = 0;    // what level 2's host terms add
  if (PricesStrictFromFp32(descriptor)) {
    const models::WorkloadDescriptor fp32 = Fp32Twin(descriptor);
    RETURN_IF_ERROR(PriceStep(PreparedWorkload(fp32), planned, level1_ms, host_ms));
    AddStrictConvolutions(descriptor, planned, level1_ms);
    // The answer reports what level 1 alone says of the workload as asked.
    ASSIGN_OR_RETURN(planned.numbers.level1_ms, level1_.Sum(workload, *rates_));
  } else {
    RETURN_IF_ERROR(PriceStep(workload, planned, level1_ms, host_ms));
  }
  Prediction& prediction = planned.numbers;
  const bool operation = descriptor.spec.kind == models::WorkloadKind::kOperation;
  const int phase = static_cast<int>(descriptor.spec.phase);
  if (!operation && loop == models::Loop::kPython) {
    prediction.loop = loop;
    prediction.python = ApplyPythonLoop(
        HostWorkOf(descriptor), descriptor.spec.phase, descriptor.implementation, python_cost_,
        FittedPythonLoopTerms(), prediction.iteration_ms, prediction.lo_ms, prediction.hi_ms);
    host_ms += prediction.python.added_ms;
  }
  // The user's measured runs of this GPU, family and phase correct the
  // answer (calibration.h).
  if (!operation && (phase == 0 || phase == 1) && !phases_[phase].calibrations.empty()) {
    auto calibrated = phases_[phase].calibrations.find(descriptor.spec.family);
    if (calibrated != phases_[phase].calibrations.end()) {
      internal::ApplyCalibration(*calibrated->second.calibration, descriptor.inner_modules, host_ms,
                                 prediction);
      planned.features_used.push_back(&calibrated->second.label);
    }
  }
  // The breakdown adds up to the answer: level 2's host terms as the host's
  // share, level-1 shares of the rest.
  ScaleBreakdown(level1_ms, host_ms, planned);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> PredictOperationTimes(
    const PredictorModel& model, const models::WorkloadDescriptor& descriptor,
    const models::Node& node) {
  ASSIGN_OR_RETURN(const EffectiveRates rates,
                   ResolveRates(WithProfileRates(node, model.profile_rates), model.efficiencies));
  return Level1Plan(model).RecordTimes(PreparedWorkload(descriptor), rates);
}

}  // namespace perfcast::predictor
