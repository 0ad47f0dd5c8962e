/**
 * The gateway's presence watch (gateway/presence-watch.ts) on the in-process session table and
 * presence bus: what a watching socket is pushed, once per change, and what it costs — one
 * subscription per watched user per gateway, one session-table read per turn of pokes, and the
 * heartbeat's re-read for what no poke announces (rows that expire when a gateway dies).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { PresenceBus, PresenceListener } from "../src/domain/presence.ts";
import type { SessionRow } from "../src/domain/sessions.ts";
import { MAX_PRESENCE_WATCHES, PresenceWatch } from "../src/gateway/presence-watch.ts";
import { MemoryPresenceBus } from "../src/store/memory-presence-bus.ts";
import { MemorySessions } from "../src/store/memory-sessions.ts";

interface Pushed {
  connectionId: string;
  users: { userId: string; online: boolean; devices: string[] }[];
}

/** The in-process bus, counting the users each listen and unlisten names. */
class CountingBus implements PresenceBus {
  readonly inner = new MemoryPresenceBus();
  listened: string[] = [];
  unlistened: string[] = [];
  poke(userId: string) {
    return this.inner.poke(userId);
  }
  listen(listener: PresenceListener, userIds: readonly string[]) {
    this.listened.push(...userIds);
    return this.inner.listen(listener, userIds);
  }
  unlisten(listener: PresenceListener, userIds: readonly string[]) {
    this.unlistened.push(...userIds);
    return this.inner.unlisten(listener, userIds);
  }
}

/** Sessions whose lookups are counted. */
class CountingSessions extends MemorySessions {
  lookups = 0;
  override lookup(userIds: readonly string[], nowMs: number): Promise<SessionRow[]> {
    this.lookups++;
    return super.lookup(userIds, nowMs);
  }
}

function world() {
  let nowMs = 1_000;
  const bus = new CountingBus();
  const sessions = new CountingSessions();
  const pushed: Pushed[] = [];
  const watch = new PresenceWatch({
    bus,
    sessions,
    nowMs: () => nowMs,
    push: (connectionId, frame) => pushed.push({ connectionId, users: frame.users as Pushed["users"] }),
    onError: (err) => assert.fail(String(err)),
  });
  const row = (userId: string, deviceId: string, expiresAtMs = nowMs + 90_000): SessionRow => ({
    userId,
    deviceId,
    gatewayId: "gw",
    connectionId: `${userId}-${deviceId}`,
    expiresAtMs,
  });
  /** A socket of `userId` opens (row written, then the poke — as the gateway does). */
  const connect = async (userId: string, deviceId: string, expiresAtMs?: number) => {
    await sessions.put(row(userId, deviceId, expiresAtMs));
    await bus.poke(userId);
    await nextTurn();
    await nextTurn();
  };
  const disconnect = async (userId: string, deviceId: string) => {
    await sessions.remove(userId, deviceId, `${userId}-${deviceId}`);
    await bus.poke(userId);
    await nextTurn();
    await nextTurn();
  };
  const offline = (userId: string) => ({ userId, online: false, devices: [] as string[] });
  return {
    bus,
    sessions,
    watch,
    pushed,
    connect,
    disconnect,
    offline,
    advance: (ms: number) => {
      nowMs += ms;
    },
  };
}

