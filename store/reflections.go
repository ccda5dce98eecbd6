package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Reflection relations (learn/reflect): what a proposed lesson is to the
// lessons in force.
const (
	RelationNew    = "new"
	RelationRepeat = "repeat"
	RelationRevise = "revise"
	RelationNone   = "none"
)

// Reflection is one reflection on a task, by the reflect_task job or the
// agent (task_reflect), with what became of each lesson it proposed.
type Reflection struct {
	ID     int64
	TaskID string
	// By is job or agent.
	By         string
	JobID      int64
	Assessment string
	// Critique is the adversarial review as JSON ('' none); Verdict its
	// verdict (holds, narrowed, withdrawn; '' none).
	Critique        string
	Verdict         string
	LessonsRecorded int
	RecordedAt      time.Time
	Items           []ReflectionItem
}

// ReflectionItem is one proposed lesson of a reflection.
type ReflectionItem struct {
	// Index is its position in the reflection's output.
	Index    int
	Relation string
	// TargetID is the lesson a repeat or revise names; MemoryID the memory
	// written for it; 0 none.
	TargetID int64
	MemoryID int64
	// RefusedCheck names the check that refused it ('' accepted), and
	// RefusedReason says why.
	RefusedCheck  string
	RefusedReason string
	// Critique is this lesson's adversarial review (JSON, '' none) and
	// Verdict its outcome (holds, narrowed, withdrawn; '' none).
	Critique string
	Verdict  string
}

