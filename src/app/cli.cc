#include "cli.h"

#include <charconv>
#include <iostream>

#include "gpufair/policy/scorer.h"

#include "commands.h"

namespace gpufair::app {

const std::string& ParsedArgs::get(const std::string& name) const {
  static const std::string kEmpty;
  auto it = flags.find(name);
  return it == flags.end() ? kEmpty : it->second;
}

Result<ParsedArgs> parseArgs(const std::vector<std::string>& args,
                             const std::vector<FlagSpec>& specs) {
  ParsedArgs out;
  auto find = [&](const std::string& name) -> const FlagSpec* {
    for (const auto& s : specs) {
      if (s.name == name) return &s;
    }
    return nullptr;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0 || a == "--") {
      out.positional.push_back(a);
      continue;
    }
    std::string name = a.substr(2);
    std::string value;
    bool hasValue = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
      hasValue = true;
    }
    const FlagSpec* spec = find(name);
    if (spec == nullptr) return Result<ParsedArgs>::failure("unknown flag --" + name);
    if (spec->isSwitch) {
      out.flags[name] = hasValue ? value : "true";
      continue;
    }
    if (!hasValue) {
      if (i + 1 >= args.size())
        return Result<ParsedArgs>::failure("flag --" + name + " needs a value");
      value = args[++i];
    }
    out.flags[name] = value;
  }
  for (const auto& s : specs) {
    if (!s.defaultValue.empty() && !out.has(s.name)) out.flags[s.name] = s.defaultValue;
  }
  return out;
}

std::string usage(const std::string& command, const std::string& summary,
                  const std::vector<FlagSpec>& specs) {
  std::string out = "Usage: gpufair " + command + "\n\n" + summary + "\n\nFlags:\n";
  for (const auto& s : specs) {
    std::string left = "  --" + s.name + (s.isSwitch ? "" : " VALUE");
    if (left.size() < 30) left.resize(30, ' ');
    out += left + " " + s.help;
    if (!s.defaultValue.empty()) out += " (default " + s.defaultValue + ")";
    out += "\n";
  }
  return out;
}

Result<long long> parseMillis(const std::string& text) {
  long long n = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, n);
  if (ec != std::errc() || ptr == begin || n < 0) {
    return Result<long long>::failure("\"" + text + "\" is not a duration like 500ms, 10s or 2m");
  }
  const std::string unit(ptr, end);
  if (unit == "ms") return n;
  if (unit == "s") return n * 1000;
  if (unit == "m") return n * 60'000;
  if (unit == "h") return n * 3'600'000;
  return Result<long long>::failure("\"" + text + "\" is not a duration like 500ms, 10s or 2m");
}

std::string scorerList() {
  std::string out;
  for (const auto& s : policy::scorerRegistry())
    out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

int runScorers(const std::vector<std::string>& args) {
  const std::vector<FlagSpec> specs = {
      {"describe", "print each strategy's one-line description after its name", "", true}};
  auto parsed = parseArgs(args, specs);
  if (!parsed || !parsed->positional.empty()) {
    std::cerr << (parsed ? "unexpected argument " + parsed->positional.front() : parsed.error())
              << "\n\n"
              << usage("scorers [--describe]",
                       "Lists the placement strategies (--scorer, --policy), one per line.", specs);
    return 2;
  }
  const bool describe = parsed->get("describe") == "true";
  for (const auto& s : policy::scorerRegistry()) {
    std::cout << s.name;
    if (describe)
      std::cout << std::string(s.name.size() < 12 ? 12 - s.name.size() : 1, ' ') << s.description;
    std::cout << "\n";
  }
  return 0;
}

}  // namespace gpufair::app
