#include "models/descriptor.h"

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/architecture.h"

namespace perfcast::models {
namespace {

using ::testing::HasSubstr;

WorkloadSpec Model(const std::string& family, std::map<std::string, int64_t> params = {},
                   int64_t batch = 1, Phase phase = Phase::kTrain) {
  WorkloadSpec spec;
  spec.kind = WorkloadKind::kModel;
  spec.family = family;
  spec.params = std::move(params);
  spec.batch_size = batch;
  spec.phase = phase;
  return spec;
}

WorkloadSpec Op(const std::string& family, std::map<std::string, int64_t> params = {},
                int64_t batch = 1, Phase phase = Phase::kTrain) {
  WorkloadSpec spec = Model(family, std::move(params), batch, phase);
  spec.kind = WorkloadKind::kOperation;
  return spec;
}

WorkloadDescriptor MustDescribe(const WorkloadSpec& spec) {
  auto d = Describe(spec);
  EXPECT_TRUE(d.ok()) << spec.Key() << ": " << d.status();
  return d.ok() ? *d : WorkloadDescriptor{};
}

// Checks the invariants every descriptor must hold.
void ExpectConsistent(const WorkloadDescriptor& d) {
  double flops = 0, bytes = 0, launches = 0, calls = 0;
  for (const Operation& op : d.operations) {
    EXPECT_GE(op.flops, 0) << op.name;
    EXPECT_GE(op.bytes, 0) << op.name;
    EXPECT_GT(op.count, 0) << op.name;
    flops += op.flops * op.count;
    bytes += op.bytes * op.count;
    launches += op.launches * op.count;
    calls += op.python_calls * op.count;
  }
  const std::string key = d.spec.Key();
  EXPECT_NEAR(flops, d.total_flops(), 1e-9 * d.total_flops()) << key;
  // Host->device copies move input_bytes over the bus, not device memory.
  EXPECT_NEAR(bytes, d.total_bytes() + d.input_bytes, 1e-9 * bytes) << key;
  EXPECT_DOUBLE_EQ(launches, d.kernel_launches) << key;
  EXPECT_DOUBLE_EQ(calls, d.python_calls) << key;
  if (d.spec.kind == WorkloadKind::kModel) EXPECT_GT(d.python_calls, 0) << key;
  EXPECT_GT(d.total_bytes() + d.input_bytes, 0) << key;
  if (d.spec.phase == Phase::kInference) {
    EXPECT_EQ(d.backward_flops, 0) << key;
    EXPECT_EQ(d.optimizer_flops, 0) << key;
  }
  EXPECT_GE(d.inner_modules, 1) << key;
}

TEST(OpClassTest, NamesRoundTrip) {
  for (OpClass c : AllOpClasses()) {
    auto parsed = ParseOpClass(OpClassName(c));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, c);
  }
  EXPECT_EQ(AllOpClasses().size(), 12u);
  EXPECT_FALSE(ParseOpClass("matmul").ok());
}

TEST(FamiliesTest, ModelsFirstAndAllKnown) {
  const std::vector<std::string> models = {"lstm",    "cnn",  "stgcn", "resnet",
                                           "transformer", "dlrm", "decoder", "bert",
                                           "vit",     "resnet_imagenet"};
  const std::vector<std::string> ops = {"gemm",      "conv2d",  "lstm_cell", "attention",
                                        "sdpa",      "rmsnorm", "swiglu", "cross_entropy",
                                        "elementwise", "layernorm", "softmax", "embedding",
                                        "optimizer", "h2d", "allreduce"};
  ASSERT_EQ(Families().size(), models.size() + ops.size());
  for (size_t i = 0; i < models.size(); ++i) {
    EXPECT_EQ(Families()[i].name, models[i]);
    EXPECT_EQ(Families()[i].kind, WorkloadKind::kModel);
  }
  for (const std::string& name : ops) {
    auto info = FindFamily(name);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->kind, WorkloadKind::kOperation);
  }
  EXPECT_EQ(FindFamily("mlp").status().code(), absl::StatusCode::kNotFound);
  for (const FamilyInfo& f : Families()) {
    EXPECT_FALSE(f.doc.empty()) << f.name;
    for (const ParamInfo& p : f.params) {
      EXPECT_LE(p.min_value, p.default_value) << f.name << "." << p.name;
      EXPECT_LE(p.default_value, p.max_value) << f.name << "." << p.name;
      EXPECT_FALSE(p.doc.empty()) << f.name << "." << p.name;
    }
  }
}

