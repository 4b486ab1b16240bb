#include "models/model_source.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/architecture.h"
#include "models/descriptor.h"
#include "models/workload.h"

namespace perfcast::models {
namespace {

using Json = nlohmann::json;

constexpr int64_t kDefaultImage = 224;

// Reads the keys of one config. The first error sticks (later reads return
// placeholders) so that a family reads all its keys, then checks status()
// once; every error names its key.
class ConfigReader {
 public:
  ConfigReader(const Json& config, std::string model_type)
      : config_(config), model_type_(std::move(model_type)) {}

  // A positive integer under the first of `keys` present (older configs use
  // other names); the error names the first key when none is.
  int64_t Int(std::initializer_list<const char*> keys) {
    for (const char* key : keys) {
      auto it = config_.find(key);
      if (it != config_.end() && !it->is_null()) return Value(key, *it);
    }
    Fail(absl::StrCat("missing key '", *keys.begin(), "'"));
    return 1;
  }
  int64_t IntOr(const char* key, int64_t fallback) {
    auto it = config_.find(key);
    return it == config_.end() || it->is_null() ? fallback : Value(key, *it);
  }
  bool BoolOr(const char* key, bool fallback) {
    auto it = config_.find(key);
    if (it == config_.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) {
      Fail(absl::StrCat("key '", key, "' must be true or false, not ", it->dump()));
      return fallback;
    }
    return it->get<bool>();
  }
  // Records `message` unless an earlier error stuck.
  void Fail(absl::string_view message) {
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat("config.json (model_type ", model_type_, "): ", message));
    }
  }
  const absl::Status& status() const { return status_; }

 private:
  int64_t Value(const char* key, const Json& value) {
    if (!value.is_number_integer() || value.get<int64_t>() < 1) {
      Fail(absl::StrCat("key '", key, "' must be a positive integer, not ", value.dump()));
      return 1;
    }
    return value.get<int64_t>();
  }

  const Json& config_;
  std::string model_type_;
  absl::Status status_;
};

// The model's sequence length: the user's, or the model's maximum positions.
int64_t SequenceLength(ConfigReader& c, int64_t seq_len, int64_t positions,
                       absl::string_view positions_key) {
  if (seq_len < 0) c.Fail(absl::StrCat("sequence length ", seq_len, " is negative"));
  if (seq_len > positions) {
    c.Fail(absl::StrCat("sequence length ", seq_len, " exceeds '", positions_key, "' (",
                        positions, ")"));
  }
  return seq_len <= 0 ? positions : seq_len;
}

void CheckHeads(ConfigReader& c, int64_t hidden, absl::string_view hidden_key, int64_t heads,
                absl::string_view heads_key) {
  if (hidden % heads == 0) return;
  c.Fail(absl::StrCat("'", hidden_key, "' (", hidden, ") is not divisible by '", heads_key,
                      "' (", heads, ")"));
}

absl::StatusOr<ResolvedModel> Gpt2(ConfigReader& c, int64_t seq_len) {
  const int64_t layers = c.Int({"n_layer"});
  const int64_t hidden = c.Int({"n_embd"});
  const int64_t heads = c.Int({"n_head"});
  const int64_t positions = c.Int({"n_positions", "n_ctx"});
  const int64_t vocab = c.Int({"vocab_size"});
  const int64_t ffn = c.IntOr("n_inner", 4 * hidden);
  const bool tied = c.BoolOr("tie_word_embeddings", true);
  CheckHeads(c, hidden, "n_embd", heads, "n_head");
  const int64_t seq = SequenceLength(c, seq_len, positions, "n_positions");
  if (!c.status().ok()) return c.status();
  return ResolvedModel{"decoder",
                       {{"layers", layers}, {"hidden", hidden}, {"heads", heads},
                        {"kv_heads", 0}, {"ffn", ffn}, {"seq_len", seq}, {"vocab", vocab},
                        {"positions", positions}, {"norm", 0}, {"mlp", 0}, {"bias", 1},
                        {"tied", tied ? 1 : 0}},
                       "hf:gpt2"};
}

