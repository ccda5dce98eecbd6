package main

import (
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	tuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != 400 {
		t.Fatalf("GOGC unset: the GC target is %d, want 400", got)
	}
	tuneGC(func(k string) string {
		if k == "GOGC" {
			return "100"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC set: the GC target is %d, want the environment's 100", got)
	}
}
