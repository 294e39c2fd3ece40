"""_lib.py — libmsb's host API as ctypes sees it: the library, the structs a call passes or
receives, and each function's signature. Nothing here has policy; msb/__init__.py does.

The library is found at $MSB_LIBMSB when set (a build tree), else as libmsb.so.0 through the
dynamic loader (an installed msb). Structs msb fills in or reads that may grow at their end
in a later release (an exec request, its result) are allocated with a zeroed tail, so a field
appended after this binding was written reads as its zero default and is never written past.
"""
import ctypes

import os

_path = os.environ.get("MSB_LIBMSB") or "libmsb.so.0"
lib = ctypes.CDLL(_path, use_errno=True)
# free and strdup as the process resolves them (RTLD_DEFAULT), so memory crosses to and from
# libmsb through the same allocator even when one is interposed (a sanitizer's, a profiler's).
libc = ctypes.CDLL(None, use_errno=True)

c_errc = ctypes.c_int
TAIL = 256  # bytes of zeroed room after a struct that may grow at its end


class Error(ctypes.Structure):
    _fields_ = [("code", c_errc), ("message", ctypes.c_char_p)]


class Key(ctypes.Structure):
    _fields_ = [("scope", ctypes.c_char_p), ("thread_id", ctypes.c_char_p),
                ("agent_dir", ctypes.c_char_p), ("call_id", ctypes.c_char_p)]


class Buf(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(ctypes.c_ubyte)), ("len", ctypes.c_size_t),
                ("cap", ctypes.c_size_t)]

    def bytes(self):
        return ctypes.string_at(self.data, self.len) if self.len else b""


class ExecRequest(ctypes.Structure):
    _fields_ = [("argv", ctypes.POINTER(ctypes.c_char_p)), ("working_directory", ctypes.c_char_p),
                ("timeout", ctypes.c_double), ("max_output", ctypes.c_size_t),
                ("stdin_data", ctypes.c_void_p), ("stdin_len", ctypes.c_size_t),
                ("_tail", ctypes.c_ubyte * TAIL)]


class ExecResult(ctypes.Structure):
    _fields_ = [("exit_code", ctypes.c_int), ("term_signal", ctypes.c_int),
                ("timed_out", ctypes.c_bool), ("out_truncated", ctypes.c_bool),
                ("err_truncated", ctypes.c_bool), ("out", Buf), ("err", Buf),
                ("_tail", ctypes.c_ubyte * TAIL)]


class Entry(ctypes.Structure):
    _fields_ = [("path", ctypes.c_void_p), ("kind", ctypes.c_int), ("size_bytes", ctypes.c_int64)]


class EntryList(ctypes.Structure):
    _fields_ = [("items", ctypes.POINTER(Entry)), ("len", ctypes.c_size_t)]


class DisposalFailure(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("detail", ctypes.c_char_p)]


class ScopePurge(ctypes.Structure):
    _fields_ = [("disposed", ctypes.c_uint64), ("has_undisposed", ctypes.c_bool),
                ("undisposed", DisposalFailure)]


class Artifact(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("content", ctypes.POINTER(ctypes.c_ubyte)),
                ("len", ctypes.c_size_t), ("kind", ctypes.c_char_p),
                ("media_type", ctypes.c_char_p), ("call_id", ctypes.c_char_p)]


class Landed(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("media_type", ctypes.c_void_p),
                ("display", ctypes.c_void_p), ("handle", ctypes.c_void_p)]


class LandedList(ctypes.Structure):
    _fields_ = [("items", ctypes.POINTER(Landed)), ("len", ctypes.c_size_t)]


BG_ID_MAX, BG_COMMAND_MAX = 32, 256


