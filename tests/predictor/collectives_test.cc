#include "predictor/collectives.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "models/gpu_catalog.h"

namespace perfcast::predictor {
namespace {

const Link kLink{100, 5, "test"};  // 100 GB/s bus bandwidth, 5 us per step

double Seconds(Collective c, CollectiveAlgorithm a, double bytes, int gpus, const Link& link) {
  absl::StatusOr<double> s = CollectiveSeconds(c, a, bytes, gpus, link);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.value_or(-1);
}

TEST(Collectives, RingAllReduceIsTheAlphaBetaClosedForm) {
  // 2(n-1) α + 2(n-1)/n S/B with n = 4, S = 1 GB.
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllReduce, CollectiveAlgorithm::kRing, 1e9, 4, kLink),
                   6 * 5e-6 + 1.5 * 1e9 / 100e9);
  // Tree: 2 ceil(log2 n) α + 2 S/B.
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllReduce, CollectiveAlgorithm::kTree, 1e9, 8, kLink),
                   6 * 5e-6 + 2 * 1e9 / 100e9);
}

TEST(Collectives, GatherScatterAndPointToPointClosedForms) {
  for (Collective c : {Collective::kAllGather, Collective::kReduceScatter}) {
    EXPECT_DOUBLE_EQ(Seconds(c, CollectiveAlgorithm::kAuto, 8e8, 8, kLink),
                     7 * 5e-6 + 7.0 / 8 * 8e8 / 100e9)
        << CollectiveName(c);
  }
  EXPECT_DOUBLE_EQ(Seconds(Collective::kPointToPoint, CollectiveAlgorithm::kAuto, 1e6, 2, kLink),
                   5e-6 + 1e6 / 100e9);
}

TEST(Collectives, AutoPicksTreeForSmallAndRingForLargeMessages) {
  const double small_ring = Seconds(Collective::kAllReduce, CollectiveAlgorithm::kRing, 1e3, 8, kLink);
  const double small_tree = Seconds(Collective::kAllReduce, CollectiveAlgorithm::kTree, 1e3, 8, kLink);
  EXPECT_LT(small_tree, small_ring);
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllReduce, CollectiveAlgorithm::kAuto, 1e3, 8, kLink),
                   small_tree);
  const double big_ring = Seconds(Collective::kAllReduce, CollectiveAlgorithm::kRing, 1e9, 8, kLink);
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllReduce, CollectiveAlgorithm::kAuto, 1e9, 8, kLink),
                   big_ring);
}

TEST(Collectives, NothingToDoCostsNothingAndBadInputIsRefused) {
  EXPECT_EQ(Seconds(Collective::kAllReduce, CollectiveAlgorithm::kAuto, 1e9, 1, kLink), 0);
  EXPECT_EQ(Seconds(Collective::kAllReduce, CollectiveAlgorithm::kAuto, 0, 8, kLink), 0);
  EXPECT_EQ(CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kAuto, 1, 0, kLink)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(
      CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kAuto, -1, 2, kLink).ok());
  EXPECT_FALSE(
      CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kAuto, NAN, 2, kLink).ok());
  EXPECT_FALSE(CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kAuto, 1, 2,
                                 Link{0, 1, "none"})
                   .ok());
}

