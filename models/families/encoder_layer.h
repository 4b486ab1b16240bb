// The Transformer encoder layer shared by the transformer, bert and vit
// families: fused QKV projection, attention, output projection, GELU
// feed-forward, two residual adds and two LayerNorms. Internal to
// perfcast_models.
#ifndef PERFCAST_MODELS_FAMILIES_ENCODER_LAYER_H_
#define PERFCAST_MODELS_FAMILIES_ENCODER_LAYER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "models/iteration_builder.h"
#include "models/workload.h"

namespace perfcast::models::families {

// GELU (erf form) per element: forward and backward FLOPs, roughly.
inline constexpr double kGeluFlops = 8;

struct EncoderLayerShape {
  double tokens = 0;  // batch x sequence length
  int64_t seq_len = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t ffn = 0;
  // Unfused matmul-softmax-matmul (the transformer proxy) or fused
  // scaled-dot-product attention followed by the copy that merges the heads
  // (BERT, ViT).
  bool fused_attention = true;
  // Pre-LN (ViT: LN before attention and before the feed-forward) or post-LN
  // (BERT: LN after each residual add).
  bool pre_norm = false;
  // Name of the feed-forward block in operation names: "ffn" or "mlp".
  absl::string_view ffn_name = "ffn";
};

// Adds one encoder layer's operations under `prefix` (e.g. "layer3"), in
// execution order.
void AddEncoderLayer(IterationBuilder& b, const std::string& prefix,
                     const EncoderLayerShape& shape);

// InvalidArgument naming `family` unless the spec's 'heads' divides its
// 'hidden'.
absl::Status CheckHeadsDivideHidden(absl::string_view family, const WorkloadSpec& spec);

}  // namespace perfcast::models::families

#endif  // PERFCAST_MODELS_FAMILIES_ENCODER_LAYER_H_
