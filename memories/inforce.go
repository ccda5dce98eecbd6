package memories

import (
	"context"
	"database/sql"
	"slices"
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
// lessons its published digest's text shows. Those are the lessons (structured kinds)
// of workspace's library, of the global library and scoped to session
// wherever they are stored, that workspace's published digest took in (id
// at most its watermark) and that were in force when it was published
// (lesson.InForce for the session at published_at: valid then, not
// quarantined, in a scope the session sees, not covered by a promotion),
// less those its text left out: the lessons quota, MaxLines, the shrink
// and the drop, and the render-time gate (digest.Output.Lessons, recorded
// with the digest_state row the session reads, see shownIDs). A lesson in
// force but left out was not in the agent's prompt, so a task's snapshot
// must not list it, or its precedent counts would grow from tasks that
// never saw it. committedAt is that published_at.
//
// A row published before mull recorded the ids (migration 021) falls back
// to every lesson in force at its watermark, as mull did before; the next
// publication records them.
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
	shown, _, at, err := s.lessonsPublished(ctx, q, workspace, session)
	return shown, at, err
}

// lessonsPublished is LessonsInForce's answer (shown), and omitted: the
// lessons in force at the published digest's watermark that its text left
// out, by id.
func (s *Service) lessonsPublished(ctx context.Context, q Querier, workspace, session string) (shown, omitted []memory.Memory, at time.Time, err error) {
	st, ok, err := s.store.GetDigestState(ctx, q, s.digestKey(workspace))
	if err != nil || !ok {
		return nil, nil, time.Time{}, err
	}
	ms, err := s.LessonsAsOf(ctx, q, workspace, session, st.WatermarkID, st.PublishedAt)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	ids, known, err := s.shownIDs(ctx, q, workspace, session, st)
	if err != nil || !known {
		return ms, nil, st.PublishedAt, err
	}
	shown = make([]memory.Memory, 0, len(ids))
	for _, m := range ms {
		if _, hit := slices.BinarySearch(ids, m.ID); hit {
			shown = append(shown, m)
		} else {
			omitted = append(omitted, m)
		}
	}
	return shown, omitted, st.PublishedAt, nil
}

// shownIDs are the ids of the lessons the digest session reads (DigestFor)
// shows, for the workspace digest st: the workspace row's, or, when
// session has lessons of its own that st took in, its own row's if it is
// st's rendering, else that rendering done now (DigestFor renders the
// same, from the same watermark and time, when the session reads it).
// known is false for a row published before the ids were recorded.
func (s *Service) shownIDs(ctx context.Context, q Querier, workspace, session string, st store.DigestState) (ids []int64, known bool, err error) {
	if session == "" {
		return st.LessonIDs, st.LessonsKnown, nil
	}
	own, err := s.store.ListLessons(ctx, q, store.LessonFilter{Session: session,
		Scopes: []string{string(memory.LessonSession), string(memory.LessonReflection)}})
	if err != nil {
		return nil, false, err
	}
	if !someUpTo(own, st.WatermarkID) {
		return st.LessonIDs, st.LessonsKnown, nil
	}
	row, ok, err := s.store.GetDigestState(ctx, q, s.digestKey(workspace)+sessionKeySep+session)
	if err != nil {
		return nil, false, err
	}
	if ok && row.Scope == s.stateTag(workspace) && row.WatermarkID == st.WatermarkID && row.PublishedAt.Equal(st.PublishedAt) {
		return row.LessonIDs, row.LessonsKnown, nil
	}
	// No ledger facts: q may be a transaction (facts are read outside
	// one), and facts fill the lessons quota after every lesson, so which
	// lessons the text shows does not depend on them.
	out, err := s.render(ctx, q, workspace, session, st.WatermarkID, st.PublishedAt, nil)
	return out.Lessons, err == nil, err
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
	return lesson.InForce(all, lesson.Viewer{Workspace: workspace, Session: session, At: at, GlobalLibrary: s.scopeOf(workspace).ReadsGlobal()}), nil
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
