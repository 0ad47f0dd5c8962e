/**
 * Where a command runs (src/cluster/domain/cluster-routing.ts), deterministically: served by the
 * owner, -MOVED elsewhere, -ASK / -TRYAGAIN / ASKING during a migration, READONLY reads
 * on the owner's replica, CROSSSLOT, and unowned slots.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CROSS_SLOT, type RouteQuery, routeCommand } from "../src/cluster/domain/cluster-routing.ts";
import { ClusterState } from "../src/cluster/domain/cluster-state.ts";
import { clusterErrors } from "../src/errors.ts";

const A = "a".repeat(40);
const B = "b".repeat(40);
const R = "c".repeat(40);

function view(me: string): ClusterState {
  const state = new ClusterState({ id: me, host: "127.0.0.1", port: 1, busPort: 2 });
  for (const id of [A, B, R]) state.addNode({ id, host: "127.0.0.1", port: 1, busPort: 2 });
  state.setReplicaOf(R, A);
  state.assign(10, A);
  state.assign(20, B);
  return state;
}

function query(slot: number, overrides: Partial<RouteQuery> = {}): RouteQuery {
  return {
    slot,
    keyCount: 1,
    asking: false,
    readonlyClient: false,
    readOnlyCommand: true,
    countMissing: () => 0,
    ...overrides,
  };
}

describe("cluster routing", () => {
  test("CA-05 the owner serves; any other node answers MOVED to the owner", () => {
    assert.deepEqual(routeCommand(view(A), query(10)), { kind: "serve" });
    assert.deepEqual(routeCommand(view(A), query(20)), { kind: "moved", slot: 20, nodeId: B });
    assert.deepEqual(routeCommand(view(A), query(30)), { kind: "unbound", slot: 30 });
    assert.deepEqual(routeCommand(view(A), query(CROSS_SLOT, { keyCount: 2 })), { kind: "crossslot" });
  });

  test("CA-17 a replica serves its primary's slots only to READONLY clients, and only reads", () => {
    assert.deepEqual(routeCommand(view(R), query(10)), { kind: "moved", slot: 10, nodeId: A });
    assert.deepEqual(routeCommand(view(R), query(10, { readonlyClient: true })), { kind: "serve" });
    assert.deepEqual(routeCommand(view(R), query(10, { readonlyClient: true, readOnlyCommand: false })), {
      kind: "moved",
      slot: 10,
      nodeId: A,
    });
    assert.deepEqual(routeCommand(view(R), query(20, { readonlyClient: true })), {
      kind: "moved",
      slot: 20,
      nodeId: B,
    });
  });

  test("CA-05 migrating source: present keys served, missing keys ASK, a mix TRYAGAIN", () => {
    const source = view(A);
    source.migrating.set(10, B);
    assert.deepEqual(routeCommand(source, query(10)), { kind: "serve" });
    assert.deepEqual(routeCommand(source, query(10, { countMissing: () => 1 })), {
      kind: "ask",
      slot: 10,
      nodeId: B,
    });
    assert.deepEqual(routeCommand(source, query(10, { keyCount: 2, countMissing: () => 1 })), {
      kind: "tryagain",
    });
    assert.deepEqual(routeCommand(source, query(10, { keyCount: 2, countMissing: () => 2 })), {
      kind: "ask",
      slot: 10,
      nodeId: B,
    });
  });

  test("CA-05 importing target: only after ASKING, and a multi-key command with keys still on the source waits", () => {
    const target = view(B);
    target.importing.set(10, A);
    assert.deepEqual(routeCommand(target, query(10)), { kind: "moved", slot: 10, nodeId: A });
    assert.deepEqual(routeCommand(target, query(10, { asking: true, countMissing: () => 1 })), {
      kind: "serve",
    });
    assert.deepEqual(routeCommand(target, query(10, { asking: true, keyCount: 2, countMissing: () => 1 })), {
      kind: "tryagain",
    });
    assert.deepEqual(routeCommand(target, query(10, { asking: true, keyCount: 2 })), { kind: "serve" });
  });

  test("missing keys are counted only while the slot migrates or imports", () => {
    let counted = 0;
    routeCommand(view(A), query(10, { countMissing: () => ++counted }));
    assert.equal(counted, 0);
  });
});

describe("cluster error registry", () => {
  test("every code has an error status and a message that says what to do", () => {
    for (const [code, spec] of Object.entries(clusterErrors.specs)) {
      assert.match(code, /^CACHE_CLUSTER_[A-Z_]+$/);
      assert.ok(spec.status >= 400 && spec.status < 600, code);
      assert.ok(spec.message.length > 30, code);
      const error = clusterErrors.create(code as keyof typeof clusterErrors.specs);
      assert.ok(clusterErrors.is(error, code as keyof typeof clusterErrors.specs));
    }
  });
});
