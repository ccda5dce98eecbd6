package web

import "strings"

// diffLine is one line of a line-based diff: Op is " " (both), "-" (only
// in the old text) or "+" (only in the new).
type diffLine struct {
	Op   string
	Text string
}

// diffMaxLines bounds the texts diffLines compares line by line (its
// table is their product); longer ones are shown as all removed, all
// added. A digest is a few hundred lines at most (digest.max_lines).
const diffMaxLines = 2000

// diffLines is the line diff of a to b by their longest common
// subsequence: removed lines before added ones at each change.
func diffLines(a, b string) []diffLine {
	x, y := splitLines(a), splitLines(b)
	if len(x) > diffMaxLines || len(y) > diffMaxLines {
		var out []diffLine
		for _, l := range x {
			out = append(out, diffLine{"-", l})
		}
		for _, l := range y {
			out = append(out, diffLine{"+", l})
		}
		return out
	}
	// lcs[i][j] is the LCS length of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		switch {
		case x[i] == y[j]:
			out = append(out, diffLine{" ", x[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{"-", x[i]})
			i++
		default:
			out = append(out, diffLine{"+", y[j]})
			j++
		}
	}
	for ; i < len(x); i++ {
		out = append(out, diffLine{"-", x[i]})
	}
	for ; j < len(y); j++ {
		out = append(out, diffLine{"+", y[j]})
	}
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
