"""msb — the Python binding of libmsb's host API (ctypes; no compiled extension).

The shape follows the seed's Python package (maf-sandbox) closely enough that a maf-sandbox
host can wrap an msb backend as one of its own; core/python/README.md says exactly what maps
and what does not. In short:

    import msb
    router = msb.load("sandbox.yaml")                 # plugins loaded, router built
    spec = router.spec("python")
    router.ensure_can_serve(spec)                     # the wiring test: the serving backend's name
    ctx = msb.CallerContext(scope=lambda: req.tenant, thread_id=lambda: req.thread)
    sandbox = router.acquire(ctx, spec)               # the callables are read NOW, never earlier
    result = sandbox.exec(["python3", "-c", "print(6*7)"], timeout=10)
    with router.scope(req.tenant, req.thread) as reclaimed:
        ...
    print(reclaimed.disposed)

Errors are raised as exceptions named as the seed names them (SandboxEgressNotEnforced,
SandboxUnclean, …), every one a subclass of msb.SandboxError; the seed's Python built-in names
(ValueError, FileNotFoundError, TimeoutError, …) are subclasses of both SandboxError and that
built-in, so `except FileNotFoundError` works as it would against maf-sandbox.
"""
import builtins
import ctypes
import dataclasses
from typing import Callable, List, Optional, Union

from . import _lib

__all__ = ["load", "Router", "Sandbox", "CallerContext", "SandboxKey", "ExecResult", "Entry",
           "DisposalFailure", "ScopePurge", "SandboxError", "errors", "BackgroundStatus",
           "BackgroundOutput"]


# ---- errors ---------------------------------------------------------------------------

class SandboxError(Exception):
    """Every failure msb reports. `name` is the seed's error name; `code` libmsb's number."""

    name = "SandboxError"
    code = -1

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def _make_errors():
    table = {}
    for code in range(1, 200):
        name = _lib.errc_name(code).decode()
        if name == "Unknown":
            break
        bases = (SandboxError,)
        builtin = getattr(builtins, name, None)
        if isinstance(builtin, type) and issubclass(builtin, BaseException):
            bases = (SandboxError, builtin)
        elif name.endswith("Timeout"):  # SandboxQueuedTimeout, SandboxProgramTimeout
            bases = (SandboxError, TimeoutError)
        table[code] = type(name, bases, {"name": name, "code": code, "__module__": "msb.errors"})
    return table


_ERRORS = _make_errors()


class _Errors:
    """msb.errors.<SeedName>: each error class, by the name the seed gives it."""

    def __init__(self, table):
        for cls in table.values():
            setattr(self, cls.__name__, cls)

    def __iter__(self):
        return iter(_ERRORS.values())


errors = _Errors(_ERRORS)
for _cls in _ERRORS.values():
    if _cls.__name__.startswith("Sandbox") or _cls.__name__.startswith("HostTool") \
            or _cls.__name__ == "NoSandboxBackend":
        globals()[_cls.__name__] = _cls
        __all__.append(_cls.__name__)


def _raise(err: _lib.Error, rc: int):
    message = err.message.decode(errors="replace") if err.message else ""
    _lib.error_clear(ctypes.byref(err))
    raise _ERRORS.get(rc, SandboxError)(message)


def _check(rc: int, err: _lib.Error):
    if rc:
        _raise(err, rc)


def _b(s: Optional[str]) -> Optional[bytes]:
    return None if s is None else s.encode()


# ---- values -----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class SandboxKey:
    """(scope, thread_id, agent_dir, call_id): the one sandbox a caller may reach."""
    scope: str
    thread_id: str
    agent_dir: str = ""
    call_id: str = ""


class CallerContext:
    """The key's parts as callables, read when a call starts (the seed's CallerContext).

    A key captured earlier, or taken from model input, is a key a model could choose: that
    would let one conversation address another's sandbox. So nothing here stores a value.
    """

    def __init__(self, scope: Callable[[], str], thread_id: Callable[[], Optional[str]],
                 agent_dir: Optional[Callable[[], str]] = None):
        self._scope, self._thread, self._agent = scope, thread_id, agent_dir

    def key(self, call_id: str = "") -> SandboxKey:
        thread = self._thread()
        if not thread:
            raise errors.ValueError("no active thread context: a sandbox is acquired from "
                                    "within a thread")
        return SandboxKey(self._scope(), thread, self._agent() if self._agent else "", call_id)


