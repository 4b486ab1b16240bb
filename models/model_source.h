// The user's own description of a model, resolved to a perfcast family and
// its parameters: a Hugging Face `config.json` (model_type gpt2, opt, llama,
// mistral, bert) or a torchvision model name (resnet18 ... resnet152,
// vit_b_16 ...). The caller adds batch size, precision, phase and optimizer
// to make a WorkloadSpec.
//
//   // InvalidArgument names the key:
//   ASSIGN_OR_RETURN(ResolvedModel model, FromHuggingFaceConfig(text, /*seq_len=*/512));
//   WorkloadSpec spec;
//   spec.family = model.family;
//   spec.params = model.params;
//
// Thread-safe: all functions are pure.
#ifndef PERFCAST_MODELS_MODEL_SOURCE_H_
#define PERFCAST_MODELS_MODEL_SOURCE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/descriptor.h"

namespace perfcast::models {

// A resolved model: family and architecture parameters, already checked
// against the family (models::NormalizeSpec accepts them with any batch).
struct ResolvedModel {
  std::string family;
  std::map<std::string, int64_t> params;
  // Where it came from, e.g. "hf:llama" or "torchvision:resnet50".
  std::string source;
};

// Reads the text of a Hugging Face config.json. `seq_len`: tokens per
// sample; 0 takes the model's maximum positions. Errors (InvalidArgument,
// naming the config key): malformed JSON, an unknown or missing model_type,
// a missing or non-integer key, heads that do not divide the width,
// seq_len beyond the model's positions, architecture variants the families
// do not describe (OPT with word_embed_proj_dim != hidden_size, post-LN OPT,
// Llama with attention_bias != mlp_bias).
absl::StatusOr<ResolvedModel> FromHuggingFaceConfig(absl::string_view json_text, int64_t seq_len);

// torchvision's name of an ImageNet classifier: resnet18, resnet34, resnet50,
// resnet101, resnet152, vit_b_16, vit_b_32, vit_l_16, vit_l_32, vit_h_14.
// `image`: height and width in pixels, 0 for 224. Errors (InvalidArgument):
// an unknown name (the message lists the known ones), an image smaller than
// the network's stride or, for a ViT, not a multiple of its patch.
absl::StatusOr<ResolvedModel> FromTorchvisionName(absl::string_view name, int64_t image);

// The names FromTorchvisionName accepts, in a stable order.
const std::vector<std::string>& TorchvisionNames();

// Where a described model's own implementation runs differently from the
// family perfcast describes, measured against that implementation on the
// same machine (data/README.md, "Where the plain loop's time goes"). The
// answer prices them (ImplementationEffectsOf); the caveats say why.
enum class ModelOrigin { kHuggingFace, kTorchvision };

// One sentence per difference ImplementationEffectsOf prices for a model of
// `family` described through `origin`, run with autocast (bf16/fp16) or not,
// training or inference; none where the two run alike (e.g. torchvision's
// ResNets, a ViT in fp32 inference).
std::vector<std::string> ImplementationCaveats(ModelOrigin origin, absl::string_view family,
                                               bool autocast, bool train);

// The same differences as the pricing takes them (a descriptor's
// `implementation`): one host sync per forward for Hugging Face's decoders,
// the attention slow path for torchvision's ViT in training or under
// autocast, heavier Python dispatch for Hugging Face's BERT; none elsewhere.
ImplementationEffects ImplementationEffectsOf(ModelOrigin origin, absl::string_view family,
                                              bool autocast, bool train);

}  // namespace perfcast::models

#endif  // PERFCAST_MODELS_MODEL_SOURCE_H_
