// Command-line parsing for the gpufair binary: `gpufair COMMAND [--flag value | --flag=value]...`.
// Thread-safety: value types and free functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpufair/common/status.h"

namespace gpufair::app {

struct FlagSpec {
  std::string name;  // without the leading dashes
  std::string help;
  std::string defaultValue;  // empty: no default
  bool isSwitch = false;     // takes no value
};

struct ParsedArgs {
  std::map<std::string, std::string> flags;  // given flags, then defaults
  std::vector<std::string> positional;
  bool has(const std::string& name) const { return flags.count(name) > 0; }
  const std::string& get(const std::string& name) const;
};

// Unknown flags and missing values are errors that name the flag.
Result<ParsedArgs> parseArgs(const std::vector<std::string>& args,
                             const std::vector<FlagSpec>& specs);
std::string usage(const std::string& command, const std::string& summary,
                  const std::vector<FlagSpec>& specs);

// "10s", "500ms", "2m" -> milliseconds; errors name the text.
Result<long long> parseMillis(const std::string& text);

// The scorer registry's names (policy::scorerRegistry), joined by ", ", for help and errors.
std::string scorerList();

}  // namespace gpufair::app
