/**
 * A routing proxy (CA-22), mcrouter-style: applications speak plain RESP to it as if it
 * were one Redis, and it routes each command by key (slot map or ring, through the
 * client library's router) over a few pooled, auto-pipelined connections per node. A
 * thousand application connections become `connectionsPerNode` upstream connections per
 * node, where a thousand cluster-aware clients would each hold one to every node; the
 * nodes' connection tables and the clients' routing logic both stay small. The price is
 * one more hop and a proxy tier to run.
 *
 * It reuses the node's request parser and reply writer, and the node's command table for
 * key positions, so it routes exactly the commands the node serves. Multi-key commands
 * are split by group and gathered: MGET in the caller's order, DEL/UNLINK/EXISTS summed,
 * MSET all-or-error; any other command whose keys span groups gets CROSSSLOT, as from
 * a cluster node. Replies go back in request order per connection, each read's batch in
 * one write. Bounds: `maxClients`, `maxInFlightPerClient` (past it the proxy stops
 * reading from that client until replies drain), the parser's RespLimits.
 *
 * A dead node is the router's business, so the proxy fails over exactly like the client
 * library: give it a `RingRouter` with `ejection` (a node that keeps failing leaves the
 * ring, a PING probe brings it back) and `gutter` (its keys go to a spare pool with TTLs
 * capped), and applications see a dead node's keys answer nil instead of errors. A command
 * the router refuses or that fails comes back as `-ERR proxy: … (CODE)`.
 *
 * @example
 * const router = new RingRouter({
 *   nodes, connectionsPerNode: 2, ...proxyWireOptions,
 *   ejection: { failureLimit: 3, retryAfterMs: 3_000 }, gutter: { nodes: gutterNodes, ttlS: 10 },
 * });
 * const proxy = new RoutingProxy({ router, port: 7100 });
 * await proxy.listen(); // redis-cli -p 7100 GET event:42
 * await proxy.close();
 * await router.close();
 */
import { createServer, type Server, type Socket } from "node:net";
import { allCommands } from "../api/commands/all-commands.ts";
import { arityAccepts, type CommandSpec } from "../api/commands/command-spec.ts";
import { createCommandTable, findCommand } from "../api/commands/command-table.ts";
import { defaultRespLimits, type RespLimits, RespParser } from "../api/resp-parser.ts";
import { ReplyWriter } from "../api/resp-writer.ts";
import { clientErrors, requireClientInteger } from "../client/client-errors.ts";
import { DEFAULT_MAX_KEYS_PER_COMMAND, groupKeys } from "../client/key-groups.ts";
import type { KeyRouter } from "../client/key-router.ts";
import { ErrorReply, type Reply, StatusReply } from "../client/reply-parser.ts";
import { arityError, REPLY_ERRORS, unknownCommandError } from "../domain/reply-errors.ts";

/** Router options a proxy needs: bytes relayed as they came (latin1), +OK kept apart from $2 OK. */
export const proxyWireOptions = Object.freeze({ encoding: "latin1" as const, tagStatus: true });

export interface RoutingProxyOptions {
  /** Built with `proxyWireOptions`; the proxy does not close it. */
  readonly router: KeyRouter;
  /** 0 = any free port. */
  readonly port?: number;
  readonly host?: string;
  readonly maxClients?: number;
  readonly maxInFlightPerClient?: number;
  readonly maxKeysPerCommand?: number;
  readonly limits?: RespLimits;
}

export const routingProxyDefaults: Readonly<{
  port: number;
  host: string;
  maxClients: number;
  maxInFlightPerClient: number;
}> = Object.freeze({ port: 7100, host: "127.0.0.1", maxClients: 10_000, maxInFlightPerClient: 1_024 });

const OK = new StatusReply("OK");
const table = createCommandTable(allCommands);
/** Commands answered by the proxy itself, without a node. */
const LOCAL = new Set(["ping", "echo", "quit", "select", "command", "client", "hello"]);
/** Multi-key commands whose per-group replies are added up. */
const SUMMED = new Set(["del", "unlink", "exists"]);

interface Slot {
  done: boolean;
  reply: Reply;
}

