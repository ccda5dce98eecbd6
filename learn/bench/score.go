package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultOptions are the seed's DEFAULT_AGGREGATE_OPTIONS (spec §4.5):
// passThreshold 60 (reported only), regressionTolerance 0,
// maxFailedCells 0. config [bench] defaults to the same numbers.
var DefaultOptions = Options{PassThreshold: 60, RegressionTolerance: 0, MaxFailedCells: 0}

// CellError is a cell that cannot be counted (the seed's
// CellScoreFailureReason): score-non-finite, score-out-of-range,
// failed-cell-score-not-null, ok-cell-score-required, and mull's
// unknown-side and unknown-status (Go has no closed unions).
type CellError struct {
	Reason string
}

func (e *CellError) Error() string { return "invalid cell score: " + e.Reason }

// ValidateCell is the seed's validateCellScore: an ok cell needs a finite
// score in 0..100 (integer or decimal); a failed cell must have none,
// because a failure is never counted as 0 or any other number. The
// decision validates every cell first, so a bad record is an error, not
// a silently skewed mean.
func ValidateCell(c Cell) error {
	bad := func(reason string) error { return &CellError{Reason: reason} }
	if c.Side != Reference && c.Side != Candidate {
		return bad("unknown-side " + strconv.Quote(string(c.Side)))
	}
	switch c.Status {
	case CellFailed:
		if c.Score != nil {
			return bad("failed-cell-score-not-null")
		}
		return nil
	case CellOK:
	default:
		return bad("unknown-status " + strconv.Quote(string(c.Status)))
	}
	if c.Score == nil {
		return bad("ok-cell-score-required")
	}
	s := *c.Score
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return bad("score-non-finite")
	}
	if s < 0 || s > 100 {
		return bad("score-out-of-range")
	}
	return nil
}

// ValidateOptions is the seed's validateAggregateOptions: nonsense knobs
// are refused loudly rather than silently mis-deciding.
func ValidateOptions(o Options) error {
	p, t := o.PassThreshold, o.RegressionTolerance
	if math.IsNaN(p) || math.IsInf(p, 0) || p < 0 || p > 100 {
		return fmt.Errorf("passThreshold must be a finite number in 0..100, got %v", p)
	}
	if math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
		return fmt.Errorf("regressionTolerance must be a finite non-negative number, got %v", t)
	}
	if o.MaxFailedCells < 0 {
		return fmt.Errorf("maxFailedCells must be a non-negative integer, got %d", o.MaxFailedCells)
	}
	return nil
}

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

// Decide is the seed's decideBenchmark: the binding verdict over a run's
// cells, made by code and never by a model. The run is REJECTED when
//
//	(a) either side has no usable (ok) cell;
//	(b) failed candidate cells exceed o.MaxFailedCells;
//	(c) the candidate's overall mean is below the reference's minus
//	    o.RegressionTolerance;
//	(d) any case's candidate mean is below its reference mean minus the
//	    tolerance (only where both sides have a mean);
//
// and ACCEPTED when no rule rejects. PassThreshold is reported
// (CandidatePasses) and never gates. Reasons lists every rule that
// rejects, in that order, for the person reading the run. Feedback is
// every non-empty cell feedback in input order, AutoRollback always false:
// a run never rolls anything back.
func Decide(runID, refinementID string, cells []Cell, o Options, now time.Time) (Decision, error) {
	a, err := Aggregate(cells, o)
	if err != nil {
		return Decision{}, err
	}
	regressed := regressionCases(a.PerCase, o.RegressionTolerance)
	reasons := rejections(a, o, regressed)
	d := Decision{
		RunID:            runID,
		RefinementID:     refinementID,
		Status:           Accepted,
		ReferenceOverall: a.ReferenceOverall,
		CandidateOverall: a.CandidateOverall,
		PerCase:          a.PerCase,
		RegressionCases:  regressed,
		FailedCells:      a.FailedCells,
		FailedReference:  a.FailedReference,
		FailedCandidate:  a.FailedCandidate,
		UsableReference:  a.UsableReference,
		UsableCandidate:  a.UsableCandidate,
		Feedback:         feedback(cells),
		Reasons:          reasons,
		PassThreshold:    o.PassThreshold,
		CandidatePasses:  a.CandidateOverall != nil && *a.CandidateOverall >= o.PassThreshold,
		AutoRollback:     false,
		CreatedAt:        now,
	}
	if len(reasons) > 0 {
		d.Status = Rejected
	}
	return d, nil
}

// regressionCases are the cases whose candidate mean fell below the
// reference mean minus tol, sorted (the seed's findRegressionCases).
func regressionCases(perCase map[string]CaseMeans, tol float64) []string {
	out := []string{}
	for id, m := range perCase {
		if m.Reference != nil && m.Candidate != nil && regressed(*m.Candidate, *m.Reference, tol) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// regressed is the seed's regression test, overall and per case: the
// candidate below the reference minus the tolerance. Equal is not a
// regression.
func regressed(cand, ref, tol float64) bool { return cand < ref-tol }

// rejections are the reasons rules (a) to (d) reject the run, one line
// each; none means ACCEPTED.
func rejections(a Aggregation, o Options, regressedCases []string) []string {
	reasons := []string{}
	if a.UsableReference == 0 {
		reasons = append(reasons, "no usable reference cells")
	}
	if a.UsableCandidate == 0 {
		reasons = append(reasons, "no usable candidate cells")
	}
	if a.FailedCandidate > o.MaxFailedCells {
		reasons = append(reasons, fmt.Sprintf("%d failed candidate cells > max_failed_cells %d", a.FailedCandidate, o.MaxFailedCells))
	}
	ref, cand := a.ReferenceOverall, a.CandidateOverall
	if ref != nil && cand != nil && regressed(*cand, *ref, o.RegressionTolerance) {
		reasons = append(reasons, fmt.Sprintf("candidate overall %s < reference overall %s − tolerance %s", num(*cand), num(*ref), num(o.RegressionTolerance)))
	}
	for _, id := range regressedCases {
		m := a.PerCase[id]
		reasons = append(reasons, fmt.Sprintf("case %s regressed: %s < %s − %s", id, num(*m.Candidate), num(*m.Reference), num(o.RegressionTolerance)))
	}
	return reasons
}

// num shows a mean to people: at most two decimals, no trailing zeros.
func num(f float64) string {
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

// feedback is every non-empty cell feedback, in input order (the seed's
// collectFeedback), as given.
func feedback(cells []Cell) []string {
	out := []string{}
	for _, c := range cells {
		if strings.TrimSpace(c.Feedback) != "" {
			out = append(out, c.Feedback)
		}
	}
	return out
}
