-- Calls, failures and latency percentiles per tool.
SELECT run_id, tool, count(*) AS calls, count(*) FILTER (WHERE status = 'error') AS errors,
       round(quantile_cont(latency_ms, 0.5), 3) AS p50_ms, round(quantile_cont(latency_ms, 0.95), 3) AS p95_ms,
       round(max(latency_ms), 3) AS max_ms
FROM tool_calls
GROUP BY ALL
ORDER BY calls DESC
