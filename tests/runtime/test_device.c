/*
 * test_device — the device table is filled by dlopen/dlsym with the names
 * the real NVIDIA libraries export.
 *
 * The toolkit ships a stub libcuda (lib64/stubs) that exports every driver
 * symbol and answers CUDA_ERROR_STUB_LIBRARY, and the real libcublasLt,
 * whose status strings need no GPU.  Loading the table from those two and
 * calling through it proves that every versioned name resolves in NVIDIA's
 * own libraries and that the pointers have callable prototypes — the same
 * code path the runtime takes on a GPU machine.  Failures (no library, a
 * library without the symbols) must name what is missing.
 */
#include <dlfcn.h>
#include <stdlib.h>

#include "check.h"
#include "device.h"

#ifndef BERTC_CUDA_HOME
#define BERTC_CUDA_HOME "/usr/local/cuda"
#endif

static const char *cuda_home(void) {
    const char *h = getenv("CUDA_HOME");
    return h && *h ? h : BERTC_CUDA_HOME;
}

static void test_real_names_resolve(void) {
    char drv[512], lt[512];
    snprintf(drv, sizeof drv, "%s/lib64/stubs/libcuda.so", cuda_home());
    snprintf(lt, sizeof lt, "%s/lib64/libcublasLt.so", cuda_home());
    device_table t;
    diag d;
    diag_init(&d);
    int rc = device_table_open(&t, DEVICE_KIND_CUDA, drv, lt, &d);
    CHECK(rc == 0, "loading the toolkit's libcuda stub and libcublasLt: %s", d.text);
    if (rc) return;
#define CHECK_FIELD(name) CHECK(t.name != NULL, "%s is not filled", #name);
    DEVICE_DRIVER_FUNCTIONS(CHECK_FIELD)
    DEVICE_BLASLT_FUNCTIONS(CHECK_FIELD)
#undef CHECK_FIELD
    /* The stub answers every call with CUDA_ERROR_STUB_LIBRARY. */
    CUresult r = t.cuInit(0);
    CHECK(r == CUDA_ERROR_STUB_LIBRARY, "cuInit through the stub returned %d, expected %d", (int)r,
          (int)CUDA_ERROR_STUB_LIBRARY);
    const char *s = t.cublasLtGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED);
    CHECK(s && strstr(s, "not supported"), "cublasLtGetStatusString gave '%s'", s ? s : "(null)");
    device_table_close(&t);
    CHECK(t.driver_lib == NULL && t.cuInit == NULL, "close must clear the table");
}

static void test_default_driver(void) {
    /* Here there is no driver; on a GPU machine there is one. Either way the result must say which. */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    device_table t;
    diag d;
    diag_init(&d);
    int rc = device_table_open(&t, DEVICE_KIND_CUDA, NULL, NULL, &d);
    if (h) {
        CHECK(rc == 0, "libcuda.so.1 loads but the table does not: %s", d.text);
        dlclose(h);
    } else {
        CHECK(rc != 0, "no libcuda.so.1 on this machine, yet the table opened");
        CHECK(strstr(d.text, "no CUDA driver") && strstr(d.text, "libcuda.so.1"), "unclear message: %s", d.text);
        CHECK(d.code == DIAG_CODE_INTERNAL, "a missing driver is a device error (code 3), got %d", (int)d.code);
    }
    if (!rc) device_table_close(&t);
}

static void test_missing_symbol(void) {
    device_table t;
    diag d;
    diag_init(&d);
    int rc = device_table_open(&t, DEVICE_KIND_CUDA, "libm.so.6", "libm.so.6", &d);
    CHECK(rc != 0, "libm opened as a CUDA driver");
    CHECK(strstr(d.text, "libm.so.6 does not export cuInit"), "message does not name the symbol: %s", d.text);
    CHECK(t.driver_lib == NULL && t.blaslt_lib == NULL, "a failed open must leave nothing open");
}

static void test_missing_library(void) {
    device_table t;
    diag d;
    diag_init(&d);
    char path[64];
    snprintf(path, sizeof path, "/nonexistent/libcuda-%llx.so", (unsigned long long)check_rng_u64());
    int rc = device_table_open(&t, DEVICE_KIND_CUDA, path, NULL, &d);
    CHECK(rc != 0 && strstr(d.text, path), "missing library not named: %s", d.text);
    setenv("BERTC_EMU_DEVICE", path, 1);
    diag_init(&d);
    rc = device_table_open(&t, DEVICE_KIND_EMU, NULL, NULL, &d);
    CHECK(rc != 0 && strstr(d.text, "no emulated device") && strstr(d.text, path), "emu message: %s", d.text);
    unsetenv("BERTC_EMU_DEVICE");
}

static void test_arch_names(void) {
    char buf[16];
    int major = (int)check_rng_range(1, 12), minor = (int)check_rng_range(0, 9);
    device_arch_name(major, minor, buf, sizeof buf);
    char want[16];
    snprintf(want, sizeof want, "sm_%d%d", major, minor);
    CHECK(!strcmp(buf, want), "%d.%d named %s, expected %s", major, minor, buf, want);
    device_arch_name(8, 6, buf, sizeof buf);
    CHECK(!strcmp(buf, "sm_86"), "8.6 named %s", buf);
    device_arch_name(0, 0, buf, sizeof buf);
    CHECK(!strcmp(buf, "emu"), "0.0 (the emulated device) named %s", buf);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_real_names_resolve);
    CHECK_CASE(test_default_driver);
    CHECK_CASE(test_missing_symbol);
    CHECK_CASE(test_missing_library);
    CHECK_CASE(test_arch_names);
    return check_summary();
}
