// dlrm: a DLRM-style recommender (Naumov et al. 2019). Dense features go
// through the bottom MLP (Linear+ReLU; its last layer outputs emb_dim);
// each of `tables` EmbeddingBag(rows, emb_dim, sum) tables pools `lookups`
// ids per sample; the bottom output and the pooled embeddings interact by
// pairwise dot products (strict upper triangle), concatenated with the bottom
// output; the top MLP (Linear+ReLU, last layer 1 logit, no ReLU) gives a
// click logit; binary cross-entropy with logits.
#include "absl/strings/str_cat.h"
#include "models/architecture.h"
#include "models/families/families.h"
#include "models/iteration_builder.h"

namespace perfcast::models::families {
namespace {

WorkloadDescriptor Describe(const WorkloadSpec& spec) {
  const int64_t tables = Param(spec, "tables");
  const int64_t rows = Param(spec, "rows");
  const int64_t dim = Param(spec, "emb_dim");
  const int64_t dense = Param(spec, "dense");
  const int64_t bottom_layers = Param(spec, "bottom_layers");
  const int64_t bottom_width = Param(spec, "bottom_width");
  const int64_t top_layers = Param(spec, "top_layers");
  const int64_t top_width = Param(spec, "top_width");
  const int64_t lookups = Param(spec, "lookups");
  const double batch = static_cast<double>(spec.batch_size);
  IterationBuilder b(spec);
  for (int64_t l = 0; l < bottom_layers; ++l) {
    const int64_t in = l == 0 ? dense : bottom_width;
    const int64_t out = l == bottom_layers - 1 ? dim : bottom_width;
    const std::string name = absl::StrCat("bottom", l);
    b.Linear(name, batch, in, out, true, /*input_grad=*/l > 0);
    b.Elementwise(name + ".relu", batch * out, 1, 1);
  }
  for (int64_t t = 0; t < tables; ++t) {
    b.Embedding(absl::StrCat("table", t), rows, dim, batch * lookups, lookups);
  }
  const double vectors = static_cast<double>(tables + 1);
  const int64_t features = DlrmInteractionFeatures(tables, dim);
  b.Copy("interact.stack", batch * vectors * dim, b.act_bytes());
  b.Matmul("interact.dots", vectors, vectors, dim, batch, /*rhs_constant=*/false);
  b.Copy("interact.pairs", batch * (features - dim), b.act_bytes());
  b.Copy("interact.concat", batch * features, b.act_bytes());
  for (int64_t l = 0; l < top_layers; ++l) {
    const int64_t in = l == 0 ? features : top_width;
    const bool last = l == top_layers - 1;
    const int64_t out = last ? 1 : top_width;
    const std::string name = absl::StrCat("top", l);
    b.Linear(name, batch, in, out, true);
    if (!last) b.Elementwise(name + ".relu", batch * out, 1, 1);
  }
  b.Loss("loss.bce", batch, 1);
  const double input_bytes = 4 * batch * dense + 8 * batch * tables * lookups + 4 * batch;
  return b.Finish(input_bytes, 3, bottom_layers + top_layers);
}

}  // namespace

FamilyDef DlrmFamily() {
  return {{"dlrm",
           WorkloadKind::kModel,
           "DLRM recommender: bottom MLP on dense features, EmbeddingBag tables (sum of "
           "lookups ids), pairwise dot interaction, top MLP to one logit; BCE loss. Inner "
           "modules: bottom + top MLP layers.",
           {{"tables", 8, 1, 1024, "embedding tables (sparse features)"},
            {"rows", 10000, 1, 100000000, "rows per table"},
            {"emb_dim", 16, 1, 4096, "embedding width = bottom MLP output"},
            {"dense", 13, 1, 65536, "dense input features"},
            {"bottom_layers", 2, 1, 64, "bottom MLP Linear layers"},
            {"bottom_width", 64, 1, 65536, "bottom MLP hidden width"},
            {"top_layers", 2, 1, 64, "top MLP Linear layers (last outputs 1)"},
            {"top_width", 64, 1, 65536, "top MLP hidden width"},
            {"lookups", 4, 1, 1024, "ids per table per sample (bag size)"}}},
          &NoConstraints,
          &Describe};
}

}  // namespace perfcast::models::families
