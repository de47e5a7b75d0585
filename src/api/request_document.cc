#include "request_document.h"

#include <spdlog/spdlog.h>

namespace gpufair::api::detail {

RequestDocument::Scratch& RequestDocument::threadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

RequestDocument::RequestDocument(std::string_view body)
    : scratch_(body.size() > kReusedBodyLimit ? &own_ : &threadScratch()), args_(&scratch_->args) {
  parse(body);
}

RequestDocument::RequestDocument(std::string_view body, NodeNamesMemo& names)
    : scratch_(body.size() > kReusedBodyLimit ? &own_ : &threadScratch()), args_(&scratch_->args) {
  std::size_t begin = 0;
  std::size_t end = 0;
  namesTaken_ = names.take(body, begin, end);
  if (!namesTaken_) {
    parse(body);
    return;
  }
  parse(body.substr(0, begin), "[]", body.substr(end));
  // With `[]` for the array the body is valid JSON exactly when it is whole; an invalid one is
  // parsed whole again, so that its error is the one the whole body gives.
  if (!status_.isOk()) {
    namesTaken_ = false;
    status_ = Status::ok();
    parse(body);
  }
}

void RequestDocument::parse(std::string_view head, std::string_view middle, std::string_view tail) {
  if (head.empty() && middle.empty() && tail.empty()) {
    status_ = Status::error("request body is empty");
    return;
  }
  auto& buffer = scratch_->buffer;
  buffer.reserve(head.size() + middle.size() + tail.size() + simdjson::SIMDJSON_PADDING);
  buffer.assign(head);
  buffer.append(middle);
  buffer.append(tail);
  auto error = scratch_->parser.parse(buffer.data(), buffer.size(), false).get(root_);
  if (error != simdjson::SUCCESS) {
    status_ = Status::error(std::string("request body is not valid JSON: ") +
                            simdjson::error_message(error));
  }
}

Response badRequest(std::string_view verb, std::string_view message) {
  spdlog::info("{}: bad request: {}", verb, message);
  return errorResponse(400, message);
}

}  // namespace gpufair::api::detail
