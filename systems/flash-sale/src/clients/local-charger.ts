/**
 * The embedded default charger, so `npm start` sells tickets with no payment service: every
 * charge is approved at once, keyed by its idempotency key (a repeat answers the same payment).
 * Set PAYMENTS_URL to charge through payments' public API instead (payments-charger.ts).
 */
import type { ChargeResult, Charger } from "../domain/charger.ts";

export class LocalCharger implements Charger {
  readonly charges = new Map<string, string>();
  readonly refunds = new Set<string>();

  async charge(input: { idempotencyKey: string }): Promise<ChargeResult> {
    let paymentId = this.charges.get(input.idempotencyKey);
    if (paymentId === undefined) {
      paymentId = `local_${input.idempotencyKey}`;
      this.charges.set(input.idempotencyKey, paymentId);
    }
    return { kind: "approved", paymentId };
  }

  async refund(input: { idempotencyKey: string }): Promise<void> {
    this.refunds.add(input.idempotencyKey);
  }
}
