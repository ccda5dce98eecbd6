-- One row per call to the model: what it cost and how it ended.
create table llm_calls (
    id                 text primary key,
    job_id             bigint not null default 0,
    kind               text not null,
    workspace          text not null default '',
    model              text not null,
    prompt_tokens      bigint not null default 0,
    completion_tokens  bigint not null default 0,
    cache_hit_tokens   bigint not null default 0,
    cache_miss_tokens  bigint not null default 0,
    cost_nano_usd      bigint not null default 0,
    latency_ms         bigint not null default 0,
    outcome            text not null,
    error_reason       text not null default '',
    error              text not null default '',
    created_at         timestamptz not null
);
create index llm_calls_created on llm_calls (created_at);
create index llm_calls_job on llm_calls (job_id);
create index llm_calls_workspace on llm_calls (workspace, created_at);
