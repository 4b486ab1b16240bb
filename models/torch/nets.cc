// The proxy networks. Each mirrors, layer by layer, the walk of its family in
// models/families/*.cc: when one changes, so must the other (the proxy tests
// compare parameter counts and the Linear/conv layers with the descriptor).
#include "models/torch/nets.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "models/architecture.h"
#include "models/torch/layers.h"

namespace perfcast::models::torch_proxy {
namespace {

namespace nn = torch::nn;
using torch::Tensor;

// kTokenCrossEntropy: logits [batch, seq, vocab] against targets [batch, seq].
enum class LossKind { kMse, kCrossEntropy, kTokenCrossEntropy, kBce };

// A network taking the inputs of a HostBatch.
class Net : public nn::Module {
 public:
  virtual Tensor Run(const std::vector<Tensor>& inputs) = 0;
  // Moves tensors the module does not register (integer index tables).
  virtual void MoveExtras(torch::Device device) {}
};

class NetProxy final : public ProxyModel {
 public:
  NetProxy(std::shared_ptr<Net> net, LossKind loss) : net_(std::move(net)), loss_(loss) {}

  Tensor Forward(const std::vector<Tensor>& device_inputs) override {
    return net_->Run(device_inputs);
  }
  Tensor Loss(const Tensor& output, const Tensor& target) override {
    switch (loss_) {
      case LossKind::kMse:
        return torch::mse_loss(output, target);
      case LossKind::kCrossEntropy:
        return nn::functional::cross_entropy(output, target);
      case LossKind::kTokenCrossEntropy:
        return nn::functional::cross_entropy(output.flatten(0, 1), target.flatten());
      case LossKind::kBce:
        return torch::binary_cross_entropy_with_logits(output, target);
    }
    return {};
  }
  std::vector<Tensor> Parameters() override { return net_->parameters(); }
  void Train(bool on) override { net_->train(on); }
  void To(torch::Device device, torch::Dtype dtype) override {
    net_->to(device, dtype);
    net_->MoveExtras(device);
  }
  std::shared_ptr<nn::Module> module() override { return net_; }

 private:
  std::shared_ptr<Net> net_;
  LossKind loss_;
};

// ---- lstm ----
class LstmNet final : public Net {
 public:
  explicit LstmNet(const WorkloadSpec& spec)
      : seq_len_(Param(spec, "seq_len")),
        nodes_(Param(spec, "nodes")),
        horizon_(Param(spec, "horizon")) {
    lstm_ = register_module(
        "lstm", nn::LSTM(nn::LSTMOptions(nodes_, Param(spec, "hidden"))
                             .num_layers(Param(spec, "layers"))
                             .batch_first(true)));
    head_ = register_module("head", FusedLinear(Param(spec, "hidden"), nodes_ * horizon_));
  }
  Tensor Run(const std::vector<Tensor>& inputs) override {
    Tensor out = std::get<0>(lstm_->forward(inputs.at(0)));
    return head_->forward(out.select(1, seq_len_ - 1)).view({-1, horizon_, nodes_});
  }

 private:
  int64_t seq_len_, nodes_, horizon_;
  nn::LSTM lstm_{nullptr};
  FusedLinear head_{nullptr};
};

// ---- cnn ----
class CnnNet final : public Net {
 public:
  explicit CnnNet(const WorkloadSpec& spec)
      : nodes_(Param(spec, "nodes")), horizon_(Param(spec, "horizon")) {
    const int64_t channels = Param(spec, "channels");
    const int64_t kernel = Param(spec, "kernel");
    convs_ = register_module("convs", nn::ModuleList());
    for (int64_t l = 0; l < Param(spec, "layers"); ++l) {
      convs_->push_back(nn::Conv1d(
          nn::Conv1dOptions(l == 0 ? nodes_ : channels, channels, kernel).padding(
              (kernel - 1) / 2)));
    }
    head_ = register_module(
        "head", FusedLinear(channels * Param(spec, "seq_len"), nodes_ * horizon_));
  }
  Tensor Run(const std::vector<Tensor>& inputs) override {
    Tensor x = inputs.at(0).transpose(1, 2).contiguous();
    for (const auto& conv : *convs_) x = torch::relu(conv->as<nn::Conv1d>()->forward(x));
    return head_->forward(x.flatten(1)).view({-1, horizon_, nodes_});
  }

