-- 021_payments_require: a condition that fails the statement it is part of (issue 14's group commit).
-- The group of new payments is ONE autocommit statement: the POSTs' idempotency keys advanced (a
-- data-modifying CTE), their holds (ledger_write) and their rows. All of it must commit or none:
-- when a key is no longer its request's (a retry took it over), the statement must fail, not write
-- the rest. A CTE cannot roll its siblings back; an error can: the holds are filtered through this
-- check of the advanced keys' count, and its exception aborts the whole statement.
CREATE FUNCTION payments_require(p_ok boolean, p_reason text)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  IF p_ok IS NOT TRUE THEN
    RAISE EXCEPTION 'group refused: %', p_reason USING ERRCODE = 'PYG01';
  END IF;
  RETURN true;
END $$;
