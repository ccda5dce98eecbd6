package bench

import (
	"fmt"
	"slices"
)

// Aggregation is one run's cells reduced (the seed's AggregateResult):
// means over ok cells only, overall and per case; failed cells counted,
// never averaged in. A nil mean means that side had no usable cell.
type Aggregation struct {
	ReferenceOverall *float64
	CandidateOverall *float64
	// PerCase holds every case seen on either side; one whose cells all
	// failed has nil means (the seed leaves it out; mull shows it, so a
	// run's grid has every case).
	PerCase         map[string]CaseMeans
	FailedCells     int
	FailedReference int
	FailedCandidate int
	UsableReference int
	UsableCandidate int
}

// Aggregate is the seed's aggregateCells: options and every cell are
// validated first, then each side's overall mean and per-case means are
// taken over its ok cells in input order.
func Aggregate(cells []Cell, o Options) (Aggregation, error) {
	if err := ValidateOptions(o); err != nil {
		return Aggregation{}, err
	}
	for _, c := range cells {
		if err := ValidateCell(c); err != nil {
			return Aggregation{}, fmt.Errorf("cell %s/%s/%d: %w", c.CaseID, c.Side, c.Iteration, err)
		}
	}
	ref, cand := bySide(cells, Reference), bySide(cells, Candidate)
	refCases, candCases := perCaseMeans(ref), perCaseMeans(cand)
	a := Aggregation{
		ReferenceOverall: meanOfOK(ref),
		CandidateOverall: meanOfOK(cand),
		PerCase:          map[string]CaseMeans{},
		FailedReference:  count(ref, CellFailed),
		FailedCandidate:  count(cand, CellFailed),
		UsableReference:  count(ref, CellOK),
		UsableCandidate:  count(cand, CellOK),
	}
	a.FailedCells = a.FailedReference + a.FailedCandidate
	for _, id := range caseIDs(cells) {
		m := CaseMeans{Reference: refCases[id], Candidate: candCases[id]}
		if m.Reference != nil && m.Candidate != nil {
			m.Delta = ptr(*m.Candidate - *m.Reference)
		}
		a.PerCase[id] = m
	}
	return a, nil
}

func bySide(cells []Cell, s Side) []Cell {
	var out []Cell
	for _, c := range cells {
		if c.Side == s {
			out = append(out, c)
		}
	}
	return out
}

// scoreOf is an ok cell's score; a failed cell has none (false), so no
// mean can count it as 0.
func scoreOf(c Cell) (float64, bool) {
	if c.Status != CellOK || c.Score == nil {
		return 0, false
	}
	return *c.Score, true
}

// meanOfOK is the mean over ok cells, nil when there is none.
func meanOfOK(cells []Cell) *float64 {
	sum, n := 0.0, 0
	for _, c := range cells {
		s, ok := scoreOf(c)
		if !ok {
			continue
		}
		sum += s
		n++
	}
	if n == 0 {
		return nil
	}
	return ptr(sum / float64(n))
}

// perCaseMeans are the means over ok cells by case id.
func perCaseMeans(cells []Cell) map[string]*float64 {
	byCase := map[string][]Cell{}
	for _, c := range cells {
		byCase[c.CaseID] = append(byCase[c.CaseID], c)
	}
	out := map[string]*float64{}
	for id, cs := range byCase {
		if m := meanOfOK(cs); m != nil {
			out[id] = m
		}
	}
	return out
}

func count(cells []Cell, s CellStatus) int {
	n := 0
	for _, c := range cells {
		if c.Status == s {
			n++
		}
	}
	return n
}

// caseIDs are the cases seen on either side, sorted.
func caseIDs(cells []Cell) []string {
	var ids []string
	for _, c := range cells {
		if !slices.Contains(ids, c.CaseID) {
			ids = append(ids, c.CaseID)
		}
	}
	slices.Sort(ids)
	return ids
}

func ptr(f float64) *float64 { return &f }
