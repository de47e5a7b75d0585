// Test certificates, generated with OpenSSL at first use: EC P-256 keys, a CA, a server
// certificate for 127.0.0.1 and localhost, a client certificate, and an unrelated CA.
#include <memory>
#include <stdexcept>
#include <string>

#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "k8s/fake_apiserver.h"

namespace gpufair::k8s::fake {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct CertFree {
  void operator()(X509* cert) const { X509_free(cert); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
using CertPtr = std::unique_ptr<X509, CertFree>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test PKI: ") + what + " failed");
}

KeyPtr newKey() {
  KeyPtr key(EVP_EC_gen("P-256"));
  check(key != nullptr, "EVP_EC_gen");
  return key;
}

void addExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  check(ext != nullptr, "X509V3_EXT_conf_nid");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// Signs a certificate for `key` with `issuerKey` (self-signed when issuer is null).
CertPtr makeCert(EVP_PKEY* key, const std::string& commonName, X509* issuer, EVP_PKEY* issuerKey,
                 long serial, bool ca, const char* altNames, const char* extendedUsage,
                 long notBefore = -3600, long notAfter = 3600L * 24 * 365) {
  CertPtr cert(X509_new());
  check(cert != nullptr, "X509_new");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), notBefore);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), notAfter);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(commonName.c_str()), -1, -1, 0);
  if (!ca) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("system:masters"), -1, -1, 0);
  }
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  if (ca) {
    addExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    addExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    addExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    addExtension(cert.get(), signer, NID_key_usage, "critical,digitalSignature,keyEncipherment");
    addExtension(cert.get(), signer, NID_ext_key_usage, extendedUsage);
  }
  addExtension(cert.get(), signer, NID_subject_key_identifier, "hash");
  if (altNames != nullptr) addExtension(cert.get(), signer, NID_subject_alt_name, altNames);
  check(X509_sign(cert.get(), issuerKey != nullptr ? issuerKey : key, EVP_sha256()) > 0,
        "X509_sign");
  return cert;
}

std::string bioText(BIO* bio) {
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(size));
  BIO_free(bio);
  return out;
}

std::string certPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  check(PEM_write_bio_X509(bio, cert) == 1, "PEM_write_bio_X509");
  return bioText(bio);
}

std::string keyPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  check(PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
        "PEM_write_bio_PrivateKey");
  return bioText(bio);
}

TestPki generate() {
  TestPki pki;
  auto caKey = newKey();
  auto ca = makeCert(caKey.get(), "fake-apiserver-ca", nullptr, nullptr, 1, true, nullptr, nullptr);
  auto serverKey = newKey();
  auto server = makeCert(serverKey.get(), "fake-apiserver", ca.get(), caKey.get(), 2, false,
                         "IP:127.0.0.1,DNS:localhost", "serverAuth");
  auto clientKey = newKey();
  auto client = makeCert(clientKey.get(), "test-user", ca.get(), caKey.get(), 3, false, nullptr,
                         "clientAuth");
  auto otherKey = newKey();
  auto other =
      makeCert(otherKey.get(), "unrelated-ca", nullptr, nullptr, 4, true, nullptr, nullptr);
  pki.caPem = certPem(ca.get());
  pki.serverCertPem = certPem(server.get());
  pki.serverKeyPem = keyPem(serverKey.get());
  pki.clientCertPem = certPem(client.get());
  pki.clientKeyPem = keyPem(clientKey.get());
  pki.otherCaPem = certPem(other.get());
  pki.caKeyPem = keyPem(caKey.get());
  return pki;
}

}  // namespace

const TestPki& testPki() {
  static const TestPki pki = generate();
  return pki;
}

TestCert issueTestCert(const TestCertRequest& request) {
  const TestPki& pki = testPki();
  BIO* caBio = BIO_new_mem_buf(pki.caPem.data(), static_cast<int>(pki.caPem.size()));
  CertPtr ca(PEM_read_bio_X509(caBio, nullptr, nullptr, nullptr));
  BIO_free(caBio);
  BIO* keyBio = BIO_new_mem_buf(pki.caKeyPem.data(), static_cast<int>(pki.caKeyPem.size()));
  KeyPtr caKey(PEM_read_bio_PrivateKey(keyBio, nullptr, nullptr, nullptr));
  BIO_free(keyBio);
  check(ca != nullptr && caKey != nullptr, "reading the test CA");
  KeyPtr key(request.rsa ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256"));
  check(key != nullptr, "generating a key");
  auto cert = makeCert(key.get(), request.commonName, ca.get(), caKey.get(), request.serial, false,
                       request.altNames.empty() ? nullptr : request.altNames.c_str(),
                       request.client ? "clientAuth" : "serverAuth", request.notBeforeSeconds,
                       request.notAfterSeconds);
  return TestCert{certPem(cert.get()), keyPem(key.get())};
}

}  // namespace gpufair::k8s::fake
