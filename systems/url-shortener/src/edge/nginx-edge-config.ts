/**
 * The edge cache in front of the service (US-07, US-09, US-10, US-12, US-13): nginx's
 * `proxy_cache`, honouring the origin's `Cache-Control` (no `proxy_cache_valid`: the origin
 * alone says how long a redirect may be kept, so a link's own lifetime and its expiry cap,
 * US-12, decide at the edge too).
 *
 * - Key: the link's short domain (the Host mapped as the origin maps it: an unknown host is
 *   the default domain) and the path — one entry per link, so a purge by (domain, code) is
 *   complete. A request with a query string bypasses the cache (its Location depends on the
 *   query): it reaches the origin every time, and is still logged here.
 * - `proxy_cache_lock`: one request per code reaches the origin while a miss is being filled.
 * - Stale on error only as the origin allows (`stale-if-error`, redirect-decision.ts): hot
 *   links are served while the origin or its store fails (US-10), but never past a link's
 *   expiry (US-12). No `error`/`http_5xx` in `proxy_cache_use_stale`: those would override
 *   the header with no bound. nginx (since 1.19.3) applies `stale-if-error` to network
 *   errors and timeouts only, not to a 5xx answer, so a live origin whose store fails (its
 *   503 SQL_UNAVAILABLE) would end the hot links' service. A guard hop between the cache and
 *   the origin (a second server on a unix socket, misses only) turns the origin's 502/503/504
 *   — and its own failure to reach the origin — into a closed connection (`return 444`):
 *   an upstream error, which `stale-if-error` covers with its bound. A miss with no cached
 *   entry then fails with the edge's 502.
 * - Purge (`libnginx-mod-http-cache-purge`): `GET /_edge/purge/{code}` with the link's domain
 *   as Host drops the entry (200; 404 when it was not cached), from `purgeAllow` only. The
 *   service calls it on every disable, edit and delete (workers/edge-purger.ts).
 * - A filter in front (US-16): requests per client address are rate-limited (`limit_req`,
 *   `perClient`: 100/s with a burst of 200 by default); past it the edge answers 429 and
 *   nothing reaches the origin. Blocking by pattern (a WAF) is an operator's addition here.
 * - Clicks (US-07, US-09, US-15): every visit the edge answers — hit, miss, stale, 404, 410 —
 *   is one JSON line of `accessLog` (the `clicks` format), written when the response carries
 *   the origin's `X-Short-Link-Visit` marker (the redirect route's answers only, cached ones
 *   included), and ingested by the service (workers/edge-log-ingester.ts). The origin sets
 *   the marker, and records nothing itself, only for requests carrying `X-Edge-Token`: each
 *   click is counted once, from where it was served.
 *
 * `edgeMainDirectives` loads the purge module (top level of nginx.conf); `edgeHttpBlock` is
 * the `http {}` block for lab's `spawnNginx` (tests, the bench) and `casebook run
 * url-shortener --edge` (src/edge/run-with-edge.ts).
 *
 * @example
 * const nginx = await spawnNginx({ main: edgeMainDirectives(), http: (port, dir) => edgeHttpBlock({ port, dir,
 *   origin: "127.0.0.1:8109", domains: ["localhost:8109"], token, accessLog: join(dir, "clicks.log") }) });
 */
import { join } from "node:path";

/** Debian's path of the purge module (package libnginx-mod-http-cache-purge). */
export const CACHE_PURGE_MODULE = "/usr/share/nginx/modules/ngx_http_cache_purge_module.so";
/** The response header that marks a visit for the edge's click log. */
export const VISIT_MARKER_HEADER = "x-short-link-visit";
/** The request header the edge proves itself with. */
export const EDGE_TOKEN_HEADER = "x-edge-token";
/** Where the purge endpoint lives (codes never contain "/", so it cannot be a code). */
export const PURGE_PATH = "/_edge/purge/";

