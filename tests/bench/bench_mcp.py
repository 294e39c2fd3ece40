#!/usr/bin/env python3
"""bench_mcp.py — what reaching msb from an agent client costs, against the baselines it
replaces, in one run on the process backend:

  1. `msb exec KIND -- true` started from a shell, once per call (plugins loaded, sandbox
     acquired, process exits) against an MCP tools/call of exec true to one `msb mcp` server
     that keeps plugins loaded and the sandbox warm;
  2. the Python binding's Sandbox.exec(["true"]) against libmsb's msb_sandbox_exec called
     directly (one prepared request through ctypes: the C API's own cost plus one foreign
     call), in the same process on the same sandbox.

Usage: bench_mcp.py BUILD_DIR [ROUNDS]. Prints medians and ratios; doc/performance.md keeps them.
"""
import ctypes
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200
msb = f"{build}/core/cli/msb"
os.environ.setdefault("MSB_LIBMSB", f"{build}/core/.libs/libmsb.so")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../core/python"))
import msb as msbpy  # noqa: E402
from msb import _lib  # noqa: E402

tmp = tempfile.mkdtemp(prefix="msb-bench-mcp-")
cfg = f"{tmp}/sandbox.yaml"
with open(cfg, "w") as f:
    f.write(f"""version: 1
router:
  min_isolation: os_process
backends:
  - plugin: {build}/plugins/process/.libs/process.so
    config:
      state_dir: {tmp}/state
      agent: {build}/sdk/agent/msb-agent
specs:
  shell:
    image: host
""")
key = ["--scope", "bench", "--thread", "t1"]


def median_ms(samples):
    return statistics.median(samples) * 1000


try:
    subprocess.run([msb, "-c", cfg, "exec", "shell", *key, "--", "true"], check=True)  # warm it
    cli = []
    for _ in range(max(20, rounds // 5)):
        t = time.perf_counter()
        subprocess.run([msb, "-c", cfg, "exec", "shell", *key, "--", "true"], check=True)
        cli.append(time.perf_counter() - t)

    server = subprocess.Popen([msb, "-c", cfg, "mcp", "--kind", "shell", *key],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def rpc(i, method, params):
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        server.stdin.flush()
        return json.loads(server.stdout.readline())

    rpc(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "bench", "version": "1"}})
    call = {"name": "exec", "arguments": {"argv": ["true"]}}
    assert rpc(1, "tools/call", call)["result"]["structuredContent"]["exit_code"] == 0
    mcp = []
    for i in range(rounds):
        t = time.perf_counter()
        rpc(2 + i, "tools/call", call)
        mcp.append(time.perf_counter() - t)
    server.stdin.close()
    server.wait(timeout=30)

    router = msbpy.load(cfg)
    ctx = msbpy.CallerContext(scope=lambda: "bench", thread_id=lambda: "t1")
    sb = router.acquire(ctx, router.spec("shell"))
    binding, raw = [], []
    args = (ctypes.c_char_p * 2)(b"true", None)
    req = _lib.ExecRequest()
    req.argv = args
    for i in range(rounds * 2):
        if i % 2:
            t = time.perf_counter()
            sb.exec(["true"])
            binding.append(time.perf_counter() - t)
        else:
            res = _lib.ExecResult()
            err = _lib.Error()
            t = time.perf_counter()
            rc = _lib.sandbox_exec(sb._h, ctypes.byref(req), ctypes.byref(res), ctypes.byref(err))
            raw.append(time.perf_counter() - t)
            assert rc == 0
            _lib.exec_result_free(ctypes.byref(res))
    sb.release()
    router.dispose_scope("bench", "t1")
    router.close()

    c, m = median_ms(cli), median_ms(mcp)
    b, r = median_ms(binding), median_ms(raw)
    print(f"msb exec true from a shell (one process per call): {c:8.2f} ms  ({len(cli)} calls)")
    print(f"MCP tools/call exec true, one warm server:         {m:8.2f} ms  = {c / m:.1f}x faster")
    print(f"C API msb_sandbox_exec (through one ctypes call):  {r:8.3f} ms")
    print(f"Python binding Sandbox.exec(['true']):             {b:8.3f} ms  = {b / r:.2f}x the C API")
finally:
    subprocess.run([msb, "-c", cfg, "dispose", *key], capture_output=True)
    shutil.rmtree(tmp, ignore_errors=True)
