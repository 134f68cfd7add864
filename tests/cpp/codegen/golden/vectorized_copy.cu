// smelt kernel vectorized_copy, generated from kernel IR.
typedef long long int64_t;
typedef int64_t index_t;

namespace smelt {
constexpr unsigned kBlockDim[3] = {16, 1, 1};
}  // namespace smelt

// (cudaPrelude())

namespace smelt {

// N elements of T as one aligned object: copying it is one vector load and
// one vector store.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vector {
  T value[N];
};

}  // namespace smelt

extern "C" __global__ void __launch_bounds__(16) vectorized_copy(
    smelt::Tensor<float, 2> T0,
    smelt::Tensor<float, 2> T2) {
  {  // i0 over [0, T0.size[0]) bound to blockIdx.x
    const index_t i0 = blockIdx.x;
    {  // i1 over [0, 16) bound to threadIdx.x
      const index_t i1 = threadIdx.x;
      __align__(16) float T1[4];
      {  // i2 over [0, 4) vectorized: 16-byte accesses
        *reinterpret_cast<smelt::Vector<float, 4>*>(&T1[0]) = *reinterpret_cast<const smelt::Vector<float, 4>*>(&T0.data[(i0 * T0.stride[0]) + ((i1 * 4) * T0.stride[1])]);
      }
      {  // i3 over [0, 4) vectorized: 16-byte accesses
        *reinterpret_cast<smelt::Vector<float, 4>*>(&T2.data[(i0 * T2.stride[0]) + ((i1 * 4) * T2.stride[1])]) = *reinterpret_cast<const smelt::Vector<float, 4>*>(&T1[0]);
      }
    }
  }
}
