// How gpufair logs (spdlog): text lines by default, or JSON lines for log collectors:
//   {"ts":"2026-11-22T03:40:00.123Z","level":"info","msg":"...","thread":1234,"logger":"..."}
// one object per line; "logger" only when the logger has a name. What is logged: one line per
// decision at debug level, one per rejection at info with the reason in words. Nothing logged
// carries a credential: tokens, keys and passwords are never passed to a log call.
// Where lines go: standard output. On a terminal, each line is written as it is logged (colours,
// as spdlog does). Otherwise (a pipe or a file: a container's log) lines are written in batches by
// BatchedStreamSink: a warning or an error at once, with every line before it; an info line at
// once when nothing was written for a second, else within a second (a thread flushes every
// second), so a burst of binds costs a write a second, not one per "bound" line. A crash may lose
// the last second of info lines; never a warning or an error.
// Thread-safety: configure before starting threads; the formatters are used under spdlog's sink
// locks.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include <spdlog/formatter.h>
#include <spdlog/sinks/base_sink.h>

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

// Lines to a stdio stream, written (fflush) in batches: a line at level warn or above at once, with
// every line buffered before it; any other line at once when the last write is `interval` old or
// older (by the lines' times), else it waits in the stream's buffer for a later write, flush(), or
// the stream's buffer filling up. Order is kept: one stream, one buffer. The destructor flushes.
// Thread-safe (spdlog's sink mutex).
class BatchedStreamSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  BatchedStreamSink(std::FILE* stream, std::chrono::milliseconds interval);
  ~BatchedStreamSink() override;
  BatchedStreamSink(const BatchedStreamSink&) = delete;
  BatchedStreamSink& operator=(const BatchedStreamSink&) = delete;

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override;

 private:
  std::FILE* stream_;
  const std::chrono::milliseconds interval_;
  spdlog::log_clock::time_point lastWrite_{};  // GUARDED_BY(mutex_)
};

// Whether `level` is one configureLogging() takes ("trace" .. "error", "off"); the error names
// them.
Status checkLogLevel(const std::string& level);

// Sets the default logger's level and format ("trace" .. "error", "off"). When standard output is
// not a terminal, the default logger writes it through a BatchedStreamSink flushed every second.
Status configureLogging(const std::string& level, LogFormat format);

}  // namespace gpufair::app
