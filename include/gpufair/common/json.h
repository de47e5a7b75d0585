// JSON string literals for the places that write JSON by hand (the webhook replies on the hot path,
// YAML-to-JSON conversion): one escaping routine, fast for the common case of nothing to escape.
// Thread-safety: a free function.
#pragma once

#include <string>
#include <string_view>

namespace gpufair {

// Appends `text` as a JSON string literal (quotes included) with ", \ and control characters
// escaped. Bytes >= 0x80 are copied as they are (UTF-8 passes through).
void appendJsonString(std::string& out, std::string_view text);
// Whether appendJsonString writes `text` as it is between quotes (nothing in it to escape), as it
// does for every Kubernetes object name.
bool isPlainJsonString(std::string_view text);

}  // namespace gpufair
