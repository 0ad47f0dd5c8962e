/**
 * The Redis room's opening drawn in chunks (src/store/scripts/includes/room-keys.lua): each
 * script call moves at most `openChunk` entrants from the pre-queue to positions. What must
 * still hold: every entrant one distinct position 1..N, in the order of the draws (so the
 * permutation is as uniform as the draws), late joiners after the whole pre-queue in arrival
 * order, and admission during the opening serving only final positions, under the cap.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import { seededRandom } from "@casebook/kit/random";
import { requireRedis, uniqueName } from "@casebook/lab/test-engines";
import type { RoomSale } from "../src/domain/room-port.ts";
import type { WaitingRoomConfig } from "../src/domain/waiting-room.ts";
import { RedisRooms, roomIncludesDir, roomKeys, roomScriptsDir } from "../src/store/redis-rooms.ts";

const CONFIG: WaitingRoomConfig = {
  admitPerS: 1_000,
  maxActive: 40,
  graceMs: 60_000,
  sessionMs: 60_000,
  maxEntrants: 100_000,
};
/** Joins happen before this (an hour ahead); the opening is asked for with opensAtMs 0. */
const LATER_MS = 3_600_000;

async function harness(t: import("node:test").TestContext, openChunk: number) {
  const url = await requireRedis(t);
  if (!url) return undefined;
  const registry = await ScriptRegistry.fromDir(roomScriptsDir, { includesDir: roomIncludesDir });
  const redis = await connectRedis({
    url,
    keyPrefix: `${uniqueName("fs:chunks")}:`,
    commandTimeoutMs: 10_000,
  });
  const sales: string[] = [];
  t.after(async () => {
    for (let i = 0; i < sales.length; i += 100)
      await redis.del(...sales.slice(i, i + 100).flatMap((id) => roomKeys(id)));
    await closeRedis(redis);
  });
  const [s] = (await redis.time()) as [string | number, string | number];
  const nowMs = Number(s) * 1_000;
  const rooms = new RedisRooms(new RedisScriptRunner(redis, registry), CONFIG, { openChunk });
  return {
    rooms,
    redis,
    /** A sale still closed (opening in an hour) and the same sale asked for as open now. */
    sale(name: string): { closed: RoomSale; open: RoomSale } {
      const saleId = `${name}-${sales.length}`;
      sales.push(saleId);
      return { closed: { saleId, opensAtMs: nowMs + LATER_MS }, open: { saleId, opensAtMs: 0 } };
    },
    async positions(saleId: string): Promise<Map<string, number>> {
      const flat = (await redis.hgetall(roomKeys(saleId)[1]!)) as Record<string, string>;
      return new Map(Object.entries(flat).map(([k, v]) => [k, Number(v)]));
    },
  };
}

/** Status calls until the whole pre-queue is drawn; returns how many calls it took. */
async function drain(rooms: RedisRooms, sale: RoomSale, total: number): Promise<number> {
  for (let calls = 1; calls <= total + 1; calls++) {
    if ((await rooms.status(sale)).lastPosition >= total) return calls;
  }
  throw new Error("the pre-queue was not drawn within one call per entrant");
}

test("FS-13 the opening drawn in chunks: 2,000 entrants, 100 a call — each exactly one distinct position 1..N, the rank of its draw", async (t) => {
  const h = await harness(t, 100);
  if (!h) return;
  const { closed, open } = h.sale("big");
  const random = seededRandom("chunked-opening");
  const draws = new Map<string, number>();
  for (let i = 0; i < 2_000; i += 200)
    await Promise.all(
      Array.from({ length: 200 }, (_, j) => {
        const entrant = `e${i + j}`;
        const draw = random.next();
        draws.set(entrant, draw);
        return h.rooms.join(closed, entrant, { binding: "b", draw });
      }),
    );
  const first = await h.rooms.status(open);
  assert.equal(first.lastPosition, 100, "one call draws one chunk, not the whole pre-queue");
  assert.equal(first.waiting, 2_000, "the rest still waits, counted");
  const calls = await drain(h.rooms, open, 2_000);
  assert.equal(calls, 19, "2,000 in chunks of 100: the 19 calls after the first");
  const positions = await h.positions(open.saleId);
  assert.equal(positions.size, 2_000);
  assert.deepEqual(
    [...positions.values()].sort((a, b) => a - b),
    Array.from({ length: 2_000 }, (_, i) => i + 1),
    "positions 1..N, each once",
  );
  const byDraw = [...draws.entries()].sort((a, b) => a[1] - b[1]).map(([entrant]) => entrant);
  assert.deepEqual(
    byDraw.map((entrant) => positions.get(entrant)),
    Array.from({ length: 2_000 }, (_, i) => i + 1),
    "position = rank of the draw, across chunk boundaries",
  );
  assert.equal(await h.redis.llen(roomKeys(open.saleId)[2]!), 2_000, "the order list holds each once");
  assert.equal(await h.redis.exists(roomKeys(open.saleId)[3]!), 0, "the pre-queue is empty");
});

