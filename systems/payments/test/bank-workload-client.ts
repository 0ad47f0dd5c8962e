/**
 * One client of the bank workload: a seeded loop of random operations against the payments
 * services over HTTP (payments with capture, authorize then capture or void, partial refunds)
 * and against the ledger on its own connections (transfers between no-overdraft wallets).
 *
 * Every write carries an idempotency key, and the client behaves as a real one must:
 * - no answer (a SIGKILLed service, a timeout) or a 5xx: the SAME request with the SAME key is
 *   retried on another service, with backoff, a bounded number of times;
 * - 409 in progress: retried after the hint, bounded;
 * - a lost response is also simulated on purpose: with `lostResponseRate` a final answer is
 *   dropped and the request re-sent with its key — the retry must get the same status and body
 *   (PY-13), and a re-sent transfer must come back `replayed` with the same transaction (PY-07).
 * Nothing here asserts: outcomes go to a Tally the test checks once the system has quiesced.
 *
 * @example
 * const client = new BankClient({ name: "c1", world, ledger, pools, tally, random: seededRandom("c1") });
 * await client.run({ untilMs: Date.now() + 10_000, maxOps: 1_000 });
 */
import { setTimeout as sleep } from "node:timers/promises";
import { int, pick, type RandomSource } from "@casebook/kit/random";
import { ledgerErrors } from "../src/errors.ts";
import type { LedgerRepository } from "../src/store/ledger-repository.ts";
import type { Tally } from "./bank-workload-tally.ts";

export interface MerchantKey {
  readonly id: string;
  readonly apiKey: string;
}

export interface WorkloadWorld {
  readonly merchants: readonly MerchantKey[];
  readonly currencies: readonly string[];
  /** No-overdraft wallet accounts per currency, funded before the run. */
  readonly wallets: Readonly<Record<string, readonly bigint[]>>;
  /** Base URLs of the services up right now. */
  live(): string[];
}

/** A payment some client created, as the clients know it. */
export interface PaymentRef {
  readonly merchant: MerchantKey;
  readonly id: string;
  readonly amountMinor: bigint;
  /** Captured and not yet refunded, as far as the clients know (refunds in flight counted out). */
  remainingMinor: bigint;
}

/** Payments the clients share, so two clients can race on one (a refund against a refund). */
export class PaymentPools {
  readonly captured: PaymentRef[] = [];
  readonly authorized: PaymentRef[] = [];
  /** Answered 202: looked up later, then moved to the pool their final state belongs to. */
  readonly unsettled: PaymentRef[] = [];
}

/** Bound on each pool: older entries drop out (the service keeps them; the clients forget). */
const MAX_POOL = 400;
/** Tries of one request (the first included) before the client gives up on it. */
const MAX_TRIES = 10;
const RETRY_BASE_MS = 40;
/** ~3.6 s of retries in all: past a crashed owner's saga lease (2.5 s), which ends "in progress". */
const RETRY_CAP_MS = 600;
/** One HTTP exchange; the service answers 202 after its inline drive (1 s) at the latest. */
const REQUEST_TIMEOUT_MS = 5_000;
const TRANSFER_MAX_MINOR = 3_000;
/** Answers the service stores under the key: a retry must get them again, byte for byte. */
const STORED_STATUSES = new Set([200, 201]);

interface Answer {
  status: number;
  text: string;
  body: Record<string, unknown>;
}

interface Request {
  merchant: MerchantKey;
  method: "GET" | "POST";
  path: string;
  body?: unknown;
  key?: string;
}

export interface BankClientOptions {
  name: string;
  world: WorkloadWorld;
  ledger: LedgerRepository;
  pools: PaymentPools;
  tally: Tally;
  random: RandomSource;
  /** Share of final answers dropped on purpose and re-sent with the same key. */
  lostResponseRate: number;
}

function bounded<T>(pool: T[], item: T): void {
  pool.push(item);
  if (pool.length > MAX_POOL) pool.shift();
}

function takeRandom<T>(random: RandomSource, pool: T[]): T | undefined {
  if (pool.length === 0) return undefined;
  return pool.splice(int(random, pool.length), 1)[0];
}

export class BankClient {
  readonly #o: BankClientOptions;
  #sequence = 0;

  constructor(options: BankClientOptions) {
    this.#o = options;
  }

  /**
   * Runs operations back to back until `untilMs` (wall clock) and `enough()`, or `maxOps`, or
   * `hardStopMs`: on a loaded host the faults' window holds fewer operations, so the load goes on
   * (faults over) until the checks have something to count.
   */
  async run(limits: {
    untilMs: number;
    hardStopMs: number;
    maxOps: number;
    enough(): boolean;
  }): Promise<void> {
    const going = () => {
      const now = Date.now();
      return now < limits.untilMs || (now < limits.hardStopMs && !limits.enough());
    };
    for (let op = 0; op < limits.maxOps && going(); op++) {
      try {
        await this.#step();
      } catch (error) {
        this.#o.tally.unexpected(`${this.#o.name} op threw: ${String(error)}`);
      }
    }
  }

