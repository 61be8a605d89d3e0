// Source of vector_add.ptx (see README.md in this folder for how it was made).
extern "C" __global__ void add_kernel(const float *__restrict__ x, const float *__restrict__ y,
                                      float *__restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = x[i] + y[i];
}
