/**
 * TIME: the node's clock as [unix seconds, microseconds], both bulk strings as Redis sends
 * them. Scripts and clients use the server's clock, not their own, for anything that
 * decides (STYLE: "use the server's TIME"). The injected clock counts milliseconds, so the
 * microseconds are whole milliseconds × 1000.
 *
 * @example
 * // TIME → ["1767225600", "123000"]
 */
import type { CommandSpec } from "./command-spec.ts";

const MS_PER_S = 1000;
const US_PER_MS = 1000;

export const timeCommand: CommandSpec = {
  name: "time",
  arity: 1,
  flags: ["loading", "stale", "fast"],
  keys: { first: 0, last: 0, step: 0 },
  acl: ["@fast"],
  doc: { summary: "Returns the server time.", since: "2.6.0", group: "server", complexity: "O(1)" },
  tips: ["nondeterministic_output"],
  run: (ctx) => {
    const nowMs = Math.floor(ctx.node.clock.nowMs());
    ctx.reply.arrayHeader(2);
    ctx.reply.bulk(String(Math.floor(nowMs / MS_PER_S)));
    ctx.reply.bulk(String((nowMs % MS_PER_S) * US_PER_MS));
  },
};
