/**
 * The `new-key` command-line tool, once for every system with the admin key API
 * (api-key-admin-routes.ts): `casebook payments new-key`, `casebook webhooks new-key`. It is
 * a client of the RUNNING service — the service holds the database (an embedded PGlite
 * directory is locked by the process that opened it) — so it calls the admin API over HTTP:
 *
 * - the service's address from the same environment the service reads (`HOST`, `PORT`, or
 *   `casebook up`'s `CASEBOOK_PORT_<SYSTEM>`), or `--url`;
 * - the operator's token from the service's own variable (`PAYMENTS_ADMIN_TOKEN`);
 * - a new key for the owner (`--merchant demo`); an owner that does not exist yet is created
 *   with it, so this is also how the first merchant of an empty PostgreSQL is made;
 * - `--rotate [--expires-in-s N]`: the new key plus the other keys' end after the overlap.
 *
 * The key alone goes to stdout (so `KEY=$(casebook payments new-key)` works), what it is and
 * a first command to try it to stderr. Every failure is one line saying what to do: the
 * service is not running (how to start it), it has no admin API (how to restart it), the
 * token is wrong.
 *
 * @example
 * process.exitCode = await runApiKeyTool(paymentsKeyTool, process.argv.slice(2), process.env, consoleIo);
 */
import { parseArgs } from "node:util";

/** Bound on each admin call: the service answers in milliseconds when it is up at all. */
export const TOOL_REQUEST_TIMEOUT_MS = 10_000;
/** The longest accepted `--expires-in-s` (the admin API refuses more anyway): a week. */
const MAX_EXPIRES_IN_S = 7 * 86_400;

export interface ApiKeyToolSpec {
  /** `payments`: in messages and commands. */
  system: string;
  /** The admin API's owners segment: `merchants`. */
  owners: string;
  /** The owner's flag and noun: `merchant` (`--merchant ID`). */
  owner: string;
  /** The owner made when none is named. */
  defaultOwner: string;
  /** The service's 404 code for a missing owner: the tool creates the owner then. */
  ownerNotFoundCode: string;
  /** The service's admin token variable: `PAYMENTS_ADMIN_TOKEN`. */
  tokenEnv: string;
  /** The service's default PORT. */
  defaultPort: number;
  /** A first command that uses the key against `url`, pasteable into a shell. */
  tryCommand(url: string, key: string): string;
}

export interface ToolIo {
  out(text: string): void;
  err(text: string): void;
}

interface Reply {
  status: number;
  body: Record<string, unknown>;
}

class Unreachable extends Error {}

function usage(spec: ApiKeyToolSpec): string {
  return (
    `casebook ${spec.system} new-key — a new API key for a ${spec.owner}, through the running service's admin API\n\n` +
    `  casebook ${spec.system} new-key [--${spec.owner} ID] [--rotate [--expires-in-s N]] [--url URL]\n\n` +
    `  --${spec.owner} ID       whose key (default ${spec.defaultOwner}); created when it does not exist\n` +
    "  --rotate            the other keys stop working after --expires-in-s (default 3600; 0 = now)\n" +
    `  --url URL           the service (default http://HOST:PORT from the environment, port ${spec.defaultPort})\n\n` +
    `Needs ${spec.tokenEnv}: the same value the service was started with.\n` +
    "Prints the key alone on stdout; it is shown only now.\n"
  );
}

/** http://HOST:PORT as the service reads them (CASEBOOK_PORT_<SYSTEM> first: `casebook up`'s override). */
export function serviceUrlOf(spec: ApiKeyToolSpec, env: NodeJS.ProcessEnv): string {
  const upPort = env[`CASEBOOK_PORT_${spec.system.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`];
  const port = upPort || env.PORT || String(spec.defaultPort);
  const host = env.HOST && env.HOST !== "0.0.0.0" && env.HOST !== "::" ? env.HOST : "127.0.0.1";
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

async function call(url: string, method: string, token: string, body?: unknown): Promise<Reply> {
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(TOOL_REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    throw new Unreachable("unreachable", { cause: error });
  }
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = text === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
  } catch {
    parsed = { detail: text.slice(0, 200) };
  }
  return { status: res.status, body: parsed };
}

/** One line for an answer that is not a key. */
function explain(spec: ApiKeyToolSpec, base: string, reply: Reply): string {
  const code = typeof reply.body.code === "string" ? reply.body.code : undefined;
  if (reply.status === 401) {
    return `${spec.tokenEnv} is not the token ${spec.system} at ${base} was started with; use the same value.`;
  }
  if (reply.status === 404 && code !== spec.ownerNotFoundCode) {
    return `${spec.system} at ${base} has no admin API: restart it with ${spec.tokenEnv} set (16+ characters), then run this again.`;
  }
  const detail = typeof reply.body.detail === "string" ? reply.body.detail : JSON.stringify(reply.body);
  return `${spec.system} answered ${reply.status}${code ? ` ${code}` : ""}: ${detail}`;
}

