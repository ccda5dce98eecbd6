package web

import "strings"

// DiffLine is one line of a line diff: kept (Op ' '), deleted ('-') or
// inserted ('+').
type DiffLine struct {
	Op   byte
	Text string
}

// Del and Ins say which markup a template wraps the line in.
func (l DiffLine) Del() bool { return l.Op == '-' }
func (l DiffLine) Ins() bool { return l.Op == '+' }

// maxDiffCells bounds the LCS table (lines of a × lines of b): past it the
// changed middle is shown as all deleted then all inserted, which is
// still a correct diff, only not a minimal one.
const maxDiffCells = 4_000_000

// lineDiff is a line diff of a and b: the common prefix and suffix kept,
// the middle aligned by a longest common subsequence of lines. Deletions
// come before insertions where both are at one place.
func lineDiff(a, b string) []DiffLine {
	x, y := splitLines(a), splitLines(b)
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	out := make([]DiffLine, 0, len(x)+len(y))
	for _, l := range x[:pre] {
		out = append(out, DiffLine{' ', l})
	}
	out = append(out, middle(x[pre:len(x)-suf], y[pre:len(y)-suf])...)
	for _, l := range x[len(x)-suf:] {
		out = append(out, DiffLine{' ', l})
	}
	return out
}

// middle diffs two slices that share no first or last line.
func middle(x, y []string) []DiffLine {
	var out []DiffLine
	if len(x)*len(y) > maxDiffCells || len(x) == 0 || len(y) == 0 {
		for _, l := range x {
			out = append(out, DiffLine{'-', l})
		}
		for _, l := range y {
			out = append(out, DiffLine{'+', l})
		}
		return out
	}
	// lcs[i][j] is the LCS length of x[i:] and y[j:].
	w := len(y) + 1
	lcs := make([]int32, (len(x)+1)*w)
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		switch {
		case x[i] == y[j]:
			out = append(out, DiffLine{' ', x[i]})
			i, j = i+1, j+1
		case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			out = append(out, DiffLine{'-', x[i]})
			i++
		default:
			out = append(out, DiffLine{'+', y[j]})
			j++
		}
	}
	for ; i < len(x); i++ {
		out = append(out, DiffLine{'-', x[i]})
	}
	for ; j < len(y); j++ {
		out = append(out, DiffLine{'+', y[j]})
	}
	return out
}

// splitLines splits s into lines without their newlines; "" has none, and
// a final newline makes no empty last line.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// diffStats counts a diff's inserted and deleted lines.
func diffStats(d []DiffLine) (ins, del int) {
	for _, l := range d {
		switch l.Op {
		case '+':
			ins++
		case '-':
			del++
		}
	}
	return ins, del
}