describe("presence watch", () => {
  test("CH-16 a watching socket is pushed each change of a member's devices, once, and nothing after unwatch", async () => {
    const w = world();
    await w.watch.watch("s1", "42", [w.offline("ana"), w.offline("bia")]);
    await w.connect("ana", "phone");
    assert.deepEqual(w.pushed, [
      { connectionId: "s1", users: [{ userId: "ana", online: true, devices: ["phone"] }] },
    ]);
    await w.connect("ana", "laptop");
    assert.deepEqual(w.pushed.at(-1)?.users, [{ userId: "ana", online: true, devices: ["laptop", "phone"] }]);
    await w.bus.poke("ana"); // a poke with nothing changed (a heartbeat, a doubled message): nothing pushed
    await nextTurn();
    await nextTurn();
    assert.equal(w.pushed.length, 2);
    await w.disconnect("ana", "laptop");
    await w.disconnect("ana", "phone");
    assert.deepEqual(
      w.pushed.slice(2).map((p) => p.users[0]),
      [{ userId: "ana", online: true, devices: ["phone"] }, w.offline("ana")],
    );
    await w.watch.unwatch("s1", "42");
    await w.connect("bia", "phone");
    assert.equal(w.pushed.length, 4, "no push after the watch ended");
    assert.deepEqual(w.bus.unlistened.sort(), ["ana", "bia"], "the channels go with the last watcher");
  });

  test("CH-16 what no poke announces — a dead gateway's rows expiring — is pushed by the heartbeat's re-read", async () => {
    const w = world();
    await w.connect("ana", "phone", 1_000 + 3_000); // a row with a 3 s TTL, never renewed: its gateway died
    await w.watch.watch("s1", "42", [{ userId: "ana", online: true, devices: ["phone"] }]);
    await w.watch.sweep();
    assert.equal(w.pushed.length, 0, "still live: nothing changed");
    w.advance(3_000);
    await w.watch.sweep();
    assert.deepEqual(w.pushed, [{ connectionId: "s1", users: [w.offline("ana")] }]);
  });

  test("per gateway, not per socket: one subscription per watched user, one read per turn of pokes, each socket pushed once", async () => {
    const w = world();
    const members = ["ana", "bia", "caio"].map(w.offline);
    await w.watch.watch("s1", "42", members);
    await w.watch.watch("s2", "42", members);
    await w.watch.watch("s2", "43", [w.offline("ana")]); // s2 watches ana through two conversations
    assert.deepEqual(w.bus.listened, ["ana", "bia", "caio"], "the second socket subscribes nothing more");
    const before = w.sessions.lookups;
    for (const user of ["ana", "bia", "caio"]) await w.sessions.put({ ...rowOf(user) });
    await Promise.all(["ana", "bia", "caio"].map((u) => w.bus.poke(u)));
    await nextTurn();
    await nextTurn();
    assert.equal(w.sessions.lookups - before, 1, "three pokes in one turn share one read");
    assert.deepEqual(
      w.pushed.map((p) => [p.connectionId, p.users.map((u) => u.userId)]),
      [
        ["s1", ["ana", "bia", "caio"]],
        ["s2", ["ana", "bia", "caio"]],
      ],
      "one frame per socket, each user once though s2 watches ana twice",
    );
    w.watch.forget("s1");
    await nextTurn();
    assert.deepEqual(w.bus.unlistened, [], "s2 still watches everyone");
    await w.watch.unwatch("s2", "42");
    assert.deepEqual(w.bus.unlistened.sort(), ["bia", "caio"], "ana is still watched through 43");
    assert.equal(w.watch.watchedUsers, 1);
  });

  test("a change between the send service's read and the subscription is pushed, not missed", async () => {
    const w = world();
    await w.sessions.put(rowOf("ana")); // ana connected after the members' presence was read
    await w.watch.watch("s1", "42", [w.offline("ana")]);
    assert.deepEqual(w.pushed, [
      { connectionId: "s1", users: [{ userId: "ana", online: true, devices: ["phone"] }] },
    ]);
  });

  test(`a socket watches at most ${MAX_PRESENCE_WATCHES} conversations: the next is CHAT_PRESENCE_WATCHES naming chatId, a renewal is not`, async () => {
    const w = world();
    for (let i = 0; i < MAX_PRESENCE_WATCHES; i++) await w.watch.watch("s1", `c${i}`, [w.offline("ana")]);
    await w.watch.watch("s1", "c0", [w.offline("ana"), w.offline("bia")]);
    await assert.rejects(w.watch.watch("s1", "one-more", [w.offline("ana")]), (err: Error) => {
      const e = err as Error & { code: string; fields: { field: string } };
      assert.equal(e.code, "CHAT_PRESENCE_WATCHES");
      assert.equal(e.fields.field, "chatId");
      return true;
    });
    await w.watch.unwatch("s1", "c1");
    await w.watch.watch("s1", "one-more", [w.offline("ana")]);
  });
});

test("a watch whose subscription fails is undone whole: nothing watched, and the next watch subscribes again", async () => {
  const w = world();
  let failing = true;
  const flaky: PresenceBus = {
    poke: (userId) => w.bus.poke(userId),
    listen: (listener, userIds) =>
      failing ? Promise.reject(new Error("redis down")) : w.bus.listen(listener, userIds),
    unlisten: (listener, userIds) => w.bus.unlisten(listener, userIds),
  };
  const watch = new PresenceWatch({
    bus: flaky,
    sessions: w.sessions,
    nowMs: () => 1_000,
    push: (connectionId, frame) => w.pushed.push({ connectionId, users: frame.users as Pushed["users"] }),
    onError: (err) => assert.fail(String(err)),
  });
  await assert.rejects(watch.watch("s1", "42", [w.offline("ana")]), /redis down/);
  assert.equal(watch.watchedUsers, 0);
  failing = false;
  await watch.watch("s1", "42", [w.offline("ana")]);
  assert.equal(watch.watchedUsers, 1);
  await w.sessions.put(rowOf("ana"));
  await w.bus.poke("ana");
  await nextTurn();
  await nextTurn();
  assert.deepEqual(w.pushed, [
    { connectionId: "s1", users: [{ userId: "ana", online: true, devices: ["phone"] }] },
  ]);
});

function rowOf(userId: string): SessionRow {
  return { userId, deviceId: "phone", gatewayId: "gw", connectionId: `${userId}-phone`, expiresAtMs: 1e15 };
}