TEST(DescribeTest, EveryFamilyDescribesItsDefaultsInEveryMode) {
  for (const FamilyInfo& f : Families()) {
    for (Phase phase : {Phase::kTrain, Phase::kInference}) {
      for (Precision precision : {Precision::kFp32, Precision::kTf32, Precision::kFp16Amp,
                                  Precision::kBf16Amp, Precision::kFp64}) {
        for (const char* optimizer : {"adam", "adamw", "sgd"}) {
          WorkloadSpec spec = Model(f.name, {}, 4, phase);
          spec.kind = f.kind;
          spec.precision = precision;
          spec.optimizer = optimizer;
          WorkloadDescriptor d = MustDescribe(spec);
          ExpectConsistent(d);
          EXPECT_EQ(d.spec.params.size(), f.params.size()) << f.name;
          if (f.kind == WorkloadKind::kOperation) {
            ASSERT_EQ(d.operations.size(), 1u) << f.name;
            EXPECT_EQ(d.operations[0].count, 1) << f.name;
            // The harness times a training call as one autograd::grad call;
            // an optimizer step enters no autograd.
            EXPECT_EQ(d.operations[0].autograd_calls,
                      d.spec.phase == Phase::kTrain && f.name != "optimizer" ? 1 : 0)
                << f.name;
          } else {
            // A model's step enters autograd once for all its operations:
            // none of them carries the entry.
            for (const Operation& op : d.operations) EXPECT_EQ(op.autograd_calls, 0) << f.name;
            EXPECT_GT(d.parameters, 0) << f.name;
            EXPECT_GT(d.input_bytes, 0) << f.name;
            EXPECT_EQ(d.operations.back().op_class, OpClass::kHostOverhead) << f.name;
            EXPECT_GT(d.activation_bytes, 0) << f.name;
            if (d.spec.phase == Phase::kTrain) {
              EXPECT_GT(d.backward_flops, d.forward_flops) << f.name;
              EXPECT_GT(d.optimizer_flops, 0) << f.name;
            }
          }
        }
      }
    }
  }
}

