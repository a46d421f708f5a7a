-- Tool calls grouped by identity (tool + argument hash): what was repeated, and how it ended.
SELECT run_id, tool, input_hash, any_value(arguments) AS arguments, count(*) AS calls,
       count(*) FILTER (WHERE status = 'error') AS errors, min(ts) AS first_at, max(ts) AS last_at
FROM tool_calls
GROUP BY ALL
HAVING count(*) > 1
ORDER BY calls DESC
