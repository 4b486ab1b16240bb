// The candidate features, declared as data.
//
// A feature table is a list of definitions evaluated in order; each defines a
// named value from inputs (quantities the dataset code computes from a
// descriptor and a node's effective rates) or from earlier definitions.
// Candidates are what forward selection may choose. They are time-like on
// purpose (work ÷ rate, in milliseconds): a model whose few coefficients are
// efficiencies extrapolates to unseen GPUs, one over raw hardware columns
// does not (see DESIGN.md, "Prediction").
//
// Thread-safe: the tables are constants.
#ifndef PERFCAST_PREDICTOR_FEATURES_H_
#define PERFCAST_PREDICTOR_FEATURES_H_

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "models/descriptor.h"
#include "predictor/rates.h"

namespace perfcast::predictor {

enum class FeatureOp {
  kInput,      // value of input `a`
  kRatio,      // factor · a / b
  kProduct,    // factor · a · b
  kInverse,    // factor / a
  kMax,        // max(a, b)
  kMin,        // min(a, b)
  kCeilRatio,  // ceil(a / b)
};

struct FeatureDef {
  absl::string_view name;
  FeatureOp op;
  absl::string_view a;
  absl::string_view b;  // unused by kInput and kInverse
  double factor;        // for kRatio, kProduct, kInverse
  bool candidate;       // may forward selection choose it?
  absl::string_view doc;
};

// Level 1: one call of one operation on one node. Inputs: flops, bytes,
// tile_flops and tile_bytes (a GEMM's padded output tiles and tiled traffic;
// flops and bytes for other classes), narrow_flops (a tensor-core GEMM's
// padded FLOPs times the load width its misaligned rows lose; 0 otherwise),
// launches, work_items, sm_count,
// flops_per_s (of the op's precision), memory_bytes_per_s, launch_latency_s,
// h2d_bytes_per_s, dispatch_op_s (1 / the host's dispatch rate) and
// autograd_calls (1 for a training benchmark's forward+backward, timed as one
// autograd::grad call; 0 for a model's operations, whose step enters autograd
// once: autograd_ms prices the entry, so that a model's operations are not
// charged it).
absl::Span<const FeatureDef> OperationFeatureTable();

// Level 2: one iteration of a workload on one node. Inputs: the level-1 sum
// level1_ms (absent without level-1 models), per-iteration sums over the
// operations of compute_ms, memory_ms, roofline_ms, launch_ms, and
// input_bytes, launch_latency_s, h2d_bytes_per_s, kernel_launches,
// dispatch_ops_per_s (the host's framework rate: dispatch_ms binds host-bound
// steps), inner_modules, batch, seq_len (0 where the family has none), amp
// (1 for fp16/bf16 amp).
absl::Span<const FeatureDef> WorkloadFeatureTable();

// Evaluates `table` on `inputs`; returns the candidates' values in table
// order (names from CandidateNames). A definition whose inputs are missing
// yields no value and its candidate is left out, so `names` must be passed
// to say which candidates the caller expects: InvalidArgument if one of
// those cannot be evaluated or is not finite.
using FeatureInputs = absl::flat_hash_map<std::string, double>;
absl::StatusOr<std::vector<double>> EvaluateFeatures(absl::Span<const FeatureDef> table,
                                                     const FeatureInputs& inputs,
                                                     absl::Span<const std::string> names);

// `table` compiled for one fixed list of input names: each definition reads
// and writes numbered slots instead of a map of names, so that evaluating it
// is arithmetic alone (prediction evaluates a level-1 model on every
// operation of every query). Evaluate followed by SelectFeatures gives what
// EvaluateFeatures gives on a map holding those inputs, bit for bit.
class CompiledFeatureTable {
 public:
  CompiledFeatureTable(absl::Span<const FeatureDef> table,
                       absl::Span<const absl::string_view> inputs);

  // The slot that holds `name` after Evaluate; -1 when the inputs cannot
  // give it.
  int Slot(absl::string_view name) const;
  // Slots Evaluate fills.
  int size() const { return size_; }
  // Evaluates every definition that the inputs allow. `inputs`: values in
  // the order of the names given at construction; `slots`: size() long.
  void Evaluate(absl::Span<const double> inputs, absl::Span<double> slots) const;

