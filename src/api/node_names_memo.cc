// NodeNamesMemo (node_names_memo.h): a /filter body's NodeNames from its raw bytes.
#include "node_names_memo.h"

#include <algorithm>
#include <cstring>

#include "gpufair/codec/objects.h"

namespace gpufair::api::detail {
namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::size_t skipSpace(std::string_view s, std::size_t i) {
  while (i < s.size() && isSpace(s[i])) ++i;
  return i;
}

// s[i] is '"': just after the string's closing quote (kNone: unterminated). Correct for every
// prefix of valid JSON; on invalid JSON the caller's parse of the rest reports the error.
std::size_t skipString(std::string_view s, std::size_t i) {
  ++i;
  while (i < s.size()) {
    if (s[i] == '"') return i + 1;
    i += s[i] == '\\' ? 2 : 1;  // an escape's second byte is never its string's end
  }
  return kNone;
}

// Just after the JSON value that begins at s[i] (kNone: none found), as skipString.
std::size_t skipValue(std::string_view s, std::size_t i) {
  if (i >= s.size()) return kNone;
  if (s[i] == '"') return skipString(s, i);
  if (s[i] == '{' || s[i] == '[') {
    std::size_t depth = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == '"') {
        i = skipString(s, i);
        if (i == kNone) return kNone;
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if ((c == '}' || c == ']') && --depth == 0) return i + 1;
      ++i;
    }
    return kNone;
  }
  const std::size_t start = i;  // a number, true, false or null
  while (i < s.size() && !isSpace(s[i]) && s[i] != ',' && s[i] != '}' && s[i] != ']') ++i;
  return i == start ? kNone : i;
}

// How many bytes a and b share from the front.
std::size_t commonPrefix(std::string_view a, std::string_view b) {
  const std::size_t n = std::min(a.size(), b.size());
  if (std::memcmp(a.data(), b.data(), n) == 0) return n;
  constexpr std::size_t kBlock = 256;
  std::size_t i = 0;
  while (i + kBlock <= n && std::memcmp(a.data() + i, b.data() + i, kBlock) == 0) i += kBlock;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// How many bytes a and b share at the back.
std::size_t commonSuffix(std::string_view a, std::string_view b) {
  const std::size_t n = std::min(a.size(), b.size());
  const char* aEnd = a.data() + a.size();
  const char* bEnd = b.data() + b.size();
  if (std::memcmp(aEnd - n, bEnd - n, n) == 0) return n;
  constexpr std::size_t kBlock = 256;
  std::size_t i = 0;
  while (i + kBlock <= n && std::memcmp(aEnd - i - kBlock, bEnd - i - kBlock, kBlock) == 0) {
    i += kBlock;
  }
  while (i < n &&
         aEnd[-1 - static_cast<std::ptrdiff_t>(i)] == bEnd[-1 - static_cast<std::ptrdiff_t>(i)])
    ++i;
  return i;
}

}  // namespace

bool NodeNamesMemo::take(std::string_view body, std::size_t& arrayBegin, std::size_t& arrayEnd) {
  // names() lent out and not given back (lend()): the views are made again from the record.
  if (names_.size() != tokens_.size()) viewNames();
  unchanged_ = false;
  read_ = 0;
  changedFrom_ = 0;
  sameHead_ = 0;
  sameTail_ = 0;
  std::size_t i = skipSpace(body, 0);
  if (i >= body.size() || body[i] != '{') return false;
  i = skipSpace(body, i + 1);
  bool found = false;
  while (true) {
    if (i >= body.size() || body[i] != '"') return false;  // also `{}`: no NodeNames
    const std::size_t keyEnd = skipString(body, i);
    if (keyEnd == kNone) return false;
    const std::string_view key = body.substr(i + 1, keyEnd - i - 2);
    if (key.find('\\') != std::string_view::npos) return false;  // might spell NodeNames
    i = skipSpace(body, keyEnd);
    if (i >= body.size() || body[i] != ':') return false;
    i = skipSpace(body, i + 1);
    if (codec::keyMatches(key, "NodeNames")) {
      // A second NodeNames key, or one that is null or no array: the decoder's rules decide.
      if (found || i >= body.size() || body[i] != '[') return false;
      found = true;
      arrayBegin = i;
      if (!takeArray(body, i, arrayEnd)) return false;
      i = arrayEnd;
    } else {
      i = skipValue(body, i);
      if (i == kNone) return false;
    }
    i = skipSpace(body, i);
    if (i >= body.size()) return false;
    if (body[i] == '}') break;
    if (body[i] != ',') return false;
    i = skipSpace(body, i + 1);
  }
  return found && skipSpace(body, i + 1) == body.size();
}

