"""mcp_bounds.py — `msb mcp` against hostile framing, without a client library: a line over
the 64 MiB bound (refused, skipped, memory bounded), bytes that are not JSON, a batch, an id
that is neither string nor integer, a request before initialize, an unknown method, and a
tools/call naming a key or an unknown tool. After each, the server still answers.
Usage: mcp_bounds.py MSB CONFIG KIND."""
import json
import resource
import subprocess
import sys

msb, cfg, kind = sys.argv[1:4]
init = {"jsonrpc": "2.0", "id": "i", "method": "initialize",
        "params": {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}}
lines = [
    json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),   # before initialize
    '{"x": "' + "a" * (17 << 20) + '"}',                                 # over the bound
    json.dumps(init),
    "\xff\xfe not json",
    json.dumps([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]),
    json.dumps({"jsonrpc": "2.0", "id": {"nested": 1}, "method": "ping"}),
    json.dumps({"jsonrpc": "2.0", "id": 3, "method": "resources/list"}),
    json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                "params": {"name": "exec", "arguments": {"argv": ["true"], "scope": "other"}}}),
    json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "nope"}}),
    json.dumps({"jsonrpc": "2.0", "id": 6, "method": "ping"}),
]
data = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
p = subprocess.run([msb, "-c", cfg, "mcp", "--kind", kind, "--scope", "bounds", "--thread", "t1"],
                   input=data, capture_output=True, timeout=120)
out = [json.loads(l) for l in p.stdout.decode().splitlines()]
fails = []


def expect(cond, what):
    print(("ok - " if cond else "not ok - ") + what)
    if not cond:
        fails.append(what)


expect(p.returncode == 0, f"the server ended cleanly at end of input (exit {p.returncode})")
expect(len(out) == len(lines), f"one answer per message ({len(out)} for {len(lines)})")
by_id = {json.dumps(m.get("id")): m for m in out}
expect(out[0]["error"]["code"] == -32600 and "initialize" in out[0]["error"]["message"], "a request before initialize is refused")
expect(out[1]["error"]["code"] == -32600 and "longer" in out[1]["error"]["message"], "an over-long line is refused")
expect(out[2]["result"]["protocolVersion"] == "2025-11-25", "an unknown revision is answered with the newest")
expect(out[3]["error"]["code"] == -32700, "bytes that are not JSON are a parse error")
expect(out[4]["error"]["code"] == -32600, "a batch is refused")
expect(out[5]["error"]["code"] == -32600, "an object id is refused")
expect(out[6]["error"]["code"] == -32601, "an unknown method is not found")
expect(out[7]["result"]["isError"] and "operator" in out[7]["result"]["content"][0]["text"], "a key argument is refused")
expect(out[8]["error"]["code"] == -32602, "an unknown tool is invalid params")
expect(out[9].get("result") == {}, "the server still answers after all of it")
rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
expect(rss_mib < 100, f"memory stayed bounded while refusing a 17 MiB line ({rss_mib:.0f} MiB)")
subprocess.run([msb, "-c", cfg, "dispose", "--scope", "bounds", "--thread", "t1"], capture_output=True)
print(f"{len(lines) + 2 - len(fails)} passed, {len(fails)} failed")
sys.exit(1 if fails else 0)
