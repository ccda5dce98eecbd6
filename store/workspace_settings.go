package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// WorkspaceSetting is one per-workspace setting set through the API: a
// canonical key (config.WorkspaceKeys) and its canonical text.
type WorkspaceSetting struct {
	Workspace, Key, Value string
	UpdatedAt             time.Time
	// UpdatedBy says who set it: admin, agent or cli.
	UpdatedBy string
}

// WorkspaceSettings lists every API-set setting, by workspace and key.
func (s *Store) WorkspaceSettings(ctx context.Context, q querier) ([]WorkspaceSetting, error) {
	rows, err := q.QueryContext(ctx, `select workspace, key, value, updated_at, updated_by from workspace_settings order by workspace, key`)
	if err != nil {
		return nil, fmt.Errorf("list workspace settings: %w", err)
	}
	defer rows.Close()
	var out []WorkspaceSetting
	for rows.Next() {
		var w WorkspaceSetting
		if err := rows.Scan(&w.Workspace, &w.Key, &w.Value, &w.UpdatedAt, &w.UpdatedBy); err != nil {
			return nil, err
		}
		w.UpdatedAt = w.UpdatedAt.UTC()
		out = append(out, w)
	}
	return out, rows.Err()
}

// PutWorkspaceSetting sets one workspace's key, replacing its value.
func (s *Store) PutWorkspaceSetting(ctx context.Context, tx *sql.Tx, w WorkspaceSetting) error {
	_, err := tx.ExecContext(ctx, `insert into workspace_settings (workspace, key, value, updated_at, updated_by)
		values ($1, $2, $3, $4, $5)
		on conflict (workspace, key) do update set value = excluded.value, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
		w.Workspace, w.Key, w.Value, utcMicro(w.UpdatedAt), w.UpdatedBy)
	if err != nil {
		return fmt.Errorf("put workspace setting %s: %w", w.Key, err)
	}
	return nil
}

// DeleteWorkspaceSetting clears one workspace's key.
func (s *Store) DeleteWorkspaceSetting(ctx context.Context, tx *sql.Tx, workspace, key string) error {
	if _, err := tx.ExecContext(ctx, `delete from workspace_settings where workspace = $1 and key = $2`, workspace, key); err != nil {
		return fmt.Errorf("delete workspace setting %s: %w", key, err)
	}
	return nil
}
