// NodeNamesMemo: a /filter body's top-level NodeNames array, read from its raw bytes against the
// array of an earlier body. kube-scheduler sends nearly the same names pod after pod (every node
// its own filters pass; one drops out when it fills), so the bytes of the new array mostly equal
// the old: the common head and tail are compared with memcmp, and only the names between them are
// read. The rest of the body (the pod) is parsed as before, with the array cut out of it.
//
// Exact or nothing: take() reads only what it can read exactly as the DOM decoder would (names
// without escapes, control characters or non-ASCII bytes; exactly one top-level key that
// codec::field would match for "NodeNames", spelt without escapes; its value an array of
// strings). For anything else it answers false and the caller decodes the whole body as before.
// Thread-safety: not thread-safe; one instance per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpufair::api::detail {

class NodeNamesMemo {
 public:
  // Where the top-level NodeNames array is in `body` and what it holds. On true: the array is
  // body[arrayBegin, arrayEnd), a valid JSON array of the names(); the rest of the body is
  // unchecked (the caller parses it with the array replaced by `[]`, which is valid JSON exactly
  // when the body is). On false nothing is known about the body (the caller decodes it whole).
  bool take(std::string_view body, std::size_t& arrayBegin, std::size_t& arrayEnd);

  // The names of the last array take() accepted (views into the memo; valid until the next
  // take()).
  std::span<const std::string_view> names() const { return names_; }
  // Lends names() to `out` by swapping vectors (no copy of the N views): `out` then holds them
  // and names() what `out` held, until giveBack(out) swaps them back. A next take() with them not
  // given back makes them again from its own record.
  void lend(std::vector<std::string_view>& out) { names_.swap(out); }
  void giveBack(std::vector<std::string_view>& from) { names_.swap(from); }
  // Whether the last take() found the very array of the take() before it (same bytes).
  bool unchanged() const { return unchanged_; }
  // How many names the last take() read from the body (the rest came from the earlier array).
  std::size_t read() const { return read_; }
  // Changes whenever names() may have changed (never 0 after a take() accepted an array): two
  // accepted take()s with the same version have the same names().
  std::uint64_t version() const { return version_; }
  // When the last take() accepted a changed array: the version of the array it was read against
  // (0: none), whose first sameHead() names are its first and whose last sameTail() names are its
  // last.
  std::uint64_t changedFrom() const { return changedFrom_; }
  std::size_t sameHead() const { return sameHead_; }
  std::size_t sameTail() const { return sameTail_; }

 private:
  struct Token {
    std::size_t begin;  // the opening quote, in raw_
    std::size_t end;    // just after the closing quote
  };
  bool takeArray(std::string_view body, std::size_t begin, std::size_t& end);
  void remember(std::string_view array, std::string_view after, std::vector<Token>&& tokens);
  void viewNames();  // names_ from raw_ and tokens_

  std::string raw_;    // the last accepted array's bytes, from '[' to ']'
  std::string after_;  // the bytes that followed it in its body, to the end
  std::vector<Token> tokens_;
  std::vector<std::string_view> names_;  // views into raw_
  std::vector<Token> scratch_;
  bool unchanged_ = false;
  std::size_t read_ = 0;
  std::uint64_t version_ = 0;
  std::uint64_t changedFrom_ = 0;
  std::size_t sameHead_ = 0;
  std::size_t sameTail_ = 0;
};

}  // namespace gpufair::api::detail
