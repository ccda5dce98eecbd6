package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Worker is one mull process working jobs, known by its River client id.
type Worker struct {
	ClientID    string    `json:"client_id"`
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	// Queues are the queues the process works, sorted.
	Queues []string `json:"queues"`
}

// WorkerStatus is a worker and whether it is live: its last beat is within
// workers.dead_after. One that is not has stopped (killed, lost its
// machine) and waits for a watchdog to rescue its jobs and forget it.
type WorkerStatus struct {
	Worker
	Live bool `json:"live"`
}

// WorkerStatuses says of each worker whether it is live at now.
func WorkerStatuses(ws []Worker, now time.Time, deadAfter time.Duration) []WorkerStatus {
	out := make([]WorkerStatus, 0, len(ws))
	for _, w := range ws {
		if w.Queues == nil {
			w.Queues = []string{}
		}
		out = append(out, WorkerStatus{Worker: w, Live: !w.HeartbeatAt.Before(now.Add(-deadAfter))})
	}
	return out
}

// Heartbeat records that a worker process is alive.
func (s *Store) Heartbeat(ctx context.Context, w Worker) error {
	queues := slices.Sorted(slices.Values(w.Queues))
	_, err := s.DB.ExecContext(ctx, `insert into mull_workers (client_id, host, pid, started_at, heartbeat_at, queues)
		values ($1, $2, $3, $4, $5, $6)
		on conflict (client_id) do update set heartbeat_at = excluded.heartbeat_at, queues = excluded.queues`,
		w.ClientID, w.Host, w.PID, w.StartedAt.UTC(), w.HeartbeatAt.UTC(), strings.Join(queues, ","))
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
	return s.workers(ctx, "where heartbeat_at < $1 order by heartbeat_at", horizon.UTC())
}

// ListWorkers lists every worker process that has a row: the live ones and
// those that stopped heartbeating but no watchdog has forgotten yet, the
// most recent beat first.
func (s *Store) ListWorkers(ctx context.Context) ([]Worker, error) {
	return s.workers(ctx, "order by heartbeat_at desc, client_id")
}

func (s *Store) workers(ctx context.Context, where string, args ...any) ([]Worker, error) {
	rows, err := s.readDB().QueryContext(ctx, `select client_id, host, pid, started_at, heartbeat_at, queues
		from mull_workers `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	defer rows.Close()
	var out []Worker
	for rows.Next() {
		var w Worker
		var queues string
		if err := rows.Scan(&w.ClientID, &w.Host, &w.PID, &w.StartedAt, &w.HeartbeatAt, &queues); err != nil {
			return nil, fmt.Errorf("list workers: %w", err)
		}
		w.StartedAt, w.HeartbeatAt = w.StartedAt.UTC(), w.HeartbeatAt.UTC()
		if queues != "" {
			w.Queues = strings.Split(queues, ",")
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// LiveWorkers counts the workers whose last heartbeat is at or after since.
func (s *Store) LiveWorkers(ctx context.Context, since time.Time) (int64, error) {
	var n int64
	if err := s.readDB().QueryRowContext(ctx, "select count(*) from mull_workers where heartbeat_at >= $1", since.UTC()).Scan(&n); err != nil {
		return 0, fmt.Errorf("count live workers: %w", err)
	}
	return n, nil
}

// AvailableJobs counts jobs waiting to be worked now (state available) by
// queue, leaving out paused queues: their jobs wait for an operator, not
// for a worker.
func (s *Store) AvailableJobs(ctx context.Context) (map[string]int64, error) {
	rows, err := s.readDB().QueryContext(ctx, `select queue, count(*) from river_job where state = 'available'
		and queue not in (select name from river_queue where paused_at is not null) group by queue`)
	if err != nil {
		return nil, fmt.Errorf("count available jobs: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var q string
		var n int64
		if err := rows.Scan(&q, &n); err != nil {
			return nil, fmt.Errorf("count available jobs: %w", err)
		}
		out[q] = n
	}
	return out, rows.Err()
}