@dataclasses.dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    signal: int = 0
    stdout_truncated: bool = False
    stderr_truncated: bool = False


@dataclasses.dataclass(frozen=True)
class Entry:
    path: str
    kind: str           # "file", "directory", "symlink", "other"
    size_bytes: int     # -1 when unknown (a link, a directory)


@dataclasses.dataclass(frozen=True)
class DisposalFailure:
    code: str           # unreachable | timeout | refused | unlisted | unknown: branch on this
    detail: str         # the backend's sentence, for a log, never to be parsed


@dataclasses.dataclass
class ScopePurge:
    disposed: int = 0
    undisposed: Optional[DisposalFailure] = None


@dataclasses.dataclass(frozen=True)
class LandedArtifact:
    name: str
    media_type: Optional[str]
    display: str
    handle: Optional[str]


@dataclasses.dataclass(frozen=True)
class Artifact:
    name: str
    content: bytes
    kind: str
    media_type: Optional[str]
    call_id: Optional[str]


@dataclasses.dataclass(frozen=True)
class BackgroundStatus:
    id: str
    pid: int            # as the guest sees it
    running: bool
    exit_code: int      # once not running
    signal: int
    timed_out: bool
    ring: int           # bytes of each stream the guest keeps (the newest)
    stdout_written: int
    stderr_written: int
    started: float      # seconds since the epoch, the guest's clock
    command: str


@dataclasses.dataclass(frozen=True)
class BackgroundOutput:
    status: BackgroundStatus
    stdout: bytes
    stderr: bytes
    stdout_start: int   # the offset of stdout's first byte
    stderr_start: int
    stdout_dropped: int  # bytes asked for that the ring had dropped
    stderr_dropped: int


def _request(op, argv, timeout, working_directory, stdin, max_output):
    """An msb_exec_request, and what it points at (kept alive as long as the request is)."""
    if isinstance(argv, (str, bytes)):
        raise errors.ValueError(f"{op} takes an argv list, never a shell string")
    args = (ctypes.c_char_p * (len(argv) + 1))(*[_b(a) for a in argv], None)
    req = _lib.ExecRequest()
    req.argv = args
    req.working_directory = _b(working_directory)
    req.timeout = float(timeout)
    req.max_output = max_output
    keep = [args]
    if stdin is not None:
        buf = ctypes.create_string_buffer(bytes(stdin), len(stdin))
        keep.append(buf)
        req.stdin_data = ctypes.cast(buf, ctypes.c_void_p)
        req.stdin_len = len(stdin)
    return req, keep


def _bg_status(st: _lib.BgStatus) -> BackgroundStatus:
    return BackgroundStatus(st.id.decode(), st.pid, bool(st.running), st.exit_code, st.signal,
                            bool(st.timed_out), st.ring, st.out_written, st.err_written,
                            st.started, st.command.decode(errors="replace"))


def _word(axis: int, value: int) -> str:
    w = _lib.word_name(axis, value)
    return w.decode() if w else str(value)


def _result(res: _lib.ExecResult) -> ExecResult:
    return ExecResult(res.exit_code, res.out.bytes(), res.err.bytes(), bool(res.timed_out),
                      res.term_signal, bool(res.out_truncated), bool(res.err_truncated))


def _entry(e: _lib.Entry) -> Entry:
    path = ctypes.string_at(e.path).decode(errors="surrogateescape") if e.path else ""
    return Entry(path, _word(_lib.AXIS_ENTRY_KIND, e.kind), e.size_bytes)


def _failure(f: _lib.DisposalFailure) -> DisposalFailure:
    return DisposalFailure(_word(_lib.AXIS_DISPOSAL_CODE, f.code),
                           f.detail.decode(errors="replace") if f.detail else "")


# ---- the sandbox --------------------------------------------------------------------------

