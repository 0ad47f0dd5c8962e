-- The batched send statement (history-store.ts, `#appendTexts`) takes each conversation's
-- counter and inserts the rows in one statement. When a concurrent resend of the same
-- client_msg_id committed first, its conditional insert stores nothing while the counter was
-- already moved: the statement must then fail as a whole, so the increment is rolled back and
-- no seq is skipped. Plain SQL cannot raise an error on a condition; this function does, with
-- its own SQLSTATE, which the store catches to send those items the one-by-one way.
CREATE FUNCTION chat_send_batch_lost_race() RETURNS integer
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'a resend of the batch committed first; the batch is rolled back'
    USING ERRCODE = 'CH001';
END;
$$;
