/**
 * A system's manifest: the `casebook` field of `systems/<name>/package.json`,
 * which tells the CLI what the system is, how far along it is, what to run and
 * on which port. Validation collects every problem at once, each naming the file
 * and the field, so one run of `casebook list` shows all there is to fix.
 *
 * @example
 * const { manifest, problems } = parseManifest(
 *   { name: "@casebook/rate-limiter", casebook: { title: "distributed rate limiter", status: "working", port: 8101 } },
 *   "systems/rate-limiter/package.json",
 *   "rate-limiter",
 * );
 * manifest?.main; // "src/main.ts"
 */

import { API_KEY_KIND_PATTERN } from "@casebook/kit/api-key";

export const systemStatuses = ["working", "in progress", "planned"] as const;
export type SystemStatus = (typeof systemStatuses)[number];

export const engineKinds = ["sql", "redis"] as const;
/** `sql`: durable truth (PostgreSQL / PGlite); `redis`: hot atomic state (Redis / in-process). */
export type EngineKind = (typeof engineKinds)[number];

/** HTTP services listen in this range (ARCHITECTURE.md, Engines), clear of the engines' own ports. */
export const httpPortMin = 8100;
export const httpPortMax = 8199;

/** Variables the CLI sets for each child itself; a manifest default for them would be silently ignored. */
export const reservedEnvKeys = ["PORT", "HOST", "DATABASE_URL", "REDIS_URL", "CASEBOOK_DATA"] as const;

export interface SystemManifest {
  /** The design's name, as in the systems table: "distributed rate limiter". */
  title: string;
  status: SystemStatus;
  /** Entry started by `casebook up` / `run`, relative to the system folder. */
  main: string;
  /** Entry started by `casebook bench`, relative to the system folder. */
  bench: string;
  /** Default HTTP port (8100–8199); `/healthz` is probed on it. */
  port: number;
  /** Defaults for the child's environment; the caller's environment wins over them. */
  env: Record<string, string>;
  /** Engines the system uses, for the "engine" column of `casebook up`. */
  engines: EngineKind[];
  /** Its command-line tools, name → entry (`casebook <system> <tool> [args…]`), e.g. payments' `reconcile`. */
  tools: Record<string, string>;
  /**
   * A first command to try it, printed by `casebook up` when the system's own start log gives
   * none (a `try` field): `{url}` becomes its HTTP URL, `{resp}` its RESP URL.
   */
  try?: string;
  /**
   * What the system offers the web console (its summary, ports, plots), kept as written: the
   * console package validates it (`@casebook/console/console-declaration`), the CLI only carries it.
   */
  console?: unknown;
  /**
   * A system that scrapes the others' `/metrics` (metrics): `casebook up` sets `targetsEnv` to
   * every service it starts (`job=url,…`), makes an API key of `apiKeyKind` for the scrape
   * tenant and sets it in `apiKeyEnv`, and tells the console where to read the plots from.
   */
  scrapes?: ScrapeDeclaration;
  /**
   * The systems it calls (flash-sale → payments): when `casebook up` starts both, it sets
   * `urlEnv` to the callee's URL and, when the callee `grants` keys, `apiKeyEnv` to a key minted
   * for this caller (call-plan.ts).
   */
  calls: CallDeclaration[];
  /** How a system gives keys to its callers (payments): `casebook up` sets `apiKeyEnv` to `caller=key,…`. */
  grants?: GrantDeclaration;
}

export interface CallDeclaration {
  /** The callee's folder name: `payments`. */
  system: string;
  /** The variable taking the callee's base URL: `PAYMENTS_URL`. */
  urlEnv: string;
  /** The variable taking the caller's key: `PAYMENTS_API_KEY`; absent when the callee asks for none. */
  apiKeyEnv?: string;
  /**
   * Variables that, set by the user, mean the caller should not be wired to the callee (metrics'
   * `METRICS_ALERT_WEBHOOK_URL`: the user chose a plain receiver, which `WEBHOOKS_URL` would override).
   */
  unlessSet?: string[];
}

