-- Every failed tool call with its error, in order.
SELECT run_id, ts, tool, arguments, error, exit_code, span_id, seq_start AS seq
FROM tool_calls
WHERE status = 'error'
ORDER BY bundle_id, start_ns