 private:
  int64_t nodes_, horizon_;
  nn::ModuleList convs_{nullptr};
  FusedLinear head_{nullptr};
};

// ---- stgcn ----
class StgcnBlock final : public nn::Module {
 public:
  StgcnBlock(int64_t channels_in, int64_t channels, int64_t kernel_t) {
    temporal1_ = register_module(
        "temporal1", nn::Conv2d(nn::Conv2dOptions(channels_in, channels, {kernel_t, 1})));
    theta_ = register_module("theta", nn::Conv2d(nn::Conv2dOptions(channels, channels, 1)));
    temporal2_ = register_module(
        "temporal2", nn::Conv2d(nn::Conv2dOptions(channels, channels, {kernel_t, 1})));
  }
  // x [batch, channels, steps, nodes]; adjacency [nodes, nodes], symmetric.
  Tensor Run(Tensor x, const Tensor& adjacency) {
    x = torch::relu(temporal1_->forward(x));
    x = torch::relu(theta_->forward(torch::matmul(x, adjacency)));
    return torch::relu(temporal2_->forward(x));
  }

 private:
  nn::Conv2d temporal1_{nullptr}, theta_{nullptr}, temporal2_{nullptr};
};

class StgcnNet final : public Net {
 public:
  StgcnNet(const WorkloadSpec& spec, const std::vector<float>& adjacency) {
    const int64_t nodes = Param(spec, "nodes");
    const int64_t channels = Param(spec, "channels");
    const int64_t kernel_t = Param(spec, "kernel_t");
    const int64_t blocks = Param(spec, "blocks");
    // Symmetric, so it is its own transpose: X A^T = X A.
    adjacency_ = register_buffer(
        "adjacency", torch::tensor(adjacency, torch::kFloat32).view({nodes, nodes}).clone());
    for (int64_t b = 0; b < blocks; ++b) {
      blocks_.push_back(register_module(absl::StrCat("block", b),
                                        std::make_shared<StgcnBlock>(b == 0 ? 1 : channels,
                                                                     channels, kernel_t)));
    }
    const int64_t steps = StgcnOutputSteps(Param(spec, "seq_len"), blocks, kernel_t);
    output_ = register_module(
        "output", nn::Conv2d(nn::Conv2dOptions(channels, Param(spec, "horizon"), {steps, 1})));
  }
  Tensor Run(const std::vector<Tensor>& inputs) override {
    Tensor x = inputs.at(0).unsqueeze(1);
    for (auto& block : blocks_) x = block->Run(x, adjacency_);
    return output_->forward(x).squeeze(2);
  }

 private:
  Tensor adjacency_;
  std::vector<std::shared_ptr<StgcnBlock>> blocks_;
  nn::Conv2d output_{nullptr};
};

// ---- resnet ----
class BasicBlock final : public nn::Module {
 public:
  explicit BasicBlock(const ResNetBlockShape& s) {
    auto conv = [](int64_t in, int64_t out, int64_t kernel, int64_t stride) {
      return nn::Conv2d(nn::Conv2dOptions(in, out, kernel)
                            .stride(stride)
                            .padding(kernel / 2)
                            .bias(false));
    };
    conv1_ = register_module("conv1", conv(s.in_channels, s.out_channels, 3, s.stride));
    bn1_ = register_module("bn1", nn::BatchNorm2d(s.out_channels));
    conv2_ = register_module("conv2", conv(s.out_channels, s.out_channels, 3, 1));
    bn2_ = register_module("bn2", nn::BatchNorm2d(s.out_channels));
    if (s.downsample) {
      shortcut_conv_ =
          register_module("shortcut_conv", conv(s.in_channels, s.out_channels, 1, s.stride));
      shortcut_bn_ = register_module("shortcut_bn", nn::BatchNorm2d(s.out_channels));
    }
  }
  Tensor forward(const Tensor& x) {
    Tensor y = torch::relu(bn1_->forward(conv1_->forward(x)));
    y = bn2_->forward(conv2_->forward(y));
    Tensor shortcut = shortcut_conv_ ? shortcut_bn_->forward(shortcut_conv_->forward(x)) : x;
    return torch::relu(y + shortcut);
  }

