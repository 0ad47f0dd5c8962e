-- The outbox's streams take the one lease vocabulary of infra's lease queue
-- (@casebook/infra/sql/lease-queue, outbox.ts): lease_until → lease_expires_at, the fencing
-- token lease_token → lease_version. Values carry over, so a key leased by a relay of the
-- previous version stays leased until its lease ends, and its old token cannot write after
-- a new claim (every claim bumps the version). The lease-whole CHECK follows the rename.
ALTER TABLE outbox_streams RENAME COLUMN lease_until TO lease_expires_at;
ALTER TABLE outbox_streams RENAME COLUMN lease_token TO lease_version;
