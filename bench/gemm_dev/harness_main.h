// main() of the GEMM development harness (PART == -1). Modes, one process each so that a
// configuration that faults or hangs cannot take the others down (run.sh adds a timeout):
//   harness --list          index, name, strategy, threads, shared memory of every configuration
//   harness --run I [--big] layout check, correctness on ragged/small/square shapes, then timing
//                           at 4096^3 (and 8192^3 with --big) of configuration I
//   harness --base [--big]  cuBLAS / cuBLASLt timings for every dtype and layout used
// Output lines start with a tag (CFG, LAYOUT, CHECK, TIME, BASE, SKIP) that table.py reads.

void register_part0();
void register_part1();
void register_part2();
void register_part3();
void register_part4();
void register_part5();
void register_part6();
void register_part7();

static void register_all() {
  register_part0();
  register_part1();
  register_part2();
  register_part3();
  register_part4();
  register_part5();
  register_part6();
  register_part7();
}

static std::string layout_key(int dt, bool a_k, bool b_k) {
  return std::string(dt_name(dt)) + (a_k ? "_Ak" : "_Am") + (b_k ? "_Bk" : "_Bn");
}

struct Buffers {
  void *A = nullptr, *B = nullptr;
  __half *A16 = nullptr, *B16 = nullptr;  // fp8 reference operands
  float *C = nullptr, *R = nullptr;
  size_t elems_ab = 0, elems_c = 0;
  void reserve(size_t ab, size_t c) {
    if (ab > elems_ab) {
      if (A) { CK(cudaFree(A)); CK(cudaFree(B)); CK(cudaFree(A16)); CK(cudaFree(B16)); }
      CK(cudaMalloc(&A, ab * 4));
      CK(cudaMalloc(&B, ab * 4));
      CK(cudaMalloc(&A16, ab * 2));
      CK(cudaMalloc(&B16, ab * 2));
      elems_ab = ab;
    }
    if (c > elems_c) {
      if (C) { CK(cudaFree(C)); CK(cudaFree(R)); }
      CK(cudaMalloc(&C, c * 4));
      CK(cudaMalloc(&R, c * 4));
      elems_c = c;
    }
  }
};

static Buffers g_buf;
static cublasHandle_t g_cublas;
static unsigned long long g_seed = 1;

// Fresh random operands for (dt, layouts, M, N, K); C unset.
static Problem make_problem(int dt, bool a_k, bool b_k, int M, int N, int K, int split, int group_m) {
  const size_t ab = (size_t)std::max(M, N) * K;
  g_buf.reserve(ab, (size_t)M * N);
  Problem p;
  p.dt = dt;
  p.a_k = a_k;
  p.b_k = b_k;
  p.M = M;
  p.N = N;
  p.K = K;
  p.A = g_buf.A;
  p.B = g_buf.B;
  p.lda = a_k ? K : M;
  p.ldb = b_k ? K : N;
  p.C = g_buf.C;
  p.split = split;
  p.group_m = group_m;
  fill_random(g_buf.A, (size_t)M * K, dt, g_seed++);
  fill_random(g_buf.B, (size_t)N * K, dt, g_seed++);
  return p;
}

// The reference product into g_buf.R: exact-fp32 cuBLAS for f32/tf32, f16 for fp8 (exact
// conversion), the operands' own type otherwise; f32 accumulation and output throughout.
static void reference(const Problem& p) {
  if (p.dt == F8E4M3 || p.dt == F8E5M2) {
    fp8_to_f16_kernel<<<1024, 256>>>(p.A, g_buf.A16, (size_t)p.M * p.K, p.dt);
    fp8_to_f16_kernel<<<1024, 256>>>(p.B, g_buf.B16, (size_t)p.N * p.K, p.dt);
    CK(cudaGetLastError());
    cublas_gemm(g_cublas, F16, false, p.a_k, p.b_k, p.M, p.N, p.K, g_buf.A16, p.lda, g_buf.B16, p.ldb, g_buf.R);
  } else {
    const int dt = p.dt == TF32 ? F32 : p.dt;
    cublas_gemm(g_cublas, dt, false, p.a_k, p.b_k, p.M, p.N, p.K, p.A, p.lda, p.B, p.ldb, g_buf.R);
  }
  CK(cudaDeviceSynchronize());
}