 private:
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, shortcut_conv_{nullptr};
  nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, shortcut_bn_{nullptr};
};

class ResNetNet final : public Net {
 public:
  explicit ResNetNet(const WorkloadSpec& spec) {
    const int64_t width = Param(spec, "width");
    stem_ = register_module(
        "stem", nn::Conv2d(nn::Conv2dOptions(3, width, 3).padding(1).bias(false)));
    stem_bn_ = register_module("stem_bn", nn::BatchNorm2d(width));
    const auto layout = ResNetLayout(Param(spec, "blocks"), width, Param(spec, "image"));
    for (size_t i = 0; i < layout.size(); ++i) {
      blocks_.push_back(
          register_module(absl::StrCat("block", i), std::make_shared<BasicBlock>(layout[i])));
    }
    fc_ = register_module("fc", FusedLinear(layout.back().out_channels, Param(spec, "classes")));
  }
  Tensor Run(const std::vector<Tensor>& inputs) override {
    Tensor x = torch::relu(stem_bn_->forward(stem_->forward(inputs.at(0))));
    for (auto& block : blocks_) x = block->forward(x);
    return fc_->forward(x.mean({2, 3}));
  }

 private:
  nn::Conv2d stem_{nullptr};
  nn::BatchNorm2d stem_bn_{nullptr};
  std::vector<std::shared_ptr<BasicBlock>> blocks_;
  FusedLinear fc_{nullptr};
};

// ---- shared by transformer, decoder, bert, vit ----

// [batch, heads, seq, head_dim] -> [batch, seq, heads * head_dim]: one copy.
Tensor MergeHeads(const Tensor& x) {
  return x.transpose(1, 2).reshape({x.size(0), x.size(2), x.size(1) * x.size(3)});
}

// One Transformer encoder layer: fused QKV projection, attention, output
// projection, GELU feed-forward, two residuals and two LayerNorms. The
// transformer proxy runs unfused matmul-softmax-matmul attention and BERT
// post-LN, as their descriptors say; ViT (torchvision) is pre-LN; BERT and
// ViT run fused scaled-dot-product attention.
struct EncoderLayerOptions {
  bool fused_attention = true;
  bool pre_norm = false;
};

class EncoderLayer final : public nn::Module {
 public:
  EncoderLayer(int64_t hidden, int64_t heads, int64_t ffn, EncoderLayerOptions options)
      : heads_(heads), options_(options) {
    qkv_ = register_module("qkv", FusedLinear(hidden, 3 * hidden));
    out_ = register_module("out", FusedLinear(hidden, hidden));
    ln1_ = register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({hidden})));
    up_ = register_module("up", FusedLinear(hidden, ffn));
    down_ = register_module("down", FusedLinear(ffn, hidden));
    ln2_ = register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({hidden})));
  }
  // x [batch, seq, hidden].
  Tensor forward(const Tensor& x) {
    if (options_.pre_norm) {
      Tensor y = x + out_->forward(Attend(ln1_->forward(x)));
      return y + down_->forward(torch::gelu(up_->forward(ln2_->forward(y))));
    }
    Tensor y = ln1_->forward(x + out_->forward(Attend(x)));
    return ln2_->forward(y + down_->forward(torch::gelu(up_->forward(y))));
  }

 private:
  // Self-attention of x [batch, seq, hidden] before the output projection,
  // heads merged back to [batch, seq, hidden].
  Tensor Attend(const Tensor& x) {
    const int64_t batch = x.size(0), seq = x.size(1), hidden = x.size(2);
    const int64_t head_dim = hidden / heads_;
    if (options_.fused_attention) {
      Tensor qkv = qkv_->forward(x).view({batch, seq, 3 * heads_, head_dim}).transpose(1, 2);
      return MergeHeads(ScaledDotProductAttention(qkv.narrow(1, 0, heads_),
                                                  qkv.narrow(1, heads_, heads_),
                                                  qkv.narrow(1, 2 * heads_, heads_),
                                                  /*causal=*/false));
    }
    // [3, batch, heads, seq, head_dim]
    Tensor qkv = qkv_->forward(x).view({batch, seq, 3, heads_, head_dim}).permute({2, 0, 3, 1, 4});
    Tensor scores = torch::matmul(qkv[0], qkv[1].transpose(-2, -1)) /
                    std::sqrt(static_cast<double>(head_dim));
    Tensor context = torch::matmul(torch::softmax(scores, -1), qkv[2]);
    return context.transpose(1, 2).reshape({batch, seq, hidden});
  }

  int64_t heads_;
  EncoderLayerOptions options_;
  FusedLinear qkv_{nullptr}, out_{nullptr}, up_{nullptr}, down_{nullptr};
  nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
};