TEST(Collectives, SpecLinksComeFromTheCatalog) {
  const models::GpuCatalog& catalog = models::GpuCatalog::BuiltIn();
  const models::GpuSpec h100 = *catalog.Find("H100-SXM5-80GB");
  absl::StatusOr<Link> nvlink = SpecLink(h100, 8, false);
  ASSERT_TRUE(nvlink.ok()) << nvlink.status();
  EXPECT_EQ(nvlink->source, "nvlink");
  EXPECT_DOUBLE_EQ(nvlink->bus_gbs, kSpecLinkEfficiency * 450);
  absl::StatusOr<Link> network = SpecLink(h100, 8, true);
  EXPECT_EQ(network->source, "network");
  EXPECT_DOUBLE_EQ(network->bus_gbs, kSpecLinkEfficiency * 50);
  EXPECT_GT(network->latency_us, nvlink->latency_us);
  // Bridged pairs: NVLink for two GPUs, PCIe beyond.
  const models::GpuSpec nvl = *catalog.Find("H100-NVL-94GB");
  EXPECT_EQ(SpecLink(nvl, 2, false)->source, "nvlink");
  EXPECT_EQ(SpecLink(nvl, 4, false)->source, "pcie");
  EXPECT_DOUBLE_EQ(SpecLink(nvl, 4, false)->bus_gbs, kSpecLinkEfficiency * 63);
  // Every catalog GPU can talk to a peer in its node.
  for (const models::GpuSpec& gpu : catalog.gpus()) {
    EXPECT_TRUE(SpecLink(gpu, 2, false).ok()) << gpu.model;
  }
  models::GpuSpec bare;
  bare.model = "bare";
  EXPECT_EQ(SpecLink(bare, 2, false).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Collectives, FitAllReduceLinkRecoversLatencyAndBandwidth) {
  const Link truth{180, 7, "truth"};
  std::vector<AllReduceSample> samples;
  for (int gpus : {2, 4, 8}) {
    for (double bytes = 1 << 16; bytes <= 1 << 30; bytes *= 4) {
      samples.push_back({bytes, gpus,
                         Seconds(Collective::kAllReduce, CollectiveAlgorithm::kRing, bytes, gpus,
                                 truth)});
    }
  }
  absl::StatusOr<Link> fitted = FitAllReduceLink(samples);
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  EXPECT_NEAR(fitted->bus_gbs, 180, 1e-6 * 180);
  EXPECT_NEAR(fitted->latency_us, 7, 1e-6);
  EXPECT_EQ(fitted->source, "measured");

  EXPECT_EQ(FitAllReduceLink({{1e6, 4, 1e-3}, {1e6, 8, 2e-3}}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(FitAllReduceLink({{1e6, 1, 1e-3}, {2e6, 4, 2e-3}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FitAllReduceLink({{1e6, 2, 0}, {2e6, 4, 2e-3}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Collectives, OverlapHidesAllButTheLastBucketBehindALongBackward) {
  const double grads = 100e6;  // 4 buckets of 25 MiB, the last one smaller
  const double bucket = 25.0 * 1024 * 1024;
  absl::StatusOr<OverlapResult> slow = OverlappedAllReduce(grads, 4, kLink, 10.0);
  ASSERT_TRUE(slow.ok()) << slow.status();
  EXPECT_EQ(slow->buckets, 4);
  const double last = Seconds(Collective::kAllReduce, CollectiveAlgorithm::kAuto,
                              grads - 3 * bucket, 4, kLink);
  EXPECT_NEAR(slow->exposed_seconds, last, 1e-12);
  double all = 3 * Seconds(Collective::kAllReduce, CollectiveAlgorithm::kAuto, bucket, 4, kLink) +
               last;
  EXPECT_NEAR(slow->comm_seconds, all, 1e-12);
  // No backward to hide behind: everything is exposed.
  absl::StatusOr<OverlapResult> none = OverlappedAllReduce(grads, 4, kLink, 0);
  EXPECT_NEAR(none->exposed_seconds, all, 1e-12);
  // A backward shorter than the communication: the rest shows.
  absl::StatusOr<OverlapResult> mid = OverlappedAllReduce(grads, 4, kLink, all / 2);
  EXPECT_GT(mid->exposed_seconds, last);
  EXPECT_LT(mid->exposed_seconds, all);
  EXPECT_EQ(OverlappedAllReduce(grads, 1, kLink, 1)->exposed_seconds, 0);
  EXPECT_FALSE(OverlappedAllReduce(grads, 4, kLink, 1, 0).ok());
  EXPECT_FALSE(OverlappedAllReduce(grads, 4, kLink, -1).ok());
}

}  // namespace
}  // namespace perfcast::predictor
