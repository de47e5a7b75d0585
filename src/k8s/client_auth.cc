#include "client_auth.h"

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace gpufair::k8s {
namespace {

constexpr std::chrono::seconds kTokenRecheck{1};

bool readFile(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  out = text.str();
  return !in.bad();
}

std::string trimmed(const std::string& s) {
  auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  auto end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

// PEM from inline data or a file; `field` names it in errors.
std::string pemOf(const std::string& data, const std::string& file, const char* field) {
  if (!data.empty()) return data;
  std::string text;
  if (!readFile(file, text)) {
    throw std::runtime_error(std::string(field) + ": cannot read " + file);
  }
  return text;
}

struct StoreFree {
  void operator()(X509_STORE* s) const { X509_STORE_free(s); }
};

// A certificate store holding every certificate of a PEM bundle.
X509_STORE* storeFromPem(const std::string& pem, const char* field) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  std::unique_ptr<X509_STORE, StoreFree> store(X509_STORE_new());
  int count = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store.get(), cert);
    X509_free(cert);
    ++count;
  }
  ERR_clear_error();  // the loop ends on "no start line"
  if (count == 0) {
    throw std::runtime_error(std::string(field) + ": no PEM certificate found");
  }
  return store.release();
}

}  // namespace

Result<TlsMaterial> TlsMaterial::load(const ClientConfig& config) {
  TlsMaterial m;
  m.caData_ = config.caData;
  m.caFile_ = config.caFile;
  m.certData_ = config.clientCertData;
  m.certFile_ = config.clientCertFile;
  m.keyData_ = config.clientKeyData;
  m.keyFile_ = config.clientKeyFile;
  bool hasCert = !m.certData_.empty() || !m.certFile_.empty();
  bool hasKey = !m.keyData_.empty() || !m.keyFile_.empty();
  if (hasCert != hasKey) {
    return Result<TlsMaterial>::failure(
        hasCert ? "client-certificate is set but client-key is missing"
                : "client-key is set but client-certificate is missing");
  }
  try {
    boost::asio::ssl::context probe(boost::asio::ssl::context::tls_client);
    m.configure(probe);
    if (hasCert && SSL_CTX_check_private_key(probe.native_handle()) != 1) {
      ERR_clear_error();
      return Result<TlsMaterial>::failure("client-key does not match client-certificate");
    }
  } catch (const std::exception& e) {
    ERR_clear_error();
    return Result<TlsMaterial>::failure(e.what());
  }
  return m;
}

TlsMaterial::Pems TlsMaterial::read() const {
  Pems pems;
  if (hasCa()) pems.ca = pemOf(caData_, caFile_, "certificate-authority");
  if (!certData_.empty() || !certFile_.empty()) {
    pems.cert = pemOf(certData_, certFile_, "client-certificate");
    pems.key = pemOf(keyData_, keyFile_, "client-key");
  }
  return pems;
}

void TlsMaterial::configure(boost::asio::ssl::context& context, const Pems& pems) const {
  if (hasCa()) {
    SSL_CTX_set_cert_store(context.native_handle(), storeFromPem(pems.ca, "certificate-authority"));
  }
  if (!certData_.empty() || !certFile_.empty()) {
    const std::string& cert = pems.cert;
    const std::string& key = pems.key;
    boost::system::error_code ec;
    context.use_certificate_chain(boost::asio::buffer(cert), ec);
    if (ec) throw std::runtime_error("client-certificate: not a PEM certificate");
    context.use_private_key(boost::asio::buffer(key), boost::asio::ssl::context::pem, ec);
    if (ec) {
      ERR_clear_error();
      std::unique_ptr<BIO, decltype(&BIO_free)> bio(
          BIO_new_mem_buf(key.data(), static_cast<int>(key.size())), &BIO_free);
      EVP_PKEY* parsed = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
      ERR_clear_error();
      if (parsed == nullptr) throw std::runtime_error("client-key: not a PEM private key");
      EVP_PKEY_free(parsed);
      throw std::runtime_error("client-key does not match client-certificate");
    }
  }
}

TokenSource::TokenSource(std::string token, std::string tokenFile)
    : token_(std::move(token)), file_(std::move(tokenFile)) {}

Status TokenSource::init() {
  if (file_.empty()) return Status::ok();
  std::lock_guard lock(mu_);
  std::string text;
  if (!readFile(file_, text)) return Status::error("tokenFile: cannot read " + file_);
  if (trimmed(text).empty()) return Status::error("tokenFile: " + file_ + " is empty");
  readLocked();
  return Status::ok();
}

std::string TokenSource::current() {
  std::lock_guard lock(mu_);
  if (!file_.empty() && std::chrono::steady_clock::now() - lastRead_ >= kTokenRecheck) {
    readLocked();
  }
  return token_;
}

bool TokenSource::refresh() {
  if (file_.empty()) return false;
  std::lock_guard lock(mu_);
  return readLocked();
}

bool TokenSource::readLocked() {
  lastRead_ = std::chrono::steady_clock::now();
  std::string text;
  if (!readFile(file_, text)) return false;  // keep the last token while the file is replaced
  auto token = trimmed(text);
  if (token.empty() || token == token_) return false;
  token_ = std::move(token);
  return true;
}

}  // namespace gpufair::k8s