// RMSNorm with its weight (see RmsNormForward).
class RmsNormImpl final : public nn::Module {
 public:
  explicit RmsNormImpl(int64_t width) {
    weight_ = register_parameter("weight", torch::ones({width}));
  }
  Tensor forward(const Tensor& x) { return RmsNormForward(x, weight_); }

 private:
  Tensor weight_;
};
TORCH_MODULE(RmsNorm);

// LayerNorm or RMSNorm, as the family's `norm` parameter says.
class NormImpl final : public nn::Module {
 public:
  NormImpl(bool rms, int64_t width) {
    if (rms) {
      rms_ = register_module("rms", RmsNorm(width));
    } else {
      ln_ = register_module("ln", nn::LayerNorm(nn::LayerNormOptions({width})));
    }
  }
  Tensor forward(const Tensor& x) { return rms_ ? rms_->forward(x) : ln_->forward(x); }

 private:
  RmsNorm rms_{nullptr};
  nn::LayerNorm ln_{nullptr};
};
TORCH_MODULE(Norm);

// ---- transformer ----
class TransformerNet final : public Net {
 public:
  explicit TransformerNet(const WorkloadSpec& spec) {
    const int64_t hidden = Param(spec, "hidden");
    tokens_ = register_module("tokens", nn::Embedding(Param(spec, "vocab"), hidden));
    positions_ = register_module("positions", nn::Embedding(Param(spec, "seq_len"), hidden));
    ln_ = register_module("ln", nn::LayerNorm(nn::LayerNormOptions({hidden})));
    for (int64_t l = 0; l < Param(spec, "layers"); ++l) {
      layers_.push_back(register_module(
          absl::StrCat("layer", l),
          std::make_shared<EncoderLayer>(hidden, Param(spec, "heads"), Param(spec, "ffn"),
                                         EncoderLayerOptions{.fused_attention = false})));
    }
    pooler_ = register_module("pooler", FusedLinear(hidden, hidden));
    classifier_ = register_module("classifier", FusedLinear(hidden, Param(spec, "classes")));
  }
  Tensor Run(const std::vector<Tensor>& inputs) override {
    const Tensor& ids = inputs.at(0);
    Tensor positions = torch::arange(ids.size(1), ids.options());
    Tensor x = ln_->forward(tokens_->forward(ids) + positions_->forward(positions));
    for (auto& layer : layers_) x = layer->forward(x);
    return classifier_->forward(torch::tanh(pooler_->forward(x.select(1, 0))));
  }

 private:
  nn::Embedding tokens_{nullptr}, positions_{nullptr};
  nn::LayerNorm ln_{nullptr};
  std::vector<std::shared_ptr<EncoderLayer>> layers_;
  FusedLinear pooler_{nullptr}, classifier_{nullptr};
};


// ---- decoder ----
struct DecoderShape {
  int64_t hidden = 0, heads = 0, kv_heads = 0, ffn = 0;
  bool rope = false, rms = false, swiglu = false, bias = true;
};

// x * cos + rotate_half(x) * sin over the last dimension.
Tensor Rope(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  Tensor rotated = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}

