-- Snowflake worker ids (10 bits): each process takes the next value at start, cycling
-- through 0..1023, so two live processes share one only after 1,024 starts while the
-- first still runs; the messages' primary key (chat_id, id) refuses the rare repeat, and
-- the send retries with a fresh id.
CREATE SEQUENCE node_ids MINVALUE 0 MAXVALUE 1023 START 0 CYCLE;