  #key(kind: string): string {
    this.#sequence += 1;
    return `${this.#o.name}-${kind}${this.#sequence}`;
  }

  async #step(): Promise<void> {
    const { pools, random } = this.#o;
    const roll = random.next();
    if (roll < 0.3) return this.#transfer();
    if (roll < 0.55) return this.#pay(true);
    if (roll < 0.67) return this.#pay(false);
    if (roll < 0.72 && pools.unsettled.length > 0) return this.#followUp();
    if (roll < 0.82 && pools.authorized.length > 0) return this.#settle();
    if (pools.captured.length > 0) return this.#refund();
    return this.#pay(true);
  }

  async #pay(capture: boolean): Promise<void> {
    const { world, random, tally, pools } = this.#o;
    const merchant = pick(random, world.merchants);
    const amountMinor = BigInt(100 + int(random, 19_900));
    // 5 % of cards always decline (the simulator's sandbox token); the rest decline at its rate.
    const cardToken = random.next() < 0.05 ? "tok_decline_bank" : `tok_visa_${int(random, 10_000)}`;
    const body = {
      amountMinor: String(amountMinor),
      currency: pick(random, world.currencies),
      cardToken,
      capture,
    };
    const answer = await this.#send({
      merchant,
      method: "POST",
      path: "/v1/payments",
      body,
      key: this.#key("p"),
    });
    if (answer === undefined) return tally.add("payment.gave-up");
    if (answer.status !== 201 && answer.status !== 202) return this.#unexpected("POST /v1/payments", answer);
    const ref: PaymentRef = {
      merchant,
      id: String(answer.body.id),
      amountMinor,
      remainingMinor: amountMinor,
    };
    const status = answer.status === 202 ? "pending" : String(answer.body.status);
    tally.add(`payment.${status}`);
    this.#file(ref, status);
    if (status === "pending") bounded(pools.unsettled, ref);
  }

  /** Puts a payment in the pool of its state; `capturedMinor` when a partial capture left less. */
  #file(ref: PaymentRef, status: string, capturedMinor?: bigint): void {
    const { pools } = this.#o;
    if (status === "captured")
      bounded(pools.captured, { ...ref, remainingMinor: capturedMinor ?? ref.amountMinor });
    else if (status === "authorized") bounded(pools.authorized, ref);
  }

  async #followUp(): Promise<void> {
    const ref = takeRandom(this.#o.random, this.#o.pools.unsettled);
    if (ref === undefined) return;
    const answer = await this.#send({
      merchant: ref.merchant,
      method: "GET",
      path: `/v1/payments/${ref.id}`,
    });
    if (answer === undefined || answer.status !== 200) {
      if (answer !== undefined) this.#unexpected("GET /v1/payments/{id}", answer);
      return;
    }
    const status = String(answer.body.status);
    this.#o.tally.add("payment.followed-up");
    if (status === "pending") bounded(this.#o.pools.unsettled, ref);
    else this.#file(ref, status, BigInt(String(answer.body.capturedMinor ?? "0")));
  }

  async #settle(): Promise<void> {
    const { random, tally, pools } = this.#o;
    const ref = takeRandom(random, pools.authorized);
    if (ref === undefined) return;
    const roll = random.next();
    const action = roll < 0.6 ? "capture" : "void";
    // Half the captures take a part (PY-16): the rest of the hold is released.
    const part = roll < 0.3 ? BigInt(1 + int(random, Number(ref.amountMinor))) : undefined;
    const body = part === undefined ? {} : { amountMinor: String(part) };
    const path = `/v1/payments/${ref.id}/${action}`;
    const answer = await this.#send({
      merchant: ref.merchant,
      method: "POST",
      path,
      body,
      key: this.#key("s"),
    });
    if (answer === undefined) return tally.add(`${action}.gave-up`);
    if (answer.status === 409) return tally.add(`${action}.conflict`);
    if (answer.status === 202) {
      tally.add(`${action}.pending`);
      return bounded(pools.unsettled, ref);
    }
    if (answer.status !== 200) return this.#unexpected(`POST ${action}`, answer);
    const status = String(answer.body.status);
    tally.add(`${action}.${status}`);
    this.#file(ref, status, BigInt(String(answer.body.capturedMinor ?? "0")));
  }

  async #refund(): Promise<void> {
    const { random, tally, pools } = this.#o;
    const ref = pick(random, pools.captured);
    if (ref.remainingMinor <= 0n) {
      pools.captured.splice(pools.captured.indexOf(ref), 1);
      return;
    }
    // Counted out before the call: a concurrent refund by another client sees less to refund.
    const amountMinor = BigInt(1 + int(random, Number(ref.remainingMinor)));
    ref.remainingMinor -= amountMinor;
    const path = `/v1/payments/${ref.id}/refunds`;
    const body = { amountMinor: String(amountMinor) };
    const answer = await this.#send({
      merchant: ref.merchant,
      method: "POST",
      path,
      body,
      key: this.#key("r"),
    });
    if (answer === undefined) return tally.add("refund.gave-up");
    if (answer.status === 201 || answer.status === 202) {
      return tally.add(answer.status === 202 ? "refund.pending" : `refund.${String(answer.body.status)}`);
    }
    if (answer.status === 422 || answer.status === 409) return tally.add(`refund.refused-${answer.status}`);
    this.#unexpected("POST refunds", answer);
  }

  /** PY-09 / PY-14: a transfer between two no-overdraft wallets; sometimes re-sent with its key. */
  async #transfer(): Promise<void> {
    const { world, random, tally, ledger } = this.#o;
    const currency = pick(random, world.currencies);
    const wallets = world.wallets[currency]!;
    const from = pick(random, wallets);
    const to = pick(
      random,
      wallets.filter((w) => w !== from),
    );
    const request = {
      idemKey: this.#key("t"),
      from,
      to,
      currency,
      amount: BigInt(1 + int(random, TRANSFER_MAX_MINOR)),
    };
    try {
      const first = await ledger.transfer(request);
      tally.add("transfer.ok");
      if (random.next() >= this.#o.lostResponseRate) return;
      const again = await ledger.transfer(request);
      tally.add("transfer.re-sent");
      if (!again.replayed || again.transaction.id !== first.transaction.id) {
        tally.unexpected(
          `transfer ${request.idemKey} re-sent: replayed=${again.replayed}, new id ${again.transaction.id}`,
        );
      }
    } catch (error) {
      if (ledgerErrors.is(error, "LEDGER_INSUFFICIENT_FUNDS"))
        return tally.add("transfer.insufficient-funds");
      // A deadlock (40P01) or any other failure lands here: the test requires none (PY-09).
      tally.unexpected(`transfer ${request.idemKey}: ${String(error)}`);
    }
  }

  #unexpected(what: string, answer: Answer): void {
    this.#o.tally.unexpected(`${this.#o.name} ${what} → ${answer.status} ${answer.text.slice(0, 300)}`);
  }

  /**
   * Sends `request` until a final answer: another service after no answer or a 5xx, a pause after
   * 409 in progress, and once, by chance, a final answer thrown away and asked for again (PY-13).
   * Undefined when every try went unanswered.
   */
  async #send(request: Request): Promise<Answer | undefined> {
    const { tally, random } = this.#o;
    let first: Answer | undefined;
    let last: Answer | undefined;
    for (let attempt = 1; attempt <= MAX_TRIES; attempt++) {
      if (attempt > 1) await sleep(Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** (attempt - 2)));
      const answer = await this.#exchange(request);
      if (answer === undefined || answer.status >= 500) {
        tally.add(answer === undefined ? "http.no-answer" : "http.5xx");
        last = answer ?? last;
        continue;
      }
      last = answer;
      const code = String(answer.body.code ?? "");
      if (answer.status === 409 && code.startsWith("PAYMENTS_IDEMPOTENCY_")) {
        tally.add("http.in-progress");
        continue;
      }
      if (first !== undefined) return this.#compareReplay(request, first, answer);
      const canDrop = request.key !== undefined && STORED_STATUSES.has(answer.status);
      if (!canDrop || random.next() >= this.#o.lostResponseRate) return answer;
      tally.add("http.lost-on-purpose");
      first = answer;
    }
    // Still "in progress" (a crashed owner's claim lasts the idempotency lease) or never answered:
    // the client gives up on this request, as a real one would; the service finishes it alone.
    if (last !== undefined && last.status >= 500)
      this.#unexpected(`${request.method} ${request.path} after ${MAX_TRIES} tries`, last);
    else tally.add(last === undefined ? "http.gave-up-unanswered" : "http.gave-up-in-progress");
    return first;
  }

  #compareReplay(request: Request, first: Answer, again: Answer): Answer {
    this.#o.tally.add("replay.checked");
    if (again.status !== first.status || again.text !== first.text) {
      this.#o.tally.replayMismatch(
        `${request.method} ${request.path} key ${request.key}: first ${first.status} ${first.text.slice(0, 200)}; again ${again.status} ${again.text.slice(0, 200)}`,
      );
    }
    return first;
  }

  /** One HTTP exchange with a random live service; undefined when no answer came. */
  async #exchange(request: Request): Promise<Answer | undefined> {
    const live = this.#o.world.live();
    if (live.length === 0) return undefined;
    const headers: Record<string, string> = { authorization: `Bearer ${request.merchant.apiKey}` };
    if (request.key !== undefined) headers["idempotency-key"] = request.key;
    if (request.body !== undefined) headers["content-type"] = "application/json";
    try {
      const res = await fetch(`${pick(this.#o.random, live)}${request.path}`, {
        method: request.method,
        headers,
        ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await res.text();
      const body = res.headers.get("content-type")?.includes("json") && text !== "" ? JSON.parse(text) : {};
      return { status: res.status, text, body: body as Record<string, unknown> };
    } catch {
      return undefined;
    }
  }
}
