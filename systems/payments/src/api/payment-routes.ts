/**
 * The payments API (seed 000 §4, PY-01, PY-05, PY-12, PY-13, PY-15, PY-16):
 *
 *   POST /v1/payments                 validate → idempotency begin → payment + saga + ledger hold
 *                                     (one transaction) → drive inline up to `inlineDriveMs` →
 *                                     201 final state (the stored, replayable response) or 202 pending
 *   GET  /v1/payments/{id}            the payment, scoped to the merchant (another's id is 404)
 *   POST /v1/payments/{id}/capture    an authorize-only payment's capture, all of it or `{"amountMinor"}`
 *                                     of it (PY-16: the rest of the hold is released)
 *   POST /v1/payments/{id}/void       its void (compensation: the hold is released)
 *   POST /v1/payments/{id}/refunds    a partial refund, own Idempotency-Key and acquirer call (PY-15)
 *   GET  /v1/payments/{id}/refunds/{refundId}   one refund: where a 202 refund ended
 *
 * `{id}` and `{refundId}` are public ids (domain/public-ids.ts: `pay_…`/`re_…`, or a pre-013 decimal
 * id), looked up within the merchant; the internal int8 id never appears in a request or an answer.
 *
 * Capture and void take an optional Idempotency-Key: with one, the final answer is stored and
 * every retry with the key replays it (the same key for another amount is a 422); without one, a
 * repeat while the step is in flight joins it and a repeat after it finished is a 409.
 *
 * Input is validated BEFORE the idempotency begin, so a bad request stores nothing. While the
 * acquirer's breaker is open a new payment gets 202 pending (the saga waits with backoff) or a
 * 503 fail-fast, by configuration (PY-12).
 *
 * @example
 * registerPaymentRoutes(app, { db, idempotency, orchestrator, acquirer, clock, merchantOf: (r) => authedMerchant(r),
 *   config: { inlineDriveMs: 2_000, breakerOpenMode: "accept" } });
 */
import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import { sendStoredResponse } from "@casebook/infra/http/idempotency-key";
import { beginClaim, releaseAfterFailure } from "@casebook/infra/sql/idempotency-claim-release";
import type { IdempotencyLease } from "@casebook/infra/sql/idempotency-store";
import { fingerprintRequest, type StoredResponse } from "@casebook/kit/idempotency";
import { currencyProblem } from "@casebook/kit/iso-4217";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { stateConflict } from "../domain/payment-actions.ts";
import { captureAmountOf, requestSettlement } from "../domain/payment-saga.ts";
import { paymentErrors } from "../errors.ts";
import { CREATED_STEP } from "../store/payment-create-group.ts";
import {
  type CreatePaymentInput,
  createPayment,
  finalResponse,
  findPayment,
  findPaymentByKey,
  lockPayment,
  type Payment,
  paymentView,
  scheduleSettlement,
  setIdemGeneration,
} from "../store/payment-repository.ts";
import {
  amountBoundProblem,
  type BreakerOpenMode,
  checkedBody,
  everyFieldBody,
  idempotencyKeyOf,
  keyedHeaders,
  optionalIdempotencyKeyOf,
  type PaymentRouteDeps,
  type PaymentRoutesConfig,
  paymentIdOf,
  routePayment,
} from "./payment-request.ts";
import { captureBody, idempotencyCodes, paymentBody, paymentViewSchema } from "./payment-schemas.ts";

export type { BreakerOpenMode, PaymentRouteDeps, PaymentRoutesConfig };

export interface PaymentInput {
  amountMinor: bigint;
  currency: string;
  cardToken: string;
  capture: boolean;
}

/**
 * A payment body the edge's schema (`paymentBody`, ajv) passed, checked for what a schema cannot
 * say — an active ISO 4217 currency with a minor unit, the amount's bound; PAYMENTS_PAYMENT_INVALID
 * naming every bad field otherwise.
 */
export function paymentInputOf(request: FastifyRequest): PaymentInput {
  const body = checkedBody(request, (b) => {
    const currency = currencyProblem(b.currency);
    return [
      amountBoundProblem(b.amountMinor, "/body/amountMinor"),
      currency === undefined ? undefined : { field: "/body/currency", message: currency },
    ];
  });
  return {
    amountMinor: BigInt(body.amountMinor as string | number),
    currency: body.currency as string,
    cardToken: body.cardToken as string,
    capture: body.capture !== false,
  };
}

