// client.mjs — the official MCP TypeScript SDK's client driving `msb mcp` over stdio, as an
// agent client would: initialize (version negotiation), list tools, call each one, a refused
// call, an argument trying to name the sandbox key, an over-cap output, a timeout, and bytes
// that are not UTF-8. Usage: node client.mjs MSB CONFIG KIND SCOPE. Exits non-zero naming
// the first expectation that failed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";

const [msb, config, kind, scope] = process.argv.slice(2);
let failed = 0, passed = 0;
function check(ok, what, detail) {
  if (ok) { passed++; console.log(`ok - ${what}`); }
  else { failed++; console.log(`not ok - ${what}${detail ? `: ${JSON.stringify(detail).slice(0, 600)}` : ""}`); }
}

const transport = new StdioClientTransport({
  command: msb,
  args: ["-c", config, "mcp", "--kind", kind, "--max-timeout", "120"],
  // the key comes from the environment the client launches the server with
  env: { ...process.env, MSB_MCP_SCOPE: scope, MSB_MCP_THREAD: "t1" },
  stderr: "inherit",
});
const client = new Client({ name: "msb-test-client", version: "1.0.0" });
await client.connect(transport);
check(client.getServerVersion()?.name === "msb", "server names itself");
check(transport._process !== undefined, "stdio transport started the server");

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
check(names.includes("exec") && names.includes("write_file") && names.includes("read_file") &&
  names.includes("exec_background") && names.includes("bg_output"),
  "tools/list has the declared surface", names);
for (const t of tools) {
  check(t.inputSchema.additionalProperties === false, `${t.name}'s schema is closed`);
  check(!("scope" in (t.inputSchema.properties ?? {})) && !("thread" in (t.inputSchema.properties ?? {})),
    `${t.name}'s schema has no place for a key`);
}

const call = (name, args, opts) => client.callTool({ name, arguments: args }, undefined, opts);

let r = await call("exec", { argv: ["sh", "-c", "echo hello; echo oops >&2; exit 3"] });
check(!r.isError && r.structuredContent.exit_code === 3, "exec returns the exit code", r);
check(r.structuredContent.stdout === "hello\n" && r.structuredContent.stderr === "oops\n", "exec separates streams", r);

// progress: a client that names a progress token gets the output as it is produced
{
  const seen = [];
  const t0 = Date.now();
  r = await call("exec", { argv: ["sh", "-c", "echo one; sleep 1; echo two"] },
    { onprogress: (p) => seen.push({ at: Date.now() - t0, ...p }) });
  const done = Date.now() - t0;
  check(!r.isError && r.structuredContent.stdout === "one\ntwo\n", "a streamed exec's result holds the whole output", r);
  const first = seen.find((p) => /one/.test(p.message ?? ""));
  check(first !== undefined && done - first.at >= 500, "progress carries output before the command ends",
    { seen, done });
  check(seen.every((p, i) => i === 0 || p.progress > seen[i - 1].progress), "progress only grows", seen);
}

r = await call("exec", { argv: ["true"], scope: "someone-else" });
check(r.isError && r.structuredContent.error === "ValueError" && /key is the operator's/.test(r.content[0].text),
  "an argument naming the scope is refused by schema", r);
r = await call("exec", { argv: ["true"], thread: "t2" });
check(r.isError && /thread/.test(r.content[0].text), "an argument naming the thread is refused", r);

r = await call("exec", { argv: ["sh", "-c", "head -c 300000 /dev/zero | tr '\\0' a"] });
check(!r.isError && r.structuredContent.stdout_truncated === true, "an over-cap output is cut and says so", {
  truncated: r.structuredContent.stdout_truncated, len: r.structuredContent.stdout?.length });

r = await call("exec", { argv: ["sleep", "30"], timeout: 0.5 });
check(r.isError && r.structuredContent.timed_out === true, "a timeout is a tool error with timed_out", r);

r = await call("exec", { argv: ["printf", "\\377\\376ok"] });
check(r.structuredContent.stdout_base64 === Buffer.from([0xff, 0xfe, 0x6f, 0x6b]).toString("base64"),
  "bytes that are not UTF-8 come back losslessly as base64", r);

