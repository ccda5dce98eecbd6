// Package memories is the memory store's service, between its callers (the
// HTTP tool endpoints, the CLI, later the learning jobs) and the store: it
// applies learn/memory's rules on every write (validation, origin from the
// write path, redaction, quarantine, duplicates), ranks searches, and keeps
// the digest DSH injects stable between watermarks (digest.go).
package memories

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	rules "github.com/mullhq/mull/learn/consolidate"
	"slices"
	"strings"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/memory/digest"
	"github.com/mullhq/mull/store"
)

// Service reads and writes memories. Build one in main and share it.
type Service struct {
	store  *store.Store
	scope  memory.Scope
	digest config.Digest
	opts   digest.Options
	// lessons and precedent shape the digest's lessons (WithLessons).
	lessons   config.Lessons
	precedent bool
	// facts are the negative ledger's constraints (WithLedger); nil: none.
	facts FactSource
	// workspaces give a workspace's own scope and digest quotas
	// (WithWorkspaces); nil: scope and digest for all.
	workspaces WorkspaceSettings
}

// New makes a Service over a store, with the memory scope and digest
// settings of the config (an unset watermark takes config's default). Its clock is the store's (Store.Now), so tests
// move recorded_at and watermark ages together with Store.SetClock.
func New(s *store.Store, mem config.Memory, dig config.Digest) *Service {
	if dig.WatermarkItems < 1 || dig.WatermarkAge <= 0 {
		def := config.Default().Digest
		dig.WatermarkItems, dig.WatermarkAge = def.WatermarkItems, def.WatermarkAge
	}
	return &Service{
		store: s, scope: memory.Scope(cmp.Or(mem.Scope, string(memory.ScopeWorkspace))), digest: dig,
		opts:    digest.Options{Budget: dig.Budget, Wrapper: dig.Wrapper, MaxLines: dig.MaxLines, Quotas: dig.Quotas},
		lessons: config.Default().Lessons, precedent: true,
	}
}

// QuarantinedError is a write whose text reads like an instruction to the
// agent. The memory is stored, flagged, and never served.
type QuarantinedError struct {
	ID     int64
	Reason string
}

func (e *QuarantinedError) Error() string {
	return fmt.Sprintf("memory %d quarantined: its text reads like an instruction (%s); it is kept for review and never served", e.ID, e.Reason)
}

// Written is what Remember did.
type Written struct {
	Memory memory.Memory `json:"memory"`
	// Duplicate: the library already had it; its uses went up instead.
	Duplicate bool `json:"duplicate,omitempty"`
	// Redacted counts the credentials replaced in the text.
	Redacted int `json:"redacted,omitempty"`
	// Verified: the duplicate came from a person (see Vouches), which
	// confirms the memory it repeats; it is verified now, as by Verify.
	Verified bool `json:"verified,omitempty"`
}

// Remember writes a memory through the path origin names (the API passes
// memory.OriginTool, the CLI memory.OriginPanel): never the caller's claim.
// Under scope global it goes to the global library. A bad field is a
// *memory.FieldError; quarantined text is stored and reported as a
// *QuarantinedError; a live duplicate in the same library gets one more use,
// and, when a person wrote it (Vouches), is verified by the writer, p.By
// (store.ActorAgent for the agent's tool, ActorCLI, ActorPanel…; required
// then): the user saying again what a retro learned is the user confirming
// it.
func (s *Service) Remember(ctx context.Context, w memory.Write, p memory.Provenance) (Written, error) {
	if s.scopeOf(w.Workspace).WritesGlobal() {
		w.Workspace = ""
	}
	m, redacted, err := memory.New(w, p, s.store.Now())
	if err != nil {
		return Written{Redacted: redacted}, err
	}
	var out Written
	err = s.store.InTx(ctx, func(tx *sql.Tx) (err error) {
		out, err = s.write(ctx, tx, m, p.By)
		return err
	})
	if err != nil {
		return Written{}, err
	}
	out.Redacted = redacted
	if m.Quarantined {
		return out, &QuarantinedError{ID: out.Memory.ID, Reason: m.QuarantineReason}
	}
	return out, nil
}