export interface EdgeOptions {
  /** The port nginx listens on (127.0.0.1). */
  port: number;
  /** nginx's prefix dir: the cache lives in `<dir>/cache`. */
  dir: string;
  /** The service, `host:port`. */
  origin: string;
  /** The service's short domains' hosts (`go.example.com`, `localhost:8109`), the default first. */
  domains: readonly string[];
  /** Sent to the origin as X-Edge-Token (URL_SHORTENER_EDGE_TOKEN there). */
  token: string;
  /** The JSON click log's path (URL_SHORTENER_EDGE_ACCESS_LOG there). */
  accessLog: string;
  /** Who may purge (nginx `allow`). Default 127.0.0.1. */
  purgeAllow?: string;
  /** The cache's size bound, in megabytes. Default 256. */
  maxSizeMb?: number;
  /** Requests per second per client address, and the burst above it (US-16). Default 100/s, 200. */
  perClient?: { ratePerS: number; burst: number };
}

export function edgeMainDirectives(): string {
  return `load_module ${CACHE_PURGE_MODULE};`;
}

/** nginx string literal: the values come from config, but a quote must never end the directive. */
function quoted(value: string): string {
  if (/["\\\n\r;{}$]/.test(value))
    throw new RangeError(`edge config value ${JSON.stringify(value)}: bad character`);
  return `"${value}"`;
}

const CLICKS_FORMAT =
  `'{"t":$msec,"host":"$http_host","uri":"$uri","status":$status,"ref":"$http_referer",` +
  `"ua":"$http_user_agent","ip":"$remote_addr","id":"$request_id","cache":"$upstream_cache_status"}'`;

export function edgeHttpBlock(options: EdgeOptions): string {
  const cache = join(options.dir, "cache");
  const guard = join(options.dir, "origin-guard.sock");
  const [defaultDomain, ...others] = options.domains;
  if (defaultDomain === undefined) throw new RangeError("edge config: at least one domain");
  const domainMap = others.map((host) => `    ${quoted(host)} ${quoted(host)};`).join("\n");
  const perClient = options.perClient ?? { ratePerS: 100, burst: 200 };
  if (!(Number.isInteger(perClient.ratePerS) && perClient.ratePerS > 0 && Number.isInteger(perClient.burst)))
    throw new RangeError("edge config: perClient needs an integer rate > 0 and an integer burst");
  return `
  limit_req_zone $binary_remote_addr zone=per_client:10m rate=${perClient.ratePerS}r/s;
  limit_req_status 429;
  proxy_cache_path ${cache} levels=1:2 keys_zone=links:10m max_size=${options.maxSizeMb ?? 256}m inactive=1d use_temp_path=off;
  upstream origin { server ${options.origin}; keepalive 32; }
  upstream origin_guard { server unix:${guard}; keepalive 32; }
  log_format clicks escape=json ${CLICKS_FORMAT};
  map $http_host $link_domain {
    default ${quoted(defaultDomain)};
${domainMap}
  }
  # The guard hop: the origin's 5xx of unavailability becomes an upstream error for the cache (stale-if-error).
  server {
    listen unix:${guard};
    access_log off;
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_connect_timeout 1s;
      proxy_read_timeout 5s;
      proxy_intercept_errors on;
      error_page 502 503 504 = @unavailable;
    }
    location @unavailable { return 444; }
  }
  server {
    listen 127.0.0.1:${options.port};
    location / {
      limit_req zone=per_client burst=${perClient.burst} nodelay;
      proxy_pass http://origin_guard;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Edge-Token ${quoted(options.token)};
      proxy_connect_timeout 1s;
      proxy_read_timeout 6s;
      proxy_cache links;
      proxy_cache_key $link_domain$uri;
      proxy_cache_bypass $is_args;
      proxy_no_cache $is_args;
      proxy_cache_lock on;
      proxy_cache_lock_timeout 5s;
      proxy_cache_use_stale updating;
      add_header X-Cache-Status $upstream_cache_status always;
      access_log ${quoted(options.accessLog)} clicks if=$sent_http_x_short_link_visit;
    }
    location ~ ^${PURGE_PATH}(.+)$ {
      allow ${options.purgeAllow ?? "127.0.0.1"};
      deny all;
      proxy_cache_purge links $link_domain/$1;
    }
    # The same origin with its Cache-Control ignored: what an edge does with a 302 that says nothing (US-08).
    location /no-cache-control/ {
      proxy_pass http://origin/;
      proxy_set_header Host $http_host;
      proxy_cache links;
      proxy_cache_key no-cache-control$link_domain$uri;
      proxy_ignore_headers Cache-Control Expires;
      proxy_hide_header Cache-Control;
      add_header X-Cache-Status $upstream_cache_status always;
    }
  }
`;
}
