// Status: the one result type of the engine and its adapters, as kube-scheduler's framework has it.
// Thread-safety: a value type; safe to copy between threads.
#pragma once

#include <string>
#include <utility>

namespace gpufair {

// Maps to the extender wire: Unschedulable -> FailedNodes, UnschedulableAndUnresolvable ->
// FailedAndUnresolvableNodes, Error -> the response's Error string.
enum class Code { kSuccess, kUnschedulable, kUnschedulableAndUnresolvable, kError };

class Status {
 public:
  Status() = default;
  Status(Code code, std::string reason) : code_(code), reason_(std::move(reason)) {}

  static Status ok() { return {}; }
  static Status unschedulable(std::string reason) {
    return {Code::kUnschedulable, std::move(reason)};
  }
  static Status unresolvable(std::string reason) {
    return {Code::kUnschedulableAndUnresolvable, std::move(reason)};
  }
  static Status error(std::string reason) { return {Code::kError, std::move(reason)}; }

  bool isOk() const { return code_ == Code::kSuccess; }
  Code code() const { return code_; }
  // A sentence a data scientist understands, e.g. "queue team-a at 30/30 GPUs (limit)".
  const std::string& reason() const { return reason_; }
  // Moves the reason out (for building results without copying it).
  std::string takeReason() { return std::move(reason_); }

 private:
  Code code_ = Code::kSuccess;
  std::string reason_;
};

const char* codeName(Code code);

// A value or an error message. Used at run time where exceptions are not (network input).
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)), ok_(true) {}  // NOLINT(google-explicit-constructor)
  static Result failure(std::string message) {
    Result r;
    r.error_ = std::move(message);
    return r;
  }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const T& value() const& { return value_; }
  T& value() & { return value_; }
  T&& value() && { return std::move(value_); }
  const T& operator*() const& { return value_; }
  const T* operator->() const { return &value_; }
  T* operator->() { return &value_; }
  const std::string& error() const { return error_; }

 private:
  Result() = default;
  T value_{};
  std::string error_;
  bool ok_ = false;
};

}  // namespace gpufair