// write stores a memory built by memory.New in tx, or, when its library
// already has it live, gives that one one more use instead (and a
// verification by by when m vouches for it).
func (s *Service) write(ctx context.Context, tx *sql.Tx, m memory.Memory, by string) (Written, error) {
	out := Written{Memory: m}
	row := ToRow(m)
	// A quarantined write is kept as its own row whatever it repeats.
	if !m.Quarantined {
		// Under the library's lock, as the retros write: two writers of
		// one text add it once.
		if err := s.store.LockLibrary(ctx, tx, row.Workspace); err != nil {
			return out, err
		}
		dup, ok, err := s.store.FindMemoryByNorm(ctx, tx, row.Workspace, row.TextNorm)
		if err != nil {
			return out, err
		}
		if ok {
			return s.repeat(ctx, tx, m, dup, by)
		}
	}
	var err error
	out.Memory.ID, err = s.store.InsertMemory(ctx, tx, row)
	return out, err
}

// repeat gives dup, the live memory m repeats, one more use, and verifies
// it in by's name when a person wrote m.
func (s *Service) repeat(ctx context.Context, tx *sql.Tx, m memory.Memory, dup store.Memory, by string) (Written, error) {
	out := Written{Duplicate: true}
	use := store.MemoryUse{Cause: store.UseWrite, Workspace: m.Workspace, JobID: m.JobID, SessionID: m.SessionID, Origin: string(m.Origin)}
	if err := s.store.BumpUses(ctx, tx, use, dup.ID); err != nil {
		return out, err
	}
	dup.Uses++
	if Vouches(m) {
		// FindMemoryByNorm read dup live in this transaction.
		at := m.RecordedAt
		ok, err := s.store.VerifyMemory(ctx, tx, dup.ID, at, string(memory.SrcUser), by)
		if err != nil {
			return out, err
		}
		if ok {
			dup.VerifiedAt, dup.VerifiedBy, dup.Src, out.Verified = at.Truncate(time.Microsecond), by, string(memory.SrcUser), true
		}
	}
	out.Memory = FromRow(dup)
	return out, nil
}

// Vouches reports whether a write comes from a person, whose word lifts an
// LLM-made memory's importance cap (learn/memory.Untrusted): a human's
// command or an operator (origin command, panel), or a write that claims
// the user as its source (src user, which the seed trusts). A write that
// names a web, tool or doc source passes content on; it vouches for none.
func Vouches(m memory.Memory) bool {
	if m.Src.External() {
		return false
	}
	return m.Src == memory.SrcUser || m.Origin == memory.OriginCommand || m.Origin == memory.OriginPanel
}

// NotLiveError refuses to verify a memory that is not served: an
// invalidated (forgotten or superseded) or a quarantined one.
type NotLiveError struct {
	Memory memory.Memory
}

func (e *NotLiveError) Error() string {
	m := AgentView(e.Memory)
	if m.Quarantined {
		return fmt.Sprintf("memory %d is quarantined (%s): it is never served, so it cannot be verified", m.ID, m.QuarantineReason)
	}
	msg := fmt.Sprintf("memory %d was invalidated at %s (%s), so it cannot be verified", m.ID, m.InvalidAt.Format(time.RFC3339), m.InvalidReason)
	if m.SupersededBy != 0 {
		msg += fmt.Sprintf("; memory %d superseded it", m.SupersededBy)
	}
	return msg
}

