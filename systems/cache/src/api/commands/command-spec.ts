/**
 * What a command is, as a table row: name, arity, flags and key positions (the shape of
 * Redis's COMMAND INFO), its docs, and the handler. Table-driven dispatch checks arity
 * once for every command, and the key positions let a router find a command's keys
 * without knowing the command (cluster slot checks: CA-05, part 2).
 *
 * Arity follows Redis: `n` means exactly n words including the name, `-n` at least n.
 * Key positions: `first` and `last` are argument indexes (the name is 0; `last` −1 = the
 * final argument), `step` the distance between keys (2 for MSET's key value pairs).
 *
 * @example
 * const get: CommandSpec = { name: "get", arity: 2, flags: ["readonly", "fast"],
 *   keys: { first: 1, last: 1, step: 1 }, acl: ["@read", "@string", "@fast"],
 *   doc: { summary: "Get the value of a key", since: "1.0.0", group: "string", complexity: "O(1)" },
 *   run: (ctx, args) => { … } };
 */
import type { Clock } from "@casebook/kit/clock";
import type { AclUser, AclUsers } from "../../domain/acl-users.ts";
import type { Keyspace } from "../../domain/keyspace.ts";
import type { ReplicationSource } from "../../replication/workers/replication-primary.ts";
import type { Protocol, ReplyWriter } from "../resp-writer.ts";

export type CommandFlag =
  | "write"
  | "readonly"
  | "denyoom"
  | "admin"
  | "noscript"
  | "loading"
  | "stale"
  | "fast"
  | "no_auth"
  | "allow_busy"
  | "no_multi"
  | "sentinel";

export interface KeyPositions {
  readonly first: number;
  readonly last: number;
  readonly step: number;
}

export const NO_KEYS: KeyPositions = Object.freeze({ first: 0, last: 0, step: 0 });
/** The key is the first argument (GET k, SET k v …). */
export const ONE_KEY: KeyPositions = Object.freeze({ first: 1, last: 1, step: 1 });
/** A container whose key subcommands name their key second (OBJECT FREQ k, MEMORY USAGE k). */
export const SUBCOMMAND_KEY: KeyPositions = Object.freeze({ first: 2, last: 2, step: 1 });

export interface CommandDoc {
  readonly summary: string;
  readonly since: string;
  readonly group: string;
  readonly complexity: string;
}

/** One connection's state that commands read and change. */
export interface ClientState {
  readonly id: number;
  name: string;
  protocol: Protocol;
  libName: string;
  libVersion: string;
  /** The ACL user the connection runs as (`default` until AUTH). */
  user: AclUser;
  /** Opened while default was nopass, or a successful AUTH since; otherwise only `no_auth` commands run. */
  authenticated: boolean;
  /** QUIT: the server closes the connection once this batch's replies are written. */
  closeAfterReply: boolean;
  /** `host:port` of the peer, and of this node's end (CLIENT LIST `addr`, `laddr`). */
  readonly addr: string;
  readonly laddr: string;
  /** When the connection opened, and when it last ran a command (the node clock's monotonic ms). */
  readonly openedAtMs: number;
  lastActiveAtMs: number;
  /** The last command's name, and its first argument when short (`cmd=config|get`). */
  lastCommand: string;
  lastArgument: string;
  /** Bytes held now: unparsed input, and replies not yet taken by the socket. */
  buffers(): { readonly queryBytes: number; readonly outputBytes: number };
  /**
   * Set by a blocking command (WAIT) instead of replying: the connection sends what the
   * batch owes so far, then holds this client's later commands until the reply settles,
   * so replies stay in request order. The connection clears it when it takes it.
   */
  blocked: BlockedReply | undefined;
}

/** A reply that comes later. `cancel` is called when the client goes away first. */
export interface BlockedReply {
  /** Resolves to the writer of the reply, run inside a fresh batch of the connection. */
  readonly settled: Promise<(reply: ReplyWriter) => void>;
  cancel(): void;
}

/** A setting as CONFIG GET/SET sees it. `set` returns an error text, or undefined when applied. */
export interface ConfigParam {
  readonly name: string;
  get(): string;
  /** Absent for settings fixed at start (CONFIG SET answers that it cannot set them). */
  readonly validate?: (value: string) => string | undefined;
  readonly apply?: (value: string) => void;
}

/** The node-wide numbers INFO reports beside the keyspace's. */
export interface NodeStats {
  readonly startedAtMs: number;
  readonly port: number;
  readonly connectedClients: number;
  readonly maxClients: number;
  readonly totalConnections: number;
  readonly rejectedConnections: number;
  readonly totalCommands: number;
  /** Resident set size of the process (what the machine actually gives this node). */
  readonly rssBytes: number;
  /** V8 heap in use: keys, values, entries and everything else on the JS heap. */
  readonly heapUsedBytes: number;
  /** V8 heap reserved (used + free space V8 keeps for growth and garbage not yet collected). */
  readonly heapTotalBytes: number;
  /** Memory outside the V8 heap that V8 knows of: ArrayBuffers (the value arena) and more. */
  readonly externalBytes: number;
  /** The ArrayBuffer part of `externalBytes` (value arena chunks, socket buffers). */
  readonly arrayBuffersBytes: number;
  /** Highest accounted usage seen (sampled by the server's cron). */
  readonly usedMemoryPeakBytes: number;
  readonly processId: number;
}

/** What commands may reach beyond the keyspace: node stats, settings, the command table. */
export interface NodeContext {
  readonly clock: Clock;
  readonly config: ReadonlyMap<string, ConfigParam>;
  stats(): NodeStats;
  /** Zeroes the node's counters (CONFIG RESETSTAT). */
  resetStats(): void;
  readonly commands: ReadonlyMap<string, CommandSpec>;
  /** The stream to this node's replicas (WAIT, INFO replication, ROLE); absent on a standalone node. */
  readonly replication: ReplicationSource | undefined;
  /** Users, passwords and permissions (AUTH, ACL, requirepass). */
  readonly acl: AclUsers;
  /** Every connected client (CLIENT LIST). */
  clients(): Iterable<ClientState>;
}

export interface CommandContext {
  readonly keyspace: Keyspace;
  readonly reply: ReplyWriter;
  readonly client: ClientState;
  readonly node: NodeContext;
}

export interface CommandSpec {
  /** Lowercase; a subcommand's is `container|sub` (`config|get`), as in Redis's errors. */
  readonly name: string;
  readonly arity: number;
  readonly flags: readonly CommandFlag[];
  readonly keys: KeyPositions;
  readonly acl: readonly string[];
  readonly doc: CommandDoc;
  /** Hints for cluster clients and proxies, as in Redis 7 (`request_policy:multi_shard` for MGET). */
  readonly tips?: readonly string[];
  readonly subcommands?: readonly CommandSpec[];
  run(ctx: CommandContext, args: readonly string[]): void;
}

/** True when `argc` words (name included) satisfy `arity`. */
export function arityAccepts(arity: number, argc: number): boolean {
  return arity >= 0 ? argc === arity : argc >= -arity;
}

/** The keys of `args` by the spec's key positions (empty for a command without keys). */
export function commandKeys(spec: CommandSpec, args: readonly string[]): string[] {
  const { first, last, step } = spec.keys;
  if (first === 0) return [];
  const end = last < 0 ? args.length + last : Math.min(last, args.length - 1);
  const keys: string[] = [];
  for (let i = first; i <= end; i += step) keys.push(args[i]!);
  return keys;
}