class DecoderBlock final : public nn::Module {
 public:
  explicit DecoderBlock(const DecoderShape& s) : s_(s) {
    const int64_t head_dim = s.hidden / s.heads;
    auto linear = [&](int64_t in, int64_t out) {
      return FusedLinear(nn::LinearOptions(in, out).bias(s.bias));
    };
    norm1_ = register_module("norm1", Norm(s.rms, s.hidden));
    qkv_ = register_module("qkv", linear(s.hidden, (s.heads + 2 * s.kv_heads) * head_dim));
    out_ = register_module("out", linear(s.hidden, s.hidden));
    norm2_ = register_module("norm2", Norm(s.rms, s.hidden));
    up_ = register_module("up", linear(s.hidden, s.swiglu ? 2 * s.ffn : s.ffn));
    down_ = register_module("down", linear(s.ffn, s.hidden));
  }
  // x [batch, seq, hidden]; cos, sin [seq, head_dim] fp32 (undefined
  // without rotary positions).
  Tensor forward(const Tensor& x, const Tensor& cos, const Tensor& sin) {
    const int64_t batch = x.size(0), seq = x.size(1);
    const int64_t head_dim = s_.hidden / s_.heads;
    Tensor qkv = qkv_->forward(norm1_->forward(x))
                     .view({batch, seq, s_.heads + 2 * s_.kv_heads, head_dim})
                     .transpose(1, 2);
    Tensor q = qkv.narrow(1, 0, s_.heads);
    Tensor k = qkv.narrow(1, s_.heads, s_.kv_heads);
    Tensor v = qkv.narrow(1, s_.heads + s_.kv_heads, s_.kv_heads);
    if (s_.rope) {
      // In the activations' dtype (16 bits under autocast), as Hugging Face
      // casts them: fp32 tables would promote q and k.
      const Tensor c = cos.to(q.scalar_type()), s = sin.to(q.scalar_type());
      q = Rope(q, c, s);
      k = Rope(k, c, s);
    }
    if (s_.kv_heads != s_.heads) {
      k = k.repeat_interleave(s_.heads / s_.kv_heads, 1);
      v = v.repeat_interleave(s_.heads / s_.kv_heads, 1);
    }
    Tensor context = ScaledDotProductAttention(q, k, v, /*causal=*/true);
    Tensor y = x + out_->forward(MergeHeads(context));
    Tensor h = up_->forward(norm2_->forward(y));
    h = s_.swiglu ? SwiGlu(h) : torch::gelu(h, "tanh");
    return y + down_->forward(h);
  }

 private:
  DecoderShape s_;
  Norm norm1_{nullptr}, norm2_{nullptr};
  FusedLinear qkv_{nullptr}, out_{nullptr}, up_{nullptr}, down_{nullptr};
};

class DecoderNet final : public Net {
 public:
  explicit DecoderNet(const WorkloadSpec& spec) {
    DecoderShape s;
    s.hidden = Param(spec, "hidden");
    s.heads = Param(spec, "heads");
    s.kv_heads = Param(spec, "kv_heads") > 0 ? Param(spec, "kv_heads") : s.heads;
    s.ffn = Param(spec, "ffn");
    s.rope = Param(spec, "positions") == 0;
    s.rms = Param(spec, "norm") == 1;
    s.swiglu = Param(spec, "mlp") == 1;
    s.bias = Param(spec, "bias") == 1;
    const int64_t vocab = Param(spec, "vocab");
    tokens_ = register_module("tokens", nn::Embedding(vocab, s.hidden));
    if (!s.rope) {
      positions_ =
          register_module("positions", nn::Embedding(Param(spec, "positions"), s.hidden));
    } else {
      // Rotary tables for every position up to seq_len (base 10000).
      const int64_t head_dim = s.hidden / s.heads;
      Tensor inverse = torch::pow(
          10000.0, -torch::arange(0, head_dim, 2, torch::kFloat64) / static_cast<double>(head_dim));
      Tensor angles = torch::outer(torch::arange(Param(spec, "seq_len"), torch::kFloat64), inverse);
      angles = torch::cat({angles, angles}, -1).to(torch::kFloat32);
      cos_ = register_buffer("cos", angles.cos());
      sin_ = register_buffer("sin", angles.sin());
    }
    for (int64_t l = 0; l < Param(spec, "layers"); ++l) {
      blocks_.push_back(
          register_module(absl::StrCat("block", l), std::make_shared<DecoderBlock>(s)));
    }
    final_norm_ = register_module("final_norm", Norm(s.rms, s.hidden));
    if (Param(spec, "tied") == 0) {
      head_ = register_module("head", FusedLinear(nn::LinearOptions(s.hidden, vocab).bias(false)));
    }
  }
  Tensor Run(const std::vector<Tensor>& inputs) override {
    const Tensor& ids = inputs.at(0);
    Tensor x = tokens_->forward(ids);
    if (positions_) {
      x = x + positions_->forward(torch::arange(ids.size(1), ids.options()));
    }
    for (auto& block : blocks_) x = block->forward(x, cos_, sin_);
    x = final_norm_->forward(x);
    return head_ ? head_->forward(x) : torch::linear(x, tokens_->weight);
  }

