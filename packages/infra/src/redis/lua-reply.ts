/**
 * What a twin returns, converted exactly as Redis converts a Lua script's return
 * value, so a twin and its script hand callers identical values:
 *
 * | twin returns (Lua)            | caller receives            |
 * |-------------------------------|----------------------------|
 * | number (Lua number)           | integer, truncated to zero (3.9 → 3, -3.9 → -3) |
 * | string                        | string                     |
 * | true / false / null           | 1 / null / null            |
 * | array (Lua table)             | array, cut at the first null/undefined (a Lua nil ends a table) |
 * | `{ ok: "PONG" }`              | "PONG"                     |
 * | `{ err: "SOLD_OUT no seats" }`| rejection: REDIS_SCRIPT_FAILED, replyCode SOLD_OUT |
 *
 * Return integers (scale ms, cents): a fraction is lost on the real engine too.
 *
 * @example
 * toRedisReply([1, 2.7, false, "x", null, 5]); // [1, 2, null, "x"]
 */

/** A value a twin may return; mirrors what a Lua script may return. */
export type LuaReply =
  | string
  | number
  | boolean
  | null
  | undefined
  | readonly LuaReply[]
  | LuaStatus
  | LuaError;

export interface LuaStatus {
  ok: string;
}

export interface LuaError {
  err: string;
}

/** Thrown by `toRedisReply` for a top-level `{ err }`: the script's error reply. */
export class LuaErrorReply extends Error {
  readonly reply: string;

  constructor(reply: string) {
    super(reply);
    this.reply = reply;
    this.name = "LuaErrorReply";
  }
}

/** Converts a twin's return value as Redis converts a Lua return value; throws LuaErrorReply for `{ err }`. */
export function toRedisReply(reply: LuaReply): unknown {
  if (isError(reply)) throw new LuaErrorReply(reply.err);
  return convert(reply, 0);
}

/** Bound on nesting, as a guard against a twin returning a cyclic structure. */
const maxDepth = 32;

function convert(reply: LuaReply, depth: number): unknown {
  if (depth > maxDepth) throw new TypeError(`twin reply nests deeper than ${maxDepth} levels`);
  if (reply === null || reply === undefined || reply === false) return null;
  if (reply === true) return 1;
  if (typeof reply === "string") return reply;
  if (typeof reply === "number") {
    if (!Number.isFinite(reply))
      throw new TypeError(`twin returned ${reply}; Redis cannot reply a non-finite number`);
    return Math.trunc(reply) + 0; // + 0 turns -0 into 0, as an integer reply has no sign of zero
  }
  if (Array.isArray(reply)) {
    const items: unknown[] = [];
    for (const item of reply as readonly LuaReply[]) {
      if (item === null || item === undefined) break;
      if (isError(item))
        throw new TypeError("twin returned { err } inside an array; return it at the top level");
      items.push(convert(item, depth + 1));
    }
    return items;
  }
  if (isStatus(reply)) return reply.ok;
  throw new TypeError(`twin returned an unsupported value: ${JSON.stringify(reply)}`);
}

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const INFINITE = /^([+-]?)inf(inity)?$/i;
const NOT_A_NUMBER = /^[+-]?nan(\([0-9a-z_]*\))?$/i;
const HEX = /^([+-]?)0x([0-9a-f]*)(?:\.([0-9a-f]*))?(?:p([+-]?\d+))?$/i;

/**
 * Lua's `tonumber` for twins (Lua 5.1 in Redis, which parses with C's strtod): null
 * where Lua gives nil. Unlike JavaScript's `Number`, a blank string is NOT 0 and "0b1"
 * is not a number, while "inf", "nan" and hex floats ("0x1p4") are, so a twin accepts
 * and rejects exactly the arguments its script does (each case checked against Redis 7).
 *
 * @example
 * luaToNumber(" 42 "); // 42
 * luaToNumber("");     // null (Number("") would be 0)
 */
export function luaToNumber(text: string | null | undefined): number | null {
  if (text === null || text === undefined) return null;
  const trimmed = text.replace(/^[ \t\n\v\f\r]+|[ \t\n\v\f\r]+$/g, "");
  if (DECIMAL.test(trimmed)) return Number(trimmed);
  const infinite = INFINITE.exec(trimmed);
  if (infinite) return infinite[1] === "-" ? -Infinity : Infinity;
  if (NOT_A_NUMBER.test(trimmed)) return Number.NaN;
  const hex = HEX.exec(trimmed);
  if (!hex || (hex[2] === "" && (hex[3] ?? "") === "")) return null;
  const [, sign, whole, fraction = "", exponent = "0"] = hex;
  const mantissa = [...`${whole}${fraction}`].reduce(
    (value, digit) => value * 16 + Number.parseInt(digit, 16),
    0,
  );
  const value = mantissa * 2 ** (Number(exponent) - 4 * fraction.length);
  return sign === "-" ? -value : value;
}

function isError(reply: LuaReply): reply is LuaError {
  return (
    typeof reply === "object" &&
    reply !== null &&
    !Array.isArray(reply) &&
    typeof (reply as LuaError).err === "string"
  );
}

function isStatus(reply: LuaReply): reply is LuaStatus {
  return typeof reply === "object" && reply !== null && typeof (reply as LuaStatus).ok === "string";
}
