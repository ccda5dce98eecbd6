-- The queues each worker process works, so `mull workers list` can say
-- which process serves which queue (comma-separated, sorted).
alter table mull_workers add column queues text not null default '';

-- The request messages of an LLM call, as JSON, kept for llm.keep_prompts
-- (default 7 days) so an operator can see what a retro read; '' once
-- pruned, or when they were never kept. Credentials in them are redacted
-- by the trust gate before they are stored.
alter table llm_calls add column messages text not null default '';
