#include "profiler/builtin_plans.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace perfcast::profiler {
namespace {

using models::Phase;
using models::Precision;
using models::WorkloadKind;

constexpr Precision kFp32 = Precision::kFp32;
constexpr Precision kTf32 = Precision::kTf32;
constexpr Precision kFp16 = Precision::kFp16Amp;
constexpr Precision kBf16 = Precision::kBf16Amp;
constexpr Precision kFp64 = Precision::kFp64;

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

}  // namespace

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
  plan.grids.push_back(OpGrid("gemm",
                              {{"m", {64, 256}}, {"n", {64, 256}}, {"k", {64}}, {"batch", {1}}},
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

namespace {

// The default plan: few configurations, each measured well (>= 5 timed
// blocks of >= 100 ms over two passes), in minutes on one GPU.
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

}  // namespace

RunPlan DefaultPlan() {
  RunPlan plan;
  plan.name = "default";
  // A safety net: a slower machine keeps both passes of what it finished
  // and one pass of the rest. An H200 machine needs about 7 minutes (4.4
  // before adaptive repeats).
  plan.max_minutes = 9;
  // Operations first: they are cheap, so a run cut short by its budget
  // still leaves a complete operation sweep.
  plan.grids = DefaultOpGrids();
  for (Grid& grid : DefaultModelGrids()) plan.grids.push_back(std::move(grid));
  return plan;
}

RunPlan FullPlan() {
  RunPlan plan;
  plan.name = "full";
  plan.grids = OpGrids();
  for (Grid& grid : ModelGrids()) plan.grids.push_back(std::move(grid));
  return plan;
}

}  // namespace perfcast::profiler