class BgStatus(ctypes.Structure):
    _fields_ = [("id", ctypes.c_char * (BG_ID_MAX + 1)), ("pid", ctypes.c_int64),
                ("running", ctypes.c_bool), ("exit_code", ctypes.c_int), ("signal", ctypes.c_int),
                ("timed_out", ctypes.c_bool), ("ring", ctypes.c_uint64),
                ("out_written", ctypes.c_uint64), ("err_written", ctypes.c_uint64),
                ("started", ctypes.c_double), ("command", ctypes.c_char * (BG_COMMAND_MAX + 1))]


class BgRead(ctypes.Structure):
    _fields_ = [("out_offset", ctypes.c_uint64), ("err_offset", ctypes.c_uint64),
                ("max_bytes", ctypes.c_uint64), ("wait", ctypes.c_double),
                ("until_exit", ctypes.c_bool)]


class BgOutput(ctypes.Structure):
    _fields_ = [("status", BgStatus), ("out", Buf), ("err", Buf), ("out_start", ctypes.c_uint64),
                ("err_start", ctypes.c_uint64), ("out_dropped", ctypes.c_uint64),
                ("err_dropped", ctypes.c_uint64)]


class BgList(ctypes.Structure):
    _fields_ = [("items", ctypes.POINTER(BgStatus)), ("n", ctypes.c_size_t)]


DELIVER = ctypes.CFUNCTYPE(c_errc, ctypes.c_void_p, ctypes.POINTER(Artifact),
                           ctypes.POINTER(Landed), ctypes.POINTER(Error))


class OutputSink(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("ctx", ctypes.c_void_p),
                ("per_call", ctypes.c_bool), ("normalization", ctypes.c_int),
                ("deliver", DELIVER), ("destroy", ctypes.c_void_p)]


class CollectOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("outputs", ctypes.c_void_p),
                ("n_outputs", ctypes.c_size_t), ("call_id", ctypes.c_char_p),
                ("observer", ctypes.c_void_p), ("key", ctypes.POINTER(Key))]


P = ctypes.c_void_p
PP = ctypes.POINTER(ctypes.c_void_p)
E = ctypes.POINTER(Error)