export interface GrantDeclaration {
  /** The variable listing the callers' keys as `caller=key,…`: `PAYMENTS_CALLER_API_KEYS`. */
  apiKeyEnv: string;
  /** The keys' kind (`sk`): kit's api-key format, which the system checks. */
  apiKeyKind: string;
  /**
   * What a caller's key means here, printed by `casebook up` below the table, one line per
   * caller: a template with `{caller}`, `{key}` and `{url}` (webhooks: the caller's events
   * arrive as the tenant of its name, and its key adds subscriptions there).
   */
  callerNote?: string;
}

export interface ScrapeDeclaration {
  /** The variable listing the targets: `METRICS_SCRAPE_TARGETS`. */
  targetsEnv: string;
  /** The variable of the key the console reads with: `METRICS_SCRAPE_API_KEY`. */
  apiKeyEnv: string;
  /** The key's kind (`mtk`): kit's api-key format, which the system checks. */
  apiKeyKind: string;
}

export interface ManifestResult {
  /** Present only when `problems` is empty. */
  manifest?: SystemManifest;
  problems: string[];
}

const knownFields = [
  "title",
  "status",
  "main",
  "bench",
  "port",
  "env",
  "engines",
  "tools",
  "try",
  "console",
  "scrapes",
  "calls",
  "grants",
];
const systemNamePattern = /^[a-z][a-z0-9-]*$/;
const toolNamePattern = /^[a-z][a-z0-9-]*$/;
const envKeyPattern = /^[A-Z_][A-Z0-9_]*$/;
const entryPattern = /\.(ts|mts|js|mjs)$/;

/** Validates the parsed package.json of the system in folder `dirName`; `file` names it in messages. */
export function parseManifest(pkg: unknown, file: string, dirName: string): ManifestResult {
  const problems: string[] = [];
  const report = (field: string, what: string) => problems.push(`${file}: field "${field}" ${what}`);
  if (!isRecord(pkg)) return { problems: [`${file}: is not a JSON object`] };
  if (pkg.name !== `@casebook/${dirName}`) {
    report("name", `must be "@casebook/${dirName}" (the folder's name), got ${show(pkg.name)}`);
  }
  const raw = pkg.casebook;
  if (!isRecord(raw)) {
    report("casebook", `must be an object like {"title": …, "status": …, "port": …}, got ${show(raw)}`);
    return { problems };
  }
  for (const key of Object.keys(raw)) {
    if (!knownFields.includes(key))
      report(`casebook.${key}`, `is not known (known: ${knownFields.join(", ")})`);
  }
  const title = typeof raw.title === "string" ? raw.title.trim() : "";
  if (title === "") report("casebook.title", `must be a non-empty string, got ${show(raw.title)}`);
  const status = systemStatuses.find((s) => s === raw.status);
  if (status === undefined) {
    report(
      "casebook.status",
      `must be one of ${systemStatuses.map(show).join(", ")}, got ${show(raw.status)}`,
    );
  }
  const port = raw.port;
  if (typeof port !== "number" || !Number.isInteger(port) || port < httpPortMin || port > httpPortMax) {
    report(
      "casebook.port",
      `must be an integer in ${httpPortMin}–${httpPortMax} (HTTP services), got ${show(port)}`,
    );
  }
  const main = checkEntry(raw.main, "src/main.ts", "casebook.main", report);
  const bench = checkEntry(raw.bench, "bench/main.ts", "casebook.bench", report);
  const env = checkEnv(raw.env, report);
  const engines = checkEngines(raw.engines, report);
  const tools = checkTools(raw.tools, report);
  const scrapes = checkScrapes(raw.scrapes, report);
  const calls = checkCalls(raw.calls, report);
  const grants = checkGrants(raw.grants, report);
  if (raw.try !== undefined && (typeof raw.try !== "string" || raw.try.trim() === "")) {
    report("casebook.try", `must be a shell command like "curl -s {url}/v1/things", got ${show(raw.try)}`);
  }
  if (problems.length > 0 || status === undefined || typeof port !== "number") return { problems };
  const manifest: SystemManifest = { title, status, main, bench, port, env, engines, tools, calls };
  if (typeof raw.try === "string") manifest.try = raw.try;
  if (raw.console !== undefined) manifest.console = raw.console;
  if (scrapes !== undefined) manifest.scrapes = scrapes;
  if (grants !== undefined) manifest.grants = grants;
  return { manifest, problems };
}

