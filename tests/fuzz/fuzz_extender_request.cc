// Fuzzes the extender request decoders with arbitrary request bodies, the way ExtenderService reads
// them: one RequestDocument (simdjson DOM), then ExtenderArgs, ExtenderPreemptionArgs and
// ExtenderBindingArgs decoding. Any body must give a value or an error, never a crash; /filter's
// NodeNamesMemo path must give the names (or the failure) the whole decode gives.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/api/wire.h"

#include "request_document.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpufair::api;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  // /filter's way first (NodeNamesMemo, kept from input to input as an io thread keeps it): it
  // must decode every body exactly as the whole decode below does.
  static detail::NodeNamesMemo memo;
  bool memoOk = false;
  std::vector<std::string> memoNames;
  {
    detail::RequestDocument document(body, memo);
    ExtenderArgs& args = document.extenderArgs();
    args.clear();
    if (document.status().isOk() && decodeExtenderArgs(document.root(), args).isOk()) {
      memoOk = true;
      if (document.namesTaken()) {
        const auto names = memo.names();
        args.candidates.assign(names.begin(), names.end());
      }
      memoNames.assign(args.candidates.begin(), args.candidates.end());
    }
  }
  detail::RequestDocument document(body);
  if (!document.status().isOk()) {
    if (memoOk) __builtin_trap();
    return 0;
  }
  ExtenderArgs& args = document.extenderArgs();
  args.clear();
  const bool ok = decodeExtenderArgs(document.root(), args).isOk();
  if (ok != memoOk) __builtin_trap();
  if (ok) {
    if (memoNames.size() != args.candidates.size()) __builtin_trap();
    for (std::size_t i = 0; i < memoNames.size(); ++i) {
      if (memoNames[i] != args.candidates[i]) __builtin_trap();
    }
  }
  PreemptionArgs preemption;
  (void)decodePreemptionArgs(document.root(), preemption);
  BindingArgs binding;
  (void)decodeBindingArgs(document.root(), binding);
  return 0;
}
