#include "client/recommend_rows.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace perfcast::client {

std::string DistanceCell(const v1::Distance& d) {
  const std::pair<const std::string*, const std::string*> components[] = {
      {&d.architecture_seen(), &d.architecture()},
      {&d.vendor_seen(), &d.vendor()},
      {&d.power_class_seen(), &d.power_class()},
      {&d.precision_path_seen(), &d.precision_path()}};
  constexpr const char* kNames[] = {"architecture", "vendor", "power", "precision"};
  std::vector<std::string> fresh;
  bool known = false;
  for (size_t i = 0; i < std::size(components); ++i) {
    const std::string& seen = *components[i].first;
    known |= seen == "seen" || seen == "new";
    if (seen == "new") fresh.push_back(absl::StrCat(kNames[i], " ", *components[i].second));
  }
  if (!fresh.empty()) return absl::StrCat("new: ", absl::StrJoin(fresh, ", "));
  return known ? "seen" : "-";
}

std::vector<RecommendRow> SummariseCandidates(const v1::RecommendResponse& response) {
  std::vector<RecommendRow> rows;
  std::map<std::tuple<std::string, int, std::string>, size_t> row_of;
  for (const v1::Candidate& c : response.candidates()) {
    auto [it, added] =
        row_of.try_emplace({c.gpu_model(), c.gpu_count(), c.layout_name()}, rows.size());
    if (added) rows.emplace_back();
    rows[it->second].members.push_back(&c);
  }
  for (RecommendRow& row : rows) {
    std::vector<const v1::Candidate*> predicted_nodes;
    const v1::Candidate* first_node = nullptr;
    for (const v1::Candidate* c : row.members) {
      if (!c->registered_node()) continue;
      ++row.nodes;
      row.recommended += c->recommended();
      if (first_node == nullptr) first_node = c;
      if (c->predicted()) predicted_nodes.push_back(c);
    }
    if (row.nodes == 0) {
      row.shown = row.members.front();
      row.recommended = row.shown->recommended();
      row.node_seconds_min = row.node_seconds_max = row.shown->job_seconds();
      continue;
    }
    if (predicted_nodes.empty()) {
      row.shown = first_node;
      continue;
    }
    std::sort(predicted_nodes.begin(), predicted_nodes.end(),
              [](const v1::Candidate* a, const v1::Candidate* b) {
                return a->job_seconds() < b->job_seconds();
              });
    // The lower median: a node that exists, not an average of two.
    row.shown = predicted_nodes[(predicted_nodes.size() - 1) / 2];
    row.node_seconds_min = predicted_nodes.front()->job_seconds();
    row.node_seconds_max = predicted_nodes.back()->job_seconds();
  }
  return rows;
}

}  // namespace perfcast::client