absl::StatusOr<ResolvedModel> Opt(ConfigReader& c, int64_t seq_len) {
  const int64_t layers = c.Int({"num_hidden_layers"});
  const int64_t hidden = c.Int({"hidden_size"});
  const int64_t heads = c.Int({"num_attention_heads"});
  const int64_t ffn = c.Int({"ffn_dim"});
  const int64_t positions = c.Int({"max_position_embeddings"});
  const int64_t vocab = c.Int({"vocab_size"});
  const int64_t projection = c.IntOr("word_embed_proj_dim", hidden);
  const bool pre_norm = c.BoolOr("do_layer_norm_before", true);
  const bool bias = c.BoolOr("enable_bias", true);
  const bool tied = c.BoolOr("tie_word_embeddings", true);
  CheckHeads(c, hidden, "hidden_size", heads, "num_attention_heads");
  if (projection != hidden) {
    c.Fail(absl::StrCat("'word_embed_proj_dim' (", projection, ") differs from 'hidden_size' (",
                        hidden, "): embedding projections are not described"));
  }
  if (!pre_norm) c.Fail("'do_layer_norm_before' is false: post-norm OPT is not described");
  const int64_t seq = SequenceLength(c, seq_len, positions, "max_position_embeddings");
  if (!c.status().ok()) return c.status();
  // OPT's learned position table has two extra rows (its padding offset).
  return ResolvedModel{"decoder",
                       {{"layers", layers}, {"hidden", hidden}, {"heads", heads},
                        {"kv_heads", 0}, {"ffn", ffn}, {"seq_len", seq}, {"vocab", vocab},
                        {"positions", positions + 2}, {"norm", 0}, {"mlp", 0},
                        {"bias", bias ? 1 : 0}, {"tied", tied ? 1 : 0}},
                       "hf:opt"};
}

// Llama and Mistral: RMSNorm, rotary positions, SwiGLU, grouped-query heads.
absl::StatusOr<ResolvedModel> Llama(ConfigReader& c, const std::string& model_type,
                                    int64_t seq_len) {
  const int64_t layers = c.Int({"num_hidden_layers"});
  const int64_t hidden = c.Int({"hidden_size"});
  const int64_t heads = c.Int({"num_attention_heads"});
  const int64_t kv_heads = c.IntOr("num_key_value_heads", heads);
  const int64_t ffn = c.Int({"intermediate_size"});
  const int64_t positions = c.Int({"max_position_embeddings"});
  const int64_t vocab = c.Int({"vocab_size"});
  const bool tied = c.BoolOr("tie_word_embeddings", false);
  const bool attention_bias = c.BoolOr("attention_bias", false);
  const bool mlp_bias = c.BoolOr("mlp_bias", false);
  CheckHeads(c, hidden, "hidden_size", heads, "num_attention_heads");
  const int64_t head_dim = c.IntOr("head_dim", hidden / heads);
  if (c.status().ok() && head_dim != hidden / heads) {
    c.Fail(absl::StrCat("'head_dim' (", head_dim,
                        ") differs from 'hidden_size' / 'num_attention_heads' (", hidden / heads,
                        "): decoupled head widths are not described"));
  }
  if (heads % kv_heads != 0) {
    c.Fail(absl::StrCat("'num_key_value_heads' (", kv_heads,
                        ") does not divide 'num_attention_heads' (", heads, ")"));
  }
  if (attention_bias != mlp_bias) {
    c.Fail("'attention_bias' and 'mlp_bias' differ: only all or no biases are described");
  }
  const int64_t seq = SequenceLength(c, seq_len, positions, "max_position_embeddings");
  if (!c.status().ok()) return c.status();
  return ResolvedModel{"decoder",
                       {{"layers", layers}, {"hidden", hidden}, {"heads", heads},
                        {"kv_heads", kv_heads}, {"ffn", ffn}, {"seq_len", seq},
                        {"vocab", vocab}, {"positions", 0}, {"norm", 1}, {"mlp", 1},
                        {"bias", attention_bias ? 1 : 0}, {"tied", tied ? 1 : 0}},
                       absl::StrCat("hf:", model_type)};
}

