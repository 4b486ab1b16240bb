#include "models/model_source.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/descriptor.h"

namespace perfcast::models {
namespace {

using ::testing::HasSubstr;

std::string ReadConfig(const std::string& name) {
  std::ifstream in(std::string(PERFCAST_HF_CONFIGS) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Parameters of the resolved model at batch 1, as the descriptor counts them.
double Parameters(const ResolvedModel& model) {
  WorkloadSpec spec;
  spec.family = model.family;
  spec.params = model.params;
  absl::StatusOr<WorkloadDescriptor> d = Describe(spec);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? d->parameters : 0;
}

ResolvedModel MustResolve(const std::string& file, int64_t seq_len) {
  absl::StatusOr<ResolvedModel> model = FromHuggingFaceConfig(ReadConfig(file), seq_len);
  EXPECT_TRUE(model.ok()) << file << ": " << model.status();
  return model.ok() ? *model : ResolvedModel{};
}

TEST(HuggingFaceConfigTest, ReferenceConfigsGiveThePublicParameterCounts) {
  const struct {
    const char* file;
    const char* family;
    double parameters;
    int64_t max_seq;
  } cases[] = {
      {"gpt2.json", "decoder", 124439808, 1024},
      {"gpt2-medium.json", "decoder", 354823168, 1024},
      {"opt-1.3b.json", "decoder", 1315758080, 2048},
      {"llama-2-7b.json", "decoder", 6738415616, 4096},
      {"mistral-7b.json", "decoder", 7241732096, 32768},
      {"bert-base-uncased.json", "bert", 109514298, 512},
      {"bert-large-uncased.json", "bert", 335174458, 512},
  };
  for (const auto& c : cases) {
    const ResolvedModel model = MustResolve(c.file, 0);
    EXPECT_EQ(model.family, c.family) << c.file;
    EXPECT_EQ(Parameters(model), c.parameters) << c.file;
    EXPECT_EQ(model.params.at("seq_len"), c.max_seq) << c.file;
    EXPECT_EQ(MustResolve(c.file, 128).params.at("seq_len"), 128) << c.file;
  }
  const ResolvedModel mistral = MustResolve("mistral-7b.json", 0);
  EXPECT_EQ(mistral.source, "hf:mistral");
  EXPECT_EQ(mistral.params.at("kv_heads"), 8);
  EXPECT_EQ(mistral.params.at("positions"), 0);
  EXPECT_EQ(mistral.params.at("norm"), 1);
  EXPECT_EQ(MustResolve("opt-1.3b.json", 0).params.at("positions"), 2050);
}

void ExpectInvalid(const std::string& json, int64_t seq_len, const std::string& needle) {
  absl::StatusOr<ResolvedModel> model = FromHuggingFaceConfig(json, seq_len);
  ASSERT_FALSE(model.ok()) << json;
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument) << json;
  EXPECT_THAT(model.status().message(), HasSubstr(needle)) << json;
}

TEST(HuggingFaceConfigTest, BadConfigsNameTheKey) {
  ExpectInvalid("not json", 0, "not a JSON object");
  ExpectInvalid("[1, 2]", 0, "not a JSON object");
  ExpectInvalid(R"({"n_layer": 2})", 0, "'model_type'");
  ExpectInvalid(R"({"model_type": "t5"})", 0, "unknown 'model_type' 't5'");
  ExpectInvalid(R"({"model_type": "gpt2", "n_layer": 2, "n_head": 2, "n_positions": 8,
                    "vocab_size": 10})",
                0, "missing key 'n_embd'");
  ExpectInvalid(R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 10, "n_head": 3,
                    "n_positions": 8, "vocab_size": 10})",
                0, "'n_embd' (10) is not divisible by 'n_head' (3)");
  ExpectInvalid(R"({"model_type": "gpt2", "n_layer": "2", "n_embd": 12, "n_head": 3,
                    "n_positions": 8, "vocab_size": 10})",
                0, "'n_layer' must be a positive integer");
  ExpectInvalid(ReadConfig("gpt2.json"), 2048, "sequence length 2048 exceeds 'n_positions' (1024)");
  ExpectInvalid(ReadConfig("bert-base-uncased.json"), 513, "'max_position_embeddings' (512)");
  ExpectInvalid(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
                    "num_attention_heads": 8, "num_key_value_heads": 3,
                    "intermediate_size": 128, "max_position_embeddings": 64,
                    "vocab_size": 100})",
                0, "'num_key_value_heads' (3)");
  ExpectInvalid(R"({"model_type": "opt", "num_hidden_layers": 2, "hidden_size": 64,
                    "num_attention_heads": 8, "ffn_dim": 128, "max_position_embeddings": 64,
                    "vocab_size": 100, "word_embed_proj_dim": 32})",
                0, "'word_embed_proj_dim'");
  // Within the config's keys but beyond a family range: the family says which.
  ExpectInvalid(R"({"model_type": "gpt2", "n_layer": 100000, "n_embd": 12, "n_head": 3,
                    "n_positions": 8, "vocab_size": 10})",
                0, "'layers'");
}

