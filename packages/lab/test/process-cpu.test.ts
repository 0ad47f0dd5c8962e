/**
 * treeCpuSeconds reads a process tree's CPU time from /proc: a busy child's CPU shows up
 * under its parent's root, an idle tree's barely moves, and a gone root reads undefined.
 * machineBusyShare reads the whole machine's: a core kept busy shows as its share of the cores.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { test } from "node:test";
import { machineBusyShare, machineTicks, treeCpuSeconds } from "../src/process-cpu.ts";

const skip = existsSync("/proc/self/stat") ? false : "no /proc: CPU time is read from Linux's /proc";

test("a child spinning for 300 ms of CPU is counted under its parent's tree", { skip }, async () => {
  // A shell whose child burns CPU: the tree's root (sh) does nothing itself.
  const spin = "const end = process.cpuUsage().user + 300_000; while (process.cpuUsage().user < end);";
  const parent = spawn("sh", ["-c", `"${process.execPath}" -e '${spin}'; sleep 5`], { stdio: "ignore" });
  try {
    const before = treeCpuSeconds([parent.pid!]);
    assert.ok(before !== undefined && before >= 0);
    let after = before;
    for (let i = 0; i < 100 && after - before < 0.25; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      after = treeCpuSeconds([parent.pid!]) ?? after;
    }
    assert.ok(after - before >= 0.25, `counted ${after - before} CPU-s of the child's 0.3`);
  } finally {
    parent.kill("SIGKILL");
    await once(parent, "exit");
  }
  assert.equal(treeCpuSeconds([parent.pid!]), undefined, "a reaped root reads undefined");
});

test("a core kept busy for 400 ms shows in the machine's busy share; no reading, no share", { skip }, () => {
  const before = machineTicks();
  assert.ok(before !== undefined && before.busy >= 0 && before.busy <= before.total);
  const end = performance.now() + 400;
  while (performance.now() < end); // this thread: one core busy the whole window
  const share = machineBusyShare(before, machineTicks());
  const cores = availableParallelism();
  // At least this core's share (less a tick's rounding at each end), at most every core.
  assert.ok(
    share !== undefined && share >= 0.8 / cores && share <= 1,
    `busy share ${share} on ${cores} cores`,
  );
  assert.equal(machineBusyShare(undefined, before), undefined);
  assert.equal(machineBusyShare(before, before), undefined, "no tick passed");
});
