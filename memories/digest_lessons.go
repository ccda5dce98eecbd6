package memories

import (
	"context"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/memory/digest"
	"github.com/mullhq/mull/store"
)

// WithLessons returns a copy of s whose digests batch lessons by
// lessons.commit_every (an unset one takes its default) and show precedent
// counts when reflection.precedent_in_prompt is on. New leaves them at the
// defaults: commit every 8, precedent shown.
func (s *Service) WithLessons(l config.Lessons, r config.Reflection) *Service {
	c := *s
	if l.CommitEvery < 1 {
		l = config.Default().Lessons
	}
	c.lessons, c.precedent = l, r.PrecedentInPromptOn()
	return &c
}

// digestLessons is the lessons section of a digest taking in memories up
// to watermark at at, for session ("" for a workspace-only request): the
// lessons in force then (LessonsAsOf), the conflicts among them declared by
// then, and, with precedent on, their counts over the tasks closed by then.
// Everything is read as of at, so the same (watermark, at) gives the same
// section whenever it is rendered.
func (s *Service) digestLessons(ctx context.Context, q Querier, workspace, session string, watermark int64, at time.Time) (digest.Lessons, error) {
	ms, err := s.LessonsAsOf(ctx, q, workspace, session, watermark, at)
	if err != nil || len(ms) == 0 {
		return digest.Lessons{}, err
	}
	ids := make([]int64, len(ms))
	shown := make(map[int64]bool, len(ms))
	for i, m := range ms {
		ids[i], shown[m.ID] = m.ID, true
	}
	out := digest.Lessons{InForce: ms}
	links, err := s.store.ListLinks(ctx, q, ids)
	if err != nil {
		return out, err
	}
	for _, l := range links {
		if shown[l.FromID] && shown[l.ToID] && !l.RecordedAt.After(at) {
			out.Links = append(out.Links, memory.Conflict{From: l.FromID, To: l.ToID, Kind: memory.ConflictKind(l.Kind), Note: l.Note, RecordedAt: l.RecordedAt})
		}
	}
	if s.precedent {
		counts, err := s.store.PrecedentCountsAt(ctx, q, ids, at)
		if err != nil {
			return out, err
		}
		out.Precedent = precedentOf(counts)
	}
	return out, nil
}

// precedentOf adapts the store's counts to lesson.PrecedentFunc: a lesson
// with no closed task in force has no line.
func precedentOf(counts map[int64]store.Precedent) func(int64) (int, int, bool) {
	return func(id int64) (int, int, bool) {
		p, ok := counts[id]
		return p.Verified, p.Counter, ok
	}
}

// sessionKeySep joins a workspace's digest key and a session id into the
// key of that session's own digest row: a control character, which no
// workspace or session id may hold (events.CheckName), so no workspace's
// key is ever a session's.
const sessionKeySep = "\x1f"

// DigestFor is the digest session reads: its workspace's published
// digest (Digest), or, when lessons scoped to session (scope session or
// reflection) were taken in by that publication, the same digest rendered
// for session, with those lessons in their blocks.
//
// A session's digest follows its workspace's watermark: it is rendered
// once per publication of the workspace digest, from the same watermark
// and publication time, and kept beside it in digest_state (key workspace
// U+001F session), so between publications its text, and DSH's prompt
// cache, stays byte-identical like the workspace's. Sessions without
// lessons of their own, most of them, need no row and no render: they are
// served the workspace's text.
func (s *Service) DigestFor(ctx context.Context, workspace, session string) (Digest, error) {
	d, err := s.Digest(ctx, workspace)
	if err != nil || session == "" {
		return d, err
	}
	own, err := s.store.ListLessons(ctx, s.store.DB, store.LessonFilter{Session: session,
		Scopes: []string{string(memory.LessonSession), string(memory.LessonReflection)}})
	if err != nil {
		return Digest{}, err
	}
	if !someUpTo(own, d.Watermark) {
		return d, nil
	}
	key := s.digestKey(workspace) + sessionKeySep + session
	st, ok, err := s.store.GetDigestState(ctx, s.store.DB, key)
	if err != nil {
		return Digest{}, err
	}
	if ok && st.Scope == s.stateTag(workspace) && st.WatermarkID == d.Watermark && st.PublishedAt.Equal(d.PublishedAt) {
		return fromState(st), nil
	}
	facts, err := s.digestFacts(ctx, workspace, d.PublishedAt)
	if err != nil {
		return Digest{}, err
	}
	out, err := s.render(ctx, s.store.DB, workspace, session, d.Watermark, d.PublishedAt, facts)
	if err != nil {
		return Digest{}, err
	}
	st = store.DigestState{Workspace: key, Scope: s.stateTag(workspace), WatermarkID: d.Watermark, PublishedAt: d.PublishedAt,
		Text: out.Text, ETag: out.ETag, Dropped: out.Dropped, LessonIDs: out.Lessons}
	return fromState(st), s.store.PutDigestState(ctx, s.store.DB, st)
}

func someUpTo(rows []store.Memory, watermark int64) bool {
	for _, r := range rows {
		if r.ID <= watermark {
			return true
		}
	}
	return false
}
