package benches

import (
	"context"
	"database/sql"
	"strings"

	"github.com/mullhq/mull/learn/bench"
)

// freezeSet freezes every draft of set in one transaction: either all of
// them are frozen or none is (a failure part-way, say a trigger's refusal,
// must not leave a set half frozen, whose runs would then cover a subset
// of what the operator froze). A case frozen meanwhile (its freeze finds
// no draft) is skipped, as a case frozen before is.
func (s *Service) freezeSet(ctx context.Context, set string) ([]bench.Case, error) {
	set = strings.TrimSpace(set)
	if problem := checkID(set); problem != "" {
		return nil, &FieldError{Field: "set", Problem: problem}
	}
	frozen := []bench.Case{}
	err := s.store.InTx(ctx, func(tx *sql.Tx) error {
		all, err := s.store.ListBenchCases(ctx, tx, set, "")
		if err != nil {
			return err
		}
		if len(all) == 0 {
			return notFound("freeze:set-not-found", "no benchmark case in set %s", set)
		}
		frozen = frozen[:0]
		now := s.store.Now()
		for _, c := range all {
			if c.State != bench.Draft {
				continue
			}
			c.State, c.FrozenAt = bench.Frozen, &now
			c.Hash = bench.CaseHash(c)
			ok, err := s.store.FreezeBenchCase(ctx, tx, c.ID, c.Hash, now)
			if err != nil {
				return err
			}
			if ok {
				frozen = append(frozen, c)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.logger.InfoContext(ctx, "bench set frozen", "set", set, "cases", len(frozen))
	return frozen, nil
}
