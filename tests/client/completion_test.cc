#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/command.h"
#include "gtest/gtest.h"

namespace perfcast::client {
namespace {

class CompletionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    app_.add_option("--output,-o", output_);
    CLI::App* nodes = app_.add_subcommand("nodes", "");
    nodes->add_subcommand("list", "");
    nodes->add_subcommand("get", "");
    CLI::App* predict = app_.add_subcommand("predict", "");
    predict->add_option("--gpu", text_);
    predict->add_option("--gpu-count", text_);
    predict->add_option("--family", text_);
    predict->add_option("--op", text_);
    predict->add_flag("--local", flag_);
    app_.add_subcommand("__complete", "");
    // No server: node names complete to nothing, at once.
    context_.server = "127.0.0.1:1";
  }

  std::vector<std::string> Complete(std::vector<std::string> words) {
    return client::Complete(app_, words, context_);
  }

  CLI::App app_;
  ClientContext context_;
  std::string output_, text_;
  bool flag_ = false;
};

TEST_F(CompletionTest, CommandsFlagsAndValues) {
  EXPECT_EQ(Complete({""}), (std::vector<std::string>{"nodes", "predict"}));
  EXPECT_EQ(Complete({"nodes", "l"}), (std::vector<std::string>{"list"}));
  EXPECT_EQ(Complete({"predict", "--gpu-"}), (std::vector<std::string>{"--gpu-count"}));
  EXPECT_EQ(Complete({"predict", "--gpu", "H20"}),
            (std::vector<std::string>{"H200-SXM-141GB", "H200NVL-141GB", "H20-96GB"}));
  EXPECT_EQ(Complete({"-o", "y"}), (std::vector<std::string>{"yaml"}));
  // Global flags are offered after a command, and a flag without a value
  // does not take the next word.
  EXPECT_EQ(Complete({"predict", "--out"}), (std::vector<std::string>{"--output"}));
  EXPECT_EQ(Complete({"predict", "--local", "--gpu", "L40S"}),
            (std::vector<std::string>{"L40S-48GB"}));
}

TEST_F(CompletionTest, FamiliesAreModelsAfterFamilyAndOperationsAfterOp) {
  const std::vector<std::string> models = Complete({"predict", "--family", ""});
  EXPECT_NE(std::find(models.begin(), models.end(), "lstm"), models.end());
  EXPECT_EQ(std::find(models.begin(), models.end(), "gemm"), models.end());
  EXPECT_EQ(Complete({"predict", "--op", "gem"}), (std::vector<std::string>{"gemm"}));
}

TEST_F(CompletionTest, NodeNamesNeedTheServer) {
  EXPECT_TRUE(Complete({"nodes", "get", ""}).empty());
}

TEST(CompletionScriptTest, EveryShellAsksTheBinary) {
  for (const char* shell : {"bash", "zsh", "fish"}) {
    EXPECT_NE(CompletionScript(shell).find("__complete --"), std::string::npos) << shell;
  }
  EXPECT_NE(CompletionScript("zsh").find("compdef _perfcast perfcast"), std::string::npos);
  EXPECT_NE(CompletionScript("fish").find("complete -c perfcast"), std::string::npos);
}

}  // namespace
}  // namespace perfcast::client
