#include "client/suggest.h"

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace perfcast::client {

size_t EditDistance(absl::string_view a_text, absl::string_view b_text) {
  const std::string a = absl::AsciiStrToLower(a_text), b = absl::AsciiStrToLower(b_text);
  // Optimal string alignment: three rows of the dynamic programme.
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    before.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

std::optional<std::string> ClosestName(absl::string_view typed,
                                       const std::vector<std::string>& names,
                                       bool dash_prefixes) {
  // "lst" for "list" is one edit of three letters; "x" is no typo of "nodes".
  const size_t allowed = std::clamp<size_t>(typed.size() / 3, 1, 3);
  size_t best = std::numeric_limits<size_t>::max();
  std::optional<std::string> closest;
  for (const std::string& name : names) {
    size_t distance = EditDistance(typed, name);
    for (size_t dash = name.find('-', 1); dash_prefixes && dash != std::string::npos;
         dash = name.find('-', dash + 1)) {
      distance = std::min(distance, EditDistance(typed, absl::string_view(name).substr(0, dash)));
    }
    if (distance < best && distance > 0) {
      best = distance;
      closest = name;
    }
  }
  if (best > allowed) return std::nullopt;
  return closest;
}

std::string DidYouMean(absl::string_view typed, const std::vector<std::string>& names,
                       bool dash_prefixes) {
  std::optional<std::string> closest = ClosestName(typed, names, dash_prefixes);
  return closest.has_value() ? absl::StrCat(" (did you mean '", *closest, "'?)") : "";
}

}  // namespace perfcast::client
