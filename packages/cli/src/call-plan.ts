/**
 * Issue 17 in `casebook up`: the systems that call each other are wired as their manifests
 * declare. A caller's `calls` entry (flash-sale: `{system: "payments", urlEnv: "PAYMENTS_URL",
 * apiKeyEnv: "PAYMENTS_API_KEY"}`) gets the callee's URL when the callee is launched too; when
 * the callee `grants` keys (payments: `{apiKeyEnv: "PAYMENTS_CALLER_API_KEYS", apiKeyKind: "sk"}`)
 * the CLI mints one key of that kind per caller, gives it to the caller, and lists every granted
 * key to the callee as `caller=key,…`, which registers them at start; the callee's `callerNote`
 * (what that key is for there) becomes one line per caller below `up`'s table. The caller's environment
 * wins: a URL already set means the caller calls a service of the user's choosing, so neither its
 * URL nor its key is touched and nothing is granted for it, and so when a variable of the call's
 * `unlessSet` is set (another choice the callee's URL would override); a key already set is kept (it is the
 * user's to have registered); a grant list already set is kept and this launch's keys are added
 * after it. The keys come from `wiring-keys.ts`: the same ones launch after launch. The CLI knows
 * no system by name and imports none.
 *
 * @example
 * wireCalls(selection.plans, { env: process.env, keys: keptWiringKeys(file, randomBytes) });
 * plans.find((p) => p.name === "flash-sale")!.env.PAYMENTS_API_KEY; // "sk_…"
 * plans.find((p) => p.name === "payments")!.env.PAYMENTS_CALLER_API_KEYS; // "flash-sale=sk_…"
 */
import { type CallerApiKey, formatCallerApiKeys } from "@casebook/kit/caller-api-keys";
import type { SystemPlan } from "./launch-plan.ts";
import type { WiringKeys } from "./wiring-keys.ts";

export interface WireCallsOptions {
  env: NodeJS.ProcessEnv;
  keys: WiringKeys;
}

/** Sets each caller's URL and key and each callee's grant list in the plans' environments (in place). */
export function wireCalls(plans: readonly SystemPlan[], options: WireCallsOptions): void {
  const granted = new Map<SystemPlan, CallerApiKey[]>();
  for (const caller of plans) {
    for (const call of caller.calls ?? []) {
      const callee = plans.find((plan) => plan.name === call.system && plan !== caller);
      if (callee === undefined || given(options.env[call.urlEnv]) !== undefined) continue;
      if ((call.unlessSet ?? []).some((name) => given(options.env[name]) !== undefined)) continue;
      caller.env[call.urlEnv] = callee.url;
      if (call.apiKeyEnv === undefined || callee.grants === undefined) continue;
      const own = given(options.env[call.apiKeyEnv]);
      if (own !== undefined) continue;
      const key = options.keys.keyFor(`calls ${caller.name}→${callee.name}`, callee.grants.apiKeyKind);
      caller.env[call.apiKeyEnv] = key;
      granted.set(callee, [...(granted.get(callee) ?? []), { caller: caller.name, key }]);
    }
  }
  for (const [callee, keys] of granted) {
    const variable = callee.grants!.apiKeyEnv;
    const own = given(options.env[variable]);
    callee.env[variable] = [...(own === undefined ? [] : [own]), formatCallerApiKeys(keys)].join(",");
    const note = callee.grants!.callerNote;
    if (note !== undefined) callee.callerNotes = keys.map((k) => fillCallerNote(note, k, callee.url));
  }
}

function given(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

function fillCallerNote(template: string, { caller, key }: CallerApiKey, url: string): string {
  return template.replaceAll("{caller}", caller).replaceAll("{key}", key).replaceAll("{url}", url);
}