// The array at body[begin] ('['): the earlier array's names where the bytes are the same, read
// from the body between them. On true `end` is just after its ']'.
bool NodeNamesMemo::takeArray(std::string_view body, std::size_t begin, std::size_t& end) {
  const std::string_view rest = body.substr(begin);
  const std::string_view raw(raw_);
  const std::size_t head = raw.empty() ? 0 : commonPrefix(rest, raw);
  if (!raw.empty() && head == raw.size()) {
    // The earlier array's bytes from its '[' to its ']': the same array (JSON read from a '['
    // does not depend on what follows).
    end = begin + raw.size();
    unchanged_ = true;
    after_.assign(body.substr(end));
    return true;
  }
  // The earlier names wholly inside the common head are this array's first names.
  const auto firstAfterHead = std::partition_point(tokens_.begin(), tokens_.end(),
                                                   [&](const Token& t) { return t.end <= head; });
  const auto kept = static_cast<std::size_t>(firstAfterHead - tokens_.begin());
  // The common tail: the body's last bytes against the earlier array and what followed it.
  std::size_t tail = commonSuffix(rest, after_);
  if (tail == after_.size()) tail += commonSuffix(rest.substr(0, rest.size() - tail), raw);
  const std::size_t earlierTotal = raw.size() + after_.size();

  std::vector<Token>& out = scratch_;
  out.clear();
  out.reserve(tokens_.size() + 16);
  out.insert(out.end(), tokens_.begin(), firstAfterHead);
  // p: where reading goes on in rest; after an element (or just after '[' when none was kept).
  std::size_t p = kept > 0 ? tokens_[kept - 1].end : 1;
  bool afterElement = kept > 0;
  while (true) {
    if (afterElement && rest.size() - p <= tail && earlierTotal >= rest.size() - p) {
      // From p to the end the bytes are the earlier ones from r: if r is just after an earlier
      // name, the rest of the array is that array's rest, read the same way.
      const std::size_t r = earlierTotal - (rest.size() - p);
      const auto at = std::lower_bound(tokens_.begin(), tokens_.end(), r,
                                       [](const Token& t, std::size_t x) { return t.end < x; });
      if (at != tokens_.end() && at->end == r) {
        for (auto t = at + 1; t != tokens_.end(); ++t) {
          out.push_back({t->begin - r + p, t->end - r + p});
        }
        sameTail_ = static_cast<std::size_t>(tokens_.end() - (at + 1));
        end = begin + raw.size() - r + p;
        break;
      }
    }
    p = skipSpace(rest, p);
    if (p >= rest.size()) return false;
    if (rest[p] == ']') {
      end = begin + p + 1;
      break;
    }
    if (afterElement) {
      if (rest[p] != ',') return false;
      p = skipSpace(rest, p + 1);
    }
    // A name: printable ASCII without escapes, so its text is its bytes.
    if (p >= rest.size() || rest[p] != '"') return false;
    std::size_t q = p + 1;
    while (q < rest.size() && rest[q] != '"') {
      const auto c = static_cast<unsigned char>(rest[q]);
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
      ++q;
    }
    if (q >= rest.size()) return false;
    out.push_back({p, q + 1});
    ++read_;
    p = q + 1;
    afterElement = true;
  }
  changedFrom_ = version_;  // 0 when there was no earlier array (nothing kept then)
  sameHead_ = kept;
  // Head and tail may overlap in the earlier array (a list that repeats itself): a shorter tail is
  // as true, and head + tail then fit in both arrays.
  sameTail_ = std::min(sameTail_, tokens_.size() - kept);
  remember(body.substr(begin, end - begin), body.substr(end), std::move(out));
  return true;
}

void NodeNamesMemo::remember(std::string_view array, std::string_view after,
                             std::vector<Token>&& tokens) {
  ++version_;
  raw_.assign(array);
  after_.assign(after);
  tokens_.swap(tokens);
  viewNames();
}

void NodeNamesMemo::viewNames() {
  names_.resize(tokens_.size());
  const std::string_view raw(raw_);
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    names_[i] = raw.substr(tokens_[i].begin + 1, tokens_[i].end - tokens_[i].begin - 2);
  }
}

}  // namespace gpufair::api::detail
