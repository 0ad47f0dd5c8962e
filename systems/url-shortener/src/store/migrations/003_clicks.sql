-- 003_clicks: the append-only click log, one partition a day, and its rollups (US-15).
-- Rows are only ever inserted (in batches, by the flusher) and read by the rollup and the
-- analytics queries; retention drops a whole day's partition, never row by row.
CREATE TABLE clicks (
  at            timestamptz NOT NULL,
  domain        text        NOT NULL,
  code          text        NOT NULL,
  status        smallint    NOT NULL,
  referrer_host text,
  ua_family     text        NOT NULL,
  bot           boolean     NOT NULL,
  visitor_hash  text        NOT NULL,
  -- An unknown, expired or disabled code (404/410): counted apart, never in a link's clicks.
  orphan        boolean     NOT NULL
) PARTITION BY RANGE (at);
CREATE INDEX clicks_link_at ON clicks (domain, code, at);

-- Clicks per link per hour and per day, recomputed from the raw log (so they agree with it).
CREATE TABLE click_rollups (
  domain       text        NOT NULL,
  code         text        NOT NULL,
  granularity  text        NOT NULL CHECK (granularity IN ('hour', 'day')),
  bucket_start timestamptz NOT NULL,
  clicks       bigint      NOT NULL,
  bot_clicks   bigint      NOT NULL,
  visitors     bigint      NOT NULL,
  PRIMARY KEY (domain, code, granularity, bucket_start)
);
