// smelt kernel shared_tiles, generated from kernel IR.
typedef long long int64_t;
typedef int64_t index_t;

namespace smelt {
constexpr unsigned kBlockDim[3] = {128, 1, 1};
}  // namespace smelt

// (cudaPrelude())

extern "C" __global__ void __launch_bounds__(128) shared_tiles(
    smelt::Tensor<float, 1> T0,
    smelt::Tensor<float, 1> T4) {
  extern __shared__ __align__(128) unsigned char smem[];
  float* T1 = reinterpret_cast<float*>(smem + 0);  // 512 bytes
  float* T2 = reinterpret_cast<float*>(smem + 512);  // 512 bytes
  float* T3 = reinterpret_cast<float*>(smem + 0);  // 512 bytes, alias of T1
  {  // i0 over [0, smelt::ceilDiv(T0.size[0], 128)) bound to blockIdx.x
    const index_t i0 = blockIdx.x;
    {  // i1 over [0, 128) bound to threadIdx.x
      const index_t i1 = threadIdx.x;
      if ((i0 * 128) + i1 < T0.size[0]) {
        T1[i1] = T0.data[((i0 * 128) + i1) * T0.stride[0]];
      }
    }
    __syncthreads();  // RAW T1
    {  // i1 over [0, 128) bound to threadIdx.x
      const index_t i1 = threadIdx.x;
      T2[i1] = T1[127 - i1] * 2.0f;
    }
    __syncthreads();  // RAW T2
    {  // i1 over [0, 128) bound to threadIdx.x
      const index_t i1 = threadIdx.x;
      T3[i1] = T2[((i1 + 1) & 127)];
    }
    __syncthreads();  // RAW T3
    {  // i1 over [0, 128) bound to threadIdx.x
      const index_t i1 = threadIdx.x;
      if ((i0 * 128) + i1 < T0.size[0]) {
        T4.data[((i0 * 128) + i1) * T4.stride[0]] = T3[127 - i1];
      }
    }
  }
}
