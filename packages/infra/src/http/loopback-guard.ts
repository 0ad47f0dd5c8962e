/**
 * "No unauthenticated service beyond loopback" (architecture rule 8), checked at start:
 * a service whose API has no credentials configured may listen on loopback only (a
 * developer's machine: `npm start` needs no secret); bound anywhere else, it refuses to
 * start with one line naming the setting that turns credentials on. Every service with
 * an optional credential setting runs this on each listener's host before it listens.
 *
 * @example
 * requireCredentialsBeyondLoopback({
 *   host: config.host, hostEnv: "HOST", credentialsSet: tokens.length > 0,
 *   setting: "RATE_LIMITER_TOKEN", credential: "a bearer token (comma-separated for several)",
 * });
 */
import { classifyIp } from "@casebook/kit/address-class";
import { ConfigError } from "@casebook/kit/config";
import { parseIp } from "@casebook/kit/ip-address";

/**
 * True when `host` can only be reached from this machine: `localhost`, 127.0.0.0/8, ::1
 * (bracketed or not). A wildcard (0.0.0.0, ::) or any other name is not: a name may
 * resolve to any interface.
 *
 * @example
 * isLoopbackHost("127.0.0.1"); // true
 * isLoopbackHost("0.0.0.0");   // false
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  if (bare.toLowerCase() === "localhost") return true;
  const ip = parseIp(bare);
  return ip !== undefined && classifyIp(ip) === "loopback";
}

export interface CredentialsGuardOptions {
  /** The interface the listener binds. */
  host: string;
  /** The setting that chose it, named in the message. Default `HOST`. */
  hostEnv?: string;
  /** Whether the API asks for credentials (a token or key is configured). */
  credentialsSet: boolean;
  /** The setting that configures them: `RATE_LIMITER_TOKEN`. */
  setting: string;
  /** What to put in it, in a few words: "a bearer token (comma-separated for several)". */
  credential: string;
}

/**
 * Throws a ConfigError (the service entry prints it and exits 2) when the listener is
 * beyond loopback and no credentials are configured.
 */
export function requireCredentialsBeyondLoopback(options: CredentialsGuardOptions): void {
  if (options.credentialsSet || isLoopbackHost(options.host)) return;
  const hostEnv = options.hostEnv ?? "HOST";
  throw new ConfigError([
    {
      setting: options.setting,
      env: options.setting,
      source: "missing",
      value: undefined,
      expected: `set when ${hostEnv} is not loopback`,
      message: `${hostEnv}=${options.host} listens beyond loopback without credentials: set ${options.setting} to ${options.credential}, or listen on 127.0.0.1`,
    },
  ]);
}
