/** The hold state machine of `domain/hold-lifecycle.ts`, every state × event, deterministic. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { decideHold, HOLD_STATES, type HoldEvent, isFinal } from "../src/domain/hold-lifecycle.ts";

const EXPIRES_AT = 10_000;
const events: HoldEvent[] = [
  { kind: "pay", nowMs: 9_999 },
  { kind: "pay", nowMs: 10_000 },
  { kind: "expire", nowMs: 9_999 },
  { kind: "expire", nowMs: 10_000 },
  { kind: "approved" },
  { kind: "declined" },
  { kind: "compensated" },
  { kind: "lost" },
];

test("FS-08 every state × event: held pays before its deadline and expires at it; charging is frozen; paid and released are final", () => {
  const table = HOLD_STATES.map((state) =>
    events.map((event) => {
      const d = decideHold({ state, expiresAtMs: EXPIRES_AT }, event);
      return d.ok ? `${d.to}${d.reason ? `:${d.reason}` : ""}` : `✗${d.refusal}`;
    }),
  );
  assert.deepEqual(table, [
    // pay<  pay=        expire<     expire=            approved        declined             compensated              lost
    [
      "charging",
      "✗expired",
      "✗not-due",
      "released:expired",
      "✗wrong-state",
      "✗wrong-state",
      "✗wrong-state",
      "released:lost",
    ],
    [
      "✗wrong-state",
      "✗wrong-state",
      "✗frozen",
      "✗frozen",
      "paid",
      "released:declined",
      "released:compensated",
      "✗frozen",
    ],
    [
      "✗wrong-state",
      "✗wrong-state",
      "✗wrong-state",
      "✗wrong-state",
      "✗wrong-state",
      "✗wrong-state",
      "✗wrong-state",
      "✗wrong-state",
    ],
    [
      "✗wrong-state",
      "✗wrong-state",
      "✗wrong-state",
      "✗wrong-state",
      "✗wrong-state",
      "✗wrong-state",
      "✗wrong-state",
      "✗wrong-state",
    ],
  ]);
  assert.deepEqual(HOLD_STATES.filter(isFinal), ["paid", "released"]);
});