 private:
  nn::Embedding tokens_{nullptr}, positions_{nullptr};
  Tensor cos_, sin_;
  std::vector<std::shared_ptr<DecoderBlock>> blocks_;
  Norm final_norm_{nullptr};
  FusedLinear head_{nullptr};
};

// ---- bert ----
class BertNet final : public Net {
 public:
  explicit BertNet(const WorkloadSpec& spec) {
    const int64_t hidden = Param(spec, "hidden");
    const int64_t vocab = Param(spec, "vocab");
    tokens_ = register_module("tokens", nn::Embedding(vocab, hidden));
    positions_ = register_module("positions", nn::Embedding(Param(spec, "positions"), hidden));
    token_types_ = register_module("token_types", nn::Embedding(Param(spec, "type_vocab"), hidden));
    ln_ = register_module("ln", nn::LayerNorm(nn::LayerNormOptions({hidden})));
    for (int64_t l = 0; l < Param(spec, "layers"); ++l) {
      layers_.push_back(register_module(
          absl::StrCat("layer", l),
          std::make_shared<EncoderLayer>(hidden, Param(spec, "heads"), Param(spec, "ffn"),
                                         EncoderLayerOptions{})));
    }
    transform_ = register_module("transform", FusedLinear(hidden, hidden));
    transform_ln_ = register_module("transform_ln", nn::LayerNorm(nn::LayerNormOptions({hidden})));
    decoder_bias_ = register_parameter("decoder_bias", torch::zeros({vocab}));
  }
  Tensor Run(const std::vector<Tensor>& inputs) override {
    const Tensor& ids = inputs.at(0);
    // Single-segment inputs: every token type is 0.
    Tensor x = tokens_->forward(ids) + token_types_->forward(torch::zeros_like(ids));
    x = ln_->forward(x + positions_->forward(torch::arange(ids.size(1), ids.options())));
    for (auto& layer : layers_) x = layer->forward(x);
    x = transform_ln_->forward(torch::gelu(transform_->forward(x)));
    return torch::linear(x, tokens_->weight, decoder_bias_);
  }

 private:
  nn::Embedding tokens_{nullptr}, positions_{nullptr}, token_types_{nullptr};
  nn::LayerNorm ln_{nullptr}, transform_ln_{nullptr};
  std::vector<std::shared_ptr<EncoderLayer>> layers_;
  FusedLinear transform_{nullptr};
  Tensor decoder_bias_;
};

// ---- vit ----
class VitNet final : public Net {
 public:
  explicit VitNet(const WorkloadSpec& spec) {
    const int64_t hidden = Param(spec, "hidden");
    const int64_t patch = Param(spec, "patch");
    patch_embed_ = register_module(
        "patch_embed", nn::Conv2d(nn::Conv2dOptions(3, hidden, patch).stride(patch)));
    class_token_ = register_parameter("class_token", torch::zeros({1, 1, hidden}));
    pos_embed_ = register_parameter(
        "pos_embed",
        torch::randn({1, VitTokens(Param(spec, "image"), patch), hidden}) * 0.02);
    for (int64_t l = 0; l < Param(spec, "layers"); ++l) {
      layers_.push_back(register_module(
          absl::StrCat("layer", l),
          std::make_shared<EncoderLayer>(hidden, Param(spec, "heads"), Param(spec, "ffn"),
                                         EncoderLayerOptions{.pre_norm = true})));
    }
    final_ln_ = register_module("final_ln", nn::LayerNorm(nn::LayerNormOptions({hidden})));
    head_ = register_module("head", FusedLinear(hidden, Param(spec, "classes")));
  }
  Tensor Run(const std::vector<Tensor>& inputs) override {
    Tensor patches = patch_embed_->forward(inputs.at(0)).flatten(2).transpose(1, 2);
    Tensor x = torch::cat({class_token_.expand({patches.size(0), 1, patches.size(2)}).to(
                               patches.scalar_type()),
                           patches},
                          1);
    x = x + pos_embed_;
    for (auto& layer : layers_) x = layer->forward(x);
    return head_->forward(final_ln_->forward(x).select(1, 0));
  }