absl::StatusOr<ResolvedModel> Bert(ConfigReader& c, int64_t seq_len) {
  const int64_t layers = c.Int({"num_hidden_layers"});
  const int64_t hidden = c.Int({"hidden_size"});
  const int64_t heads = c.Int({"num_attention_heads"});
  const int64_t ffn = c.Int({"intermediate_size"});
  const int64_t positions = c.Int({"max_position_embeddings"});
  const int64_t vocab = c.Int({"vocab_size"});
  const int64_t types = c.IntOr("type_vocab_size", 2);
  CheckHeads(c, hidden, "hidden_size", heads, "num_attention_heads");
  const int64_t seq = SequenceLength(c, seq_len, positions, "max_position_embeddings");
  if (!c.status().ok()) return c.status();
  return ResolvedModel{"bert",
                       {{"layers", layers}, {"hidden", hidden}, {"heads", heads},
                        {"ffn", ffn}, {"seq_len", seq}, {"vocab", vocab},
                        {"positions", positions}, {"type_vocab", types}},
                       "hf:bert"};
}

// The resolved parameters must be a valid spec of the family (ranges).
absl::StatusOr<ResolvedModel> Checked(absl::StatusOr<ResolvedModel> model) {
  if (!model.ok()) return model;
  WorkloadSpec spec;
  spec.family = model->family;
  spec.params = model->params;
  absl::StatusOr<WorkloadSpec> normal = NormalizeSpec(spec);
  if (!normal.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(model->source, ": ", normal.status().message()));
  }
  return model;
}

struct TorchvisionModel {
  const char* name;
  const char* family;
  std::map<std::string, int64_t> params;
};

const std::vector<TorchvisionModel>& TorchvisionModels() {
  static const auto* models = new std::vector<TorchvisionModel>{
      {"resnet18", "resnet_imagenet", {{"depth", 18}}},
      {"resnet34", "resnet_imagenet", {{"depth", 34}}},
      {"resnet50", "resnet_imagenet", {{"depth", 50}}},
      {"resnet101", "resnet_imagenet", {{"depth", 101}}},
      {"resnet152", "resnet_imagenet", {{"depth", 152}}},
      {"vit_b_16", "vit", {{"layers", 12}, {"hidden", 768}, {"heads", 12}, {"ffn", 3072}, {"patch", 16}}},
      {"vit_b_32", "vit", {{"layers", 12}, {"hidden", 768}, {"heads", 12}, {"ffn", 3072}, {"patch", 32}}},
      {"vit_l_16", "vit", {{"layers", 24}, {"hidden", 1024}, {"heads", 16}, {"ffn", 4096}, {"patch", 16}}},
      {"vit_l_32", "vit", {{"layers", 24}, {"hidden", 1024}, {"heads", 16}, {"ffn", 4096}, {"patch", 32}}},
      {"vit_h_14", "vit", {{"layers", 32}, {"hidden", 1280}, {"heads", 16}, {"ffn", 5120}, {"patch", 14}}},
  };
  return *models;
}

}  // namespace

absl::StatusOr<ResolvedModel> FromHuggingFaceConfig(absl::string_view json_text, int64_t seq_len) {
  const Json config = Json::parse(json_text.begin(), json_text.end(), nullptr,
                                  /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) {
    return absl::InvalidArgumentError("config.json: not a JSON object");
  }
  auto type = config.find("model_type");
  if (type == config.end() || !type->is_string()) {
    return absl::InvalidArgumentError("config.json: missing key 'model_type'");
  }
  const std::string model_type = type->get<std::string>();
  ConfigReader reader(config, model_type);
  if (model_type == "gpt2") return Checked(Gpt2(reader, seq_len));
  if (model_type == "opt") return Checked(Opt(reader, seq_len));
  if (model_type == "llama" || model_type == "mistral") {
    return Checked(Llama(reader, model_type, seq_len));
  }
  if (model_type == "bert") return Checked(Bert(reader, seq_len));
  return absl::InvalidArgumentError(
      absl::StrCat("config.json: unknown 'model_type' '", model_type,
                   "' (known: gpt2, opt, llama, mistral, bert)"));
}

