#!/bin/sh
# The policy engine is pure (STYLE.md rule 3): no I/O, clock reads, logging, globals or third-party
# libraries. This check fails the build's tests if any of them creeps into policy's sources.
root="${1:-.}"
bad=$(grep -nE '#include <(iostream|fstream|cstdio|thread|mutex|random|filesystem|spdlog|boost|simdjson|nlohmann|yaml-cpp|cpprest)|std::chrono::(system|steady)_clock::now|std::(cout|cerr)|printf\(|spdlog::|getenv|std::rand|time\(' \
  "$root"/src/policy/*.cc "$root"/include/gpufair/policy/*.h)
if [ -n "$bad" ]; then
  echo "policy must stay pure; found:"; echo "$bad"; exit 1
fi
echo "policy is pure: no I/O, clock, logging or third-party includes"
