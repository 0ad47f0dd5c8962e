/**
 * The launcher behind `casebook run cache -- --nodes N --replicas R`: flags validated
 * with one message naming the bad one; a real run prints the layout, serves /readyz
 * while every node serves, each node has its /metrics, and SIGTERM stops every node.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { guardProcessTree } from "@casebook/lab/child-reaper";
import { isClusterLaunch, parseLauncherArgs } from "../src/cluster-main.ts";
import { clusterErrors } from "../src/domain/cluster-errors.ts";

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
