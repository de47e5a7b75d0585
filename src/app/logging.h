// How gpufair logs (spdlog): text lines by default, or JSON lines for log collectors:
//   {"ts":"2026-11-22T03:40:00.123Z","level":"info","msg":"...","thread":1234,"logger":"..."}
// one object per line; "logger" only when the logger has a name. What is logged: one line per
// decision at debug level, one per rejection at info with the reason in words. Nothing logged
// carries a credential: tokens, keys and passwords are never passed to a log call.
// Thread-safety: configure before starting threads; the formatters are used under spdlog's sink
// locks.
#pragma once

#include <memory>
#include <string>

#include <spdlog/formatter.h>

#include "gpufair/common/status.h"

namespace gpufair::app {

enum class LogFormat { kText, kJson };

// "text" or "json"; anything else is an error that names the choices.
Result<LogFormat> parseLogFormat(const std::string& text);

class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

// Whether `level` is one configureLogging() takes ("trace" .. "error", "off"); the error names
// them.
Status checkLogLevel(const std::string& level);

// Sets the default logger's level and format ("trace" .. "error", "off").
Status configureLogging(const std::string& level, LogFormat format);

}  // namespace gpufair::app
