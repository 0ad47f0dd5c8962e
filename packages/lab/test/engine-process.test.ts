import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { type EngineLaunch, EngineProcess } from "../src/engine-process.ts";
import { descendants } from "../src/process-tree.ts";
import { eventually, isAlive } from "./process-helpers.ts";

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "casebook-engine-test-"));
});
after(() => rm(dir, { recursive: true, force: true }));

/** A stand-in engine: a real `sh` process running `script`; ready when `ready()` says so. */
function shEngine(script: string, ready: () => boolean = () => true): EngineLaunch {
  return {
    name: "sh-engine",
    command: "/bin/sh",
    args: (port) => ["-c", script, "sh-engine", String(port)],
    cwd: dir,
    tempDir: "",
    isReady: async () => ready(),
    requestStop: async (_port, child) => void child.kill("SIGTERM"),
  };
}

function stateOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
}

test("a port lost to another process is retried on a fresh port, a bounded number of times", async () => {
  const ports = new Set<string>();
  const launch = shEngine('echo "bind: Address already in use" >&2; exit 1', () => false);
  const args = launch.args;
  launch.args = (port) => {
    ports.add(String(port));
    return args(port);
  };
  await assert.rejects(
    EngineProcess.start(launch, { maxPortAttempts: 3 }),
    (error: Error & { code?: string; fields?: Record<string, unknown> }) => {
      assert.equal(error.code, "LAB_ENGINE_PORT_TAKEN");
      assert.equal(error.fields?.attempts, 3);
      return true;
    },
  );
  assert.ok(ports.size >= 2, "each attempt asks for a fresh port");
});

test("an engine that exits while starting fails with its output in the error", async () => {
  await assert.rejects(EngineProcess.start(shEngine("echo 'FATAL: bad config' >&2; exit 3", () => false)), {
    code: "LAB_ENGINE_START_FAILED",
    message: /FATAL: bad config/,
  });
  await assert.rejects(EngineProcess.start({ ...shEngine(""), command: "/nonexistent/engine" }), {
    code: "LAB_ENGINE_START_FAILED",
    message: /ENOENT/,
  });
});

test("an engine that never answers is killed after readyTimeoutMs", async () => {
  const pidFile = join(dir, "never-ready.pid");
  const launch = shEngine(`echo $$ > ${pidFile}; exec sleep 30`, () => false);
  await assert.rejects(EngineProcess.start(launch, { readyTimeoutMs: 200 }), {
    code: "LAB_ENGINE_NOT_READY",
  });
  const pid = Number(readFileSync(pidFile, "utf8"));
  await eventually(() => !isAlive(pid));
});

test("pause, resume and kill reach children that left the process group (as PostgreSQL's backends do)", async () => {
  // A child in the group, and one in a session of its own (setsid), like a postgres backend.
  const engine = await EngineProcess.start(shEngine("sleep 30 & setsid sleep 31 & wait"));
  try {
    await eventually(() => descendants(engine.pid!).length >= 2);
    const pids = [engine.pid!, ...descendants(engine.pid!)];
    engine.pause();
    await eventually(() => pids.every((pid) => stateOf(pid) === "T"));
    engine.resume();
    await eventually(() => pids.every((pid) => stateOf(pid) !== "T"));
    await engine.kill();
    assert.equal(engine.state, "exited");
    await eventually(() => pids.every((pid) => !isAlive(pid)));
    assert.throws(() => engine.resume(), { code: "LAB_ENGINE_NOT_RUNNING" });
  } finally {
    await engine.kill();
  }
});

test("shutdown asks first and kills only when the engine ignores it", async () => {
  const polite = await EngineProcess.start(shEngine("exec sleep 30"));
  await polite.shutdown();
  assert.equal(polite.state, "exited");
  const stubborn = await EngineProcess.start(shEngine("trap '' TERM; while :; do sleep 1; done"), {
    stopTimeoutMs: 200,
  });
  const pid = stubborn.pid!;
  await stubborn.shutdown();
  assert.equal(stubborn.state, "exited");
  await eventually(() => !isAlive(pid));
});
