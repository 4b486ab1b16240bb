// recommend's table at a glance: one row per GPU model, count and layout
// (a response lists each target and count's best layout, or every layout
// that fits). Measured
// nodes of one model answer alike up to their hosts, so a dozen H200 nodes
// are one row (the median node's figures and the nodes' spread) rather than
// a dozen; the catalog's spec-sheet answer for a model stands in only where
// no node of it was measured.
#ifndef PERFCAST_CLIENT_RECOMMEND_ROWS_H_
#define PERFCAST_CLIENT_RECOMMEND_ROWS_H_

#include <string>
#include <vector>

#include "perfcast/v1/predictor.pb.h"

namespace perfcast::client {

struct RecommendRow {
  // Whose figures the row shows: the median registered node (by job time)
  // of the model, count and layout, else its catalog candidate.
  const v1::Candidate* shown = nullptr;
  // Every candidate of the model, count and layout, best-ranked first.
  std::vector<const v1::Candidate*> members;
  int nodes = 0;        // registered nodes among members
  int recommended = 0;  // of the nodes (or of the catalog candidate)
  // The job times the predicted nodes span; equal with fewer than two.
  double node_seconds_min = 0;
  double node_seconds_max = 0;
};

// Rows in the response's order of their best-ranked member.
std::vector<RecommendRow> SummariseCandidates(const v1::RecommendResponse& response);

// A row's distance from the model's training GPUs (Distance.summary in a
// few words): "seen" when every component the target names was seen in
// training; else its new ones, "new: architecture ada, power <=100W"; "-"
// when the answer says nothing (not predicted, or an old server).
std::string DistanceCell(const v1::Distance& distance);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_RECOMMEND_ROWS_H_
