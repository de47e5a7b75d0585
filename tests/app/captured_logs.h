// Every log line of a test, captured: the tests that read what gpufair logs share it.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "logging.h"

namespace gpufair::app::testsupport {

// Appends every formatted line to a string; text() reads it under the sink's own lock, so the
// test can look while serve's threads are still logging.
class StringSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::string text() {
    std::lock_guard lock(mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    text_.append(line.data(), line.size());
  }
  void flush_() override {}

 private:
  std::string text_;
};

// Sends every log line (JSON format, trace level) to a string for the test's lifetime.
class CapturedLogs {
 public:
  CapturedLogs() : previous_(spdlog::default_logger()), sink_(std::make_shared<StringSink>()) {
    auto logger = std::make_shared<spdlog::logger>("capture", sink_);
    logger->set_formatter(std::make_unique<JsonLogFormatter>());
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLogs() { spdlog::set_default_logger(previous_); }
  std::string text() { return sink_->text(); }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<StringSink> sink_;
};

}  // namespace gpufair::app::testsupport
