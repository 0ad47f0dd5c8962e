/**
 * The gateway's calls to the send service (CH-04, CH-13, CH-27): the gateway holds sockets
 * and nothing else, so deploying the send service drops no socket. Each call carries the
 * user's own JWT (the send service checks it again: a gateway is not trusted more than its
 * users), over infra's OutboundClient with every call bounded at 29 s in total — the managed
 * gateway's integration timeout (CH-13). A failure to get an answer is BACKEND_UNAVAILABLE
 * to the client, who resends with the same clientMsgId (CH-09 makes that safe).
 *
 * @example
 * const backend = new BackendClient({ baseUrl: "http://127.0.0.1:8102" });
 * const sent = await backend.send(token, { chatId: "42", clientMsgId, body: "hi" });
 */
import { OutboundClient } from "@casebook/infra/http/outbound";
import { CasebookError } from "@casebook/kit/errors";
import { GroupCommit } from "@casebook/kit/group-commit";
import {
  MAX_BATCHED_BODY_CHARS,
  MAX_SEND_BATCH_ITEMS,
  SEND_BATCH_PATH,
  type SendBatchItem,
  type SendBatchResult,
} from "../api/send-batch-routes.ts";
import type { UserPresence } from "../domain/presence.ts";
import type { MessageJson } from "../domain/wire.ts";
import { errors } from "../errors.ts";

/** CH-13: the longest a backend call may take, all phases together. */
export const MAX_BACKEND_DEADLINE_MS = 29_000;
/**
 * Batched calls in flight at once from one gateway, each its own lane: while one call's sends
 * are written and routed, the next lane's call is already in the send service (with one lane
 * a gateway waited for each answer before sending anything more). A connection's sends always
 * take the same lane, so they keep their order.
 */
export const SEND_LANES = 2;
/** Full batches that may wait behind each lane's call in flight. */
const BATCHES_WAITING_PER_LANE = 3;
/**
 * Sends in flight from one gateway (in calls, or waiting for one) past which a new one is
 * refused at once: past the pool's sockets a call would otherwise wait in the agent until its
 * connect phase ends (2 s), then fail anyway — a queue bounded only by time, which piles up
 * under overload (see the bench). 256: each lane's call in flight and 3 full batches behind it.
 * At 64 — the lanes' two full calls exactly — under saturation no batch could gather while both
 * were out, so each answer was followed by a call of whatever had arrived since: the send service idled between
 * calls and the gateway refused what a queue of one more batch would have carried.
 */
export const MAX_BACKEND_IN_FLIGHT = SEND_LANES * MAX_SEND_BATCH_ITEMS * (1 + BATCHES_WAITING_PER_LANE);
/** Keep-alive sockets to the send service (the outbound client's default is 8). */
const MAX_BACKEND_SOCKETS = 32;

export interface BackendOptions {
  /** The send service; a function when it is known only later (role all learns its own URL at listen). */
  readonly baseUrl: string | (() => string | undefined);
  readonly deadlineMs?: number;
  /** Default MAX_BACKEND_IN_FLIGHT. */
  readonly maxInFlight?: number;
  /**
   * Text sends go in batches (default true): those that arrive while a batch is in flight
   * leave together in the next one, ≤ MAX_SEND_BATCH_ITEMS per call, each with its own
   * result. False: one call per send (bodies over MAX_BATCHED_BODY_CHARS always are).
   */
  readonly batchSends?: boolean;
}

type Sent = { message: MessageJson; created: boolean };
type SendOutcome = { sent: Sent } | { error: CasebookError };
/** A send waiting for its batch, with the instant its 29 s run out (time spent waiting counts). */
interface QueuedSend {
  readonly item: SendBatchItem;
  readonly dueAtMs: number;
}

export interface HistoryAnswer {
  messages: MessageJson[];
  next: string | null;
}

export class BackendClient {
  readonly #client: OutboundClient;
  readonly #baseUrl: () => string | undefined;
  readonly #maxInFlight: number;
  /** Concurrent sends share one call; one call in flight per lane (kit's group commit). */
  readonly #sendLanes: GroupCommit<QueuedSend, SendOutcome>[];
  readonly #deadlineMs: number;
  #inFlight = 0;

