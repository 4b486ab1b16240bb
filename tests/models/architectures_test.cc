// The architectures users train (decoder, bert, vit, resnet_imagenet): exact
// public parameter counts, and FLOPs against the textbook estimates.
#include <cstdint>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/descriptor.h"

namespace perfcast::models {
namespace {

using ::testing::HasSubstr;

WorkloadSpec Model(const std::string& family, std::map<std::string, int64_t> params,
                   int64_t batch = 1, Phase phase = Phase::kTrain) {
  WorkloadSpec spec;
  spec.family = family;
  spec.params = std::move(params);
  spec.batch_size = batch;
  spec.phase = phase;
  return spec;
}

WorkloadDescriptor MustDescribe(const WorkloadSpec& spec) {
  auto d = Describe(spec);
  EXPECT_TRUE(d.ok()) << spec.Key() << ": " << d.status();
  return d.ok() ? *d : WorkloadDescriptor{};
}

int64_t Parameters(const WorkloadSpec& spec) {
  return static_cast<int64_t>(MustDescribe(spec).parameters);
}

WorkloadSpec Gpt2(int64_t layers, int64_t hidden, int64_t heads) {
  return Model("decoder", {{"layers", layers}, {"hidden", hidden}, {"heads", heads},
                           {"ffn", 4 * hidden}});
}

WorkloadSpec Llama2_7b() {
  return Model("decoder", {{"layers", 32}, {"hidden", 4096}, {"heads", 32}, {"kv_heads", 32},
                           {"ffn", 11008}, {"seq_len", 4096}, {"vocab", 32000},
                           {"positions", 0}, {"norm", 1}, {"mlp", 1}, {"bias", 0},
                           {"tied", 0}});
}

// The public figures: GPT2LMHeadModel (tied head) of the Hugging Face hub
// checkpoints, OPTForCausalLM, LlamaForCausalLM, MistralForCausalLM,
// BertForMaskedLM (BertModel without its pooler, plus the MLM head), and
// torchvision's resnet* and vit_b_16 / vit_l_16.
TEST(PublicParameterCountTest, GptStyleDecoders) {
  EXPECT_EQ(Parameters(Gpt2(12, 768, 12)), 124439808);    // gpt2
  EXPECT_EQ(Parameters(Gpt2(24, 1024, 16)), 354823168);   // gpt2-medium
  EXPECT_EQ(Parameters(Gpt2(36, 1280, 20)), 774030080);   // gpt2-large
  EXPECT_EQ(Parameters(Gpt2(48, 1600, 25)), 1557611200);  // gpt2-xl
  // facebook/opt-1.3b: learned positions with OPT's offset of 2 rows.
  EXPECT_EQ(Parameters(Model("decoder", {{"layers", 24}, {"hidden", 2048}, {"heads", 32},
                                         {"ffn", 8192}, {"seq_len", 2048}, {"vocab", 50272},
                                         {"positions", 2050}})),
            1315758080);
}

TEST(PublicParameterCountTest, LlamaStyleDecoders) {
  EXPECT_EQ(Parameters(Llama2_7b()), 6738415616);  // meta-llama/Llama-2-7b-hf
  // mistralai/Mistral-7B-v0.1: grouped-query attention with 8 KV heads.
  EXPECT_EQ(Parameters(Model("decoder", {{"layers", 32}, {"hidden", 4096}, {"heads", 32},
                                         {"kv_heads", 8}, {"ffn", 14336}, {"seq_len", 4096},
                                         {"vocab", 32000}, {"positions", 0}, {"norm", 1},
                                         {"mlp", 1}, {"bias", 0}, {"tied", 0}})),
            7241732096);
}

TEST(PublicParameterCountTest, BertForMaskedLm) {
  EXPECT_EQ(Parameters(Model("bert", {})), 109514298);  // bert-base-uncased
  EXPECT_EQ(Parameters(Model("bert", {{"layers", 24}, {"hidden", 1024}, {"heads", 16},
                                      {"ffn", 4096}})),
            335174458);  // bert-large-uncased
}

TEST(PublicParameterCountTest, TorchvisionImageModels) {
  EXPECT_EQ(Parameters(Model("resnet_imagenet", {{"depth", 18}})), 11689512);
  EXPECT_EQ(Parameters(Model("resnet_imagenet", {{"depth", 34}})), 21797672);
  EXPECT_EQ(Parameters(Model("resnet_imagenet", {{"depth", 50}})), 25557032);
  EXPECT_EQ(Parameters(Model("resnet_imagenet", {{"depth", 101}})), 44549160);
  EXPECT_EQ(Parameters(Model("resnet_imagenet", {{"depth", 152}})), 60192808);
  EXPECT_EQ(Parameters(Model("vit", {})), 86567656);                    // vit_b_16
  EXPECT_EQ(Parameters(Model("vit", {{"patch", 32}})), 88224232);       // vit_b_32
  EXPECT_EQ(Parameters(Model("vit", {{"layers", 24}, {"hidden", 1024}, {"heads", 16},
                                     {"ffn", 4096}})),
            304326632);  // vit_l_16
}

TEST(PublicParameterCountTest, ImageSizeChangesOnlyTheVitPositionTable) {
  EXPECT_EQ(Parameters(Model("resnet_imagenet", {{"depth", 50}, {"image", 512}})), 25557032);
  // 384 px: 24 x 24 + 1 tokens instead of 14 x 14 + 1.
  EXPECT_EQ(Parameters(Model("vit", {{"image", 384}})), 86567656 + (577 - 197) * 768);
}

// Kaplan et al.'s estimate of a decoder's training FLOPs: 6 x parameters
// (without embeddings) x tokens, plus the attention scores 6 x layers x
// seq x hidden per token (half of 12 for the causal mask), plus the LM head.
TEST(FlopsTest, DecoderTrainingIsAboutSixFlopsPerParameterPerToken) {
  for (const WorkloadSpec& spec : {Gpt2(12, 768, 12), Gpt2(24, 1024, 16), Llama2_7b()}) {
    WorkloadSpec s = spec;
    s.batch_size = 4;
    const WorkloadDescriptor d = MustDescribe(s);
    const double tokens = 4.0 * d.spec.params.at("seq_len");
    const double matmul_flops = 6 * d.parameters * tokens;
    const double ratio = (d.forward_flops + d.backward_flops) / matmul_flops;
    // Embeddings do no matmul work, the tied head does; attention adds a few %.
    EXPECT_GT(ratio, 0.95) << s.Key();
    EXPECT_LT(ratio, 1.4) << s.Key();
    EXPECT_NEAR(d.backward_flops / d.forward_flops, 2.0, 0.2) << s.Key();
  }
}

TEST(FlopsTest, Resnet50ForwardIsFourGigaMacs) {
  // torchvision lists 4.09 GFLOPS (multiply-adds) for resnet50 at 224 px.
  const WorkloadDescriptor d =
      MustDescribe(Model("resnet_imagenet", {{"depth", 50}}, 1, Phase::kInference));
  EXPECT_NEAR(d.forward_flops / 2 / 1e9, 4.09, 0.1);
  // vit_b_16: 17.56 GFLOPS.
  const WorkloadDescriptor vit = MustDescribe(Model("vit", {}, 1, Phase::kInference));
  EXPECT_NEAR(vit.forward_flops / 2 / 1e9, 17.56, 0.4);
}

TEST(DecompositionTest, DecoderUsesFusedCausalAttentionAndTheLmHeadOverEveryPosition) {
  const WorkloadDescriptor d = MustDescribe(Gpt2(2, 64, 4));
  int attention = 0;
  bool head = false;
  for (const Operation& op : d.operations) {
    if (op.op_class == OpClass::kAttention && op.name.ends_with(".fwd")) {
      ++attention;
      EXPECT_EQ(op.shape.at("causal"), 1);
      EXPECT_EQ(op.shape.at("fused"), 1);
    }
    if (op.name == "lm_head.fwd") {
      head = true;
      EXPECT_EQ(op.shape.at("m"), 1024);  // batch 1 x seq 1024 positions
      EXPECT_EQ(op.shape.at("n"), 50257);
    }
  }
  EXPECT_EQ(attention, 2);
  EXPECT_TRUE(head);
  const WorkloadDescriptor bert = MustDescribe(Model("bert", {{"layers", 1}}));
  for (const Operation& op : bert.operations) {
    if (op.op_class == OpClass::kAttention) {
      EXPECT_EQ(op.shape.at("causal"), 0) << op.name;
    }
  }
}

TEST(DecompositionTest, CausalAttentionSkipsTheUpperTriangle) {
  auto attention_flops = [](const WorkloadDescriptor& d) {
    double flops = 0;
    for (const Operation& op : d.operations) {
      if (op.op_class == OpClass::kAttention) flops += op.flops;
    }
    return flops;
  };
  const WorkloadSpec base = Model("bert", {{"layers", 1}, {"seq_len", 512}});
  WorkloadSpec decoder = Gpt2(1, 768, 12);
  decoder.params["seq_len"] = 512;
  const double causal = attention_flops(MustDescribe(decoder));
  const double full = attention_flops(MustDescribe(base));
  // 4 blocks of 128: 10 of 16 computed.
  EXPECT_NEAR(causal / full, 10.0 / 16, 0.01);
}

TEST(DecompositionTest, GroupedQueryAttentionNarrowsTheKvProjection) {
  WorkloadSpec gqa = Llama2_7b();
  gqa.params["kv_heads"] = 8;
  gqa.params["layers"] = 1;
  WorkloadSpec mha = gqa;
  mha.params["kv_heads"] = 32;
  const double saved = Parameters(mha) - Parameters(gqa);
  EXPECT_EQ(saved, 2.0 * 4096 * (4096 - 1024));
}

TEST(CheckTest, RejectsInconsistentArchitecturesNamingTheField) {
  auto expect_invalid = [](const WorkloadSpec& spec, const std::string& field) {
    auto d = Describe(spec);
    ASSERT_FALSE(d.ok()) << spec.Key();
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(d.status().message(), HasSubstr(field)) << spec.Key();
  };
  expect_invalid(Model("decoder", {{"hidden", 770}}), "'hidden'");
  expect_invalid(Model("decoder", {{"kv_heads", 5}}), "'kv_heads'");
  expect_invalid(Model("decoder", {{"seq_len", 2048}}), "'seq_len'");
  expect_invalid(Model("decoder", {{"positions", 0}, {"hidden", 12 * 3}}), "head width");
  expect_invalid(Model("bert", {{"seq_len", 1024}}), "'seq_len'");
  expect_invalid(Model("bert", {{"heads", 7}}), "'hidden'");
  expect_invalid(Model("vit", {{"image", 200}}), "'image'");
  expect_invalid(Model("vit", {{"image", 8}}), "'image'");
  expect_invalid(Model("resnet_imagenet", {{"depth", 42}}), "'depth'");
  expect_invalid(Model("resnet_imagenet", {{"image", 16}}), "stride");
  // Rotary decoders have no position table and no length limit.
  EXPECT_TRUE(Describe(Model("decoder", {{"positions", 0}, {"seq_len", 8192}})).ok());
}

}  // namespace
}  // namespace perfcast::models
