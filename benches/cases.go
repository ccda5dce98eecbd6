package benches

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/learn/trust"
	"github.com/mullhq/mull/store"
)

// gate passes a case's texts through the trust gate's write check: each is
// stored normalized and redacted, and a text that reads like an
// instruction to the agent refuses the whole case, naming the field, as
// does a text no database stores faithfully (invalid UTF-8, a NUL).
// Cases are read by the executor and the judge, so they are prompt text
// like any other.
func gate(in *CaseInput) error {
	for _, f := range []struct {
		name string
		v    *string
	}{{"title", &in.Title}, {"statement", &in.Statement}, {"rubric", &in.Rubric}, {"capability", &in.Capability}} {
		if *f.v == "" {
			continue
		}
		// Refused before the gate, which would strip them silently.
		if problem := events.CheckText(*f.v, 0); problem != "" {
			return &FieldError{Field: f.name, Problem: problem}
		}
		v := trust.Check(*f.v)
		if v.Quarantined {
			return &FieldError{Field: f.name, Problem: "refused by the trust gate: it reads like an instruction to the agent (" + v.Reason + ")"}
		}
		*f.v = v.Text
	}
	return nil
}

// missing lists the required case fields in that are blank.
func missing(in CaseInput) []string {
	var out []string
	for _, f := range []struct{ name, v string }{{"id", in.ID}, {"title", in.Title}, {"statement", in.Statement}, {"rubric", in.Rubric}} {
		if strings.TrimSpace(f.v) == "" {
			out = append(out, f.name)
		}
	}
	return out
}

// validCase checks a case's material once gated: the ids' grammar, then
// learn/bench's rules (lengths).
func validCase(action string, c bench.Case) error {
	if problem := checkID(c.ID); problem != "" {
		return &FieldError{Field: "id", Problem: problem}
	}
	if problem := checkID(c.Set); problem != "" {
		return &FieldError{Field: "set", Problem: problem}
	}
	if err := bench.ValidateCase(c); err != nil {
		var fe *bench.FieldError
		if errors.As(err, &fe) {
			return &FieldError{Field: fe.Field, Problem: fe.Reason}
		}
		return badRequest(action+":invalid-argument", "case %s: %v", c.ID, err)
	}
	return nil
}

// newCase is a draft case from in, gated and checked, not yet stored.
func (s *Service) newCase(in CaseInput) (bench.Case, error) {
	if err := gate(&in); err != nil {
		return bench.Case{}, err
	}
	if m := missing(in); len(m) > 0 {
		return bench.Case{}, badRequest("add-case:missing-argument", "add-case requires case_id, title, statement, and rubric (missing %s)", strings.Join(m, ", "))
	}
	c := bench.Case{ID: in.ID, Set: cmp.Or(in.Set, store.DefaultBenchSet), Title: in.Title, Statement: in.Statement,
		Rubric: in.Rubric, Capability: in.Capability, State: bench.Draft, CreatedAt: s.store.Now()}
	return c, validCase("add-case", c)
}

func duplicate(id string) error {
	return conflict("add-case:duplicate-id", "benchmark case id already exists: %s", id)
}

func (s *Service) addCase(ctx context.Context, in CaseInput) (bench.Case, error) {
	c, err := s.newCase(in)
	if err != nil {
		return bench.Case{}, err
	}
	err = s.store.InsertBenchCase(ctx, s.store.DB, c)
	if errors.Is(err, store.ErrBenchCaseExists) {
		return bench.Case{}, duplicate(c.ID)
	}
	if err != nil {
		return bench.Case{}, err
	}
	s.logger.InfoContext(ctx, "bench case added", "case", c.ID, "set", c.Set)
	return c, nil
}

// at names the case of an import an error is about: a FieldError's field
// becomes cases[i].field, a CodedError's message starts with cases[i].
func at(i int, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		return &FieldError{Field: fmt.Sprintf("cases[%d].%s", i, fe.Field), Problem: fe.Problem}
	}
	var ce *CodedError
	if errors.As(err, &ce) {
		return &CodedError{Code: ce.Code, Msg: fmt.Sprintf("cases[%d]: %s", i, ce.Msg), Status: ce.Status}
	}
	return fmt.Errorf("cases[%d]: %w", i, err)
}

