/**
 * A stand-in for the payments service's public API, for fault tests (the service itself is
 * another system, reached only over HTTP): `POST /v1/payments` and `POST
 * /v1/payments/{id}/refunds`, idempotent by `Idempotency-Key` as payments is (a repeat answers
 * the first payment), with a mode switch: `up`, `down` (503 to everything), `slow` (the
 * charge is made at once, the answer comes `slowMs` later — past the caller's timeout).
 *
 * @example
 * const payments = await startPaymentsStandIn();
 * payments.mode = "down"; … payments.mode = "up";
 * payments.payments.size; // distinct charges made: one per key
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface PaymentsStandIn {
  readonly url: string;
  mode: "up" | "down" | "slow";
  slowMs: number;
  /** Idempotency key → payment id: the charges made. */
  readonly payments: Map<string, string>;
  /** Idempotency key → charge requests received (repeats included). */
  readonly chargeRequests: Map<string, number>;
  /** Idempotency key → refund requests received. */
  readonly refunds: Map<string, number>;
  close(): Promise<void>;
}

export async function startPaymentsStandIn(): Promise<PaymentsStandIn> {
  const payments = new Map<string, string>();
  const chargeRequests = new Map<string, number>();
  const refunds = new Map<string, number>();
  const state = { mode: "up" as PaymentsStandIn["mode"], slowMs: 1_000 };
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const key = String(req.headers["idempotency-key"] ?? "");
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      };
      const refund = req.url?.endsWith("/refunds") === true;
      const counts = refund ? refunds : chargeRequests;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      if (state.mode === "down") return send(503, { code: "PAYMENTS_UNAVAILABLE" });
      if (refund) return send(201, { id: `re_${key}`, status: "succeeded" });
      if (!payments.has(key)) payments.set(key, `pay_${payments.size + 1}`);
      const answer = () => send(201, { id: payments.get(key), status: "captured" });
      if (state.mode === "slow") setTimeout(answer, state.slowMs).unref();
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get mode() {
      return state.mode;
    },
    set mode(m) {
      state.mode = m;
    },
    get slowMs() {
      return state.slowMs;
    },
    set slowMs(ms) {
      state.slowMs = ms;
    },
    payments,
    chargeRequests,
    refunds,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
