"""A plain host variable (a namespace-scope global without __device__ or __constant__, not const) used in device
code: nvcc refuses it ("identifier is undefined in device code"); the CPU backend, one host program, would run
it, so its build refuses it too, at the line of the use."""

import pytest

from grader.compile.cpu.rewrite import LaunchSyntaxError, rewrite

KERNEL = "__global__ void k(float* out) {{ {body} }}\n"


@pytest.mark.parametrize(
    "decl, body",
    [
        ("int g_n = 4;", "out[0] = g_n;"),
        ("static float g_t[8];", "out[threadIdx.x] = g_t[threadIdx.x];"),
        ("namespace cfg { int tile = 16; }", "out[0] = 1;"),  # unused: fine (checked below)
        ("unsigned long g_count;", "g_count += 1;"),
        ("float* g_ptr = nullptr;", "out[0] = g_ptr[0];"),
    ],
)
def test_a_host_variable_in_a_kernel_is_a_compile_error(decl, body):
    src = f"#include <cuda_runtime.h>\n{decl}\n" + KERNEL.format(body=body)
    if "cfg" in decl:
        rewrite(src)  # declared, never used in device code
        return
    with pytest.raises(LaunchSyntaxError) as e:
        rewrite(src)
    assert e.value.line == 3 and "is a host variable (declared at line 2" in e.value.message


def test_in_a_device_function_and_inside_a_namespace():
    src = (
        "namespace cfg {\nint tile = 16;\n}\n"
        "__device__ int twice() { return 2 * cfg::tile; }\n"
        "__global__ void k(int* out) { out[0] = twice(); }\n"
    )
    with pytest.raises(LaunchSyntaxError) as e:
        rewrite(src)
    assert e.value.line == 4 and "'tile'" in e.value.message


@pytest.mark.parametrize(
    "decl, body",
    [
        ("constexpr int T = 4;", "out[0] = T;"),
        ("const int T = 4;", "out[0] = T;"),
        ("static const float kScale = 2.0f;", "out[0] = kScale;"),
        ("__device__ int g_d;", "out[0] = g_d;"),
        ("__constant__ float g_c[4];", "out[0] = g_c[1];"),
        ("int n = 4;", "int n = 3; out[0] = n;"),  # a local of that name
        ("int n = 4;", "for (int n = 0; n < 2; ++n) out[n] = 0;"),
        ("struct P { int n; }; int n = 4;", "P p{1}; out[0] = p.n;"),  # a member of that name
        ("int calls = 0;", "out[0] = 1;"),  # only host code uses it
    ],
)
def test_what_device_code_may_use(decl, body):
    rewrite(f"{decl}\n" + KERNEL.format(body=body) + 'extern "C" void f(float* o) { k<<<1, 1>>>(o); }\n')


def test_a_parameter_of_that_name_and_host_device_functions_are_not_checked():
    rewrite("int n = 4;\n__global__ void k(float* out, int n) { out[0] = n; }\n")
    rewrite("int n = 4;\n__host__ __device__ int get() { return 1; }\n__global__ void k(int* o) { o[0] = get(); }\n")
