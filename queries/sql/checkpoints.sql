-- Checkpoints in order, with the time between them: where a resume would start from.
SELECT run_id, step, checkpoint_id, parent_checkpoint_id, ts,
       round(epoch(ts) - epoch(lag(ts) OVER (PARTITION BY bundle_id ORDER BY ts)), 3) AS seconds_since_previous
FROM checkpoints
ORDER BY bundle_id, ts
