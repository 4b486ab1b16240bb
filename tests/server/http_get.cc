#include "tests/server/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace perfcast::testing {
namespace {

// Closes the socket on every path out.
class Socket {
 public:
  Socket() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {}
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Parses `k="v",k2="v2"` (values as the text format escapes them; tests
// use no quotes or commas inside values).
std::map<std::string, std::string> ParseLabels(absl::string_view text) {
  std::map<std::string, std::string> labels;
  for (absl::string_view pair : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(pair, absl::MaxSplits('=', 1));
    absl::string_view value = kv.second;
    absl::ConsumePrefix(&value, "\"");
    absl::ConsumeSuffix(&value, "\"");
    labels[std::string(absl::StripAsciiWhitespace(kv.first))] = std::string(value);
  }
  return labels;
}

}  // namespace

absl::StatusOr<std::unique_ptr<StalledConnection>> StalledConnection::Open(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError("socket() failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to 127.0.0.1:", port));
  }
  return std::unique_ptr<StalledConnection>(new StalledConnection(fd));
}

StalledConnection::~StalledConnection() { close(fd_); }

void StalledConnection::WaitUntilClosed(absl::Duration timeout) {
  pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    const int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (poll(&p, 1, std::max(ms, 1)) <= 0) continue;
    char byte;
    // Readable: the server closed it (0 bytes) or reset it.
    if (recv(fd_, &byte, 1, 0) <= 0) return;
  }
}

absl::StatusOr<HttpResponse> HttpGet(int port, const std::string& path, absl::Duration timeout) {
  Socket socket;
  if (socket.fd() < 0) return absl::UnavailableError("socket() failed");
  const timeval tv = absl::ToTimeval(timeout);
  setsockopt(socket.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(socket.fd(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(socket.fd(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot connect to 127.0.0.1:", port));
  }
  const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  for (size_t sent = 0; sent < request.size();) {
    ssize_t n = send(socket.fd(), request.data() + sent, request.size() - sent, 0);
    if (n <= 0) return absl::UnavailableError("send() failed");
    sent += static_cast<size_t>(n);
  }
  std::string answer;
  char buffer[8192];
  while (true) {  // HTTP/1.0: the server closes after the body
    ssize_t n = recv(socket.fd(), buffer, sizeof(buffer), 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return absl::DeadlineExceededError(
          absl::StrCat("no answer from 127.0.0.1:", port, " within ", absl::FormatDuration(timeout)));
    }
    if (n < 0) return absl::UnavailableError("recv() failed");
    if (n == 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  const size_t header_end = answer.find("\r\n\r\n");
  HttpResponse response;
  std::istringstream status_line(answer.substr(0, answer.find("\r\n")));
  std::string version;
  if (header_end == std::string::npos || !(status_line >> version >> response.status) ||
      version.rfind("HTTP/", 0) != 0) {
    return absl::DataLossError(absl::StrCat("not an HTTP answer: ", answer.substr(0, 200)));
  }
  response.body = answer.substr(header_end + 4);
  return response;
}

absl::StatusOr<double> PrometheusSample(const std::string& text, const std::string& name,
                                        const std::map<std::string, std::string>& labels) {
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "#") || !absl::ConsumePrefix(&line, name)) continue;
    std::map<std::string, std::string> found;
    if (absl::ConsumePrefix(&line, "{")) {
      const size_t close = line.find('}');
      if (close == absl::string_view::npos) continue;
      found = ParseLabels(line.substr(0, close));
      line.remove_prefix(close + 1);
    } else if (!absl::StartsWith(line, " ")) {
      continue;  // a longer name with this prefix
    }
    if (found != labels) continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    double value = 0;
    if (fields.empty() || !absl::SimpleAtod(fields[0], &value)) {
      return absl::DataLossError(absl::StrCat("bad sample line for ", name));
    }
    return value;
  }
  return absl::NotFoundError(absl::StrCat("no sample ", name, " with these labels"));
}

}  // namespace perfcast::testing
