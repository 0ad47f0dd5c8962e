/**
 * What a newcomer needs to try each system, gathered from its start and printed by `casebook
 * up` below its table: the API keys this start created (a service logs them once, as
 * `apiKey`), the cache's RESP address (its `respPort`), and a first command that works when
 * pasted — the service's own `try` field (it knows the key), else the manifest's `try`
 * template with `{url}` and `{resp}` filled in. A `next` field (say, how to make the first
 * merchant) is printed as a sentence when there is no command. Below it, a line per system
 * calling this one with a key `casebook up` granted (`callerNotes`, from the manifest).
 *
 * The fields are read from the JSON log lines the service writes during its start, so
 * nothing is printed inside JSON: `\"` escapes never reach the user, and the command is the
 * string the service built.
 *
 * A hook for what others add later (a bearer token for the rate limiter, an ACL user for the
 * cache): a service that logs `token` at start gets it shown here the same way as `apiKey`.
 *
 * @example
 * const notes = new StartNotes();
 * notes.observe("payments", '{"msg":"bootstrap merchant created","apiKey":"sk_…","try":"curl …"}');
 * out(notes.render(plans));
 */
import type { SystemPlan } from "./launch-plan.ts";

export interface StartNote {
  /** Secrets created by this start, by label (`API key`), shown once. */
  secrets: { label: string; value: string }[];
  try?: string;
  next?: string;
  respPort?: number;
}

/** Log fields shown as a secret created at this start, with their label. */
const secretFields: [field: string, label: string][] = [
  ["apiKey", "API key"],
  ["token", "token"],
];

function asString(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

export class StartNotes {
  readonly #notes = new Map<string, StartNote>();

  /** Looks at one stdout line of `name`; anything that is not a JSON object is ignored. */
  observe(name: string, line: string): void {
    if (!line.startsWith("{")) return;
    let record: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(line);
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return;
      record = parsed as Record<string, unknown>;
    } catch {
      return;
    }
    const note = this.#notes.get(name) ?? { secrets: [] };
    for (const [field, label] of secretFields) {
      const value = asString(record[field]);
      if (value !== undefined) note.secrets.push({ label, value });
    }
    note.try = asString(record.try) ?? note.try;
    note.next = asString(record.next) ?? note.next;
    const resp = record.respPort;
    if (typeof resp === "number" && Number.isInteger(resp) && resp > 0) note.respPort = resp;
    this.#notes.set(name, note);
  }

  get(name: string): StartNote | undefined {
    return this.#notes.get(name);
  }

  /** The block below the table; empty when there is nothing to say. */
  render(plans: readonly SystemPlan[]): string {
    const width = Math.max(...plans.map((p) => p.name.length)) + 2;
    const pad = " ".repeat(width + 2);
    const blocks: string[] = [];
    for (const plan of plans) {
      const note = this.#notes.get(plan.name) ?? { secrets: [] };
      const lines: string[] = [];
      for (const secret of note.secrets) lines.push(`${secret.label} (shown only now): ${secret.value}`);
      const resp = note.respPort === undefined ? undefined : respUrl(plan, note.respPort);
      if (resp !== undefined) lines.push(`RESP: ${resp}`);
      const template = plan.tryTemplate;
      const command = note.try ?? (template === undefined ? undefined : fill(template, plan.url, resp));
      if (command !== undefined) lines.push(`try:  ${command}`);
      else if (note.next !== undefined) lines.push(`next: ${note.next}`);
      for (const callerNote of plan.callerNotes ?? []) lines.push(`caller: ${callerNote}`);
      if (lines.length === 0) continue;
      blocks.push(
        lines.map((l, i) => (i === 0 ? `  ${plan.name.padEnd(width)}${l}` : `${pad}${l}`)).join("\n"),
      );
    }
    return blocks.length === 0 ? "" : `To try each system:\n${blocks.join("\n")}\n`;
  }
}

/** `redis://host:port` on the host the plan's URL reaches (loopback for a wildcard bind). */
function respUrl(plan: SystemPlan, port: number): string {
  return `redis://${new URL(plan.url).hostname}:${port}`;
}

function fill(template: string, url: string, resp: string | undefined): string | undefined {
  if (template.includes("{resp}") && resp === undefined) return undefined;
  return template.replaceAll("{url}", url).replaceAll("{resp}", resp ?? "");
}