// Verify records that a person confirmed memory id now, through by (an
// actor: store.ActorPanel, ActorAPI, ActorCLI or ActorAgent; a blank or
// unknown one is refused): verified_at is set (refreshed when it was
// verified before), verified_by becomes by and src becomes user, so an
// LLM-made memory is no longer capped at memory.UntrustedCap and its TTL
// runs from now. It returns the memory as stored; an invalidated or
// quarantined memory is refused with a *NotLiveError, a missing one with an
// error wrapping store.ErrNotFound.
func (s *Service) Verify(ctx context.Context, id int64, by string) (memory.Memory, error) {
	var m memory.Memory
	err := s.store.InTx(ctx, func(tx *sql.Tx) error {
		ok, err := s.store.VerifyMemory(ctx, tx, id, s.store.Now(), string(memory.SrcUser), by)
		if err != nil {
			return err
		}
		row, err := s.store.GetMemory(ctx, tx, id)
		if err != nil {
			return err
		}
		m = FromRow(row)
		if !ok {
			return &NotLiveError{Memory: m}
		}
		return nil
	})
	return m, err
}

// Get reads one memory, quarantined or not (for people; the agent's routes
// never show one), or an error wrapping store.ErrNotFound.
func (s *Service) Get(ctx context.Context, id int64) (memory.Memory, error) {
	row, err := s.store.GetMemory(ctx, s.store.DB, id)
	return FromRow(row), err
}

// List lists memories, newest first.
func (s *Service) List(ctx context.Context, f store.MemoryFilter) ([]memory.Memory, error) {
	rows, err := s.store.ListMemories(ctx, s.store.DB, f)
	return FromRows(rows), err
}

// GovernedError refuses the agent's invalidate of a structured lesson: a
// lesson changes by a revise through the precedent gate (task_reflect) or
// by an operator (mull lessons deprecate, remove), never on an agent's word.
type GovernedError struct{ ID int64 }

func (e *GovernedError) Error() string {
	return fmt.Sprintf("memory %d is a structured lesson: it changes by a revise through the precedent gate (task_reflect), "+
		"or by an operator (mull lessons deprecate|remove), not by invalidate", e.ID)
}

// InvalidateByAgent is Invalidate for the agent's tool: a structured lesson
// is refused with a *GovernedError.
func (s *Service) InvalidateByAgent(ctx context.Context, id int64, reason string, supersededBy int64) (memory.Memory, bool, error) {
	row, err := s.store.GetMemory(ctx, s.store.DB, id)
	if err != nil {
		return memory.Memory{}, false, err
	}
	if rules.Governed(FromRow(row)) {
		return memory.Memory{}, false, &GovernedError{ID: id}
	}
	return s.Invalidate(ctx, id, reason, supersededBy)
}

// Invalidate marks a memory invalid now, for reason, optionally superseded
// by another one; it never deletes. A memory already invalid keeps its first
// invalidation (changed is false).
func (s *Service) Invalidate(ctx context.Context, id int64, reason string, supersededBy int64) (m memory.Memory, changed bool, err error) {
	if strings.TrimSpace(reason) == "" {
		return m, false, &memory.FieldError{Field: "reason", Problem: "required: say why it is no longer true"}
	}
	err = s.store.InTx(ctx, func(tx *sql.Tx) error {
		row, err := s.store.GetMemory(ctx, tx, id)
		if err != nil {
			return err
		}
		if supersededBy != 0 {
			if _, err := s.store.GetMemory(ctx, tx, supersededBy); errors.Is(err, store.ErrNotFound) {
				return &memory.FieldError{Field: "superseded_by", Problem: fmt.Sprintf("no memory %d", supersededBy)}
			} else if err != nil {
				return err
			}
		}
		if !row.InvalidAt.IsZero() {
			m = FromRow(row)
			return nil
		}
		// Under the library's lock, as every memory writer, and with the
		// clock read once it is held: a publication waiting on it then
		// sees the invalidation stamped before its own time.
		if err := s.store.LockLibrary(ctx, tx, row.Workspace); err != nil {
			return err
		}
		m = FromRow(row).Invalidated(s.store.Now(), reason, supersededBy)
		changed, err = s.store.InvalidateMemory(ctx, tx, id, m.InvalidAt, m.InvalidReason, m.SupersededBy)
		return err
	})
	return m, changed, err
}

// Hit is one search result.
type Hit struct {
	memory.Memory
	// Score is memory.SearchScore: memory.Score, plus one per query term
	// the text contains, plus the text's relevance to the query.
	Score float64 `json:"score"`
}

