#!/usr/bin/env bash
# Starts PostgreSQL and Redis on their standard ports when they are down, with the
# commands this machine's image uses, and waits until both answer.
# NATS with JetStream too: the stream contract suite runs on the machine's NATS at 4222.
set -uo pipefail

# Debian packages tests start their own instances of (lab's spawners): nginx for
# url-shortener's edge cache, with the cache-purge module its purge on edit/disable needs
# (systems/url-shortener/test/edge-*.test.ts).
if ! command -v nginx >/dev/null 2>&1 || [ ! -e /usr/share/nginx/modules/ngx_http_cache_purge_module.so ]; then
  echo "installing nginx and its cache-purge module"
  (apt-get install -y nginx-light libnginx-mod-http-cache-purge >/dev/null 2>&1 \
    || { apt-get update >/dev/null 2>&1 && apt-get install -y nginx-light libnginx-mod-http-cache-purge >/dev/null 2>&1; }) \
    || echo "nginx: not installed (its tests skip, or fail with CASEBOOK_REQUIRE_ENGINES=1)"
fi

# Prometheus 2.42 for metrics' end-to-end remote-write test and its differential
# (systems/metrics/test/prometheus-remote-write.test.ts, scraper-vs-prometheus.test.ts); lab starts its own instance.
if ! command -v prometheus >/dev/null 2>&1; then
  echo "installing prometheus"
  (DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1 \
    || { apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1; }) \
    || echo "prometheus: not installed (its tests skip, or fail with CASEBOOK_REQUIRE_ENGINES=1)"
fi

# Headless Chromium for the pages' browser tests (packages/console/test/console-e2e.test.ts,
# chat's web page); lab's harness would install it on demand, but inside a test's time.
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing chromium"
  (DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >/dev/null 2>&1 \
    || { apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >/dev/null 2>&1; }) \
    || echo "chromium: not installed (browser tests skip, or fail with CASEBOOK_REQUIRE_ENGINES=1)"
fi

# chat's L4 front (systems/chat/test/l4-front.test.ts): nginx's stream module, a separate package.
if command -v nginx >/dev/null 2>&1 && [ ! -e /usr/lib/nginx/modules/ngx_stream_module.so ]; then
  echo "installing libnginx-mod-stream"
  (apt-get install -y libnginx-mod-stream >/dev/null 2>&1 || { apt-get update >/dev/null 2>&1 && apt-get install -y libnginx-mod-stream >/dev/null 2>&1; }) \
    || echo "libnginx-mod-stream: not installed (chat's L4 front test skips, or fails with CASEBOOK_REQUIRE_ENGINES=1)"
fi

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
# The server's INFO line must say JetStream is on (a plain nats-server would fail the suite).
nats_up() { timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/4222 && read -r line <&3 && echo "$line"' 2>/dev/null | grep -q '"jetstream":true'; }

if ! pg_up; then
  echo "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
fi
if ! redis_up; then
  echo "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi
if ! nats_up; then
  echo "starting NATS (JetStream)"
  mkdir -p /var/lib/nats-server
  setsid nats-server -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log \
    >/dev/null 2>&1 < /dev/null &
fi
for _ in $(seq 1 60); do
  pg_up && redis_up && nats_up && break
  sleep 0.5
done
pg_up && echo "PostgreSQL: up" || { echo "PostgreSQL: DOWN"; exit 1; }
redis_up && echo "Redis: up" || { echo "Redis: DOWN"; exit 1; }
nats_up && echo "NATS: up" || { echo "NATS: DOWN"; exit 1; }
