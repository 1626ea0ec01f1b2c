/* fuzz_safetensors — the safetensors header on arbitrary bytes; whatever
 * opens must be internally consistent (every tensor's data inside the
 * file, its size what dtype and shape say). */
#include "fuzz.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    st_file f;
    diag d;
    diag_init(&d);
    if (st_file_open_memory(&f, data, size, "fuzz.safetensors", &d)) return 0;
    const unsigned char *lo = (const unsigned char *)f.map, *hi = lo + f.map_len;
    for (size_t i = 0; i < f.count; i++) {
        const st_tensor *t = &f.tensors[i];
        uint64_t nb = (uint64_t)st_tensor_numel(t) * st_dtype_size(t->dtype);
        const unsigned char *p = t->data;
        fuzz_require(t->end - t->begin == nb && p >= lo && nb <= (uint64_t)(hi - p), "a tensor outside its file");
        fuzz_require(st_file_find(&f, t->name) == t, "a tensor its own name does not find");
        if (nb) (void)weights_tensor_get_f32(&t->view, st_tensor_numel(t) - 1);
    }
    st_file_close(&f);
    return 0;
}
