package harnesses

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

// queryMessages is how many of a session's latest user messages the
// projection's query is looked for in.
const queryMessages = 50

// projection is Projection.
func (s *Service) projection(ctx context.Context, session, query string) (Projection, error) {
	if strings.TrimSpace(session) == "" {
		return Projection{}, &FieldError{Field: "session", Problem: "required"}
	}
	db := s.store.DB
	_, local, merged, err := s.merged(ctx, db, session)
	if err != nil {
		return Projection{}, err
	}
	if query == "" {
		msgs, err := s.userMessages(ctx, session)
		if err != nil {
			return Projection{}, err
		}
		query = harness.Query(msgs)
	} else {
		query = harness.Query([]string{query})
	}
	// The narrow read (id, scope, summary, counts) of the session's and
	// the global store's newest refinements: this runs on every agent step.
	recent, err := s.store.RecentHarnessRefinements(ctx, db, []string{harness.Local(session).Key(), harness.Global.Key()},
		harness.RefinementsInProjection)
	if err != nil {
		return Projection{}, err
	}
	refs := make([]harness.RecentRefinement, len(recent))
	for i, r := range recent {
		refs[len(recent)-1-i] = harness.RecentRefinement{ID: r.ID, Scope: scopeOf(r.ScopeKey), Summary: r.Summary,
			Applied: r.Applied, Rejected: r.Rejected} // newest last
	}
	p := harness.Project(merged, query, harness.ProjectOptions{
		MaxPerKind: s.cfg.MaxInjectedPerKind,
		IsLocal: func(k harness.Kind, id string) bool {
			_, ok := local.Get(k, id)
			return ok && !strings.HasPrefix(id, harness.LocalPrefix)
		},
		Recent: refs,
	})
	keys := p.Keys
	if keys == nil {
		keys = []string{}
	}
	return Projection{Text: p.Text, ETag: p.ETag, Keys: keys, Count: len(keys), Query: query}, nil
}

// userMessages are the session's latest direct user messages (a
// plugin-written one is not the user's), oldest first.
func (s *Service) userMessages(ctx context.Context, session string) ([]string, error) {
	evs, err := s.store.SessionEventsOfType(ctx, s.store.DB, session, string(events.UserMessage), queryMessages)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range evs {
		var m events.MessagePayload
		if json.Unmarshal(e.Payload, &m) != nil || m.Source == "plugin" {
			continue
		}
		out = append(out, m.Text)
	}
	return out, nil
}

// recordInjections is RecordInjections: each known key counts once.
func (s *Service) recordInjections(ctx context.Context, tx *sql.Tx, session string, keys []string) error {
	if strings.TrimSpace(session) == "" {
		return &FieldError{Field: "session", Problem: "required"}
	}
	global, local, _, err := s.merged(ctx, tx, session)
	if err != nil {
		return err
	}
	now := s.store.Now()
	seen := map[string]bool{}
	for _, key := range keys {
		where, rest, ok := strings.Cut(key, ":")
		kind, id, ok2 := strings.Cut(rest, ":")
		if !ok || !ok2 || seen[key] {
			continue
		}
		seen[key] = true
		st, scope := global, harness.Global
		switch where {
		case "global":
		case "local":
			st, scope = local, harness.Local(session)
		default:
			continue
		}
		if _, known := st.Get(harness.Kind(kind), id); !known {
			continue
		}
		if err := s.store.AddHarnessInjection(ctx, tx, store.HarnessInjection{
			ScopeKey: scope.Key(), Kind: harness.Kind(kind), ID: id, SessionID: session, LastInjectedAt: now,
		}); err != nil {
			return err
		}
	}
	return nil
}

// wrapup is Wrapup: the local entries' injection counts in this session.
func (s *Service) wrapup(ctx context.Context, session string) ([]harness.Suggestion, error) {
	if strings.TrimSpace(session) == "" {
		return nil, &FieldError{Field: "session", Problem: "required"}
	}
	db := s.store.DB
	global, local, _, err := s.merged(ctx, db, session)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.HarnessInjections(ctx, db, []string{harness.Local(session).Key()})
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, in := range rows {
		if in.SessionID == session {
			counts[harness.TombstoneKey(in.Kind, in.ID)] += in.Count
		}
	}
	out := harness.Wrapup(local, global, func(k harness.Kind, id string) int { return counts[harness.TombstoneKey(k, id)] })
	if out == nil {
		out = []harness.Suggestion{}
	}
	return out, nil
}