r = await call("write_file", { path: "notes/a.txt", content: "written\n" });
check(!r.isError && r.structuredContent.bytes === 8, "write_file", r);
r = await call("write_file", { path: "bin.dat", content_base64: Buffer.from([0, 1, 2, 255]).toString("base64") });
check(!r.isError && r.structuredContent.bytes === 4, "write_file of bytes", r);
r = await call("read_file", { path: "notes/a.txt" });
check(!r.isError && r.structuredContent.content === "written\n", "read_file", r);
r = await call("read_file", { path: "bin.dat" });
check(r.structuredContent.content_base64 === "AAEC/w==", "read_file of bytes is lossless", r);
r = await call("read_file", { path: "notes/a.txt", max_bytes: 3 });
check(r.isError && r.structuredContent.error === "SandboxTransferCapExceeded", "read_file over max_bytes is refused, never cut", r);
r = await call("read_file", { path: "../../etc/passwd" });
check(r.isError && !/root:/.test(JSON.stringify(r)), "read_file cannot leave the working directory", r);
r = await call("read_file", { path: "nothing-here" });
check(r.isError && r.structuredContent.error === "FileNotFoundError", "a refused call carries the seed's error name", r);
if (names.includes("list_dir")) {
  r = await call("list_dir", { path: "notes" });
  check(!r.isError && r.structuredContent.entries.some((e) => e.path.endsWith("a.txt")), "list_dir", r);
}
r = await call("stat", { path: "notes/a.txt" });
check(!r.isError && r.structuredContent.exists && r.structuredContent.size === 8, "stat", r);
if (names.includes("remove")) {
  r = await call("remove", { path: "notes", recursive: true });
  check(!r.isError, "remove", r);
  r = await call("stat", { path: "notes/a.txt" });
  check(!r.isError && r.structuredContent.exists === false, "removed", r);
}
if (names.includes("run_code")) {
  r = await call("run_code", { code: "echo from run_code" });
  check(!r.isError && /from run_code/.test(r.structuredContent.stdout), "run_code", r);
}
if (names.includes("collect")) {
  await call("exec", { argv: ["sh", "-c", "echo report > out.txt"] });
  r = await call("collect", {});
  const res = r.content.find((c) => c.type === "resource");
  check(!r.isError && res && res.resource.text === "report\n", "collect returns the declared output", r);
}
if (names.includes("exec_background")) {
  // A background program: started, read as it runs, listed, signalled, its end read.
  r = await call("exec_background", { argv: ["sh", "-c", "echo up; trap 'echo bye; exit 5' TERM; while :; do sleep 0.1; done"] });
  const id = r.structuredContent?.id;
  check(!r.isError && /^[0-9a-z]+$/.test(id ?? "") && r.structuredContent.running === true, "exec_background returns a running program's id", r);
  r = await call("bg_output", { id, wait: 10 });
  check(!r.isError && r.structuredContent.stdout === "up\n" && r.structuredContent.next_stdout_offset === 3,
    "bg_output waits for its output", r);
  r = await call("bg_list", {});
  check(!r.isError && r.structuredContent.programs.some((p) => p.id === id && p.running), "bg_list lists it running", r);
  r = await call("bg_signal", { id, signal: "TERM" });
  check(!r.isError, "bg_signal", r);
  r = await call("bg_output", { id, stdout_offset: 3, wait: 10, until_exit: true });
  check(!r.isError && r.structuredContent.status.running === false && r.structuredContent.status.exit_code === 5 &&
    r.structuredContent.stdout === "bye\n", "bg_output until_exit: its end and its last output", r);
  r = await call("bg_signal", { id });
  check(r.isError && r.structuredContent.error === "ValueError", "a signal to an ended program is refused", r);
  r = await call("bg_output", { id: "../x" });
  check(r.isError, "an id of the wrong shape is refused", r);
}
let unknown;
try { await call("no_such_tool", {}); } catch (e) { unknown = e; }
check(unknown && /unknown tool/.test(String(unknown.message)), "an unknown tool is a protocol error", String(unknown));
check(LATEST_PROTOCOL_VERSION.length > 0, `client speaks ${LATEST_PROTOCOL_VERSION}`);

await client.close();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
