-- The model's answer of an LLM call (issue 15: the panel's /llm/{id} shows
-- the prompt and the answer), as JSON ({"content", "reasoning_content"}),
-- kept under the same rule as messages: only for llm.keep_prompts, with
-- credentials redacted by the trust gate, and '' once pruned with them.
alter table llm_calls add column response text not null default '';

-- Indexes the panel's pages need.
-- /memories counts a workspace's memories by kind and state (kind, state,
-- quarantined, invalid_at is null): this index holds every column it
-- reads, so the count never visits the table.
create index memories_panel_counts on memories (workspace, kind, state, quarantined, invalid_at);
-- /memories/{id} lists the memories it superseded or was promoted from;
-- most memories have neither, so only those that do are indexed.
create index memories_superseded_by on memories (superseded_by) where superseded_by <> 0;
create index memories_promoted_from on memories (promoted_from_id) where promoted_from_id <> 0;
-- /llm?kind= lists a kind's calls newest first.
create index llm_calls_kind on llm_calls (kind, created_at);
-- /harness/refinements/{id} lists the review verdicts of one refinement.
create index harness_reviews_refinement on harness_reviews (refinement_id);