def _sig(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


errc_name = _sig("msb_errc_name", ctypes.c_char_p, c_errc)
error_clear = _sig("msb_error_clear", None, E)
config_load = _sig("msb_config_load", c_errc, ctypes.c_char_p, P, PP, E)
config_free = _sig("msb_config_free", None, P)
config_router = _sig("msb_config_router", c_errc, P, PP, E)
config_spec_find = _sig("msb_config_spec_find", c_errc, P, ctypes.c_char_p, PP, E)
config_spec_count = _sig("msb_config_spec_count", ctypes.c_size_t, P)
config_spec_at = _sig("msb_config_spec_at", P, P, ctypes.c_size_t)
router_free = _sig("msb_router_free", None, P)
router_ensure_can_serve = _sig("msb_router_ensure_can_serve", c_errc, P, P, PP, E)
router_acquire = _sig("msb_router_acquire", c_errc, P, ctypes.POINTER(Key), P, PP, E)
router_dispose = _sig("msb_router_dispose", ctypes.c_bool, P, ctypes.POINTER(Key),
                      ctypes.POINTER(DisposalFailure))
router_dispose_scope = _sig("msb_router_dispose_scope", None, P, ctypes.c_char_p,
                            ctypes.c_char_p, ctypes.POINTER(ScopePurge))
backend_name = _sig("msb_backend_name", ctypes.c_char_p, P)
sandbox_release = _sig("msb_sandbox_release", None, P)
sandbox_key = _sig("msb_sandbox_key", ctypes.POINTER(Key), P)
sandbox_backend = _sig("msb_sandbox_backend", P, P)
sandbox_exec = _sig("msb_sandbox_exec", c_errc, P, ctypes.POINTER(ExecRequest),
                    ctypes.POINTER(ExecResult), E)
sandbox_run_code = _sig("msb_sandbox_run_code", c_errc, P, ctypes.c_char_p, ctypes.c_double,
                        ctypes.POINTER(ExecResult), E)
sandbox_write_file = _sig("msb_sandbox_write_file", c_errc, P, ctypes.c_char_p, ctypes.c_char_p,
                          ctypes.c_size_t, ctypes.c_char_p, E)
sandbox_stat_file = _sig("msb_sandbox_stat_file", c_errc, P, ctypes.c_char_p, ctypes.c_char_p,
                         ctypes.POINTER(Entry), ctypes.POINTER(ctypes.c_bool), E)
sandbox_read_file = _sig("msb_sandbox_read_file", c_errc, P, ctypes.c_char_p, ctypes.c_char_p,
                         ctypes.c_uint64, ctypes.POINTER(Buf), E)
sandbox_list_dir = _sig("msb_sandbox_list_dir", c_errc, P, ctypes.c_char_p, ctypes.c_char_p,
                        ctypes.POINTER(EntryList), E)
sandbox_remove = _sig("msb_sandbox_remove", c_errc, P, ctypes.c_char_p, ctypes.c_char_p,
                      ctypes.c_bool, E)
sandbox_reclaim = _sig("msb_sandbox_reclaim", c_errc, P, ctypes.c_char_p, ctypes.c_char_p,
                       ctypes.c_double, E)
sandbox_bg_start = _sig("msb_sandbox_bg_start", c_errc, P, ctypes.POINTER(ExecRequest),
                        ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(BgStatus), E)
sandbox_bg_read = _sig("msb_sandbox_bg_read", c_errc, P, ctypes.c_char_p, ctypes.POINTER(BgRead),
                       ctypes.POINTER(BgOutput), E)
sandbox_bg_signal = _sig("msb_sandbox_bg_signal", c_errc, P, ctypes.c_char_p, ctypes.c_int, E)
sandbox_bg_list = _sig("msb_sandbox_bg_list", c_errc, P, ctypes.POINTER(BgList), E)
bg_output_free = _sig("msb_bg_output_free", None, ctypes.POINTER(BgOutput))
bg_list_free = _sig("msb_bg_list_free", None, ctypes.POINTER(BgList))
exec_result_free = _sig("msb_exec_result_free", None, ctypes.POINTER(ExecResult))
buf_free = _sig("msb_buf_free", None, ctypes.POINTER(Buf))
entry_list_free = _sig("msb_entry_list_free", None, ctypes.POINTER(EntryList))
disposal_failure_free = _sig("msb_disposal_failure_free", None, ctypes.POINTER(DisposalFailure))
scope_purge_free = _sig("msb_scope_purge_free", None, ctypes.POINTER(ScopePurge))
word_name = _sig("msb_word_name", ctypes.c_char_p, ctypes.c_int, ctypes.c_int)
file_system_sink_new = _sig("msb_file_system_sink_new", c_errc, ctypes.c_char_p, P,
                            ctypes.POINTER(ctypes.POINTER(OutputSink)), E)
output_sink_free = _sig("msb_output_sink_free", None, ctypes.POINTER(OutputSink))
collect_outputs = _sig("msb_collect_outputs", c_errc, P, P, ctypes.POINTER(OutputSink),
                       ctypes.POINTER(CollectOptions), ctypes.POINTER(LandedList), E)
landed_artifacts_free = _sig("msb_landed_artifacts_free", None, ctypes.POINTER(LandedList))
free = libc.free
free.restype = None
free.argtypes = [ctypes.c_void_p]
strdup = libc.strdup
strdup.restype = ctypes.c_void_p
strdup.argtypes = [ctypes.c_char_p]

# msb_axis values (sdk/include/msb/vocab.h), for word names
AXIS_ISOLATION, AXIS_EGRESS, AXIS_CAPABILITY, AXIS_OS_FAMILY, AXIS_SCOPE = 0, 1, 2, 3, 4
AXIS_DISPOSAL_CODE, AXIS_ENTRY_KIND = 6, 8
