// decoder: a decoder-only language model in the GPT-2 / GPT-3 / OPT and the
// Llama / Mistral styles, trained on next-token prediction over every
// position. Token embedding (vocab x hidden), plus a learned position table
// (`positions` rows) or rotary position embedding (positions = 0), then
// `layers` pre-norm blocks:
//   x = x + Out(CausalAttention(Rope(QKV(Norm(x)))));  x = x + Mlp(Norm(x))
// with a fused QKV projection to heads + 2 x kv_heads heads (grouped-query
// attention repeats each K/V head heads / kv_heads times), fused causal
// scaled-dot-product attention, and an MLP that is either Down(Act(Up(x)))
// (GELU in GPT-2, ReLU in OPT: the same cost) or SwiGLU
// Down(SiLU(Gate(x)) * Up(x)) with gate and up fused in one projection.
// Final norm, LM head over every position (tied to the token embedding or
// not), cross-entropy over the vocabulary.
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "models/architecture.h"
#include "models/families/families.h"
#include "models/iteration_builder.h"

namespace perfcast::models::families {
namespace {

// GELU (tanh or erf form) per element, forward and backward, roughly.
constexpr double kGeluFlops = 8;
// SiLU per element: x * sigmoid(x).
constexpr double kSiluFlops = 5;

absl::Status Check(const WorkloadSpec& spec) {
  const int64_t hidden = Param(spec, "hidden");
  const int64_t heads = Param(spec, "heads");
  const int64_t kv_heads = Param(spec, "kv_heads");
  if (hidden % heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("decoder: parameter 'hidden' (", hidden,
                                                   ") must be divisible by 'heads' (", heads,
                                                   ")"));
  }
  if (kv_heads > 0 && heads % kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("decoder: parameter 'kv_heads' (", kv_heads,
                                                   ") must divide 'heads' (", heads, ")"));
  }
  const int64_t positions = Param(spec, "positions");
  if (positions > 0 && Param(spec, "seq_len") > positions) {
    return absl::InvalidArgumentError(
        absl::StrCat("decoder: parameter 'seq_len' (", Param(spec, "seq_len"),
                     ") exceeds the learned position table 'positions' (", positions, ")"));
  }
  if (positions == 0 && (hidden / heads) % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "decoder: rotary positions (positions = 0) need an even head width; 'hidden' / "
        "'heads' = ",
        hidden / heads));
  }
  return absl::OkStatus();
}

// Rotary embedding of one [tokens, heads, head_dim] tensor as written out in
// Hugging Face's Llama: x * cos + cat(-x2, x1) * sin.
void Rope(IterationBuilder& b, const std::string& name, double numel) {
  b.Elementwise(name + ".neg", numel / 2, 1, 1);
  b.Copy(name + ".cat", numel, b.act_bytes());
  b.Elementwise(name + ".mul_cos", numel, 2, 1);
  b.Elementwise(name + ".mul_sin", numel, 2, 1);
  b.Elementwise(name + ".add", numel, 2, 1, /*backward=*/false);
}

void Norm(IterationBuilder& b, bool rms, const std::string& name, double rows, int64_t cols) {
  if (rms) {
    b.RmsNorm(name, rows, cols);
  } else {
    b.LayerNorm(name, rows, cols);
  }
}

