// gpufair: a GPU scheduler for shared Kubernetes clusters, as a kube-scheduler extender.
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"

namespace {

constexpr const char* kUsage = R"(Usage: gpufair COMMAND [flags]

Commands:
  serve      serve kube-scheduler's extender webhooks (see: gpufair serve --help)
  validate   check quota files offline (see: gpufair validate --help)
  simulate   replay a trace through the engine (see: gpufair simulate --help)
  top        watch a running service: nodes, queues, pending pods (see: gpufair top --help)
  explain    why a pod is pending, node by node (see: gpufair explain --help)
  scorers    list the placement strategies (--describe: with what each does)
  version    print the version

gpufair shares GPUs fairly between teams: per-team quotas, fragmentation-aware placement,
and borrowing of idle GPUs.
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "serve") return gpufair::app::runServe(args);
    if (command == "validate") return gpufair::app::runValidate(args);
    if (command == "simulate") return gpufair::app::runSimulate(args);
    if (command == "top") return gpufair::app::runTop(args);
    if (command == "explain") return gpufair::app::runExplain(args);
    if (command == "scorers") return gpufair::app::runScorers(args);
    if (command == "version" || command == "--version") {
      std::cout << "gpufair " << GPUFAIR_VERSION << "\n";
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "gpufair: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "gpufair: unknown command \"" << command << "\"\n\n" << kUsage;
  return 2;
}
