/**
 * The per-command gate, in Redis's order (after the unknown-command and arity checks, before
 * cluster redirects): NOAUTH while the connection must authenticate and the command is not
 * `no_auth` (AUTH, HELLO, QUIT…), then NOPERM when its user may not run the command or touch
 * one of its keys (found by the command's key positions). Redis 7.0's wording.
 *
 * The caller only comes here when the user is restricted or the connection unauthenticated
 * on a node that requires it (`needsCheck`): with no auth configured it costs two booleans.
 *
 * @example
 * if (needsCheck(ctx) && !passesAcl(ctx, spec, args)) return; // the refusal was written
 */
import { type CommandContext, type CommandSpec, commandKeys } from "./command-spec.ts";

export const NOPERM_KEY = "NOPERM this user has no permissions to access one of the keys used as arguments";

export function noPermCommand(name: string): string {
  return `NOPERM this user has no permissions to run the '${name}' command`;
}

/** False on the fast path: the default user open to all, or an unrestricted authenticated user. */
export function needsCheck(ctx: CommandContext): boolean {
  const { client } = ctx;
  return !client.user.unrestricted || !(client.authenticated || ctx.node.acl.defaultOpen);
}

/** True when the command may run; otherwise the refusal is written and false returned. */
export function passesAcl(ctx: CommandContext, spec: CommandSpec, args: readonly string[]): boolean {
  const { client, node } = ctx;
  if (client.user.deleted) {
    // ACL DELUSER: Redis closes such connections; here they fall back to default and must AUTH again.
    client.user = node.acl.default;
    client.authenticated = false;
  }
  if (!client.authenticated && !node.acl.defaultOpen) {
    if (spec.flags.includes("no_auth")) return true;
    ctx.reply.error("NOAUTH Authentication required.");
    return false;
  }
  if (client.user.unrestricted) return true;
  let name = spec.name;
  if (spec.subcommands !== undefined && args.length > 1) {
    const sub = `${spec.name}|${args[1]!.toLowerCase()}`;
    if (spec.subcommands.some((s) => s.name === sub)) name = sub;
  }
  const denial = node.acl.denial(client.user, name, commandKeys(spec, args));
  if (denial === undefined) return true;
  ctx.reply.error(denial.kind === "command" ? noPermCommand(name) : NOPERM_KEY);
  return false;
}
