package memories

import (
	"context"
	"time"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/store"
)

// FactSource is the negative ledger as the digest reads it
// (negledger.Service.Constraints): a workspace's current facts that still
// intercept, newest first. Declared here, where it is used, so memories
// needs no import of the ledger service.
type FactSource interface {
	Constraints(ctx context.Context, workspace string, limit int) ([]ledger.Fact, error)
}

// MaxDigestFacts caps the ledger facts one digest shows: they share the
// lessons quota (filling it last), and the ledger enforces every fact at
// the tool call whether the prompt shows it or not.
const MaxDigestFacts = 5

// WithLedger returns a copy of s whose digests show src's facts in the
// Known failures block, and publish again when facts are recorded or
// leave force: each counts as a lesson change toward
// lessons.commit_every, and digest.watermark_age applies to the oldest.
// Without it (New) the digest shows no facts.
func (s *Service) WithLedger(src FactSource) *Service {
	c := *s
	c.facts = src
	return &c
}

// digestFacts are the facts a digest of workspace rendered at at shows:
// the source's constraints recorded by then (at zero: all of them). It
// reads the database outside any transaction: call it before one (SQLite
// has one connection).
func (s *Service) digestFacts(ctx context.Context, workspace string, at time.Time) ([]ledger.Fact, error) {
	if s.facts == nil || workspace == "" {
		return nil, nil
	}
	fs, err := s.facts.Constraints(ctx, workspace, MaxDigestFacts)
	if err != nil || at.IsZero() {
		return fs, err
	}
	out := fs[:0:0]
	for _, f := range fs {
		if !f.CreatedAt.After(at) {
			out = append(out, f)
		}
	}
	return out, nil
}

// factChanges are the ledger's changes to workspace since a publication,
// none without a ledger.
func (s *Service) factChanges(ctx context.Context, workspace string, since time.Time) (store.LedgerDigestChanges, error) {
	if s.facts == nil || workspace == "" {
		return store.LedgerDigestChanges{}, nil
	}
	return s.store.LedgerChangesSince(ctx, workspace, since)
}