function checkCalls(value: unknown, report: Report): CallDeclaration[] {
  if (value === undefined) return [];
  const example = '[{"system": "payments", "urlEnv": "PAYMENTS_URL", "apiKeyEnv": "PAYMENTS_API_KEY"}]';
  if (!Array.isArray(value)) {
    report("casebook.calls", `must be a list like ${example}, got ${show(value)}`);
    return [];
  }
  const calls: CallDeclaration[] = [];
  value.forEach((item: unknown, index) => {
    const field = `casebook.calls[${index}]`;
    if (!isRecord(item)) {
      report(field, `must be an object like ${example.slice(1, -1)}, got ${show(item)}`);
      return;
    }
    let ok = true;
    for (const key of Object.keys(item)) {
      if (["system", "urlEnv", "apiKeyEnv", "unlessSet"].includes(key)) continue;
      report(`${field}.${key}`, "is not known (known: system, urlEnv, apiKeyEnv, unlessSet)");
      ok = false;
    }
    if (typeof item.system !== "string" || !systemNamePattern.test(item.system)) {
      report(`${field}.system`, `must be a system's folder name like "payments", got ${show(item.system)}`);
      ok = false;
    }
    ok = checkEnvName(item.urlEnv, `${field}.urlEnv`, report) && ok;
    if (item.apiKeyEnv !== undefined) ok = checkEnvName(item.apiKeyEnv, `${field}.apiKeyEnv`, report) && ok;
    if (item.unlessSet !== undefined) {
      if (!Array.isArray(item.unlessSet)) {
        report(`${field}.unlessSet`, `must be a list of variable names, got ${show(item.unlessSet)}`);
        ok = false;
      } else {
        item.unlessSet.forEach((name: unknown, at) => {
          ok = checkEnvName(name, `${field}.unlessSet[${at}]`, report) && ok;
        });
      }
    }
    if (ok) calls.push(item as unknown as CallDeclaration);
  });
  return calls;
}

function checkGrants(value: unknown, report: Report): GrantDeclaration | undefined {
  if (value === undefined) return undefined;
  if (!isRecord(value)) {
    const example = '{"apiKeyEnv": "PAYMENTS_CALLER_API_KEYS", "apiKeyKind": "sk"}';
    report("casebook.grants", `must be an object like ${example}, got ${show(value)}`);
    return undefined;
  }
  const { apiKeyEnv, apiKeyKind, callerNote } = value;
  let ok = checkEnvName(apiKeyEnv, "casebook.grants.apiKeyEnv", report);
  ok = checkKeyKind(apiKeyKind, "casebook.grants.apiKeyKind", report) && ok;
  if (callerNote !== undefined && (typeof callerNote !== "string" || !callerNote.includes("{caller}"))) {
    report("casebook.grants.callerNote", `must be a string naming {caller}, got ${show(callerNote)}`);
    ok = false;
  }
  if (!ok) return undefined;
  const grant: GrantDeclaration = { apiKeyEnv: apiKeyEnv as string, apiKeyKind: apiKeyKind as string };
  if (callerNote !== undefined) grant.callerNote = callerNote as string;
  return grant;
}

function checkEnvName(value: unknown, field: string, report: Report): boolean {
  if (typeof value === "string" && envKeyPattern.test(value)) return true;
  report(field, `must be an UPPER_SNAKE_CASE variable name, got ${show(value)}`);
  return false;
}