// MaxSearch caps a search's results.
const MaxSearch = 50

// Query is a search.
type Query struct {
	// Workspace is the one searching; the scope decides which libraries it
	// reads ("" reads the global library).
	Workspace string
	// Text is the words to look for.
	Text string
	// Limit caps the hits; defaults to 10, at most MaxSearch.
	Limit int
	// Peek leaves uses alone: a person looking is not the agent using a
	// memory.
	Peek bool
	// Session is the session searching (the agent's tool sends it): a
	// structured lesson is found only where its scope shows it, so one
	// session's reflection lessons do not reach another. "" sees none of
	// the session-scoped ones.
	Session string
}

// Search finds the live memories a workspace reads that contain any word
// of the query (anywhere, inside a word too, by the store's full-text
// index), ranked by memory.SearchScore, best first: the seed's score, the
// words matched and the text's relevance; each hit's text passes the render-time gate (trust.Line)
// and one it hides is left out. Unless q.Peek, each hit's uses go up in the same transaction.
func (s *Service) Search(ctx context.Context, q Query) ([]Hit, error) {
	terms, err := memory.SearchTerms(q.Text)
	if err != nil {
		return nil, err
	}
	limit := min(cmp.Or(q.Limit, 10), MaxSearch)
	now := s.store.Now()
	var hits []Hit
	err = s.store.InTx(ctx, func(tx *sql.Tx) error {
		rows, err := s.store.MatchMemories(ctx, tx, s.libraries(q.Workspace), terms, candidatesPerHit*limit)
		if err != nil {
			return err
		}
		viewer := lesson.Viewer{Workspace: q.Workspace, Session: q.Session, GlobalLibrary: s.scopeOf(q.Workspace).ReadsGlobal()}
		rows = slices.DeleteFunc(rows, func(r store.MemoryMatch) bool {
			m := FromRow(r.Memory)
			return rules.Governed(m) && !viewer.Sees(m)
		})
		hits = shown(rank(rows, terms, now), limit)
		if q.Peek {
			return nil
		}
		ids := make([]int64, len(hits))
		for i := range hits {
			ids[i] = hits[i].ID
			hits[i].Uses++
		}
		return s.store.BumpUses(ctx, tx, store.MemoryUse{Cause: store.UseSearch, Workspace: q.Workspace, SessionID: q.Session}, ids...)
	})
	return hits, err
}

// shown keeps the first limit hits the render-time gate lets through,
// their text as the gate serves it.
func shown(hits []Hit, limit int) []Hit {
	out := hits[:0]
	for _, h := range hits {
		if len(out) == limit {
			break
		}
		text, ok := served(h.Text)
		if !ok {
			continue
		}
		h.Text = text
		out = append(out, h)
	}
	return out
}

// candidatesPerHit is how many memories a search reads from the store for
// each hit it returns: the most relevant (and, for words too short for
// the index, the newest), which the seed's score then reorders. Four per
// hit leaves room for the viewer and the render-time gate to drop some,
// and keeps a search of a big library to a few milliseconds (reading and
// scanning the rows is most of its cost).
const candidatesPerHit = 4

func rank(rows []store.MemoryMatch, terms []string, now time.Time) []Hit {
	raw := make([]float64, len(rows))
	for i, r := range rows {
		raw[i] = r.Relevance
	}
	relevance := memory.NormalizeRelevance(raw)
	hits := make([]Hit, len(rows))
	for i, r := range rows {
		m := FromRow(r.Memory)
		hits[i] = Hit{Memory: m, Score: memory.SearchScore(memory.Score(m, now), memory.TermsMatched(r.TextNorm, terms), relevance[i])}
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(b.ID, a.ID))
	})
	return hits
}

// libraries are the workspaces a workspace reads, its own first.
func (s *Service) libraries(workspace string) []string {
	scope := s.scopeOf(workspace)
	switch {
	case !scope.ReadsWorkspace():
		return []string{""}
	case scope.ReadsGlobal() && workspace != "":
		return []string{workspace, ""}
	}
	return []string{workspace}
}
