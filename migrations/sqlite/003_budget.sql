-- Daily token budgets. A key is "global", "workspace:<path>", "kind:<job
-- kind>" or "workspace:*" (the limit of every workspace without its own).
-- Money is in nano-USD (1e-9 USD) so that sums stay exact integers.

-- The limit of each key: from the config file (source config, rewritten at
-- startup) or set by an operator at runtime (source operator, kept until
-- unset). Zero tokens or zero nano_usd: no limit in that unit.
create table budget_limits (
    key        text primary key,
    tokens     bigint not null default 0,
    nano_usd   bigint not null default 0,
    source     text not null,
    updated_at timestamp not null
);

-- What each key used on one budget day (YYYY-MM-DD in the budget zone).
-- Reserve and settle change a key's row only while they hold it: a row lock
-- on Postgres, the single write transaction on SQLite.
create table budget_usage (
    key               text not null,
    day               text not null,
    reserved_tokens   bigint not null default 0,
    spent_tokens      bigint not null default 0,
    reserved_nano_usd bigint not null default 0,
    spent_nano_usd    bigint not null default 0,
    -- settled calls, released (failed) calls, refused reservations, and
    -- settled calls that used more than they reserved
    calls             bigint not null default 0,
    failed_calls      bigint not null default 0,
    refused           bigint not null default 0,
    overruns          bigint not null default 0,
    prompt_tokens     bigint not null default 0,
    completion_tokens bigint not null default 0,
    cache_hit_tokens  bigint not null default 0,
    cache_miss_tokens bigint not null default 0,
    updated_at        timestamp not null,
    primary key (key, day)
);
create index budget_usage_day on budget_usage (day);

-- One row per reservation, so that settle and release are idempotent and a
-- dead process's reservations can be released when they expire.
create table budget_reservations (
    id              text primary key,
    day             text not null,
    -- the keys reserved against, sorted (JSON array)
    keys            text not null,
    tokens          bigint not null,
    nano_usd        bigint not null,
    job_id          bigint,
    kind            text not null default '',
    workspace       text not null default '',
    created_at      timestamp not null,
    expires_at      timestamp not null,
    -- reserved, settled, released or expired
    outcome         text not null,
    finished_at     timestamp,
    actual_tokens   bigint,
    actual_nano_usd bigint
);
create index budget_reservations_open on budget_reservations (expires_at) where outcome = 'reserved';
create index budget_reservations_created on budget_reservations (created_at);
