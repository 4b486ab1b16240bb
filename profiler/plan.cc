#include "profiler/plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/descriptor.h"
#include "nlohmann/json.hpp"
#include "profiler/architectures_plan.h"
#include "yaml-cpp/yaml.h"

namespace perfcast::profiler {
namespace {

using models::Phase;
using models::Precision;
using models::WorkloadKind;
using Json = nlohmann::json;

constexpr Precision kFp32 = Precision::kFp32;
constexpr Precision kTf32 = Precision::kTf32;
constexpr Precision kFp16 = Precision::kFp16Amp;
constexpr Precision kBf16 = Precision::kBf16Amp;
constexpr Precision kFp64 = Precision::kFp64;

// Operation micro-benchmarks run forward calls only, so they are
// "inference" workloads; an optimizer update is the training step itself.
Phase DefaultOpPhase(absl::string_view family) {
  return family == "optimizer" ? Phase::kTrain : Phase::kInference;
}

Grid OpGrid(std::string family, std::map<std::string, std::vector<int64_t>> params,
            std::vector<Precision> precisions, std::vector<int64_t> batch_sizes = {1}) {
  Grid grid;
  grid.kind = WorkloadKind::kOperation;
  grid.phases = {DefaultOpPhase(family)};
  grid.family = std::move(family);
  grid.params = std::move(params);
  grid.precisions = std::move(precisions);
  grid.batch_sizes = std::move(batch_sizes);
  return grid;
}

Grid ModelGrid(std::string family, std::map<std::string, std::vector<int64_t>> params,
               std::vector<int64_t> batch_sizes, std::vector<Precision> precisions,
               std::vector<Phase> phases = {Phase::kTrain, Phase::kInference}) {
  Grid grid;
  grid.kind = WorkloadKind::kModel;
  grid.family = std::move(family);
  grid.params = std::move(params);
  grid.batch_sizes = std::move(batch_sizes);
  grid.precisions = std::move(precisions);
  grid.phases = std::move(phases);
  return grid;
}

std::vector<int64_t> Powers(int64_t first, int64_t last, int64_t factor) {
  std::vector<int64_t> values;
  for (int64_t v = first; v <= last; v *= factor) values.push_back(v);
  return values;
}

// The full plan's model grids. The size knob of every model family (layers /
// blocks / inner modules) is swept widely enough that the largest sizes can
// be held out and predicted from the smaller ones; one width parameter gets
// two values.
std::vector<Grid> ModelGrids() {
  const std::vector<Precision> all4 = {kFp32, kTf32, kFp16, kBf16};
  const std::vector<int64_t> batches = {8, 16, 32, 64, 128, 256};
  const std::vector<int64_t> sizes = {1, 2, 3, 4, 6, 8};
  std::vector<Grid> grids = {
      ModelGrid("lstm", {{"layers", sizes}, {"hidden", {128, 512}}}, batches, all4),
      ModelGrid("cnn", {{"layers", sizes}, {"channels", {32, 128}}}, batches, all4),
      // Every ST-Conv block shortens the window by 2 (kernel_t - 1) steps.
      ModelGrid("stgcn", {{"blocks", sizes}, {"channels", {32, 64}}, {"seq_len", {36}}},
                batches, all4),
      ModelGrid("resnet", {{"blocks", sizes}, {"width", {16, 32}}}, batches, all4),
      ModelGrid("transformer", {{"layers", sizes}, {"hidden", {128, 256}}}, batches,
                all4),
      ModelGrid("dlrm", {{"top_layers", sizes}, {"emb_dim", {16, 64}}}, batches, all4),
      // Double precision for the recurrent and convolutional forecasters
      // only: it is rare in training and an order of magnitude slower.
      ModelGrid("lstm", {{"layers", {1, 2, 4}}, {"hidden", {128}}}, {16, 64}, {kFp64}),
      ModelGrid("cnn", {{"layers", {1, 2, 4}}, {"channels", {32}}}, {16, 64}, {kFp64}),
  };
  return grids;
}

// The full plan's operation grids. Phase train is an operation's forward
// plus its backward (the descriptors' convention), so both phases are swept.
std::vector<Grid> OpGrids() {
  const std::vector<Precision> all5 = {kFp32, kTf32, kFp16, kBf16, kFp64};
  const std::vector<Precision> all4 = {kFp32, kTf32, kFp16, kBf16};
  const std::vector<Phase> both = {Phase::kTrain, Phase::kInference};
  auto with_phases = [](Grid grid, std::vector<Phase> phases) {
    grid.phases = std::move(phases);
    return grid;
  };
  std::vector<Grid> grids;
  const std::vector<int64_t> dims = Powers(64, 8192, 2);
  grids.push_back(with_phases(
      OpGrid("gemm", {{"m", dims}, {"n", dims}, {"k", dims}, {"batch", {1}}}, all5), both));
  grids.push_back(with_phases(OpGrid("gemm",
                                     {{"m", {64, 256, 1024}},
                                      {"n", {64, 256, 1024}},
                                      {"k", {64, 256, 1024}},
                                      {"batch", {8, 32}}},
                                     all4),
                              both));
  // Square images of each size: height and width move together.
  for (int64_t hw : {7, 14, 28, 56, 112}) {
    grids.push_back(with_phases(OpGrid("conv2d",
                                       {{"channels_in", {16, 64, 128, 256}},
                                        {"channels_out", {16, 64, 128, 256}},
                                        {"height", {hw}},
                                        {"width", {hw}},
                                        {"kernel", {1, 3}},
                                        {"stride", {1, 2}}},
                                       all4, {16}),
                                both));
  }
  grids.push_back(with_phases(OpGrid("lstm_cell",
                                     {{"input", {64, 256, 1024}},
                                      {"hidden", {128, 256, 512, 1024}},
                                      {"seq_len", {16, 64}},
                                      {"layers", {1, 2}}},
                                     all4, {16, 64}),
                              both));
  grids.push_back(with_phases(OpGrid("attention",
                                     {{"heads", {4, 8, 16}},
                                      {"seq_len", {128, 256, 512, 1024, 2048}},
                                      {"head_dim", {32, 64, 128}}},
                                     all4, {4, 16}),
                              both));
  grids.push_back(
      with_phases(OpGrid("elementwise", {{"numel", Powers(1024, 1 << 28, 4)}}, all5), both));
  const std::vector<int64_t> rows = {256, 1024, 4096, 16384, 65536};
  const std::vector<int64_t> cols = {128, 256, 512, 768, 1024, 2048, 4096};
  grids.push_back(with_phases(OpGrid("layernorm", {{"rows", rows}, {"cols", cols}}, all4), both));
  grids.push_back(with_phases(OpGrid("softmax", {{"rows", rows}, {"cols", cols}}, all4), both));
  // Tables stay FP32 under every precision but FP64: one precision suffices.
  grids.push_back(with_phases(OpGrid("embedding",
                                     {{"rows", {1000, 10000, 100000, 1000000}},
                                      {"dim", {16, 32, 64, 128, 256}},
                                      {"lookups", Powers(4, 1024, 4)}},
                                     {kFp32}, {256}),
                              both));
  Grid optimizer = OpGrid("optimizer", {{"params", Powers(1000, 100000000, 10)}}, {kFp32});
  optimizer.optimizers = {"adam", "sgd"};
  grids.push_back(optimizer);
  grids.push_back(OpGrid("h2d", {{"bytes", Powers(1024, 1 << 30, 2)}, {"pinned", {0, 1}}},
                         {kFp32}));
  return grids;
}

RunPlan QuickPlan() {
  RunPlan plan;
  plan.name = "quick";
  // Both passes and every step of the method, at the smallest sizes.
  plan.timing = TimingPolicy{.warmup_iterations = 1,
                             .repeats = 2,
                             .min_iterations = 1,
                             .max_iterations = 5,
                             .target_repeat_ms = 10,
                             .passes = 2,
                             .warmup_tolerance = 0.1,
                             .max_warmup_blocks = 1,
                             .prefetch_batches = 2,
                             .op_repeats = 2,
                             .op_target_block_ms = 2,
                             .op_max_calls = 200};
  for (const char* family : {"lstm", "cnn", "stgcn", "resnet", "transformer", "dlrm"}) {
    plan.grids.push_back(ModelGrid(family, {}, {4}, {kFp32}));
  }
  // The architectures users train, at toy sizes (a Llama-style decoder).
  plan.grids.push_back(ModelGrid("decoder",
                                 {{"layers", {1}}, {"hidden", {32}}, {"heads", {4}},
                                  {"kv_heads", {2}}, {"ffn", {64}}, {"seq_len", {16}},
                                  {"vocab", {256}}, {"positions", {0}}, {"norm", {1}},
                                  {"mlp", {1}}, {"bias", {0}}, {"tied", {0}}},
                                 {2}, {kFp32}));
  plan.grids.push_back(ModelGrid("bert",
                                 {{"layers", {1}}, {"hidden", {32}}, {"heads", {2}},
                                  {"ffn", {64}}, {"seq_len", {16}}, {"vocab", {256}}},
                                 {2}, {kFp32}));
  plan.grids.push_back(ModelGrid("vit",
                                 {{"layers", {1}}, {"hidden", {32}}, {"heads", {2}},
                                  {"ffn", {64}}, {"patch", {8}}, {"image", {32}},
                                  {"classes", {10}}},
                                 {2}, {kFp32}));
  plan.grids.push_back(ModelGrid("resnet_imagenet",
                                 {{"depth", {18}}, {"image", {32}}, {"classes", {10}}}, {2},
                                 {kFp32}));
  plan.grids.push_back(OpGrid("gemm", {{"m", {64, 256}}, {"n", {64, 256}}, {"k", {64}}, {"batch", {1}}},
                              {kFp32}));
  plan.grids.push_back(OpGrid("conv2d",
                              {{"channels_in", {8}},
                               {"channels_out", {8, 16}},
                               {"height", {16}},
                               {"width", {16}},
                               {"kernel", {3}},
                               {"stride", {1}}},
                              {kFp32}, {2}));
  plan.grids.push_back(OpGrid(
      "lstm_cell", {{"input", {16}}, {"hidden", {32}}, {"seq_len", {8}}, {"layers", {1}}}, {kFp32},
      {4}));
  plan.grids.push_back(OpGrid("attention", {{"heads", {2}}, {"seq_len", {32}}, {"head_dim", {16}}},
                              {kFp32}, {2}));
  plan.grids.push_back(OpGrid(
      "sdpa", {{"heads", {2}}, {"seq_len", {32}}, {"head_dim", {16}}, {"causal", {1}}}, {kFp32},
      {2}));
  plan.grids.push_back(OpGrid("rmsnorm", {{"rows", {64}}, {"cols", {128}}}, {kFp32}));
  plan.grids.push_back(OpGrid("swiglu", {{"rows", {64}}, {"cols", {128}}}, {kFp32}));
  plan.grids.push_back(OpGrid("cross_entropy", {{"rows", {64}}, {"vocab", {1000}}}, {kFp32}));
  plan.grids.push_back(OpGrid("elementwise", {{"numel", {4096, 65536}}}, {kFp32}));
  plan.grids.push_back(OpGrid("layernorm", {{"rows", {64}}, {"cols", {128}}}, {kFp32}));
  plan.grids.push_back(OpGrid("softmax", {{"rows", {64}}, {"cols", {128}}}, {kFp32}));
  plan.grids.push_back(OpGrid("embedding", {{"rows", {1000}}, {"dim", {16}}, {"lookups", {256}}},
                              {kFp32}));
  Grid optimizer = OpGrid("optimizer", {{"params", {10000}}}, {kFp32});
  optimizer.optimizers = {"adam", "sgd"};
  plan.grids.push_back(optimizer);
  plan.grids.push_back(OpGrid("h2d", {{"bytes", {65536}}, {"pinned", {0, 1}}}, {kFp32}));
  return plan;
}

// The default plan: few configurations, each measured well (>= 5 timed
// blocks of >= 100 ms over two passes), within about 4.5 minutes on one H200.
// Every model family at sizes 1, 2, 4 and 8 (the largest can be held out),
// one width, batches 16/64/256; training in fp32 and bf16-amp, inference in
// fp32, and tf32 training at batch 64 for the matmul/convolution-heavy
// families. Operations: the shapes the proxies are made of, two precisions.
std::vector<Grid> DefaultModelGrids() {
  const std::vector<int64_t> sizes = {1, 2, 4, 8};
  const std::vector<int64_t> batches = {16, 64, 256};
  struct Family {
    const char* name;
    std::map<std::string, std::vector<int64_t>> params;  // sizes added below
    const char* size_param;
    bool tf32;
  };
  const Family families[] = {
      {"lstm", {{"hidden", {256}}}, "layers", false},
      {"cnn", {{"channels", {64}}}, "layers", true},
      {"stgcn", {{"channels", {64}}, {"seq_len", {36}}}, "blocks", false},
      {"resnet", {{"width", {32}}}, "blocks", true},
      {"transformer", {{"hidden", {256}}}, "layers", true},
      {"dlrm", {{"emb_dim", {64}}}, "top_layers", false},
  };
  std::vector<Grid> grids;
  for (const Family& family : families) {
    std::map<std::string, std::vector<int64_t>> params = family.params;
    params[family.size_param] = sizes;
    grids.push_back(ModelGrid(family.name, params, batches, {kFp32, kBf16}, {Phase::kTrain}));
    grids.push_back(ModelGrid(family.name, params, batches, {kFp32}, {Phase::kInference}));
    if (family.tf32) {
      grids.push_back(ModelGrid(family.name, params, {64}, {kTf32}, {Phase::kTrain}));
    }
  }
  return grids;
}

std::vector<Grid> DefaultOpGrids() {
  const std::vector<Precision> two = {kFp32, kBf16};
  const std::vector<Phase> both = {Phase::kTrain, Phase::kInference};
  auto with_phases = [](Grid grid, std::vector<Phase> phases) {
    grid.phases = std::move(phases);
    return grid;
  };
  std::vector<Grid> grids;
  grids.push_back(OpGrid("gemm",
                         {{"m", {256, 1024, 4096}},
                          {"n", {256, 1024, 4096}},
                          {"k", {256, 1024, 4096}},
                          {"batch", {1}}},
                         {kFp32, kTf32, kBf16}));
  grids.push_back(with_phases(
      OpGrid("gemm", {{"m", {256, 1024}}, {"n", {256, 1024}}, {"k", {256, 1024}}, {"batch", {8}}},
             two),
      both));
  for (int64_t hw : {14, 56}) {
    grids.push_back(OpGrid("conv2d",
                           {{"channels_in", {64, 256}},
                            {"channels_out", {64, 256}},
                            {"height", {hw}},
                            {"width", {hw}},
                            {"kernel", {1, 3}},
                            {"stride", {1}}},
                           two, {16}));
  }
  grids.push_back(with_phases(OpGrid("conv2d",
                                     {{"channels_in", {64, 256}},
                                      {"channels_out", {64, 256}},
                                      {"height", {28}},
                                      {"width", {28}},
                                      {"kernel", {3}},
                                      {"stride", {1}}},
                                     two, {16}),
                              {Phase::kTrain}));
  grids.push_back(with_phases(OpGrid("lstm_cell",
                                     {{"input", {256}},
                                      {"hidden", {256, 1024}},
                                      {"seq_len", {64}},
                                      {"layers", {1}}},
                                     two, {16, 64}),
                              both));
  grids.push_back(with_phases(
      OpGrid("attention", {{"heads", {8}}, {"seq_len", {256, 1024}}, {"head_dim", {64}}}, two,
             {4, 16}),
      both));
  grids.push_back(
      with_phases(OpGrid("elementwise", {{"numel", Powers(1 << 16, 1 << 28, 16)}}, two), both));
  for (const char* family : {"layernorm", "softmax"}) {
    grids.push_back(with_phases(
        OpGrid(family, {{"rows", {1024, 16384}}, {"cols", {512, 2048}}}, two), both));
  }
  grids.push_back(with_phases(
      OpGrid("embedding", {{"rows", {100000}}, {"dim", {64}}, {"lookups", {16, 256}}}, {kFp32},
             {256}),
      both));
  Grid optimizer = OpGrid("optimizer", {{"params", Powers(10000, 100000000, 100)}}, {kFp32});
  optimizer.optimizers = {"adam", "sgd"};
  grids.push_back(optimizer);
  grids.push_back(
      OpGrid("h2d", {{"bytes", Powers(1 << 16, 1 << 28, 16)}, {"pinned", {0, 1}}}, {kFp32}));
  return grids;
}

RunPlan DefaultPlan() {
  RunPlan plan;
  plan.name = "default";
  // A safety net: a slower machine keeps both passes of what it finished
  // and one pass of the rest.
  plan.max_minutes = 6;
  // Operations first: they are cheap, so a run cut short by its budget
  // still leaves a complete operation sweep.
  plan.grids = DefaultOpGrids();
  for (Grid& grid : DefaultModelGrids()) plan.grids.push_back(std::move(grid));
  return plan;
}

// Denser grids of every family and operation class (hours on one GPU).
RunPlan FullPlan() {
  RunPlan plan;
  plan.name = "full";
  plan.grids = OpGrids();
  for (Grid& grid : ModelGrids()) plan.grids.push_back(std::move(grid));
  return plan;
}

// ---- Plan documents (JSON; YAML is converted to the same JSON tree) ----

// A value for messages: scalars as JSON text (YAML scalars need not be
// UTF-8, which a plain dump() would throw on); containers by kind only, as
// dumping a deeply nested one recurses without bound.
std::string Dump(const Json& value) {
  if (value.is_array()) return "a list";
  if (value.is_object()) return "a mapping";
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

absl::Status FieldError(absl::string_view where, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("plan: ", where, ": ", message));
}

// Accepts a scalar or a non-empty list of scalars.
template <typename T, typename Convert>
absl::StatusOr<std::vector<T>> ListOf(const Json& value, absl::string_view where,
                                      Convert convert) {
  std::vector<T> out;
  // No copy of `value`: copying a deeply nested value recurses without bound.
  auto add = [&](const Json& item) -> absl::Status {
    absl::StatusOr<T> converted = convert(item);
    if (!converted.ok()) return FieldError(where, converted.status().message());
    out.push_back(*std::move(converted));
    return absl::OkStatus();
  };
  if (!value.is_array()) {
    if (absl::Status s = add(value); !s.ok()) return s;
    return out;
  }
  if (value.empty()) return FieldError(where, "empty list");
  for (const Json& item : value) {
    if (absl::Status s = add(item); !s.ok()) return s;
  }
  return out;
}

absl::StatusOr<int64_t> JsonInt(const Json& item) {
  if (item.is_number_integer()) return item.get<int64_t>();
  if (item.is_number_float()) {
    const double d = item.get<double>();
    // In range first: converting a larger double (or NaN) to int64 is undefined.
    if (d >= -0x1p63 && d < 0x1p63 && d == std::trunc(d)) return static_cast<int64_t>(d);
  }
  return absl::InvalidArgumentError(absl::StrCat("expected an integer, got ", Dump(item)));
}

absl::StatusOr<std::string> JsonString(const Json& item) {
  if (item.is_string()) return item.get<std::string>();
  return absl::InvalidArgumentError(absl::StrCat("expected a string, got ", Dump(item)));
}

// Adapts a parser of names (ParsePrecision, ParsePhase) to JSON items.
template <typename T>
auto NamedValue(absl::StatusOr<T> (*parse)(absl::string_view)) {
  return [parse](const Json& item) -> absl::StatusOr<T> {
    absl::StatusOr<std::string> text = JsonString(item);
    if (!text.ok()) return text.status();
    return parse(*text);
  };
}

absl::Status CheckKeys(const Json& object, absl::string_view where,
                       const std::set<std::string>& allowed) {
  if (!object.is_object()) return FieldError(where, "expected a mapping");
  for (const auto& [key, value] : object.items()) {
    if (!allowed.contains(key)) {
      return FieldError(where, absl::StrCat("unknown key '", key, "' (expected ",
                                            absl::StrJoin(allowed, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Grid> ParseGrid(const Json& node, absl::string_view where) {
  if (absl::Status s = CheckKeys(
          node, where, {"family", "kind", "params", "batch", "precision", "phase", "optimizer"});
      !s.ok()) {
    return s;
  }
  if (!node.contains("family")) return FieldError(where, "missing 'family'");
  absl::StatusOr<std::string> family = JsonString(node["family"]);
  if (!family.ok()) return FieldError(where, family.status().message());
  absl::StatusOr<models::FamilyInfo> info = models::FindFamily(*family);
  if (!info.ok()) return FieldError(where, absl::StrCat("unknown family '", *family, "'"));

  Grid grid;
  grid.family = *family;
  grid.kind = info->kind;
  if (node.contains("kind")) {
    absl::StatusOr<std::string> kind_name = JsonString(node["kind"]);
    if (!kind_name.ok()) return FieldError(where, kind_name.status().message());
    absl::StatusOr<WorkloadKind> kind = models::ParseWorkloadKind(*kind_name);
    if (!kind.ok()) return FieldError(where, kind.status().message());
    if (*kind != info->kind) {
      return FieldError(where, absl::StrCat("family '", *family, "' is not of kind ", *kind_name));
    }
  }
  if (grid.kind == WorkloadKind::kOperation) grid.phases = {DefaultOpPhase(grid.family)};
  if (node.contains("params")) {
    const Json& params = node["params"];
    if (!params.is_object()) return FieldError(where, "'params' must be a mapping");
    for (const auto& [name, values] : params.items()) {
      absl::StatusOr<std::vector<int64_t>> list =
          ListOf<int64_t>(values, absl::StrCat(where, ".params.", name), JsonInt);
      if (!list.ok()) return list.status();
      grid.params[name] = *std::move(list);
    }
  }
  if (node.contains("batch")) {
    absl::StatusOr<std::vector<int64_t>> list =
        ListOf<int64_t>(node["batch"], absl::StrCat(where, ".batch"), JsonInt);
    if (!list.ok()) return list.status();
    grid.batch_sizes = *std::move(list);
  }
  if (node.contains("precision")) {
    auto list = ListOf<Precision>(node["precision"], absl::StrCat(where, ".precision"),
                                  NamedValue<Precision>(models::ParsePrecision));
    if (!list.ok()) return list.status();
    grid.precisions = *std::move(list);
  }
  if (node.contains("phase")) {
    auto list = ListOf<Phase>(node["phase"], absl::StrCat(where, ".phase"),
                              NamedValue<Phase>(models::ParsePhase));
    if (!list.ok()) return list.status();
    grid.phases = *std::move(list);
  }
  if (node.contains("optimizer")) {
    auto list = ListOf<std::string>(node["optimizer"], absl::StrCat(where, ".optimizer"),
                                    [](const Json& item) -> absl::StatusOr<std::string> {
                                      absl::StatusOr<std::string> s = JsonString(item);
                                      if (!s.ok()) return s.status();
                                      const std::string lower = absl::AsciiStrToLower(*s);
                                      if (lower != "adam" && lower != "adamw" && lower != "sgd") {
                                        return absl::InvalidArgumentError(
                                            absl::StrCat("unknown optimizer '", *s,
                                                         "' (expected adam, adamw or sgd)"));
                                      }
                                      return lower;
                                    });
    if (!list.ok()) return list.status();
    grid.optimizers = *std::move(list);
  }
  return grid;
}

absl::Status ParseTiming(const Json& node, TimingPolicy& timing) {
  struct IntField {
    const char* name;
    int* field;
    int min;
  };
  struct RealField {
    const char* name;
    double* field;
  };
  const IntField ints[] = {{"warmup", &timing.warmup_iterations, 0},
                           {"repeats", &timing.repeats, 1},
                           {"min_iterations", &timing.min_iterations, 1},
                           {"max_iterations", &timing.max_iterations, 1},
                           {"passes", &timing.passes, 1},
                           {"max_warmup_blocks", &timing.max_warmup_blocks, 1},
                           {"prefetch", &timing.prefetch_batches, 1},
                           {"op_repeats", &timing.op_repeats, 1},
                           {"op_max_calls", &timing.op_max_calls, 1}};
  const RealField reals[] = {{"target_repeat_ms", &timing.target_repeat_ms},
                             {"op_target_block_ms", &timing.op_target_block_ms},
                             {"warmup_tolerance", &timing.warmup_tolerance}};
  std::set<std::string> allowed;
  for (const IntField& f : ints) allowed.insert(f.name);
  for (const RealField& f : reals) allowed.insert(f.name);
  if (absl::Status s = CheckKeys(node, "timing", allowed); !s.ok()) return s;
  for (const IntField& f : ints) {
    if (!node.contains(f.name)) continue;
    absl::StatusOr<int64_t> v = JsonInt(node[f.name]);
    if (!v.ok() || *v < f.min || *v > 1000000) {
      return FieldError(absl::StrCat("timing.", f.name),
                        absl::StrCat("expected an integer >= ", f.min));
    }
    *f.field = static_cast<int>(*v);
  }
  for (const RealField& f : reals) {
    if (!node.contains(f.name)) continue;
    if (!node[f.name].is_number() || !(node[f.name].get<double>() > 0) ||
        !std::isfinite(node[f.name].get<double>())) {
      return FieldError(absl::StrCat("timing.", f.name), "expected a positive, finite number");
    }
    *f.field = node[f.name].get<double>();
  }
  if (timing.min_iterations > timing.max_iterations) {
    return FieldError("timing", "min_iterations exceeds max_iterations");
  }
  if (timing.passes > 8) return FieldError("timing.passes", "expected at most 8 passes");
  if (timing.prefetch_batches > 1024) {
    return FieldError("timing.prefetch", "expected at most 1024 batches");
  }
  return absl::OkStatus();
}

absl::StatusOr<RunPlan> PlanFromJson(const Json& root) {
  if (absl::Status s = CheckKeys(root, "top level", {"name", "max_minutes", "timing", "grids"});
      !s.ok()) {
    return s;
  }
  RunPlan plan;
  plan.name = "custom";
  if (root.contains("name")) {
    absl::StatusOr<std::string> name = JsonString(root["name"]);
    if (!name.ok()) return FieldError("name", name.status().message());
    plan.name = *name;
  }
  if (root.contains("max_minutes")) {
    // Written so that YAML's .nan fails too.
    if (!root["max_minutes"].is_number() || !(root["max_minutes"].get<double>() >= 0) ||
        !std::isfinite(root["max_minutes"].get<double>())) {
      return FieldError("max_minutes", "expected a non-negative, finite number");
    }
    plan.max_minutes = root["max_minutes"].get<double>();
  }
  if (root.contains("timing")) {
    if (absl::Status s = ParseTiming(root["timing"], plan.timing); !s.ok()) return s;
  }
  if (!root.contains("grids") || !root["grids"].is_array() || root["grids"].empty()) {
    return FieldError("grids", "expected a non-empty list of grids");
  }
  for (size_t i = 0; i < root["grids"].size(); ++i) {
    absl::StatusOr<Grid> grid = ParseGrid(root["grids"][i], absl::StrCat("grids[", i, "]"));
    if (!grid.ok()) return grid.status();
    plan.grids.push_back(*std::move(grid));
  }
  return plan;
}

// A plan has at most a few thousand values nested four deep; YAML aliases
// can make a small document expand exponentially, or refer to themselves
// (an endless recursion), so the conversion stops beyond these.
constexpr int64_t kMaxPlanValues = 100'000;
constexpr int kMaxPlanDepth = 32;

// YAML scalars carry no type; integers, then reals, then strings. Counts
// converted nodes in `budget`; throws YAML::Exception for keys that are not
// scalars (as.<std::string>), when the budget runs out and beyond
// kMaxPlanDepth levels.
Json YamlToJson(const YAML::Node& node, int64_t& budget, int depth = 0) {
  if (--budget < 0) {
    throw YAML::Exception(YAML::Mark::null_mark(),
                          absl::StrCat("more than ", kMaxPlanValues, " values"));
  }
  if (depth > kMaxPlanDepth) {
    throw YAML::Exception(YAML::Mark::null_mark(),
                          absl::StrCat("nested deeper than ", kMaxPlanDepth, " levels"));
  }
  switch (node.Type()) {
    case YAML::NodeType::Sequence: {
      Json list = Json::array();
      for (const YAML::Node& item : node) list.push_back(YamlToJson(item, budget, depth + 1));
      return list;
    }
    case YAML::NodeType::Map: {
      Json object = Json::object();
      for (const auto& entry : node) {
        object[entry.first.as<std::string>()] = YamlToJson(entry.second, budget, depth + 1);
      }
      return object;
    }
    case YAML::NodeType::Scalar: {
      const std::string text = node.Scalar();
      int64_t integer = 0;
      if (YAML::convert<int64_t>::decode(node, integer)) return integer;
      double real = 0;
      if (YAML::convert<double>::decode(node, real)) return real;
      return text;
    }
    default:
      return nullptr;
  }
}

std::string GridName(const Grid& grid, size_t index) {
  return absl::StrCat("grid ", index, " (", grid.family, ")");
}

}  // namespace

int RepeatsInPass(int total, int passes, int pass) {
  passes = std::max(1, passes);
  const int share = total / passes + (pass < total % passes ? 1 : 0);
  return std::max(1, share);
}

int64_t Grid::Size() const {
  // Saturates instead of overflowing: a hostile plan file may list many values.
  int64_t size = 1;
  auto times = [&size](size_t n) {
    if (__builtin_mul_overflow(size, static_cast<int64_t>(n), &size)) {
      size = std::numeric_limits<int64_t>::max();
    }
  };
  times(batch_sizes.size());
  times(precisions.size());
  times(phases.size());
  const bool uses_optimizer =
      family == "optimizer" ||
      (kind == WorkloadKind::kModel &&
       std::find(phases.begin(), phases.end(), Phase::kTrain) != phases.end());
  if (uses_optimizer) times(optimizers.size());
  for (const auto& [name, values] : params) times(values.size());
  return size;
}

const std::vector<std::string>& BuiltinPlanNames() {
  static const std::vector<std::string> kNames = {"quick", "default", "full", "architectures"};
  return kNames;
}

absl::StatusOr<RunPlan> BuiltinPlan(absl::string_view name) {
  if (name == "quick") return QuickPlan();
  if (name == "default") return DefaultPlan();
  if (name == "full") return FullPlan();
  if (name == "architectures") return ArchitecturesPlan();
  return absl::NotFoundError(absl::StrCat("unknown plan '", name, "' (expected ",
                                          absl::StrJoin(BuiltinPlanNames(), ", "),
                                          " or a plan file)"));
}

absl::StatusOr<RunPlan> ParsePlanJson(absl::string_view text) {
  Json root = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return absl::InvalidArgumentError("plan: not valid JSON");
  return PlanFromJson(root);
}

absl::StatusOr<RunPlan> ParsePlanYaml(absl::string_view text) {
  Json root;
  try {
    int64_t budget = kMaxPlanValues;
    root = YamlToJson(YAML::Load(std::string(text)), budget);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("plan: not valid YAML: ", e.what()));
  }
  return PlanFromJson(root);
}

absl::StatusOr<RunPlan> LoadPlanFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read plan file ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("error reading plan file ", path));
  const bool yaml = absl::EndsWith(path, ".yaml") || absl::EndsWith(path, ".yml");
  absl::StatusOr<RunPlan> plan = yaml ? ParsePlanYaml(buffer.str()) : ParsePlanJson(buffer.str());
  if (!plan.ok()) {
    return absl::Status(plan.status().code(), absl::StrCat(path, ": ", plan.status().message()));
  }
  return plan;
}

absl::StatusOr<std::vector<models::WorkloadSpec>> ExpandPlan(const RunPlan& plan) {
  std::vector<models::WorkloadSpec> specs;
  std::set<std::string> seen;
  for (size_t g = 0; g < plan.grids.size(); ++g) {
    const Grid& grid = plan.grids[g];
    // Cartesian product over the parameters by an odometer of indices.
    std::vector<std::pair<std::string, const std::vector<int64_t>*>> axes;
    for (const auto& [name, values] : grid.params) {
      if (values.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(GridName(grid, g), ": parameter ", name, " has no values"));
      }
      axes.emplace_back(name, &values);
    }
    std::vector<size_t> odometer(axes.size(), 0);
    while (true) {
      std::map<std::string, int64_t> params;
      for (size_t a = 0; a < axes.size(); ++a) params[axes[a].first] = (*axes[a].second)[odometer[a]];
      for (int64_t batch : grid.batch_sizes) {
        for (Precision precision : grid.precisions) {
          for (Phase phase : grid.phases) {
            const bool uses_optimizer =
                grid.family == "optimizer" ||
                (grid.kind == WorkloadKind::kModel && phase == Phase::kTrain);
            const std::vector<std::string> optimizers =
                uses_optimizer ? grid.optimizers : std::vector<std::string>{"adam"};
            for (const std::string& optimizer : optimizers) {
              models::WorkloadSpec spec;
              spec.kind = grid.kind;
              spec.family = grid.family;
              spec.params = params;
              spec.batch_size = batch;
              spec.precision = precision;
              spec.phase = phase;
              spec.optimizer = optimizer;
              absl::StatusOr<models::WorkloadSpec> normal = models::NormalizeSpec(spec);
              if (!normal.ok()) {
                return absl::InvalidArgumentError(absl::StrCat(
                    GridName(grid, g), ": ", spec.Key(), ": ", normal.status().message()));
              }
              if (seen.insert(normal->Key()).second) specs.push_back(*std::move(normal));
            }
          }
        }
      }
      size_t a = 0;
      for (; a < axes.size(); ++a) {
        if (++odometer[a] < axes[a].second->size()) break;
        odometer[a] = 0;
      }
      if (a == axes.size()) break;
    }
  }
  return specs;
}

}  // namespace perfcast::profiler
