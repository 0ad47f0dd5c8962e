/**
 * What a command becomes when it goes to the gutter pool instead of its dead owner
 * (mcrouter's gutter: a few spare nodes take a failed node's keys for a while, so its
 * traffic does not fall on the database all at once — seed 004's "se um nó de cache
 * morrer às 10:01 … cai inteira sobre o PostgreSQL de uma vez"). Everything stored on the
 * gutter must be short-lived, as mcrouter caps TTLs there: when the node returns, its
 * keys route back to it, and nothing written on the gutter during the outage may linger.
 *
 * | command | on the gutter |
 * |---|---|
 * | GET, GETDEL, TTL, PTTL, TYPE | unchanged |
 * | MGET; DEL, UNLINK, EXISTS | one GET / DEL / … per key (keys of one ring node may sit on several gutter nodes), gathered: values in order, counts summed |
 * | SET | TTL capped: EX/PX/EXAT/PXAT beyond `ttlS` (and none, and KEEPTTL) become `EX ttlS`; NX/XX/GET kept |
 * | MSET | one `SET key value EX ttlS` per pair; OK when all are OK |
 * | INCR, INCRBY, DECR, DECRBY | unchanged, followed on the same connection by `PEXPIRE key ttlMs LT` (sets the TTL only if it lowers it; a key without one counts as infinite) |
 * | EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT | a time beyond `ttlS` becomes `PEXPIRE key ttlMs` (flags kept) |
 * | PERSIST, anything else | refused: it would leave a key on the gutter without the cap |
 *
 * SET and the EXPIRE family are read with the node's own parsers (`parseSetOptions`,
 * `setExpiryAtMs`, `expireAtMs`), so a command the node would refuse is answered here with
 * the node's error line and never rewritten into one it would accept. Pure: `nowMs` (wall
 * clock, for EXAT/PXAT) is passed in.
 *
 * @example
 * planGutterCommand(["SET", "k", "v", "EX", "300"], 10, Date.now());
 * // { kind: "send", combine: "first", commands: [{ key: "k", args: ["SET", "k", "v", "EX", "10"] }] }
 * planGutterCommand(["PERSIST", "k"], 10, Date.now()); // { kind: "refuse", command: "persist" }
 */
import { expireAtMs, setExpiryAtMs, type TimeUnit } from "../domain/expire-time.ts";
import { arityError, REPLY_ERRORS } from "../domain/reply-errors.ts";
import { parseSetOptions } from "../domain/set-options.ts";
import { ErrorReply, type Reply } from "./reply-parser.ts";

/** One command of a plan, routed on the gutter ring by its own key. */
export interface GutterSend {
  readonly key: string;
  readonly args: readonly string[];
}

/**
 * How the replies of a plan's commands become the caller's one reply: the first one's
 * (later commands only cap a TTL), an array in order (MGET), a sum (DEL/UNLINK/EXISTS),
 * or OK unless one failed (MSET).
 */
export type GutterCombine = "first" | "array" | "sum" | "all-ok";

export type GutterPlan =
  | { readonly kind: "send"; readonly commands: readonly GutterSend[]; readonly combine: GutterCombine }
  /** Answered without a node: the node would refuse this command too (syntax, arity, bad time). */
  | { readonly kind: "reply"; readonly reply: ErrorReply }
  | { readonly kind: "refuse"; readonly command: string };

/** Bound on the cap: a gutter holds keys for seconds to minutes, never a day. */
export const MAX_GUTTER_TTL_S = 86_400;

/** Arity as Redis states it: n = exactly n words with the name, -n = at least n. */
const ARITY: Readonly<Record<string, number>> = {
  get: 2,
  getdel: 2,
  ttl: 2,
  pttl: 2,
  type: 2,
  mget: -2,
  del: -2,
  unlink: -2,
  exists: -2,
  set: -3,
  mset: -3,
  incr: 2,
  decr: 2,
  incrby: 3,
  decrby: 3,
  expire: -3,
  pexpire: -3,
  expireat: -3,
  pexpireat: -3,
};

const UNCHANGED = new Set(["get", "getdel", "ttl", "pttl", "type"]);
const PER_KEY_SUMMED = new Set(["del", "unlink", "exists"]);
const COUNTERS = new Set(["incr", "decr", "incrby", "decrby"]);
const EXPIRES: Readonly<Record<string, { unit: TimeUnit; relative: boolean }>> = {
  expire: { unit: "s", relative: true },
  pexpire: { unit: "ms", relative: true },
  expireat: { unit: "s", relative: false },
  pexpireat: { unit: "ms", relative: false },
};