// skills is Skills.
func (s *Service) skills(ctx context.Context, session, workspace string) (Skills, error) {
	db := s.store.DB
	// GLOBAL skill entries only: DSH reads one skills dir per machine
	// ($DSH_HOME/skills), shared by every session, so a session-local
	// skill written there would leak into the other sessions. A local
	// skill stays in its session's projection (Projection), never a bundle.
	global, err := s.state(ctx, db, harness.Global)
	if err != nil {
		return Skills{}, err
	}
	out := []Skill{}
	names := map[string]bool{}
	for _, id := range sortedIDs(global[harness.KindSkill]) {
		e := global[harness.KindSkill][id]
		if e.Archived() {
			continue
		}
		if !harness.IsKebab(id) {
			// Validate refuses such a skill id; a store written by hand or an
			// older mull may hold one, and the id becomes a directory name.
			s.logger.Warn("harness skill left out: id is not kebab-case", "id", id)
			continue
		}
		sk := Skill{Name: harness.SkillName(id), Source: "harness", ID: id, Version: e.Version, Markdown: harness.SkillMarkdown(e)}
		names[sk.Name] = true
		out = append(out, sk)
	}
	if s.cfg.PlaybookSkillsOn() && workspace != "" {
		books, err := s.store.ListPlaybooks(ctx, db, workspace)
		if err != nil {
			return Skills{}, err
		}
		for _, b := range books {
			e := harness.PlaybookSkill(b.Slug, b.Steps, b.UpdatedAt)
			name := harness.SkillName(e.ID)
			if e.ID == "" || names[name] {
				continue // a harness skill of that name wins
			}
			names[name] = true
			out = append(out, Skill{Name: name, Source: "playbook", ID: e.ID, Version: e.Version, Markdown: harness.SkillMarkdown(e)})
		}
	}
	slices.SortFunc(out, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	return Skills{ETag: skillsETag(out), Skills: out}, nil
}

// skillsETag is 16 hex of the sha256 of every skill's name, version and
// markdown: it changes when any bundle does.
func skillsETag(skills []Skill) string {
	h := sha256.New()
	for _, sk := range skills {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", sk.Name, strconv.Itoa(sk.Version), sk.Markdown)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// recordReview is RecordReview.
func (s *Service) recordReview(ctx context.Context, tx *sql.Tx, r ReviewRow) (int64, error) {
	if r.At.IsZero() {
		r.At = s.store.Now()
	}
	switch r.Outcome {
	case harness.Declined, harness.Assessed, harness.Approved, harness.Failed:
	default:
		return 0, &FieldError{Field: "outcome", Problem: fmt.Sprintf("%q is not declined, assessed, approved or failed", r.Outcome)}
	}
	rejected := make([]harness.Rejected, len(r.Rejected))
	for i, x := range r.Rejected {
		// The job copies these from the refinement's record, which keeps
		// only enum words and gated texts; a caller's own is held to that.
		if !slices.Contains(harness.Kinds, x.Kind) {
			x.Kind = ""
		}
		if !slices.Contains(harness.Actions, x.Action) {
			x.Action = ""
		}
		x.ID, x.Error = gated(x.ID), gated(x.Error)
		rejected[i] = x
	}
	return s.store.InsertHarnessReview(ctx, tx, store.HarnessReview{
		At: r.At, SessionID: r.Session, Workspace: r.Workspace, ScopeKey: r.Scope.Key(), Trigger: r.Trigger, Turns: r.Turns,
		Outcome: r.Outcome, Rationale: gated(r.Rationale), RefinementID: r.RefinementID, Rejected: rejected, JobID: r.JobID,
		Route: r.Route,
	})
}

// reviews is Reviews.
func (s *Service) reviews(ctx context.Context, f ReviewFilter) ([]ReviewRow, error) {
	if f.Limit < 0 || f.Limit > 1000 {
		return nil, &FieldError{Field: "limit", Problem: fmt.Sprintf("%d is not between 1 and 1000", f.Limit)}
	}
	rows, err := s.store.ListHarnessReviews(ctx, s.store.DB, f.Session, f.JobID, f.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]ReviewRow, len(rows))
	for i, r := range rows {
		out[i] = ReviewRow{ID: r.ID, At: r.At, Session: r.SessionID, Workspace: r.Workspace, Scope: scopeOf(r.ScopeKey),
			Trigger: r.Trigger, Turns: r.Turns, Outcome: r.Outcome, Rationale: r.Rationale, RefinementID: r.RefinementID,
			Rejected: r.Rejected, JobID: r.JobID, Route: r.Route}
	}
	return out, nil
}
