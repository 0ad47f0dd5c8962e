/**
 * The edge cache in front of the service (US-09, US-10, US-13): nginx's `proxy_cache`, keyed
 * by host and URI, honouring the origin's `Cache-Control: max-age` (no `proxy_cache_valid`:
 * the origin alone says how long a redirect may be kept, so a link's own lifetime and its
 * expiry cap, US-12, decide at the edge too). `proxy_cache_lock` sends one request per code
 * to the origin while a miss is being filled; `proxy_cache_use_stale` serves a cached
 * redirect when the origin (or its store) fails, so hot links keep working and cold ones fail
 * with the origin's own error. The `http {}` block for lab's `spawnNginx` (tests) and, later,
 * `casebook run url-shortener --edge`.
 *
 * Declared cost: a stale redirect may be served during an outage even past its max-age, and
 * — for a link that expired during the outage — past its expiry; nginx 1.22 has no per-entry
 * cap on staleness (the `stale-if-error` extension would need the origin to send it, capped
 * by the link's remaining life: not built).
 *
 * @example
 * const nginx = await spawnNginx({ http: (port, dir) => edgeHttpBlock({ port, dir, origin: "127.0.0.1:8109" }) });
 */
import { join } from "node:path";

export interface EdgeOptions {
  /** The port nginx listens on (127.0.0.1). */
  port: number;
  /** nginx's prefix dir: the cache lives in `<dir>/cache`. */
  dir: string;
  /** The service, `host:port`. */
  origin: string;
  /** The cache's size bound, in megabytes. Default 256. */
  maxSizeMb?: number;
}

export function edgeHttpBlock(options: EdgeOptions): string {
  const cache = join(options.dir, "cache");
  return `
  proxy_cache_path ${cache} levels=1:2 keys_zone=links:10m max_size=${options.maxSizeMb ?? 256}m inactive=1d use_temp_path=off;
  upstream origin { server ${options.origin}; keepalive 32; }
  server {
    listen 127.0.0.1:${options.port};
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_connect_timeout 1s;
      proxy_read_timeout 5s;
      proxy_cache links;
      proxy_cache_key $http_host$request_uri;
      proxy_cache_lock on;
      proxy_cache_lock_timeout 5s;
      proxy_cache_use_stale error timeout updating http_500 http_502 http_503 http_504;
      add_header X-Cache-Status $upstream_cache_status always;
    }
    # The same origin with its Cache-Control ignored: what an edge does with a 302 that says nothing (US-08).
    location /no-cache-control/ {
      proxy_pass http://origin/;
      proxy_set_header Host $http_host;
      proxy_cache links;
      proxy_cache_key $http_host$request_uri;
      proxy_ignore_headers Cache-Control Expires;
      proxy_hide_header Cache-Control;
      add_header X-Cache-Status $upstream_cache_status always;
    }
  }
`;
}
