-- A/B benchmark runs (seed 004's benchmark, issue 14): frozen cases,
-- snapshots of what each side is shown, runs (a workflow each) and their
-- cells. What must never change once written is refused by the database
-- itself, not only by the service: a frozen case, a snapshot, a recorded
-- cell and a decided run.

-- Benchmark cases. Only a draft changes; freezing stamps frozen_at and the
-- material hash (sha256 of the canonical {id, statement, rubric,
-- capability}), and from then on the row is immutable.
create table bench_cases (
    id         text primary key,
    set_name   text not null default 'default',
    title      text not null,
    statement  text not null,
    rubric     text not null,
    capability text not null default '',
    state      text not null,
    case_hash  text not null default '',
    created_at timestamp not null,
    frozen_at  timestamp,
    check (state = 'draft' and case_hash = '' and frozen_at is null
        or state = 'frozen' and case_hash <> '' and frozen_at is not null)
);
create index bench_cases_set on bench_cases (set_name, state, id);
create trigger bench_cases_frozen_update before update on bench_cases
    when old.state = 'frozen'
begin
    select raise(abort, 'bench_cases: a frozen case is immutable');
end;
create trigger bench_cases_frozen_delete before delete on bench_cases
    when old.state = 'frozen'
begin
    select raise(abort, 'bench_cases: a frozen case is immutable');
end;

-- Snapshots: a harness snapshot's merged entries and refinement history,
-- or a memory snapshot's digest, in body (JSON); written once.
create table bench_snapshots (
    id            text primary key,
    -- harness or memory
    kind          text not null check (kind in ('harness', 'memory')),
    session       text not null default '',
    workspace     text not null default '',
    -- JSON {entries, history, digest}
    body          text not null,
    state_hash    text not null,
    -- set on a derived candidate: the refinement and the reference
    refinement_id text not null default '',
    reference     text not null default '',
    captured_at   timestamp not null
);
create index bench_snapshots_captured on bench_snapshots (captured_at);
create trigger bench_snapshots_written_once_update before update on bench_snapshots
begin
    select raise(abort, 'bench_snapshots are written once, at capture');
end;
create trigger bench_snapshots_written_once_delete before delete on bench_snapshots
begin
    select raise(abort, 'bench_snapshots are written once, at capture');
end;

-- Runs. status is running until the decide step records the decision
-- (decided); a failed or cancelled run is read from its workflow run.
create table bench_runs (
    id              text primary key,
    -- refinement or memory
    kind            text not null check (kind in ('refinement', 'memory')),
    refinement_id   text not null default '',
    reference_id    text not null references bench_snapshots (id),
    candidate_id    text not null references bench_snapshots (id),
    workspace       text not null default '',
    set_name        text not null default '',
    -- JSON array of the case ids, in the run's order
    case_ids        text not null,
    runs            integer not null,
    -- JSON of learn/bench.Options
    options         text not null,
    executor        text not null,
    status          text not null,
    workflow_run_id text not null default '',
    by_whom         text not null default '',
    -- JSON of learn/bench.Decision
    decision        text,
    created_at      timestamp not null,
    decided_at      timestamp,
    check (status = 'running' and decision is null and decided_at is null
        or status = 'decided' and decision is not null and decided_at is not null)
);
create index bench_runs_created on bench_runs (created_at);
create index bench_runs_status on bench_runs (status, created_at);
create trigger bench_runs_decided_once before update on bench_runs
    when old.status = 'decided'
begin
    select raise(abort, 'bench_runs: a decided run is final');
end;

-- Cells: one row per case x side x iteration, scored once (the primary
-- key; the service inserts with on conflict do nothing). A failed cell's
-- score is null, never 0.
create table bench_cells (
    run_id         text not null references bench_runs (id),
    side           text not null check (side in ('reference', 'candidate')),
    case_id        text not null references bench_cases (id),
    iteration      integer not null check (iteration >= 1),
    status         text not null,
    score          real,
    failure_reason text not null default '',
    detail         text not null default '',
    feedback       text not null default '',
    -- JSON of learn/bench.Evidence (null when the executor failed)
    evidence       text,
    -- the DSH executor's session log (JSON lines, capped)
    log            text,
    snapshot_id    text not null references bench_snapshots (id),
    state_hash     text not null,
    case_hash      text not null,
    duration_ms    bigint not null default 0,
    -- the step job that recorded it, and its attempt
    job_id         bigint not null default 0,
    attempt        integer not null default 0,
    recorded_at    timestamp not null,
    primary key (run_id, side, case_id, iteration),
    check (status = 'ok' and score is not null and score >= 0 and score <= 100
        or status = 'failed' and score is null)
);
create trigger bench_cells_written_once_update before update on bench_cells
begin
    select raise(abort, 'bench_cells are scored once');
end;
create trigger bench_cells_written_once_delete before delete on bench_cells
begin
    select raise(abort, 'bench_cells are scored once');
end;

-- The refinements of a scope are listed in commit order by the rowid of
-- harness_refinements: its rows are never deleted and SQLite serializes
-- every write, so insertion order is commit order (Postgres numbers them
-- in a column instead).
