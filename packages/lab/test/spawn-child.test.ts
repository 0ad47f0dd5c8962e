import assert from "node:assert/strict";
import { test } from "node:test";
import { childNodeFlags } from "../src/child-node-flags.ts";
import { labErrors } from "../src/lab-errors.ts";
import { spawnChild } from "../src/spawn-child.ts";
import { isAlive } from "./process-helpers.ts";

const echo = `
import { createInterface } from "node:readline";
console.log("booting");
console.log("ready " + process.argv.slice(1).join(",") + " " + process.env.SPAWN_CHILD_TEST);
createInterface({ input: process.stdin }).on("line", (line) => {
  if (line === "stop") { console.log("stopped"); process.exit(0); }
  console.log("echo " + line);
});
`;

test("spawnChild waits for the ready line, passes args and env, answers lines, and stops on request", async (t) => {
  const seen: string[] = [];
  const child = await spawnChild(
    { code: echo },
    {
      args: ["a", "b"],
      env: { ...process.env, SPAWN_CHILD_TEST: "yes" },
      ready: /^ready /,
      onLine: (line) => seen.push(line),
      test: t,
    },
  );
  assert.equal(child.readyLine, "ready a,b yes");
  child.send("one");
  assert.equal(await child.nextLine(), "echo one");
  await child.stop({ line: "stop" });
  assert.deepEqual((await child.exited).code, 0);
  assert.deepEqual(seen, ["booting", "ready a,b yes", "echo one", "stopped"]);
});

test("a child that dies before its ready line fails with its stderr in the message", async () => {
  await assert.rejects(
    spawnChild(
      { code: `console.error("cannot open the database: ECONNREFUSED"); process.exit(3);` },
      {
        echoStderr: false,
      },
    ),
    (error: unknown) => {
      assert.ok(labErrors.is(error, "LAB_CHILD_FAILED"));
      assert.match(error.message, /exited \(code 3/);
      assert.match(error.message, /cannot open the database: ECONNREFUSED/);
      return true;
    },
  );
});

test("a silent child fails after readyTimeoutMs and is killed", async () => {
  let pid = 0;
  await assert.rejects(
    spawnChild(
      { code: `console.log(process.pid); setInterval(() => {}, 1000);` },
      { ready: "ready", readyTimeoutMs: 2_000, onLine: (line) => (pid = Number(line)) },
    ),
    (error: unknown) =>
      labErrors.is(error, "LAB_CHILD_FAILED") && /no ready line within 2000 ms/.test(error.message),
  );
  assert.ok(pid > 0);
  assert.equal(isAlive(pid), false, "the silent child was killed");
});

test("the child is killed with the test that started it", async (t) => {
  let pid = 0;
  await t.test("inner", async (inner) => {
    const child = await spawnChild(
      { code: `console.log("up"); setInterval(() => {}, 1000);` },
      { test: inner },
    );
    pid = child.pid;
    assert.ok(isAlive(pid));
  });
  assert.equal(isAlive(pid), false);
});

const ipcChild = `
process.on("message", (message) => {
  if (message.kind === "add") process.send({ kind: "sum", value: message.a + message.b });
  if (message === "bye") process.disconnect();
});
process.send({ kind: "noise" });
process.send({ kind: "ready", pid: process.pid });
`;

test("ipc: the ready handshake is a message; messages go both ways; skipped messages wait for their taker", async (t) => {
  const child = await spawnChild(
    { code: ipcChild },
    { ipc: true, ready: { message: (m) => (m as { kind: string }).kind === "ready" }, test: t },
  );
  assert.deepEqual(child.readyMessage, { kind: "ready", pid: child.pid });
  await child.sendMessage({ kind: "add", a: 2, b: 3 });
  assert.deepEqual(await child.nextMessage((m) => (m as { kind: string }).kind === "sum"), {
    kind: "sum",
    value: 5,
  });
  assert.deepEqual(
    await child.nextMessage(),
    { kind: "noise" },
    "the message the handshake skipped is still there",
  );
  await child.sendMessage("bye");
  assert.equal((await child.exited).code, 0, "a child that disconnects ends on its own");
  await assert.rejects(
    child.nextMessage(undefined, 1_000),
    (error: unknown) => labErrors.is(error, "LAB_CHILD_FAILED") && /exited/.test(error.message),
  );
});

test("ipc: a child that never sends its ready message fails after readyTimeoutMs and is killed", async () => {
  await assert.rejects(
    spawnChild(
      { code: "setInterval(() => {}, 1000);" },
      { ipc: true, ready: { message: () => true }, readyTimeoutMs: 1_500 },
    ),
    (error: unknown) => labErrors.is(error, "LAB_CHILD_FAILED") && /within 1500 ms/.test(error.message),
  );
});

test("queueLines: false hands every line to the listeners and keeps none", async (t) => {
  const seen: string[] = [];
  const child = await spawnChild(
    { code: `for (let i = 0; i < 1000; i++) console.log("log " + i);` },
    { ready: false, queueLines: false, onLine: (line) => seen.push(line), test: t },
  );
  await child.exited;
  assert.equal(seen.length, 1_000);
  await assert.rejects(child.nextLine(1_000), (error: unknown) => labErrors.is(error, "LAB_CHILD_FAILED"));
  await assert.rejects(
    spawnChild({ code: "" }, { queueLines: false }),
    TypeError,
    "a ready line needs the queue",
  );
});

test("a child runs with the suite's --liftoff-only when this process has it, and with none of its other flags", async (t) => {
  assert.deepEqual(childNodeFlags(["--liftoff-only", "--test", "--import", "x.ts", "--expose-gc"]), [
    "--liftoff-only",
  ]);
  assert.deepEqual(childNodeFlags(["--expose-gc"]), []);
  const child = await spawnChild(
    { code: `console.log(JSON.stringify(process.execArgv.filter((a) => a.startsWith("--liftoff"))));` },
    { ready: false, nodeArgs: ["--expose-gc"], test: t },
  );
  assert.deepEqual(
    JSON.parse(await child.nextLine()),
    childNodeFlags(),
    "what this process has of it, no more",
  );
  await child.exited;
});
