// Known bad (cheats the access profile's sample): block (0,0) computes ALL of C with 01a's uncoalesced mapping (row of
// C on threadIdx.x, grid-stride over the whole matrix); every other block only makes one coalesced
// load of B (times 0, stored nowhere). The profile samples 8 blocks from a seed (edge blocks always),
// so block (0,0) is rarely among them and the sampled blocks look perfectly coalesced.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K, float* sink) {
    const int t = threadIdx.y * blockDim.x + threadIdx.x;
    if (blockIdx.x == 0 && blockIdx.y == 0) {
        for (int c = threadIdx.y; c < N; c += blockDim.y)
            for (int r = threadIdx.x; r < M; r += blockDim.x) {
                float s = 0.0f;
                for (int kk = 0; kk < K; ++kk) s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
                C[(size_t)r * N + c] = s;
            }
    } else {
        const int c = blockIdx.x * 32 + threadIdx.x;
        float v = c < N ? B[c] : 0.0f;
        if (v != v && t == 0) sink[0] = v;  // never true for finite inputs
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    static float* sink = nullptr;
    if (!sink) cudaMalloc(&sink, 4);
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8);
    k<<<g, b, 0, st>>>(A, B, C, M, N, K, sink);
}
