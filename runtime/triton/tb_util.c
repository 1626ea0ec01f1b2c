/*
 * tb_util — what every file of the Triton backend needs: server error
 * objects with formatted messages, logging through the server's log,
 * growable scratch arrays, and the clock Triton's statistics use.
 *
 * Messages are formatted into a fixed buffer and truncated rather than
 * failing: an error about an error must still reach the client.  The
 * scratch arrays only grow; an instance keeps them for its lifetime, so a
 * request like the last one allocates nothing.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tb.h"

#define TB_MSG_CAP 2048

TRITONSERVER_Error *tb_error(TRITONSERVER_Error_Code code, const char *fmt, ...) {
    char msg[TB_MSG_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return TRITONSERVER_ErrorNew(code, msg);
}

void tb_log_at(TRITONSERVER_LogLevel level, const char *file, int line, const char *fmt, ...) {
    char msg[TB_MSG_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    TRITONSERVER_Error *e = TRITONSERVER_LogMessage(level, file, line, msg);
    if (e) TRITONSERVER_ErrorDelete(e);
}

void tb_log_error(TRITONSERVER_Error *err, const char *what) {
    if (!err) return;
    tb_log(TRITONSERVER_LOG_ERROR, "bertc: %s: %s", what, TRITONSERVER_ErrorMessage(err));
    TRITONSERVER_ErrorDelete(err);
}

uint64_t tb_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

char *tb_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c) memcpy(c, s, n);
    return c;
}

void tb_vec_init(tb_vec *v, size_t item) {
    memset(v, 0, sizeof *v);
    v->item = item;
}

void tb_vec_free(tb_vec *v) {
    free(v->data);
    tb_vec_init(v, v->item);
}

void *tb_vec_reserve(tb_vec *v, size_t n) {
    if (n > ((size_t)-1) / v->item - v->len) return NULL;
    if (v->len + n > v->cap) {
        size_t cap = v->cap ? v->cap : 64;
        while (cap < v->len + n) cap = cap > ((size_t)-1) / 2 ? v->len + n : cap * 2;
        if (cap > ((size_t)-1) / v->item) return NULL;
        void *d = realloc(v->data, cap * v->item);
        if (!d) return NULL;
        v->data = d;
        v->cap = cap;
    }
    return (char *)v->data + v->len * v->item;
}
