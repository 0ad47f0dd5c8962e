/**
 * The launcher behind `casebook run cache -- --nodes N --replicas R`: flags validated
 * with one message naming the bad one; CACHE_PORT is the base port; a taken RESP or bus
 * port is one line naming it before any node starts; a real run prints the layout, serves
 * /readyz while every node serves, each node has its /metrics, and SIGTERM stops every node.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { guardProcessTree } from "@casebook/lab/child-reaper";
import { isClusterLaunch, parseLauncherArgs, runClusterEntry } from "../src/cluster-main.ts";
import { clusterErrors } from "../src/errors.ts";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));

describe("cluster launcher", { timeout: 60_000 }, () => {
  test("flags: --nodes switches main.ts to the launcher; bad values are named", () => {
    assert.equal(isClusterLaunch(["--nodes", "6"]), true);
    assert.equal(isClusterLaunch([]), false);
    const args = parseLauncherArgs(["--nodes", "6", "--replicas", "1"], { CASEBOOK_DATA: "/data/cache" })!;
    assert.deepEqual(
      { nodes: args.nodes, replicas: args.replicas, port: args.port, dataDir: args.dataDir },
      { nodes: 6, replicas: 1, port: 7000, dataDir: "/data/cache/cluster" },
    );
    assert.throws(
      () => parseLauncherArgs(["--nodes", "0"], {}),
      (error) => clusterErrors.is(error, "CACHE_CLUSTER_ARGS_INVALID") && /--nodes=0/.test(error.message),
    );
    assert.equal(parseLauncherArgs(["--help"], {}), undefined);
  });

  test("CACHE_PORT is the base port unless --port is given; a bad one is named", () => {
    assert.equal(parseLauncherArgs(["--nodes", "3"], { CACHE_PORT: "7100" })!.port, 7100);
    assert.equal(parseLauncherArgs(["--nodes", "3", "--port", "7200"], { CACHE_PORT: "7100" })!.port, 7200);
    assert.equal(parseLauncherArgs(["--nodes", "3"], { CACHE_HOST: "127.0.0.2" })!.host, "127.0.0.2");
    // The launcher's settings go through a schema like every setting: a bad one is named, exit 2.
    assert.throws(
      () => parseLauncherArgs(["--nodes", "3"], { PORT: "http" }),
      (error) => clusterErrors.is(error, "CACHE_CLUSTER_ARGS_INVALID") && /PORT="http"/.test(error.message),
    );
    assert.throws(
      () => parseLauncherArgs(["--nodes", "3"], { CACHE_PORT: "seven" }),
      (error) =>
        clusterErrors.is(error, "CACHE_CLUSTER_ARGS_INVALID") && /CACHE_PORT="seven"/.test(error.message),
    );
  });

  test("a taken cluster bus port: one line naming it and --port/CACHE_PORT, exit 1, no node started", async () => {
    // A base whose RESP and bus ports are all free, then one bus port held by another listener.
    const base = await freeBase(3);
    const holder = await listenOn(base + 10_001);
    const lines: string[] = [];
    try {
      const env = { PORT: "0", LOG_LEVEL: "silent", CACHE_PORT: String(base) };
      const code = await runClusterEntry(["--nodes", "3", "--replicas", "0"], env, (text) =>
        lines.push(text),
      );
      assert.equal(code, 1);
      const text = lines.join("");
      assert.equal(text.trimEnd().split("\n").length, 1, text);
      assert.match(text, new RegExp(`127\\.0\\.0\\.1:${base + 10_001} \\(node 1 cluster bus, in use\\)`));
      assert.match(text, /--port P or CACHE_PORT=P/);
      assert.match(text, /CACHE_CLUSTER_PORT_TAKEN/);
      // Nothing was spawned: node 0's RESP port is still free.
      await (await listenOn(base)).close();
    } finally {
      await holder.close();
    }
  });

  test("main.ts --nodes with a taken RESP port exits 1 with one line on stderr, no stack trace", async () => {
    const base = await freeBase(2);
    const holder = await listenOn(base + 1);
    try {
      const child = spawn(process.execPath, [MAIN, "--nodes", "2", "--replicas", "0"], {
        env: { ...process.env, PORT: "0", LOG_LEVEL: "silent", CACHE_PORT: String(base) },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
      assert.equal(code, 1, stderr);
      assert.equal(stderr.trimEnd().split("\n").length, 1, stderr);
      assert.match(stderr, new RegExp(`:${base + 1} \\(node 1 RESP, in use\\)`));
      assert.doesNotMatch(stderr, /\n\s+at /);
    } finally {
      await holder.close();
    }
  });

  test("a 3-node cluster: layout printed, /readyz ready, a node's /metrics, SIGTERM stops everything", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cache-launcher-"));
    const child = spawn(
      process.execPath,
      [MAIN, "--nodes", "3", "--replicas", "0", "--port", "0", "--node-timeout", "1000", "--data-dir", dir],
      {
        env: { ...process.env, PORT: "0", LOG_LEVEL: "silent" },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      },
    );
    const guard = guardProcessTree(child.pid!, dir);
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      const ready = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no layout within 30 s:\n${output}`)), 30_000);
        child.stdout.on("data", () => {
          const match = /launcher: (http:\/\/\S+\/readyz)/.exec(output);
          if (match) {
            clearTimeout(timer);
            resolve(match[1]!);
          }
        });
        void exited.then((code) => reject(new Error(`launcher exited (${code}):\n${output}`)));
      });
      assert.match(output, /node 0 +127\.0\.0\.1:\d+ +\d+ +primary/);
      assert.equal((await fetch(ready)).status, 200);
      const metricsUrl = /(http:\/\/\S+\/metrics)/.exec(output)![1]!;
      const metrics = await (await fetch(metricsUrl)).text();
      assert.match(metrics, /\ncache_cluster_state_ok 1\n/);
      assert.match(metrics, /\ncache_cluster_slots_owned \d+\n/);
      child.kill("SIGTERM");
      assert.equal(await exited, 0);
    } finally {
      child.kill("SIGKILL");
      guard.release();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** A listener holding `port` on loopback; `close()` resolves once it is released. */
function listenOn(port: number): Promise<{ close(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    const server: Server = createServer();
    server.once("error", reject);
    server.listen({ host: "127.0.0.1", port, exclusive: true }, () =>
      resolve({ close: () => new Promise<void>((done) => server.close(() => done())) }),
    );
  });
}

/** A base port P with P..P+n-1 and P+10000..P+10000+n-1 all free right now (bounded tries). */
async function freeBase(n: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    const ports = Array.from({ length: n }, (_, i) => [base + i, base + 10_000 + i]).flat();
    const held: { close(): Promise<void> }[] = [];
    try {
      for (const port of ports) held.push(await listenOn(port));
      return base;
    } catch {
      // one was taken: try another base
    } finally {
      for (const server of held) await server.close();
    }
  }
  throw new Error("no free base port in 50 tries");
}
