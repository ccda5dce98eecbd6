package store

import (
	"context"
	"fmt"
	"time"
)

// Worker is one mull process working jobs, known by its River client id.
type Worker struct {
	ClientID    string
	Host        string
	PID         int
	StartedAt   time.Time
	HeartbeatAt time.Time
}

// Heartbeat records that a worker process is alive.
func (s *Store) Heartbeat(ctx context.Context, w Worker) error {
	_, err := s.DB.ExecContext(ctx, `insert into mull_workers (client_id, host, pid, started_at, heartbeat_at)
		values ($1, $2, $3, $4, $5)
		on conflict (client_id) do update set heartbeat_at = excluded.heartbeat_at`,
		w.ClientID, w.Host, w.PID, w.StartedAt.UTC(), w.HeartbeatAt.UTC())
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

// ForgetWorker removes a worker's row, on clean shutdown or once its jobs
// are rescued.
func (s *Store) ForgetWorker(ctx context.Context, clientID string) error {
	if _, err := s.DB.ExecContext(ctx, "delete from mull_workers where client_id = $1", clientID); err != nil {
		return fmt.Errorf("forget worker: %w", err)
	}
	return nil
}

// StaleWorkers lists workers whose last heartbeat is before horizon.
func (s *Store) StaleWorkers(ctx context.Context, horizon time.Time) ([]Worker, error) {
	rows, err := s.DB.QueryContext(ctx, `select client_id, host, pid, started_at, heartbeat_at
		from mull_workers where heartbeat_at < $1 order by heartbeat_at`, horizon.UTC())
	if err != nil {
		return nil, fmt.Errorf("stale workers: %w", err)
	}
	defer rows.Close()
	var out []Worker
	for rows.Next() {
		var w Worker
		if err := rows.Scan(&w.ClientID, &w.Host, &w.PID, &w.StartedAt, &w.HeartbeatAt); err != nil {
			return nil, fmt.Errorf("stale workers: %w", err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}