// InsertReflection stores a reflection and its items in one call, and
// returns its id. The task must exist; a bad reflection is refused whole.
func (s *Store) InsertReflection(ctx context.Context, q querier, r Reflection) (int64, error) {
	if err := checkReflection(r); err != nil {
		return 0, fmt.Errorf("insert reflection of task %s: %w", r.TaskID, err)
	}
	if _, err := s.GetTask(ctx, q, r.TaskID); err != nil {
		return 0, fmt.Errorf("insert reflection: %w", err)
	}
	var id int64
	err := q.QueryRowContext(ctx, `insert into reflections (task_id, reflected_by, job_id, assessment, critique, verdict,
		lessons_recorded, recorded_at) values ($1, $2, $3, $4, $5, $6, $7, $8) returning id`,
		r.TaskID, r.By, r.JobID, r.Assessment, r.Critique, r.Verdict, r.LessonsRecorded, utcMicro(r.RecordedAt)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("insert reflection of task %s: %w", r.TaskID, err)
	}
	for _, it := range r.Items {
		if _, err := q.ExecContext(ctx, `insert into reflection_items (reflection_id, idx, relation, target_id, memory_id,
			refused_check, refused_reason, critique, verdict) values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			id, it.Index, it.Relation, it.TargetID, it.MemoryID, it.RefusedCheck, it.RefusedReason, it.Critique, it.Verdict); err != nil {
			return 0, fmt.Errorf("insert reflection of task %s: item %d: %w", r.TaskID, it.Index, err)
		}
	}
	return id, nil
}

func checkReflection(r Reflection) error {
	switch {
	case r.By != ReflectedByJob && r.By != ReflectedByAgent:
		return fmt.Errorf("by %q is not %s or %s", r.By, ReflectedByJob, ReflectedByAgent)
	case r.RecordedAt.IsZero():
		return errors.New("recorded_at is required")
	case r.LessonsRecorded < 0:
		return fmt.Errorf("lessons_recorded %d is negative", r.LessonsRecorded)
	case r.Critique != "" && !json.Valid([]byte(r.Critique)):
		return fmt.Errorf("critique %q is not JSON", cutForError(r.Critique))
	}
	seen := map[int]bool{}
	for _, it := range r.Items {
		switch it.Relation {
		case RelationNew, RelationRepeat, RelationRevise, RelationNone:
		default:
			return fmt.Errorf("item %d: relation %q is not one of new, repeat, revise, none", it.Index, it.Relation)
		}
		switch {
		case seen[it.Index]:
			return fmt.Errorf("item %d appears twice", it.Index)
		case it.RefusedCheck == "" && it.RefusedReason != "":
			return fmt.Errorf("item %d: a refusal reason without the check that refused it", it.Index)
		}
		seen[it.Index] = true
	}
	return nil
}

// ListReflections lists a task's reflections with their items, oldest
// first.
func (s *Store) ListReflections(ctx context.Context, q querier, taskID string) ([]Reflection, error) {
	rows, err := q.QueryContext(ctx, `select id, task_id, reflected_by, job_id, assessment, critique, verdict,
		lessons_recorded, recorded_at from reflections where task_id = $1 order by id`, taskID)
	if err != nil {
		return nil, fmt.Errorf("list reflections of task %s: %w", taskID, err)
	}
	var out []Reflection
	for rows.Next() {
		var r Reflection
		if err := rows.Scan(&r.ID, &r.TaskID, &r.By, &r.JobID, &r.Assessment, &r.Critique, &r.Verdict,
			&r.LessonsRecorded, &r.RecordedAt); err != nil {
			rows.Close()
			return nil, err
		}
		r.RecordedAt = r.RecordedAt.UTC()
		out = append(out, r)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Items, err = reflectionItems(ctx, q, out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func reflectionItems(ctx context.Context, q querier, id int64) ([]ReflectionItem, error) {
	rows, err := q.QueryContext(ctx, `select idx, relation, target_id, memory_id, refused_check, refused_reason, critique, verdict
		from reflection_items where reflection_id = $1 order by idx`, id)
	if err != nil {
		return nil, fmt.Errorf("list items of reflection %d: %w", id, err)
	}
	defer rows.Close()
	var out []ReflectionItem
	for rows.Next() {
		var it ReflectionItem
		if err := rows.Scan(&it.Index, &it.Relation, &it.TargetID, &it.MemoryID, &it.RefusedCheck, &it.RefusedReason, &it.Critique, &it.Verdict); err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// ReflectionStats is what `mull lessons stats` shows: the relation
// distribution and the gate's refusals, so a gate that turns revise off is
// visible.
type ReflectionStats struct {
	// Reflections counts reflections; ByReflectedBy splits them by job and
	// agent. LessonsRecorded sums what they stored.
	Reflections     int
	ByReflectedBy   map[string]int
	LessonsRecorded int
	// Proposed counts items by relation, refused ones included; Accepted
	// only those no check refused.
	Proposed map[string]int
	Accepted map[string]int
	// Refusals counts refused items by the check that refused them.
	Refusals map[string]int
}

// ReflectionStats counts the reflections on tasks of a workspace ("": all).
func (s *Store) ReflectionStats(ctx context.Context, q querier, workspace string) (ReflectionStats, error) {
	st := ReflectionStats{ByReflectedBy: map[string]int{}, Proposed: map[string]int{}, Accepted: map[string]int{}, Refusals: map[string]int{}}
	scope := `from reflections r join tasks t on t.id = r.task_id where ($1 = '' or t.workspace = $1)`
	if err := countInto(ctx, q, `select r.reflected_by, count(*), coalesce(sum(r.lessons_recorded), 0) `+scope+
		` group by r.reflected_by`, workspace, func(key string, n, recorded int) {
		st.ByReflectedBy[key] = n
		st.Reflections += n
		st.LessonsRecorded += recorded
	}); err != nil {
		return st, err
	}
	items := `from reflection_items i join reflections r on r.id = i.reflection_id join tasks t on t.id = r.task_id
		where ($1 = '' or t.workspace = $1)`
	if err := countInto(ctx, q, `select i.relation, count(*), coalesce(sum(case when i.refused_check = '' then 1 else 0 end), 0) `+
		items+` group by i.relation`, workspace, func(key string, n, accepted int) {
		st.Proposed[key] = n
		st.Accepted[key] = accepted
	}); err != nil {
		return st, err
	}
	err := countInto(ctx, q, `select i.refused_check, count(*), 0 `+items+` and i.refused_check <> '' group by i.refused_check`,
		workspace, func(key string, n, _ int) { st.Refusals[key] = n })
	return st, err
}

func countInto(ctx context.Context, q querier, query, workspace string, put func(key string, a, b int)) error {
	rows, err := q.QueryContext(ctx, query, workspace)
	if err != nil {
		return fmt.Errorf("reflection stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var a, b int
		if err := rows.Scan(&key, &a, &b); err != nil {
			return err
		}
		put(key, a, b)
	}
	return rows.Err()
}
