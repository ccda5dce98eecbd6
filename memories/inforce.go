package memories

import (
	"context"
	"database/sql"
	"time"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/store"
)

// Querier is what *sql.DB and *sql.Tx share (the store's reads take
// either), so LessonsInForce serves a read API and a caller already inside
// a transaction alike.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// LessonsInForce is what session's digest shows of the lesson model: the
// lessons (structured kinds) of workspace's library, of the global library
// and scoped to session wherever they are stored, that workspace's
// published digest took in (id at most its watermark) and that were in
// force when it was published (lesson.InForce for the session at
// published_at: valid then, not quarantined, in a scope the session sees,
// not covered by a promotion). committedAt is that published_at.
//
// The watermark is the digest's, one per workspace digest key: a lesson
// written since is a notice until the next publication, whatever its scope,
// and a lesson superseded since still counts, because the digest the agent
// reads still shows it. With nothing published yet for workspace the agent
// was shown no lessons: none, and a zero committedAt.
//
// q may be a transaction (tasks.Open freezes a task's environment with it
// in the transaction that stores the task) or the database.
func (s *Service) LessonsInForce(ctx context.Context, q Querier, workspace, session string) ([]memory.Memory, time.Time, error) {
	st, ok, err := s.store.GetDigestState(ctx, q, s.digestKey(workspace))
	if err != nil || !ok {
		return nil, time.Time{}, err
	}
	ms, err := s.LessonsAsOf(ctx, q, workspace, session, st.WatermarkID, st.PublishedAt)
	return ms, st.PublishedAt, err
}

// LessonsAsOf is LessonsInForce for a given watermark and time instead of
// the published digest's: what a publication taking in memories up to
// watermark at at would show session (the digest's publication reads it
// this way before it stores the new state). A watermark below 1 shows
// nothing.
func (s *Service) LessonsAsOf(ctx context.Context, q Querier, workspace, session string, watermark int64, at time.Time) ([]memory.Memory, error) {
	if watermark < 1 {
		return nil, nil
	}
	libs := []string{""}
	if workspace != "" {
		libs = []string{workspace, ""}
	}
	rows, err := s.store.ListLessons(ctx, q, store.LessonFilter{Workspaces: libs})
	if err != nil {
		return nil, err
	}
	if session != "" {
		// A lesson scoped to a session (session, reflection) follows the
		// session, wherever its library is.
		scoped, err := s.store.ListLessons(ctx, q, store.LessonFilter{Session: session})
		if err != nil {
			return nil, err
		}
		rows = mergeByID(rows, scoped)
	}
	all := make([]memory.Memory, 0, len(rows))
	for _, r := range rows {
		if r.ID <= watermark {
			all = append(all, FromRow(r))
		}
	}
	return lesson.InForce(all, lesson.Viewer{Workspace: workspace, Session: session, At: at}), nil
}

// mergeByID merges two id-ordered lists into one, each id once.
func mergeByID(a, b []store.Memory) []store.Memory {
	out := make([]store.Memory, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].ID < b[j].ID):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].ID < a[i].ID:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	return out
}