// AdamW (the usual optimizer of decoder LMs) is Adam after an in-place
// decay of each parameter: one more kernel per tensor, one FLOP and 8 bytes
// per parameter; its state is Adam's. Unknown optimizers are refused by name.
TEST(DescribeTest, AdamWStepIsAdamAfterTheDecay) {
  WorkloadSpec spec = Model("lstm", {{"layers", 2}, {"hidden", 128}}, 8);
  auto step_of = [](const WorkloadDescriptor& d) {
    const Operation* step = nullptr;
    for (const Operation& op : d.operations) {
      if (op.op_class == OpClass::kOptimizer) step = &op;
    }
    return step;
  };
  const WorkloadDescriptor adam = MustDescribe(spec);
  spec.optimizer = "adamw";
  const WorkloadDescriptor adamw = MustDescribe(spec);
  ASSERT_NE(step_of(adam), nullptr);
  ASSERT_NE(step_of(adamw), nullptr);
  EXPECT_EQ(step_of(adamw)->name, "optimizer.adamw.step");
  EXPECT_DOUBLE_EQ(step_of(adamw)->flops, step_of(adam)->flops + adam.parameters);
  EXPECT_DOUBLE_EQ(step_of(adamw)->bytes, step_of(adam)->bytes + 8 * adam.parameters);
  EXPECT_DOUBLE_EQ(step_of(adamw)->launches, step_of(adam)->launches + 1);  // one foreach mul_
  EXPECT_DOUBLE_EQ(adamw.forward_flops, adam.forward_flops);
  EXPECT_NE(adamw.spec.Key(), adam.spec.Key());

  spec.optimizer = "lion";
  absl::StatusOr<WorkloadDescriptor> lion = Describe(spec);
  EXPECT_EQ(lion.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(lion.status().message().find("adamw"), std::string::npos) << lion.status();
}

// Optimizer "none" is forward + backward without an update (NeuSight's
// training labels, a gradient-accumulation micro-step): the same operations
// as Adam's step but the optimizer's, and no optimizer FLOPs. The optimizer
// operation itself cannot be "none": it would describe nothing.
TEST(DescribeTest, NoOptimizerIsForwardAndBackwardOnly) {
  WorkloadSpec spec = Model("decoder", {{"layers", 2}, {"hidden", 128}, {"heads", 2}}, 2);
  const WorkloadDescriptor adam = MustDescribe(spec);
  spec.optimizer = "none";
  const WorkloadDescriptor none = MustDescribe(spec);
  ExpectConsistent(none);
  for (const Operation& op : none.operations) EXPECT_NE(op.op_class, OpClass::kOptimizer);
  EXPECT_EQ(none.operations.size() + 1, adam.operations.size());
  EXPECT_DOUBLE_EQ(none.optimizer_flops, 0);
  EXPECT_DOUBLE_EQ(none.backward_flops, adam.backward_flops);
  EXPECT_DOUBLE_EQ(none.parameters, adam.parameters);
  EXPECT_NE(none.spec.Key(), adam.spec.Key());

  WorkloadSpec op = Model("optimizer", {}, 1);
  op.kind = WorkloadKind::kOperation;
  op.optimizer = "none";
  EXPECT_EQ(Describe(op).status().code(), absl::StatusCode::kInvalidArgument);
}

// The agent's SGD keeps a momentum buffer (momentum 0.9): foreach
// buffer.mul_, buffer.add_(grad) and param.add_(buffer), not the single add_
// of plain SGD; a small model's tensors fit in one launch of each.
TEST(DescribeTest, SgdStepCountsMomentumKernels) {
  WorkloadSpec spec = Model("lstm", {{"layers", 2}, {"hidden", 128}}, 8);
  spec.optimizer = "sgd";
  const WorkloadDescriptor d = MustDescribe(spec);
  const Operation* step = nullptr;
  for (const Operation& op : d.operations) {
    if (op.op_class == OpClass::kOptimizer) step = &op;
  }
  ASSERT_NE(step, nullptr);
  EXPECT_DOUBLE_EQ(step->flops, 4 * d.parameters);
  EXPECT_DOUBLE_EQ(step->bytes, 32 * d.parameters);
  ASSERT_LE(step->shape.at("tensors"), 64);
  EXPECT_DOUBLE_EQ(step->launches, 3.0);
}

// A foreach op launches a kernel per 110/64/48/96 tensors (by the lists it
// reads and writes) or per 320 x 65,536 elements, whichever fills first.
TEST(DescribeTest, ForeachOptimizerLaunchesGrowWithTensorsAndElements) {
  auto adam_step = [](const WorkloadDescriptor& d) {
    for (const Operation& op : d.operations) {
      if (op.op_class == OpClass::kOptimizer) return op;
    }
    return Operation{};
  };
  const WorkloadDescriptor small = MustDescribe(Model("lstm", {}, 8));
  EXPECT_DOUBLE_EQ(adam_step(small).launches, 7);  // 7 foreach ops, one launch each
  const WorkloadDescriptor many = MustDescribe(
      Model("decoder", {{"layers", 24}, {"hidden", 128}, {"heads", 2}}, 2));
  const Operation step = adam_step(many);
  const double t = static_cast<double>(step.shape.at("tensors"));
  ASSERT_GT(t, 110);
  auto c = [t](double max_tensors) { return std::ceil(t / max_tensors); };
  EXPECT_DOUBLE_EQ(step.launches, c(64) + c(110) + c(48) + c(64) + c(96) + c(110) + c(48));
  // One tensor of 1e8 elements: 1e8 / (320 x 65,536) -> 5 launches per op.
  WorkloadSpec op = Model("optimizer", {{"params", 100000000}}, 1);
  op.kind = WorkloadKind::kOperation;
  EXPECT_DOUBLE_EQ(adam_step(MustDescribe(op)).launches, 7 * 5);
}

TEST(PythonCallsTest, AnLstmStackIsOneCallWhateverKernelsItLaunches) {
  // One nn.LSTM call runs every layer and time step in cuDNN: a deeper,
  // longer stack launches more kernels, not more Python calls. Inference:
  // the LSTM, the head, the loss, and the two input copies.
  const WorkloadDescriptor small =
      MustDescribe(Model("lstm", {{"layers", 2}, {"seq_len", 24}}, 64, Phase::kInference));
  const WorkloadDescriptor large =
      MustDescribe(Model("lstm", {{"layers", 4}, {"seq_len", 96}}, 64, Phase::kInference));
  EXPECT_DOUBLE_EQ(small.python_calls, 5);
  EXPECT_DOUBLE_EQ(large.python_calls, 5);
  EXPECT_GT(large.kernel_launches, 3 * small.kernel_launches);
  EXPECT_GT(small.kernel_launches, 10 * small.python_calls);
}

TEST(PythonCallsTest, TrainingAddsTheOptimizersWorkPerParameterTensor) {
  // A 1-D CNN's training step: its forward calls (input transpose, conv and
  // ReLU per layer, head, loss, two copies), Adam's four calls per parameter
  // tensor (a weight and a bias per layer and head) and eight foreach calls,
  // and the step's own fifty; backward adds kernels, not calls.
  const WorkloadDescriptor inference =
      MustDescribe(Model("cnn", {{"layers", 3}}, 64, Phase::kInference));
  const WorkloadDescriptor train = MustDescribe(Model("cnn", {{"layers", 3}}, 64, Phase::kTrain));
  EXPECT_DOUBLE_EQ(inference.python_calls, 1 + 3 * 2 + 1 + 1 + 2);
  EXPECT_DOUBLE_EQ(train.python_calls, inference.python_calls + 4 * 8 + 8 + 50);
  WorkloadSpec sgd = Model("cnn", {{"layers", 3}}, 64, Phase::kTrain);
  sgd.optimizer = "sgd";
  EXPECT_DOUBLE_EQ(MustDescribe(sgd).python_calls, inference.python_calls + 2 * 8 + 3 + 50);
}

TEST(ParameterCountTest, Lstm) {
  // layer 0: 4*128*(32+128) + 8*128; layer 1: 4*128*256 + 8*128; head 128*384+384.
  EXPECT_EQ(MustDescribe(Model("lstm")).parameters, 82944 + 132096 + 49536);
}

TEST(ParameterCountTest, Cnn) {
  // conv 32->64 k3, two conv 64->64 k3 (with bias), head 64*24 -> 32*12.
  EXPECT_EQ(MustDescribe(Model("cnn")).parameters, 6208 + 2 * 12352 + 590208);
}

TEST(ParameterCountTest, Stgcn) {
  // block 0: tconv 1->64 (256), theta 64x64 (4160), tconv 64->64 (12352);
  // block 1: 12352 + 4160 + 12352; output conv 64->3 over 4 steps (771).
  EXPECT_EQ(MustDescribe(Model("stgcn")).parameters, 16768 + 28864 + 771);
}

TEST(ParameterCountTest, ResNet) {
  // stem 464; blocks 4672, 4672, 14528 (down), 18560, 57728 (down), 73984; fc 650.
  EXPECT_EQ(MustDescribe(Model("resnet")).parameters, 175258);
}

TEST(ParameterCountTest, Transformer) {
  // emb 10*8 + 4*8 + LN 16; layer 4*64 + 2*8*16 + 9*8 + 16; pooler 72; cls 27.
  auto d = MustDescribe(Model(
      "transformer",
      {{"layers", 1}, {"hidden", 8}, {"heads", 2}, {"ffn", 16}, {"seq_len", 4}, {"vocab", 10},
       {"classes", 3}}));
  EXPECT_EQ(d.parameters, 128 + 600 + 72 + 27);
  auto two = MustDescribe(Model(
      "transformer",
      {{"layers", 2}, {"hidden", 8}, {"heads", 2}, {"ffn", 16}, {"seq_len", 4}, {"vocab", 10},
       {"classes", 3}}));
  EXPECT_EQ(two.parameters - d.parameters, 600);
  EXPECT_EQ(two.inner_modules, 2);
}

TEST(ParameterCountTest, Dlrm) {
  // bottom 3->2 (8), table 10x2 (20), top (2 + 1 pair) -> 1 (4).
  auto d = MustDescribe(Model("dlrm", {{"tables", 1}, {"rows", 10}, {"emb_dim", 2}, {"dense", 3},
                                       {"bottom_layers", 1}, {"top_layers", 1}}));
  EXPECT_EQ(d.parameters, 32);
}

TEST(FlopsTest, DlrmSmallInferenceByHand) {
  auto d = MustDescribe(Model("dlrm",
                              {{"tables", 1}, {"rows", 10}, {"emb_dim", 2}, {"dense", 3},
                               {"bottom_layers", 1}, {"top_layers", 1}, {"lookups", 4}},
                              1, Phase::kInference));
  // bottom gemm 2*2*3, relu 2, bag sum 4*2, dots 2*2*2*2, top gemm 2*3, bce 8.
  EXPECT_EQ(d.forward_flops, 12 + 2 + 8 + 16 + 6 + 8);
  EXPECT_EQ(d.total_flops(), d.forward_flops);
}

TEST(FlopsTest, LstmSmallInferenceByHand) {
  auto d = MustDescribe(Model(
      "lstm", {{"layers", 1}, {"hidden", 2}, {"nodes", 1}, {"seq_len", 3}, {"horizon", 1}}, 1,
      Phase::kInference));
  // 2 * batch * steps * 4h * (in + h) + head 2*2 + mse 3.
  EXPECT_EQ(d.forward_flops, 2 * 3 * 8 * 3 + 4 + 3);
}

TEST(FlopsTest, GemmTrainIsForwardPlusTwoGradients) {
  auto inference = MustDescribe(Op("gemm", {{"m", 2}, {"n", 3}, {"k", 4}}, 1, Phase::kInference));
  EXPECT_EQ(inference.forward_flops, 48);
  EXPECT_EQ(inference.operations[0].bytes, 4 * (2 * 4 + 4 * 3 + 2 * 3));
  EXPECT_EQ(inference.kernel_launches, 1);
  auto train = MustDescribe(Op("gemm", {{"m", 2}, {"n", 3}, {"k", 4}}));
  EXPECT_EQ(train.forward_flops, 48);
  EXPECT_EQ(train.backward_flops, 96);
  EXPECT_EQ(train.operations[0].flops, 144);
  EXPECT_EQ(train.operations[0].launches, 3);
  EXPECT_EQ(train.operations[0].name, "gemm.fwd+bwd");
  EXPECT_EQ(train.parameters, 0);
}

TEST(FlopsTest, GemmWorkItemsArePerTile) {
  auto d = MustDescribe(
      Op("gemm", {{"m", 256}, {"n", 257}, {"k", 64}, {"batch", 2}}, 1, Phase::kInference));
  EXPECT_EQ(d.operations[0].work_items, 2 * 3 * 2);
  EXPECT_EQ(d.operations[0].shape.at("batch"), 2);
}

TEST(FlopsTest, Conv2dByHand) {
  auto d = MustDescribe(Op("conv2d",
                           {{"channels_in", 2}, {"channels_out", 3}, {"height", 4}, {"width", 4},
                            {"kernel", 3}, {"stride", 2}},
                           5, Phase::kInference));
  // padding 1, stride 2: 2x2 outputs; 2 * 5 * 3 * 4 * 2 * 9.
  EXPECT_EQ(d.forward_flops, 2.0 * 5 * 3 * 4 * 2 * 9);
  EXPECT_EQ(d.parameters, 2 * 3 * 9);
  EXPECT_EQ(d.operations[0].op_class, OpClass::kConv);
}

TEST(FlopsTest, AttentionTrainBackwardDoublesMatmuls) {
  auto d = MustDescribe(Op("attention", {{"heads", 2}, {"seq_len", 8}, {"head_dim", 4}}, 3));
  const double scores = 3.0 * 2 * 8 * 8;
  EXPECT_EQ(d.forward_flops, 4 * scores * 4 + 6 * scores);
  EXPECT_EQ(d.backward_flops, 8 * scores * 4 + 5 * scores);
}

TEST(PrecisionTest, AmpHalvesMatmulBytesAndKeepsNormsFp32) {
  WorkloadSpec spec = Op("gemm", {{"m", 64}, {"n", 64}, {"k", 64}}, 1, Phase::kInference);
  auto fp32 = MustDescribe(spec);
  spec.precision = Precision::kBf16Amp;
  auto bf16 = MustDescribe(spec);
  EXPECT_EQ(bf16.operations[0].precision, Precision::kBf16Amp);
  EXPECT_EQ(bf16.total_bytes() * 2, fp32.total_bytes());
  spec.precision = Precision::kTf32;
  EXPECT_EQ(MustDescribe(spec).operations[0].precision, Precision::kTf32);

  WorkloadSpec model = Model("transformer");
  model.precision = Precision::kFp16Amp;
  auto d = MustDescribe(model);
  int gemms = 0, norms = 0;
  for (const Operation& op : d.operations) {
    if (op.op_class == OpClass::kGemm) {
      ++gemms;
      EXPECT_EQ(op.precision, Precision::kFp16Amp) << op.name;
    }
    if (op.name.find(".ln") != std::string::npos) {
      ++norms;
      EXPECT_EQ(op.precision, Precision::kFp32) << op.name;
    }
    if (op.op_class == OpClass::kOptimizer) {
      EXPECT_EQ(op.precision, Precision::kFp32);
    }
  }
  EXPECT_GT(gemms, 0);
  EXPECT_GT(norms, 0);
}

TEST(DecompositionTest, TransformerGemmsMatchTheLayers) {
  auto d = MustDescribe(Model("transformer", {{"layers", 3}}, 2, Phase::kInference));
  int forward_gemms = 0;
  for (const Operation& op : d.operations) {
    if (op.op_class == OpClass::kGemm) ++forward_gemms;
  }
  // qkv, out, up, down per layer; pooler and classifier.
  EXPECT_EQ(forward_gemms, 3 * 4 + 2);
  EXPECT_EQ(d.operations[1 + 1 + 1 + 1].name, "layer0.attn.qkv.fwd");
}

TEST(DecompositionTest, ModelsEndWithOptimizerCopyAndHost) {
  auto d = MustDescribe(Model("lstm", {}, 8));
  const size_t n = d.operations.size();
  ASSERT_GE(n, 3u);
  EXPECT_EQ(d.operations[n - 3].op_class, OpClass::kOptimizer);
  EXPECT_EQ(d.operations[n - 3].shape.at("params"), d.parameters);
  EXPECT_EQ(d.operations[n - 3].launches, 7);  // adam: 7 foreach ops, few tensors
  EXPECT_EQ(d.operations[n - 2].op_class, OpClass::kHostToDevice);
  EXPECT_EQ(d.operations[n - 2].bytes, d.input_bytes);
  EXPECT_EQ(d.input_bytes, 4.0 * 8 * 32 * (24 + 12));
  EXPECT_EQ(d.operations[n - 1].op_class, OpClass::kHostOverhead);
  EXPECT_EQ(d.operations[n - 1].shape.at("kernels"), d.kernel_launches);
}

TEST(DecompositionTest, ResNetLayoutSpreadsBlocksOverStages) {
  auto layout = ResNetLayout(4, 16, 32);
  ASSERT_EQ(layout.size(), 4u);
  EXPECT_EQ(layout[1].out_channels, 16);
  EXPECT_EQ(layout[2].out_channels, 32);
  EXPECT_EQ(layout[2].stride, 2);
  EXPECT_TRUE(layout[2].downsample);
  EXPECT_EQ(layout[3].out_channels, 64);
  EXPECT_EQ(layout[3].out_size, 8);
  EXPECT_EQ(ResNetLayout(1, 16, 32).back().out_channels, 16);
}

TEST(NormalizeSpecTest, FillsDefaultsAndCanonicalisesIgnoredFields) {
  auto spec = NormalizeSpec(Model("lstm", {{"layers", 4}}));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->params.at("layers"), 4);
  EXPECT_EQ(spec->params.at("hidden"), 128);

  auto gemm = NormalizeSpec(Op("gemm", {}, 64));
  ASSERT_TRUE(gemm.ok());
  EXPECT_EQ(gemm->batch_size, 1);
  WorkloadSpec h2d = Op("h2d", {}, 1, Phase::kTrain);
  h2d.precision = Precision::kBf16Amp;
  auto normal_h2d = NormalizeSpec(h2d);
  ASSERT_TRUE(normal_h2d.ok());
  EXPECT_EQ(normal_h2d->phase, Phase::kInference);
  EXPECT_EQ(normal_h2d->precision, Precision::kFp32);
  auto optimizer = NormalizeSpec(Op("optimizer", {}, 1, Phase::kInference));
  ASSERT_TRUE(optimizer.ok());
  EXPECT_EQ(optimizer->phase, Phase::kTrain);
}

