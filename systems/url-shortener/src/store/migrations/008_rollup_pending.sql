-- 008_rollup_pending: the rollups are added to, not recomputed (issue 18). Recomputing a day's
-- bucket from the raw log every round cost a scan of the whole day's clicks every 10 s — at a
-- few hundred clicks a second, millions of rows, the visit-count query that times out at scale.
--
-- The INSERT that appends a batch to the log also appends its link clicks here, in the same
-- statement (store/click-batch.ts); a rollup round takes what is here with one DELETE …
-- RETURNING and adds it to the buckets, in one statement (store/click-store.ts `rollup`): each
-- pending row is counted once, even with two replicas rolling up at once.
CREATE TABLE click_rollup_pending (
  hour         timestamptz NOT NULL,
  domain       text        NOT NULL,
  code         text        NOT NULL,
  bot          boolean     NOT NULL,
  visitor_hash text        NOT NULL,
  click_count  integer     NOT NULL
);

-- The distinct visitors already counted in a bucket, so a round adds only the new ones. Kept
-- for 2 days (store/click-store.ts VISITOR_RETENTION_MS): a click older than that arriving late
-- (an edge log ingested days after) adds to its bucket's clicks and may count its visitor again.
CREATE TABLE click_rollup_visitors (
  domain       text        NOT NULL,
  code         text        NOT NULL,
  granularity  text        NOT NULL,
  bucket_start timestamptz NOT NULL,
  visitor_hash text        NOT NULL,
  PRIMARY KEY (domain, code, granularity, bucket_start, visitor_hash)
);
CREATE INDEX click_rollup_visitors_bucket ON click_rollup_visitors (bucket_start);

-- From here the log and the rollups agree by construction; make them agree now: every bucket
-- recomputed from the log once (clicks flushed after the last recompute included), and the
-- visitors of the retained buckets recorded.
DELETE FROM click_rollups;
INSERT INTO click_rollups (domain, code, granularity, bucket_start, clicks, bot_clicks, visitors)
  SELECT domain, code, g.granularity, date_trunc(g.granularity, at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
         coalesce(sum(click_count) FILTER (WHERE NOT bot), 0), coalesce(sum(click_count) FILTER (WHERE bot), 0),
         count(DISTINCT visitor_hash) FILTER (WHERE NOT bot)
    FROM clicks CROSS JOIN (VALUES ('hour'), ('day')) AS g (granularity)
   WHERE NOT orphan
   GROUP BY 1, 2, 3, 4;
INSERT INTO click_rollup_visitors (domain, code, granularity, bucket_start, visitor_hash)
  SELECT DISTINCT domain, code, g.granularity, date_trunc(g.granularity, at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', visitor_hash
    FROM clicks CROSS JOIN (VALUES ('hour'), ('day')) AS g (granularity)
   WHERE NOT orphan AND NOT bot AND at >= now() - interval '3 days';