TEST(HuggingFaceConfigTest, OlderKeysAndDefaults) {
  // Old GPT-2 configs state only n_ctx; n_inner null means 4 x n_embd.
  absl::StatusOr<ResolvedModel> model = FromHuggingFaceConfig(
      R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "n_ctx": 32,
          "n_inner": null, "vocab_size": 100})",
      0);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->params.at("seq_len"), 32);
  EXPECT_EQ(model->params.at("ffn"), 256);
  EXPECT_EQ(model->params.at("tied"), 1);
}

TEST(TorchvisionTest, NamesGiveThePublicParameterCounts) {
  const struct {
    const char* name;
    double parameters;
  } cases[] = {
      {"resnet18", 11689512},  {"resnet34", 21797672},  {"resnet50", 25557032},
      {"resnet101", 44549160}, {"resnet152", 60192808}, {"vit_b_16", 86567656},
      {"vit_b_32", 88224232},  {"vit_l_16", 304326632}, {"vit_l_32", 306535400},
      {"vit_h_14", 632045800},
  };
  ASSERT_EQ(TorchvisionNames().size(), std::size(cases));
  for (const auto& c : cases) {
    absl::StatusOr<ResolvedModel> model = FromTorchvisionName(c.name, 0);
    ASSERT_TRUE(model.ok()) << c.name << ": " << model.status();
    EXPECT_EQ(model->params.at("image"), 224) << c.name;
    EXPECT_EQ(Parameters(*model), c.parameters) << c.name;
  }
}

TEST(TorchvisionTest, BadNamesAndImages) {
  auto expect_invalid = [](const std::string& name, int64_t image, const std::string& needle) {
    absl::StatusOr<ResolvedModel> model = FromTorchvisionName(name, image);
    ASSERT_FALSE(model.ok()) << name;
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(model.status().message(), HasSubstr(needle)) << name;
  };
  expect_invalid("resnet42", 0, "unknown torchvision model 'resnet42'");
  expect_invalid("resnet42", 0, "resnet50");
  expect_invalid("resnet50", 16, "'image' (16) is smaller than the network's stride (32)");
  expect_invalid("vit_b_16", 8, "'image' (8)");
  expect_invalid("vit_b_16", 200, "multiple of the patch size (16)");
  absl::StatusOr<ResolvedModel> large = FromTorchvisionName("resnet50", 512);
  ASSERT_TRUE(large.ok()) << large.status();
  EXPECT_EQ(large->params.at("image"), 512);
}

