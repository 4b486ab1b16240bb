// "Did you mean" for mistyped commands, flags, GPU and family names.
#ifndef PERFCAST_CLIENT_SUGGEST_H_
#define PERFCAST_CLIENT_SUGGEST_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace perfcast::client {

// The edit distance of `a` and `b` ignoring case, a swap of two neighbouring
// characters counting as one edit.
size_t EditDistance(absl::string_view a, absl::string_view b);

// The name of `names` nearest to `typed`, when near enough to be the one
// meant (a few edits, fewer for short names); nullopt otherwise. With
// `dash_prefixes`, a name also matches by its leading '-' parts, so that
// "H2000" suggests "H200-SXM-141GB" as "H200" would.
std::optional<std::string> ClosestName(absl::string_view typed,
                                       const std::vector<std::string>& names,
                                       bool dash_prefixes = false);

// " (did you mean 'x'?)" for ClosestName's answer, or "".
std::string DidYouMean(absl::string_view typed, const std::vector<std::string>& names,
                       bool dash_prefixes = false);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_SUGGEST_H_
