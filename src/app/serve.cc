// `gpufair serve`: the extender webhooks over a cluster from a file (demos, tests) or the API
// server: options -> config (serve_config.h) -> run (serve_runner.h). And `gpufair validate`:
// checks a quota file offline with the same code the service uses.
#include <algorithm>
#include <iostream>
#include <map>
#include <utility>
#include <vector>

#include "gpufair/config/cluster_file.h"
#include "gpufair/config/quota.h"

#include "cli.h"
#include "commands.h"
#include "logging.h"
#include "serve_config.h"
#include "serve_runner.h"

namespace gpufair::app {
namespace {

int fail(const std::string& message, int code = 1) {
  std::cerr << "gpufair: " << message << "\n";
  return code;
}

// One line per queue; a queue tree as a tree (children indented under their parent).
void printQueues(const QuotaConfig& quota) {
  std::map<std::string, std::vector<const QueueQuota*>, std::less<>> children;
  std::vector<const QueueQuota*> roots;
  for (const auto& q : quota.queues) {
    const bool known = std::any_of(quota.queues.begin(), quota.queues.end(),
                                   [&](const QueueQuota& p) { return p.name == q.parent; });
    if (q.parent.empty() || !known) {
      roots.push_back(&q);
    } else {
      children[q.parent].push_back(&q);
    }
  }
  std::vector<std::pair<const QueueQuota*, std::size_t>> stack;
  for (auto it = roots.rbegin(); it != roots.rend(); ++it) stack.push_back({*it, 0});
  std::size_t printed = 0;
  while (!stack.empty() && printed++ < quota.queues.size()) {
    const auto [q, depth] = stack.back();
    stack.pop_back();
    const auto& kids = children[q->name];
    std::cout << "  " << std::string(2 * depth, ' ') << "queue " << q->name << ": deserved "
              << formatGpus(q->gpu.deserved) << ", limit "
              << (q->gpu.limit ? formatGpus(*q->gpu.limit) : "none") << ", overQuotaWeight "
              << q->gpu.overQuotaWeight;
    if (q->priority != 0) std::cout << ", priority " << q->priority;
    if (!kids.empty()) std::cout << ", parent of " << kids.size();
    std::cout << "\n";
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back({*it, depth + 1});
  }
}

}  // namespace

int runServe(const std::vector<std::string>& argv) {
  auto config = parseServeConfig(argv);
  if (!config) return fail(config.error(), 2);
  if (config->help) {
    std::cout << serveUsage();
    return 0;
  }
  if (Status logging = configureLogging(config->logLevel, config->logFormat); !logging.isOk()) {
    return fail(logging.reason(), 2);
  }
  return runServeConfig(*config);
}

int runValidate(const std::vector<std::string>& argv) {
  const std::vector<FlagSpec> flags = {
      {"namespace", "gpufair's namespace, for quota ConfigMaps in cluster files", "gpufair-system"},
      {"help", "show this help", "", true}};
  const std::string summary =
      "Checks files offline with the service's own parsers: a queues.yaml document, a ConfigMap\n"
      "manifest carrying one, or a cluster file for serve --cluster (Nodes, Pods, ConfigMaps).\n"
      "Prints every problem as FILE:LINE:COL: what is wrong; exits 1 if any file is invalid.\n"
      "Several quota files are also checked together, as kubectl apply -f of all of them would\n"
      "leave gpufair's namespace: a ConfigMap of a later file replaces an earlier one of the same\n"
      "name, and a queue or namespace defined in two places is an error naming both.";
  auto parsed = parseArgs(argv, flags);
  if (!parsed) return fail(parsed.error(), 2);
  if (parsed->has("help") || parsed->positional.empty()) {
    std::cout << usage("validate [flags] FILE...", summary, flags);
    return parsed->has("help") ? 0 : 2;
  }
  int status = 0;
  std::vector<std::vector<config::QuotaObject>> quotaFiles;
  const bool several = parsed->positional.size() > 1;
  for (const auto& path : parsed->positional) {
    auto quota = config::loadQuotaFile(path);
    auto sources = config::loadQuotaSources(path);
    if (!quota && several && sources) {
      // Valid on its own but for its queue tree: a parent may live in another of the files.
      std::cout << path << ": parsed; its queue tree is checked with the other files:\n"
                << quota.error() << "\n";
      quotaFiles.push_back(std::move(sources).value());
      continue;
    }
    if (quota) {
      std::cout << path << ": ok, " << quota->queues.size() << " queue"
                << (quota->queues.size() == 1 ? "" : "s") << "\n";
      printQueues(*quota);
      quotaFiles.push_back(std::move(sources).value());
      continue;
    }
    // Not a quota file? It may be a whole cluster file (Nodes and Pods as well).
    if (quota.error().find("expected queues.yaml or a ConfigMap") != std::string::npos) {
      auto cluster = config::loadClusterFile(path, parsed->get("namespace"));
      if (cluster) {
        std::cout << path << ": ok, cluster file with " << cluster->nodes.size() << " nodes, "
                  << cluster->pods.size() << " pods, " << cluster->quota.queues.size()
                  << " queues\n";
        printQueues(cluster->quota);
        for (const auto& note : cluster->notes) std::cout << "  note: " << note << "\n";
        continue;
      }
      std::cerr << cluster.error() << "\n";
    } else {
      std::cerr << quota.error() << "\n";
    }
    status = 1;
  }
  if (quotaFiles.size() > 1) {
    std::vector<std::string> replaced;
    auto together = config::mergeQuotaFiles(quotaFiles, &replaced);
    for (const auto& line : replaced) std::cout << "  note: " << line << "\n";
    if (together) {
      std::cout << "the " << quotaFiles.size() << " quota files together: ok, "
                << together->queues.size() << " queues\n";
      printQueues(*together);
    } else {
      std::cerr << "the " << quotaFiles.size()
                << " quota files together (as kubectl apply -f of all of them): "
                << together.error() << "\n";
      status = 1;
    }
  }
  return status;
}

}  // namespace gpufair::app
