// The C heap's free memory back to the kernel, for the standalone server (src/server/c-heap.ts).
// glibc keeps freed memory for reuse: it raises its trim threshold after a large block is freed
// (up to 64 MiB), and V8's compiler threads each get an arena of their own. A server that had
// compiled its hot paths kept 3-6 MiB of such pages for as long as it ran (docs/performance.md,
// memory). Node has no binding for mallopt(3) or malloc_trim(3); this N-API module is one.
#include <malloc.h>
#include <node_api.h>

/*
 * node::LowMemoryNotification() (node.h, Node's C++ API): V8's collections for a host low on
 * memory, which also shrink the young generation whatever the recent allocation rate (V8 keeps it
 * at the size the last burst grew it to otherwise). Resolved from the node binary when the module
 * loads; weak, so a host without it leaves it null and the module still loads.
 */
extern void _ZN4node21LowMemoryNotificationEv(void) __attribute__((weak));

/**
 * At most two arenas for threads that have none yet. The thresholds keep glibc's dynamic rule:
 * fixed at 128 KiB, every larger block (a 1 MiB output frame) was an mmap and a munmap.
 */
static napi_value configure(napi_env env, napi_callback_info info) {
  (void)info;
  int ok = mallopt(M_ARENA_MAX, 2) == 1;
  napi_value result;
  napi_get_boolean(env, ok, &result);
  return result;
}

/** malloc_trim(0): every arena's free pages back to the kernel; true when any were. */
static napi_value trim(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result;
  napi_get_boolean(env, malloc_trim(0) == 1, &result);
  return result;
}

/** node::LowMemoryNotification() on this thread's isolate; false when this Node has none to call. */
static napi_value low_memory(napi_env env, napi_callback_info info) {
  (void)info;
  int ok = _ZN4node21LowMemoryNotificationEv != 0;
  if (ok) _ZN4node21LowMemoryNotificationEv();
  napi_value result;
  napi_get_boolean(env, ok, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "configure", NAPI_AUTO_LENGTH, configure, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "configure", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, trim, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "trim", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "lowMemory", NAPI_AUTO_LENGTH, low_memory, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "lowMemory", fn) != napi_ok) return NULL;
  return exports;
}
