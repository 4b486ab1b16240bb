#include "models/families/encoder_layer.h"

#include "absl/strings/str_cat.h"
#include "models/architecture.h"

namespace perfcast::models::families {

void AddEncoderLayer(IterationBuilder& b, const std::string& prefix,
                     const EncoderLayerShape& shape) {
  const double tokens = shape.tokens;
  const int64_t hidden = shape.hidden;
  const std::string ffn = absl::StrCat(prefix, ".", shape.ffn_name);
  if (shape.pre_norm) b.LayerNorm(prefix + ".ln1", tokens, hidden);
  b.Linear(prefix + ".attn.qkv", tokens, hidden, 3 * hidden, true);
  if (shape.fused_attention) {
    b.FusedAttention(prefix + ".attn.core", shape.heads, shape.seq_len, hidden / shape.heads,
                     /*causal=*/false);
    b.Copy(prefix + ".attn.merge_heads", tokens * hidden, b.act_bytes());
  } else {
    b.Attention(prefix + ".attn.core", shape.heads, shape.seq_len, hidden / shape.heads);
  }
  b.Linear(prefix + ".attn.out", tokens, hidden, hidden, true);
  b.Elementwise(prefix + ".attn.residual", tokens * hidden, 2, 1, /*backward=*/false);
  b.LayerNorm(prefix + (shape.pre_norm ? ".ln2" : ".ln1"), tokens, hidden);
  b.Linear(ffn + ".up", tokens, hidden, shape.ffn, true);
  b.Elementwise(ffn + ".gelu", tokens * shape.ffn, 1, kGeluFlops);
  b.Linear(ffn + ".down", tokens, shape.ffn, hidden, true);
  b.Elementwise(ffn + ".residual", tokens * hidden, 2, 1, /*backward=*/false);
  if (!shape.pre_norm) b.LayerNorm(prefix + ".ln2", tokens, hidden);
}

absl::Status CheckHeadsDivideHidden(absl::string_view family, const WorkloadSpec& spec) {
  if (Param(spec, "hidden") % Param(spec, "heads") != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(family, ": parameter 'hidden' (", Param(spec, "hidden"),
                     ") must be divisible by 'heads' (", Param(spec, "heads"), ")"));
  }
  return absl::OkStatus();
}

}  // namespace perfcast::models::families