const std::vector<std::string>& TorchvisionNames() {
  static const auto* names = [] {
    auto* all = new std::vector<std::string>;
    for (const TorchvisionModel& model : TorchvisionModels()) all->push_back(model.name);
    return all;
  }();
  return *names;
}

absl::StatusOr<ResolvedModel> FromTorchvisionName(absl::string_view name, int64_t image) {
  for (const TorchvisionModel& model : TorchvisionModels()) {
    if (model.name != name) continue;
    ResolvedModel resolved{model.family, model.params, absl::StrCat("torchvision:", name)};
    resolved.params["image"] = image == 0 ? kDefaultImage : image;
    const int64_t pixels = resolved.params["image"];
    if (resolved.family == "resnet_imagenet" && pixels < kImageNetResNetStride) {
      return absl::InvalidArgumentError(
          absl::StrCat("torchvision ", name, ": 'image' (", pixels,
                       ") is smaller than the network's stride (", kImageNetResNetStride, ")"));
    }
    if (resolved.family == "vit" && (pixels < model.params.at("patch") ||
                                     pixels % model.params.at("patch") != 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("torchvision ", name, ": 'image' (", pixels,
                       ") must be a multiple of the patch size (", model.params.at("patch"), ")"));
    }
    return Checked(std::move(resolved));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown torchvision model '", name,
                                                 "' (known: ", absl::StrJoin(TorchvisionNames(), ", "),
                                                 ")"));
}

ImplementationEffects ImplementationEffectsOf(ModelOrigin origin, absl::string_view family,
                                              bool autocast, bool train) {
  ImplementationEffects effects;
  effects.attention_slow_path =
      origin == ModelOrigin::kTorchvision && family == "vit" && (autocast || train);
  if (origin == ModelOrigin::kHuggingFace && family == "decoder") {
    effects.host_syncs_per_forward = 1;
  }
  effects.heavy_python_dispatch = origin == ModelOrigin::kHuggingFace && family == "bert";
  return effects;
}

std::vector<std::string> ImplementationCaveats(ModelOrigin origin, absl::string_view family,
                                               bool autocast, bool train) {
  const ImplementationEffects effects = ImplementationEffectsOf(origin, family, autocast, train);
  std::vector<std::string> caveats;
  if (effects.attention_slow_path) {
    // nn.MultiheadAttention's fused fast path runs only in fp32 inference;
    // its slow path transposes to sequence-first, packs Q/K/V with a copy
    // and leaves the residual add strided. GPU time of torchvision's step
    // over perfcast's (timm's layout) on an H100: bf16 inference 1.30-1.38,
    // bf16 training 1.09, fp32 training 1.05.
    const char* extra = autocast ? (train ? "9%" : "30-38%") : "5%";
    caveats.push_back(absl::StrCat(
        "torchvision's nn.MultiheadAttention takes its slow path here (sequence-first copies, "
        "strided residual adds): its GPU work measured ", extra,
        " above the fused attention layout (H100); this answer adds the slow path's time"));
  }
  if (effects.host_syncs_per_forward > 0) {
    // transformers 5.17's causal-mask code reads a device value on the host
    // in every forward (masking_utils.py), so the GPU drains once a step.
    caveats.push_back(
        "Hugging Face's decoders synchronise the host with the GPU once per forward (the causal "
        "mask): where host and GPU time are alike, a Python loop pays part of its host time on "
        "top of the GPU's, which this answer adds (GPT-2 small, batch 4, bf16 inference on an "
        "H100: 13.5 ms a step against the agent's 6.8 ms)");
  }
  if (effects.heavy_python_dispatch) {
    caveats.push_back(
        "Hugging Face's BERT does more Python host work per kernel than perfcast's BERT (nested "
        "modules, view and mask calls): a Python loop is host-bound wherever the GPU is fast "
        "(bf16, tf32), which this answer prices (BERT-large, batch 16, bf16 inference on an "
        "H200: 21.9 ms of host work a step against 5.1 ms of GPU work)");
  }
  return caveats;
}

}  // namespace perfcast::models
