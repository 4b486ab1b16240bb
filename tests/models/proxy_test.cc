#include "models/torch/proxy.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "models/torch/layers.h"
#include "models/torch/oscillators.h"

namespace perfcast::models::torch_proxy {
namespace {

WorkloadSpec Spec(const std::string& family, std::map<std::string, int64_t> params,
                  int64_t batch = 4) {
  WorkloadSpec spec;
  spec.family = family;
  spec.params = std::move(params);
  spec.batch_size = batch;
  return spec;
}

// Small sizes of every model family: the torch tests must stay fast.
std::vector<WorkloadSpec> SmallSpecs() {
  return {
      Spec("lstm", {{"layers", 1}, {"hidden", 8}, {"nodes", 4}, {"seq_len", 5}, {"horizon", 2}}),
      Spec("lstm", {{"layers", 3}, {"hidden", 16}, {"nodes", 6}, {"seq_len", 6}, {"horizon", 3}}),
      Spec("cnn", {{"layers", 1}, {"channels", 4}, {"kernel", 3}, {"nodes", 4}, {"seq_len", 6},
                   {"horizon", 2}}),
      Spec("cnn", {{"layers", 3}, {"channels", 8}, {"kernel", 5}, {"nodes", 5}, {"seq_len", 7},
                   {"horizon", 1}}),
      Spec("stgcn", {{"blocks", 1}, {"nodes", 5}, {"channels", 4}, {"seq_len", 6},
                     {"kernel_t", 2}, {"horizon", 2}}),
      Spec("stgcn", {{"blocks", 2}, {"nodes", 6}, {"channels", 8}, {"seq_len", 12},
                     {"kernel_t", 3}, {"horizon", 1}}),
      Spec("resnet", {{"blocks", 1}, {"width", 4}, {"image", 8}, {"classes", 3}}),
      Spec("resnet", {{"blocks", 4}, {"width", 4}, {"image", 16}, {"classes", 5}}),
      Spec("transformer", {{"layers", 1}, {"hidden", 8}, {"heads", 2}, {"ffn", 16},
                           {"seq_len", 6}, {"vocab", 20}, {"classes", 3}}),
      Spec("transformer", {{"layers", 2}, {"hidden", 16}, {"heads", 4}, {"ffn", 32},
                           {"seq_len", 8}, {"vocab", 50}, {"classes", 2}}),
      Spec("decoder", {{"layers", 2}, {"hidden", 16}, {"heads", 4}, {"ffn", 32}, {"seq_len", 8},
                       {"vocab", 50}, {"positions", 10}}),
      Spec("decoder", {{"layers", 2}, {"hidden", 16}, {"heads", 4}, {"kv_heads", 2},
                       {"ffn", 24}, {"seq_len", 8}, {"vocab", 40}, {"positions", 0},
                       {"norm", 1}, {"mlp", 1}, {"bias", 0}, {"tied", 0}}),
      Spec("bert", {{"layers", 1}, {"hidden", 16}, {"heads", 2}, {"ffn", 32}, {"seq_len", 8},
                    {"vocab", 30}, {"positions", 16}}),
      Spec("vit", {{"layers", 1}, {"hidden", 16}, {"heads", 2}, {"ffn", 32}, {"patch", 4},
                   {"image", 8}, {"classes", 3}}),
      Spec("resnet_imagenet", {{"depth", 18}, {"image", 32}, {"classes", 5}}),
      Spec("resnet_imagenet", {{"depth", 50}, {"image", 32}, {"classes", 5}}, 2),
      Spec("dlrm", {{"tables", 2}, {"rows", 50}, {"emb_dim", 4}, {"dense", 5},
                    {"bottom_layers", 1}, {"bottom_width", 8}, {"top_layers", 1},
                    {"top_width", 8}, {"lookups", 3}}),
      Spec("dlrm", {{"tables", 3}, {"rows", 100}, {"emb_dim", 8}, {"dense", 7},
                    {"bottom_layers", 3}, {"bottom_width", 16}, {"top_layers", 2},
                    {"top_width", 16}, {"lookups", 1}}),
  };
}

Proxy MustMake(const WorkloadSpec& spec, ProxyOptions options = {}) {
  auto proxy = MakeProxy(spec, options);
  EXPECT_TRUE(proxy.ok()) << spec.Key() << ": " << proxy.status();
  return proxy.ok() ? *std::move(proxy) : Proxy{};
}

TEST(ProxyTest, ParameterCountsMatchTheDescriptor) {
  for (const WorkloadSpec& spec : SmallSpecs()) {
    Proxy proxy = MustMake(spec);
    ASSERT_TRUE(proxy.model) << spec.Key();
    double numel = 0;
    const std::vector<torch::Tensor> params = proxy.model->Parameters();
    for (const torch::Tensor& p : params) numel += static_cast<double>(p.numel());
    EXPECT_EQ(numel, proxy.descriptor.parameters) << spec.Key();
    const Operation* step = nullptr;
    for (const Operation& op : proxy.descriptor.operations) {
      if (op.op_class == OpClass::kOptimizer) step = &op;
    }
    ASSERT_NE(step, nullptr) << spec.Key();
    EXPECT_EQ(static_cast<int64_t>(params.size()), step->shape.at("tensors")) << spec.Key();
  }
  // The defaults too (built, never run): the descriptor tests check them by hand.
  for (const char* family : {"lstm", "cnn", "stgcn", "resnet", "transformer", "dlrm"}) {
    Proxy proxy = MustMake(Spec(family, {}, 1));
    double numel = 0;
    for (const torch::Tensor& p : proxy.model->Parameters()) numel += p.numel();
    EXPECT_EQ(numel, proxy.descriptor.parameters) << family;
  }
}

// (out, in) of a weight-gradient GEMM / conv as the descriptor states it.
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

TEST(ProxyTest, LinearAndConvLayersMatchTheDecomposition) {
  for (const WorkloadSpec& spec : SmallSpecs()) {
    Proxy proxy = MustMake(spec);
    Pairs described_linear, described_conv, built_linear, built_conv;
    auto ends_with = [](const std::string& s, const std::string& suffix) {
      return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(),
                                                    suffix) == 0;
    };
    for (const Operation& op : proxy.descriptor.operations) {
      if (!ends_with(op.name, ".dw")) continue;  // one per weight-bearing layer
      if (op.op_class == OpClass::kGemm) {
        described_linear.emplace_back(op.shape.at("m"), op.shape.at("n"));
      } else if (op.op_class == OpClass::kConv) {
        described_conv.emplace_back(op.shape.at("channels_out"), op.shape.at("channels_in"));
      }
    }
    for (const auto& module : proxy.model->module()->modules()) {
      if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(module.get())) {
        built_linear.emplace_back(linear->weight.size(0), linear->weight.size(1));
      } else if (auto* conv1d = dynamic_cast<torch::nn::Conv1dImpl*>(module.get())) {
        built_conv.emplace_back(conv1d->weight.size(0), conv1d->weight.size(1));
      } else if (auto* conv2d = dynamic_cast<torch::nn::Conv2dImpl*>(module.get())) {
        built_conv.emplace_back(conv2d->weight.size(0), conv2d->weight.size(1));
      }
    }
    for (Pairs* pairs : {&described_linear, &described_conv, &built_linear, &built_conv}) {
      std::sort(pairs->begin(), pairs->end());
    }
    EXPECT_EQ(built_linear, described_linear) << spec.Key();
    EXPECT_EQ(built_conv, described_conv) << spec.Key();
  }
}

