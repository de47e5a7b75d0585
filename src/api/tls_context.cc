#include "tls_context.h"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <sstream>

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>

namespace gpufair::api::detail {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

// The file's bytes, or why it cannot be read.
Result<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Result<std::string>::failure("cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Result<std::string>::failure("cannot be read");
  return text.str();
}

std::string serialHex(X509* certificate) {
  BIGNUM* number = ASN1_INTEGER_to_BN(X509_get0_serialNumber(certificate), nullptr);
  if (number == nullptr) return "?";
  char* hex = BN_bn2hex(number);
  std::string text = hex != nullptr ? hex : "?";
  OPENSSL_free(hex);
  BN_free(number);
  return text;
}

std::chrono::system_clock::time_point notAfter(X509* certificate) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(certificate), &tm) != 1) return {};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

std::string subjectLine(X509* certificate) {
  BIO* bio = BIO_new(BIO_s_mem());
  X509_NAME_print_ex(bio, X509_get_subject_name(certificate), 0, XN_FLAG_ONELINE);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string text(data, static_cast<std::size_t>(size));
  BIO_free(bio);
  return text;
}

std::string commonName(X509* certificate) {
  char name[256] = {};
  const int n = X509_NAME_get_text_by_NID(X509_get_subject_name(certificate), NID_commonName, name,
                                          sizeof name);
  return n > 0 ? std::string(name, static_cast<std::size_t>(n)) : "";
}

// The DNS names, and with `ips` the IP addresses, of the subject alternative names.
std::vector<std::string> dnsNames(X509* certificate, bool ips = false) {
  std::vector<std::string> names;
  auto* general = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr));
  if (general == nullptr) return names;
  for (int i = 0; i < sk_GENERAL_NAME_num(general); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(general, i);
    if (ips && name->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* ip = name->d.iPAddress;
      char text[INET6_ADDRSTRLEN] = {};
      const int family = ASN1_STRING_length(ip) == 4 ? AF_INET : AF_INET6;
      if (inet_ntop(family, ASN1_STRING_get0_data(ip), text, sizeof text) != nullptr) {
        names.emplace_back(text);
      }
      continue;
    }
    if (name->type != GEN_DNS) continue;
    const ASN1_STRING* text = name->d.dNSName;
    names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                       static_cast<std::size_t>(ASN1_STRING_length(text)));
  }
  GENERAL_NAMES_free(general);
  return names;
}

// TLS 1.2 and 1.3 only, the cipher policy, no renegotiation, and the server's choice of suite.
Status applyPolicy(asio::ssl::context& context) {
  SSL_CTX* native = context.native_handle();
  if (SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(native, kTls12Ciphers) != 1) {
    return Status::error("TLS: cannot set the cipher policy");
  }
  SSL_CTX_set_options(
      native, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
  return Status::ok();
}

}  // namespace

bool clientNameAllowed(X509* certificate, const std::vector<std::string>& allowed) {
  auto listed = [&](const std::string& name) {
    return !name.empty() && std::find(allowed.begin(), allowed.end(), name) != allowed.end();
  };
  if (listed(commonName(certificate))) return true;
  for (const auto& name : dnsNames(certificate)) {
    if (listed(name)) return true;
  }
  return false;
}

std::string certificateNames(X509* certificate) {
  std::string text = "CN=" + commonName(certificate);
  for (const auto& name : dnsNames(certificate)) text += ", DNS:" + name;
  return text;
}

