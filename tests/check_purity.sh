#!/bin/sh
# The policy engine is pure (STYLE.md rule 3, DESIGN.md "Modules"): no I/O, clock reads, randomness,
# logging, globals or third-party libraries. This check reads every file of the module (sources and
# private headers under src/policy/, public headers under include/gpufair/policy/), comments and
# string literals removed, and fails on any of:
#   - includes of I/O, thread, clock, random or third-party headers;
#   - clock reads: std::chrono::*_clock::now, SystemClock, a call to now(), time(), clock(), ...;
#   - randomness: rand(), random(), random_device, the <random> engines;
#   - I/O and environment: std::cout/cerr/clog/cin, printf, puts, fopen, getenv, std::filesystem;
#   - logging: spdlog, syslog, LOG(...);
#   - globals: thread_local, extern or static variables that are not const, and variables declared
#     at namespace scope that are not const/constexpr.
#
# Usage: check_purity.sh ROOT                  exit 1 on any finding
#        check_purity.sh ROOT --expect-marked  the negative fixture's mode: exit 0 only if the
#                                              findings are exactly the lines marked "IMPURE"
root="${1:-.}"
mode="${2:-}"

files=$(find "$root/src/policy" "$root/include/gpufair/policy" -type f \( -name '*.h' -o -name '*.cc' \) 2>/dev/null | sort)
if [ -z "$files" ]; then
  echo "no policy sources under $root"; exit 1
fi

# shellcheck disable=SC2086
findings=$(awk '
function at_namespace_scope(  i) {
  for (i = 1; i <= depth; i++) if (kind[i] != "ns") return 0
  return 1
}
FNR == 1 { depth = 0; in_block = 0; parens = 0; split("", kind) }
{
  line = $0
  # Comments and string literals cannot make code impure; drop them before matching.
  if (in_block) {
    if (line !~ /\*\//) next
    sub(/^.*\*\//, "", line); in_block = 0
  }
  gsub(/\/\*([^*]|\*[^\/])*\*\//, "", line)
  if (line ~ /\/\*/) { sub(/\/\*.*$/, "", line); in_block = 1 }
  gsub(/"([^"\\]|\\.)*"/, "\"\"", line)
  gsub(/'\''([^'\''\\]|\\.)*'\''/, "0", line)
  sub(/\/\/.*$/, "", line)

  why = ""
  if (line ~ /#[ \t]*include[ \t]*<(iostream|istream|ostream|fstream|cstdio|stdio\.h|print|syslog\.h|unistd\.h|sys\/|thread|mutex|shared_mutex|condition_variable|future|semaphore|random|filesystem|ctime|time\.h|spdlog|fmt\/|boost|simdjson|nlohmann|yaml-cpp|cpprest|prometheus|openssl)/)
    why = "include of I/O, threads, clock, randomness or a third-party library"
  else if (line ~ /_clock[ \t]*::[ \t]*now|SystemClock|(^|[^A-Za-z0-9_])now[ \t]*\([ \t]*\)|(^|[^A-Za-z0-9_.>:])(time|clock|gettimeofday|clock_gettime|localtime|gmtime|mktime)[ \t]*\(/)
    why = "clock read"
  else if (line ~ /(^|[^A-Za-z0-9_])(s?rand|random|drand48|arc4random)[ \t]*\(|random_device|mt19937|minstd_rand|default_random_engine/)
    why = "randomness"
  else if (line ~ /std[ \t]*::[ \t]*(cout|cerr|clog|cin|filesystem|[io]?fstream)|(^|[^A-Za-z0-9_])(f?printf|puts|fputs|fopen|fwrite|fread|perror|getenv|setenv|popen)[ \t]*\(/)
    why = "I/O"
  else if (line ~ /spdlog|syslog|(^|[^A-Za-z0-9_])LOG[ \t]*\(/)
    why = "logging"
  else if (line ~ /(^|[^A-Za-z0-9_])thread_local([^A-Za-z0-9_]|$)/)
    why = "global (thread_local)"
  else if (line ~ /^[ \t]*(static|extern)[ \t]/ && line !~ /(^|[^A-Za-z0-9_])(const|constexpr|consteval|static_assert)([^A-Za-z0-9_]|$)/) {
    decl = line; sub(/[=;{].*$/, "", decl)
    if (decl !~ /\(/ && line ~ /[=;{]/) why = "global (mutable static or extern variable)"
  }
  else if (at_namespace_scope() && parens == 0 &&
           line ~ /^[ \t]*[A-Za-z_][A-Za-z0-9_:<>,* &]*[ \t*&]+[A-Za-z_][A-Za-z0-9_]*[ \t]*(=|\{|;|\[)/ &&
           line !~ /^[ \t]*(using|typedef|template|class|struct|union|enum|namespace|friend|return|public|private|protected|case|goto|delete)([^A-Za-z0-9_]|$)/ &&
           line !~ /(^|[^A-Za-z0-9_])(const|constexpr|consteval|operator)([^A-Za-z0-9_]|$)/)
    why = "global (mutable variable at namespace scope)"
  if (why != "") print FILENAME ":" FNR ": " why ": " $0

  # Track scopes: a brace opened by a namespace line keeps namespace scope, any other does not;
  # a line inside an open parenthesis continues a declaration (a parameter with a default).
  n = length(line); ns_line = (line ~ /^[ \t]*(inline[ \t]+)?namespace([ \t]+[A-Za-z_][A-Za-z0-9_:]*)?[ \t]*\{/)
  for (i = 1; i <= n; i++) {
    c = substr(line, i, 1)
    if (c == "{") { depth++; kind[depth] = ns_line ? "ns" : "other"; ns_line = 0 }
    else if (c == "}" && depth > 0) depth--
    else if (c == "(") parens++
    else if (c == ")" && parens > 0) parens--
  }
}' $files)

if [ "$mode" = "--expect-marked" ]; then
  # shellcheck disable=SC2086
  expected=$(grep -n 'IMPURE' $files /dev/null | cut -d: -f1,2 | sort)
  found=$(printf '%s\n' "$findings" | grep -v '^$' | cut -d: -f1,2 | sort)
  if [ -z "$expected" ] || [ "$expected" != "$found" ]; then
    echo "expected findings on exactly the lines marked IMPURE:"; echo "$expected"
    echo "found:"; printf "%s\n" "$findings"; exit 1
  fi
  echo "found every marked impurity and nothing else:"; printf "%s\n" "$findings"; exit 0
fi
if [ -n "$findings" ]; then
  echo "policy must stay pure; found:"; printf "%s\n" "$findings"; exit 1
fi
echo "policy is pure: $(echo "$files" | wc -l) files without I/O, clock, randomness, logging, globals or third-party includes"
