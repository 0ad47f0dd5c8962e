/**
 * The port the charge worker calls (FS-15/18): charge a hold once, refund a charge once. The
 * idempotency key is derived from the hold (`holdId`; `refund:<holdId>`), so repeating a call
 * after a timeout or a worker's death creates no second charge or refund.
 *
 * @example
 * const r = await charger.charge({ idempotencyKey: hold.id, amountMinor: 5_000n, currency: "USD" });
 * if (r.kind === "approved") r.paymentId;
 */
export type ChargeResult =
  | { kind: "approved"; paymentId: string }
  | { kind: "declined"; paymentId: string | undefined; reason: string }
  /** Accepted, outcome not known yet (the processor is slow): ask again with the same key. */
  | { kind: "pending"; paymentId: string | undefined };

export interface Charger {
  charge(input: { idempotencyKey: string; amountMinor: bigint; currency: string }): Promise<ChargeResult>;
  /** Refunds the whole charge; resolves when the processor has it (same key: at most once). */
  refund(input: { idempotencyKey: string; paymentId: string; amountMinor: bigint }): Promise<void>;
}