// Measured differences between the user's implementation and the family's
// (data/README.md, "Where the plain loop's time goes"): torchvision's ViT
// outside fp32 inference, Hugging Face's decoders; nothing for the rest.
TEST(ImplementationCaveatsTest, NameTheMeasuredDifferencesOnly) {
  using ::testing::IsEmpty;
  using ::testing::SizeIs;
  const auto kTv = ModelOrigin::kTorchvision;
  const auto kHf = ModelOrigin::kHuggingFace;
  EXPECT_THAT(ImplementationCaveats(kTv, "vit", /*autocast=*/false, /*train=*/false), IsEmpty());
  auto bf16_inference = ImplementationCaveats(kTv, "vit", true, false);
  ASSERT_THAT(bf16_inference, SizeIs(1));
  EXPECT_THAT(bf16_inference[0], HasSubstr("nn.MultiheadAttention"));
  EXPECT_THAT(bf16_inference[0], HasSubstr("30-38%"));
  EXPECT_THAT(ImplementationCaveats(kTv, "vit", true, true).at(0), HasSubstr("9%"));
  EXPECT_THAT(ImplementationCaveats(kTv, "vit", false, true).at(0), HasSubstr("5%"));
  EXPECT_THAT(ImplementationCaveats(kTv, "resnet_imagenet", true, true), IsEmpty());
  // A ViT described some other way has no torchvision attention.
  EXPECT_THAT(ImplementationCaveats(kHf, "vit", true, false), IsEmpty());
  auto decoder = ImplementationCaveats(kHf, "decoder", true, false);
  ASSERT_THAT(decoder, SizeIs(1));
  EXPECT_THAT(decoder[0], HasSubstr("once per forward"));
  EXPECT_THAT(ImplementationCaveats(kHf, "decoder", false, true), SizeIs(1));
  auto bert = ImplementationCaveats(kHf, "bert", true, false);
  ASSERT_THAT(bert, SizeIs(1));
  EXPECT_THAT(bert[0], HasSubstr("host work per kernel"));
  EXPECT_THAT(ImplementationCaveats(kTv, "resnet_imagenet", false, false), IsEmpty());
}

// The effects the pricing takes are the caveats' cases, as data.
TEST(ImplementationEffectsOfTest, TheCaveatsCasesAsData) {
  const auto kTv = ModelOrigin::kTorchvision;
  const auto kHf = ModelOrigin::kHuggingFace;
  const ImplementationEffects none;
  EXPECT_EQ(ImplementationEffectsOf(kTv, "vit", /*autocast=*/false, /*train=*/false), none);
  for (bool autocast : {false, true}) {
    for (bool train : {false, true}) {
      const bool slow = autocast || train;
      EXPECT_EQ(ImplementationEffectsOf(kTv, "vit", autocast, train).attention_slow_path, slow);
      EXPECT_EQ(ImplementationEffectsOf(kTv, "vit", autocast, train).host_syncs_per_forward, 0);
      EXPECT_EQ(ImplementationEffectsOf(kHf, "decoder", autocast, train).host_syncs_per_forward,
                1);
      EXPECT_FALSE(ImplementationEffectsOf(kHf, "decoder", autocast, train).attention_slow_path);
      EXPECT_EQ(ImplementationEffectsOf(kTv, "resnet_imagenet", autocast, train), none);
      const ImplementationEffects bert = ImplementationEffectsOf(kHf, "bert", autocast, train);
      EXPECT_TRUE(bert.heavy_python_dispatch);
      EXPECT_EQ(bert.host_syncs_per_forward, 0);
      EXPECT_FALSE(bert.attention_slow_path);
      EXPECT_FALSE(ImplementationEffectsOf(kHf, "decoder", autocast, train).heavy_python_dispatch);
      EXPECT_FALSE(ImplementationEffectsOf(kTv, "vit", autocast, train).heavy_python_dispatch);
      EXPECT_EQ(ImplementationCaveats(kTv, "vit", autocast, train).empty(), !slow);
    }
  }
}

}  // namespace
}  // namespace perfcast::models
