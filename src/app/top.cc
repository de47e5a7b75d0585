// `gpufair top`: a terminal view of a running service, refreshed like top.
#include <algorithm>
#include <cmath>
#include <csignal>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "cli.h"
#include "commands.h"
#include "http_get.h"
#include "views.h"

namespace gpufair::app {
namespace {

using nlohmann::json;

double number(const json& value) {
  return value.is_number() ? value.get<double>() : 0.0;
}

std::string padRight(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

std::string padLeft(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

// [####+.....]: '#' a cell fully used, '+' a cell partly used, '.' free.
std::string bar(double used, double allocatable, int maxWidth) {
  if (allocatable <= 0) return "[" + std::string(static_cast<std::size_t>(maxWidth), ' ') + "]";
  const int cells = allocatable <= maxWidth && allocatable == std::floor(allocatable)
                        ? static_cast<int>(allocatable)
                        : maxWidth;
  const double perCell = allocatable / cells;
  const double filled = std::min(used, allocatable) / perCell;
  const int full = static_cast<int>(std::floor(filled + 1e-9));
  const bool partial = filled - full > 1e-9;
  std::string out = "[" + std::string(static_cast<std::size_t>(full), '#');
  if (partial) out += '+';
  out += std::string(static_cast<std::size_t>(cells - full - (partial ? 1 : 0)), '.');
  return out + "]";
}

std::size_t longest(const json& rows, const char* key, std::size_t least) {
  std::size_t width = least;
  for (const auto& row : rows) width = std::max(width, row.value(key, std::string()).size());
  return width;
}

// Queues in tree order: each top-level queue (in the document's order), then its children, depth
// first; each with its name indented two spaces per level. A flat config keeps its order.
std::vector<std::pair<const json*, std::string>> queueTree(const json& queues) {
  std::map<std::string, std::vector<const json*>> children;
  std::map<std::string, bool> known;
  for (const auto& q : queues) known[q.value("name", "")] = true;
  std::vector<const json*> roots;
  for (const auto& q : queues) {
    const std::string parent = q.value("parent", "");
    if (parent.empty() || known.count(parent) == 0) {
      roots.push_back(&q);
    } else {
      children[parent].push_back(&q);
    }
  }
  std::vector<std::pair<const json*, std::string>> out;
  std::vector<std::pair<const json*, std::size_t>> stack;
  for (auto it = roots.rbegin(); it != roots.rend(); ++it) stack.push_back({*it, 0});
  while (!stack.empty() && out.size() < queues.size()) {
    const auto [q, depth] = stack.back();
    stack.pop_back();
    const std::string name = q->value("name", "");
    out.push_back({q, std::string(2 * depth, ' ') + name});
    const auto& kids = children[name];
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back({*it, depth + 1});
  }
  return out;
}

std::string pendingKey(const json& pod) {
  return pod.value("namespace", "") + "/" + pod.value("name", "");
}

}  // namespace

std::string gpuText(const json& amount) {
  if (amount.is_null()) return "-";
  if (amount.is_number_integer()) return std::to_string(amount.get<long long>());
  std::ostringstream out;
  out << std::setprecision(3) << number(amount);
  return out.str();
}

std::string renderTop(const json& snapshot, const std::map<std::string, std::string>& reasons,
                      const TopOptions& options) {
  std::ostringstream out;
  if (!options.title.empty()) out << options.title << "\n";
  const json& cluster = snapshot.at("cluster");
  out << "cluster: " << cluster.value("nodes", 0) << " nodes, " << gpuText(cluster.at("capacity"))
      << " GPUs, " << gpuText(cluster.at("allocated")) << " allocated, "
      << gpuText(cluster.at("free")) << " free, largest free block "
      << gpuText(cluster.at("largestFreeBlock")) << ", " << cluster.value("pendingPods", 0)
      << " pending pods (generation " << snapshot.value("generation", 0) << ")\n\n";

  const json& nodes = snapshot.at("nodes");
  const std::size_t nameWidth = longest(nodes, "name", 4);
  out << padRight("NODE", nameWidth) << "  " << padRight("GPUS", 24)
      << "  USED/TOTAL   FREE  PODS\n";
  for (const auto& node : nodes) {
    std::string state;
    if (node.value("deleting", false)) {
      state = "  (deleting)";
    } else if (node.value("unschedulable", false)) {
      state = "  (cordoned)";
    }
    const std::string usedTotal = gpuText(node.at("used")) + "/" + gpuText(node.at("allocatable"));
    out << padRight(node.value("name", ""), nameWidth) << "  "
        << padRight(bar(number(node.at("used")), number(node.at("allocatable")), options.barWidth),
                    24)
        << "  " << padLeft(usedTotal, 10) << "  " << padLeft(gpuText(node.at("free")), 5) << "  "
        << padLeft(std::to_string(node.value("pods", json::array()).size()), 4) << state << "\n";
  }

  const auto queues = queueTree(snapshot.at("queues"));
  std::size_t queueWidth = 5;
  for (const auto& row : queues) queueWidth = std::max(queueWidth, row.second.size());
  out << "\n"
      << padRight("QUEUE", queueWidth)
      << "  ALLOCATED  DESERVED  FAIR SHARE  LIMIT  BORROWED  PENDING  USE/FAIR\n";
  for (const auto& [row, label] : queues) {
    const json& q = *row;
    const double fair = number(q.value("fairShare", json(0)));
    std::string use = "-";
    if (fair > 0) {
      std::ostringstream pct;
      pct << std::fixed << std::setprecision(0) << 100.0 * number(q.at("allocated")) / fair << "%";
      use = pct.str();
    }
    out << padRight(label, queueWidth) << "  " << padLeft(gpuText(q.at("allocated")), 9) << "  "
        << padLeft(gpuText(q.at("deserved")), 8) << "  "
        << padLeft(gpuText(q.value("fairShare", json(nullptr))), 10) << "  "
        << padLeft(gpuText(q.at("limit")), 5) << "  " << padLeft(gpuText(q.at("overQuota")), 8)
        << "  " << padLeft(gpuText(q.at("pending")), 7) << "  " << padLeft(use, 8) << "\n";
  }

  const json& pending = snapshot.at("pending");
  out << "\n";
  if (pending.empty()) {
    out << "no pending pods\n";
    return out.str();
  }
  std::size_t podWidth = 3;
  for (const auto& pod : pending) podWidth = std::max(podWidth, pendingKey(pod).size());
  const std::size_t pendingQueueWidth = longest(pending, "queue", 5);
  out << padRight("PENDING POD", std::max<std::size_t>(podWidth, 11)) << "  "
      << padRight("QUEUE", pendingQueueWidth) << "  GPUS  REASON\n";
  int shown = 0;
  for (const auto& pod : pending) {
    if (shown++ == options.maxPending) {
      out << "... and " << pending.size() - static_cast<std::size_t>(options.maxPending)
          << " more pending pods\n";
      break;
    }
    const std::string key = pendingKey(pod);
    auto reason = reasons.find(key);
    out << padRight(key, std::max<std::size_t>(podWidth, 11)) << "  "
        << padRight(pod.value("queue", ""), pendingQueueWidth) << "  "
        << padLeft(gpuText(pod.at("gpus")), 4) << "  "
        << (reason == reasons.end() ? "-" : reason->second) << "\n";
  }
  return out.str();
}

namespace {

volatile std::sig_atomic_t gTopStop = 0;
extern "C" void onTopSignal(int) {
  gTopStop = 1;
}

std::string nowText() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

// One frame: the snapshot and the reasons of the pending pods shown. Errors in words.
Result<std::string> frame(const std::string& url, const ClientTls& tls, const TopOptions& options) {
  auto reply = httpGet(url, "/debug/snapshot", tls);
  if (!reply) return Result<std::string>::failure(reply.error());
  if (reply->status != 200) {
    return Result<std::string>::failure("GET " + url + "/debug/snapshot answered " +
                                        std::to_string(reply->status) + ": " + reply->body);
  }
  const json snapshot = json::parse(reply->body, nullptr, false);
  if (snapshot.is_discarded() || !snapshot.is_object() || !snapshot.contains("nodes") ||
      !snapshot.contains("cluster") || !snapshot.contains("queues") ||
      !snapshot.contains("pending")) {
    return Result<std::string>::failure(url + "/debug/snapshot did not return a gpufair snapshot");
  }
  std::map<std::string, std::string> reasons;
  int asked = 0;
  for (const auto& pod : snapshot.at("pending")) {
    if (asked++ == options.maxPending) break;
    const std::string key = pendingKey(pod);
    auto explained = httpGet(url, "/debug/explain?pod=" + urlEncode(key), tls);
    if (!explained || explained->status != 200) continue;  // gone since the snapshot: no reason
    const json doc = json::parse(explained->body, nullptr, false);
    if (doc.is_object() && doc.contains("summary")) reasons[key] = doc.value("summary", "");
  }
  try {
    return renderTop(snapshot, reasons, options);
  } catch (const json::exception& e) {
    return Result<std::string>::failure(url + "/debug/snapshot is not as expected: " + e.what());
  }
}

}  // namespace

int runTop(const std::vector<std::string>& argv) {
  std::vector<FlagSpec> flags = {
      {"url", "the service's webhook address, e.g. http://127.0.0.1:8888 or https://...", ""},
      {"interval", "time between refreshes", "2s"},
      {"once", "print one view and exit", "", true},
      {"pending", "pending pods to list (each with its reason)", "20"}};
  for (auto& flag : clientTlsFlags()) flags.push_back(std::move(flag));
  flags.push_back({"help", "show this help", "", true});
  const std::string summary =
      "A terminal view of a running gpufair: a bar of used / free GPUs per node, each queue's\n"
      "allocation against its deserved quota and fair share, and why pending pods wait.\n"
      "Refreshes every --interval until Ctrl-C; --once prints one view.";
  auto parsed = parseArgs(argv, flags);
  if (!parsed) {
    std::cerr << "gpufair: " << parsed.error() << "\n";
    return 2;
  }
  if (parsed->has("help")) {
    std::cout << usage("top --url URL [flags]", summary, flags);
    return 0;
  }
  if (!parsed->has("url") || parsed->get("url").empty()) {
    std::cerr << "gpufair: top needs --url\n\n" << usage("top --url URL [flags]", summary, flags);
    return 2;
  }
  auto interval = parseMillis(parsed->get("interval"));
  if (!interval || *interval < 100) {
    std::cerr << "gpufair: --interval must be a duration of at least 100ms\n";
    return 2;
  }
  TopOptions options;
  try {
    options.maxPending = std::stoi(parsed->get("pending"));
  } catch (const std::exception&) {
    options.maxPending = -1;
  }
  if (options.maxPending < 0) {
    std::cerr << "gpufair: --pending must be a whole number\n";
    return 2;
  }
  auto tls = readClientTls(*parsed);
  if (!tls) {
    std::cerr << "gpufair: " << tls.error() << "\n";
    return 2;
  }
  const std::string url = parsed->get("url");
  if (parsed->has("once")) {
    auto text = frame(url, *tls, options);
    if (!text) {
      std::cerr << "gpufair: " << text.error() << "\n";
      return 1;
    }
    std::cout << *text << std::flush;
    return 0;
  }
  std::signal(SIGINT, onTopSignal);
  std::signal(SIGTERM, onTopSignal);
  while (gTopStop == 0) {
    options.title = "gpufair top - " + url + " - " + nowText() + " (every " +
                    parsed->get("interval") + ", Ctrl-C to quit)";
    auto text = frame(url, *tls, options);
    std::cout << "\x1b[H\x1b[2J" << (text ? *text : options.title + "\n\n" + text.error() + "\n")
              << std::flush;
    for (long long waited = 0; waited < *interval && gTopStop == 0; waited += 100) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return 0;
}

}  // namespace gpufair::app