void ExpectInvalid(const WorkloadSpec& spec, const std::string& mention) {
  auto normal = NormalizeSpec(spec);
  ASSERT_FALSE(normal.ok()) << spec.Key();
  EXPECT_EQ(normal.status().code(), absl::StatusCode::kInvalidArgument) << spec.Key();
  EXPECT_THAT(std::string(normal.status().message()), HasSubstr(mention)) << spec.Key();
  EXPECT_FALSE(Describe(spec).ok());
}

TEST(OperationFamiliesTest, AllReduceCarriesTheRingBytesOfEveryGpu) {
  auto d = Describe(Op("allreduce", {{"bytes", 1 << 20}, {"gpus", 4}}, 8, Phase::kTrain));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->spec.phase, Phase::kInference);
  EXPECT_EQ(d->spec.batch_size, 1);
  ASSERT_EQ(d->operations.size(), 1u);
  EXPECT_EQ(d->operations[0].op_class, OpClass::kCollective);
  EXPECT_DOUBLE_EQ(d->operations[0].bytes, 1.5 * (1 << 20));
  EXPECT_EQ(d->parameters, 0);
  ExpectInvalid(Op("allreduce", {{"gpus", 1}}), "gpus");
  ExpectInvalid(Op("allreduce", {{"bytes", 0}}), "bytes");
}

