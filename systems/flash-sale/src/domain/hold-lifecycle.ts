/**
 * The life of a hold (FS-08), one table every store write follows:
 *
 *                    pay (before expiresAt)           approved
 *     ┌──────┐ ───────────────────────────▶ ┌──────────┐ ─────────▶ ┌──────┐
 *     │ held │                              │ charging │            │ paid │
 *     └──────┘                              └──────────┘            └──────┘
 *        │ expire (at/after expiresAt)         │ declined, compensated
 *        │ lost (FS-11: Redis lost it)         ▼
 *        └──────────────────────────────▶ ┌──────────┐
 *                                         │ released │  (its tickets back in stock)
 *                                         └──────────┘
 *
 * `charging` is frozen: the reconciler never takes it back, whatever the clock says, because
 * a charge is queued or in flight for it (FS-15/18); only the charge's outcome moves it.
 * `paid` and `released` are final. The store turns each transition into a conditional
 * UPDATE (`WHERE state = from`), so two writers racing on one hold cannot both win.
 *
 * @example
 * decideHold({ state: "held", expiresAtMs: 600_000 }, { kind: "pay", nowMs: 1_000 });
 * // { ok: true, to: "charging" }
 * decideHold({ state: "charging", expiresAtMs: 600_000 }, { kind: "expire", nowMs: 900_000 });
 * // { ok: false, refusal: "frozen" }
 */

export const HOLD_STATES = ["held", "charging", "paid", "released"] as const;
export type HoldState = (typeof HOLD_STATES)[number];

export type ReleaseReason = "expired" | "declined" | "compensated" | "lost";

export type HoldEvent =
  | { kind: "pay"; nowMs: number }
  | { kind: "expire"; nowMs: number }
  | { kind: "approved" }
  | { kind: "declined" }
  | { kind: "compensated" }
  | { kind: "lost" };

export type HoldEventKind = HoldEvent["kind"];

/** Why an event does not apply to a hold in its state. */
export type HoldRefusal =
  /** pay after the deadline: the hold is as good as expired, ask for a new one. */
  | "expired"
  /** expire before the deadline. */
  | "not-due"
  /** expire or lost on a charging hold: its charge decides. */
  | "frozen"
  /** the hold is paid or released already, or the event belongs to another state. */
  | "wrong-state";

export type HoldDecision =
  | { ok: true; to: HoldState; reason?: ReleaseReason }
  | { ok: false; refusal: HoldRefusal };

/** Each event's single source state and target: what the store's conditional UPDATE checks. */
export const HOLD_TRANSITIONS: Readonly<
  Record<HoldEventKind, { from: HoldState; to: HoldState; reason?: ReleaseReason }>
> = {
  pay: { from: "held", to: "charging" },
  expire: { from: "held", to: "released", reason: "expired" },
  lost: { from: "held", to: "released", reason: "lost" },
  approved: { from: "charging", to: "paid" },
  declined: { from: "charging", to: "released", reason: "declined" },
  compensated: { from: "charging", to: "released", reason: "compensated" },
};

export function isFinal(state: HoldState): boolean {
  return state === "paid" || state === "released";
}

export function decideHold(hold: { state: HoldState; expiresAtMs: number }, event: HoldEvent): HoldDecision {
  const rule = HOLD_TRANSITIONS[event.kind];
  if (hold.state !== rule.from) {
    const frozen = hold.state === "charging" && (event.kind === "expire" || event.kind === "lost");
    return { ok: false, refusal: frozen ? "frozen" : "wrong-state" };
  }
  if (event.kind === "pay" && !(event.nowMs < hold.expiresAtMs)) return { ok: false, refusal: "expired" };
  if (event.kind === "expire" && event.nowMs < hold.expiresAtMs) return { ok: false, refusal: "not-due" };
  return rule.reason === undefined
    ? { ok: true, to: rule.to }
    : { ok: true, to: rule.to, reason: rule.reason };
}
