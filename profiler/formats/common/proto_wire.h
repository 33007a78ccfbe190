// Protobuf wire format without a schema library: a cursor over the fields of one encoded message
// (for readers that decode large files fast and report the byte offset of damage: XSpace,
// Perfetto protobuf, format sniffing) and an appender for writers that encode messages by hand
// (the Perfetto protobuf writer). Field numbers and wire types are the callers' business.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "profiler/formats/common/varint.h"

namespace stepscope::trace::wire {

enum WireType : uint8_t { kVarint = 0, kFixed64 = 1, kLength = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

struct Field {
  uint32_t number = 0;
  WireType type = kVarint;
  uint64_t value = 0;      // varint and fixed values (fixed64/32 as raw bits)
  std::string_view bytes;  // length-delimited payload
  size_t offset = 0;       // offset of the field's tag in the whole input
};

// Iterates the fields of `data`; `base` is the offset of data[0] in the whole input, so errors
// name a position in the file. Groups are refused (proto3 and Perfetto never write them).
class Reader {
 public:
  explicit Reader(std::string_view data, size_t base = 0) : data_(data), base_(base) {}

  // The next field; false at the end of the message or on damage (then failed() is true).
  bool Next(Field& field) {
    if (pos_ >= data_.size() || failed_) return false;
    field.offset = base_ + pos_;
    uint64_t tag = 0;
    if (!ReadVarint(data_, pos_, tag)) return Fail(field.offset, "truncated field tag");
    field.number = static_cast<uint32_t>(tag >> 3);
    if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) return Fail(field.offset, "invalid field number");
    field.type = static_cast<WireType>(tag & 7);
    switch (field.type) {
      case kVarint:
        if (!ReadVarint(data_, pos_, field.value)) return Fail(field.offset, "truncated varint");
        return true;
      case kFixed64:
        if (data_.size() - pos_ < 8) return Fail(field.offset, "truncated fixed64");
        std::memcpy(&field.value, data_.data() + pos_, 8);
        pos_ += 8;
        return true;
      case kFixed32: {
        if (data_.size() - pos_ < 4) return Fail(field.offset, "truncated fixed32");
        uint32_t v = 0;
        std::memcpy(&v, data_.data() + pos_, 4);
        field.value = v;
        pos_ += 4;
        return true;
      }
      case kLength: {
        uint64_t length = 0;
        if (!ReadVarint(data_, pos_, length)) return Fail(field.offset, "truncated length");
        if (length > data_.size() - pos_) return Fail(field.offset, "length runs past the end of its message");
        field.bytes = data_.substr(pos_, length);
        field.value = base_ + pos_;  // offset of the payload, for nested readers
        pos_ += length;
        return true;
      }
      default:
        return FailWireType(field.offset, field.type);
    }
  }

  bool failed() const { return failed_; }
  size_t error_offset() const { return error_offset_; }
  const std::string& error() const { return error_; }
  size_t position() const { return base_ + pos_; }

 private:
  // Out of line and cold: the hot path of Next stays small enough to inline.
  [[gnu::cold, gnu::noinline]] bool Fail(size_t offset, const char* message) {
    failed_ = true;
    error_offset_ = offset;
    error_ = message;
    return false;
  }
  [[gnu::cold, gnu::noinline]] bool FailWireType(size_t offset, WireType type) {
    Fail(offset, "invalid wire type ");
    error_ += std::to_string(static_cast<int>(type));
    return false;
  }

  std::string_view data_;
  size_t base_ = 0;
  size_t pos_ = 0;
  bool failed_ = false;
  size_t error_offset_ = 0;
  std::string error_;
};

// A nested message's reader: its payload offset is kept in Field::value by Reader::Next.
inline Reader Nested(const Field& field) { return Reader(field.bytes, static_cast<size_t>(field.value)); }

inline int64_t ZigZagless(uint64_t value) { return static_cast<int64_t>(value); }

// Appending fields to a buffer: each field is encoded into a small local buffer and appended
// at once.
inline size_t EncodeVarint(char* to, uint64_t value) {
  size_t n = 0;
  while (value >= 0x80) {
    to[n++] = static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  to[n++] = static_cast<char>(value);
  return n;
}
inline void Tag(std::string& out, uint32_t number, WireType type) {
  char buffer[10];
  out.append(buffer, EncodeVarint(buffer, (static_cast<uint64_t>(number) << 3) | type));
}
inline void Varint(std::string& out, uint32_t number, uint64_t value) {
  char buffer[20];
  size_t n = EncodeVarint(buffer, (static_cast<uint64_t>(number) << 3) | kVarint);
  n += EncodeVarint(buffer + n, value);
  out.append(buffer, n);
}
inline void Int64(std::string& out, uint32_t number, int64_t value) {
  Varint(out, number, static_cast<uint64_t>(value));
}
inline void Fixed64(std::string& out, uint32_t number, uint64_t value) {
  Tag(out, number, kFixed64);
  char raw[8];
  std::memcpy(raw, &value, 8);
  out.append(raw, 8);
}
inline void Double(std::string& out, uint32_t number, double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, 8);
  Fixed64(out, number, bits);
}
inline void Bytes(std::string& out, uint32_t number, std::string_view value) {
  char buffer[20];
  size_t n = EncodeVarint(buffer, (static_cast<uint64_t>(number) << 3) | kLength);
  n += EncodeVarint(buffer + n, value.size());
  out.append(buffer, n);
  out.append(value);
}

// An output buffer for writers that append many small fields (millions of varints): the bytes
// go through a pointer into a string kept longer than its content, grown by doubling, so a
// field is a few inlined stores rather than a call into std::string::append. Take() returns
// the content.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;  // data_ points into room_
  Buffer& operator=(const Buffer&) = delete;

