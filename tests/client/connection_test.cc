#include "client/connection.h"

#include "gtest/gtest.h"

namespace perfcast::client {
namespace {

// "(if perfcastd serves TLS, pass --tls-ca)" followed every UNAVAILABLE, a
// socket closed in the middle of a call included; only a connection that
// could not be made can be a TLS mismatch.
TEST(ConnectionHint, OnlyAConnectionThatCouldNotBeMadeGetsTheTlsHint) {
  const std::string handshake =
      "UNAVAILABLE: failed to connect to all addresses; last error: UNAVAILABLE: "
      "ipv4:127.0.0.1:7070: Socket closed";
  EXPECT_NE(ConnectionHint(handshake, /*tls=*/false).find("pass --tls-ca"), std::string::npos);
  EXPECT_NE(ConnectionHint(handshake, /*tls=*/true).find("--tls-cert"), std::string::npos);
  for (const char* other :
       {"UNAVAILABLE: Socket closed", "UNAVAILABLE: Connection reset by peer",
        "UNAVAILABLE: failed to connect to all addresses; last error: UNKNOWN: "
        "ipv4:127.0.0.1:7070: Failed to connect to remote host: Connection refused",
        "INVALID_ARGUMENT: failed to connect to all addresses"}) {
    EXPECT_EQ(ConnectionHint(other, false), "") << other;
  }
}

}  // namespace
}  // namespace perfcast::client
