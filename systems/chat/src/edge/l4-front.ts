/**
 * The L4 front of the gateways (CH-23, CH-27): nginx's `stream` module (Debian's
 * `libnginx-mod-stream`) balancing TCP connections over the gateway processes, so clients
 * know one address and never a gateway. L4, not L7: the WebSocket is a long-lived TCP
 * connection the front only passes through (no HTTP parsing, no idle cut of its own beyond
 * `proxy_timeout`, set above the gateway's 2 h lifetime); a gateway that is down refuses the
 * connection and nginx tries the next one (`proxy_next_upstream`), a draining one closes
 * its sockets with 4000 and its clients come back through the front to the others.
 *
 * @example
 * const main = l4StreamBlock({ listenPort: 8190, gateways: ["127.0.0.1:8201", "127.0.0.1:8202"] });
 * // load_module …/ngx_stream_module.so; stream { upstream chat_gateways { … } server { listen 127.0.0.1:8190; … } }
 */
export const STREAM_MODULE_PATH = "/usr/lib/nginx/modules/ngx_stream_module.so";

export interface L4FrontOptions {
  readonly listenPort: number;
  /** host:port of each gateway. */
  readonly gateways: readonly string[];
  /** Above the gateway's maximum lifetime (CH-13: 2 h), so the front never cuts a live socket first. */
  readonly proxyTimeoutS?: number;
}

/** nginx main-context text: the module and the `stream {}` block. */
export function l4StreamBlock(options: L4FrontOptions): string {
  const servers = options.gateways.map((g) => `    server ${g} max_fails=1 fail_timeout=2s;`).join("\n");
  return [
    `load_module ${STREAM_MODULE_PATH};`,
    "stream {",
    "  upstream chat_gateways {",
    "    least_conn;",
    servers,
    "  }",
    "  server {",
    `    listen 127.0.0.1:${options.listenPort};`,
    "    proxy_pass chat_gateways;",
    "    proxy_connect_timeout 1s;",
    "    proxy_next_upstream on;",
    `    proxy_timeout ${options.proxyTimeoutS ?? 2 * 3_600 + 60}s;`,
    "  }",
    "}",
  ].join("\n");
}
