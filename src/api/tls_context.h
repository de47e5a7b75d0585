// The server's TLS contexts: how one is built from the PEM files (the cipher policy, client
// certificates), and TlsContextStore, which holds the context new connections get and replaces it
// when the files change (see ExtenderServer in server.h for the rules).
// Thread-safety: TlsContextStore is thread-safe; current() never waits for a reload to read files.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/verify_context.hpp>

#include "gpufair/api/server.h"
#include "gpufair/common/status.h"

namespace gpufair::api::detail {

using TlsContextPtr = std::shared_ptr<boost::asio::ssl::context>;

// TLS 1.2 suites served: ECDHE key exchange (forward secrecy) with AEAD ciphers only, as Mozilla's
// "intermediate" configuration has them. TLS 1.3 keeps OpenSSL's suites (all AEAD).
inline constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// Whether the client certificate's subject CN or one of its DNS names is in `allowed`.
bool clientNameAllowed(X509* certificate, const std::vector<std::string>& allowed);
// "CN=x, DNS:a, DNS:b" of a certificate, for logs.
std::string certificateNames(X509* certificate);
// "2027-01-31T12:00:00Z".
std::string isoTime(std::chrono::system_clock::time_point time);

// The contents of the three files, as read at one moment (an unreadable file: error set).
struct TlsFiles {
  std::string cert;
  std::string key;
  std::string clientCa;
  std::string error;
  bool operator==(const TlsFiles& other) const = default;
};

class TlsContextStore {
 public:
  explicit TlsContextStore(TlsOptions options) : options_(std::move(options)) {}

  // Reads the files and builds the first context; the error names the file. Call once, first.
  Status load();
  // Reads the files again and serves them if they changed and are usable. `settle`: a change is
  // applied (or refused) only when the same files were read at the previous call as well (the
  // periodic check); without it at once (reloadTls()). Ok unless a change was refused.
  Status reload(bool settle);
  // The context for a new connection; never null after load().
  TlsContextPtr current() const;
  TlsState state() const;

 private:
  struct Served {
    TlsContextPtr context;
    std::string serial;
    std::string subject;
    std::vector<std::string> names;
    std::chrono::system_clock::time_point notAfter;
  };
  static TlsFiles readFiles(const TlsOptions& options);
  Result<Served> build(const TlsFiles& files) const;

  const TlsOptions options_;
  std::mutex reloadMu_;  // one reload at a time; files are read and contexts built under it only
  mutable std::mutex mu_;
  Served served_;                         // GUARDED_BY(mu_)
  TlsFiles servedFiles_;                  // GUARDED_BY(mu_)
  std::optional<TlsFiles> seenFiles_;     // GUARDED_BY(mu_): read at the last check, not served
  std::optional<TlsFiles> refusedFiles_;  // GUARDED_BY(mu_): the last change refused (not retried)
  std::string lastError_;                 // GUARDED_BY(mu_)
  std::uint64_t reloads_ = 0;             // GUARDED_BY(mu_)
  std::uint64_t reloadErrors_ = 0;        // GUARDED_BY(mu_)
};

}  // namespace gpufair::api::detail