test("FS-13 the chunked opening is a uniform permutation: 5 entrants, 2 a call, 1,000 rooms — each position equally likely for each entrant (chi-square)", async (t) => {
  const h = await harness(t, 2);
  if (!h) return;
  const N = 5;
  const ROOMS = 1_000;
  const random = seededRandom("uniform-permutation");
  /** counts[entrant][position - 1] */
  const counts = Array.from({ length: N }, () => new Array<number>(N).fill(0));
  for (let r = 0; r < ROOMS; r += 50) {
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        const { closed, open } = h.sale("uniform");
        for (let e = 0; e < N; e++)
          await h.rooms.join(closed, `e${e}`, { binding: "b", draw: random.next() });
        assert.equal(await drain(h.rooms, open, N), 3, "5 in chunks of 2: three calls");
        const positions = await h.positions(open.saleId);
        assert.deepEqual(
          [...positions.values()].sort(),
          [1, 2, 3, 4, 5],
          "each entrant one distinct position",
        );
        for (let e = 0; e < N; e++) counts[e]![positions.get(`e${e}`)! - 1]!++;
      }),
    );
  }
  const expected = ROOMS / N;
  let chi2 = 0;
  for (const row of counts) for (const observed of row) chi2 += (observed - expected) ** 2 / expected;
  t.diagnostic(`chi-square ${chi2.toFixed(1)} over ${N}×${N} cells; counts ${JSON.stringify(counts)}`);
  // (N−1)² = 16 degrees of freedom (both margins fixed); 39.25 is the 0.1% critical value.
  // A seeded run: the same draws every time, so this never flakes.
  assert.ok(chi2 < 39.25, `chi-square ${chi2.toFixed(1)} ≥ 39.25: positions not uniform`);
});

test("FS-13 admission during a chunked opening: only drawn positions are served, the lowest draws first, under the cap; a late joiner goes after the whole pre-queue", async (t) => {
  const h = await harness(t, 30);
  if (!h) return;
  const { closed, open } = h.sale("admit");
  const random = seededRandom("admission-during-opening");
  const draws = new Map<string, number>();
  for (let i = 0; i < 200; i++) {
    const draw = random.next();
    draws.set(`e${i}`, draw);
    await h.rooms.join(closed, `e${i}`, { binding: "b", draw });
  }
  assert.equal(await h.rooms.tick(open), 0, "the opening tick draws the first chunk; no credit earned yet");
  const late = await h.rooms.join(open, "late", { binding: "b", draw: 0 });
  assert.equal(
    late.kind,
    "pre-queue",
    "open, but the pre-queue is not drawn yet: the late joiner waits behind it",
  );
  await new Promise((resolve) => setTimeout(resolve, 60));
  const admitted = await h.rooms.tick(open);
  const status = await h.rooms.status(open);
  assert.ok(admitted > 0, "admission started before the drawing ended");
  assert.ok(status.lastPosition < 201, "the drawing is still under way");
  assert.ok(status.servingUpTo <= status.lastPosition, "P never passes the drawn positions");
  assert.ok(status.active <= CONFIG.maxActive, "the cap holds");
  assert.equal(status.servingUpTo, admitted);
  // The admitted are exactly the lowest draws (their positions are final).
  const byDraw = [...draws.entries()].sort((a, b) => a[1] - b[1]).map(([entrant]) => entrant);
  const outcomes = await Promise.all(byDraw.map((entrant) => h.rooms.admit(open, entrant, "b")));
  const admittedEntrants = byDraw.filter((_, i) => outcomes[i]!.kind === "admitted");
  assert.deepEqual(admittedEntrants, byDraw.slice(0, admitted));
  await drain(h.rooms, open, 201);
  const positions = await h.positions(open.saleId);
  assert.equal(positions.get("late"), 201, "the late joiner after all 200 of the pre-queue");
  assert.deepEqual(
    byDraw.map((entrant) => positions.get(entrant)),
    Array.from({ length: 200 }, (_, i) => i + 1),
  );
});