class Sandbox:
    """One acquired sandbox: the seed's Sandbox surface, synchronous. Release it (or use it
    as a context manager) to drop the handle; the sandbox lives on until disposed."""

    def __init__(self, router: "Router", handle: int, spec: "Spec"):
        self._router, self._h, self.spec = router, handle, spec

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        self.release()

    def release(self):
        if self._h:
            _lib.sandbox_release(self._h)
            self._h = None

    def _handle(self):
        if not self._h:
            raise errors.ValueError("this sandbox handle was released")
        return self._h

    @property
    def key(self) -> SandboxKey:
        k = _lib.sandbox_key(self._handle()).contents
        return SandboxKey(*(getattr(k, f).decode() if getattr(k, f) else ""
                            for f in ("scope", "thread_id", "agent_dir", "call_id")))

    @property
    def backend(self) -> str:
        return _lib.backend_name(_lib.sandbox_backend(self._handle())).decode()

    def exec(self, argv: List[str], *, timeout: float = 0, working_directory: Optional[str] = None,
             stdin: Optional[bytes] = None, max_output: int = 0) -> ExecResult:
        req, keep = _request("exec", argv, timeout, working_directory, stdin, max_output)
        res = _lib.ExecResult()
        err = _lib.Error()
        rc = _lib.sandbox_exec(self._handle(), ctypes.byref(req), ctypes.byref(res), ctypes.byref(err))
        try:
            _check(rc, err)
            return _result(res)
        finally:
            _lib.exec_result_free(ctypes.byref(res))

    def bg_start(self, argv: List[str], *, timeout: float = 0, working_directory: Optional[str] = None,
                 stdin: Optional[bytes] = None, ring: int = 0) -> BackgroundStatus:
        """Start argv and leave it running (it outlives this process, and dies with the
        sandbox); its status, `id` the handle any process holding the sandbox can use."""
        req, keep = _request("bg_start", argv, timeout, working_directory, stdin, ring)
        st = _lib.BgStatus()
        err = _lib.Error()
        _check(_lib.sandbox_bg_start(self._handle(), ctypes.byref(req), None, ctypes.byref(st),
                                     ctypes.byref(err)), err)
        return _bg_status(st)

    def bg_read(self, id: str, *, stdout_offset: int = 0, stderr_offset: int = 0,
                max_bytes: int = 0, wait: float = 0, until_exit: bool = False) -> BackgroundOutput:
        """The output held from the offsets, waiting up to `wait` s for more (or the end)."""
        rq = _lib.BgRead(stdout_offset, stderr_offset, max_bytes, float(wait), until_exit)
        out = _lib.BgOutput()
        err = _lib.Error()
        rc = _lib.sandbox_bg_read(self._handle(), _b(id), ctypes.byref(rq), ctypes.byref(out),
                                  ctypes.byref(err))
        try:
            _check(rc, err)
            return BackgroundOutput(_bg_status(out.status), out.out.bytes(), out.err.bytes(),
                                    out.out_start, out.err_start, out.out_dropped, out.err_dropped)
        finally:
            _lib.bg_output_free(ctypes.byref(out))

    def bg_signal(self, id: str, signal: int = 15) -> None:
        err = _lib.Error()
        _check(_lib.sandbox_bg_signal(self._handle(), _b(id), int(signal), ctypes.byref(err)), err)

    def bg_list(self) -> List[BackgroundStatus]:
        out = _lib.BgList()
        err = _lib.Error()
        rc = _lib.sandbox_bg_list(self._handle(), ctypes.byref(out), ctypes.byref(err))
        try:
            _check(rc, err)
            return [_bg_status(out.items[i]) for i in range(out.n)]
        finally:
            _lib.bg_list_free(ctypes.byref(out))

    def run_code(self, code: str, *, timeout: float) -> ExecResult:
        res = _lib.ExecResult()
        err = _lib.Error()
        rc = _lib.sandbox_run_code(self._handle(), _b(code), float(timeout), ctypes.byref(res),
                                   ctypes.byref(err))
        try:
            _check(rc, err)
            return _result(res)
        finally:
            _lib.exec_result_free(ctypes.byref(res))

    def write_file(self, path: str, data: Union[bytes, str], *,
                   working_directory: Optional[str] = None) -> None:
        raw = data.encode() if isinstance(data, str) else bytes(data)
        err = _lib.Error()
        _check(_lib.sandbox_write_file(self._handle(), _b(path), raw, len(raw),
                                       _b(working_directory), ctypes.byref(err)), err)

    def read_file(self, path: str, *, max_bytes: int,
                  working_directory: Optional[str] = None) -> bytes:
        buf = _lib.Buf()
        err = _lib.Error()
        rc = _lib.sandbox_read_file(self._handle(), _b(path), _b(working_directory), max_bytes,
                                    ctypes.byref(buf), ctypes.byref(err))
        try:
            _check(rc, err)
            return buf.bytes()
        finally:
            _lib.buf_free(ctypes.byref(buf))

    def stat_file(self, path: str, *, working_directory: Optional[str] = None) -> Optional[Entry]:
        e = _lib.Entry()
        found = ctypes.c_bool(False)
        err = _lib.Error()
        rc = _lib.sandbox_stat_file(self._handle(), _b(path), _b(working_directory), ctypes.byref(e),
                                    ctypes.byref(found), ctypes.byref(err))
        try:
            _check(rc, err)
            return _entry(e) if found.value else None
        finally:
            if e.path:
                _lib.free(e.path)
                e.path = None

    def list_dir(self, path: str = ".", *, working_directory: Optional[str] = None) -> List[Entry]:
        lst = _lib.EntryList()
        err = _lib.Error()
        rc = _lib.sandbox_list_dir(self._handle(), _b(path), _b(working_directory), ctypes.byref(lst),
                                   ctypes.byref(err))
        try:
            _check(rc, err)
            return [_entry(lst.items[i]) for i in range(lst.len)]
        finally:
            _lib.entry_list_free(ctypes.byref(lst))

    def remove(self, path: str, *, recursive: bool = False,
               working_directory: Optional[str] = None) -> None:
        err = _lib.Error()
        _check(_lib.sandbox_remove(self._handle(), _b(path), _b(working_directory), recursive,
                                   ctypes.byref(err)), err)

    def reclaim(self, directory: str, *, working_directory: str, timeout: float) -> None:
        err = _lib.Error()
        _check(_lib.sandbox_reclaim(self._handle(), _b(directory), _b(working_directory),
                                    float(timeout), ctypes.byref(err)), err)

    def collect_outputs(self, sink: Union[str, Callable[[Artifact], str], None] = None, *,
                        call_id: Optional[str] = None) -> List[LandedArtifact]:
        """The spec's declared outputs, in the seed's phase order. `sink` is a directory (the
        confined file-system sink, existing destinations refused), or a callable taking an
        Artifact and returning the line the model may be shown, or None when nothing lands."""
        err = _lib.Error()
        sink_p = ctypes.POINTER(_lib.OutputSink)()
        owned = False
        raised = []
        if isinstance(sink, str):
            _check(_lib.file_system_sink_new(_b(sink), None, ctypes.byref(sink_p),
                                             ctypes.byref(err)), err)
            owned = True
        elif sink is not None:
            def deliver(_ctx, a, landed, e):
                art = a.contents
                try:
                    display = sink(Artifact(art.name.decode(), ctypes.string_at(art.content, art.len),
                                            art.kind.decode() if art.kind else "",
                                            art.media_type.decode() if art.media_type else None,
                                            art.call_id.decode() if art.call_id else None))
                except BaseException as exc:  # a sink's refusal ends the collection
                    raised.append(exc)
                    return 1  # a refusal; the Python exception itself is raised below
                landed.contents.name = _lib.strdup(art.name)
                landed.contents.display = _lib.strdup(_b(str(display)))
                if art.media_type:
                    landed.contents.media_type = _lib.strdup(art.media_type)
                return 0
            cb = _lib.DELIVER(deliver)
            holder = _lib.OutputSink(ctypes.sizeof(_lib.OutputSink), None, False, 0, cb, None)
            sink_p = ctypes.pointer(holder)
        opts = _lib.CollectOptions(ctypes.sizeof(_lib.CollectOptions), None, 0, _b(call_id), None, None)
        landed = _lib.LandedList()
        rc = _lib.collect_outputs(self._handle(), self.spec._h, sink_p, ctypes.byref(opts),
                                  ctypes.byref(landed), ctypes.byref(err))
        try:
            if raised:
                _lib.error_clear(ctypes.byref(err))
                raise raised[0]
            _check(rc, err)
            out = []
            for i in range(landed.len):
                l = landed.items[i]
                s = lambda p: ctypes.string_at(p).decode() if p else None
                out.append(LandedArtifact(s(l.name), s(l.media_type), s(l.display), s(l.handle)))
            return out
        finally:
            _lib.landed_artifacts_free(ctypes.byref(landed))
            if owned:
                _lib.output_sink_free(sink_p)


