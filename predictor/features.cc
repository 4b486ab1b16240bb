#include "predictor/features.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "models/iteration_builder.h"

namespace perfcast::predictor {
namespace {

using Op = FeatureOp;

// Seconds to the milliseconds every target is in.
constexpr double kMs = 1e3;

constexpr FeatureDef kOperationFeatures[] = {
    {"flops", Op::kInput, "flops", "", 1, false, "floating-point operations per call"},
    {"bytes", Op::kInput, "bytes", "", 1, false, "device-memory bytes per call"},
    {"launches", Op::kInput, "launches", "", 1, false, "kernel launches per call"},
    {"work_items", Op::kInput, "work_items", "", 1, false, "independent tiles of work"},
    {"sm_count", Op::kInput, "sm_count", "", 1, false, "streaming multiprocessors"},
    {"flops_per_s", Op::kInput, "flops_per_s", "", 1, false, "effective rate, op precision"},
    {"memory_bytes_per_s", Op::kInput, "memory_bytes_per_s", "", 1, false, "effective bandwidth"},
    {"launch_latency_s", Op::kInput, "launch_latency_s", "", 1, false, "launch latency"},
    {"h2d_bytes_per_s", Op::kInput, "h2d_bytes_per_s", "", 1, false, "host->device bandwidth"},
    {"dispatch_op_s", Op::kInput, "dispatch_op_s", "", 1, false,
     "the host's time to dispatch one op: 1 / its framework dispatch rate (0 where unknown)"},
    {"autograd_calls", Op::kInput, "autograd_calls", "", 1, false,
     "entries into the autograd engine per call (1 for a benchmark's forward+backward)"},
    {"tile_flops", Op::kInput, "tile_flops", "", 1, false,
     "FLOPs including the padding of partial output tiles (GEMMs; else flops)"},
    {"tile_bytes", Op::kInput, "tile_bytes", "", 1, false,
     "device-memory traffic of a GEMM whose tiles share operands in L2 (else bytes)"},
    {"compute_ms", Op::kRatio, "flops", "flops_per_s", kMs, true,
     "math time at the effective peak rate"},
    {"tile_compute_ms", Op::kRatio, "tile_flops", "flops_per_s", kMs, true,
     "math time of the padded output tiles"},
    {"tile_memory_ms", Op::kRatio, "tile_bytes", "memory_bytes_per_s", kMs, true,
     "memory time of the tiled traffic: binds where bandwidth is low for the math rate"},
    {"narrow_flops", Op::kInput, "narrow_flops", "", 1, false,
     "padded FLOPs × the tensor-core load width a misaligned GEMM loses (else 0)"},
    {"narrow_load_ms", Op::kRatio, "narrow_flops", "flops_per_s", kMs, true,
     "math time lost to narrow loads: a tensor-core GEMM whose rows are not 16-byte "
     "aligned (GPT-2's vocabulary of 50257) runs several times slower"},
    {"memory_ms", Op::kRatio, "bytes", "memory_bytes_per_s", kMs, true,
     "memory time at the effective bandwidth"},
    {"roofline_ms", Op::kMax, "compute_ms", "memory_ms", 1, true,
     "roofline time: the binding one of math and memory"},
    {"overlap_ms", Op::kMin, "compute_ms", "memory_ms", 1, true,
     "the non-binding one: what imperfect overlap adds"},
    {"waves", Op::kCeilRatio, "work_items", "sm_count", 1, false, "waves of tiles over the SMs"},
    {"wave_fill", Op::kRatio, "waves", "work_items", 1, false, "waves per tile"},
    {"wave_slots", Op::kProduct, "wave_fill", "sm_count", 1, false,
     "SM slots per tile: >= 1, the tail effect of the last wave"},
    {"wave_compute_ms", Op::kProduct, "compute_ms", "wave_slots", 1, true,
     "math time with the last wave's idle SMs counted"},
    {"launch_ms", Op::kProduct, "launches", "launch_latency_s", kMs, true,
     "launch overhead"},
    {"wave_launch_ms", Op::kProduct, "waves", "launch_latency_s", kMs, true,
     "a per-wave scheduling cost of about one launch latency"},
    {"h2d_ms", Op::kRatio, "bytes", "h2d_bytes_per_s", kMs, true,
     "bytes over the host link (host->device copies)"},
    {"autograd_ms", Op::kProduct, "autograd_calls", "dispatch_op_s", kMs, true,
     "host work of entering the autograd engine, in units of the host's op dispatch time: "
     "a benchmark pays it per call, a model's operations never (once per step)"},
};

constexpr FeatureDef kWorkloadFeatures[] = {
    {"level1_ms", Op::kInput, "level1_ms", "", 1, true,
     "sum of level-1 predictions over the operations of an iteration"},
    {"level1_gpu_ms", Op::kInput, "level1_gpu_ms", "", 1, true,
     "the same sum without the host's per-launch costs (LaunchFree rates): the kernels' work"},
    {"compute_ms", Op::kInput, "compute_ms", "", 1, true, "Σ operations' math time"},
    {"memory_ms", Op::kInput, "memory_ms", "", 1, true, "Σ operations' memory time"},
    {"roofline_ms", Op::kInput, "roofline_ms", "", 1, true, "Σ operations' roofline time"},
    {"launch_ms", Op::kInput, "launch_ms", "", 1, true, "kernel launches × latency"},
    {"input_bytes", Op::kInput, "input_bytes", "", 1, false, "host->device bytes"},
    {"h2d_bytes_per_s", Op::kInput, "h2d_bytes_per_s", "", 1, false, "host->device bandwidth"},
    {"launch_latency_s", Op::kInput, "launch_latency_s", "", 1, false, "launch latency"},
    {"kernel_launches", Op::kInput, "kernel_launches", "", 1, false, "ops per iteration"},
    {"dispatch_ops_per_s", Op::kInput, "dispatch_ops_per_s", "", 1, false,
     "the host's framework dispatch rate"},
    {"h2d_ms", Op::kRatio, "input_bytes", "h2d_bytes_per_s", kMs, true,
     "input batch over the host link"},
    {"dispatch_ms", Op::kRatio, "kernel_launches", "dispatch_ops_per_s", kMs, true,
     "host time to dispatch the iteration's ops: binds a host-bound step"},
    {"inner_modules", Op::kInput, "inner_modules", "", 1, true, "layers / blocks"},
    {"batch", Op::kInput, "batch", "", 1, true, "batch size"},
    {"seq_len", Op::kInput, "seq_len", "", 1, true, "sequence length, 0 if none"},
    {"amp", Op::kInput, "amp", "", 1, true, "1 for fp16/bf16 mixed precision"},
    {"module_latency_ms", Op::kProduct, "inner_modules", "launch_latency_s", kMs, true,
     "per-module host work, scaled by the host's launch latency"},
};

// A derived feature from its inputs: what FeatureDef::op means. One place for
// both the by-name evaluation and the compiled table.
double Combine(Op op, double factor, double a, double b) {
  switch (op) {
    case Op::kInput: return a;
    case Op::kRatio: return factor * a / b;
    case Op::kProduct: return factor * a * b;
    case Op::kInverse: return factor / a;
    case Op::kMax: return std::max(a, b);
    case Op::kMin: return std::min(a, b);
    case Op::kCeilRatio: return std::ceil(a / b);
  }
  return 0;
}

bool Evaluate(const FeatureDef& def, const FeatureInputs& values, double& out) {
  auto get = [&](absl::string_view name, double& v) {
    auto it = values.find(name);
    if (it == values.end()) return false;
    v = it->second;
    return true;
  };
  double a = 0, b = 0;
  if (!get(def.a, a)) return false;
  if (def.op != Op::kInput && def.op != Op::kInverse && !get(def.b, b)) return false;
  out = Combine(def.op, def.factor, a, b);
  return true;
}

// A cuBLAS-style output tile edge for a matrix side: 128, or the side rounded
// up to a power of two (at least 16) where the side is smaller.
double TileEdge(double side) {
  double edge = 16;
  while (edge < side && edge < 128) edge *= 2;
  return edge;
}

struct GemmTiling {
  double padding = 1;         // padded / useful output elements
  double bytes_per_flop = 0;  // tiled traffic per FLOP
  // Tensor-core kernels load operands 16 bytes at a time; a row of m, n or k
  // elements that is not a multiple of 16 bytes forces loads of its
  // alignment (8, 4 or 2 bytes). Measured on an H200 in bf16: n = 50257 ran
  // at 1/6 and n = 30522 at 1/3 of the aligned rate, fp32 (no tensor cores)
  // at full rate. 16 / alignment − 1: 0 when aligned, 7 at 2-byte alignment.
  double narrow = 0;
};

constexpr double kWideLoadBytes = 16;

// Bytes of alignment of a row of `elements` elements of `bytes` each, up to
// kWideLoadBytes.
double RowAlignment(double elements, double bytes) {
  const int64_t row = static_cast<int64_t>(elements * bytes);
  double alignment = 1;
  while (alignment < kWideLoadBytes && row % static_cast<int64_t>(2 * alignment) == 0) {
    alignment *= 2;
  }
  return alignment;
}

bool UsesTensorCores(models::Precision precision) {
  return precision == models::Precision::kTf32 || models::IsMixedPrecision(precision);
}

// Output tiles of Tm × Tn each read a Tm × k panel of A and a k × Tn panel of
// B: A is read once per tile column and B once per tile row, unless a cache
// holds them, and C is written once.
// A GEMM's sides as its shape gives them (0 where absent), read in one walk
// over the shape instead of a lookup per side: pricing reads them for every
// GEMM record of every query.
struct GemmSides {
  double m = 0, n = 0, k = 0, batch = 0;
};
GemmSides Sides(const models::Operation& op) {
  GemmSides sides;
  for (const auto& [name, value] : op.shape) {
    if (name.size() == 1) {
      if (name[0] == 'm') sides.m = static_cast<double>(value);
      if (name[0] == 'n') sides.n = static_cast<double>(value);
      if (name[0] == 'k') sides.k = static_cast<double>(value);
    } else if (name == "batch") {
      sides.batch = static_cast<double>(value);
    }
  }
  return sides;
}

GemmTiling Tiling(const models::Operation& op) {
  GemmTiling t;
  const GemmSides sides = Sides(op);
  const double m = sides.m, n = sides.n, k = sides.k;
  const double batch = std::max(1.0, sides.batch);
  if (!(m > 0 && n > 0 && k > 0)) return t;
  const double tm = TileEdge(m), tn = TileEdge(n);
  const double row_tiles = std::ceil(m / tm), column_tiles = std::ceil(n / tn);
  t.padding = row_tiles * tm * column_tiles * tn / (m * n);
  // The tiles that run together share their operand panels in L2: device
  // memory sees each operand about once. Counting a re-read per tile row and
  // column made the traffic term stand in for math time that a power-capped
  // board's spec rate misses (docs/transfer-validation.md, item 5).
  const double traffic = models::ElementBytes(op.precision) * batch * (m * k + k * n + m * n);
  t.bytes_per_flop = traffic / (2 * m * n * k * batch);
  if (UsesTensorCores(op.precision)) {
    const double bytes = models::ElementBytes(op.precision);
    const double alignment =
        std::min({RowAlignment(m, bytes), RowAlignment(n, bytes), RowAlignment(k, bytes)});
    t.narrow = kWideLoadBytes / alignment - 1;
  }
  return t;
}

bool NarrowLoads(const models::Operation& op, const GemmSides& sides) {
  const double bytes = models::ElementBytes(op.precision);
  for (double elements : {sides.m, sides.n, sides.k}) {
    if (elements > 0 && RowAlignment(elements, bytes) < kWideLoadBytes) return true;
  }
  return false;
}

}  // namespace

bool NarrowLoads(const models::Operation& op) {
  return op.op_class == models::OpClass::kGemm && NarrowLoads(op, Sides(op));
}

LoadWidth LoadRegime(const models::Operation& op) {
  if (op.op_class != models::OpClass::kGemm) return LoadWidth::kWide;
  const GemmSides sides = Sides(op);
  if (NarrowLoads(op, sides)) return LoadWidth::kNarrow;
  return sides.batch > 1 ? LoadWidth::kBatched : LoadWidth::kWide;
}

absl::Span<const FeatureDef> OperationFeatureTable() { return kOperationFeatures; }
absl::Span<const FeatureDef> WorkloadFeatureTable() { return kWorkloadFeatures; }

absl::StatusOr<std::vector<double>> EvaluateFeatures(absl::Span<const FeatureDef> table,
                                                     const FeatureInputs& inputs,
                                                     absl::Span<const std::string> names) {
  FeatureInputs values = inputs;
  for (const FeatureDef& def : table) {
    double v = 0;
    if (Evaluate(def, values, v)) values[def.name] = v;
  }
  std::vector<double> out;
  out.reserve(names.size());
  for (const std::string& name : names) {
    auto it = values.find(name);
    if (it == values.end()) {
      return absl::InvalidArgumentError(absl::StrCat("feature '", name, "' cannot be computed"));
    }
    if (!std::isfinite(it->second)) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature '", name, "' is not finite (", it->second, ")"));
    }
    out.push_back(it->second);
  }
  return out;
}

