-- One row per loaded run: identity, outcome and totals. Used by `analyze`, the report and the TUI.
SELECT
    r.bundle_id, r.run_id, r.status, r.agent_name, r.workflow_name, r.started_at, r.ended_at,
    round(epoch(r.ended_at) - epoch(r.started_at), 3) AS duration_s,
    r.failure_type, r.failure_message, r.bundle_path,
    CAST(r.budget AS VARCHAR) AS budget,
    (SELECT count(*) FROM llm_calls l WHERE l.bundle_id = r.bundle_id) AS llm_calls,
    (SELECT coalesce(sum(input_tokens), 0) FROM llm_calls l WHERE l.bundle_id = r.bundle_id) AS input_tokens,
    (SELECT coalesce(sum(output_tokens), 0) FROM llm_calls l WHERE l.bundle_id = r.bundle_id) AS output_tokens,
    (SELECT coalesce(sum(cache_read_tokens), 0) FROM llm_calls l WHERE l.bundle_id = r.bundle_id) AS cache_read_tokens,
    (SELECT CAST(round(sum(CAST(cost_usd AS DECIMAL(18, 9))), 6) AS DOUBLE) FROM llm_calls l
      WHERE l.bundle_id = r.bundle_id) AS cost_usd,
    (SELECT count(*) FROM llm_calls l WHERE l.bundle_id = r.bundle_id AND l.cost_usd IS NULL) AS unpriced_llm_calls,
    (SELECT count(*) FROM tool_calls t WHERE t.bundle_id = r.bundle_id) AS tool_calls,
    (SELECT count(*) FROM tool_calls t WHERE t.bundle_id = r.bundle_id AND t.status = 'error') AS tool_errors,
    (SELECT count(*) FROM spans s WHERE s.bundle_id = r.bundle_id) AS spans,
    (SELECT count(*) FROM events e WHERE e.bundle_id = r.bundle_id) AS events,
    (SELECT count(*) FROM load_warnings w WHERE w.bundle_id = r.bundle_id) AS warnings
FROM runs r
ORDER BY r.bundle_id