 private:
  nn::Conv2d patch_embed_{nullptr};
  Tensor class_token_, pos_embed_;
  std::vector<std::shared_ptr<EncoderLayer>> layers_;
  nn::LayerNorm final_ln_{nullptr};
  FusedLinear head_{nullptr};
};

// ---- resnet_imagenet ----
nn::Conv2d ImageNetConv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return nn::Conv2d(
      nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

class ImageNetBlock final : public nn::Module {
 public:
  explicit ImageNetBlock(const ImageNetBlockShape& s) : bottleneck_(s.bottleneck) {
    if (s.bottleneck) {
      conv1_ = register_module("conv1", ImageNetConv(s.in_channels, s.mid_channels, 1, 1));
      conv2_ = register_module("conv2", ImageNetConv(s.mid_channels, s.mid_channels, 3, s.stride));
      conv3_ = register_module("conv3", ImageNetConv(s.mid_channels, s.out_channels, 1, 1));
      bn3_ = register_module("bn3", nn::BatchNorm2d(s.out_channels));
    } else {
      conv1_ = register_module("conv1", ImageNetConv(s.in_channels, s.out_channels, 3, s.stride));
      conv2_ = register_module("conv2", ImageNetConv(s.out_channels, s.out_channels, 3, 1));
    }
    bn1_ = register_module("bn1", nn::BatchNorm2d(conv1_->options.out_channels()));
    bn2_ = register_module("bn2", nn::BatchNorm2d(conv2_->options.out_channels()));
    if (s.downsample) {
      downsample_ = register_module("downsample",
                                    ImageNetConv(s.in_channels, s.out_channels, 1, s.stride));
      downsample_bn_ = register_module("downsample_bn", nn::BatchNorm2d(s.out_channels));
    }
  }
  Tensor forward(const Tensor& x) {
    Tensor y = torch::relu(bn1_->forward(conv1_->forward(x)));
    y = bn2_->forward(conv2_->forward(y));
    if (bottleneck_) y = bn3_->forward(conv3_->forward(torch::relu(y)));
    Tensor shortcut = downsample_ ? downsample_bn_->forward(downsample_->forward(x)) : x;
    return torch::relu(y + shortcut);
  }

 private:
  bool bottleneck_;
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr}, downsample_{nullptr};
  nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr}, downsample_bn_{nullptr};
};

class ImageNetResNetNet final : public Net {
 public:
  explicit ImageNetResNetNet(const WorkloadSpec& spec) {
    const ImageNetResNetShape shape =
        ImageNetResNetLayout(Param(spec, "depth"), Param(spec, "image"));
    stem_ = register_module("stem", ImageNetConv(3, 64, 7, 2));
    stem_bn_ = register_module("stem_bn", nn::BatchNorm2d(64));
    for (size_t i = 0; i < shape.blocks.size(); ++i) {
      blocks_.push_back(register_module(absl::StrCat("block", i),
                                        std::make_shared<ImageNetBlock>(shape.blocks[i])));
    }
    fc_ = register_module("fc", FusedLinear(shape.final_channels, Param(spec, "classes")));
  }
  Tensor Run(const std::vector<Tensor>& inputs) override {
    Tensor x = torch::relu(stem_bn_->forward(stem_->forward(inputs.at(0))));
    x = torch::max_pool2d(x, 3, 2, 1);
    for (auto& block : blocks_) x = block->forward(x);
    return fc_->forward(x.mean({2, 3}));
  }

 private:
  nn::Conv2d stem_{nullptr};
  nn::BatchNorm2d stem_bn_{nullptr};
  std::vector<std::shared_ptr<ImageNetBlock>> blocks_;
  FusedLinear fc_{nullptr};
};

