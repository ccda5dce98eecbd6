package bench

import (
	"math"
	"strconv"
)

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
