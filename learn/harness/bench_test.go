package harness

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkProject is a projection request over a large harness: 200
// entries of each kind, each text through the gate.
func BenchmarkProject(b *testing.B) {
	s := State{}
	for _, k := range Kinds {
		s[k] = map[string]Entry{}
		for i := range 200 {
			id := fmt.Sprintf("%s-%03d", k, i)
			s[k][id] = Entry{ID: id, Kind: k, Version: 1, Title: "title " + id, Content: strings.Repeat("pin tool versions before release; ", 8),
				UpdatedAt: day(1).Add(time.Duration(i) * time.Minute)}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		Project(s, "pin tool", ProjectOptions{})
	}
}