// ---- dlrm ----
class DlrmNet final : public Net {
 public:
  explicit DlrmNet(const WorkloadSpec& spec) {
    const int64_t tables = Param(spec, "tables");
    const int64_t dim = Param(spec, "emb_dim");
    const int64_t bottom_layers = Param(spec, "bottom_layers");
    const int64_t top_layers = Param(spec, "top_layers");
    bottom_ = register_module("bottom", nn::ModuleList());
    for (int64_t l = 0; l < bottom_layers; ++l) {
      bottom_->push_back(FusedLinear(l == 0 ? Param(spec, "dense") : Param(spec, "bottom_width"),
                                    l == bottom_layers - 1 ? dim : Param(spec, "bottom_width")));
    }
    tables_ = register_module("tables", nn::ModuleList());
    for (int64_t t = 0; t < tables; ++t) {
      tables_->push_back(
          nn::EmbeddingBag(nn::EmbeddingBagOptions(Param(spec, "rows"), dim).mode(torch::kSum)));
    }
    const int64_t features = DlrmInteractionFeatures(tables, dim);
    top_ = register_module("top", nn::ModuleList());
    for (int64_t l = 0; l < top_layers; ++l) {
      top_->push_back(FusedLinear(l == 0 ? features : Param(spec, "top_width"),
                                 l == top_layers - 1 ? 1 : Param(spec, "top_width")));
    }
    // Strict upper triangle of the (tables+1)^2 dot products, flattened.
    std::vector<int64_t> pairs;
    for (int64_t i = 0; i <= tables; ++i) {
      for (int64_t j = i + 1; j <= tables; ++j) pairs.push_back(i * (tables + 1) + j);
    }
    pairs_ = torch::tensor(pairs, torch::kInt64);
  }
  Tensor Run(const std::vector<Tensor>& inputs) override {
    Tensor x = inputs.at(0);
    for (const auto& layer : *bottom_) x = torch::relu(layer->as<FusedLinear>()->forward(x));
    const Tensor& ids = inputs.at(1);
    std::vector<Tensor> vectors = {x};
    for (size_t t = 0; t < tables_->size(); ++t) {
      vectors.push_back(tables_[t]->as<nn::EmbeddingBag>()->forward(ids.select(1, t)));
    }
    Tensor z = torch::stack(vectors, 1);
    Tensor dots = torch::bmm(z, z.transpose(1, 2)).flatten(1).index_select(1, pairs_);
    Tensor y = torch::cat({x, dots}, 1);
    for (size_t l = 0; l < top_->size(); ++l) {
      y = top_[l]->as<FusedLinear>()->forward(y);
      if (l + 1 < top_->size()) y = torch::relu(y);
    }
    return y.squeeze(1);
  }
  void MoveExtras(torch::Device device) override { pairs_ = pairs_.to(device); }

 private:
  nn::ModuleList bottom_{nullptr}, tables_{nullptr}, top_{nullptr};
  Tensor pairs_;
};

}  // namespace

std::unique_ptr<ProxyModel> BuildNet(const WorkloadSpec& spec,
                                     const std::vector<float>& adjacency) {
  const std::string& f = spec.family;
  if (f == "lstm") return std::make_unique<NetProxy>(std::make_shared<LstmNet>(spec), LossKind::kMse);
  if (f == "cnn") return std::make_unique<NetProxy>(std::make_shared<CnnNet>(spec), LossKind::kMse);
  if (f == "stgcn") {
    return std::make_unique<NetProxy>(std::make_shared<StgcnNet>(spec, adjacency),
                                      LossKind::kMse);
  }
  if (f == "resnet") {
    return std::make_unique<NetProxy>(std::make_shared<ResNetNet>(spec),
                                      LossKind::kCrossEntropy);
  }
  if (f == "transformer") {
    return std::make_unique<NetProxy>(std::make_shared<TransformerNet>(spec),
                                      LossKind::kCrossEntropy);
  }
  if (f == "decoder") {
    return std::make_unique<NetProxy>(std::make_shared<DecoderNet>(spec),
                                      LossKind::kTokenCrossEntropy);
  }
  if (f == "bert") {
    return std::make_unique<NetProxy>(std::make_shared<BertNet>(spec),
                                      LossKind::kTokenCrossEntropy);
  }
  if (f == "vit") {
    return std::make_unique<NetProxy>(std::make_shared<VitNet>(spec), LossKind::kCrossEntropy);
  }
  if (f == "resnet_imagenet") {
    return std::make_unique<NetProxy>(std::make_shared<ImageNetResNetNet>(spec),
                                      LossKind::kCrossEntropy);
  }
  if (f == "dlrm") return std::make_unique<NetProxy>(std::make_shared<DlrmNet>(spec), LossKind::kBce);
  return nullptr;
}

}  // namespace perfcast::models::torch_proxy
