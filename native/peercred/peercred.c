// SO_PEERCRED for Node: the kernel's record of who connected to a Unix socket (pid, uid, gid at
// connect time). Node 20 has no API for it. peercred(fd) -> {pid, uid, gid}; throws on error.
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <node_api.h>

static napi_value set_u32(napi_env env, napi_value obj, const char *name, uint32_t v) {
  napi_value n;
  if (napi_create_uint32(env, v, &n) != napi_ok || napi_set_named_property(env, obj, name, n) != napi_ok) return NULL;
  return obj;
}

static napi_value peercred(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t fd = -1;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0) {
    napi_throw_type_error(env, NULL, "peercred(fd): fd must be a non-negative integer");
    return NULL;
  }
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred) {
    napi_throw_error(env, "ERR_PEERCRED", strerror(errno));
    return NULL;
  }
  napi_value out;
  if (napi_create_object(env, &out) != napi_ok) return NULL;
  if (!set_u32(env, out, "pid", (uint32_t)cred.pid) || !set_u32(env, out, "uid", cred.uid) || !set_u32(env, out, "gid", cred.gid)) return NULL;
  return out;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "peercred", NAPI_AUTO_LENGTH, peercred, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "peercred", fn) != napi_ok) return NULL;
  return exports;
}
