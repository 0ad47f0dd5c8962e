/**
 * Charges through the payments system's public HTTP API (never its code): `POST /v1/payments`
 * with `capture: true` and the hold id as the Idempotency-Key (FS-18), `POST
 * /v1/payments/{id}/refunds` with `refund:<hold id>` for the compensation. Outbound HTTP is
 * infra's OutboundClient, every phase bounded; the payments service is configured, not a
 * user's URL, so no SSRF guard.
 *
 * | payments answers                                | here                                         |
 * |-------------------------------------------------|----------------------------------------------|
 * | 201 `captured`                                   | approved                                     |
 * | 201 `declined` / `failed`                        | declined                                     |
 * | 202 (saga continues), 409 IDEMPOTENCY_IN_PROGRESS | pending: ask again later, same key           |
 * | 5xx, a timeout, a reset                          | thrown: the worker retries with the same key |
 */
import { OutboundClient } from "@casebook/infra/http/outbound";
import type { ChargeResult, Charger } from "../domain/charger.ts";

export interface PaymentsChargerOptions {
  url: string;
  apiKey: string;
  /** The card token charged (the demo card; a real checkout passes the buyer's). */
  cardToken: string;
  timeoutMs: number;
}

export class PaymentsCharger implements Charger {
  readonly #o: PaymentsChargerOptions;
  readonly #http: OutboundClient;

  constructor(options: PaymentsChargerOptions) {
    this.#o = options;
    const t = options.timeoutMs;
    this.#http = new OutboundClient({
      addressGuard: "off",
      timeouts: { connectMs: Math.min(t, 2_000), headersMs: t, bodyMs: t },
    });
  }

  async charge(input: {
    idempotencyKey: string;
    amountMinor: bigint;
    currency: string;
  }): Promise<ChargeResult> {
    const res = await this.#post("/v1/payments", input.idempotencyKey, {
      amountMinor: input.amountMinor.toString(),
      currency: input.currency,
      cardToken: this.#o.cardToken,
      capture: true,
    });
    const body = res.json as { id?: string; status?: string; code?: string };
    if (res.status === 409 && body.code === "PAYMENTS_IDEMPOTENCY_IN_PROGRESS")
      return { kind: "pending", paymentId: undefined };
    if (res.status === 202) return { kind: "pending", paymentId: body.id };
    if (res.status === 201 || res.status === 200) {
      if (body.status === "captured") return { kind: "approved", paymentId: body.id! };
      if (body.status === "declined" || body.status === "failed") {
        return { kind: "declined", paymentId: body.id, reason: body.status };
      }
      return { kind: "pending", paymentId: body.id };
    }
    throw new Error(`payments answered ${res.status} ${body.code ?? ""} to a charge`);
  }

  async refund(input: { idempotencyKey: string; paymentId: string; amountMinor: bigint }): Promise<void> {
    const res = await this.#post(
      `/v1/payments/${encodeURIComponent(input.paymentId)}/refunds`,
      input.idempotencyKey,
      {
        amountMinor: input.amountMinor.toString(),
      },
    );
    if (res.status >= 200 && res.status < 300) return;
    throw new Error(`payments answered ${res.status} to a refund`);
  }

  close(): void {
    this.#http.close();
  }

  async #post(
    path: string,
    idempotencyKey: string,
    body: unknown,
  ): Promise<{ status: number; json: unknown }> {
    const res = await this.#http.request({
      method: "POST",
      url: `${this.#o.url}${path}`,
      headers: {
        authorization: `Bearer ${this.#o.apiKey}`,
        "content-type": "application/json",
        "idempotency-key": idempotencyKey,
      },
      body: JSON.stringify(body),
    });
    let json: unknown = {};
    try {
      json = JSON.parse(res.body.toString("utf8"));
    } catch {
      json = {};
    }
    return { status: res.status, json };
  }
}
