#include "server/authenticator.h"

#include <fstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace perfcast::server {
namespace {

constexpr absl::string_view kAuthorizationKey = "authorization";
constexpr absl::string_view kBearerPrefix = "bearer ";

// Visible ASCII: what an HTTP/2 header value carries without escaping.
bool IsTokenChar(char c) { return c > 0x20 && c < 0x7f; }

}  // namespace

absl::StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read token file ", path));
  std::vector<std::string> tokens;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const absl::string_view token = absl::StripAsciiWhitespace(line);
    if (token.empty() || token.front() == '#') continue;
    for (char c : token) {
      if (!IsTokenChar(c)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "token file ", path, ":", number,
            ": a token may hold only visible ASCII characters, without spaces"));
      }
    }
    tokens.emplace_back(token);
  }
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat("cannot read token file ", path));
  if (tokens.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token file ", path, " holds no token (one per line; '#' starts a comment)"));
  }
  return tokens;
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  // Walks all of `a` whatever `b` holds, so the time tells an attacker only
  // the length of the token they sent themselves.
  unsigned diff = a.size() != b.size() ? 1u : 0u;
  for (size_t i = 0; i < a.size(); ++i) {
    const unsigned char other = b.empty() ? 0 : static_cast<unsigned char>(b[i % b.size()]);
    diff |= static_cast<unsigned char>(a[i]) ^ other;
  }
  return diff == 0;
}

grpc::Status Authenticator::Check(const grpc::ServerContextBase& context,
                                  absl::string_view method) const {
  if (tokens_.empty()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  const auto header = metadata.find(grpc::string_ref(kAuthorizationKey.data(),
                                                     kAuthorizationKey.size()));
  const char* reason = "no bearer token";
  if (header != metadata.end()) {
    const absl::string_view value(header->second.data(), header->second.size());
    if (!absl::StartsWithIgnoreCase(value, kBearerPrefix)) {
      reason = "authorization is not a bearer token";
    } else {
      const absl::string_view presented =
          absl::StripAsciiWhitespace(value.substr(kBearerPrefix.size()));
      bool known = false;
      for (const std::string& token : tokens_) known |= ConstantTimeEquals(presented, token);
      if (known) return grpc::Status::OK;
      reason = "unknown bearer token";
    }
  }
  logger_.Warning("call rejected", {{"method", std::string(method)},
                                    {"peer", context.peer()},
                                    {"reason", reason}});
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      header == metadata.end()
                          ? "this server requires a bearer token (perfcast --token, "
                            "--token-file or $PERFCAST_TOKEN)"
                          : "the bearer token is not valid for this server");
}

}  // namespace perfcast::server
