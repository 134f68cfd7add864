// What identifies this build of the compiler: a hash of every source file of
// csrc (generated at build time by cmake/write_build_id.cmake). Results that
// depend on the compiler's code and are kept across processes (launch
// descriptions and segmentations in the disk cache) are keyed by it.
#pragma once

namespace smelt {

const char* buildId();

}  // namespace smelt