function arityAccepts(arity: number, words: number): boolean {
  return arity > 0 ? words === arity : words >= -arity;
}

function sendOne(args: readonly string[], combine: GutterCombine = "first"): GutterPlan {
  return { kind: "send", commands: [{ key: args[1]!, args }], combine };
}

function answer(line: string): GutterPlan {
  return { kind: "reply", reply: new ErrorReply(line) };
}

/** SET with its TTL capped at `capS`; NX/XX/GET kept. */
function planSet(args: readonly string[], capS: number, nowMs: number): GutterPlan {
  const options = parseSetOptions(args);
  if (options === undefined) return answer(REPLY_ERRORS.syntax);
  if (options.expiry !== undefined) {
    const { raw, unit, relative } = options.expiry;
    const at = setExpiryAtMs(raw, unit, relative, nowMs, "set");
    if (at.error !== undefined) return answer(at.error);
    if (at.atMs - nowMs <= capS * 1000) return sendOne(args);
  }
  const capped = [args[0]!, args[1]!, args[2]!];
  if (options.condition !== "none") capped.push(options.condition.toUpperCase());
  if (options.get) capped.push("GET");
  capped.push("EX", String(capS));
  return sendOne(capped);
}

/** EXPIRE and family with a time beyond the cap turned into `PEXPIRE key capMs [flags]`. */
function planExpire(name: string, args: readonly string[], capS: number, nowMs: number): GutterPlan {
  const { unit, relative } = EXPIRES[name]!;
  const at = expireAtMs(args[2]!, unit, relative, nowMs, name);
  if (at.error !== undefined) return answer(at.error);
  if (at.atMs - nowMs <= capS * 1000) return sendOne(args);
  return sendOne(["PEXPIRE", args[1]!, String(capS * 1000), ...args.slice(3)]);
}

/** One command per key of a multi-key command (`word` names it, e.g. GET for MGET). */
function perKey(word: string, keys: readonly string[], combine: GutterCombine): GutterPlan {
  return { kind: "send", commands: keys.map((key) => ({ key, args: [word, key] })), combine };
}

/** MSET as one capped SET per pair. */
function planMset(args: readonly string[], capS: number): GutterPlan {
  if (args.length % 2 === 0) return answer(arityError("mset"));
  const commands: GutterSend[] = [];
  for (let i = 1; i < args.length; i += 2) {
    commands.push({ key: args[i]!, args: ["SET", args[i]!, args[i + 1]!, "EX", String(capS)] });
  }
  return { kind: "send", commands, combine: "all-ok" };
}

/** The plan for `args` on a gutter whose TTLs are capped at `capS` seconds, at wall time `nowMs`. */
export function planGutterCommand(args: readonly string[], capS: number, nowMs: number): GutterPlan {
  const name = (args[0] ?? "").toLowerCase();
  const arity = ARITY[name];
  if (arity === undefined) return { kind: "refuse", command: name };
  if (!arityAccepts(arity, args.length)) return answer(arityError(name));
  if (UNCHANGED.has(name)) return sendOne(args);
  if (name === "set") return planSet(args, capS, nowMs);
  if (name in EXPIRES) return planExpire(name, args, capS, nowMs);
  if (name === "mget") return perKey("GET", args.slice(1), "array");
  if (PER_KEY_SUMMED.has(name)) return perKey(args[0]!.toUpperCase(), args.slice(1), "sum");
  if (name === "mset") return planMset(args, capS);
  if (COUNTERS.has(name)) {
    return {
      kind: "send",
      commands: [
        { key: args[1]!, args },
        { key: args[1]!, args: ["PEXPIRE", args[1]!, String(capS * 1000), "LT"] },
      ],
      combine: "first",
    };
  }
  return { kind: "refuse", command: name };
}

/** The caller's one reply from the replies of a plan's commands, in the plan's order. */
export function combineGutterReplies(combine: GutterCombine, replies: readonly Reply[]): Reply {
  if (combine === "first") return replies[0] ?? null;
  if (combine === "array") return [...replies];
  if (combine === "sum") {
    let total = 0;
    for (const reply of replies) {
      if (typeof reply !== "number") return reply;
      total += reply;
    }
    return total;
  }
  // All OK: the first OK as the parser gave it (a StatusReply when the router keeps statuses apart).
  return replies.find((reply) => reply instanceof ErrorReply) ?? replies[0] ?? null;
}
