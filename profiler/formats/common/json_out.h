// A small, fast JSON emitter for the Chrome exporters: appends to one std::string, never
// allocates per value, escapes strings and repairs invalid UTF-8 (each bad byte becomes U+FFFD)
// so the output is always valid JSON whatever the input names held.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace stepscope::trace {

class JsonOut {
 public:
  explicit JsonOut(std::string& out) : out_(out) {}

  void Raw(std::string_view text) { out_.append(text); }
  void Char(char c) { out_.push_back(c); }

  void Int(int64_t value) {
    char buffer[24];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    out_.append(buffer, end);
  }
  void UInt(uint64_t value) {
    char buffer[24];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    out_.append(buffer, end);
  }
  // Shortest round-trip form of a double.
  void Double(double value) {
    char buffer[32];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    out_.append(buffer, end);
  }
  // Nanoseconds as microseconds with up to three decimals, exact (no floating point).
  void NanosAsMicros(int64_t ns) {
    if (ns < 0) {
      out_.push_back('-');
      ns = -ns;
    }
    Int(ns / 1000);
    const int64_t fraction = ns % 1000;
    if (fraction == 0) return;
    char digits[4] = {'.', static_cast<char>('0' + fraction / 100),
                      static_cast<char>('0' + fraction / 10 % 10),
                      static_cast<char>('0' + fraction % 10)};
    int length = 4;
    while (digits[length - 1] == '0') --length;
    out_.append(digits, static_cast<size_t>(length));
  }

  void String(std::string_view text);
  // `"key":`
  void Key(std::string_view key) {
    String(key);
    out_.push_back(':');
  }

 private:
  std::string& out_;
};

}  // namespace stepscope::trace