// Every Linear of every proxy is a FusedLinear, which runs ATen's linear:
// for a rank-3 input the bias is part of the GEMM (one addmm, its output
// viewed back), not a second pass over the output as LibTorch's
// LinearImpl::forward adds it; the numbers are the same.
TEST(ProxyTest, LinearLayersAddTheBiasInsideTheGemm) {
  for (const WorkloadSpec& spec : SmallSpecs()) {
    Proxy proxy = MustMake(spec);
    for (const auto& module : proxy.model->module()->modules()) {
      if (dynamic_cast<torch::nn::LinearImpl*>(module.get()) != nullptr) {
        EXPECT_NE(dynamic_cast<FusedLinearImpl*>(module.get()), nullptr)
            << spec.Key() << ": " << module->name();
      }
    }
  }
  FusedLinear fused(4, 3);
  torch::nn::Linear unfused(4, 3);
  {
    torch::NoGradGuard no_grad;
    unfused->weight.copy_(fused->weight);
    unfused->bias.copy_(fused->bias);
  }
  const torch::Tensor x = torch::randn({2, 5, 4});
  const torch::Tensor y = fused->forward(x);
  EXPECT_TRUE(torch::allclose(y, unfused->forward(x), 1e-5, 1e-6));
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_NE(y.grad_fn()->name(), "AddBackward0");
  EXPECT_EQ(unfused->forward(x).grad_fn()->name(), "AddBackward0");
}