bool IsCandidateFor(models::OpClass op_class, absl::string_view name) {
  constexpr absl::string_view kUntiled[] = {"compute_ms", "memory_ms", "roofline_ms",
                                            "overlap_ms"};
  constexpr absl::string_view kTiled[] = {"tile_compute_ms", "tile_memory_ms",
                                          "narrow_load_ms"};
  const bool gemm = op_class == models::OpClass::kGemm;
  for (absl::string_view excluded : gemm ? absl::MakeConstSpan(kUntiled)
                                         : absl::MakeConstSpan(kTiled)) {
    if (name == excluded) return false;
  }
  return true;
}

absl::Span<const absl::string_view> RequiredFeatures(models::OpClass op_class) {
  static constexpr absl::string_view kGemm[] = {"tile_compute_ms", "tile_memory_ms"};
  if (op_class == models::OpClass::kGemm) return kGemm;
  return {};
}

std::vector<std::string> CandidateNames(absl::Span<const FeatureDef> table,
                                        absl::Span<const std::string> available) {
  absl::flat_hash_map<std::string, bool> known;
  for (const std::string& name : available) known[name] = true;
  std::vector<std::string> names;
  for (const FeatureDef& def : table) {
    const bool needs_b = def.op != Op::kInput && def.op != Op::kInverse;
    if (!known.contains(def.a) || (needs_b && !known.contains(def.b))) continue;
    known[def.name] = true;
    if (def.candidate) names.emplace_back(def.name);
  }
  return names;
}