std::string isoTime(std::chrono::system_clock::time_point time) {
  const std::time_t t = std::chrono::system_clock::to_time_t(time);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

TlsFiles TlsContextStore::readFiles(const TlsOptions& options) {
  TlsFiles files;
  const std::pair<const char*, std::pair<const std::string*, std::string*>> wanted[] = {
      {"TLS certificate ", {&options.certFile, &files.cert}},
      {"TLS key ", {&options.keyFile, &files.key}},
      {"TLS client CA ", {&options.clientCaFile, &files.clientCa}}};
  for (const auto& [what, file] : wanted) {
    if (file.first->empty()) continue;
    auto text = readFile(*file.first);
    if (!text) {
      files.error = what + *file.first + ": " + text.error();
      return files;
    }
    *file.second = std::move(text.value());
  }
  return files;
}

Result<TlsContextStore::Served> TlsContextStore::build(const TlsFiles& files) const {
  using R = Result<Served>;
  if (!files.error.empty()) return R::failure(files.error);
  const TlsOptions& tls = options_;
  auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  if (Status policy = applyPolicy(*context); !policy.isOk()) return R::failure(policy.reason());
  error_code ec;
  if (context->use_certificate_chain(asio::buffer(files.cert), ec); ec) {
    return R::failure("TLS certificate " + tls.certFile + ": " + ec.message());
  }
  if (context->use_private_key(asio::buffer(files.key), asio::ssl::context::pem, ec); ec) {
    // Unreadable, not a key, or the key of another certificate (OpenSSL checks they match here).
    return R::failure("TLS key " + tls.keyFile + " cannot be used with the certificate " +
                      tls.certFile + ": " + ec.message());
  }
  if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
    return R::failure("TLS key " + tls.keyFile + " does not belong to the certificate " +
                      tls.certFile);
  }
  if (!tls.clientCaFile.empty()) {
    if (context->add_certificate_authority(asio::buffer(files.clientCa), ec); ec) {
      return R::failure("TLS client CA " + tls.clientCaFile + ": " + ec.message());
    }
    context->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert, ec);
    if (ec) return R::failure("TLS: " + ec.message());
  }
  X509* leaf = SSL_CTX_get0_certificate(context->native_handle());
  if (leaf == nullptr) return R::failure("TLS certificate " + tls.certFile + ": no certificate");
  return Served{context, serialHex(leaf), subjectLine(leaf), dnsNames(leaf, true), notAfter(leaf)};
}

Status TlsContextStore::load() {
  TlsFiles files = readFiles(options_);
  auto built = build(files);
  if (!built) return Status::error(built.error());
  std::lock_guard lock(mu_);
  served_ = std::move(built.value());
  servedFiles_ = std::move(files);
  return Status::ok();
}

Status TlsContextStore::reload(bool settle) {
  std::lock_guard reloading(reloadMu_);
  TlsFiles files = readFiles(options_);
  {
    std::lock_guard lock(mu_);
    if (files == servedFiles_) {
      seenFiles_.reset();
      refusedFiles_.reset();
      lastError_.clear();  // a refused change was undone: the files are what is served
      return Status::ok();
    }
    if (refusedFiles_ == files) return Status::error(lastError_);  // refused already
    if (settle && seenFiles_ != files) {
      seenFiles_ = std::move(files);  // changed since the last check: wait for the writer
      return Status::ok();
    }
  }
  auto built = build(files);
  if (built && built->notAfter <= std::chrono::system_clock::now()) {
    built = Result<Served>::failure("TLS certificate " + options_.certFile + " (serial " +
                                    built->serial + ") has expired");
  }
  std::lock_guard lock(mu_);
  seenFiles_.reset();
  if (!built) {
    refusedFiles_ = std::move(files);
    lastError_ = built.error();
    ++reloadErrors_;
    spdlog::error(
        "TLS: the changed certificate files are refused, the certificate serial {} "
        "stays in service: {}",
        served_.serial, lastError_);
    return Status::error(lastError_);
  }
  spdlog::info(
      "TLS: serving the new certificate serial {} ({}, valid until {}) to new "
      "connections (was serial {})",
      built->serial, built->subject, isoTime(built->notAfter), served_.serial);
  served_ = std::move(built.value());
  servedFiles_ = std::move(files);
  refusedFiles_.reset();
  lastError_.clear();
  ++reloads_;
  return Status::ok();
}

TlsContextPtr TlsContextStore::current() const {
  std::lock_guard lock(mu_);
  return served_.context;
}

TlsState TlsContextStore::state() const {
  std::lock_guard lock(mu_);
  return TlsState{true,     served_.serial, served_.subject, served_.names, served_.notAfter,
                  reloads_, reloadErrors_,  lastError_};
}

}  // namespace gpufair::api::detail