function sendView(reply: FastifyReply, status: number, payment: Payment): FastifyReply {
  return reply.code(status).header("location", `/v1/payments/${payment.publicId}`).send(paymentView(payment));
}

/** Resolves after `ms` with undefined: the inline drive's deadline. */
function deadline(ms: number): Promise<undefined> {
  return new Promise((resolve) => setTimeout(() => resolve(undefined), ms).unref());
}

/**
 * Drives a saga up to the inline deadline; the drive keeps going (and persisting) after it.
 * Undefined when the drive did not finish here: past the deadline, or because an orchestrator
 * took the saga over (this drive stalled past its lease, e.g. on a database that went silent) —
 * the new owner finishes it, so the answer is "pending", not the lost lease.
 */
async function driveInline(
  deps: PaymentRouteDeps,
  run: () => Promise<Payment | undefined>,
): Promise<Payment | undefined> {
  if (deps.config.inlineDriveMs <= 0) {
    run().catch(() => {}); // the orchestrators own it from here; errors surface there
    return undefined;
  }
  const driving = run().catch((error: unknown) => {
    if (paymentErrors.is(error, "PAYMENTS_SAGA_LEASE_LOST")) return undefined;
    throw error;
  });
  driving.catch(() => {});
  return Promise.race([driving, deadline(deps.config.inlineDriveMs)]);
}

async function createAndDrive(
  deps: PaymentRouteDeps,
  reply: FastifyReply,
  merchantId: string,
  key: string,
  input: PaymentInput,
  lease: IdempotencyLease,
): Promise<FastifyReply> {
  const breakerOpen = deps.acquirer.breaker.state === "open";
  const nowMs = deps.clock.nowMs();
  const create: CreatePaymentInput = {
    merchantId,
    idempotencyKey: key,
    ...input,
    idemGeneration: lease.generation,
    nowMs,
    ...(breakerOpen ? {} : { leaseOwner: deps.orchestrator.owner, leaseMs: deps.orchestrator.leaseMs }),
  };
  let payment: Payment;
  try {
    const grouped = await deps.creates?.submit({ lease, input: create });
    payment =
      grouped?.kind === "written"
        ? grouped.payment
        : await deps.db.transaction(async (tx) => {
            // The key's step first: the hold inside createPayment locks the merchant's balance rows
            // until COMMIT, so the fewer statements after it, the shorter every other payment waits.
            await deps.idempotency.advance(tx, lease, CREATED_STEP, nowMs);
            return createPayment(tx, create);
          });
  } catch (error) {
    await releaseAfterFailure(deps.idempotency, deps.db, lease, reply.log);
    throw error;
  }
  if (breakerOpen) return sendView(reply, 202, payment);
  const driven = await driveInline(deps, () => deps.orchestrator.drive({ ...payment, takenOver: false }));
  return answerDriven(deps, reply, merchantId, key, payment, driven);
}

/**
 * A finished saga answers with its stored response (the bytes every retry replays); else 202
 * pending. When this request's own drive finished it (`driven`: what that drive committed, the
 * stored response among it), the bytes are `finalResponse` of that payment — what the commit
 * stored — so they are not read back. `driven` is undefined when the drive did not end here.
 */
async function answerDriven(
  deps: PaymentRouteDeps,
  reply: FastifyReply,
  merchantId: string,
  key: string,
  before: Payment,
  driven: Payment | undefined,
): Promise<FastifyReply> {
  if (driven?.step === "done" && driven.intent === "authorize")
    return sendStoredResponse(reply, finalResponse(driven));
  const payment = driven ?? before;
  if (payment.step === "done") {
    const stored = await deps.idempotency.find(merchantId, key);
    if (stored?.response !== undefined) return sendStoredResponse(reply, stored.response);
  }
  return sendView(reply, 202, payment);
}

