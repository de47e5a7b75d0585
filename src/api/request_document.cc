#include "request_document.h"

namespace gpufair::api::detail {

RequestDocument::Scratch& RequestDocument::threadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

RequestDocument::RequestDocument(std::string_view body)
    : scratch_(body.size() > kReusedBodyLimit ? &own_ : &threadScratch()), args_(&scratch_->args) {
  if (body.empty()) {
    status_ = Status::error("request body is empty");
    return;
  }
  auto& buffer = scratch_->buffer;
  buffer.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  buffer.assign(body);
  auto error = scratch_->parser.parse(buffer.data(), buffer.size(), false).get(root_);
  if (error != simdjson::SUCCESS) {
    status_ = Status::error(std::string("request body is not valid JSON: ") +
                            simdjson::error_message(error));
  }
}

}  // namespace gpufair::api::detail
