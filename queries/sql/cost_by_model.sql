-- USD per run and model from the price table (NULL usd: the model has no price; see docs/store-schema.md#prices).
SELECT run_id, model, price_model, count(*) AS calls, sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens, sum(cache_read_tokens) AS cache_read_tokens,
       CAST(round(sum(CAST(cost_usd AS DECIMAL(18, 9))), 6) AS DOUBLE) AS usd
FROM llm_calls
GROUP BY ALL
ORDER BY usd DESC NULLS LAST
