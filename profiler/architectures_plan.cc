#include "profiler/architectures_plan.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace perfcast::profiler {
namespace {

using models::Phase;
using models::Precision;
using models::WorkloadKind;
using Params = std::map<std::string, std::vector<int64_t>>;

constexpr Precision kFp32 = Precision::kFp32;
constexpr Precision kBf16 = Precision::kBf16Amp;
constexpr Precision kTf32 = Precision::kTf32;
constexpr Precision kStrictFp32 = Precision::kStrictFp32;
const std::vector<Phase> kBoth = {Phase::kTrain, Phase::kInference};

Grid Model(std::string family, Params params, std::vector<int64_t> batches,
           std::vector<Precision> precisions, std::vector<Phase> phases = kBoth) {
  Grid grid;
  grid.kind = WorkloadKind::kModel;
  grid.family = std::move(family);
  grid.params = std::move(params);
  grid.batch_sizes = std::move(batches);
  grid.precisions = std::move(precisions);
  grid.phases = std::move(phases);
  return grid;
}

// Operations run forward ("inference") or forward + backward ("train").
Grid Op(std::string family, Params params, std::vector<Precision> precisions,
        std::vector<Phase> phases = kBoth, std::vector<int64_t> batches = {1}) {
  Grid grid = Model(std::move(family), std::move(params), std::move(batches),
                    std::move(precisions), std::move(phases));
  grid.kind = WorkloadKind::kOperation;
  return grid;
}

// GPT-2 small and medium as `decoder` parameters (the family's defaults are
// GPT-2 small's vocabulary, positions and style).
const Params kGpt2Small = {{"layers", {12}}, {"hidden", {768}}, {"heads", {12}},
                           {"ffn", {3072}},  {"seq_len", {1024}}};
const Params kGpt2Medium = {{"layers", {24}}, {"hidden", {1024}}, {"heads", {16}},
                            {"ffn", {4096}},  {"seq_len", {1024}}};
// A 1.1B-parameter Llama-style decoder: TinyLlama-1.1B's shape.
const Params kLlama1b = {{"layers", {22}},    {"hidden", {2048}}, {"heads", {32}},
                         {"kv_heads", {4}},   {"ffn", {5632}},    {"seq_len", {2048}},
                         {"vocab", {32000}},  {"positions", {0}}, {"norm", {1}},
                         {"mlp", {1}},        {"bias", {0}},      {"tied", {0}}};
const Params kBertLarge = {{"layers", {24}}, {"hidden", {1024}}, {"heads", {16}},
                           {"ffn", {4096}}};

std::vector<Grid> ModelGrids() {
  // fp32 steps of the larger models take seconds per timed block: fp32 is
  // measured where a step stays under ~100 ms, bf16-amp everywhere. The
  // largest models get one configuration per phase: each pass builds them
  // on the CPU (a few seconds per billion parameters) before timing.
  return {
      Model("decoder", kGpt2Small, {4, 16}, {kBf16}),
      Model("decoder", kGpt2Small, {4}, {kFp32}),
      Model("decoder", kGpt2Medium, {8}, {kBf16}),
      Model("decoder", kLlama1b, {2}, {kBf16}),
      Model("bert", {{"seq_len", {128, 512}}}, {32}, {kBf16}),
      Model("bert", {{"seq_len", {128}}}, {32}, {kFp32}),
      Model("bert", [] { Params p = kBertLarge; p["seq_len"] = {512}; return p; }(), {16},
            {kBf16}),
      Model("vit", {{"layers", {6, 12}}}, {64}, {kBf16}),
      Model("vit", {{"layers", {6}}}, {64}, {kFp32}),
      Model("vit", {{"layers", {12}}}, {256}, {kBf16}),
      Model("resnet_imagenet", {{"depth", {18, 50, 101}}}, {64}, {kBf16, kFp32}),
      Model("resnet_imagenet", {{"depth", {18, 50, 101}}}, {256}, {kBf16}),
      // PyTorch's two other fp32 modes, at the sizes users run most, so that
      // the agent's own runs calibrate them as they do fp32 and bf16-amp.
      Model("decoder", kGpt2Small, {4}, {kTf32, kStrictFp32}),
      Model("bert", {{"seq_len", {128}}}, {32}, {kTf32, kStrictFp32}),
      Model("vit", {{"layers", {12}}}, {64}, {kTf32}),
      Model("resnet_imagenet", {{"depth", {18, 50}}}, {64}, {kTf32, kStrictFp32}),
  };
}

std::vector<Grid> OpGrids() {
  return {
      // LM heads: tokens x vocabulary x width.
      Op("gemm", {{"m", {4096, 16384}}, {"n", {30522, 32000, 50257}}, {"k", {768, 1024, 2048}},
                  {"batch", {1}}},
         {kBf16}),
      // Projections and MLPs of 1-7B models: tokens x out x in.
      Op("gemm", {{"m", {4096, 8192}}, {"n", {2048, 4096, 5632, 11008, 14336}},
                  {"k", {2048, 4096}}, {"batch", {1}}},
         {kBf16}, {Phase::kInference}),
      Op("gemm", {{"m", {8192}}, {"n", {3072, 50257}}, {"k", {768}}, {"batch", {1}}}, {kFp32}),
      Op("sdpa", {{"heads", {16}}, {"seq_len", {512, 1024, 2048, 4096}}, {"head_dim", {64, 128}},
                  {"causal", {0, 1}}},
         {kBf16}, kBoth, {8}),
      Op("sdpa", {{"heads", {12}}, {"seq_len", {128, 512, 1024}}, {"head_dim", {64}},
                  {"causal", {0, 1}}},
         {kFp32}, kBoth, {8}),
      Op("rmsnorm", {{"rows", {8192, 32768}}, {"cols", {2048, 4096}}}, {kBf16}),
      Op("swiglu", {{"rows", {8192, 32768}}, {"cols", {5632, 11008, 14336}}}, {kBf16}),
      Op("layernorm", {{"rows", {8192, 32768}}, {"cols", {768, 1024, 2048}}}, {kBf16}),
      Op("cross_entropy", {{"rows", {4096, 16384}}, {"vocab", {30522, 32000, 50257}}}, {kFp32}),
      // Token tables: tokens per sample x batch 8 ids into vocab x width.
      Op("embedding", {{"rows", {32000, 50257}}, {"dim", {768, 2048, 4096}},
                       {"lookups", {1024}}},
         {kFp32}, kBoth, {8}),
      Op("optimizer", {{"params", {100000000, 300000000, 1000000000}}}, {kFp32},
         {Phase::kTrain}),
  };
}

}  // namespace

RunPlan ArchitecturesPlan() {
  RunPlan plan;
  plan.name = "architectures";
  // Operations first, as in the other built-in plans: a run cut short still
  // leaves the level-1 data complete.
  plan.grids = OpGrids();
  for (Grid& grid : ModelGrids()) plan.grids.push_back(std::move(grid));
  return plan;
}

}  // namespace perfcast::profiler
