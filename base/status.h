// Status and StatusOr: how every module reports bad input and I/O failures without exceptions.
// A Status carries a code that maps onto the CLI exit codes (kInvalidInput -> 2, others -> 1) and
// a message a user can act on (it names the file and what is wrong).
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace stepscope {

enum class StatusCode {
  kOk = 0,
  kInvalidInput,    // malformed, truncated or unsupported input: the user's file is at fault
  kNotFound,        // a path that does not exist
  kIoError,         // reading or writing failed for a reason outside the input's content
  kUnavailable,     // a requested resource (GPU, device) is not present
  kResourceExhausted,  // an allocator or buffer ran out of its budget
  kInternal,        // a failure of ours
  kCancelled,
  kCheckFailed,     // a check the user asked for failed (e.g. a regression gate): exit 3
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes context ("reading foo.pb: ") so errors say where they happened.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidInput(std::string message) {
  return {StatusCode::kInvalidInput, std::move(message)};
}
inline Status NotFound(std::string message) { return {StatusCode::kNotFound, std::move(message)}; }
inline Status IoError(std::string message) { return {StatusCode::kIoError, std::move(message)}; }
inline Status Unavailable(std::string message) {
  return {StatusCode::kUnavailable, std::move(message)};
}
inline Status Internal(std::string message) { return {StatusCode::kInternal, std::move(message)}; }
inline Status ResourceExhausted(std::string message) {
  return {StatusCode::kResourceExhausted, std::move(message)};
}
inline Status CheckFailed(std::string message) { return {StatusCode::kCheckFailed, std::move(message)}; }

// Exit code of the CLIs for a failed status: 2 for what the user gave us, 3 for a requested check
// that failed, 1 for the rest.
inline int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return 0;
    case StatusCode::kInvalidInput:
    case StatusCode::kNotFound: return 2;
    case StatusCode::kCheckFailed: return 3;
    default: return 1;
  }
}

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace stepscope

#define STEPSCOPE_CONCAT_INNER(a, b) a##b
#define STEPSCOPE_CONCAT(a, b) STEPSCOPE_CONCAT_INNER(a, b)

// Returns early from a Status-returning function when `expr` fails.
#define RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::stepscope::Status _status_ = (expr);             \
    if (!_status_.ok()) return _status_;               \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, MakeX())` unwraps a StatusOr or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(STEPSCOPE_CONCAT(_status_or_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
