// Source of shared_reverse.ptx (see README.md in this folder for how it was made).
// Each block stages its `perBlock` elements of `in` in dynamic shared memory
// and writes them back reversed, so the result is only right if all of the
// (possibly > 48 KB of) dynamic shared memory works.
extern "C" __global__ void shared_reverse(const float *__restrict__ in, float *__restrict__ out,
                                          int perBlock) {
  extern __shared__ float staged[];
  const float *src = in + (long long)blockIdx.x * perBlock;
  float *dst = out + (long long)blockIdx.x * perBlock;
  for (int i = threadIdx.x; i < perBlock; i += blockDim.x)
    staged[i] = src[i];
  __syncthreads();
  for (int i = threadIdx.x; i < perBlock; i += blockDim.x)
    dst[i] = staged[perBlock - 1 - i];
}