  // This table cut down to the steps that the values in `wanted` (slots;
  // -1 entries ignored) depend on: Evaluate then fills those slots exactly
  // as the whole table does, in fewer steps, and leaves the others
  // unspecified. Slot numbers are kept. A model uses a few of the features:
  // pricing evaluates only what they need.
  CompiledFeatureTable Pruned(absl::Span<const int> wanted) const;

 private:
  struct Step {
    FeatureOp op;
    int a;
    int b;
    double factor;
    int out;
  };
  std::vector<Step> steps_;
  absl::flat_hash_map<absl::string_view, int> slot_of_;
  int size_ = 0;
};

// The values of `names` from slots a CompiledFeatureTable filled, their slots
// (CompiledFeatureTable::Slot) in `name_slots`. Errors as EvaluateFeatures:
// InvalidArgument for a name that cannot be computed or is not finite.
absl::Status SelectFeatures(absl::Span<const std::string> names, absl::Span<const int> name_slots,
                            absl::Span<const double> slots, std::vector<double>& out);
// A model's feature values on the stack (PricingPlan's, per query).
using FeatureValues = absl::InlinedVector<double, 32>;
absl::Status SelectFeatures(absl::Span<const std::string> names, absl::Span<const int> name_slots,
                            absl::Span<const double> slots, FeatureValues& out);

// Whether level-1 candidate `name` is offered to `op_class`'s selection. A
// GEMM runs in output tiles: its padded math, tiled traffic and waves of
// tiles replace the untiled compute, memory and roofline times; the tile
// features are a GEMM's alone.
bool IsCandidateFor(models::OpClass op_class, absl::string_view name);

// The level-1 features `op_class`'s selection starts from, whatever their
// cross-validated score. A GEMM prices both its tiled math and its tiled
// traffic: which of the two the training GPUs' rows favour depends on which
// collections were measured, while an unseen GPU can be bound by either.
absl::Span<const absl::string_view> RequiredFeatures(models::OpClass op_class);

// Whether `op` is a GEMM with an operand row (m, n or k elements) that is
// not a multiple of 16 bytes: its loads cannot all be 16 bytes wide. Such
// calls take slower kernels whatever the precision (a tensor-core GEMM
// loses most: narrow_load_ms), and their level-1 errors are wider.
bool NarrowLoads(const models::Operation& op);

// The error regime of a level-1 row or prediction: all rows (kAny), or a
// GEMM's: narrow loads (NarrowLoads), else batched (batch > 1: one kernel
// over many matrices, cuBLAS's batched kernels), else wide (one matrix with
// wide loads; every other class too).
enum class LoadWidth { kAny, kWide, kNarrow, kBatched };
LoadWidth LoadRegime(const models::Operation& op);
// 0 (wide or any), 1 (narrow) or 2 (batched): an index for per-regime arrays.
inline int RegimeIndex(LoadWidth regime) {
  return regime == LoadWidth::kNarrow ? 1 : regime == LoadWidth::kBatched ? 2 : 0;
}

// The candidate names of `table` whose inputs are all in `available`.
std::vector<std::string> CandidateNames(absl::Span<const FeatureDef> table,
                                        absl::Span<const std::string> available);

// Inputs of the level-1 table for one call of `op` with `rates`.
FeatureInputs OperationInputs(const models::Operation& op, const EffectiveRates& rates);

// The same inputs as values, in the order of OperationInputNames().
inline constexpr int kOperationInputCount = 14;
absl::Span<const absl::string_view> OperationInputNames();
std::array<double, kOperationInputCount> OperationInputValues(const models::Operation& op,
                                                              const EffectiveRates& rates);
// OperationInputValues in two halves. The operation's own (its work, tiling
// and autograd entries) needs a walk of its shape and a GEMM's tiling, the
// node's is a copy of rates: pricing works the first out once per workload
// (PreparedWorkload) and adds the second per node. OperationWorkInputs
// leaves the node's slots 0; SetNodeInputs fills exactly those.
std::array<double, kOperationInputCount> OperationWorkInputs(const models::Operation& op);
// Slots of those values that pricing reads back.
inline constexpr int kFlopsInput = 0, kBytesInput = 1, kLaunchesInput = 5,
                     kFlopsPerSecondInput = 8, kMemoryBytesPerSecondInput = 9;
void SetNodeInputs(const EffectiveRates& rates, models::Precision precision,
                   std::array<double, kOperationInputCount>& values);
// The level-1 table compiled for OperationInputNames().
const CompiledFeatureTable& CompiledOperationTable();

// Roofline time of one call, in ms, uncalibrated: max(compute, memory) plus
// launches × latency. Level 2 prices operations of a class that has no
// level-1 model with it.
double RooflineCallMs(const models::Operation& op, const EffectiveRates& rates);

// Inputs of the level-2 table for one iteration (level1_ms and
// level1_gpu_ms excluded: the predictor adds them).
FeatureInputs WorkloadInputs(const models::WorkloadDescriptor& descriptor,
                             const EffectiveRates& rates);

// The same inputs as values, in the order of WorkloadInputNames(), followed
// by slots for the level-1 sums that the predictor fills: level1_ms and
// level1_gpu_ms (the sum on LaunchFree rates).
inline constexpr int kWorkloadInputCount = 13;
inline constexpr int kLevel1InputCount = 2;
inline constexpr int kComputeMsInput = 0, kMemoryMsInput = 1, kRooflineMsInput = 2,
                     kLevel1MsInput = kWorkloadInputCount,
                     kLevel1GpuMsInput = kWorkloadInputCount + 1;
using WorkloadInputArray = std::array<double, kWorkloadInputCount + kLevel1InputCount>;
absl::Span<const absl::string_view> WorkloadInputNames();
WorkloadInputArray WorkloadInputValues(const models::WorkloadDescriptor& descriptor,
                                       const EffectiveRates& rates);
// WorkloadInputValues in two steps, for a workload priced on many nodes:
// the inputs of the workload alone (its launches, input bytes, modules,
// batch, sequence and precision), the node's slots 0; then the node's rates
// and the operations' times on them (WorkloadTimes, which a caller adds up
// from its own record of the operations, in their order).
WorkloadInputArray WorkloadOwnInputs(const models::WorkloadDescriptor& descriptor);
// The operations' seconds of compute, of memory and of the larger of the
// two on a node, as WorkloadInputValues sums them.
struct WorkloadTimes {
  double compute_s = 0, memory_s = 0, roofline_s = 0;
  // `count` calls of `flops` and `bytes` at `precision`.
  void Add(const EffectiveRates& rates, double count, double flops, double bytes,
           models::Precision precision) {
    const double c = count * flops / rates.FlopsPerSecond(precision);
    const double m = count * bytes / rates.memory_bytes_per_s;
    compute_s += c;
    memory_s += m;
    roofline_s += std::max(c, m);
  }
};
void SetWorkloadRateInputs(const EffectiveRates& rates, const WorkloadTimes& times,
                           WorkloadInputArray& values);
// The level-2 table compiled for WorkloadInputNames(), with the level-1 sums
// as the last inputs or without them.
const CompiledFeatureTable& CompiledWorkloadTable(bool with_level1);

// `rates` without the host's cost of a launch (launch latency 0): level 1
// priced on them charges a model's operations for their work alone. Inside a
// big model's step the host queues kernels ahead of a busy GPU stream and
// the launch costs the operation benchmarks measured hide behind the
// kernels; level1_gpu_ms beside level1_ms lets a family's own level 2 learn
// how much of them its steps pay (DESIGN.md, "Prediction").
EffectiveRates LaunchFree(const EffectiveRates& rates);

// Whether level-2 candidate `name` is offered to the global (all-family)
// models as well as to a family's own. level1_gpu_ms is a family's alone:
// the share of launch cost a busy stream hides is a property of a family's
// kernels (none in a host-bound proxy, most in a 1B-parameter decoder),
// which one coefficient over every family cannot hold.
bool IsGlobalLevel2Candidate(absl::string_view name);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_FEATURES_H_