# ---- the router -----------------------------------------------------------------------------

class Spec:
    """A workload spec from sandbox.yaml (owned by the router's configuration)."""

    def __init__(self, router: "Router", handle: int, kind: str):
        self._router, self._h, self.kind = router, handle, kind

    def __repr__(self):
        return f"Spec({self.kind!r})"


class Router:
    """sandbox.yaml loaded, its plugins opened and the router built (the seed's
    SandboxRouter, with every option read from the file). Close it, or use it as a context
    manager; sandboxes outlive it, as they outlive the msb command."""

    def __init__(self, path: str):
        self._cfg = ctypes.c_void_p()
        self._r = ctypes.c_void_p()
        err = _lib.Error()
        _check(_lib.config_load(_b(path), None, ctypes.byref(self._cfg), ctypes.byref(err)), err)
        rc = _lib.config_router(self._cfg, ctypes.byref(self._r), ctypes.byref(err))
        if rc:
            _lib.config_free(self._cfg)
            self._cfg = None
            _raise(err, rc)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def close(self):
        if getattr(self, "_r", None):
            _lib.router_free(self._r)
            self._r = None
        if getattr(self, "_cfg", None):
            _lib.config_free(self._cfg)
            self._cfg = None

    @property
    def kinds(self) -> List[str]:
        out = []
        for i in range(_lib.config_spec_count(self._cfg)):
            kind_p = ctypes.cast(_lib.config_spec_at(self._cfg, i), ctypes.POINTER(ctypes.c_char_p))
            out.append(kind_p[0].decode())  # msb_spec's first field is its kind
        return out

    def spec(self, kind: str) -> Spec:
        h = ctypes.c_void_p()
        err = _lib.Error()
        _check(_lib.config_spec_find(self._cfg, _b(kind), ctypes.byref(h), ctypes.byref(err)), err)
        return Spec(self, h.value, kind)

    def ensure_can_serve(self, spec: Spec) -> str:
        """The whole of a wiring test: the name of the backend that serves `spec`, or the
        refusal, with the seed's name."""
        b = ctypes.c_void_p()
        err = _lib.Error()
        _check(_lib.router_ensure_can_serve(self._r, spec._h, ctypes.byref(b), ctypes.byref(err)), err)
        return _lib.backend_name(b).decode()

    def acquire(self, who: Union[CallerContext, SandboxKey], spec: Spec,
                *, call_id: str = "") -> Sandbox:
        """Get or create the sandbox of `who` for `spec`. A CallerContext is read now."""
        key = who.key(call_id) if isinstance(who, CallerContext) else who
        k = _lib.Key(_b(key.scope), _b(key.thread_id), _b(key.agent_dir), _b(key.call_id))
        h = ctypes.c_void_p()
        err = _lib.Error()
        _check(_lib.router_acquire(self._r, ctypes.byref(k), spec._h, ctypes.byref(h),
                                   ctypes.byref(err)), err)
        return Sandbox(self, h.value, spec)

    def dispose(self, key: SandboxKey) -> Optional[DisposalFailure]:
        k = _lib.Key(_b(key.scope), _b(key.thread_id), _b(key.agent_dir), _b(key.call_id))
        f = _lib.DisposalFailure()
        ok = _lib.router_dispose(self._r, ctypes.byref(k), ctypes.byref(f))
        try:
            return None if ok else _failure(f)
        finally:
            _lib.disposal_failure_free(ctypes.byref(f))

    def dispose_scope(self, scope: str, thread_id: str) -> ScopePurge:
        p = _lib.ScopePurge()
        _lib.router_dispose_scope(self._r, _b(scope), _b(thread_id), ctypes.byref(p))
        try:
            return ScopePurge(p.disposed, _failure(p.undisposed) if p.has_undisposed else None)
        finally:
            _lib.scope_purge_free(ctypes.byref(p))

    def scope(self, scope: str, thread_id: str) -> "_ScopeGuard":
        """Dispose the conversation's sandboxes however the block ends (the seed's
        router.scope); the record's counts arrive after the block."""
        return _ScopeGuard(self, scope, thread_id)


class _ScopeGuard:
    def __init__(self, router, scope, thread):
        self._router, self._scope, self._thread = router, scope, thread
        self.record = ScopePurge()

    def __enter__(self) -> ScopePurge:
        return self.record

    def __exit__(self, *exc):
        purge = self._router.dispose_scope(self._scope, self._thread)
        self.record.disposed, self.record.undisposed = purge.disposed, purge.undisposed
        return False  # never masks the block's own exception


def load(path: str) -> Router:
    return Router(path)