/** Writes a relayed reply with the node's writer (statuses as statuses, errors as errors). */
function writeReply(writer: ReplyWriter, reply: Reply): void {
  if (reply === null) writer.nullBulk();
  else if (typeof reply === "string") writer.bulk(reply);
  else if (typeof reply === "number" || typeof reply === "bigint") writer.integer(reply);
  else if (reply instanceof StatusReply) writer.simple(reply.text);
  else if (reply instanceof ErrorReply) writer.error(reply.message);
  else {
    writer.arrayHeader(reply.length);
    for (const item of reply) writeReply(writer, item);
  }
}

/** The keys of `args` by the command's key positions (the name is argument 0). */
function commandKeys(spec: CommandSpec, args: readonly string[]): string[] {
  const { first, last, step } = spec.keys;
  if (step === 0 || first === 0) return [];
  const end = last < 0 ? args.length + last : last;
  const keys: string[] = [];
  for (let i = first; i <= end && i < args.length; i += step) keys.push(args[i]!);
  return keys;
}

export class RoutingProxy {
  readonly #options: RoutingProxyOptions & typeof routingProxyDefaults;
  readonly #router: KeyRouter;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #writer = new ReplyWriter();
  readonly #maxKeys: number;
  #port = 0;

  constructor(options: RoutingProxyOptions) {
    this.#options = { ...routingProxyDefaults, ...options };
    requireClientInteger("maxClients", this.#options.maxClients, 1, 1_000_000);
    requireClientInteger("maxInFlightPerClient", this.#options.maxInFlightPerClient, 1, 1_000_000);
    if (options.router.encoding !== "latin1") {
      throw clientErrors.create("CACHE_PROXY_CONFIG_INVALID", {
        fields: {
          field: "router.encoding",
          expected: "latin1 (proxyWireOptions): bytes must pass unchanged",
        },
      });
    }
    this.#router = options.router;
    this.#maxKeys = options.maxKeysPerCommand ?? DEFAULT_MAX_KEYS_PER_COMMAND;
    this.#server = createServer({ noDelay: true }, (socket) => this.#accept(socket));
  }

  get port(): number {
    return this.#port;
  }

  /** Application connections open now. */
  get connectionCount(): number {
    return this.#sockets.size;
  }

  async listen(): Promise<{ port: number }> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen({ port: this.#options.port, host: this.#options.host }, () => {
        this.#server.off("error", reject);
        resolve();
      });
    });
    const address = this.#server.address();
    this.#port = typeof address === "object" && address !== null ? address.port : 0;
    return { port: this.#port };
  }

  /** Stops accepting and closes every application connection. */
  async close(): Promise<void> {
    const stopped = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    await stopped;
  }