CompiledFeatureTable::CompiledFeatureTable(absl::Span<const FeatureDef> table,
                                           absl::Span<const absl::string_view> inputs) {
  for (absl::string_view name : inputs) slot_of_.try_emplace(name, size_++);
  // As EvaluateFeatures: a definition whose operands exist (inputs or earlier
  // definitions) writes its name, over an input or definition of that name.
  for (const FeatureDef& def : table) {
    const bool needs_b = def.op != Op::kInput && def.op != Op::kInverse;
    const int a = Slot(def.a);
    const int b = needs_b ? Slot(def.b) : 0;
    if (a < 0 || b < 0) continue;
    auto [out, added] = slot_of_.try_emplace(def.name, size_);
    if (added) ++size_;
    steps_.push_back({def.op, a, b, def.factor, out->second});
  }
}

int CompiledFeatureTable::Slot(absl::string_view name) const {
  auto it = slot_of_.find(name);
  return it == slot_of_.end() ? -1 : it->second;
}

void CompiledFeatureTable::Evaluate(absl::Span<const double> inputs,
                                    absl::Span<double> slots) const {
  std::copy(inputs.begin(), inputs.end(), slots.begin());
  for (const Step& step : steps_) {
    const double a = slots[step.a], b = slots[step.b];
    double& out = slots[step.out];
    out = Combine(step.op, step.factor, a, b);
  }
}