static double tolerance(int dt) {
  switch (dt) {
    case F32: return 1e-4;
    case TF32: return 5e-3;
    case F8E4M3:
    case F8E5M2: return 2e-2;  // fp8 wgmma accumulates with reduced precision
    default: return 1e-3;
  }
}

// Runs cfg on p once (C poisoned with NaN, or zeroed for split-K) and compares with the reference.
static bool check(int idx, const Cfg& c, const Problem& p) {
  reference(p);
  CK(cudaMemset(p.C, c.split > 1 ? 0 : 0xFF, (size_t)p.M * p.N * 4));
  c.launch(p);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    printf("CHECK %d %dx%dx%d ERROR %s FAIL\n", idx, p.M, p.N, p.K, cudaGetErrorString(e));
    fflush(stdout);
    exit(3);  // the context is gone; the next configuration runs in a fresh process
  }
  const ErrResult r = rel_error(p.C, g_buf.R, (size_t)p.M * p.N);
  const bool ok = r.nonfinite == 0 && r.rel <= tolerance(c.dt);
  printf("CHECK %d %dx%dx%d g%d rel=%.3e nonfinite=%lld %s\n", idx, p.M, p.N, p.K, p.group_m, r.rel, r.nonfinite,
         ok ? "PASS" : "FAIL");
  fflush(stdout);
  return ok;
}

static void timing(int idx, const Cfg& c, int size, int group_m) {
  Problem p = make_problem(c.dt, c.a_k, c.b_k, size, size, size, c.split, group_m);
  if (!check(idx, c, p)) return;  // never time a wrong result
  const size_t cbytes = (size_t)p.M * p.N * 4;
  auto fn = [&] {
    if (c.split > 1) CK(cudaMemsetAsync(p.C, 0, cbytes));
    c.launch(p);
  };
  const int reps = size >= 8192 ? 10 : 30;
  const double ms = time_median(fn, 3, reps);
  const double tf = 2.0 * size * (double)size * size / (ms * 1e-3) / 1e12;
  printf("TIME %d %d g%d %.4f %.1f\n", idx, size, group_m, ms, tf);
  fflush(stdout);
}

static void run_one(int idx, bool big) {
  const Cfg& c = registry()[idx];
  printf("CFG %d | %s | %s | %d | %d\n", idx, c.name.c_str(), c.strat.c_str(), c.threads, c.smem);
  if (!c.setup_error.empty()) {
    printf("CHECK %d setup ERROR %s FAIL\n", idx, c.setup_error.c_str());
    return;
  }
  const bool lay = c.layout_ok();
  printf("LAYOUT %d %s\n", idx, lay ? "ok" : "BAD");
  fflush(stdout);
  if (!lay) return;
  // Ragged (not multiples of any tile), tiny, and odd-aligned shapes where the config allows.
  std::vector<std::array<int, 3>> shapes = {{520, 392, 336}, {24, 40, 48}, {1024, 1024, 1024}};
  if (c.align <= 2) shapes.push_back({518, 390, 302});
  if (c.align <= 1) shapes.push_back({517, 389, 301});
  bool all = true;
  for (auto& s : shapes) {
    for (int g : {1, 8}) {
      Problem p = make_problem(c.dt, c.a_k, c.b_k, s[0], s[1], s[2], c.split, g);
      all = check(idx, c, p) && all;
    }
  }
  if (!all) return;
  timing(idx, c, 4096, 1);
  timing(idx, c, 4096, 8);
  if (big) timing(idx, c, 8192, 8);
}

