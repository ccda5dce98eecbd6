package benches

import (
	"context"
	"fmt"
	"strconv"

	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/learn/trust"
)

// ImportCases adds a set of draft cases (the admin API's import, `mull
// bench cases add --file`), all or nothing as far as the checks go: every
// case's required fields, duplicate ids (in the set or already stored)
// and the trust gate's quarantine are checked for all of them before the
// first is added, so a bad case stores none. Errors name the case by its
// index ("cases[2].rubric").
//
// The adds are not one transaction: a store failure (or a concurrent add
// of the same id) between two of them leaves the earlier ones, and the
// error says which. The store's transactional add, when it has one,
// should take this over.
func (s *Service) ImportCases(ctx context.Context, in []CaseInput) ([]bench.Case, error) {
	existing, err := s.Cases(ctx, CaseFilter{})
	if err != nil {
		return nil, err
	}
	if err := checkImport(in, existing); err != nil {
		return nil, err
	}
	out := make([]bench.Case, 0, len(in))
	for i, c := range in {
		added, err := s.AddCase(ctx, c)
		if err != nil {
			return out, fmt.Errorf("cases[%d] (%s), after adding %d: %w", i, c.ID, len(out), err)
		}
		out = append(out, added)
	}
	return out, nil
}

// checkImport is ImportCases's check of every case before any is added.
func checkImport(in []CaseInput, existing []bench.Case) error {
	taken := map[string]bool{}
	for _, c := range existing {
		taken[c.ID] = true
	}
	for i, c := range in {
		at := "cases[" + strconv.Itoa(i) + "]."
		for _, f := range []struct{ name, v string }{{"id", c.ID}, {"title", c.Title}, {"statement", c.Statement},
			{"rubric", c.Rubric}, {"capability", c.Capability}} {
			if f.v == "" && f.name != "capability" {
				return &FieldError{Field: at + f.name, Problem: "required"}
			}
			if v := trust.Check(f.v); v.Quarantined {
				return &FieldError{Field: at + f.name, Problem: "refused by mull's trust gate: " + v.Reason}
			}
		}
		if taken[c.ID] {
			return &CodedError{Code: "benchmark:add-case:duplicate-id", Msg: "benchmark case id already exists: " + c.ID, Status: 409}
		}
		taken[c.ID] = true
	}
	return nil
}
