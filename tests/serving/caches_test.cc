// The model, node and answer caches, on a real SQLite store and a fake clock.
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "db/store.h"
#include "gtest/gtest.h"
#include "predictor/model.h"
#include "serving/answer_cache.h"
#include "serving/model_cache.h"
#include "serving/node_cache.h"
#include "tests/db/test_util.h"

namespace perfcast::serving {
namespace {

class FakeClock {
 public:
  absl::Time now = absl::FromUnixSeconds(1'000'000);
  Clock AsClock() {
    return [this] { return now; };
  }
};

class CachesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<db::Store>> store = db::OpenStore(dir_.File("perfcast.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  // Saves a model whose payload is a valid, empty PredictorModel.
  db::StoredModel Save(const std::string& name) {
    predictor::PredictorModel model;
    db::StoredModel stored;
    stored.name = name;
    stored.target = "iteration_ms";
    stored.payload = *predictor::SerializeModel(model);
    absl::StatusOr<db::StoredModel> saved = store_->SaveModel(stored);
    EXPECT_TRUE(saved.ok()) << saved.status();
    return *saved;
  }

  testing::TempDir dir_;
  std::unique_ptr<db::Store> store_;
  FakeClock clock_;
};

TEST_F(CachesTest, ModelCacheSeesOtherWritersAfterRecheckAndOwnPutsAtOnce) {
  ModelCache cache(*store_, absl::Seconds(1), clock_.AsClock());
  absl::StatusOr<std::shared_ptr<const LoadedModel>> missing = cache.Latest("default");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("run perfcast fit first"), std::string::npos);

  const db::StoredModel v1 = Save("default");
  clock_.now += absl::Seconds(2);  // the miss above did not cache anything
  absl::StatusOr<std::shared_ptr<const LoadedModel>> first = cache.Latest("default");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)->meta.id, v1.id);
  EXPECT_TRUE((*first)->meta.payload.empty());

  // Another process fits version 2: not seen until the recheck interval passed.
  const db::StoredModel v2 = Save("default");
  clock_.now += absl::Milliseconds(500);
  EXPECT_EQ((*cache.Latest("default"))->meta.id, v1.id);
  clock_.now += absl::Milliseconds(600);
  EXPECT_EQ((*cache.Latest("default"))->meta.id, v2.id);
  // The same model is shared, not parsed again.
  EXPECT_EQ(cache.Latest("default")->get(), cache.Latest("default")->get());

  // This process's own fit is visible at once; an older Put changes nothing.
  absl::StatusOr<std::shared_ptr<const LoadedModel>> v3 = LoadModel(Save("default"));
  ASSERT_TRUE(v3.ok());
  cache.Put(*v3);
  EXPECT_EQ((*cache.Latest("default"))->meta.version, 3);
  cache.Put(*first);
  EXPECT_EQ((*cache.Latest("default"))->meta.version, 3);
}

TEST_F(CachesTest, UnreadableModelIsDataLoss) {
  db::StoredModel stored;
  stored.name = "broken";
  stored.payload = "{not json";
  ASSERT_TRUE(store_->SaveModel(stored).ok());
  ModelCache cache(*store_, absl::Seconds(1), clock_.AsClock());
  EXPECT_EQ(cache.Latest("broken").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ModelName(""), "default");
  EXPECT_EQ(ModelName("x"), "x");
}

TEST_F(CachesTest, NodeCacheKeepsHitsForRecheckAndNeverCachesMisses) {
  NodeCache cache(*store_, absl::Seconds(1), clock_.AsClock());
  EXPECT_EQ(cache.Get("n1").status().code(), absl::StatusCode::kNotFound);
  models::Node node = testing::SampleNode("n1");
  ASSERT_TRUE(store_->RegisterNode(node).ok());
  absl::StatusOr<std::shared_ptr<const models::Node>> got = cache.Get("n1");  // at once
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)->gpu.model, node.gpu.model);

  // Re-registered with another GPU by someone else.
  ASSERT_TRUE(store_->DeregisterNode("n1", /*purge_profiles=*/false).ok());
  node.gpu.model = "A100-SXM4-80GB";
  ASSERT_TRUE(store_->RegisterNode(node).ok());
  EXPECT_EQ((*cache.Get("n1"))->gpu.model, "H100-SXM5-80GB");  // cached
  clock_.now += absl::Seconds(1);
  EXPECT_EQ((*cache.Get("n1"))->gpu.model, "A100-SXM4-80GB");

  // Read back unchanged, a node keeps its object (plans are keyed by it).
  const models::Node* kept = cache.Get("n1")->get();
  clock_.now += absl::Seconds(1);
  EXPECT_EQ(cache.Get("n1")->get(), kept);

  // Deregistered: seen after the recheck, and forgotten.
  ASSERT_TRUE(store_->DeregisterNode("n1", /*purge_profiles=*/false).ok());
  EXPECT_TRUE(cache.Get("n1").ok());
  clock_.now += absl::Seconds(1);
  EXPECT_EQ(cache.Get("n1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(cache.Get("n1").status().code(), absl::StatusCode::kNotFound);
}

TEST(AnswerCache, KeyedByQuestionAndModelExpiringAndBounded) {
  FakeClock clock;
  AnswerCache<int> cache(/*max_entries=*/2, absl::Seconds(1), clock.AsClock());
  cache.Put("q1", 7, std::make_shared<const int>(41));
  ASSERT_NE(cache.Find("q1", 7), nullptr);
  EXPECT_EQ(*cache.Find("q1", 7), 41);
  EXPECT_EQ(cache.Find("q1", 8), nullptr);  // priced with another model
  EXPECT_EQ(cache.Find("q2", 7), nullptr);
  clock.now += absl::Seconds(1);
  EXPECT_EQ(cache.Find("q1", 7), nullptr);  // too old

  AnswerCache<int> small(/*max_entries=*/2, absl::Seconds(1), clock.AsClock());
  small.Put("q2", 7, std::make_shared<const int>(2));
  small.Put("q3", 7, std::make_shared<const int>(3));
  EXPECT_EQ(small.size(), 2u);
  small.Put("q4", 7, std::make_shared<const int>(4));  // full: starts over
  EXPECT_EQ(small.size(), 1u);
  EXPECT_NE(small.Find("q4", 7), nullptr);
  EXPECT_EQ(small.Find("q2", 7), nullptr);

  AnswerCache<int> forever(10, absl::InfiniteDuration(), clock.AsClock());
  forever.Put("q", 1, std::make_shared<const int>(1));
  clock.now += absl::Hours(1000);
  EXPECT_NE(forever.Find("q", 1), nullptr);
}

}  // namespace
}  // namespace perfcast::serving
