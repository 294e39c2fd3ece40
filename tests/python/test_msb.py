"""test_msb.py — the Python binding (core/python/msb) against the inprocess fake and the real
process backend: a sandbox.yaml loaded, a spec routed, acquire with a CallerContext read at
call time, exec, run_code, the file surface, collect, dispose and the scope guard, and
refusals raised as the seed names them. Run by tests/python/python_binding.sh."""
import os
import shutil
import tempfile
import unittest

import msb

BUILD = os.environ["MSB_TOP_BUILDDIR"]
INPROCESS = f"{BUILD}/plugins/inprocess/.libs/inprocess.so"
PROCESS = f"{BUILD}/plugins/process/.libs/process.so"
AGENT = f"{BUILD}/sdk/agent/msb-agent"


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


class Request:
    """The host's request context: what the CallerContext's callables read."""

    def __init__(self, tenant, thread):
        self.tenant, self.thread = tenant, thread


class InProcess(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="msb-py-")
        self.cfg = write(f"{self.dir}/sandbox.yaml", f"""version: 1
router:
  min_isolation: none
backends:
  - plugin: {INPROCESS}
    config:
      capabilities: [exec, files_in, files_out, files_list, files_delete]
specs:
  shell:
    image: host
    work_dir: /msb/work
  open:
    egress: unrestricted
""")
        self.router = msb.load(self.cfg)

    def tearDown(self):
        self.router.close()
        shutil.rmtree(self.dir)

    def test_routes_and_names_the_backend(self):
        self.assertEqual(self.router.ensure_can_serve(self.router.spec("shell")), "inprocess")
        self.assertEqual(sorted(self.router.kinds), ["open", "shell"])

    def test_a_refusal_carries_the_seed_name(self):
        with self.assertRaises(msb.SandboxEgressNotEnforced) as cm:
            self.router.ensure_can_serve(self.router.spec("open"))
        self.assertIsInstance(cm.exception, msb.SandboxError)
        self.assertEqual(cm.exception.name, "SandboxEgressNotEnforced")
        self.assertIn("unrestricted", str(cm.exception))
        with self.assertRaises(ValueError) as cm:  # a built-in name is that built-in too
            self.router.spec("no-such-kind")
        self.assertIsInstance(cm.exception, msb.SandboxError)

    def test_the_caller_context_is_read_at_call_time(self):
        req = Request("tenant-a", "t1")
        ctx = msb.CallerContext(scope=lambda: req.tenant, thread_id=lambda: req.thread)
        spec = self.router.spec("shell")
        with self.router.acquire(ctx, spec) as a:
            a.write_file("who.txt", b"a")
            self.assertEqual(a.key.scope, "tenant-a")
        req.tenant, req.thread = "tenant-b", "t9"  # the same context, another request
        with self.router.acquire(ctx, spec) as b:
            self.assertEqual((b.key.scope, b.key.thread_id), ("tenant-b", "t9"))
            with self.assertRaises(FileNotFoundError):
                b.read_file("who.txt", max_bytes=10)
        req.thread = None
        with self.assertRaises(ValueError):
            self.router.acquire(ctx, spec)

    def test_files_and_the_scope_guard(self):
        ctx = msb.CallerContext(scope=lambda: "s", thread_id=lambda: "t")
        with self.router.scope("s", "t") as reclaimed:
            sb = self.router.acquire(ctx, self.router.spec("shell"))
            sb.write_file("d/a.txt", "hello")
            self.assertEqual(sb.read_file("d/a.txt", max_bytes=100), b"hello")
            self.assertEqual([e.path for e in sb.list_dir("d")], ["d/a.txt"])
            st = sb.stat_file("d/a.txt")
            self.assertEqual((st.kind, st.size_bytes), ("file", 5))
            self.assertIsNone(sb.stat_file("nothing"))
            with self.assertRaises(msb.SandboxTransferCapExceeded):
                sb.read_file("d/a.txt", max_bytes=2)
            with self.assertRaises(ValueError):
                sb.write_file("../escape", b"x")
            sb.remove("d", recursive=True)
            self.assertIsNone(sb.stat_file("d/a.txt"))
            sb.release()
            self.assertEqual(reclaimed.disposed, 0)  # counts arrive after the block
        self.assertEqual(reclaimed.disposed, 1)
        self.assertIsNone(reclaimed.undisposed)

    def test_the_scope_guard_never_masks_the_blocks_error(self):
        with self.assertRaises(KeyError):
            with self.router.scope("s", "t"):
                raise KeyError("the application's own")

    def test_exec_takes_an_argv_never_a_string(self):
        ctx = msb.CallerContext(scope=lambda: "s", thread_id=lambda: "t")
        with self.router.acquire(ctx, self.router.spec("shell")) as sb:
            with self.assertRaises(ValueError):
                sb.exec("echo hi")