  #accept(socket: Socket): void {
    if (this.#sockets.size >= this.#options.maxClients) {
      socket.on("error", () => socket.destroy());
      socket.end(`-${REPLY_ERRORS.maxClients}\r\n`);
      return;
    }
    this.#sockets.add(socket);
    socket.once("close", () => this.#sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    const parser = new RespParser(this.#options.limits ?? defaultRespLimits);
    const queue: Slot[] = [];
    socket.on("data", (chunk: Buffer) => {
      try {
        parser.feed(chunk);
        for (let args = parser.next(); args !== undefined; args = parser.next()) {
          this.#enqueue(socket, queue, args);
        }
      } catch (error) {
        socket.end(`-ERR ${(error as Error).message}\r\n`);
        return;
      }
      if (queue.length >= this.#options.maxInFlightPerClient) socket.pause();
    });
  }

  #enqueue(socket: Socket, queue: Slot[], args: string[]): void {
    const slot: Slot = { done: false, reply: null };
    queue.push(slot);
    const settle = (reply: Reply) => {
      slot.done = true;
      slot.reply = reply;
      this.#flush(socket, queue);
      if (args[0]!.toLowerCase() === "quit") socket.end();
    };
    this.#route(args).then(settle, (error: Error) => {
      const code = clientErrors.is(error) ? ` (${error.code})` : "";
      settle(new ErrorReply(`ERR proxy: ${error.message}${code}`));
    });
  }

  /** Writes every finished reply at the head of the queue, in order, in one write. */
  #flush(socket: Socket, queue: Slot[]): void {
    if (!queue[0]?.done) return;
    const writer = this.#writer;
    writer.begin(2);
    let written = 0;
    while (written < queue.length && queue[written]!.done) writeReply(writer, queue[written++]!.reply);
    queue.splice(0, written);
    if (!socket.destroyed) for (const part of writer.finish()) socket.write(part);
    if (socket.isPaused() && queue.length < this.#options.maxInFlightPerClient) socket.resume();
  }

  async #route(args: readonly string[]): Promise<Reply> {
    const name = args[0]!.toLowerCase();
    if (LOCAL.has(name)) return this.#local(name, args);
    const spec = findCommand(table, name);
    if (spec === undefined) return new ErrorReply(unknownCommandError(args));
    if (!arityAccepts(spec.arity, args.length)) return new ErrorReply(arityError(name));
    const keys = commandKeys(spec, args);
    if (keys.length === 0)
      return new ErrorReply(`ERR the routing proxy does not forward keyless command '${name}'`);
    if (name === "mget") return this.#mget(keys);
    if (SUMMED.has(name)) return this.#summed(name, keys);
    if (name === "mset") return this.#mset(args);
    const group = this.#router.groupOf(keys[0]!);
    if (keys.some((key) => this.#router.groupOf(key) !== group)) {
      return new ErrorReply("CROSSSLOT Keys in request don't hash to the same slot");
    }
    return this.#router.send(keys[0]!, args);
  }

  #local(name: string, args: readonly string[]): Reply {
    if (name === "ping") return args.length > 1 ? args[1]! : new StatusReply("PONG");
    if (name === "echo") return args.length === 2 ? args[1]! : new ErrorReply(arityError("echo"));
    if (name === "command") return [];
    if (name === "hello") return this.#hello(args);
    return OK; // quit, select (db 0 only on a cluster), client setname/setinfo: accepted and ignored
  }

  /** HELLO: the proxy relays RESP2 only; clients that ask for 3 (ioredis 6) fall back on NOPROTO. */
  #hello(args: readonly string[]): Reply {
    if (args.length > 1 && args[1] !== "2") return new ErrorReply(REPLY_ERRORS.noProto);
    return [
      "server",
      "casebook-routing-proxy",
      "version",
      "0.1.0",
      "proto",
      2,
      "mode",
      "proxy",
      "modules",
      [],
    ];
  }

  async #mget(keys: readonly string[]): Promise<Reply> {
    const values: Reply[] = new Array(keys.length).fill(null);
    const groups = groupKeys(this.#router, keys, this.#maxKeys);
    const replies = await Promise.all(groups.map((g) => this.#router.send(g.keys[0]!, ["MGET", ...g.keys])));
    for (const [i, reply] of replies.entries()) {
      if (!Array.isArray(reply)) return reply;
      reply.forEach((value, j) => {
        values[groups[i]!.positions[j]!] = value;
      });
    }
    return values;
  }

  async #summed(name: string, keys: readonly string[]): Promise<Reply> {
    const groups = groupKeys(this.#router, keys, this.#maxKeys);
    const replies = await Promise.all(
      groups.map((g) => this.#router.send(g.keys[0]!, [name.toUpperCase(), ...g.keys])),
    );
    let total = 0;
    for (const reply of replies) {
      if (typeof reply !== "number") return reply;
      total += reply;
    }
    return total;
  }

  async #mset(args: readonly string[]): Promise<Reply> {
    if (args.length % 2 === 0) return new ErrorReply(arityError("mset"));
    const pairs = new Map<string, string>();
    for (let i = 1; i < args.length; i += 2) pairs.set(args[i]!, args[i + 1]!);
    const groups = groupKeys(this.#router, [...pairs.keys()], this.#maxKeys);
    const replies = await Promise.all(
      groups.map((g) =>
        this.#router.send(g.keys[0]!, ["MSET", ...g.keys.flatMap((key) => [key, pairs.get(key)!])]),
      ),
    );
    return replies.find((reply) => reply instanceof ErrorReply) ?? OK;
  }
}