CompiledFeatureTable CompiledFeatureTable::Pruned(absl::Span<const int> wanted) const {
  CompiledFeatureTable pruned = *this;
  // Backwards, keeping a step when a later kept step (or the caller) reads
  // what it writes; its own operands are then read.
  std::vector<bool> live(size_, false);
  for (int slot : wanted) {
    if (slot >= 0) live[slot] = true;
  }
  std::vector<Step> kept;
  for (auto step = steps_.rbegin(); step != steps_.rend(); ++step) {
    if (!live[step->out]) continue;
    kept.push_back(*step);
    live[step->out] = false;
    live[step->a] = true;
    if (step->op != Op::kInput && step->op != Op::kInverse) live[step->b] = true;
  }
  pruned.steps_.assign(kept.rbegin(), kept.rend());
  return pruned;
}

namespace {

template <typename Values>
absl::Status SelectInto(absl::Span<const std::string> names, absl::Span<const int> name_slots,
                        absl::Span<const double> slots, Values& out) {
  out.clear();
  for (size_t j = 0; j < names.size(); ++j) {
    if (name_slots[j] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature '", names[j], "' cannot be computed"));
    }
    const double value = slots[name_slots[j]];
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature '", names[j], "' is not finite (", value, ")"));
    }
    out.push_back(value);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SelectFeatures(absl::Span<const std::string> names, absl::Span<const int> name_slots,
                            absl::Span<const double> slots, std::vector<double>& out) {
  return SelectInto(names, name_slots, slots, out);
}

absl::Status SelectFeatures(absl::Span<const std::string> names, absl::Span<const int> name_slots,
                            absl::Span<const double> slots, FeatureValues& out) {
  return SelectInto(names, name_slots, slots, out);
}

absl::Span<const absl::string_view> OperationInputNames() {
  static constexpr absl::string_view kNames[kOperationInputCount] = {
      "flops",       "bytes",        "tile_flops",       "tile_bytes",
      "narrow_flops", "launches",    "work_items",       "sm_count",
      "flops_per_s", "memory_bytes_per_s", "launch_latency_s", "h2d_bytes_per_s",
      "dispatch_op_s", "autograd_calls"};
  return kNames;
}

const CompiledFeatureTable& CompiledOperationTable() {
  static const auto* const kTable =
      new CompiledFeatureTable(OperationFeatureTable(), OperationInputNames());
  return *kTable;
}

FeatureInputs OperationInputs(const models::Operation& op, const EffectiveRates& rates) {
  const std::array<double, kOperationInputCount> values = OperationInputValues(op, rates);
  absl::Span<const absl::string_view> names = OperationInputNames();
  FeatureInputs inputs;
  inputs.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) inputs.emplace(names[i], values[i]);
  return inputs;
}

std::array<double, kOperationInputCount> OperationWorkInputs(const models::Operation& op) {
  double tile_flops = op.flops, tile_bytes = op.bytes, narrow_flops = 0;
  if (op.op_class == models::OpClass::kGemm) {
    // From the forward shape; a training record's dA and dB have the same
    // work and near enough the same tiling.
    const GemmTiling tiling = Tiling(op);
    if (tiling.bytes_per_flop > 0) {
      tile_flops = op.flops * tiling.padding;
      tile_bytes = std::max(op.bytes, op.flops * tiling.bytes_per_flop);
      narrow_flops = tile_flops * tiling.narrow;
    }
  }
  // In the order of OperationInputNames(); the node's slots (sm_count ..
  // dispatch_op_s) are SetNodeInputs's.
  return {op.flops,
          op.bytes,
          tile_flops,
          tile_bytes,
          narrow_flops,
          op.launches,
          std::max(1.0, op.work_items),
          0,
          0,
          0,
          0,
          0,
          0,
          op.autograd_calls};
}

void SetNodeInputs(const EffectiveRates& rates, models::Precision precision,
                   std::array<double, kOperationInputCount>& values) {
  // Slots 7-12 of OperationInputNames(): sm_count, flops_per_s,
  // memory_bytes_per_s, launch_latency_s, h2d_bytes_per_s, dispatch_op_s.
  values[7] = static_cast<double>(rates.sm_count);
  values[kFlopsPerSecondInput] = rates.FlopsPerSecond(precision);
  values[kMemoryBytesPerSecondInput] = rates.memory_bytes_per_s;
  values[10] = rates.launch_latency_s;
  values[11] = rates.h2d_bytes_per_s;
  values[12] = rates.dispatch_ops_per_s > 0 ? 1 / rates.dispatch_ops_per_s : 0;
}

std::array<double, kOperationInputCount> OperationInputValues(const models::Operation& op,
                                                              const EffectiveRates& rates) {
  std::array<double, kOperationInputCount> values = OperationWorkInputs(op);
  SetNodeInputs(rates, op.precision, values);
  return values;
}

double RooflineCallMs(const models::Operation& op, const EffectiveRates& rates) {
  const double compute = op.flops / rates.FlopsPerSecond(op.precision);
  const double memory = op.op_class == models::OpClass::kHostToDevice
                            ? op.bytes / rates.h2d_bytes_per_s
                            : op.bytes / rates.memory_bytes_per_s;
  return kMs * (std::max(compute, memory) + op.launches * rates.launch_latency_s);
}

FeatureInputs WorkloadInputs(const models::WorkloadDescriptor& descriptor,
                             const EffectiveRates& rates) {
  const WorkloadInputArray values = WorkloadInputValues(descriptor, rates);
  absl::Span<const absl::string_view> names = WorkloadInputNames();
  FeatureInputs inputs;
  inputs.reserve(kWorkloadInputCount);
  for (int i = 0; i < kWorkloadInputCount; ++i) inputs.emplace(names[i], values[i]);
  return inputs;
}

absl::Span<const absl::string_view> WorkloadInputNames() {
  static constexpr absl::string_view kNames[kWorkloadInputCount + kLevel1InputCount] = {
      "compute_ms",         "memory_ms",     "roofline_ms", "launch_ms",
      "input_bytes",        "h2d_bytes_per_s", "launch_latency_s", "kernel_launches",
      "dispatch_ops_per_s", "inner_modules", "batch",       "seq_len",
      "amp",                "level1_ms",     "level1_gpu_ms"};
  return absl::MakeConstSpan(kNames, kWorkloadInputCount);
}

const CompiledFeatureTable& CompiledWorkloadTable(bool with_level1) {
  static const auto* const kTables = [] {
    absl::Span<const absl::string_view> names = WorkloadInputNames();
    const absl::Span<const absl::string_view> with(names.data(),
                                                   kWorkloadInputCount + kLevel1InputCount);
    return new std::array<CompiledFeatureTable, 2>{
        CompiledFeatureTable(WorkloadFeatureTable(), names),
        CompiledFeatureTable(WorkloadFeatureTable(), with)};
  }();
  return (*kTables)[with_level1 ? 1 : 0];
}

WorkloadInputArray WorkloadOwnInputs(const models::WorkloadDescriptor& descriptor) {
  double launches = 0;
  for (const models::Operation& op : descriptor.operations) launches += op.count * op.launches;
  if (descriptor.kernel_launches > 0) launches = descriptor.kernel_launches;
  const auto& params = descriptor.spec.params;
  const auto seq = params.find("seq_len");
  const models::Precision precision = descriptor.spec.precision;
  // In the order of WorkloadInputNames(); the level-1 sums last, for the
  // predictor.
  return {0.0,
          0.0,
          0.0,
          0.0,
          descriptor.input_bytes,
          0.0,
          0.0,
          launches,
          0.0,
          static_cast<double>(descriptor.inner_modules),
          static_cast<double>(descriptor.spec.batch_size),
          seq == params.end() ? 0.0 : static_cast<double>(seq->second),
          models::IsMixedPrecision(precision) ? 1.0 : 0.0,
          0.0,
          0.0};
}

void SetWorkloadRateInputs(const EffectiveRates& rates, const WorkloadTimes& times,
                           WorkloadInputArray& values) {
  // The node's slots of WorkloadInputNames() besides the three times.
  constexpr int kLaunchMs = 3, kH2dBytesPerS = 5, kLaunchLatencyS = 6, kKernelLaunches = 7,
                kDispatchOpsPerS = 8;
  values[kComputeMsInput] = kMs * times.compute_s;
  values[kMemoryMsInput] = kMs * times.memory_s;
  values[kRooflineMsInput] = kMs * times.roofline_s;
  values[kLaunchMs] = kMs * values[kKernelLaunches] * rates.launch_latency_s;
  values[kH2dBytesPerS] = rates.h2d_bytes_per_s;
  values[kLaunchLatencyS] = rates.launch_latency_s;
  values[kDispatchOpsPerS] = rates.dispatch_ops_per_s;
}

WorkloadInputArray WorkloadInputValues(const models::WorkloadDescriptor& descriptor,
                                       const EffectiveRates& rates) {
  WorkloadInputArray values = WorkloadOwnInputs(descriptor);
  WorkloadTimes times;
  for (const models::Operation& op : descriptor.operations) {
    times.Add(rates, op.count, op.flops, op.bytes, op.precision);
  }
  SetWorkloadRateInputs(rates, times, values);
  return values;
}

EffectiveRates LaunchFree(const EffectiveRates& rates) {
  EffectiveRates out = rates;
  out.launch_latency_s = 0;
  return out;
}

bool IsGlobalLevel2Candidate(absl::string_view name) { return name != "level1_gpu_ms"; }

}  // namespace perfcast::predictor
