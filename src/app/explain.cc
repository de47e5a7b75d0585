// `gpufair explain`: why a pod is pending, or where it would go, node by node.
#include <algorithm>
#include <iostream>
#include <sstream>

#include "cli.h"
#include "commands.h"
#include "http_get.h"
#include "views.h"

namespace gpufair::app {

using nlohmann::json;

std::string renderExplain(const json& doc, int maxNodes) {
  std::ostringstream out;
  out << "pod " << doc.value("pod", "?") << " (queue " << doc.value("queue", "?") << ", "
      << gpuText(doc.value("gpus", json(nullptr))) << " GPUs): " << doc.value("state", "?");
  if (!doc.value("node", "").empty()) out << " on " << doc.value("node", "");
  out << "\n";
  if (doc.contains("queuePath")) out << "queue tree: " << doc.value("queuePath", "") << "\n";
  if (doc.contains("admission")) {
    const json& admission = doc.at("admission");
    out << "queue: ";
    if (admission.value("admitted", false)) {
      out << (admission.value("overQuota", false)
                  ? "admits it as borrowed (beyond deserved, from idle GPUs)"
                  : "admits it within its deserved quota");
    } else {
      out << "refuses it: " << admission.value("reason", "");
    }
    out << "\n";
  }
  out << doc.value("summary", "") << "\n";
  const json& nodes = doc.value("nodes", json::array());
  if (nodes.empty()) return out.str();

  std::size_t width = 4;
  for (const auto& node : nodes) width = std::max(width, node.value("name", "").size());
  out << "\n" << std::string("NODE") + std::string(width - 4, ' ') << "  FREE/GPUS  VERDICT\n";
  int shown = 0;
  for (const auto& node : nodes) {
    if (shown++ == maxNodes) {
      out << "... and " << nodes.size() - static_cast<std::size_t>(maxNodes)
          << " more nodes (--nodes N shows more)\n";
      break;
    }
    const std::string name = node.value("name", "");
    const std::string room = gpuText(node.value("free", json(nullptr))) + "/" +
                             gpuText(node.value("allocatable", json(nullptr)));
    out << name << std::string(width - name.size(), ' ') << "  " << room
        << std::string(room.size() < 9 ? 9 - room.size() : 0, ' ') << "  ";
    if (node.value("fits", false)) {
      out << "fits, score " << node.value("score", 0) << " of 10";
    } else {
      out << node.value("reason", "");
    }
    out << "\n";
  }
  return out.str();
}

int runExplain(const std::vector<std::string>& argv) {
  std::vector<FlagSpec> flags = {
      {"url", "the service's webhook address, e.g. http://127.0.0.1:8888 or https://...", ""},
      {"nodes", "nodes to list (fitting ones first, best first)", "30"}};
  for (auto& flag : clientTlsFlags()) flags.push_back(std::move(flag));
  flags.push_back({"help", "show this help", "", true});
  const std::string summary =
      "Asks a running gpufair why a pod is pending, or where it would go: its queue's decision\n"
      "and every node's verdict (fits with a score, or the reason it does not).";
  const std::string use = "explain --url URL NAMESPACE/POD";
  auto parsed = parseArgs(argv, flags);
  if (!parsed) {
    std::cerr << "gpufair: " << parsed.error() << "\n";
    return 2;
  }
  if (parsed->has("help")) {
    std::cout << usage(use, summary, flags);
    return 0;
  }
  if (!parsed->has("url") || parsed->get("url").empty() || parsed->positional.size() != 1 ||
      parsed->positional[0].find('/') == std::string::npos) {
    std::cerr << "gpufair: explain needs --url and one NAMESPACE/POD\n\n"
              << usage(use, summary, flags);
    return 2;
  }
  int maxNodes = -1;
  try {
    maxNodes = std::stoi(parsed->get("nodes"));
  } catch (const std::exception&) {
  }
  if (maxNodes < 0) {
    std::cerr << "gpufair: --nodes must be a whole number\n";
    return 2;
  }
  auto tls = readClientTls(*parsed);
  if (!tls) {
    std::cerr << "gpufair: " << tls.error() << "\n";
    return 2;
  }
  const std::string& pod = parsed->positional[0];
  auto reply = httpGet(parsed->get("url"), "/debug/explain?pod=" + urlEncode(pod), *tls);
  if (!reply) {
    std::cerr << "gpufair: " << reply.error() << "\n";
    return 1;
  }
  const json doc = json::parse(reply->body, nullptr, false);
  if (reply->status != 200) {
    const std::string why = doc.is_object() ? doc.value("Error", reply->body) : reply->body;
    std::cerr << "gpufair: " << why << "\n";
    return 1;
  }
  if (!doc.is_object()) {
    std::cerr << "gpufair: the service's answer is not JSON: " << reply->body.substr(0, 200)
              << "\n";
    return 1;
  }
  try {
    std::cout << renderExplain(doc, maxNodes);
  } catch (const json::exception& e) {
    std::cerr << "gpufair: the service's answer is not as expected: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gpufair::app
