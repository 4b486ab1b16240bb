// A minimal HTTP/1.0 GET over a loopback socket, for tests that scrape
// perfcastd's /metrics without depending on curl.
#ifndef PERFCAST_TESTS_SERVER_HTTP_GET_H_
#define PERFCAST_TESTS_SERVER_HTTP_GET_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace perfcast::testing {

struct HttpResponse {
  int status = 0;    // 200, 404, ...
  std::string body;  // after the headers
};

// GETs http://127.0.0.1:<port><path>. Unavailable if the connection fails,
// DataLoss if the answer is not HTTP.
absl::StatusOr<HttpResponse> HttpGet(int port, const std::string& path);

// The value of the sample `name{labels}` in a Prometheus text exposition,
// labels compared as a set (order and extra spaces do not matter); NotFound
// if no line has exactly these labels.
absl::StatusOr<double> PrometheusSample(const std::string& text, const std::string& name,
                                        const std::map<std::string, std::string>& labels = {});

}  // namespace perfcast::testing

#endif  // PERFCAST_TESTS_SERVER_HTTP_GET_H_
