// The gpufair subcommands. Each returns the process exit code: 0 success, 1 failure, 2 usage error.
#pragma once

#include <string>
#include <vector>

namespace gpufair::app {

int runServe(const std::vector<std::string>& args);
int runValidate(const std::vector<std::string>& args);
int runSimulate(const std::vector<std::string>& args);
int runTop(const std::vector<std::string>& args);
int runExplain(const std::vector<std::string>& args);
int runScorers(const std::vector<std::string>& args);  // cli.cc: the scorer registry

}  // namespace gpufair::app
