// A record of fields as bytes, for what the disk cache stores: unsigned and
// signed 64-bit integers (little endian) and length-prefixed byte strings,
// read back in the order written. Reading past the end is a smelt::Error
// ("truncated"), so a damaged record is an error, never a wrong value.
#pragma once

#include <cstdint>
#include <string>

namespace smelt {

class ByteWriter {
 public:
  void u64(uint64_t value);
  void i64(int64_t value) { u64(static_cast<uint64_t>(value)); }
  void bytes(const std::string& value);
  void bytes(const char* data, size_t size);
  const std::string& data() const { return data_; }

 private:
  std::string data_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string data) : data_(std::move(data)) {}
  uint64_t u64();
  int64_t i64() { return static_cast<int64_t>(u64()); }
  std::string bytes();
  // u64() checked to be below `limit` (a count or an enum's value).
  uint64_t below(uint64_t limit, const char* what);
  bool atEnd() const { return pos_ == data_.size(); }

 private:
  void need(uint64_t size) const;
  std::string data_;
  size_t pos_ = 0;
};

}  // namespace smelt
