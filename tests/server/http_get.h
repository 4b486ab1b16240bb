// A minimal HTTP/1.0 GET over a loopback socket, for tests that scrape
// perfcastd's /metrics without depending on curl.
#ifndef PERFCAST_TESTS_SERVER_HTTP_GET_H_
#define PERFCAST_TESTS_SERVER_HTTP_GET_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace perfcast::testing {

struct HttpResponse {
  int status = 0;    // 200, 404, ...
  std::string body;  // after the headers
};

// GETs http://127.0.0.1:<port><path>. Unavailable if the connection fails,
// DeadlineExceeded if the server does not answer within `timeout`, DataLoss
// if the answer is not HTTP.
absl::StatusOr<HttpResponse> HttpGet(int port, const std::string& path,
                                     absl::Duration timeout = absl::Seconds(60));

// A TCP connection to 127.0.0.1:<port> that sends nothing: a stalled client.
// Closed when destroyed. Unavailable if the connection fails.
class StalledConnection {
 public:
  static absl::StatusOr<std::unique_ptr<StalledConnection>> Open(int port);
  ~StalledConnection();
  // Waits until the server closes the connection or `timeout` passes.
  void WaitUntilClosed(absl::Duration timeout);
  StalledConnection(const StalledConnection&) = delete;
  StalledConnection& operator=(const StalledConnection&) = delete;

 private:
  explicit StalledConnection(int fd) : fd_(fd) {}
  int fd_;
};

// The value of the sample `name{labels}` in a Prometheus text exposition,
// labels compared as a set (order and extra spaces do not matter); NotFound
// if no line has exactly these labels.
absl::StatusOr<double> PrometheusSample(const std::string& text, const std::string& name,
                                        const std::map<std::string, std::string>& labels = {});

}  // namespace perfcast::testing

#endif  // PERFCAST_TESTS_SERVER_HTTP_GET_H_
