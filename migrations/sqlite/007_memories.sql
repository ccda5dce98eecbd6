-- Memories (learn/memory.Memory), per workspace or global (workspace ''),
-- with two timelines: recorded_at (when mull stored it) and invalid_at (when
-- it stopped being believed). Nothing is deleted by the system: a forget or a
-- supersede sets invalid_at, invalid_reason and superseded_by.
create table memories (
    id                integer primary key,
    -- the DSH cwd; '' is the global library
    workspace         text not null,
    kind              text not null,
    -- one line, credentials redacted
    text              text not null,
    -- learn/memory.Normalize(text): the key duplicates are found by
    text_norm         text not null,
    -- 1-10; 0 is the kind's default
    importance        integer not null default 0,
    -- the source the writer claimed ('' none) and the path that wrote it
    -- (set by mull: tool, command, retro, sleep, panel, import)
    src               text not null default '',
    origin            text not null,
    -- searches that hit it, and duplicate writes folded into it
    uses              integer not null default 0,
    session_id        text not null default '',
    -- the River job that wrote it; 0 when no job did
    job_id            bigint not null default 0,
    recorded_at       timestamp not null,
    verified_at       timestamp,
    ttl_days          integer not null default 0,
    invalid_at        timestamp,
    invalid_reason    text not null default '',
    -- the memory that replaced it; 0 none
    superseded_by     bigint not null default 0,
    -- instruction-like text: kept for review, never served
    quarantined       boolean not null default false,
    quarantine_reason text not null default '',
    -- the workspace (base name) a global copy was promoted from
    promoted_from     text not null default ''
);
create index memories_workspace_kind on memories (workspace, kind);
create index memories_workspace_recorded on memories (workspace, recorded_at);
create index memories_workspace_norm on memories (workspace, text_norm);

-- The digest each workspace was last served (its key is '' under scope
-- global), published at a watermark: it holds every memory up to
-- watermark_id that was valid at published_at. Newer memories wait as
-- notices until digest.watermark_items of them, or the oldest is older than
-- digest.watermark_age; then the digest is rendered again.
create table digest_state (
    workspace     text primary key,
    -- the memory.scope it was rendered under; another scope re-renders
    scope         text not null,
    watermark_id  bigint not null,
    published_at  timestamp not null,
    text          text not null,
    etag          text not null,
    -- the sections left out (JSON array)
    dropped       text not null default '[]'
);
