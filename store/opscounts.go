package store

import (
	"context"
	"fmt"
)

// QueueState is whether a River queue is paused.
type QueueState struct {
	Name   string
	Paused bool
}

// QueueStates lists River's queues and whether each is paused, for
// metrics. It reads river_queue directly, as JobCounts reads river_job.
func (s *Store) QueueStates(ctx context.Context) ([]QueueState, error) {
	rows, err := s.readDB().QueryContext(ctx, "select name, paused_at is not null from river_queue order by name")
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	defer rows.Close()
	var out []QueueState
	for rows.Next() {
		var q QueueState
		if err := rows.Scan(&q.Name, &q.Paused); err != nil {
			return nil, fmt.Errorf("list queues: %w", err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// GateCounts is what the trust gate left in the database, for metrics.
type GateCounts struct {
	// Quarantined counts held-back texts by kind: the quarantine table's
	// kinds (handoff, playbook, merge, …) and "memory" for memories
	// stored flagged.
	Quarantined map[string]int64
	// RedactedTexts counts stored texts holding a redaction marker, by
	// table (memories, quarantine, handoffs): every writer's, whatever path
	// wrote them.
	RedactedTexts map[string]int64
	// RetroRedactions sums the credentials retros redacted (retro_runs'
	// counts), which also counts those in entries a retro then rejected.
	RetroRedactions int64
}

// redactionMarker starts every marker learn/trust writes for a credential:
// "[redacted]" or "[redacted:TYPE]". LIKE treats neither bracket specially
// in SQLite or PostgreSQL.
const redactionMarker = "%[redacted%"

// CountGate counts what the trust gate quarantined and redacted.
func (s *Store) CountGate(ctx context.Context) (GateCounts, error) {
	g := GateCounts{Quarantined: map[string]int64{}, RedactedTexts: map[string]int64{}}
	rows, err := s.DB.QueryContext(ctx, `select kind, count(*) from quarantine group by kind
		union all select 'memory', count(*) from memories where quarantined`)
	if err != nil {
		return g, fmt.Errorf("count quarantined: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind string
		var n int64
		if err := rows.Scan(&kind, &n); err != nil {
			return g, fmt.Errorf("count quarantined: %w", err)
		}
		g.Quarantined[kind] += n
	}
	if err := rows.Err(); err != nil {
		return g, fmt.Errorf("count quarantined: %w", err)
	}
	for _, table := range []string{"memories", "quarantine", "handoffs"} {
		var n int64
		if err := s.DB.QueryRowContext(ctx, "select count(*) from "+table+" where text like $1", redactionMarker).Scan(&n); err != nil {
			return g, fmt.Errorf("count redacted %s: %w", table, err)
		}
		g.RedactedTexts[table] = n
	}
	sum := "coalesce(sum(cast(json_extract(counts, '$.redacted') as integer)), 0)"
	if s.Dialect == Postgres {
		sum = "coalesce(sum((counts::jsonb->>'redacted')::bigint), 0)"
	}
	if err := s.DB.QueryRowContext(ctx, "select "+sum+" from retro_runs").Scan(&g.RetroRedactions); err != nil {
		return g, fmt.Errorf("count retro redactions: %w", err)
	}
	return g, nil
}
