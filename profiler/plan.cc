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
#include "base/status_macros.h"
#include "models/descriptor.h"
#include "nlohmann/json.hpp"
#include "profiler/architectures_plan.h"
#include "profiler/builtin_plans.h"
#include "yaml-cpp/yaml.h"

namespace perfcast::profiler {
namespace {

using models::Phase;
using models::Precision;
using models::WorkloadKind;
using Json = nlohmann::json;

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
    RETURN_IF_ERROR(add(value));
    return out;
  }
  if (value.empty()) return FieldError(where, "empty list");
  for (const Json& item : value) {
    RETURN_IF_ERROR(add(item));
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
    ASSIGN_OR_RETURN(std::string text, JsonString(item));
    return parse(text);
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
      ASSIGN_OR_RETURN(std::vector<int64_t> list,
                       ListOf<int64_t>(values, absl::StrCat(where, ".params.", name), JsonInt));
      grid.params[name] = std::move(list);
    }
  }
  if (node.contains("batch")) {
    ASSIGN_OR_RETURN(std::vector<int64_t> list,
                     ListOf<int64_t>(node["batch"], absl::StrCat(where, ".batch"), JsonInt));
    grid.batch_sizes = std::move(list);
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
                                      ASSIGN_OR_RETURN(std::string s, JsonString(item));
                                      const std::string lower = absl::AsciiStrToLower(s);
                                      if (lower != "adam" && lower != "adamw" && lower != "sgd") {
                                        return absl::InvalidArgumentError(
                                            absl::StrCat("unknown optimizer '", s,
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
                           {"max_repeats", &timing.max_repeats, 1},
                           {"min_iterations", &timing.min_iterations, 1},
                           {"max_iterations", &timing.max_iterations, 1},
                           {"passes", &timing.passes, 1},
                           {"max_warmup_blocks", &timing.max_warmup_blocks, 1},
                           {"prefetch", &timing.prefetch_batches, 1},
                           {"op_repeats", &timing.op_repeats, 1},
                           {"op_max_calls", &timing.op_max_calls, 1}};
  const RealField reals[] = {{"target_repeat_ms", &timing.target_repeat_ms},
                             {"op_target_block_ms", &timing.op_target_block_ms},
                             {"target_median_error", &timing.target_median_error},
                             {"warmup_tolerance", &timing.warmup_tolerance}};
  std::set<std::string> allowed;
  for (const IntField& f : ints) allowed.insert(f.name);
  for (const RealField& f : reals) allowed.insert(f.name);
  RETURN_IF_ERROR(CheckKeys(node, "timing", allowed));
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
    RETURN_IF_ERROR(ParseTiming(root["timing"], plan.timing));
  }
  if (!root.contains("grids") || !root["grids"].is_array() || root["grids"].empty()) {
    return FieldError("grids", "expected a non-empty list of grids");
  }
  for (size_t i = 0; i < root["grids"].size(); ++i) {
    ASSIGN_OR_RETURN(Grid grid, ParseGrid(root["grids"][i], absl::StrCat("grids[", i, "]")));
    plan.grids.push_back(std::move(grid));
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

Phase DefaultOpPhase(absl::string_view family) {
  return family == "optimizer" ? Phase::kTrain : Phase::kInference;
}

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
