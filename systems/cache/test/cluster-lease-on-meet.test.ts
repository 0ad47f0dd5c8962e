/**
 * CA-16 at the moment two primaries meet: each learns a new voter before it has heard the
 * other's pong, and must not serve until it has — the majority lease it cached while it
 * was its own lone voter (forever) belongs to the old view. Watched from inside the
 * process between every I/O event, so the window the cron tick would close late is seen.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setImmediate as nextTurn } from "node:timers/promises";
import { type InProcessNode, meetTwoNodes, NO_FAILOVER_NODE_TIMEOUT_MS } from "./cluster-harness.ts";

test("CA-16 a primary that meets another voter serves only after two-way contact with it, not on its lone view's lease", async (t) => {
  const pair = await meetTwoNodes(NO_FAILOVER_NODE_TIMEOUT_MS);
  t.after(() => pair.close());
  const { a, b } = pair;

  const pairs: Array<["a" | "b", InProcessNode, InProcessNode]> = [
    ["a", a, b],
    ["b", b, a],
  ];
  const uncontacted = { a: 0, b: 0 };
  const deadline = Date.now() + 10_000;
  const serving = () => a.runtime.servingError() === undefined && b.runtime.servingError() === undefined;
  while (!serving()) {
    assert.ok(Date.now() < deadline, "both nodes serve within 10 s of the meeting");
    for (const [name, node, other] of pairs) {
      const otherId = other.runtime.state.myId;
      if (!node.runtime.state.isVoter(otherId)) continue;
      if (node.runtime.detector.contactMs(otherId) !== Number.NEGATIVE_INFINITY) continue;
      uncontacted[name] += 1;
      assert.equal(
        node.runtime.servingError(),
        "CLUSTERDOWN The cluster is down",
        `${name} knows the other primary as a voter but has not heard it both ways`,
      );
    }
    await nextTurn();
  }
  assert.ok(
    uncontacted.a + uncontacted.b > 0,
    "the window between learning a voter and reaching it was watched",
  );
  for (const [, node, other] of pairs)
    assert.ok(node.runtime.detector.contactMs(other.runtime.state.myId) > Number.NEGATIVE_INFINITY);
});
