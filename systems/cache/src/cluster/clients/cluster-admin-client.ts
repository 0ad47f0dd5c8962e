/**
 * A minimal RESP2 client for the cluster tools (the launcher and the resharding tool,
 * the jobs redis-cli --cluster does): pipelined calls on one connection, replies parsed
 * incrementally, a timeout per call. Not a general client library — no reconnects, no
 * redirects; tools talk to each node directly and want its own answer.
 *
 * @example
 * const node = await AdminClient.connect("127.0.0.1", 7000, { timeoutMs: 2_000 });
 * await node.call("CLUSTER", "MYID");           // "e7d1…"
 * await node.raw("GET", "k");                    // a ReplyError instead of a rejection on -ERR
 * node.close();
 */
import { connect, type Socket } from "node:net";
import { clusterErrors } from "../../errors.ts";
import { encodeFrame } from "../api/cluster-bus-link.ts";

export class ReplyError {
  readonly message: string;
  constructor(message: string) {
    this.message = message;
  }
}

export type Reply = string | number | null | ReplyError | Reply[];

interface Parsed {
  readonly reply: Reply;
  readonly end: number;
}

/** Bound on nested array depth in a reply (CLUSTER SLOTS nests 3). */
const MAX_DEPTH = 8;

function lineEnd(buf: Buffer, from: number): number {
  const end = buf.indexOf("\r\n", from, "latin1");
  return end;
}

/** One complete reply at `pos`, or undefined when more bytes are needed. */
export function parseReply(buf: Buffer, pos: number, depth = 0): Parsed | undefined {
  if (pos >= buf.length) return undefined;
  if (depth > MAX_DEPTH) throw new Error("reply nested too deep");
  const end = lineEnd(buf, pos);
  if (end < 0) return undefined;
  const type = String.fromCharCode(buf[pos]!);
  const line = buf.toString("latin1", pos + 1, end);
  const next = end + 2;
  switch (type) {
    case "+":
      return { reply: line, end: next };
    case "-":
      return { reply: new ReplyError(line), end: next };
    case ":":
      return { reply: Number(line), end: next };
    case "$": {
      const length = Number(line);
      if (length < 0) return { reply: null, end: next };
      if (buf.length < next + length + 2) return undefined;
      return { reply: buf.toString("latin1", next, next + length), end: next + length + 2 };
    }
    case "*": {
      const count = Number(line);
      if (count < 0) return { reply: null, end: next };
      const items: Reply[] = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buf, at, depth + 1);
        if (item === undefined) return undefined;
        items.push(item.reply);
        at = item.end;
      }
      return { reply: items, end: at };
    }
    default:
      throw new Error(`unexpected reply type ${JSON.stringify(type)}`);
  }
}

interface Waiter {
  resolve(reply: Reply): void;
  reject(error: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

export interface AdminClientOptions {
  /** Bound on connecting and on each call. */
  readonly timeoutMs: number;
  /** Sent as AUTH right after connecting (a node with requirepass or ACL users). */
  readonly auth?: { readonly user?: string; readonly password: string };
}

export class AdminClient {
  readonly host: string;
  readonly port: number;
  readonly #socket: Socket;
  readonly #timeoutMs: number;
  readonly #waiting: Waiter[] = [];
  #buf: Buffer = Buffer.alloc(0);
  #failure: Error | undefined;

  private constructor(socket: Socket, host: string, port: number, options: AdminClientOptions) {
    this.#socket = socket;
    this.host = host;
    this.port = port;
    this.#timeoutMs = options.timeoutMs;
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    socket.on("error", (error) => this.#fail(error));
    socket.on("close", () => this.#fail(new Error(`connection to ${host}:${port} closed`)));
  }

  static async connect(host: string, port: number, options: AdminClientOptions): Promise<AdminClient> {
    const client = await AdminClient.#open(host, port, options);
    if (options.auth === undefined) return client;
    const { user, password } = options.auth;
    try {
      await client.call("AUTH", ...(user === undefined ? [] : [user]), password);
    } catch (error) {
      client.close();
      throw error;
    }
    return client;
  }

  static #open(host: string, port: number, options: AdminClientOptions): Promise<AdminClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port, noDelay: true });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(adminFailure(`${host}:${port}`, `no connection within ${options.timeoutMs} ms`));
      }, options.timeoutMs);
      socket.once("error", (error) => {
        clearTimeout(timer);
        reject(adminFailure(`${host}:${port}`, error.message, error));
      });
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.removeAllListeners("error");
        resolve(new AdminClient(socket, host, port, options));
      });
    });
  }

  /** Sends a command; resolves its reply, with an error reply as a ReplyError value. */
  raw(...args: Array<string | number>): Promise<Reply> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#fail(
          adminFailure(`${this.host}:${this.port}`, `${args[0]} got no reply within ${this.#timeoutMs} ms`),
        );
      }, this.#timeoutMs);
      this.#waiting.push({ resolve, reject, timer });
      this.#socket.write(encodeFrame(args.map(String)));
    });
  }

  /** Sends a command; an error reply rejects with CACHE_CLUSTER_ADMIN_FAILED. */
  async call(...args: Array<string | number>): Promise<Reply> {
    const reply = await this.raw(...args);
    if (reply instanceof ReplyError) {
      throw adminFailure(`${this.host}:${this.port}`, `${args.slice(0, 3).join(" ")}: ${reply.message}`);
    }
    return reply;
  }

  close(): void {
    this.#socket.destroy();
  }

  #onData(chunk: Buffer): void {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    let pos = 0;
    try {
      for (;;) {
        const parsed = parseReply(this.#buf, pos);
        if (parsed === undefined) break;
        pos = parsed.end;
        const waiter = this.#waiting.shift();
        if (waiter === undefined) continue;
        clearTimeout(waiter.timer);
        waiter.resolve(parsed.reply);
      }
    } catch (error) {
      this.#fail(error as Error);
      return;
    }
    this.#buf = this.#buf.subarray(pos);
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    for (const waiter of this.#waiting.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.reject(error);
    }
    this.#socket.destroy();
  }
}

function adminFailure(node: string, detail: string, cause?: unknown) {
  return clusterErrors.create("CACHE_CLUSTER_ADMIN_FAILED", {
    detail: `${node}: ${detail}`,
    fields: { node },
    ...(cause === undefined ? {} : { cause }),
  });
}
