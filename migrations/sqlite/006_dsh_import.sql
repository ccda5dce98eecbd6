-- How far mull has read each DSH session log (mull import dsh, serve
-- --watch-dsh), so that a restart neither skips nor repeats lines.
create table dsh_import_files (
    -- the log's path, as found under the DSH home
    path          text primary key,
    -- from the log's header; empty until it was read
    session_id    text not null default '',
    workspace     text not null default '',
    -- where reading resumes: the byte offset of the next unread line (plain
    -- .jsonl), or of the zstd frame holding it (.jsonl.zstd) …
    read_offset   bigint not null default 0,
    -- … and, for zstd, the decompressed bytes of that frame already read
    frame_skip    bigint not null default 0,
    -- complete lines read, and the highest row seq among them (-1: none)
    lines         bigint not null default 0,
    last_seq      bigint not null default -1,
    -- the turn in progress and the tool calls still waiting for their
    -- results (JSON object by call id): what mapping the next line needs
    turn          integer not null default 0,
    pending_calls text not null default '{}',
    -- events handed to ingest from this file, in all
    events        bigint not null default 0,
    -- the file's size and modification time (Unix ns) when last read:
    -- unchanged files are not opened again
    size          bigint not null default 0,
    mtime_ns      bigint not null default 0,
    -- why the last read stopped early (a corrupt line or frame); '' if not
    last_error    text not null default '',
    updated_at    timestamp not null
);
create index dsh_import_files_session on dsh_import_files (session_id);
