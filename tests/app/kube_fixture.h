// What the app tests that run KubeSource against the fake API server share: a kubeconfig file
// pointing at it, the quota ConfigMap, and KubeSettings with short leases.
#pragma once

#include <chrono>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "k8s/fake_apiserver.h"
#include "serve_config.h"

namespace gpufair::app::testsupport {

// Writes a kubeconfig (token user) for `server` into the test's temporary directory.
inline std::string writeKubeconfig(const k8s::fake::FakeApiServer& server, const std::string& name,
                                   const std::string& token) {
  const std::string path =
      ::testing::TempDir() + "gpufair-" + name + "-" + std::to_string(server.port());
  std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                      << "clusters:\n- name: fake\n  cluster:\n    server: " << server.url()
                      << "\ncontexts:\n- name: test\n  context: {cluster: fake, user: u}\n"
                      << "users:\n- name: u\n  user: {token: " << token << "}\n";
  return path;
}

// Builds spdlog's registry (default logger, sink, formatter) on the calling thread. serve's main()
// logs before it starts any thread; a test that starts KubeSource's threads first would have them
// race to build it, behind a static guard inside libspdlog that ThreadSanitizer cannot see.
inline void initLoggingBeforeThreads() {
  spdlog::default_logger();
}

// The quota ConfigMap gpufair reads (gpufair-system, labelled, key queues.yaml).
inline nlohmann::json quotaConfigMap(const std::string& queuesYaml) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", "queues"},
            {"namespace", "gpufair-system"},
            {"labels", {{"gpufair.io/quota-config", "true"}}}}},
          {"data", {{"queues.yaml", queuesYaml}}}};
}

// gpufair-system, leases of 3 s (renew deadline 2 s, retry 1 s) so that tests run quickly.
inline KubeSettings testSettings(const std::string& kubeconfig) {
  using namespace std::chrono_literals;
  KubeSettings s;
  s.kubeconfig = kubeconfig;
  s.ns = "gpufair-system";
  s.leaseDuration = 3s;
  s.renewDeadline = 2s;
  s.retryPeriod = 1s;
  return s;
}

}  // namespace gpufair::app::testsupport