  constructor(options: BackendOptions) {
    this.#maxInFlight = options.maxInFlight ?? MAX_BACKEND_IN_FLIGHT;
    const deadlineMs = Math.min(options.deadlineMs ?? MAX_BACKEND_DEADLINE_MS, MAX_BACKEND_DEADLINE_MS);
    this.#deadlineMs = deadlineMs;
    const { baseUrl } = options;
    this.#baseUrl = typeof baseUrl === "string" ? () => baseUrl : baseUrl;
    this.#client = new OutboundClient({
      addressGuard: "off",
      deadlineMs,
      timeouts: { connectMs: Math.min(2_000, deadlineMs), headersMs: deadlineMs, bodyMs: deadlineMs },
      maxResponseBytes: 8 * 1_024 * 1_024,
      userAgent: "casebook-chat-gateway",
      pool: { maxSocketsPerOrigin: MAX_BACKEND_SOCKETS },
    });
    this.#sendLanes =
      options.batchSends === false
        ? []
        : Array.from(
            { length: SEND_LANES },
            () =>
              new GroupCommit((items: QueuedSend[]) => this.#sendBatch(items), {
                maxBatch: MAX_SEND_BATCH_ITEMS,
                // Never reached: the in-flight bound refuses first (every waiting send is in flight).
                maxPending: this.#maxInFlight,
              }),
          );
  }

  /** `orderKey` (the gateway's connection id): sends with one key go in the order they were made. */
  send(
    token: string,
    input: { chatId: string; clientMsgId: string; body: string; mediaId?: string | undefined },
    orderKey = token,
  ): Promise<Sent> {
    const path = `/v1/conversations/${input.chatId}/messages`;
    const batches = this.#sendLanes[laneOf(orderKey, this.#sendLanes.length)];
    const { mediaId, ...text } = input;
    // Media sends (CH-24) are rare and go on the single route, which resolves the reference.
    if (batches !== undefined && mediaId === undefined && input.body.length <= MAX_BATCHED_BODY_CHARS) {
      // CH-13's bound counts each send of a batch as a call in flight.
      const dueAtMs = performance.now() + this.#deadlineMs;
      return this.#bounded(path, async () => {
        const outcome = await batches.submit({ item: { token, ...text }, dueAtMs });
        if ("error" in outcome) throw outcome.error;
        return outcome.sent;
      });
    }
    const body = JSON.stringify({ clientMsgId: input.clientMsgId, body: input.body, mediaId });
    return this.#call<Sent>(token, "POST", path, body);
  }

  /**
   * One call for many sends; a call that fails as a whole rejects every send of it
   * (GroupCommit). CH-13: the call's deadline is its earliest send's — a send that waited
   * for the batch before it still gets its answer within 29 s of its frame.
   */
  async #sendBatch(queued: QueuedSend[]): Promise<SendOutcome[]> {
    const items = queued.map((q) => q.item);
    const leftMs = Math.min(...queued.map((q) => q.dueAtMs)) - performance.now();
    if (leftMs < 1) {
      const error = errors.create("BACKEND_UNAVAILABLE", { detail: "the sends waited their whole deadline" });
      return queued.map(() => ({ error }));
    }
    const answer = await this.#exchange<{ results?: SendBatchResult[] }>(
      undefined,
      "POST",
      SEND_BATCH_PATH,
      JSON.stringify({ items }),
      Math.ceil(leftMs),
    );
    const results = answer.results ?? [];
    if (results.length !== items.length) {
      throw errors.create("BACKEND_UNAVAILABLE", {
        detail: `the send service answered ${results.length} results for ${items.length} sends`,
      });
    }
    return results.map(outcomeOf);
  }

  edit(token: string, input: { chatId: string; messageId: string; clientMsgId: string; body: string }) {
    const body = JSON.stringify({ clientMsgId: input.clientMsgId, body: input.body });
    return this.#call<{ message: MessageJson; created: boolean }>(
      token,
      "PUT",
      `/v1/conversations/${input.chatId}/messages/${input.messageId}`,
      body,
    );
  }

  delete(token: string, input: { chatId: string; messageId: string }) {
    return this.#call<{ message: MessageJson; created: boolean }>(
      token,
      "DELETE",
      `/v1/conversations/${input.chatId}/messages/${input.messageId}`,
    );
  }

  conversations(token: string) {
    return this.#call<{ conversations: Record<string, unknown>[] }>(token, "GET", "/v1/conversations");
  }

  typing(token: string, input: { chatId: string }) {
    return this.#call<{ reached: number }>(token, "POST", `/v1/conversations/${input.chatId}/typing`, "{}");
  }

  presence(token: string, input: { chatId: string }) {
    return this.#call<{ users: UserPresence[] }>(token, "GET", `/v1/conversations/${input.chatId}/presence`);
  }

  history(token: string, input: { chatId: string; after: string; limit: number }) {
    const query = `after=${input.after}&limit=${input.limit}`;
    return this.#call<HistoryAnswer>(token, "GET", `/v1/conversations/${input.chatId}/messages?${query}`);
  }

  receipt(token: string, input: { chatId: string; kind: "delivered" | "read"; seq: string }) {
    const body = JSON.stringify({ kind: input.kind, seq: input.seq });
    return this.#call<{ moved: boolean }>(token, "POST", `/v1/conversations/${input.chatId}/receipts`, body);
  }

  #call<T>(token: string, method: string, path: string, body?: string): Promise<T> {
    return this.#bounded(path, () => this.#exchange<T>(token, method, path, body));
  }

  async #bounded<T>(path: string, call: () => Promise<T>): Promise<T> {
    if (this.#inFlight >= this.#maxInFlight) {
      // Transient for the client (it resends with the same clientMsgId after a pause).
      throw errors.create("BACKEND_UNAVAILABLE", {
        detail: `the send service has ${this.#inFlight} calls in flight from this gateway; resend after a pause`,
        fields: { path, inFlight: this.#inFlight },
      });
    }
    this.#inFlight++;
    try {
      return await call();
    } finally {
      this.#inFlight--;
    }
  }

  /** `token` undefined: a call whose items carry their own tokens (the send batch). */
  async #exchange<T>(
    token: string | undefined,
    method: string,
    path: string,
    body?: string,
    deadlineMs?: number,
  ): Promise<T> {
    const baseUrl = this.#baseUrl()?.replace(/\/$/, "");
    if (baseUrl === undefined)
      throw errors.create("BACKEND_UNAVAILABLE", { detail: "the send service's URL is not known yet" });
    let response: Awaited<ReturnType<OutboundClient["request"]>>;
    try {
      response = await this.#client.request({
        method,
        url: `${baseUrl}${path}`,
        headers: {
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body }),
        ...(deadlineMs === undefined ? {} : { deadlineMs }),
      });
    } catch (err) {
      throw errors.create("BACKEND_UNAVAILABLE", { cause: err, fields: { path } });
    }
    const json =
      response.body.length > 0 ? (JSON.parse(response.body.toString("utf8")) as Record<string, unknown>) : {};
    if (response.status >= 400) {
      const code = typeof json.code === "string" ? json.code : "BACKEND_UNAVAILABLE";
      const message = typeof json.detail === "string" ? json.detail : String(json.title ?? "backend error");
      // A 503 (the send service closing for a restart, its database away) is "not now": the one
      // code clients retry with the same clientMsgId, whatever the send service's own code was.
      if (response.status === 503)
        throw errors.create("BACKEND_UNAVAILABLE", { detail: `${code}: ${message}`, fields: { path } });
      // Any other problem+json is passed on as it is: its code and message name the problem.
      throw new CasebookError(code, { status: response.status, message }, { fields: fieldsOf(json) });
    }
    return json as T;
  }

  close(): void {
    this.#client.close();
  }
}

/** A stable lane for a key (its last characters' codes; connection ids are random UUIDs). */
function laneOf(key: string, lanes: number): number {
  if (lanes <= 1) return 0;
  let hash = 0;
  for (let i = Math.max(0, key.length - 8); i < key.length; i++) hash = (hash * 31 + key.charCodeAt(i)) >>> 0;
  return hash % lanes;
}

/** One item's result as the single route's answer or error would have been (503: BACKEND_UNAVAILABLE). */
function outcomeOf(result: SendBatchResult): SendOutcome {
  if ("message" in result)
    return { sent: { message: result.message as MessageJson, created: result.created } };
  const { status, code, detail, field } = result as Extract<SendBatchResult, { code: string }>;
  if (status === 503)
    return { error: errors.create("BACKEND_UNAVAILABLE", { detail: `${code}: ${detail}` }) };
  return { error: new CasebookError(code, { status, message: detail }, { fields: field ? { field } : {} }) };
}

function fieldsOf(problem: Record<string, unknown>): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const key of ["field", "chatId", "max"]) if (problem[key] !== undefined) fields[key] = problem[key];
  return fields;
}