TEST(ProxyTest, TrainingStepsGiveFiniteLoss) {
  for (const WorkloadSpec& spec : SmallSpecs()) {
    Proxy proxy = MustMake(spec);
    proxy.model->Train(true);
    torch::optim::Adam adam(proxy.model->Parameters(), torch::optim::AdamOptions(1e-3));
    for (int step = 0; step < 2; ++step) {
      HostBatch batch = proxy.data->Next();
      ASSERT_EQ(batch.inputs.size(), spec.family == "dlrm" ? 2u : 1u);
      torch::Tensor output = proxy.model->Forward(batch.inputs);
      EXPECT_EQ(output.size(0), spec.batch_size) << spec.Key();
      torch::Tensor loss = proxy.model->Loss(output, batch.target);
      ASSERT_EQ(loss.numel(), 1);
      EXPECT_TRUE(std::isfinite(loss.item<float>())) << spec.Key();
      adam.zero_grad();
      loss.backward();
      adam.step();
    }
    proxy.model->Train(false);
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(torch::isfinite(proxy.model->Forward(proxy.data->Next().inputs)).all().item<bool>())
        << spec.Key();
  }
}

bool SameBatch(const HostBatch& a, const HostBatch& b) {
  if (a.inputs.size() != b.inputs.size() || !torch::equal(a.target, b.target)) return false;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    if (!torch::equal(a.inputs[i], b.inputs[i])) return false;
  }
  return true;
}

TEST(ProxyTest, DataIsDeterministicBySeedAndRepeatsEveryEpoch) {
  for (const WorkloadSpec& spec : SmallSpecs()) {
    ProxyOptions options;
    options.seed = 7;
    options.samples_per_epoch = 2 * spec.batch_size;
    Proxy a = MustMake(spec, options);
    Proxy b = MustMake(spec, options);
    const HostBatch first = a.data->Next();
    EXPECT_TRUE(SameBatch(first, b.data->Next())) << spec.Key();
    const HostBatch second = a.data->Next();
    EXPECT_FALSE(SameBatch(first, second)) << spec.Key();
    EXPECT_TRUE(SameBatch(first, a.data->Next())) << spec.Key() << ": epoch 2 differs";
    // Same seed, same weights.
    auto pa = a.model->Parameters(), pb = b.model->Parameters();
    for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << spec.Key();

    options.seed = 8;
    Proxy c = MustMake(spec, options);
    EXPECT_FALSE(SameBatch(first, c.data->Next())) << spec.Key();
  }
}