TEST(NormalizeSpecTest, RejectsBadSpecsNamingTheParameter) {
  ExpectInvalid(Model("mlp"), "mlp");
  ExpectInvalid(Model("gemm"), "gemm");  // an operation family with kind model
  ExpectInvalid(Op("lstm"), "lstm");
  ExpectInvalid(Model("lstm", {{"depth", 2}}), "depth");
  ExpectInvalid(Model("lstm", {{"hidden", 0}}), "hidden");
  ExpectInvalid(Model("lstm", {{"layers", 1000}}), "layers");
  ExpectInvalid(Model("lstm", {}, 0), "batch_size");
  ExpectInvalid(Model("transformer", {{"hidden", 100}, {"heads", 3}}), "hidden");
  ExpectInvalid(Model("cnn", {{"kernel", 4}}), "kernel");
  ExpectInvalid(Model("stgcn", {{"seq_len", 8}, {"blocks", 2}, {"kernel_t", 3}}), "seq_len");
  ExpectInvalid(Op("conv2d", {{"stride", 17}}), "stride");
  ExpectInvalid(Op("h2d", {{"pinned", 2}}), "pinned");
  WorkloadSpec bad_optimizer = Model("lstm");
  bad_optimizer.optimizer = "lbfgs";
  ExpectInvalid(bad_optimizer, "optimizer");
}

