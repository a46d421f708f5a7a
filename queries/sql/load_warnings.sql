-- Problems found while loading (bad lines, missing files): file:line and what was done.
SELECT bundle_id, file, line, message FROM load_warnings ORDER BY bundle_id, file, line
