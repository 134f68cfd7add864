// smelt kernel pointwise, generated from kernel IR.
typedef long long int64_t;
typedef int64_t index_t;

namespace smelt {
constexpr unsigned kBlockDim[3] = {128, 1, 1};
}  // namespace smelt

// (cudaPrelude())

extern "C" __global__ void __launch_bounds__(128) pointwise(
    smelt::Tensor<float, 2> T0,
    smelt::Tensor<float, 2> T1,
    smelt::Tensor<float, 2> T4,
    float s0) {
  {  // i0 over [0, smelt::ceilDiv(T0.size[0] * T0.size[1], 128)) bound to blockIdx.x
    const index_t i0 = blockIdx.x;
    {  // i1 over [0, 128) bound to threadIdx.x
      const index_t i1 = threadIdx.x;
      float T3[1];
      if ((i0 * 128) + i1 < T0.size[0] * T0.size[1]) {
        T3[0] = expf(T0.data[((((i0 * 128) + i1) / T0.size[1]) * T0.stride[0]) + ((((i0 * 128) + i1) % T0.size[1]) * T0.stride[1])]);
        T3[0] = T3[0] * s0;
        T4.data[((((i0 * 128) + i1) / T0.size[1]) * T4.stride[0]) + ((((i0 * 128) + i1) % T0.size[1]) * T4.stride[1])] = T3[0] + T1.data[((((i0 * 128) + i1) / T0.size[1]) * T1.stride[0]) + ((((i0 * 128) + i1) % T0.size[1]) * T1.stride[1])];
      }
    }
  }
}
