// bert: a BERT-style encoder trained with a masked-LM head over every
// position (Hugging Face's BertForMaskedLM, no pooler). Token + learned
// position + token-type embeddings summed, LayerNorm, then `layers` post-LN
// encoder layers:
//   x = LN(x + Out(Attention(QKV(x))));  x = LN(x + Down(GELU(Up(x))))
// with a fused QKV projection and fused (non-causal) scaled-dot-product
// attention. MLM head: Linear(hidden, hidden) + GELU + LayerNorm, then the
// decoder tied to the token embedding with its own bias; cross-entropy over
// the vocabulary at every position.
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "models/architecture.h"
#include "models/families/encoder_layer.h"
#include "models/families/families.h"
#include "models/iteration_builder.h"

namespace perfcast::models::families {
namespace {

absl::Status Check(const WorkloadSpec& spec) {
  RETURN_IF_ERROR(CheckHeadsDivideHidden("bert", spec));
  if (Param(spec, "seq_len") > Param(spec, "positions")) {
    return absl::InvalidArgumentError(
        absl::StrCat("bert: parameter 'seq_len' (", Param(spec, "seq_len"),
                     ") exceeds the position table 'positions' (", Param(spec, "positions"), ")"));
  }
  return absl::OkStatus();
}

WorkloadDescriptor Describe(const WorkloadSpec& spec) {
  const int64_t layers = Param(spec, "layers");
  const int64_t hidden = Param(spec, "hidden");
  const int64_t seq_len = Param(spec, "seq_len");
  const int64_t vocab = Param(spec, "vocab");
  const double batch = static_cast<double>(spec.batch_size);
  const double tokens = batch * seq_len;
  IterationBuilder b(spec);
  b.Embedding("embed.tokens", vocab, hidden, tokens, 1);
  b.Embedding("embed.positions", Param(spec, "positions"), hidden, seq_len, 1);
  b.Embedding("embed.token_types", Param(spec, "type_vocab"), hidden, tokens, 1);
  b.Elementwise("embed.add_types", tokens * hidden, 2, 1);
  b.Elementwise("embed.add_positions", tokens * hidden, 2, 1);
  b.LayerNorm("embed.ln", tokens, hidden);
  const EncoderLayerShape layer{.tokens = tokens,
                                .seq_len = seq_len,
                                .hidden = hidden,
                                .heads = Param(spec, "heads"),
                                .ffn = Param(spec, "ffn")};
  for (int64_t l = 0; l < layers; ++l) AddEncoderLayer(b, absl::StrCat("layer", l), layer);
  b.Linear("mlm.transform", tokens, hidden, hidden, true);
  b.Elementwise("mlm.gelu", tokens * hidden, 1, kGeluFlops);
  b.LayerNorm("mlm.ln", tokens, hidden);
  b.TiedLinear("mlm.decoder", tokens, hidden, vocab, /*bias=*/true);
  b.Loss("loss.cross_entropy", tokens * vocab, vocab);
  // Token ids and MLM targets, int64 each.
  const double input_bytes = 16 * tokens;
  return b.Finish(input_bytes, 2, layers);
}

}  // namespace

FamilyDef BertFamily() {
  return {{"bert",
           WorkloadKind::kModel,
           "BERT-style encoder with a masked-LM head over every position (BertForMaskedLM): "
           "token + position + token-type embeddings, post-LN encoder layers (fused QKV, "
           "fused attention, GELU FFN), transform + LayerNorm, decoder tied to the token "
           "embedding; cross-entropy over the vocabulary. Defaults: BERT-base uncased.",
           {{"layers", 12, 1, 512, "encoder layers (inner modules)"},
            {"hidden", 768, 1, 65536, "model width"},
            {"heads", 12, 1, 1024, "attention heads; must divide hidden"},
            {"ffn", 3072, 1, 262144, "feed-forward inner width (intermediate_size)"},
            {"seq_len", 512, 1, 131072, "tokens per sample"},
            {"vocab", 30522, 2, 2097152, "token vocabulary"},
            {"positions", 512, 1, 1048576, "rows of the position table (max_position_embeddings)"},
            {"type_vocab", 2, 1, 1024, "token types (type_vocab_size)"}}},
          &Check,
          &Describe};
}

}  // namespace perfcast::models::families
