#include "logging.h"

#include <chrono>
#include <cstdio>
#include <ctime>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "gpufair/common/json.h"

namespace gpufair::app {
namespace {

// 2026-11-22T03:40:00.123Z
std::string utcTimestamp(spdlog::log_clock::time_point when) {
  const auto since = when.time_since_epoch();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since - seconds);
  const std::time_t t = seconds.count();
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[40];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(text + n, sizeof text - n, ".%03dZ", static_cast<int>(millis.count()));
  return text;
}

}  // namespace

Result<LogFormat> parseLogFormat(const std::string& text) {
  if (text == "text") return LogFormat::kText;
  if (text == "json") return LogFormat::kJson;
  return Result<LogFormat>::failure("--log-format must be text or json, not \"" + text + "\"");
}

void JsonLogFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  std::string line = "{\"ts\":\"" + utcTimestamp(msg.time) + "\",\"level\":";
  const auto level = spdlog::level::to_string_view(msg.level);
  appendJsonString(line, std::string_view(level.data(), level.size()));
  line += ",\"msg\":";
  appendJsonString(line, std::string_view(msg.payload.data(), msg.payload.size()));
  line += ",\"thread\":" + std::to_string(msg.thread_id);
  if (msg.logger_name.size() > 0) {
    line += ",\"logger\":";
    appendJsonString(line, std::string_view(msg.logger_name.data(), msg.logger_name.size()));
  }
  line += "}\n";
  dest.append(line.data(), line.data() + line.size());
}

std::unique_ptr<spdlog::formatter> JsonLogFormatter::clone() const {
  return std::make_unique<JsonLogFormatter>();
}

BatchedStreamSink::BatchedStreamSink(std::FILE* stream, std::chrono::milliseconds interval)
    : stream_(stream), interval_(interval) {}

BatchedStreamSink::~BatchedStreamSink() {
  std::lock_guard lock(mutex_);
  std::fflush(stream_);
}

void BatchedStreamSink::sink_it_(const spdlog::details::log_msg& msg) {
  spdlog::memory_buf_t formatted;
  formatter_->format(msg, formatted);
  std::fwrite(formatted.data(), 1, formatted.size(), stream_);
  if (msg.level >= spdlog::level::warn || msg.time - lastWrite_ >= interval_) {
    std::fflush(stream_);
    lastWrite_ = msg.time;
  }
}

void BatchedStreamSink::flush_() {
  std::fflush(stream_);
}

Status checkLogLevel(const std::string& level) {
  if (spdlog::level::from_str(level) == spdlog::level::off && level != "off") {
    return Status::error("--log-level must be trace, debug, info, warn, error or off");
  }
  return Status::ok();
}

Status configureLogging(const std::string& level, LogFormat format) {
  if (Status checked = checkLogLevel(level); !checked.isOk()) return checked;
  if (::isatty(STDOUT_FILENO) == 0) {
    auto sink = std::make_shared<BatchedStreamSink>(stdout, std::chrono::seconds{1});
    auto logger = std::make_shared<spdlog::logger>("", std::move(sink));
    spdlog::set_default_logger(std::move(logger));
    spdlog::flush_every(std::chrono::seconds{1});
  }
  spdlog::set_level(spdlog::level::from_str(level));
  if (format == LogFormat::kJson) spdlog::set_formatter(std::make_unique<JsonLogFormatter>());
  return Status::ok();
}

}  // namespace gpufair::app
