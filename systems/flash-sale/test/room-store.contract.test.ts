/**
 * The waiting room behind its port, one suite on both engines (in-process rooms, the Redis
 * room scripts): one position per user from one counter (FS-13), the randomised pre-queue,
 * the entrant's secret kept at the first join, admission under the cap, slots that free
 * themselves after the disconnect grace (the AWS VWR leak), position and wait (FS-20).
 */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import type { RoomSale } from "../src/domain/room-port.ts";
import { inProcessRooms, type RoomHarness, redisRooms } from "./room-backends.ts";

async function openSale(h: RoomHarness, name: string): Promise<RoomSale> {
  return { saleId: h.sale(name), opensAtMs: (await h.nowMs()) - 1 };
}

contractSuite<RoomHarness>("waiting room stores", [inProcessRooms, redisRooms], (it) => {
  it("FS-13 one position per user from one counter; only the first join enrols its secret", async (h) => {
    const sale = await openSale(h, "join");
    const joins = await Promise.all(
      Array.from({ length: 20 }, (_, i) => h.rooms.join(sale, `u${i % 10}`, { binding: `b${i}`, draw: 0.5 })),
    );
    const firsts = joins.slice(0, 10);
    assert.deepEqual(
      firsts.map((j) => (j.kind === "queued" ? j.position : 0)).sort((a, b) => a - b),
      Array.from({ length: 10 }, (_, i) => i + 1),
    );
    assert.deepEqual(
      joins.slice(10).map((j) => j.kind === "queued" && j.position),
      firsts.map((j) => j.kind === "queued" && j.position),
    );
    assert.deepEqual(
      joins.map((j) => j.enrolled),
      [...Array(10).fill(true), ...Array(10).fill(false)],
    );
    assert.deepEqual(
      await h.rooms.admit(sale, "u3", "b13"),
      { kind: "wrong-secret" },
      "the second join's secret is not kept",
    );
    assert.equal((await h.rooms.admit(sale, "u3", "b3")).kind, "waiting");
    assert.deepEqual(await h.rooms.admit(sale, "nobody", "b"), { kind: "unknown" });
  });

  it("FS-13 the pre-queue is drawn at the opening in the order of the draws, FIFO after; the room is bounded", async (h) => {
    // The opening `slackMs` ahead on the engine's clock: the four joins and the admit land before it.
    const sale = { saleId: h.sale("pre"), opensAtMs: (await h.nowMs()) + h.slackMs };
    const draws = [0.9, 0.1, 0.5, 0.3];
    for (const [i, draw] of draws.entries()) {
      const j = await h.rooms.join(sale, `early${i}`, { binding: "b", draw });
      assert.deepEqual(j, { kind: "pre-queue", waiting: i + 1, enrolled: true });
    }
    assert.deepEqual(await h.rooms.admit(sale, "early0", "b"), { kind: "pre-queue", waiting: 4 });
    await h.passMs(sale.opensAtMs + 50 - (await h.nowMs()));
    const late = await h.rooms.join(sale, "late", { binding: "b", draw: 0 });
    assert.deepEqual(late, { kind: "queued", position: 5, enrolled: true });
    const positions = await Promise.all(
      draws.map(async (_, i) => {
        const a = await h.rooms.admit(sale, `early${i}`, "b");
        return a.kind === "waiting" ? a.position : a.kind;
      }),
    );
    if (h.rooms.constructor.name === "RedisRooms") assert.deepEqual(positions, [4, 1, 3, 2], "in draw order");
    else assert.deepEqual([...positions].sort(), [1, 2, 3, 4], "a random permutation");
    for (let i = 5; i < h.config.maxEntrants; i++)
      await h.rooms.join(sale, `f${i}`, { binding: "b", draw: 0 });
    assert.deepEqual(await h.rooms.join(sale, "one-too-many", { binding: "b", draw: 0 }), {
      kind: "full",
      enrolled: false,
    });
  });

  it("FS-13 admission never puts more than maxActive in checkout; a leave frees a slot at once; FS-20 position, ahead and wait", async (h) => {
    const sale = await openSale(h, "cap");
    for (let i = 0; i < 8; i++) await h.rooms.join(sale, `u${i}`, { binding: "b", draw: 0 });
    await h.passMs(50);
    await h.rooms.tick(sale);
    let s = await h.rooms.status(sale);
    assert.deepEqual([s.open, s.servingUpTo, s.active, s.waiting, s.lastPosition], [true, 3, 3, 5, 8]);
    await h.passMs(50);
    await h.rooms.tick(sale);
    assert.equal((await h.rooms.status(sale)).servingUpTo, 3, "the cap holds P");
    const w = await h.rooms.admit(sale, "u5", "b");
    assert.deepEqual(w, { kind: "waiting", position: 6, ahead: 2, estimatedWaitMs: 3 });
    const a = await h.rooms.admit(sale, "u0", "b");
    assert.equal(a.kind === "admitted" && a.position, 1);
    await h.rooms.leave(sale, "u0");
    assert.equal(await h.rooms.heartbeat(sale, "u0"), false);
    assert.deepEqual(await h.rooms.admit(sale, "u0", "b"), { kind: "expired" });
    await h.passMs(10);
    await h.rooms.tick(sale);
    s = await h.rooms.status(sale);
    assert.deepEqual([s.servingUpTo, s.active], [4, 3]);
  });

  it("FS-13 an admitted entrant that goes silent frees its slot after the grace (the AWS VWR leak cannot happen); one that beats keeps it", async (h) => {
    const sale = await openSale(h, "grace");
    for (let i = 0; i < 6; i++) await h.rooms.join(sale, `u${i}`, { binding: "b", draw: 0 });
    await h.passMs(20);
    await h.rooms.tick(sale);
    const admittedBy = await h.nowMs();
    assert.equal((await h.rooms.status(sale)).active, 3);
    // u0 beats every grace − slack (a beat up to `slackMs` late is still inside the grace) until
    // u1 and u2 have been silent past the grace on the engine's clock.
    const beatMs = h.config.graceMs - h.slackMs;
    for (let beat = 1; (await h.nowMs()) <= admittedBy + h.config.graceMs; beat++) {
      await h.passMs(beatMs);
      assert.equal(await h.rooms.heartbeat(sale, "u0"), true, `beat ${beat}`);
    }
    await h.rooms.tick(sale);
    const s = await h.rooms.status(sale);
    assert.deepEqual([s.servingUpTo, s.active], [5, 3], "u1, u2 silent past the grace: two slots for u3, u4");
    assert.deepEqual(await h.rooms.admit(sale, "u1", "b"), { kind: "expired" });
    assert.equal((await h.rooms.admit(sale, "u0", "b")).kind, "admitted");
  });
});
