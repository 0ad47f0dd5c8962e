/**
 * What a merchant may do to a payment as it stands (capture, void, refund), and the 409 that
 * answers an action it may not: the problem names the payment's current status
 * (`paymentStatus`: RFC 9457 keeps `status` for the HTTP code), the `action` refused and the
 * `allowedActions` now, with a `detail` saying the same in words, so a client can decide
 * without reading the payment first.
 *
 * @example
 * allowedActions({ step: "done", status: "authorized", intent: "authorize" }); // ["capture", "void"]
 * throw stateConflict({ step: "done", status: "voided", intent: "void" }, "capture");
 * // 409 PAYMENTS_PAYMENT_STATE_CONFLICT { paymentStatus: "voided", action: "capture", allowedActions: [] }
 */
import type { CasebookError } from "@casebook/kit/errors";
import { paymentErrors } from "../errors.ts";
import type { SagaState } from "./payment-saga.ts";

export type PaymentAction = "capture" | "void" | "refund";

type ActionState = Pick<SagaState, "step" | "status" | "intent">;

/**
 * The actions the payment takes now: capture or void while it is authorized and no settlement
 * is under way, refund once something is captured and not all of it refunded; none otherwise.
 * A repeat of a capture or void already in flight joins it (not listed: it starts nothing).
 */
export function allowedActions(payment: ActionState): PaymentAction[] {
  if (payment.step !== "done") return [];
  if (payment.status === "authorized") return ["capture", "void"];
  if (payment.status === "captured" || payment.status === "partially_refunded") return ["refund"];
  return [];
}

function inWords(payment: ActionState, action: PaymentAction, allowed: readonly PaymentAction[]): string {
  const now =
    payment.step === "done"
      ? `is ${payment.status}`
      : `is ${payment.status} with a ${payment.intent === "authorize" ? "authorization" : payment.intent} in progress`;
  const next = allowed.length === 0 ? "no action is allowed now" : `allowed now: ${allowed.join(", ")}`;
  return `The payment ${now}, so it cannot take a ${action}; ${next}.`;
}

/** The 409 for `action` on `payment`: current status, the action, the allowed ones, in fields and in words. */
export function stateConflict(
  payment: ActionState,
  action: PaymentAction,
  fields: Record<string, unknown> = {},
): CasebookError {
  const allowed = allowedActions(payment);
  return paymentErrors.create("PAYMENTS_PAYMENT_STATE_CONFLICT", {
    fields: { ...fields, paymentStatus: payment.status, action, allowedActions: allowed },
    detail: inWords(payment, action, allowed),
  });
}