async function postPayment(deps: PaymentRouteDeps, request: FastifyRequest, reply: FastifyReply) {
  const merchantId = deps.merchantOf(request);
  const key = idempotencyKeyOf(request);
  const input = paymentInputOf(request);
  if (deps.config.breakerOpenMode === "fail-fast" && deps.acquirer.breaker.state === "open") {
    throw paymentErrors.create("PAYMENTS_ACQUIRER_UNAVAILABLE", {
      fields: { retryAfterMs: deps.acquirer.breaker.retryAfterMs() },
    });
  }
  const fingerprint = fingerprintRequest({
    method: "POST",
    path: "/v1/payments",
    body: { ...input, amountMinor: input.amountMinor.toString() },
  });
  const claim = { scope: merchantId, key, fingerprint, nowMs: deps.clock.nowMs() };
  const begun = await beginClaim(deps.idempotency, deps.db, claim, reply.log);
  if (begun.kind === "replay") return sendStoredResponse(reply, begun.response);
  if (begun.lease.recoveryPoint === "started") {
    return createAndDrive(deps, reply, merchantId, key, input, begun.lease);
  }
  // A retry took over a claim whose owner went silent: the payment exists; hand its saga the new generation.
  const payment = await findPaymentByKey(deps.db, merchantId, key);
  if (payment === undefined) throw new Error(`idempotency key ${key} is past "started" but has no payment`);
  await setIdemGeneration(deps.db, payment.id, begun.lease.generation);
  const driven = await driveInline(deps, () => deps.orchestrator.driveById(payment.id));
  return answerDriven(deps, reply, merchantId, key, payment, driven);
}

/** A capture body (`captureBody`): nothing, null or `{}` captures it all; `{"amountMinor"}` a part (PY-16). */
export function requestedCaptureOf(request: FastifyRequest): bigint | null {
  if (request.body === undefined || request.body === null) return null;
  const body = checkedBody(request, (b) => [amountBoundProblem(b.amountMinor, "/body/amountMinor")]);
  return body.amountMinor === undefined ? null : BigInt(body.amountMinor as string | number);
}

interface SettleRequest {
  merchantId: string;
  /** Internal id. */
  id: bigint;
  /** The id the route was called with: it names the request in its fingerprint. */
  publicId: string;
  action: "capture" | "void";
  /** A partial capture's amount; null: all of it (and always for a void). */
  amountMinor: bigint | null;
}

/** Moves the saga to its capture/void step in one transaction, with the key's step when there is one. */
async function scheduleSettle(deps: PaymentRouteDeps, req: SettleRequest, lease?: IdempotencyLease) {
  await deps.db.transaction(async (tx) => {
    const payment = await lockPayment(tx, req.merchantId, req.id);
    const next = requestSettlement(payment, req.action);
    const asked = captureAmountOf(payment.amountMinor, req.amountMinor);
    // Joining a capture in flight is idempotent only for the same amount.
    const sameAmount = asked === captureAmountOf(payment.amountMinor, payment.captureAmountMinor);
    if (next === undefined || (next === payment && req.action === "capture" && !sameAmount)) {
      throw stateConflict(payment, req.action);
    }
    if (next !== payment) await scheduleSettlement(tx, payment, next, deps.clock.nowMs(), req.amountMinor);
    if (lease !== undefined) await deps.idempotency.advance(tx, lease, `${req.action}_requested`);
  });
}

/** Drives the saga inline; the payment as it stands when the drive ends or its deadline passes. */
async function driveSettle(deps: PaymentRouteDeps, req: SettleRequest): Promise<Payment> {
  const driven = await driveInline(deps, () => deps.orchestrator.driveById(req.id));
  return driven ?? (await findPayment(deps.db, req.merchantId, req.id))!;
}

function viewResponse(payment: Payment): StoredResponse {
  return {
    status: 200,
    headers: {
      "content-type": "application/json; charset=utf-8",
      location: `/v1/payments/${payment.publicId}`,
    },
    body: new TextEncoder().encode(JSON.stringify(paymentView(payment))),
  };
}

/** With an Idempotency-Key: begin, schedule once per key, and store the final answer for every retry. */
async function settleWithKey(deps: PaymentRouteDeps, reply: FastifyReply, req: SettleRequest, key: string) {
  const fingerprint = fingerprintRequest({
    method: "POST",
    path: `/v1/payments/${req.publicId}/${req.action}`,
    body: { amountMinor: req.amountMinor?.toString() ?? "all" },
  });
  const claim = { scope: req.merchantId, key, fingerprint, nowMs: deps.clock.nowMs() };
  const begun = await beginClaim(deps.idempotency, deps.db, claim, reply.log);
  if (begun.kind === "replay") return sendStoredResponse(reply, begun.response);
  let lease = begun.lease;
  if (lease.recoveryPoint === "started") {
    try {
      await scheduleSettle(deps, req, lease);
    } catch (error) {
      await releaseAfterFailure(deps.idempotency, deps.db, lease, reply.log); // nothing committed: the key is free again
      throw error;
    }
    lease = { ...lease, recoveryPoint: `${req.action}_requested` };
  }
  const payment = await driveSettle(deps, req);
  if (payment.step !== "done") {
    await deps.idempotency.release(deps.db, lease); // a retry with the key resumes the drive
    return sendView(reply, 202, payment);
  }
  const response = viewResponse(payment);
  await deps.db.transaction((tx) => deps.idempotency.complete(tx, lease, response));
  return sendStoredResponse(reply, response);
}

