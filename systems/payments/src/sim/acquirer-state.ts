/**
 * The acquirer simulator's pure model: authorizations by id and by idempotency
 * key, captures, voids, partial refunds and the log of settled operations. No I/O:
 * time comes from an injected Clock and every random choice (ids, declines) from
 * an injected RandomSource, so a test replays the same story on every run.
 *
 * The rules a real acquirer enforces, and the ones the payments service must live with:
 * - one idempotency key = one authorization, ever (the SAME outcome on every retry,
 *   `attempts` counts the calls so a test can prove "one charge", PY-06/PY-13);
 * - the same key with other parameters is refused, never silently re-used;
 * - capture ≤ authorized, once; void only before capture; refunds total ≤ captured.
 *
 * @example
 * const state = new AcquirerState({ clock: new ManualClock(0), rng: seededRandom(1), maxPayments: 1_000 });
 * const { authorization } = state.authorize({ idempotencyKey: "k1", merchantId: "m1",
 *   amountMinor: 5000n, currency: "BRL", cardToken: "tok_visa" }, { declineRate: 0 });
 * state.capture(authorization.id, 5000n);
 * state.refund(authorization.id, { idempotencyKey: "r1", amountMinor: 1000n });
 */
import { strict as assert } from "node:assert";
import type { Clock } from "@casebook/kit/clock";
import type { ErrorOptions } from "@casebook/kit/errors";
import { int, pick, type RandomSource } from "@casebook/kit/random";
import { type AcquirerErrorCode, acquirerErrors } from "./acquirer-errors.ts";
import type { InjectedDifference, SettledOperation } from "./settlement-file.ts";

export type { SettledOperation };

export type AuthorizationOutcome = "approved" | "declined";
export type AuthorizationStatus = "approved" | "declined" | "captured" | "voided";

/** Card tokens starting with this always decline: a test card, like a real sandbox's. */
export const DECLINE_TOKEN_PREFIX = "tok_decline";
export const DECLINE_REASONS = ["insufficient_funds", "do_not_honor", "card_expired"] as const;

export interface AuthorizeInput {
  readonly idempotencyKey: string;
  readonly merchantId: string;
  readonly amountMinor: bigint;
  readonly currency: string;
  readonly cardToken: string;
}

export interface Refund {
  readonly id: string;
  readonly idempotencyKey: string;
  readonly authorizationId: string;
  readonly amountMinor: bigint;
  readonly currency: string;
  readonly refundedAtMs: number;
  /** Calls made with this refund key, the first included. */
  attempts: number;
}

export interface Authorization {
  readonly id: string;
  readonly idempotencyKey: string;
  readonly merchantId: string;
  readonly amountMinor: bigint;
  readonly currency: string;
  readonly cardToken: string;
  readonly outcome: AuthorizationOutcome;
  readonly declineReason: string | undefined;
  readonly authorizedAtMs: number;
  status: AuthorizationStatus;
  capturedMinor: bigint;
  capturedAtMs: number | undefined;
  voidedAtMs: number | undefined;
  refundedMinor: bigint;
  readonly refunds: Refund[];
  /** Authorization calls made with this idempotency key, the first included. */
  attempts: number;
}

export interface AcquirerStats {
  authorizations: number;
  approved: number;
  declined: number;
  authorizationAttempts: number;
  captures: number;
  voids: number;
  refunds: number;
  refundAttempts: number;
  rateLimited: number;
}

export interface AcquirerStateOptions {
  clock: Clock;
  rng: RandomSource;
  /** Bound on authorizations held; past it authorize answers ACQUIRER_CAPACITY_REACHED (never evicts: that would break idempotency). */
  maxPayments: number;
  /** Bound on refunds per authorization. */
  maxRefundsPerAuthorization?: number;
  /** Bound on days holding injected settlement differences. */
  maxDifferenceDays?: number;
}

export interface AuthorizeOptions {
  /** Probability in [0, 1] that a new authorization is declined. */
  declineRate: number;
  /** Calls per merchant per second; 0 = unlimited. */
  merchantRatePerS?: number;
}

export const defaultMaxRefundsPerAuthorization = 50;
export const defaultMaxDifferenceDays = 366;
/** Random ids collide with probability ~n²/2^65; a few redraws make a clash practically impossible. */
const maxIdDraws = 8;

function fieldError(
  code: AcquirerErrorCode,
  field: string,
  message: string,
  fields: Record<string, unknown> = {},
) {
  const options: ErrorOptions = { fields: { ...fields, errors: [{ field, message }] } };
  return acquirerErrors.create(code, options);
}

function sameRequest(a: Authorization, b: AuthorizeInput): string | undefined {
  if (a.merchantId !== b.merchantId) return "/body/merchantId";
  if (a.amountMinor !== b.amountMinor) return "/body/amountMinor";
  if (a.currency !== b.currency) return "/body/currency";
  if (a.cardToken !== b.cardToken) return "/body/cardToken";
  return undefined;
}

