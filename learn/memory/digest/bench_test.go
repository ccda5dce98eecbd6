package digest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/memory/digest"
)

// BenchmarkRender renders a 500-memory workspace library: every entry's
// text passes the render-time trust gate, which dominates the cost.
func BenchmarkRender(b *testing.B) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	kinds := []memory.Kind{memory.Fact, memory.Lesson, memory.Method, memory.Resource, memory.Preference}
	in := digest.Input{Now: now, Handoff: "Did: the store migration.\nNext: wire GET /v1/digest.\nOpen: the flaky cache test."}
	for i := range 500 {
		in.Memories = append(in.Memories, memory.Memory{
			ID: int64(i + 1), Kind: kinds[i%len(kinds)], Origin: memory.OriginRetro, RecordedAt: now.Add(-time.Duration(i) * time.Hour),
			Text: fmt.Sprintf("memory %d: run go test ./pkg%d/... before saying done; the build uses make and pnpm, not npm", i, i),
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		digest.Render(in, digest.Options{})
	}
}
