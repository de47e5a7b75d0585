// Fuzzes the extender request decoders with arbitrary request bodies, the way ExtenderService reads
// them: one RequestDocument (simdjson DOM), then ExtenderArgs, ExtenderPreemptionArgs and
// ExtenderBindingArgs decoding. Any body must give a value or an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpufair/api/wire.h"

#include "request_document.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpufair::api;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  detail::RequestDocument document(body);
  if (!document.status().isOk()) return 0;
  ExtenderArgs& args = document.extenderArgs();
  args.clear();
  if (decodeExtenderArgs(document.root(), args).isOk()) {
    for (std::string_view name : args.candidates) (void)name.size();
  }
  PreemptionArgs preemption;
  (void)decodePreemptionArgs(document.root(), preemption);
  BindingArgs binding;
  (void)decodeBindingArgs(document.root(), binding);
  return 0;
}