static void base_one(const char* key, int dt, bool a_k, bool b_k, int size, int mode) {
  Problem p = make_problem(dt, a_k, b_k, size, size, size, 1, 1);
  LtFp8 lt;
  bool ok = true;
  auto fn = [&] {
    if (mode == 1) {
      ok = lt.run(dt, size, size, size, p.A, p.B, p.C, 0);
    } else if (mode == 2) {  // f16 output, like torch.matmul on f16 tensors
      cublas_gemm(g_cublas, dt, false, a_k, b_k, size, size, size, p.A, p.lda, p.B, p.ldb, p.C, CUDA_R_16F);
    } else {
      cublas_gemm(g_cublas, dt, dt == TF32, a_k, b_k, size, size, size, p.A, p.lda, p.B, p.ldb, p.C);
    }
  };
  fn();
  if (!ok || cudaDeviceSynchronize() != cudaSuccess) {
    printf("BASE %s %d n/a\n", key, size);
    cudaGetLastError();
    return;
  }
  const double ms = time_median(fn, 3, size >= 8192 ? 10 : 30);
  printf("BASE %s %d %.4f %.1f\n", key, size, ms, 2.0 * size * (double)size * size / (ms * 1e-3) / 1e12);
  fflush(stdout);
}

int main(int argc, char** argv) {
  CK(cudaSetDevice(0));
  CB(cublasCreate(&g_cublas));
  register_all();
  (void)cudaGetLastError();  // a failed registration call must not be blamed on a later launch
  const bool big = argc > 2 && std::string(argv[argc - 1]) == "--big";
  if (argc >= 2 && std::string(argv[1]) == "--list") {
    for (size_t i = 0; i < registry().size(); ++i) {
      const Cfg& c = registry()[i];
      printf("CFG %zu | %s | %s | %d | %d | %d | %d | %s\n", i, c.name.c_str(), c.strat.c_str(), c.threads, c.smem,
             c.regs, c.local_bytes, c.symbol.c_str());
    }
    return 0;
  }
  if (argc >= 3 && std::string(argv[1]) == "--run") {
    const int idx = atoi(argv[2]);
    if (idx < 0 || idx >= (int)registry().size()) return 1;
    run_one(idx, big);
    return 0;
  }
  if (argc >= 2 && std::string(argv[1]) == "--base") {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("DEVICE %s sms=%d l2=%dMB smem_optin=%zu\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20,
           prop.sharedMemPerBlockOptin);
    std::vector<int> sizes = {4096};
    if (argc > 2 && std::string(argv[2]) == "--big") sizes.push_back(8192);
    for (int s : sizes) {
      base_one(layout_key(F16, true, false).c_str(), F16, true, false, s, 0);
      base_one((layout_key(F16, true, false) + "_out16").c_str(), F16, true, false, s, 2);
      base_one(layout_key(F16, true, true).c_str(), F16, true, true, s, 0);
      base_one(layout_key(F16, false, false).c_str(), F16, false, false, s, 0);
      base_one(layout_key(BF16, true, false).c_str(), BF16, true, false, s, 0);
      base_one(layout_key(TF32, true, true).c_str(), TF32, true, true, s, 0);
      base_one(layout_key(F32, true, false).c_str(), F32, true, false, s, 0);
      base_one(layout_key(F32, true, true).c_str(), F32, true, true, s, 0);
      base_one(layout_key(F32, false, false).c_str(), F32, false, false, s, 0);
      base_one(layout_key(F8E4M3, true, true).c_str(), F8E4M3, true, true, s, 1);
      base_one(layout_key(F8E5M2, true, true).c_str(), F8E5M2, true, true, s, 1);
    }
    return 0;
  }
  fprintf(stderr, "usage: %s --list | --run I [--big] | --base [--big]\n", argv[0]);
  return 1;
}