export class AcquirerState {
  readonly #clock: Clock;
  readonly #rng: RandomSource;
  readonly #maxPayments: number;
  readonly #maxRefunds: number;
  readonly #maxDifferenceDays: number;
  #byId = new Map<string, Authorization>();
  #byKey = new Map<string, Authorization>();
  #refundsByKey = new Map<string, Refund>();
  #operations: SettledOperation[] = [];
  #differences = new Map<string, InjectedDifference[]>();
  #rateWindow = { second: -1, calls: new Map<string, number>() };
  #stats: AcquirerStats = AcquirerState.#emptyStats();

  constructor(options: AcquirerStateOptions) {
    assert(Number.isSafeInteger(options.maxPayments) && options.maxPayments >= 1, "maxPayments >= 1");
    this.#clock = options.clock;
    this.#rng = options.rng;
    this.#maxPayments = options.maxPayments;
    this.#maxRefunds = options.maxRefundsPerAuthorization ?? defaultMaxRefundsPerAuthorization;
    this.#maxDifferenceDays = options.maxDifferenceDays ?? defaultMaxDifferenceDays;
  }

  static #emptyStats(): AcquirerStats {
    return {
      authorizations: 0,
      approved: 0,
      declined: 0,
      authorizationAttempts: 0,
      captures: 0,
      voids: 0,
      refunds: 0,
      refundAttempts: 0,
      rateLimited: 0,
    };
  }

  /** Forgets everything: authorizations, refunds, operations, injected differences, counters. */
  reset(): void {
    this.#byId = new Map();
    this.#byKey = new Map();
    this.#refundsByKey = new Map();
    this.#operations = [];
    this.#differences = new Map();
    this.#rateWindow = { second: -1, calls: new Map() };
    this.#stats = AcquirerState.#emptyStats();
  }

  /**
   * Authorizes once per idempotency key. A repeated key with the same parameters
   * returns the stored authorization (`replayed: true`) and only counts the attempt;
   * with other parameters it is refused (ACQUIRER_IDEMPOTENCY_MISMATCH, 422).
   */
  authorize(
    input: AuthorizeInput,
    options: AuthorizeOptions,
  ): { authorization: Authorization; replayed: boolean } {
    this.#takeRateToken(input.merchantId, options.merchantRatePerS ?? 0);
    const existing = this.#byKey.get(input.idempotencyKey);
    if (existing) {
      const field = sameRequest(existing, input);
      if (field) {
        throw fieldError(
          "ACQUIRER_IDEMPOTENCY_MISMATCH",
          field,
          "differs from the first call with this key",
          {
            idempotencyKey: input.idempotencyKey,
          },
        );
      }
      existing.attempts += 1;
      this.#stats.authorizationAttempts += 1;
      return { authorization: existing, replayed: true };
    }
    if (this.#byId.size >= this.#maxPayments) {
      throw acquirerErrors.create("ACQUIRER_CAPACITY_REACHED", {
        fields: { maxPayments: this.#maxPayments },
      });
    }
    const authorization = this.#newAuthorization(input, this.#decide(input, options.declineRate));
    this.#byId.set(authorization.id, authorization);
    this.#byKey.set(authorization.idempotencyKey, authorization);
    this.#stats.authorizations += 1;
    this.#stats.authorizationAttempts += 1;
    this.#stats[authorization.outcome] += 1;
    return { authorization, replayed: false };
  }

  #decide(input: AuthorizeInput, declineRate: number): { outcome: AuthorizationOutcome; reason?: string } {
    assert(declineRate >= 0 && declineRate <= 1, "declineRate in [0, 1]");
    if (input.cardToken.startsWith(DECLINE_TOKEN_PREFIX))
      return { outcome: "declined", reason: "do_not_honor" };
    // Draw only when the knob is on, so turning on declines does not shift other random choices' sequence.
    if (declineRate > 0 && this.#rng.next() < declineRate) {
      return { outcome: "declined", reason: pick(this.#rng, DECLINE_REASONS) };
    }
    return { outcome: "approved" };
  }

  #newAuthorization(input: AuthorizeInput, decision: { outcome: AuthorizationOutcome; reason?: string }) {
    const authorization: Authorization = {
      id: this.#newId("auth_", this.#byId),
      idempotencyKey: input.idempotencyKey,
      merchantId: input.merchantId,
      amountMinor: input.amountMinor,
      currency: input.currency,
      cardToken: input.cardToken,
      outcome: decision.outcome,
      declineReason: decision.reason,
      authorizedAtMs: this.#clock.nowMs(),
      status: decision.outcome,
      capturedMinor: 0n,
      capturedAtMs: undefined,
      voidedAtMs: undefined,
      refundedMinor: 0n,
      refunds: [],
      attempts: 1,
    };
    return authorization;
  }

  #newId(prefix: string, taken: ReadonlyMap<string, unknown>): string {
    for (let draw = 0; draw < maxIdDraws; draw++) {
      const hex = [int(this.#rng, 2 ** 32), int(this.#rng, 2 ** 32)]
        .map((word) => word.toString(16).padStart(8, "0"))
        .join("");
      const id = prefix + hex;
      if (!taken.has(id)) return id;
    }
    throw new Error(`no free ${prefix} id after ${maxIdDraws} draws: the random source is broken`);
  }

  /** Fixed one-second window per merchant: enough to make a caller's own rate limiter (PY-12) observable. */
  #takeRateToken(merchantId: string, ratePerS: number): void {
    if (ratePerS <= 0) return;
    const nowMs = this.#clock.nowMs();
    const second = Math.floor(nowMs / 1000);
    if (second !== this.#rateWindow.second) this.#rateWindow = { second, calls: new Map() };
    const calls = this.#rateWindow.calls.get(merchantId) ?? 0;
    if (calls >= ratePerS) {
      this.#stats.rateLimited += 1;
      const retryAfterMs = (second + 1) * 1000 - nowMs;
      throw acquirerErrors.create("ACQUIRER_RATE_LIMITED", {
        fields: { merchantId, ratePerS, retryAfterMs },
      });
    }
    this.#rateWindow.calls.set(merchantId, calls + 1);
  }

  /** The authorization, or ACQUIRER_AUTHORIZATION_NOT_FOUND. */
  get(authorizationId: string): Authorization {
    const authorization = this.#byId.get(authorizationId);
    if (!authorization) {
      throw acquirerErrors.create("ACQUIRER_AUTHORIZATION_NOT_FOUND", { fields: { authorizationId } });
    }
    return authorization;
  }

  /** The authorization made with this idempotency key (PY-06: the status query after a timeout). */
  getByKey(idempotencyKey: string): Authorization {
    const authorization = this.#byKey.get(idempotencyKey);
    if (!authorization) {
      throw acquirerErrors.create("ACQUIRER_AUTHORIZATION_NOT_FOUND", { fields: { idempotencyKey } });
    }
    return authorization;
  }

  /** The refund made with this refund key: how a caller resolves a refund whose answer it lost (PY-15). */
  getRefundByKey(idempotencyKey: string): Refund {
    const refund = this.#refundsByKey.get(idempotencyKey);
    if (!refund) throw acquirerErrors.create("ACQUIRER_REFUND_NOT_FOUND", { fields: { idempotencyKey } });
    return refund;
  }

  #assertUsable(authorization: Authorization): void {
    const fields = { authorizationId: authorization.id };
    if (authorization.status === "declined")
      throw acquirerErrors.create("ACQUIRER_AUTHORIZATION_DECLINED", { fields });
    if (authorization.status === "voided")
      throw acquirerErrors.create("ACQUIRER_AUTHORIZATION_VOIDED", { fields });
  }

  /**
   * Captures `amountMinor` (default: all of it) once. Repeating the same capture is
   * answered with the stored result (`replayed: true`); another amount is refused.
   */
  capture(
    authorizationId: string,
    amountMinor?: bigint,
  ): { authorization: Authorization; replayed: boolean } {
    const authorization = this.get(authorizationId);
    this.#assertUsable(authorization);
    const amount = amountMinor ?? authorization.amountMinor;
    if (authorization.status === "captured") {
      if (amount === authorization.capturedMinor) return { authorization, replayed: true };
      throw fieldError(
        "ACQUIRER_ALREADY_CAPTURED",
        "/body/amountMinor",
        "differs from the capture already made",
        {
          authorizationId,
          capturedMinor: String(authorization.capturedMinor),
        },
      );
    }
    if (amount > authorization.amountMinor) {
      throw fieldError(
        "ACQUIRER_CAPTURE_EXCEEDS_AUTHORIZED",
        "/body/amountMinor",
        "is larger than authorized",
        {
          authorizationId,
          authorizedMinor: String(authorization.amountMinor),
        },
      );
    }
    assert(amount > 0n, "capture amount > 0 (the schema refuses 0)");
    authorization.status = "captured";
    authorization.capturedMinor = amount;
    authorization.capturedAtMs = this.#clock.nowMs();
    this.#stats.captures += 1;
    this.#record("capture", authorization.idempotencyKey, authorization, amount, authorization.capturedAtMs);
    return { authorization, replayed: false };
  }

  /** Releases an approved, uncaptured authorization; voiding twice answers the stored result. */
  void(authorizationId: string): { authorization: Authorization; replayed: boolean } {
    const authorization = this.get(authorizationId);
    if (authorization.status === "voided") return { authorization, replayed: true };
    this.#assertUsable(authorization);
    if (authorization.status === "captured") {
      throw acquirerErrors.create("ACQUIRER_ALREADY_CAPTURED", { fields: { authorizationId } });
    }
    authorization.status = "voided";
    authorization.voidedAtMs = this.#clock.nowMs();
    this.#stats.voids += 1;
    return { authorization, replayed: false };
  }

  /** A partial or full refund, once per refund key; refunds never total more than the capture. */
  refund(
    authorizationId: string,
    input: { idempotencyKey: string; amountMinor: bigint },
  ): { refund: Refund; authorization: Authorization; replayed: boolean } {
    const authorization = this.get(authorizationId);
    const existing = this.#refundsByKey.get(input.idempotencyKey);
    if (existing) return this.#replayRefund(existing, authorization, input.amountMinor);
    this.#assertUsable(authorization);
    if (authorization.status !== "captured") {
      throw acquirerErrors.create("ACQUIRER_NOT_CAPTURED", { fields: { authorizationId } });
    }
    if (authorization.refunds.length >= this.#maxRefunds) {
      throw acquirerErrors.create("ACQUIRER_TOO_MANY_REFUNDS", {
        fields: { authorizationId, maxRefunds: this.#maxRefunds },
      });
    }
    const refundableMinor = authorization.capturedMinor - authorization.refundedMinor;
    if (input.amountMinor > refundableMinor) {
      throw fieldError(
        "ACQUIRER_REFUND_EXCEEDS_CAPTURED",
        "/body/amountMinor",
        "is larger than what is left",
        {
          authorizationId,
          refundableMinor: String(refundableMinor),
        },
      );
    }
    const refund: Refund = {
      id: this.#newId("rfnd_", this.#refundsByKey),
      idempotencyKey: input.idempotencyKey,
      authorizationId,
      amountMinor: input.amountMinor,
      currency: authorization.currency,
      refundedAtMs: this.#clock.nowMs(),
      attempts: 1,
    };
    authorization.refunds.push(refund);
    authorization.refundedMinor += refund.amountMinor;
    assert(authorization.refundedMinor <= authorization.capturedMinor, "refunds never exceed the capture");
    this.#refundsByKey.set(refund.idempotencyKey, refund);
    this.#stats.refunds += 1;
    this.#stats.refundAttempts += 1;
    this.#record("refund", refund.idempotencyKey, authorization, refund.amountMinor, refund.refundedAtMs);
    return { refund, authorization, replayed: false };
  }

  #replayRefund(existing: Refund, authorization: Authorization, amountMinor: bigint) {
    const field =
      existing.authorizationId !== authorization.id
        ? "/params/id"
        : existing.amountMinor !== amountMinor
          ? "/body/amountMinor"
          : undefined;
    if (field) {
      throw fieldError(
        "ACQUIRER_IDEMPOTENCY_MISMATCH",
        field,
        "differs from the first refund with this key",
        {
          idempotencyKey: existing.idempotencyKey,
        },
      );
    }
    existing.attempts += 1;
    this.#stats.refundAttempts += 1;
    return { refund: existing, authorization, replayed: true };
  }

  #record(
    operation: SettledOperation["operation"],
    idempotencyKey: string,
    authorization: Authorization,
    amountMinor: bigint,
    atMs: number,
  ): void {
    const { id: authorizationId, currency } = authorization;
    this.#operations.push({ operation, idempotencyKey, authorizationId, amountMinor, currency, atMs });
  }

  /** Captures and refunds recorded in [startMs, endMs), in the order they happened. */
  operationsBetween(startMs: number, endMs: number): SettledOperation[] {
    return this.#operations.filter((op) => op.atMs >= startMs && op.atMs < endMs);
  }

  /** Records the differences injected into a day's settlement file (replacing earlier ones). */
  setDifferences(date: string, differences: readonly InjectedDifference[]): void {
    if (!this.#differences.has(date) && this.#differences.size >= this.#maxDifferenceDays) {
      // Oldest day first: Map iteration follows insertion order.
      const oldest = this.#differences.keys().next().value;
      if (oldest !== undefined) this.#differences.delete(oldest);
    }
    this.#differences.set(date, [...differences]);
  }

  /** The differences injected into a day's file; empty when none were. */
  differences(date: string): readonly InjectedDifference[] {
    return this.#differences.get(date) ?? [];
  }

  stats(): AcquirerStats {
    return { ...this.#stats };
  }

  /** The random source, shared with the settlement file's choices so one seed drives the whole run. */
  get rng(): RandomSource {
    return this.#rng;
  }

  get clock(): Clock {
    return this.#clock;
  }
}