func (s *Service) addCases(ctx context.Context, in []CaseInput) ([]bench.Case, error) {
	if len(in) == 0 {
		return nil, &FieldError{Field: "cases", Problem: "at least one case is required"}
	}
	out := make([]bench.Case, len(in))
	seen := map[string]bool{}
	for i, ci := range in {
		c, err := s.newCase(ci)
		if err != nil {
			return nil, at(i, err)
		}
		if seen[c.ID] {
			return nil, at(i, conflict("add-case:duplicate-id", "case id %s is given twice", c.ID))
		}
		if i > 0 && !c.CreatedAt.After(out[i-1].CreatedAt.Add(time.Microsecond-1)) {
			// Stored to the microsecond: one apart, so the set keeps the
			// file's order rather than falling back to the ids'.
			c.CreatedAt = out[i-1].CreatedAt.Add(time.Microsecond)
		}
		seen[c.ID], out[i] = true, c
	}
	err := s.store.InTx(ctx, func(tx *sql.Tx) error {
		for i, c := range out {
			err := s.store.InsertBenchCase(ctx, tx, c)
			if errors.Is(err, store.ErrBenchCaseExists) {
				return at(i, duplicate(c.ID))
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.logger.InfoContext(ctx, "bench cases added", "cases", len(out))
	return out, nil
}

func (s *Service) updateCase(ctx context.Context, in CaseInput) (c bench.Case, err error) {
	if strings.TrimSpace(in.ID) == "" {
		return c, badRequest("update:missing-argument", "update requires case_id")
	}
	if err := gate(&in); err != nil {
		return c, err
	}
	err = s.store.InTx(ctx, func(tx *sql.Tx) error {
		cur, err := s.store.GetBenchCase(ctx, tx, in.ID)
		if errors.Is(err, store.ErrNotFound) {
			return notFound("update:not-found", "no benchmark case with id: %s", in.ID)
		}
		if err != nil {
			return err
		}
		if cur.State != bench.Draft {
			return conflict("update:frozen", "benchmark case %s is frozen: a frozen case is immutable; add a new case instead", in.ID)
		}
		c = cur
		c.Set, c.Title, c.Statement = cmp.Or(in.Set, c.Set), cmp.Or(in.Title, c.Title), cmp.Or(in.Statement, c.Statement)
		c.Rubric, c.Capability = cmp.Or(in.Rubric, c.Rubric), cmp.Or(in.Capability, c.Capability)
		if err := validCase("update", c); err != nil {
			return err
		}
		ok, err := s.store.UpdateBenchDraft(ctx, tx, c)
		if err == nil && !ok {
			err = conflict("update:frozen", "benchmark case %s was frozen meanwhile", in.ID)
		}
		return err
	})
	return c, err
}

func (s *Service) freezeCase(ctx context.Context, id string) (c bench.Case, err error) {
	if strings.TrimSpace(id) == "" {
		return c, badRequest("freeze:missing-argument", "freeze requires case_id")
	}
	err = s.store.InTx(ctx, func(tx *sql.Tx) error {
		cur, err := s.store.GetBenchCase(ctx, tx, id)
		if errors.Is(err, store.ErrNotFound) {
			return notFound("freeze:not-found", "no benchmark case with id: %s", id)
		}
		if err != nil {
			return err
		}
		if cur.State != bench.Draft {
			return conflict("freeze:not-draft", "benchmark case is not in draft state: %s", id)
		}
		c = cur
		now := s.store.Now()
		c.State, c.FrozenAt = bench.Frozen, &now
		c.Hash = bench.CaseHash(c)
		ok, err := s.store.FreezeBenchCase(ctx, tx, id, c.Hash, now)
		if err == nil && !ok {
			err = conflict("freeze:not-draft", "benchmark case is not in draft state: %s", id)
		}
		return err
	})
	if err == nil {
		s.logger.InfoContext(ctx, "bench case frozen", "case", id, "case_hash", c.Hash)
	}
	return c, err
}

func (s *Service) cases(ctx context.Context, f CaseFilter) ([]bench.Case, error) {
	switch f.State {
	case "", bench.Draft, bench.Frozen:
	default:
		return nil, &FieldError{Field: "state", Problem: fmt.Sprintf("%q is not draft or frozen", f.State)}
	}
	if f.Set != "" {
		if problem := checkID(f.Set); problem != "" {
			return nil, &FieldError{Field: "set", Problem: problem}
		}
	}
	return s.store.ListBenchCases(ctx, s.store.DB, f.Set, f.State)
}