  void reserve(size_t bytes) {
    if (bytes > room_.size()) Resize(bytes);
  }
  size_t size() const { return size_; }
  char& operator[](size_t at) { return data_[at]; }
  // At least `bytes` writable at end() (then advance()).
  [[gnu::always_inline]] void Ensure(size_t bytes) {
    if (room_.size() - size_ < bytes) Resize(std::max(room_.size() * 2, size_ + bytes + 4096));
  }
  char* end() { return data_ + size_; }
  void advance(size_t bytes) { size_ += bytes; }
  void push_back(char c) {
    Ensure(1);
    data_[size_++] = c;
  }
  void append(const char* bytes, size_t n) {
    if (n == 0) return;  // an empty view may have no data (memcpy wants a pointer)
    Ensure(n);
    std::memcpy(data_ + size_, bytes, n);
    size_ += n;
  }
  void append(std::string_view bytes) { append(bytes.data(), bytes.size()); }
  Buffer& operator+=(std::string_view bytes) {
    append(bytes);
    return *this;
  }
  // Replaces the byte at `at` by `n` bytes (a longer length prefix), moving what follows.
  void replace(size_t at, size_t one, const char* bytes, size_t n) {
    Ensure(n);
    std::memmove(data_ + at + n, data_ + at + one, size_ - at - one);
    std::memcpy(data_ + at, bytes, n);
    size_ += n - one;
  }
  std::string Take() {
    room_.resize(size_);
    std::string out = std::move(room_);
    room_ = std::string();
    data_ = room_.data();
    size_ = 0;
    return out;
  }

 private:
  void Resize(size_t bytes) {
    room_.resize(bytes);
    data_ = room_.data();
  }
  std::string room_;  // size() is the capacity in use; the content is its first size_ bytes
  char* data_ = room_.data();
  size_t size_ = 0;
};

[[gnu::always_inline]] inline void Tag(Buffer& out, uint32_t number, WireType type) {
  out.Ensure(10);
  out.advance(EncodeVarint(out.end(), (static_cast<uint64_t>(number) << 3) | type));
}
[[gnu::always_inline]] inline void Varint(Buffer& out, uint32_t number, uint64_t value) {
  out.Ensure(20);
  char* at = out.end();
  size_t n = EncodeVarint(at, (static_cast<uint64_t>(number) << 3) | kVarint);
  n += EncodeVarint(at + n, value);
  out.advance(n);
}
[[gnu::always_inline]] inline void Int64(Buffer& out, uint32_t number, int64_t value) { Varint(out, number, static_cast<uint64_t>(value)); }
[[gnu::always_inline]] inline void Fixed64(Buffer& out, uint32_t number, uint64_t value) {
  Tag(out, number, kFixed64);
  out.Ensure(8);
  std::memcpy(out.end(), &value, 8);
  out.advance(8);
}
inline void Double(Buffer& out, uint32_t number, double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, 8);
  Fixed64(out, number, bits);
}
[[gnu::always_inline]] inline void Bytes(Buffer& out, uint32_t number, std::string_view value) {
  out.Ensure(20 + value.size());
  char* at = out.end();
  size_t n = EncodeVarint(at, (static_cast<uint64_t>(number) << 3) | kLength);
  n += EncodeVarint(at + n, value.size());
  if (!value.empty()) std::memcpy(at + n, value.data(), value.size());
  out.advance(n + value.size());
}

// A nested message written in place (into a std::string or a Buffer): one byte is reserved
// for the length before the payload and patched after it; a payload of 128 bytes or more moves
// forward to make room for a longer length (most messages of a trace are small, so most need
// no move).
template <typename Out>
class Scope {
 public:
  [[gnu::always_inline]] Scope(Out& out, uint32_t number) : out_(out) {
    Tag(out_, number, kLength);
    length_at_ = out_.size();
    out_.push_back('\0');
  }
  [[gnu::always_inline]] ~Scope() {
    const size_t length = out_.size() - length_at_ - 1;
    if (length < 0x80) {
      out_[length_at_] = static_cast<char>(length);
    } else {
      Widen(length);
    }
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  // A length of 128 or more: the payload moves forward past its longer varint.
  void Widen(size_t length) {
    char prefix[10];
    const size_t n = EncodeVarint(prefix, length);
    out_.replace(length_at_, 1, prefix, n);
  }

  Out& out_;
  size_t length_at_ = 0;
};

}  // namespace stepscope::trace::wire
