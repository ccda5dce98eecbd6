-- The model's answer of an LLM call (issue 15: the panel's /llm/{id} shows
-- the prompt and the answer), as JSON ({"content", "reasoning_content"}),
-- kept under the same rule as messages: only for llm.keep_prompts, with
-- credentials redacted by the trust gate, and '' once pruned with them.
alter table llm_calls add column response text not null default '';