// Numeric hostility: absurd sizes are refused before any arithmetic on them.
TEST(NormalizeSpecTest, RejectsAbsurdSizes) {
  ExpectInvalid(Model("lstm", {}, 1'000'000'000'000'000'000), "batch_size");
  ExpectInvalid(Model("lstm", {}, kMaxBatchSize + 1), "batch_size");
  ExpectInvalid(Model("lstm", {}, -1), "batch_size");
  ExpectInvalid(Model("lstm", {{"seq_len", int64_t{1} << 62}}), "seq_len");
  ExpectInvalid(Model("transformer", {{"layers", std::numeric_limits<int64_t>::max()}}), "layers");
  ExpectInvalid(Model("lstm", {{"hidden", std::numeric_limits<int64_t>::min()}}), "hidden");
  ExpectInvalid(Op("gemm", {{"m", int64_t{1} << 40}}), "m");
  ExpectInvalid(Model(""), "family");
  ExpectInvalid(Model(std::string(1 << 20, 'x')), "unknown workload family");
  // The largest batch is accepted and describes to finite totals.
  absl::StatusOr<WorkloadDescriptor> largest = Describe(Model("lstm", {}, kMaxBatchSize));
  ASSERT_TRUE(largest.ok()) << largest.status();
  EXPECT_TRUE(std::isfinite(largest->total_flops()));
  EXPECT_GT(largest->total_flops(), 0);
}

