#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/k8s/client.h"

namespace gpufair::k8s {
namespace {

using ::testing::HasSubstr;

const std::string kDir = std::string(GPUFAIR_SOURCE_DIR) + "/tests/k8s/testdata/kubeconfig";

Result<ClientConfig> load(const std::string& file, const std::string& context = "") {
  return loadKubeconfig(kDir + "/" + file, context);
}

TEST(KubeconfigTest, CurrentContextWithInlineCertificates) {
  auto config = load("contexts.yaml");
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->server, "https://10.0.0.1:6443");
  EXPECT_EQ(config->caData, "-----BEGIN CERTIFICATE-----\nprod-ca\n-----END CERTIFICATE-----\n");
  EXPECT_EQ(config->caFile, "");
  EXPECT_EQ(config->clientCertData,
            "-----BEGIN CERTIFICATE-----\nadmin-cert\n-----END CERTIFICATE-----\n");
  EXPECT_EQ(config->clientKeyData,
            "-----BEGIN PRIVATE KEY-----\nadmin-key\n-----END PRIVATE KEY-----\n");
  EXPECT_EQ(config->token, "");
  EXPECT_FALSE(config->insecureSkipTlsVerify);
  EXPECT_EQ(config->ns, "");
}

TEST(KubeconfigTest, ContextOverrideWithCaFileTokenAndNamespace) {
  auto config = load("contexts.yaml", "dev");
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->server, "https://dev.example.com");
  EXPECT_EQ(config->caFile, kDir + "/certs/ca.crt");  // relative to the kubeconfig
  EXPECT_EQ(config->caData, "");
  EXPECT_EQ(config->token, "dev-token-123");
  EXPECT_EQ(config->tokenFile, "");
  EXPECT_EQ(config->ns, "team-a");
}

TEST(KubeconfigTest, TokenFileCertificateFilesAndInsecure) {
  auto config = load("contexts.yaml", "lab");
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->server, "https://lab.example.com:8443");
  EXPECT_TRUE(config->insecureSkipTlsVerify);
  EXPECT_EQ(config->tokenFile, kDir + "/secrets/robot-token");
  EXPECT_EQ(config->clientCertFile, kDir + "/certs/client.crt");
  EXPECT_EQ(config->clientKeyFile, "/etc/gpufair/client.key");  // absolute stays
  EXPECT_EQ(config->ns, "gpufair-system");
}

TEST(KubeconfigTest, ContextWithoutUserHasNoCredentials) {
  auto config = load("contexts.yaml", "anonymous");
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->server, "https://lab.example.com:8443");
  EXPECT_EQ(config->token, "");
  EXPECT_EQ(config->clientCertFile, "");
}

struct ErrorCase {
  std::string name;
  std::string file;
  std::string context;
  std::string message;
};

class KubeconfigErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(KubeconfigErrorTest, NamesTheField) {
  auto config = load(GetParam().file, GetParam().context);
  ASSERT_FALSE(config);
  EXPECT_THAT(config.error(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Golden, KubeconfigErrorTest,
    ::testing::Values(
        ErrorCase{"UnknownContext", "contexts.yaml", "staging",
                  "context \"staging\" is not in contexts"},
        ErrorCase{"DanglingUser", "contexts.yaml", "dangling-user",
                  "context \"dangling-user\" names user \"bob\", which is not in users"},
        ErrorCase{"DanglingCluster", "contexts.yaml", "dangling-cluster",
                  "context \"dangling-cluster\" names cluster \"staging\", which is not in "
                  "clusters"},
        ErrorCase{"CertificateWithoutKey", "contexts.yaml", "half-cert",
                  "user \"half\" has a client certificate but no client-key"},
        ErrorCase{"BadBase64", "contexts.yaml", "bad-ca",
                  "cluster \"bad-ca\": certificate-authority-data is not valid base64"},
        ErrorCase{"ExecPlugin", "exec-plugin.yaml", "",
                  "user \"aws\" uses an exec credential plugin (command \"aws\"), which gpufair "
                  "does not support; use a token, tokenFile or client certificate"},
        ErrorCase{"AuthProvider", "auth-provider.yaml", "",
                  "user \"gcp\" uses the auth-provider \"gcp\", which gpufair does not support"},
        ErrorCase{"NoCurrentContext", "no-current-context.yaml", "", "no current-context is set"},
        ErrorCase{"WrongKind", "not-a-kubeconfig.yaml", "", "kind is \"Pod\""},
        ErrorCase{"MalformedYaml", "malformed.yaml", "", "invalid YAML"},
        ErrorCase{"MissingFile", "absent.yaml", "", "absent.yaml: cannot read the file"}),
    [](const auto& info) { return info.param.name; });

TEST(KubeconfigTest, ParseFromTextResolvesAgainstBaseDir) {
  auto config = parseKubeconfig(R"(
clusters: [{name: c, cluster: {server: "http://127.0.0.1:8001", certificate-authority: ca.pem}}]
users: [{name: u, user: {tokenFile: token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)",
                                "/srv/conf");
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->server, "http://127.0.0.1:8001");
  EXPECT_EQ(config->caFile, "/srv/conf/ca.pem");
  EXPECT_EQ(config->tokenFile, "/srv/conf/token");
}

TEST(KubeconfigTest, ClusterWithoutServer) {
  auto config = parseKubeconfig(R"(
clusters: [{name: c, cluster: {insecure-skip-tls-verify: true}}]
contexts: [{name: x, context: {cluster: c}}]
current-context: x
)",
                                "");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error(), "cluster \"c\" has no server");
}

class InClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("gpufair-sa-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(root_);
    write("token", "sa-token\n");
    write("ca.crt", "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n");
    write("namespace", "gpufair-system\n");
  }
  void TearDown() override {
    ::unsetenv("KUBERNETES_SERVICE_HOST");
    ::unsetenv("KUBERNETES_SERVICE_PORT");
    std::filesystem::remove_all(root_);
  }
  void write(const std::string& name, const std::string& content) {
    std::ofstream(root_ / name) << content;
  }
  std::filesystem::path root_;
};

TEST_F(InClusterTest, ServiceAccountFiles) {
  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto config = inClusterConfig(root_.string());
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->tokenFile, (root_ / "token").string());
  EXPECT_EQ(config->token, "");  // read by the client, and re-read when it rotates
  EXPECT_EQ(config->caFile, (root_ / "ca.crt").string());
  EXPECT_EQ(config->ns, "gpufair-system");
}

TEST_F(InClusterTest, Ipv6HostIsBracketed) {
  ::setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
  auto config = inClusterConfig(root_.string());
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->server, "https://[fd00:10:96::1]:6443");
}

TEST_F(InClusterTest, OutsideAClusterOrWithoutToken) {
  auto outside = inClusterConfig(root_.string());
  ASSERT_FALSE(outside);
  EXPECT_THAT(outside.error(), HasSubstr("KUBERNETES_SERVICE_HOST"));
  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  std::filesystem::remove(root_ / "token");
  auto noToken = inClusterConfig(root_.string());
  ASSERT_FALSE(noToken);
  EXPECT_THAT(noToken.error(), HasSubstr("service account token"));
}

}  // namespace
}  // namespace gpufair::k8s