WorkloadDescriptor Describe(const WorkloadSpec& spec) {
  const int64_t layers = Param(spec, "layers");
  const int64_t hidden = Param(spec, "hidden");
  const int64_t heads = Param(spec, "heads");
  const int64_t kv_heads = Param(spec, "kv_heads") > 0 ? Param(spec, "kv_heads") : heads;
  const int64_t ffn = Param(spec, "ffn");
  const int64_t seq_len = Param(spec, "seq_len");
  const int64_t vocab = Param(spec, "vocab");
  const int64_t positions = Param(spec, "positions");
  const bool rms = Param(spec, "norm") == 1;
  const bool swiglu = Param(spec, "mlp") == 1;
  const bool bias = Param(spec, "bias") == 1;
  const bool tied = Param(spec, "tied") == 1;
  const int64_t head_dim = hidden / heads;
  const double batch = static_cast<double>(spec.batch_size);
  const double tokens = batch * seq_len;
  IterationBuilder b(spec);
  b.Embedding("embed.tokens", vocab, hidden, tokens, 1);
  if (positions > 0) {
    b.Embedding("embed.positions", positions, hidden, seq_len, 1);
    // Broadcast add: its backward sums the positional gradient over the batch.
    b.Elementwise("embed.add", tokens * hidden, 2, 1);
  }
  for (int64_t l = 0; l < layers; ++l) {
    const std::string layer = absl::StrCat("layer", l);
    Norm(b, rms, layer + ".norm1", tokens, hidden);
    b.Linear(layer + ".attn.qkv", tokens, hidden, (heads + 2 * kv_heads) * head_dim, bias);
    if (positions == 0) {
      Rope(b, layer + ".attn.rope_q", tokens * heads * head_dim);
      Rope(b, layer + ".attn.rope_k", tokens * kv_heads * head_dim);
    }
    if (kv_heads != heads) {
      b.Copy(layer + ".attn.repeat_k", tokens * heads * head_dim, b.act_bytes());
      b.Copy(layer + ".attn.repeat_v", tokens * heads * head_dim, b.act_bytes());
    }
    b.FusedAttention(layer + ".attn.core", heads, seq_len, head_dim, /*causal=*/true);
    // [batch, heads, seq, head_dim] back to [batch, seq, hidden].
    b.Copy(layer + ".attn.merge_heads", tokens * hidden, b.act_bytes());
    b.Linear(layer + ".attn.out", tokens, hidden, hidden, bias);
    b.Elementwise(layer + ".attn.residual", tokens * hidden, 2, 1, /*backward=*/false);
    Norm(b, rms, layer + ".norm2", tokens, hidden);
    if (swiglu) {
      b.Linear(layer + ".mlp.gate_up", tokens, hidden, 2 * ffn, bias);
      b.Elementwise(layer + ".mlp.silu", tokens * ffn, 1, kSiluFlops);
      b.Elementwise(layer + ".mlp.mul", tokens * ffn, 2, 1);
    } else {
      b.Linear(layer + ".mlp.up", tokens, hidden, ffn, bias);
      b.Elementwise(layer + ".mlp.act", tokens * ffn, 1, kGeluFlops);
    }
    b.Linear(layer + ".mlp.down", tokens, ffn, hidden, bias);
    b.Elementwise(layer + ".mlp.residual", tokens * hidden, 2, 1, /*backward=*/false);
  }
  Norm(b, rms, "final_norm", tokens, hidden);
  if (tied) {
    b.TiedLinear("lm_head", tokens, hidden, vocab, /*bias=*/false);
  } else {
    b.Linear("lm_head", tokens, hidden, vocab, /*bias=*/false);
  }
  b.Loss("loss.cross_entropy", tokens * vocab, vocab);
  // Token ids and next-token targets, int64 each.
  const double input_bytes = 16 * tokens;
  return b.Finish(input_bytes, 2, layers);
}

}  // namespace

FamilyDef DecoderFamily() {
  return {{"decoder",
           WorkloadKind::kModel,
           "Decoder-only language model (GPT-2/GPT-3/OPT or Llama/Mistral style): token "
           "embedding, learned or rotary positions, pre-norm blocks (LayerNorm or RMSNorm, "
           "fused QKV with grouped-query heads, fused causal attention, GELU MLP or SwiGLU), "
           "final norm, LM head over every position (tied or untied); next-token "
           "cross-entropy over the vocabulary. Defaults: GPT-2 small.",
           {{"layers", 12, 1, 512, "decoder blocks (inner modules)"},
            {"hidden", 768, 1, 65536, "model width"},
            {"heads", 12, 1, 1024, "query heads; must divide hidden"},
            {"kv_heads", 0, 0, 1024,
             "key/value heads (grouped-query attention); must divide heads; 0: as many as heads"},
            {"ffn", 3072, 1, 262144, "MLP inner width (intermediate_size)"},
            {"seq_len", 1024, 1, 131072, "tokens per sample"},
            {"vocab", 50257, 2, 2097152, "token vocabulary"},
            {"positions", 1024, 0, 1048576,
             "rows of the learned position table (OPT: max positions + 2); 0: rotary"},
            {"norm", 0, 0, 1, "0: LayerNorm (weight and bias), 1: RMSNorm (weight)"},
            {"mlp", 0, 0, 1, "0: up, GELU/ReLU, down; 1: SwiGLU (gate, up, down)"},
            {"bias", 1, 0, 1, "1: linear layers have biases (GPT-2, OPT); 0: none (Llama)"},
            {"tied", 1, 0, 1, "1: LM head shares the token embedding; 0: its own weight"}}},
          &Check,
          &Describe};
}

}  // namespace perfcast::models::families
