package memories

import (
	"context"
	"fmt"

	"github.com/mullhq/mull/learn/memory"
)

// NoticesFor is Notices for one session: the new memories it reads (a
// lesson only when its scope shows it to that session), then what mull has
// to say to session itself (the missed-task nudge, kind "nudge"): each such notice is
// served once, to its session only. An empty session serves none of them.
// A session notice's id is its own, not a memory id, and the cursor stays
// the memories': the plugin tells the two apart by kind.
func (s *Service) NoticesFor(ctx context.Context, workspace, session string, after int64) (Notices, error) {
	out, err := s.lessonNotices(ctx, workspace, session, after)
	if err != nil || session == "" {
		return out, err
	}
	own, err := s.store.TakeSessionNotices(ctx, s.store.DB, session, s.store.Now())
	if err != nil {
		return Notices{}, fmt.Errorf("notices of session %s: %w", session, err)
	}
	for _, n := range own {
		// mull's own text, whole: the plugin shows up to 600 characters.
		out.Notices = append(out.Notices, Notice{ID: n.ID, Kind: memory.Kind(n.Kind), Text: n.Text, RecordedAt: n.RecordedAt})
	}
	return out, nil
}