function checkKeyKind(value: unknown, field: string, report: Report): boolean {
  if (typeof value === "string" && API_KEY_KIND_PATTERN.test(value)) return true;
  report(field, `must be a key kind like "mtk" (1–8 lower-case letters), got ${show(value)}`);
  return false;
}

function checkScrapes(value: unknown, report: Report): ScrapeDeclaration | undefined {
  if (value === undefined) return undefined;
  const example =
    '{"targetsEnv": "METRICS_SCRAPE_TARGETS", "apiKeyEnv": "METRICS_SCRAPE_API_KEY", "apiKeyKind": "mtk"}';
  if (!isRecord(value)) {
    report("casebook.scrapes", `must be an object like ${example}, got ${show(value)}`);
    return undefined;
  }
  const { targetsEnv, apiKeyEnv, apiKeyKind } = value;
  let ok = checkEnvName(targetsEnv, "casebook.scrapes.targetsEnv", report);
  ok = checkEnvName(apiKeyEnv, "casebook.scrapes.apiKeyEnv", report) && ok;
  ok = checkKeyKind(apiKeyKind, "casebook.scrapes.apiKeyKind", report) && ok;
  return ok ? ({ targetsEnv, apiKeyEnv, apiKeyKind } as ScrapeDeclaration) : undefined;
}

type Report = (field: string, what: string) => void;

function checkEntry(value: unknown, fallback: string, field: string, report: Report): string {
  if (value === undefined) return fallback;
  const ok =
    typeof value === "string" &&
    entryPattern.test(value) &&
    !value.startsWith("/") &&
    !value.split(/[\\/]/).includes("..");
  if (!ok)
    report(field, `must be a .ts/.js path inside the system folder, like "${fallback}", got ${show(value)}`);
  return typeof value === "string" ? value : fallback;
}

function checkEnv(value: unknown, report: Report): Record<string, string> {
  if (value === undefined) return {};
  if (!isRecord(value)) {
    report("casebook.env", `must be an object of NAME: "value" strings, got ${show(value)}`);
    return {};
  }
  const env: Record<string, string> = {};
  for (const [key, item] of Object.entries(value)) {
    if (!envKeyPattern.test(key)) report(`casebook.env.${key}`, "must be an UPPER_SNAKE_CASE variable name");
    else if ((reservedEnvKeys as readonly string[]).includes(key)) {
      report(`casebook.env.${key}`, "is set by the CLI itself (use casebook.port for the port)");
    } else if (typeof item !== "string") report(`casebook.env.${key}`, `must be a string, got ${show(item)}`);
    else env[key] = item;
  }
  return env;
}

function checkTools(value: unknown, report: Report): Record<string, string> {
  if (value === undefined) return {};
  if (!isRecord(value)) {
    report("casebook.tools", `must be an object of name: "entry.ts" strings, got ${show(value)}`);
    return {};
  }
  const tools: Record<string, string> = {};
  for (const [name, entry] of Object.entries(value)) {
    const field = `casebook.tools.${name}`;
    if (!toolNamePattern.test(name)) report(field, 'must be a lowercase name like "reconcile"');
    else tools[name] = checkEntry(entry, "src/workers/<tool>-cli.ts", field, report);
  }
  return tools;
}

function checkEngines(value: unknown, report: Report): EngineKind[] {
  if (value === undefined) return [...engineKinds];
  const engines = Array.isArray(value) ? value.filter((v): v is EngineKind => engineKinds.includes(v)) : [];
  if (!Array.isArray(value) || engines.length !== value.length || new Set(engines).size !== engines.length) {
    report(
      "casebook.engines",
      `must list distinct values of ${engineKinds.map(show).join(", ")}, got ${show(value)}`,
    );
  }
  return engines;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function show(value: unknown): string {
  return value === undefined ? "nothing" : JSON.stringify(value);
}
