/**
 * The list of keys `casebook up` grants to the systems calling a service (issue 17): the
 * callee's `grants.apiKeyEnv` variable holds `caller=key,…`, one key per caller, each of the
 * callee's own kind (`sk` for payments, `whk` for webhooks). The CLI writes it
 * (`formatCallerApiKeys`); the callee checks it with `callerApiKeysPattern` in its config and
 * reads it with `parseCallerApiKeys`, then registers each key for an owner named after its caller.
 *
 * @example
 * const pattern = callerApiKeysPattern("sk"); // for field.string({ pattern, secret: true, … })
 * const text = formatCallerApiKeys([{ caller: "flash-sale", key: "sk_…" }]); // "flash-sale=sk_…"
 * parseCallerApiKeys(text); // [{ caller: "flash-sale", key: "sk_…", prefix: "sk_1f…" }]
 */
import { API_KEY_ID_BYTES, API_KEY_SECRET_CHARS, apiKeyScheme } from "./api-key.ts";

export interface CallerApiKey {
  /** The caller's name (a system's folder name), used as the owner's id: `flash-sale`. */
  caller: string;
  key: string;
}

/** A caller's name: the id of the owner its key is registered for. */
const CALLER = "[A-Za-z0-9_-]{1,64}";

/** The whole `caller=key,…` value, for keys of `kind`. */
export function callerApiKeysPattern(kind: string): RegExp {
  apiKeyScheme(kind); // checks the kind
  const one = `${CALLER}=${kind}_[0-9a-f]{${API_KEY_ID_BYTES * 2}}_[A-Za-z0-9_-]{${API_KEY_SECRET_CHARS}}`;
  return new RegExp(`^${one}(,${one})*$`);
}

/** A granted key as read back, with its public prefix (`sk_<16 hex>`) to log in its place. */
export interface ParsedCallerApiKey extends CallerApiKey {
  prefix: string;
}

/** The pairs of a value already checked against `callerApiKeysPattern`; none when unset. */
export function parseCallerApiKeys(text: string | undefined): ParsedCallerApiKey[] {
  if (text === undefined || text === "") return [];
  return text.split(",").map((pair) => {
    const at = pair.indexOf("=");
    const key = pair.slice(at + 1);
    // Up to the second '_': the kind and the hex id hold none, the secret (base64url) may.
    const prefix = key.slice(0, key.indexOf("_", key.indexOf("_") + 1));
    return { caller: pair.slice(0, at), key, prefix };
  });
}

/** The value for the callee's variable. */
export function formatCallerApiKeys(keys: readonly CallerApiKey[]): string {
  return keys.map(({ caller, key }) => `${caller}=${key}`).join(",");
}
