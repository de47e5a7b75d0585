// Credentials of the API server client: TLS material (CA bundle, client certificate and key, from
// PEM data or files re-read for every new connection) and the bearer token (fixed, or a file
// re-read when it changes, as service account tokens rotate). Nothing here logs secrets.
// Thread-safety: TlsMaterial is immutable after construction; TokenSource is thread-safe.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include <boost/asio/ssl/context.hpp>

#include "gpufair/common/status.h"
#include "gpufair/k8s/client.h"

namespace gpufair::k8s {

class TlsMaterial {
 public:
  // Checks that what `config` names can be read and parsed (CA certificates, a matching client
  // certificate and key); the error names the kubeconfig field at fault.
  static Result<TlsMaterial> load(const ClientConfig& config);

  // The PEM text as it is now: inline data, or the files read again. Throws std::runtime_error
  // when a file can no longer be read.
  struct Pems {
    std::string ca, cert, key;  // empty when not configured
    bool operator==(const Pems&) const = default;
  };
  Pems read() const;
  bool hasCa() const { return !caData_.empty() || !caFile_.empty(); }

  // Configures a connection's context: with a CA bundle only those CAs are trusted (not the
  // system roots); with a client certificate it is presented. Throws std::runtime_error when a
  // file can no longer be read or what it holds is not usable (the request then fails with that
  // message).
  void configure(boost::asio::ssl::context& context) const { configure(context, read()); }
  void configure(boost::asio::ssl::context& context, const Pems& pems) const;

 private:
  std::string caData_, caFile_, certData_, certFile_, keyData_, keyFile_;
};

class TokenSource {
 public:
  TokenSource(std::string token, std::string tokenFile);
  // Reads the token file once; an unreadable or empty file is an error.
  Status init();
  // The token to send; with a token file, re-read at most once per second.
  std::string current();
  // Re-reads the token file now (after a 401); true when the token changed.
  bool refresh();
  bool fromFile() const { return !file_.empty(); }

 private:
  bool readLocked();  // requires mu_; true when the token changed

  std::mutex mu_;
  std::string token_;  // guarded by mu_
  const std::string file_;
  std::chrono::steady_clock::time_point lastRead_;  // guarded by mu_
};

}  // namespace gpufair::k8s
