-- Per-workspace settings set through the API (issue 16:
-- PUT /v1/admin/workspaces/{ws}/config, the agent's scope switch, and
-- `mull workspaces config set`), one row per workspace and key. They win
-- over the config file's [workspaces."<path>"] table and lose to the
-- environment; clearing a key deletes its row. value is the canonical text
-- config.ParseWorkspaceSetting checked.
create table workspace_settings (
    workspace  text not null,
    key        text not null,
    value      text not null,
    updated_at timestamptz not null,
    updated_by text not null default '',
    primary key (workspace, key)
);
