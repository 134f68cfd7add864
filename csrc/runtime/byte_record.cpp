#include "runtime/byte_record.h"

#include "fusion/error.h"

namespace smelt {

void ByteWriter::u64(uint64_t value) {
  for (int i = 0; i < 8; ++i) data_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void ByteWriter::bytes(const char* data, size_t size) {
  u64(size);
  data_.append(data, size);
}

void ByteWriter::bytes(const std::string& value) { bytes(value.data(), value.size()); }

void ByteReader::need(uint64_t size) const {
  SMELT_CHECK(size <= data_.size() - pos_, "truncated (", data_.size(), " bytes)");
}

uint64_t ByteReader::u64() {
  need(8);
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= uint64_t(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
  pos_ += 8;
  return value;
}

std::string ByteReader::bytes() {
  const uint64_t size = u64();
  need(size);
  std::string value = data_.substr(pos_, size);
  pos_ += size;
  return value;
}

uint64_t ByteReader::below(uint64_t limit, const char* what) {
  const uint64_t value = u64();
  SMELT_CHECK(value < limit, "bad ", what, " ", value);
  return value;
}

}  // namespace smelt
