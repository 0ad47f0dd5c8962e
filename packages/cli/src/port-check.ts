/**
 * Checks, before anything starts, that every port a system needs can be bound,
 * so a taken port is reported by name with the way around it instead of as one
 * child's EADDRINUSE stack trace. (A port can still be taken between the check
 * and the child's bind; the child's failure is then reported with its stderr.)
 *
 * @example
 * await portBindError("127.0.0.1", 8101); // undefined when free, "EADDRINUSE" when taken
 */
import { createServer } from "node:net";
import { cliErrors } from "./cli-errors.ts";
import { portOverrideHint } from "./launch-plan.ts";

/** Tries to bind host:port; resolves the error code when that fails, undefined when the port is free. */
export function portBindError(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

/** Throws CLI_PORT_TAKEN naming every system whose port cannot be bound. */
export async function assertPortsFree(
  plans: readonly { name: string; host: string; port: number }[],
  honourPortEnv: boolean,
): Promise<void> {
  const results = await Promise.all(plans.map((p) => portBindError(p.host, p.port)));
  const taken = plans.flatMap((plan, i) =>
    results[i] === undefined ? [] : [{ ...plan, code: results[i]! }],
  );
  if (taken.length === 0) return;
  const lines = taken.map((t) => `${t.name} needs ${t.host}:${t.port} (${describe(t.code)})`);
  const first = taken[0]!;
  const hint = honourPortEnv
    ? `Free the port, or pick another: \`PORT=8150 casebook run ${first.name}\` or \`casebook run ${first.name} --port 8150\`.`
    : `Free the port, or pick another: ${portOverrideHint(first.name)}.`;
  throw cliErrors.create("CLI_PORT_TAKEN", {
    detail: `Port${taken.length > 1 ? "s" : ""} not available: ${lines.join("; ")}.`,
    fields: { taken: taken.map(({ name, host, port, code }) => ({ name, host, port, code })), hint },
  });
}

function describe(code: string): string {
  if (code === "EADDRINUSE") return "already in use by another process";
  if (code === "EACCES") return "permission denied";
  if (code === "EADDRNOTAVAIL") return "this machine has no such address; check --host";
  return code;
}
