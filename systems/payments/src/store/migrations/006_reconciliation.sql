-- 006_reconciliation: the daily comparison of the ledger with the acquirer's D+1 settlement file
-- (seed 000 §4, PY-10). Every difference is an exception row for operations; a correction is a NEW
-- ledger transaction (idem key recon:<exception id>) linked here, never an edit of an entry.

CREATE TABLE reconciliation_runs (
  id              int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  settlement_date date NOT NULL,
  -- Where the file came from: the acquirer URL or a local path, for the audit trail.
  source          text NOT NULL,
  file_rows       int4 NOT NULL CHECK (file_rows >= 0),
  matched         int4 NOT NULL CHECK (matched >= 0),
  differences     int4 NOT NULL CHECK (differences >= 0),
  -- Differences first seen by this run; a re-run of the same day finds them again but adds none.
  new_exceptions  int4 NOT NULL CHECK (new_exceptions >= 0),
  started_at      timestamptz NOT NULL,
  finished_at     timestamptz NOT NULL
);
CREATE INDEX reconciliation_runs_date ON reconciliation_runs (settlement_date, id);

CREATE TABLE reconciliation_exceptions (
  id              int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id          int8 NOT NULL REFERENCES reconciliation_runs (id),
  settlement_date date NOT NULL,
  kind            text NOT NULL CHECK (kind IN ('missing_in_ledger', 'missing_at_acquirer', 'amount_mismatch')),
  operation       text NOT NULL CHECK (operation IN ('capture', 'refund')),
  acquirer_key    text NOT NULL,
  currency        char(3) NOT NULL,
  -- Minor units: what our ledger booked (NULL: nothing) and what the acquirer settled (NULL: nothing).
  expected_minor  int8,
  actual_minor    int8,
  payment_id      int8 REFERENCES payments (id),
  refund_id       int8 REFERENCES payment_refunds (id),
  status          text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
  resolution      text,
  adjustment_transaction_id int8 REFERENCES transactions (id),
  created_at      timestamptz NOT NULL,
  resolved_at     timestamptz,
  -- A re-run of a day must not add the same difference twice (ON CONFLICT DO NOTHING).
  UNIQUE (settlement_date, kind, operation, acquirer_key),
  CHECK ((status = 'resolved') = (resolved_at IS NOT NULL)),
  CHECK (expected_minor IS NOT NULL OR actual_minor IS NOT NULL)
);
CREATE INDEX reconciliation_exceptions_open ON reconciliation_exceptions (created_at, id) WHERE status = 'open';
