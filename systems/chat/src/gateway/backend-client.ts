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
import type { MessageJson } from "../domain/wire.ts";
import { errors } from "../errors.ts";

/** CH-13: the longest a backend call may take, all phases together. */
export const MAX_BACKEND_DEADLINE_MS = 29_000;
/**
 * Calls in flight from one gateway past which a new one is refused at once: past the pool's
 * sockets a call would otherwise wait in the agent until its connect phase ends (2 s), then
 * fail anyway — a queue bounded only by time, which piles up under overload (see the bench).
 */
export const MAX_BACKEND_IN_FLIGHT = 64;
/** Keep-alive sockets to the send service (the outbound client's default is 8). */
const MAX_BACKEND_SOCKETS = 32;

export interface BackendOptions {
  /** The send service; a function when it is known only later (role all learns its own URL at listen). */
  readonly baseUrl: string | (() => string | undefined);
  readonly deadlineMs?: number;
  /** Default MAX_BACKEND_IN_FLIGHT. */
  readonly maxInFlight?: number;
}

export interface HistoryAnswer {
  messages: MessageJson[];
  next: string | null;
}

export class BackendClient {
  readonly #client: OutboundClient;
  readonly #baseUrl: () => string | undefined;
  readonly #maxInFlight: number;
  #inFlight = 0;

  constructor(options: BackendOptions) {
    this.#maxInFlight = options.maxInFlight ?? MAX_BACKEND_IN_FLIGHT;
    const deadlineMs = Math.min(options.deadlineMs ?? MAX_BACKEND_DEADLINE_MS, MAX_BACKEND_DEADLINE_MS);
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
  }

  send(token: string, input: { chatId: string; clientMsgId: string; body: string }) {
    const body = JSON.stringify({ clientMsgId: input.clientMsgId, body: input.body });
    return this.#call<{ message: MessageJson; created: boolean }>(
      token,
      "POST",
      `/v1/conversations/${input.chatId}/messages`,
      body,
    );
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
    return this.#call<{ users: Record<string, unknown>[] }>(
      token,
      "GET",
      `/v1/conversations/${input.chatId}/presence`,
    );
  }

  history(token: string, input: { chatId: string; after: string; limit: number }) {
    const query = `after=${input.after}&limit=${input.limit}`;
    return this.#call<HistoryAnswer>(token, "GET", `/v1/conversations/${input.chatId}/messages?${query}`);
  }

  receipt(token: string, input: { chatId: string; kind: "delivered" | "read"; seq: string }) {
    const body = JSON.stringify({ kind: input.kind, seq: input.seq });
    return this.#call<{ moved: boolean }>(token, "POST", `/v1/conversations/${input.chatId}/receipts`, body);
  }

  async #call<T>(token: string, method: string, path: string, body?: string): Promise<T> {
    if (this.#inFlight >= this.#maxInFlight) {
      // Transient for the client (it resends with the same clientMsgId after a pause).
      throw errors.create("BACKEND_UNAVAILABLE", {
        detail: `the send service has ${this.#inFlight} calls in flight from this gateway; resend after a pause`,
        fields: { path, inFlight: this.#inFlight },
      });
    }
    this.#inFlight++;
    try {
      return await this.#exchange<T>(token, method, path, body);
    } finally {
      this.#inFlight--;
    }
  }

  async #exchange<T>(token: string, method: string, path: string, body?: string): Promise<T> {
    const baseUrl = this.#baseUrl()?.replace(/\/$/, "");
    if (baseUrl === undefined)
      throw errors.create("BACKEND_UNAVAILABLE", { detail: "the send service's URL is not known yet" });
    let response: Awaited<ReturnType<OutboundClient["request"]>>;
    try {
      response = await this.#client.request({
        method,
        url: `${baseUrl}${path}`,
        headers: {
          authorization: `Bearer ${token}`,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body }),
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

function fieldsOf(problem: Record<string, unknown>): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const key of ["field", "chatId", "max"]) if (problem[key] !== undefined) fields[key] = problem[key];
  return fields;
}
