/**
 * MT-04's buffer on a real directory: memory first, then the disk spool, the oldest dropped
 * and counted past the spool's bound, batches out in the order they came (spool first), the
 * batch in flight never evicted, and a spool left by a stopped agent sent first by the next.
 */
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { AgentSpool } from "../src/store/agent-spool.ts";

const batch = (n: number) => ({ body: new Uint8Array(100).fill(n), samples: n });

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "casebook-agent-spool-"));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function drain(spool: AgentSpool): Promise<number[]> {
  const out: number[] = [];
  for (let head = await spool.head(); head !== undefined; head = await spool.head()) {
    out.push(head.body[0]!);
    await spool.ack(head.id);
  }
  return out;
}

test("MT-04 memory, then the spool to its bound, then the oldest dropped and counted; out in arrival order", () =>
  withDir(async (dir) => {
    const drops: number[] = [];
    const spool = await AgentSpool.open({
      dir,
      maxMemoryBytes: 200,
      maxSpoolBytes: 300,
      onDropped: (samples) => drops.push(samples),
    });
    for (let n = 1; n <= 4; n++) await spool.push(batch(n));
    assert.deepEqual(spool.stats(), {
      memoryBatches: 2,
      memoryBytes: 200,
      spoolBatches: 2,
      spoolBytes: 200,
      droppedSamples: 0,
      droppedBatches: 0,
    });
    for (let n = 5; n <= 8; n++) await spool.push(batch(n));
    assert.deepEqual(drops, [1, 2, 3], "the oldest went first, each counted with its samples");
    const stats = spool.stats();
    assert.equal(stats.spoolBytes, 300, "the spool holds its bound, not more");
    assert.equal(stats.droppedSamples, 6);
    assert.equal((await readdir(dir)).length, 3, "one file per spooled batch");
    assert.deepEqual(await drain(spool), [4, 5, 6, 7, 8], "spool first, then memory: arrival order");
    assert.equal((await readdir(dir)).length, 0);
  }));

test("MT-04 the batch being sent is never the one evicted; a failed send keeps its place", () =>
  withDir(async (dir) => {
    const spool = await AgentSpool.open({
      dir,
      maxMemoryBytes: 100,
      maxSpoolBytes: 200,
      onDropped: () => {},
    });
    await spool.push(batch(1));
    await spool.push(batch(2));
    const head = await spool.head(); // batch 1 (on disk), in flight
    assert.equal(head!.body[0], 1);
    for (let n = 3; n <= 5; n++) await spool.push(batch(n));
    spool.release(head!.id); // the send failed
    assert.deepEqual(await drain(spool), [1, 4, 5], "2 and 3 were evicted around the batch in flight");
  }));

test("MT-04 a stopped agent's memory goes to the spool; the next start sends it first, in order", () =>
  withDir(async (dir) => {
    const first = await AgentSpool.open({
      dir,
      maxMemoryBytes: 1_000,
      maxSpoolBytes: 1_000,
      onDropped: () => {},
    });
    for (let n = 1; n <= 3; n++) await first.push(batch(n));
    await first.persist();
    const second = await AgentSpool.open({
      dir,
      maxMemoryBytes: 1_000,
      maxSpoolBytes: 1_000,
      onDropped: () => {},
    });
    await second.push(batch(4));
    assert.deepEqual(await drain(second), [1, 2, 3, 4]);
  }));
