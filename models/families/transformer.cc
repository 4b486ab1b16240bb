// transformer: a BERT-like encoder classifier. Token embedding (vocab x
// hidden) + learned positional embedding (seq_len x hidden), LayerNorm, then
// `layers` post-LN encoder layers:
//   x = LN(x + Out(Attention(QKV(x))));  x = LN(x + Down(GELU(Up(x))))
// with a fused QKV projection and unfused matmul-softmax-matmul attention
// (no dropout). Pooler: Linear(hidden, hidden) + tanh on the first token,
// then Linear(hidden, classes); cross-entropy.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "models/architecture.h"
#include "models/families/encoder_layer.h"
#include "models/families/families.h"
#include "models/iteration_builder.h"

namespace perfcast::models::families {
namespace {

absl::Status Check(const WorkloadSpec& spec) { return CheckHeadsDivideHidden("transformer", spec); }

WorkloadDescriptor Describe(const WorkloadSpec& spec) {
  const int64_t layers = Param(spec, "layers");
  const int64_t hidden = Param(spec, "hidden");
  const int64_t seq_len = Param(spec, "seq_len");
  const int64_t vocab = Param(spec, "vocab");
  const int64_t classes = Param(spec, "classes");
  const double batch = static_cast<double>(spec.batch_size);
  const double tokens = batch * seq_len;
  IterationBuilder b(spec);
  b.Embedding("embed.tokens", vocab, hidden, tokens, 1);
  b.Embedding("embed.positions", seq_len, hidden, seq_len, 1);
  // Broadcast add: its backward sums the positional gradient over the batch.
  b.Elementwise("embed.add", tokens * hidden, 2, 1);
  b.LayerNorm("embed.ln", tokens, hidden);
  const EncoderLayerShape layer{.tokens = tokens,
                                .seq_len = seq_len,
                                .hidden = hidden,
                                .heads = Param(spec, "heads"),
                                .ffn = Param(spec, "ffn"),
                                .fused_attention = false};
  for (int64_t l = 0; l < layers; ++l) AddEncoderLayer(b, absl::StrCat("layer", l), layer);
  b.Linear("pooler", batch, hidden, hidden, true);
  b.Elementwise("pooler.tanh", batch * hidden, 1, 4);
  b.Linear("classifier", batch, hidden, classes, true);
  b.Loss("loss.cross_entropy", batch * classes, classes);
  const double input_bytes = 8 * tokens + 8 * batch;
  return b.Finish(input_bytes, 2, layers);
}

}  // namespace

FamilyDef TransformerFamily() {
  return {{"transformer",
           WorkloadKind::kModel,
           "BERT-like encoder classifier: token + learned positional embeddings, post-LN "
           "encoder layers (fused QKV, unfused attention, GELU FFN), tanh pooler on the "
           "first token, linear classifier; cross-entropy.",
           {{"layers", 2, 1, 128, "encoder layers (inner modules)"},
            {"hidden", 256, 1, 16384, "model width"},
            {"heads", 4, 1, 256, "attention heads; must divide hidden"},
            {"ffn", 1024, 1, 65536, "feed-forward inner width"},
            {"seq_len", 128, 1, 16384, "tokens per sample"},
            {"vocab", 8192, 2, 1000000, "token vocabulary"},
            {"classes", 2, 2, 100000, "output classes"}}},
          &Check,
          &Describe};
}

}  // namespace perfcast::models::families