TEST(ScalingTest, FlopsGrowWithInnerModulesAndBatch) {
  for (const std::string family : {"lstm", "cnn", "stgcn", "resnet", "transformer"}) {
    const std::string knob = family == "stgcn" || family == "resnet" ? "blocks" : "layers";
    auto small = MustDescribe(Model(family, {{knob, 1}}, 2));
    auto large = MustDescribe(Model(family, {{knob, 2}}, 2));
    auto wide = MustDescribe(Model(family, {{knob, 1}}, 4));
    EXPECT_GT(large.forward_flops, small.forward_flops) << family;
    EXPECT_GT(large.kernel_launches, small.kernel_launches) << family;
    EXPECT_GT(wide.forward_flops, small.forward_flops) << family;
    EXPECT_EQ(wide.parameters, small.parameters) << family;
  }
}

}  // namespace
}  // namespace perfcast::models

namespace perfcast::models {
namespace {

// fp32 is PyTorch's default: cuDNN runs the convolutions in TF32, matmuls
// stay strict; strict-fp32 runs neither in TF32, tf32 both.
TEST(DescribeTest, Fp32ConvolutionsRunInTf32AndStrictFp32InFp32) {
  auto precisions_of = [](Precision precision) {
    WorkloadSpec spec = Model("resnet");
    spec.precision = precision;
    std::set<std::pair<OpClass, Precision>> seen;
    for (const Operation& op : MustDescribe(spec).operations) {
      if (op.op_class == OpClass::kConv || op.op_class == OpClass::kGemm) {
        seen.insert({op.op_class, op.precision});
      }
    }
    return seen;
  };
  const auto fp32 = precisions_of(Precision::kFp32);
  EXPECT_TRUE(fp32.count({OpClass::kConv, Precision::kTf32}));
  EXPECT_FALSE(fp32.count({OpClass::kConv, Precision::kFp32}));
  EXPECT_TRUE(fp32.count({OpClass::kGemm, Precision::kFp32}));
  const auto strict = precisions_of(Precision::kStrictFp32);
  EXPECT_TRUE(strict.count({OpClass::kConv, Precision::kStrictFp32}));
  EXPECT_FALSE(strict.count({OpClass::kConv, Precision::kTf32}));
  const auto tf32 = precisions_of(Precision::kTf32);
  EXPECT_TRUE(tf32.count({OpClass::kConv, Precision::kTf32}));
  EXPECT_TRUE(tf32.count({OpClass::kGemm, Precision::kTf32}));
}

}  // namespace
}  // namespace perfcast::models