TEST(ProxyTest, BatchesHaveTheDocumentedShapesAndRanges) {
  auto resnet = MustMake(Spec("resnet", {{"blocks", 1}, {"image", 8}, {"classes", 3}}, 16));
  HostBatch images = resnet.data->Next();
  EXPECT_EQ(images.inputs[0].sizes(), torch::IntArrayRef({16, 3, 8, 8}));
  EXPECT_EQ(images.target.scalar_type(), torch::kInt64);
  EXPECT_LT(images.target.max().item<int64_t>(), 3);
  EXPECT_GE(images.target.min().item<int64_t>(), 0);

  auto transformer = MustMake(Spec("transformer", {{"layers", 1}, {"hidden", 8}, {"heads", 2},
                                                   {"seq_len", 6}, {"vocab", 20}}));
  HostBatch tokens = transformer.data->Next();
  EXPECT_EQ(tokens.inputs[0].sizes(), torch::IntArrayRef({4, 6}));
  EXPECT_LT(tokens.inputs[0].max().item<int64_t>(), 20);
  EXPECT_GE(tokens.inputs[0].min().item<int64_t>(), 0);

  auto decoder = MustMake(Spec("decoder", {{"layers", 1}, {"hidden", 8}, {"heads", 2},
                                           {"seq_len", 6}, {"vocab", 20}, {"positions", 6}}));
  HostBatch text = decoder.data->Next();
  EXPECT_EQ(text.inputs[0].sizes(), torch::IntArrayRef({4, 6}));
  EXPECT_EQ(text.target.sizes(), torch::IntArrayRef({4, 6}));
  EXPECT_LT(text.target.max().item<int64_t>(), 20);
  // The target is the next token.
  EXPECT_TRUE(torch::equal(text.inputs[0].slice(1, 1), text.target.slice(1, 0, 5)));

  auto dlrm = MustMake(Spec("dlrm", {{"tables", 3}, {"rows", 10}, {"lookups", 2}, {"dense", 5}}));
  HostBatch clicks = dlrm.data->Next();
  EXPECT_EQ(clicks.inputs[0].sizes(), torch::IntArrayRef({4, 5}));
  EXPECT_EQ(clicks.inputs[1].sizes(), torch::IntArrayRef({4, 3, 2}));
  EXPECT_LT(clicks.inputs[1].max().item<int64_t>(), 10);
  EXPECT_EQ(clicks.target.scalar_type(), torch::kFloat32);

  auto lstm = MustMake(Spec("lstm", {{"nodes", 3}, {"seq_len", 4}, {"horizon", 2}}, 2));
  HostBatch windows = lstm.data->Next();
  EXPECT_EQ(windows.inputs[0].sizes(), torch::IntArrayRef({2, 4, 3}));
  EXPECT_EQ(windows.target.sizes(), torch::IntArrayRef({2, 2, 3}));
  EXPECT_LE(windows.inputs[0].abs().max().item<float>(), 1.0f);
  // Consecutive samples are windows one step apart.
  EXPECT_TRUE(torch::equal(windows.inputs[0][0].slice(0, 1), windows.inputs[0][1].slice(0, 0, 3)));
}

TEST(ProxyTest, RejectsBadSpecs) {
  WorkloadSpec gemm = Spec("gemm", {});
  gemm.kind = WorkloadKind::kOperation;
  EXPECT_EQ(MakeProxy(gemm, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeProxy(Spec("lstm", {{"hidden", 0}}), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeProxy(Spec("lstm", {}, 0), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  ProxyOptions no_epoch;
  no_epoch.samples_per_epoch = 0;
  EXPECT_EQ(MakeProxy(Spec("lstm", {}), no_epoch).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OscillatorNetworkTest, AdjacencyIsSymmetricWithSelfLoops) {
  OscillatorNetwork system(10, 3);
  const std::vector<float> a = system.NormalizedAdjacency();
  for (int i = 0; i < 10; ++i) {
    EXPECT_GT(a[i * 10 + i], 0);
    for (int j = 0; j < 10; ++j) EXPECT_FLOAT_EQ(a[i * 10 + j], a[j * 10 + i]);
  }
  const double r = system.OrderParameter();
  EXPECT_GE(r, 0);
  EXPECT_LE(r, 1);
}

}  // namespace
}  // namespace perfcast::models::torch_proxy