async function settle(
  deps: PaymentRouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  action: "capture" | "void",
) {
  const merchantId = deps.merchantOf(request);
  const publicId = paymentIdOf(request);
  const key = optionalIdempotencyKeyOf(request);
  const amountMinor = action === "capture" ? requestedCaptureOf(request) : null;
  const found = await routePayment(deps, merchantId, publicId);
  // amount_minor never changes: this check, before anything is written, is exact.
  if (amountMinor !== null && amountMinor > found.amountMinor) {
    throw paymentErrors.create("PAYMENTS_CAPTURE_EXCEEDS_AUTHORIZED", {
      fields: {
        authorizedMinor: found.amountMinor.toString(),
        errors: [{ field: "/body/amountMinor", message: `must be at most ${found.amountMinor}` }],
      },
    });
  }
  const req: SettleRequest = { merchantId, id: found.id, publicId: found.publicId, action, amountMinor };
  if (key !== undefined) return settleWithKey(deps, reply, req, key);
  await scheduleSettle(deps, req);
  const payment = await driveSettle(deps, req);
  return sendView(reply, payment.step === "done" ? 200 : 202, payment);
}

/**
 * Registers the payment routes on `app`. The caller's error handler maps CasebookErrors to
 * problem+json (pass `paymentErrors` and `idempotencyErrors` to createService's `errors`).
 *
 * @example
 * registerPaymentRoutes(service.app, deps);
 */
export function registerPaymentRoutes(app: FastifyInstance, deps: PaymentRouteDeps): void {
  const tags = ["payments"];
  const security = bearerSecurity;
  const notFound = ["PAYMENTS_PAYMENT_NOT_FOUND"] as const;
  app.post(
    "/v1/payments",
    {
      ...everyFieldBody,
      schema: {
        summary: "Create a payment (Idempotency-Key required): 201 final, 202 still pending",
        tags,
        security,
        headers: keyedHeaders,
        body: paymentBody,
        errorCodes: ["PAYMENTS_PAYMENT_INVALID", "PAYMENTS_IDEMPOTENCY_KEY_MISSING", ...idempotencyCodes],
        response: {
          201: { ...paymentViewSchema, description: "The payment's final state (replayed to every retry)" },
          202: { ...paymentViewSchema, description: "Pending: the saga goes on; GET the payment later" },
        },
      },
    },
    (request, reply) => postPayment(deps, request, reply),
  );
  app.get(
    "/v1/payments/:id",
    {
      schema: {
        summary: "One payment",
        tags,
        security,
        errorCodes: notFound,
        response: { 200: paymentViewSchema },
      },
    },
    async (request, reply) =>
      sendView(reply, 200, await routePayment(deps, deps.merchantOf(request), paymentIdOf(request))),
  );
  const settled = {
    200: { ...paymentViewSchema, description: "Done" },
    202: { ...paymentViewSchema, description: "Pending: the saga goes on" },
  };
  const settleCodes = [...notFound, "PAYMENTS_PAYMENT_STATE_CONFLICT", ...idempotencyCodes];
  app.post(
    "/v1/payments/:id/capture",
    {
      ...everyFieldBody,
      schema: {
        summary: "Capture an authorized payment, all of it or a part (PY-16)",
        tags,
        security,
        headers: keyedHeaders,
        body: captureBody,
        errorCodes: ["PAYMENTS_PAYMENT_INVALID", "PAYMENTS_CAPTURE_EXCEEDS_AUTHORIZED", ...settleCodes],
        response: settled,
      },
    },
    (request, reply) => settle(deps, request, reply, "capture"),
  );
  app.post(
    "/v1/payments/:id/void",
    {
      schema: {
        summary: "Void an authorized payment: the hold is released",
        tags,
        security,
        headers: keyedHeaders,
        errorCodes: settleCodes,
        response: settled,
      },
    },
    (request, reply) => settle(deps, request, reply, "void"),
  );
}
