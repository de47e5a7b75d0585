// serve's options -> config, without starting anything: every flag lands in ServeConfig, the
// defaults are the documented ones, and every invalid value is refused with a message naming it.
#include "serve_config.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufair/policy/scorer.h"

namespace gpufair::app {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace std::chrono_literals;

ServeConfig parseOk(const std::vector<std::string>& argv) {
  auto config = parseServeConfig(argv);
  EXPECT_TRUE(config.ok()) << config.error();
  return config.ok() ? *config : ServeConfig{};
}

std::string parseError(const std::vector<std::string>& argv) {
  auto config = parseServeConfig(argv);
  EXPECT_FALSE(config.ok()) << "accepted: " << ::testing::PrintToString(argv);
  return config.ok() ? "" : config.error();
}

TEST(ServeConfigTest, DefaultsServeTheApiServerWithTheDocumentedSettings) {
  const ServeConfig c = parseOk({});
  EXPECT_FALSE(c.help);
  EXPECT_EQ(c.logLevel, "info");
  EXPECT_EQ(c.logFormat, LogFormat::kText);
  EXPECT_EQ(c.clusterFile, "");
  EXPECT_EQ(c.kube.kubeconfig, "");
  EXPECT_EQ(c.kube.context, "");
  EXPECT_EQ(c.kube.ns, "");  // chosen later: the service account's namespace, else gpufair-system
  EXPECT_TRUE(c.kube.leaderElect);
  EXPECT_EQ(c.kube.leaseName, "gpufair");
  EXPECT_EQ(c.kube.leaseDuration, 15s);
  EXPECT_EQ(c.kube.renewDeadline, 10s);
  EXPECT_EQ(c.kube.retryPeriod, 2s);
  EXPECT_EQ(c.kube.staleAfter, 60s);
  EXPECT_EQ(c.kube.bindThreads, 16u);
  EXPECT_TRUE(c.kube.bindAsync);
  EXPECT_EQ(c.server.listen, "127.0.0.1:8888");
  EXPECT_FALSE(c.server.tls.enabled());
  EXPECT_FALSE(c.server.allowInsecureHttp);
  EXPECT_EQ(c.server.threads, 1);
  EXPECT_EQ(c.server.maxBodyBytes, 64u << 20);
  EXPECT_EQ(c.server.maxHeaderBytes, 16u << 10);
  EXPECT_EQ(c.server.readTimeout, 10s);
  EXPECT_EQ(c.server.writeTimeout, 10s);
  EXPECT_EQ(c.server.idleTimeout, 90s);
  EXPECT_EQ(c.server.maxConnections, 1024u);
  EXPECT_EQ(c.mirror.assumeTtl, 30s);
  EXPECT_EQ(c.mirror.pendingTtl, 15min);
  EXPECT_EQ(c.mirror.gangTimeout, 5min);
  EXPECT_TRUE(c.reclaim.enabled);
  EXPECT_FALSE(c.reclaim.dryRun);
  EXPECT_EQ(c.reclaim.period, 5s);
  EXPECT_EQ(c.reclaim.holdFor, 2min);
  EXPECT_EQ(reclaimModeName(c.reclaim), "on");
  EXPECT_EQ(c.scorer, policy::kDefaultScorer);
  EXPECT_EQ(c.metricsListen, "127.0.0.1:9090");
  EXPECT_TRUE(c.metricsEnabled());
}

TEST(ServeConfigTest, TlsRotationAndClientNames) {
  const ServeConfig c =
      parseOk({"--tls-cert", "c.pem", "--tls-key", "k.pem", "--client-ca", "ca.pem",
               "--client-allowed-names", "kube-scheduler,gpufair-scheduler.gpufair-system",
               "--tls-reload-period", "30s"});
  EXPECT_EQ(c.server.tls.clientAllowedNames,
            (std::vector<std::string>{"kube-scheduler", "gpufair-scheduler.gpufair-system"}));
  EXPECT_EQ(c.server.tls.reloadPeriod, 30s);
  const ServeConfig defaults = parseOk({"--tls-cert", "c.pem", "--tls-key", "k.pem"});
  EXPECT_TRUE(defaults.server.tls.clientAllowedNames.empty());
  EXPECT_EQ(defaults.server.tls.reloadPeriod, 5s);
}

TEST(ServeConfigTest, EveryServerAndMirrorFlagLandsInTheConfig) {
  const ServeConfig c = parseOk({"--listen",
                                 "0.0.0.0:0",
                                 "--tls-cert",
                                 "c.pem",
                                 "--tls-key",
                                 "k.pem",
                                 "--client-ca",
                                 "ca.pem",
                                 "--allow-insecure-http",
                                 "--threads",
                                 "8",
                                 "--max-body-bytes",
                                 "1000",
                                 "--max-header-bytes",
                                 "2000",
                                 "--max-connections",
                                 "3",
                                 "--read-timeout",
                                 "1s",
                                 "--write-timeout",
                                 "2s",
                                 "--idle-timeout",
                                 "500ms",
                                 "--assume-ttl",
                                 "45s",
                                 "--pending-ttl",
                                 "2m",
                                 "--gang-timeout",
                                 "1500ms",
                                 "--scorer",
                                 "spread",
                                 "--metrics-listen",
                                 "off",
                                 "--log-level",
                                 "debug",
                                 "--log-format",
                                 "json"});
  EXPECT_EQ(c.server.listen, "0.0.0.0:0");
  EXPECT_EQ(c.server.tls.certFile, "c.pem");
  EXPECT_EQ(c.server.tls.keyFile, "k.pem");
  EXPECT_EQ(c.server.tls.clientCaFile, "ca.pem");
  EXPECT_TRUE(c.server.allowInsecureHttp);
  EXPECT_EQ(c.server.threads, 8);
  EXPECT_EQ(c.server.maxBodyBytes, 1000u);
  EXPECT_EQ(c.server.maxHeaderBytes, 2000u);
  EXPECT_EQ(c.server.maxConnections, 3u);
  EXPECT_EQ(c.server.readTimeout, 1s);
  EXPECT_EQ(c.server.writeTimeout, 2s);
  EXPECT_EQ(c.server.idleTimeout, 500ms);
  EXPECT_EQ(c.mirror.assumeTtl, 45s);
  EXPECT_EQ(c.mirror.pendingTtl, 2min);
  EXPECT_EQ(c.mirror.gangTimeout, 1s);  // whole seconds
  EXPECT_EQ(c.scorer, "spread");
  EXPECT_EQ(c.metricsListen, "off");
  EXPECT_FALSE(c.metricsEnabled());
  EXPECT_EQ(c.logLevel, "debug");
  EXPECT_EQ(c.logFormat, LogFormat::kJson);
}

TEST(ServeConfigTest, TimeLimitsOfTheMirrorAreAtLeastOneSecond) {
  const ServeConfig c =
      parseOk({"--assume-ttl", "10ms", "--pending-ttl", "0s", "--gang-timeout", "999ms"});
  EXPECT_EQ(c.mirror.assumeTtl, 1s);
  EXPECT_EQ(c.mirror.pendingTtl, 1s);
  EXPECT_EQ(c.mirror.gangTimeout, 1s);
}

TEST(ServeConfigTest, EveryKubeFlagLandsInTheConfig) {
  const ServeConfig c =
      parseOk({"--kubeconfig", "/kc", "--context", "prod", "--namespace", "sched", "--leader-elect",
               "false", "--lease-name", "gf", "--lease-duration", "30s", "--renew-deadline", "20s",
               "--retry-period", "5s", "--stale-after", "2m"});
  EXPECT_EQ(c.clusterFile, "");
  EXPECT_EQ(c.kube.kubeconfig, "/kc");
  EXPECT_EQ(c.kube.context, "prod");
  EXPECT_EQ(c.kube.ns, "sched");
  EXPECT_FALSE(c.kube.leaderElect);
  EXPECT_EQ(c.kube.leaseName, "gf");
  EXPECT_EQ(c.kube.leaseDuration, 30s);
  EXPECT_EQ(c.kube.renewDeadline, 20s);
  EXPECT_EQ(c.kube.retryPeriod, 5s);
  EXPECT_EQ(c.kube.staleAfter, 2min);
  EXPECT_EQ(c.kube.followLeaseName, "");
  EXPECT_EQ(c.kube.schedulerName, "gpufair");
  EXPECT_FALSE(c.mirror.offeredPodsAreDemand) << "demand is what the API server says exists";
}

TEST(ServeConfigTest, FilterModes) {
  EXPECT_EQ(parseOk({}).filterMode.keep, 1u) << "best, chosen by the load driver's figures";
  EXPECT_EQ(parseOk({"--filter-mode", "all"}).filterMode.keep, 0u);
  EXPECT_EQ(parseOk({"--filter-mode", "best"}).filterMode.keep, 1u);
  EXPECT_EQ(parseOk({"--filter-mode", "top-4"}).filterMode.keep, 4u);
  EXPECT_EQ(parseError({"--filter-mode", "some"}),
            "--filter-mode: filter mode must be all, best or top-N with N >= 1, not \"some\"");
}

TEST(ServeConfigTest, BindThreadsFromNoneToMany) {
  EXPECT_EQ(parseOk({"--bind-threads", "0"}).kube.bindThreads, 0u);  // on the io thread
  EXPECT_EQ(parseOk({"--bind-threads", "256"}).kube.bindThreads, 256u);
  for (const char* bad : {"257", "-1", "x"}) {
    EXPECT_EQ(parseError({"--bind-threads", bad}),
              "--bind-threads must be a whole number from 0 to 256")
        << bad;
  }
}

TEST(ServeConfigTest, BindModeAsyncOrThreads) {
  EXPECT_TRUE(parseOk({"--bind-mode", "async"}).kube.bindAsync);
  EXPECT_FALSE(parseOk({"--bind-mode", "threads"}).kube.bindAsync);
  for (const char* bad : {"sync", "", "ASYNC"}) {
    EXPECT_EQ(parseError({"--bind-mode", bad}), "--bind-mode must be async or threads") << bad;
  }
}

TEST(ServeConfigTest, FollowingTheSchedulerLeaseAndItsProfile) {
  const ServeConfig c = parseOk({"--follow-scheduler-lease", "gpufair-system/gpufair-scheduler",
                                 "--scheduler-name", "gpu-profile"});
  EXPECT_EQ(c.kube.followLeaseNs, "gpufair-system");
  EXPECT_EQ(c.kube.followLeaseName, "gpufair-scheduler");
  EXPECT_EQ(c.kube.schedulerName, "gpu-profile");
  for (const char* bad : {"gpufair-scheduler", "/x", "ns/", "a/b/c"}) {
    EXPECT_EQ(parseError({"--follow-scheduler-lease", bad}),
              "--follow-scheduler-lease must be NAMESPACE/NAME, e.g. "
              "gpufair-system/gpufair-scheduler")
        << bad;
  }
  EXPECT_TRUE(parseOk({"--cluster", "c.yaml"}).mirror.offeredPodsAreDemand)
      << "a cluster file has no watch: offered pods are its demand";
}

TEST(ServeConfigTest, AClusterFileIsServedInItsNamespaceWithoutCheckingLeaderElection) {
  const ServeConfig c = parseOk({"--cluster", "c.yaml", "--leader-elect", "maybe"});
  EXPECT_EQ(c.clusterFile, "c.yaml");
  EXPECT_EQ(c.clusterNamespace, "gpufair-system");
  EXPECT_EQ(parseOk({"--cluster", "c.yaml", "--namespace", "ops"}).clusterNamespace, "ops");
}

TEST(ServeConfigTest, ConsolidateModes) {
  const ServeConfig defaults = parseOk({});
  EXPECT_FALSE(defaults.consolidate.enabled);  // off unless asked: behaviour unchanged
  EXPECT_EQ(consolidationModeName(defaults.consolidate), "off");
  EXPECT_TRUE(defaults.consolidate.reclaimEnabled);
  const ServeConfig dry = parseOk({"--consolidate=dry-run", "--consolidate-period", "2s",
                                   "--consolidate-timeout", "90s", "--reclaim", "off"});
  EXPECT_TRUE(dry.consolidate.enabled);
  EXPECT_TRUE(dry.consolidate.dryRun);
  EXPECT_EQ(consolidationModeName(dry.consolidate), "dry-run");
  EXPECT_EQ(dry.consolidate.period, 2s);
  EXPECT_EQ(dry.consolidate.holdFor, 90s);
  EXPECT_FALSE(dry.consolidate.reclaimEnabled);
  EXPECT_EQ(consolidationModeName(parseOk({"--consolidate", "on"}).consolidate), "on");
  auto bad = parseServeConfig({"--consolidate", "sometimes"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "--consolidate must be on, dry-run or off, not \"sometimes\"");
  EXPECT_FALSE(parseServeConfig({"--consolidate-timeout", "10ms"}).ok());
}

TEST(ServeConfigTest, ReclaimModes) {
  EXPECT_EQ(reclaimModeName(parseOk({"--reclaim", "off"}).reclaim), "off");
  EXPECT_FALSE(parseOk({"--reclaim", "off"}).reclaim.enabled);
  const ServeConfig dry =
      parseOk({"--reclaim=dry-run", "--reclaim-period", "100ms", "--reclaim-hold", "90s"});
  EXPECT_TRUE(dry.reclaim.enabled);
  EXPECT_TRUE(dry.reclaim.dryRun);
  EXPECT_EQ(reclaimModeName(dry.reclaim), "dry-run");
  EXPECT_EQ(dry.reclaim.period, 100ms);
  EXPECT_EQ(dry.reclaim.holdFor, 90s);
}

TEST(ServeConfigTest, HelpIsAnswerAndUsageListsEveryFlag) {
  EXPECT_TRUE(parseOk({"--help"}).help);
  EXPECT_TRUE(parseOk({"--threads", "0", "--help"}).help);  // help wins over invalid values
  const std::string text = serveUsage();
  for (const FlagSpec& flag : serveFlags()) EXPECT_THAT(text, HasSubstr("--" + flag.name));
  EXPECT_EQ(serveFlags().back().name, "help");
}

TEST(ServeConfigTest, UnknownFlagsAndMissingValuesComeWithTheUsage) {
  const std::string unknown = parseError({"--nope"});
  EXPECT_THAT(unknown, StartsWith("unknown flag --nope\n\n"));
  EXPECT_THAT(unknown, HasSubstr(serveUsage()));
  EXPECT_THAT(parseError({"--listen"}), StartsWith("flag --listen needs a value\n\n"));
}

struct InvalidCase {
  const char* name;
  std::vector<std::string> argv;
  std::string error;
};

class ServeConfigErrorTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(ServeConfigErrorTest, IsRefusedWithAMessageNamingTheFlag) {
  EXPECT_EQ(parseError(GetParam().argv), GetParam().error);
}

const std::string kDuration = " is not a duration like 500ms, 10s or 2m";

INSTANTIATE_TEST_SUITE_P(
    EveryValidation, ServeConfigErrorTest,
    ::testing::Values(
        InvalidCase{
            "LogFormat", {"--log-format", "xml"}, "--log-format must be text or json, not \"xml\""},
        InvalidCase{"LogLevel",
                    {"--log-level", "loud"},
                    "--log-level must be trace, debug, info, warn, error or off"},
        InvalidCase{"FileAndCluster",
                    {"--cluster", "c.yaml", "--kubeconfig", "kc"},
                    "--cluster and --kubeconfig exclude each other: serve a file or a cluster"},
        InvalidCase{
            "CertWithoutKey", {"--tls-cert", "c.pem"}, "--tls-cert and --tls-key go together"},
        InvalidCase{
            "KeyWithoutCert", {"--tls-key", "k.pem"}, "--tls-cert and --tls-key go together"},
        InvalidCase{"ClientCaWithoutTls",
                    {"--client-ca", "ca.pem"},
                    "--client-ca needs --tls-cert and --tls-key"},
        InvalidCase{"AllowedNamesWithoutClientCa",
                    {"--tls-cert", "c.pem", "--tls-key", "k.pem", "--client-allowed-names", "a"},
                    "--client-allowed-names needs --client-ca (client certificates)"},
        InvalidCase{"AllowedNamesWithAnEmptyName",
                    {"--tls-cert", "c.pem", "--tls-key", "k.pem", "--client-ca", "ca.pem",
                     "--client-allowed-names", "a,,b"},
                    "--client-allowed-names: an empty name in \"a,,b\""},
        InvalidCase{"TlsReloadPeriod",
                    {"--tls-reload-period", "often"},
                    "--tls-reload-period: \"often\"" + kDuration},
        InvalidCase{
            "ReadTimeout", {"--read-timeout", "soon"}, "--read-timeout: \"soon\"" + kDuration},
        InvalidCase{"IdleTimeout", {"--idle-timeout", "x"}, "--idle-timeout: \"x\"" + kDuration},
        InvalidCase{
            "WriteTimeout", {"--write-timeout", "1d"}, "--write-timeout: \"1d\"" + kDuration},
        InvalidCase{"MaxBodyBytes",
                    {"--max-body-bytes", "0"},
                    "--max-body-bytes must be a positive whole number, not \"0\""},
        InvalidCase{"MaxHeaderBytes",
                    {"--max-header-bytes", "1k"},
                    "--max-header-bytes must be a positive whole number, not \"1k\""},
        InvalidCase{"MaxConnections",
                    {"--max-connections", "many"},
                    "--max-connections must be a positive whole number, not \"many\""},
        InvalidCase{
            "ThreadsZero", {"--threads", "0"}, "--threads must be a whole number from 1 to 64"},
        InvalidCase{
            "ThreadsTooMany", {"--threads", "65"}, "--threads must be a whole number from 1 to 64"},
        InvalidCase{"AssumeTtl", {"--assume-ttl", "never"}, "--assume-ttl: \"never\"" + kDuration},
        InvalidCase{"PendingTtl", {"--pending-ttl", "x"}, "--pending-ttl: \"x\"" + kDuration},
        InvalidCase{"GangTimeout", {"--gang-timeout", "y"}, "--gang-timeout: \"y\"" + kDuration},
        InvalidCase{"ReclaimMode",
                    {"--reclaim", "maybe"},
                    "--reclaim must be on, dry-run or off, not \"maybe\""},
        InvalidCase{"ReclaimPeriod",
                    {"--reclaim-period", "50ms"},
                    "--reclaim-period must be at least 100ms"},
        InvalidCase{
            "ReclaimHold", {"--reclaim-hold", "500ms"}, "--reclaim-hold must be at least 1s"},
        InvalidCase{
            "LeaderElect", {"--leader-elect", "yes"}, "--leader-elect must be true or false"},
        InvalidCase{
            "LeaseDuration", {"--lease-duration", "500ms"}, "--lease-duration must be at least 1s"},
        InvalidCase{
            "RenewDeadline", {"--renew-deadline", "x"}, "--renew-deadline must be at least 1s"},
        InvalidCase{"RetryPeriod", {"--retry-period", "0s"}, "--retry-period must be at least 1s"},
        InvalidCase{"StaleAfter", {"--stale-after", "999ms"}, "--stale-after must be at least 1s"},
        InvalidCase{"LeaseOrder",
                    {"--lease-duration", "10s", "--renew-deadline", "10s"},
                    "leader election needs --lease-duration > --renew-deadline > --retry-period"},
        InvalidCase{"RetryNotBelowRenew",
                    {"--renew-deadline", "2s", "--retry-period", "2s"},
                    "leader election needs --lease-duration > --renew-deadline > --retry-period"}),
    [](const ::testing::TestParamInfo<InvalidCase>& info) { return std::string(info.param.name); });

TEST(ServeConfigTest, AnUnknownScorerListsTheKnownOnes) {
  std::string known;
  for (const auto& n : policy::scorerNames()) known += (known.empty() ? "" : ", ") + n;
  EXPECT_EQ(parseError({"--scorer", "no-such-scorer"}),
            "--scorer no-such-scorer is not a known strategy (" + known + ")");
}

TEST(ServeConfigTest, TheFirstProblemInFlagOrderIsReported) {
  // The log flags are checked first, then the webhook server, the mirror, reclaim and the scorer.
  EXPECT_EQ(parseError({"--threads", "0", "--log-level", "loud"}),
            "--log-level must be trace, debug, info, warn, error or off");
  EXPECT_EQ(parseError({"--reclaim", "x", "--threads", "0"}),
            "--threads must be a whole number from 1 to 64");
}

}  // namespace
}  // namespace gpufair::app