interface ToolArgs {
  ownerId: string;
  rotate: boolean;
  expiresInS: number | undefined;
  url: string | undefined;
  help: boolean;
}

function parseToolArgs(spec: ApiKeyToolSpec, argv: readonly string[]): ToolArgs | string {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: {
        [spec.owner]: { type: "string" },
        rotate: { type: "boolean" },
        "expires-in-s": { type: "string" },
        url: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    return `${(error as Error).message}; see --help.`;
  }
  const v = parsed.values as Record<string, string | boolean | undefined>;
  const ownerId = (v[spec.owner] as string | undefined) ?? spec.defaultOwner;
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(ownerId))
    return `--${spec.owner} ${ownerId}: use 1-64 of A-Z a-z 0-9 _ -.`;
  const raw = v["expires-in-s"] as string | undefined;
  let expiresInS: number | undefined;
  if (raw !== undefined) {
    expiresInS = Number(raw);
    if (!/^\d+$/.test(raw) || expiresInS > MAX_EXPIRES_IN_S) {
      return `--expires-in-s ${raw}: use whole seconds in 0..${MAX_EXPIRES_IN_S}.`;
    }
    if (v.rotate !== true) return "--expires-in-s goes with --rotate.";
  }
  const url = v.url as string | undefined;
  if (url !== undefined && !/^https?:\/\/[^/]+\/?$/.test(url)) return `--url ${url}: use http://host:port.`;
  return {
    ownerId,
    rotate: v.rotate === true,
    expiresInS,
    url: url?.replace(/\/$/, ""),
    help: v.help === true,
  };
}

/** Runs the tool; resolves with its exit code (0 a key was printed, 1 the service said no or is down, 2 usage). */
export async function runApiKeyTool(
  spec: ApiKeyToolSpec,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  io: ToolIo,
): Promise<number> {
  const args = parseToolArgs(spec, argv);
  if (typeof args === "string") {
    io.err(`${spec.system} new-key: ${args}\n`);
    return 2;
  }
  if (args.help) {
    io.out(usage(spec));
    return 0;
  }
  const token = env[spec.tokenEnv];
  if (token === undefined || token === "") {
    io.err(
      `${spec.system} new-key: set ${spec.tokenEnv} to the token the service was started with (the admin API exists only then).\n`,
    );
    return 2;
  }
  const base = args.url ?? serviceUrlOf(spec, env);
  try {
    const issued = await issue(spec, base, token, args);
    if ("error" in issued) {
      io.err(`${spec.system} new-key: ${issued.error}\n`);
      return 1;
    }
    io.out(`${issued.key}\n`);
    io.err(
      `${spec.system} new-key: ${issued.what} for ${spec.owner} ${args.ownerId}, prefix ${issued.prefix}: shown only now, store it.\n` +
        `Try it: ${spec.tryCommand(base, issued.key)}\n`,
    );
    return 0;
  } catch (error) {
    if (!(error instanceof Unreachable)) throw error;
    io.err(
      `${spec.system} new-key: ${spec.system} is not running at ${base}: start it with \`${spec.tokenEnv}=<16+ chars> npx casebook run ${spec.system}\` (or pass --url), then run this again with the same ${spec.tokenEnv}.\n`,
    );
    return 1;
  }
}

async function issue(
  spec: ApiKeyToolSpec,
  base: string,
  token: string,
  args: ToolArgs,
): Promise<{ key: string; prefix: string; what: string } | { error: string }> {
  const keys = `${base}/v1/admin/${spec.owners}/${encodeURIComponent(args.ownerId)}/api-keys`;
  const first = args.rotate
    ? await call(
        `${keys}/rotate`,
        "POST",
        token,
        args.expiresInS === undefined ? {} : { expiresInS: args.expiresInS },
      )
    : await call(keys, "POST", token);
  if (first.status === 201) {
    const until = first.body.previousKeysExpireAt;
    const what =
      typeof until === "string" ? `rotated: a new key (the others work until ${until})` : "a new key";
    return { key: String(first.body.key), prefix: String(first.body.prefix), what };
  }
  if (first.status !== 404 || first.body.code !== spec.ownerNotFoundCode)
    return { error: explain(spec, base, first) };
  // No such owner yet: create it, with its first key (the empty-database path).
  const created = await call(`${base}/v1/admin/${spec.owners}`, "POST", token, {
    id: args.ownerId,
    name: args.ownerId,
  });
  if (created.status !== 201) return { error: explain(spec, base, created) };
  const apiKey = created.body.apiKey as { key: string; prefix: string };
  return { key: apiKey.key, prefix: apiKey.prefix, what: `a new ${spec.owner} and its first key` };
}
