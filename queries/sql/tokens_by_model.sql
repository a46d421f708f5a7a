-- Tokens and calls per model and run.
SELECT run_id, model, count(*) AS calls, sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens, sum(cache_read_tokens) AS cache_read_tokens,
       round(sum(duration_ms) / 1000, 3) AS seconds
FROM llm_calls
GROUP BY ALL
ORDER BY sum(input_tokens) + sum(output_tokens) DESC
