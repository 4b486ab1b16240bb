// vit: a Vision Transformer image classifier as torchvision builds it
// (vit_b_16 and friends) on [batch, 3, image, image] images. Patch embedding
// by a Conv2d(3, hidden, patch, stride patch) with bias, flattened to
// (image / patch)^2 tokens, a learned class token prepended, a learned
// position embedding added, then `layers` pre-LN encoder layers:
//   x = x + Out(Attention(QKV(LN(x))));  x = x + Down(GELU(Up(LN(x))))
// with fused QKV (nn.MultiheadAttention's in_proj) and fused non-causal
// attention, a final LayerNorm, and Linear(hidden, classes) on the class
// token; cross-entropy.
//
// The attention is priced (and the agent runs it) as one QKV GEMM and
// PyTorch's fused attention on [batch, heads, seq, head_dim], timm's layout.
// torchvision's nn.MultiheadAttention runs that way only in fp32 inference
// (its fast path). Under autocast and in training it takes its slow path:
// sequence-first transposes, a copy packing Q/K/V and a strided residual
// add, which costs GPU time this family's step does not spend
// (docs/code-evidence.md).
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
  const int64_t image = Param(spec, "image");
  const int64_t patch = Param(spec, "patch");
  RETURN_IF_ERROR(CheckHeadsDivideHidden("vit", spec));
  if (image < patch || image % patch != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "vit: parameter 'image' (", image, ") must be a multiple of 'patch' (", patch, ")"));
  }
  return absl::OkStatus();
}

WorkloadDescriptor Describe(const WorkloadSpec& spec) {
  const int64_t layers = Param(spec, "layers");
  const int64_t hidden = Param(spec, "hidden");
  const int64_t patch = Param(spec, "patch");
  const int64_t image = Param(spec, "image");
  const int64_t classes = Param(spec, "classes");
  const int64_t seq_len = VitTokens(image, patch);
  const double batch = static_cast<double>(spec.batch_size);
  const double tokens = batch * seq_len;
  IterationBuilder b(spec);
  ConvShape shape;
  shape.batch = spec.batch_size;
  shape.channels_in = 3;
  shape.channels_out = hidden;
  shape.in_h = shape.in_w = image;
  shape.out_h = shape.out_w = image / patch;
  shape.kernel_h = shape.kernel_w = patch;
  shape.stride = patch;
  b.Conv("patch_embed", shape, /*bias=*/true, /*input_grad=*/false);
  // [batch, hidden, side, side] viewed as [batch, patches, hidden], with the
  // class token concatenated in front: one copy.
  b.AddParameters(static_cast<double>(hidden), 1);  // class token
  b.Copy("class_token.cat", tokens * hidden, b.act_bytes());
  b.AddParameters(static_cast<double>(seq_len) * hidden, 1);  // position embedding
  b.Elementwise("pos_embed.add", tokens * hidden, 2, 1);
  const EncoderLayerShape layer{.tokens = tokens,
                                .seq_len = seq_len,
                                .hidden = hidden,
                                .heads = Param(spec, "heads"),
                                .ffn = Param(spec, "ffn"),
                                .pre_norm = true,
                                .ffn_name = "mlp"};
  for (int64_t l = 0; l < layers; ++l) AddEncoderLayer(b, absl::StrCat("layer", l), layer);
  b.LayerNorm("final_ln", tokens, hidden);
  b.Linear("head", batch, hidden, classes, true);
  b.Loss("loss.cross_entropy", batch * classes, classes);
  const double input_bytes = 4.0 * batch * 3 * image * image + 8.0 * batch;
  return b.Finish(input_bytes, 2, layers);
}

}  // namespace

FamilyDef VitFamily() {
  return {{"vit",
           WorkloadKind::kModel,
           "Vision Transformer classifier as torchvision builds it: patch-embedding conv, "
           "class token, learned position embedding, pre-LN encoder layers (fused QKV, fused "
           "attention, GELU MLP), final LayerNorm, linear head on the class token; "
           "cross-entropy. Defaults: vit_b_16 at 224 px. Attention as timm and PyTorch's "
           "fused attention run it; torchvision's nn.MultiheadAttention adds copies under "
           "autocast and in training (bf16 inference +30-38% GPU time on an H100).",
           {{"layers", 12, 1, 512, "encoder layers (inner modules)"},
            {"hidden", 768, 1, 65536, "model width"},
            {"heads", 12, 1, 1024, "attention heads; must divide hidden"},
            {"ffn", 3072, 1, 262144, "MLP inner width (mlp_dim)"},
            {"patch", 16, 2, 1024, "patch height and width"},
            {"image", 224, 2, 4096, "image height and width; a multiple of patch"},
            {"classes", 1000, 2, 100000, "output classes"}}},
          &Check,
          &Describe};
}

}  // namespace perfcast::models::families