@unittest.skipUnless(os.geteuid() == 0, "the process backend's sandboxes need root here")
class Process(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="msb-py-")
        self.cfg = write(f"{self.dir}/sandbox.yaml", f"""version: 1
router:
  min_isolation: os_process
backends:
  - plugin: {PROCESS}
    config:
      state_dir: {self.dir}/state
      agent: {AGENT}
specs:
  shell:
    image: host
    work_dir: /msb/work
    requires: [exec, files_in, files_out]
    declared_outputs:
      - {{path: out/report.txt, media_type: text/plain}}
""")
        self.router = msb.load(self.cfg)
        self.ctx = msb.CallerContext(scope=lambda: "py", thread_id=lambda: "t1")

    def tearDown(self):
        self.router.dispose_scope("py", "t1")
        self.router.close()
        left = [n for n in os.listdir(f"{self.dir}/state") if n.startswith("sk-")] \
            if os.path.isdir(f"{self.dir}/state") else []
        shutil.rmtree(self.dir)
        self.assertEqual(left, [], "a sandbox was left behind")

    def test_exec_run_code_and_collect(self):
        spec = self.router.spec("shell")
        self.assertEqual(self.router.ensure_can_serve(spec), "process")
        with self.router.acquire(self.ctx, spec) as sb:
            self.assertEqual(sb.backend, "process")
            r = sb.exec(["sh", "-c", "echo out; echo err >&2; exit 7"], timeout=30)
            self.assertEqual((r.exit_code, r.stdout, r.stderr), (7, b"out\n", b"err\n"))
            r = sb.exec(["cat"], stdin=b"\xff\x00fed", timeout=30)
            self.assertEqual(r.stdout, b"\xff\x00fed")  # bytes stay bytes
            r = sb.exec(["sleep", "30"], timeout=0.5)
            self.assertTrue(r.timed_out)
            r = sb.run_code("echo $((6*7))", timeout=30)
            self.assertEqual(r.stdout.strip(), b"42")
            sb.exec(["sh", "-c", "mkdir -p out && echo done > out/report.txt"], timeout=30)
            os.makedirs(f"{self.dir}/landing")
            landed = sb.collect_outputs(f"{self.dir}/landing")
            self.assertEqual([a.name for a in landed], ["out/report.txt"])
            with open(f"{self.dir}/landing/out/report.txt") as f:
                self.assertEqual(f.read(), "done\n")
            seen = []
            landed = sb.collect_outputs(lambda a: seen.append(a) or f"{a.name}: {len(a.content)} bytes")
            self.assertEqual(seen[0].content, b"done\n")
            self.assertEqual(landed[0].display, "out/report.txt: 5 bytes")
            # a sink's own refusal ends the collection as that exception
            with self.assertRaises(PermissionError):
                sb.collect_outputs(lambda a: (_ for _ in ()).throw(PermissionError("no")))
        self.assertIsNone(self.router.dispose(msb.SandboxKey("py", "t1")))

    def test_sandboxes_outlive_the_router(self):
        with self.router.acquire(self.ctx, self.router.spec("shell")) as sb:
            sb.write_file("kept.txt", b"kept")
        self.router.close()
        self.router = msb.load(self.cfg)
        with self.router.acquire(self.ctx, self.router.spec("shell")) as sb:
            self.assertEqual(sb.read_file("kept.txt", max_bytes=10), b"kept")

    def test_background_commands_outlive_the_router(self):
        with self.router.acquire(self.ctx, self.router.spec("shell")) as sb:
            st = sb.bg_start(["sh", "-c", "echo up; trap 'exit 4' TERM; while :; do sleep 0.1; done"])
            self.assertTrue(st.running)
        self.router.close()
        self.router = msb.load(self.cfg)
        with self.router.acquire(self.ctx, self.router.spec("shell")) as sb:
            out = sb.bg_read(st.id, wait=10)
            self.assertEqual((out.stdout, out.stdout_start, out.stdout_dropped), (b"up\n", 0, 0))
            self.assertIn(st.id, [c.id for c in sb.bg_list() if c.running])
            sb.bg_signal(st.id, 15)
            end = sb.bg_read(st.id, stdout_offset=3, wait=10, until_exit=True)
            self.assertEqual((end.status.running, end.status.exit_code), (False, 4))
            with self.assertRaises(ValueError):
                sb.bg_signal(st.id)
            with self.assertRaises(FileNotFoundError):
                sb.bg_read("0123abcd")


if __name__ == "__main__":
    unittest.main()
