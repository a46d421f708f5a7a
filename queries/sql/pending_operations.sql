-- Operations declared (operation.intent) with no outcome or outcome `unknown`: check the target by hand.
SELECT run_id, operation_id, kind, target, status, intent_seq, intent_ts
FROM operations
WHERE status IN ('pending', 'unknown')
ORDER BY bundle_id, intent_seq
