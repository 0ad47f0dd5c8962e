/**
 * The room's admission credit across a late tick (`carryMs`, waiting-room.ts): unset, a late
 * tick admits everything it earned at once (a burst above the rate, capped by maxActive); set,
 * it keeps at most carryMs of the rate and loses the rest — the room admits less under a lag,
 * never more. Both engines: the domain room on a manual clock, the Redis room script on Redis's.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import { seededRandom } from "@casebook/kit/random";
import { requireRedis, uniqueName } from "@casebook/lab/test-engines";
import { creditCap, WaitingRoom, type WaitingRoomConfig } from "../src/domain/waiting-room.ts";
import { RedisRooms, roomIncludesDir, roomKeys, roomScriptsDir } from "../src/store/redis-rooms.ts";

const BASE: WaitingRoomConfig = {
  admitPerS: 100,
  maxActive: 1_000,
  graceMs: 60_000,
  sessionMs: 60_000,
  maxEntrants: 10_000,
};

test("FS-13 a late tick: unset carry admits the whole backlog (up to maxActive), carryMs 100 at most 10 at 100/s", () => {
  assert.equal(creditCap(BASE), 1_000);
  assert.equal(creditCap({ ...BASE, carryMs: 100 }), 10);
  assert.equal(creditCap({ ...BASE, carryMs: 1 }), 1, "never below one admission");
  assert.equal(creditCap({ ...BASE, maxActive: 5, carryMs: 1_000 }), 5, "never above maxActive");
  for (const [config, expected] of [
    [BASE, 100],
    [{ ...BASE, carryMs: 100 }, 10],
  ] as const) {
    const room = new WaitingRoom(config, seededRandom("carry"));
    room.open(0);
    for (let i = 0; i < 500; i++) room.join(`u${i}`, 0);
    assert.equal(room.tick(0), 0);
    assert.equal(room.tick(1_000), expected, "one tick, a second late");
    assert.equal(room.tick(1_100), 10, "then the rate again: 10 per 100 ms");
  }
});

test("FS-13 the Redis room keeps the same bounded carry (room-tick-8.lua)", async (t) => {
  const url = await requireRedis(t);
  if (!url) return;
  const registry = await ScriptRegistry.fromDir(roomScriptsDir, { includesDir: roomIncludesDir });
  const redis = await connectRedis({ url, keyPrefix: `${uniqueName("fs:carry")}:`, commandTimeoutMs: 5_000 });
  const ids: string[] = [];
  t.after(async () => {
    for (const id of ids) await redis.del(...roomKeys(id));
    await closeRedis(redis);
  });
  const late = async (config: WaitingRoomConfig) => {
    const rooms = new RedisRooms(new RedisScriptRunner(redis, registry), config);
    const sale = { saleId: `carry-${ids.length}`, opensAtMs: 0 };
    ids.push(sale.saleId);
    for (let i = 0; i < 500; i++) await rooms.join(sale, `u${i}`, { binding: "b", draw: 0 });
    await rooms.tick(sale);
    await new Promise((resolve) => setTimeout(resolve, 500));
    return rooms.tick(sale);
  };
  assert.ok((await late(BASE)) >= 50, "unset: the backlog of ≥ 500 ms at 100/s at once");
  assert.equal(await late({ ...BASE, carryMs: 100 }), 10, "carryMs 100: at most 10");
});
