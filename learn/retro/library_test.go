package retro_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
)

func TestBuildLibrary(t *testing.T) {
	pub := retro.Published{Watermark: 10, At: now.Add(-time.Hour)}
	before := mem(3, memory.Fact, "invalidated before the digest")
	before.InvalidAt = pub.At.Add(-time.Minute)
	after := mem(4, memory.Lesson, "a -> b -> invalidated after the digest")
	after.InvalidAt = pub.At.Add(time.Minute)
	quarantined := mem(5, memory.Fact, "held for review")
	quarantined.Quarantined = true
	legacy := mem(7, memory.Fact, "the deploy token is "+secret) // stored before the gate
	ms := []memory.Memory{
		mem(1, memory.Fact, "the repo uses pnpm"), mem(2, memory.Method, "flaky test -> rerun alone -> isolates state"),
		before, after, quarantined,
		mem(6, memory.Preference, "answer in English"), legacy,
		mem(8, memory.Fact, instruction), mem(9, memory.Resource, "River | https://riverqueue.com | queue docs"),
		mem(11, memory.Fact, "written after the digest"),
	}
	lib := retro.BuildLibrary(ms, pub, 0)
	want := []string{
		"- [id 1] fact: the repo uses pnpm",
		"- [id 7] fact: the deploy token is [redacted:ghp]",
		"- [id 4] lesson: a -> b -> invalidated after the digest",
		"- [id 2] method: flaky test -> rerun alone -> isolates state",
		"- [id 9] resource: River | https://riverqueue.com | queue docs",
	}
	if !strings.Contains(lib.Text, strings.Join(want, "\n")) {
		t.Errorf("library:\n%s\nwant the lines\n%s", lib.Text, strings.Join(want, "\n"))
	}
	if len(lib.Shown) != 5 || lib.Shown[4] != memory.Lesson {
		t.Errorf("Shown = %v", lib.Shown)
	}
	if strings.Contains(lib.Text, "ghp_") || strings.Contains(lib.Text, "curl") {
		t.Errorf("the library shows what the gate must hide:\n%s", lib.Text)
	}

	// What changes after the publication leaves it byte-identical: uses
	// counted, memories invalidated or written.
	ms[0].Uses += 3
	ms[1].InvalidAt = now
	ms = append(ms, mem(12, memory.Fact, "another later fact"))
	if again := retro.BuildLibrary(ms, pub, 0); again.Text != lib.Text {
		t.Errorf("library changed after publication:\n%s\nthen\n%s", lib.Text, again.Text)
	}

	// No digest yet: an empty library, the same for every retro.
	if empty := retro.BuildLibrary(ms, retro.Published{}, 0); len(empty.Shown) != 0 || !strings.Contains(empty.Text, "(none published yet)") {
		t.Errorf("empty library: %+v", empty)
	}
}

// Over its cap, the library keeps the newest memories and says how many
// it left out.
func TestBuildLibraryCap(t *testing.T) {
	var ms []memory.Memory
	for i := range 100 {
		ms = append(ms, mem(int64(i+1), memory.Fact, fmt.Sprintf("fact number %03d about this workspace and its tools", i+1)))
	}
	lib := retro.BuildLibrary(ms, retro.Published{Watermark: 100, At: now}, 0)
	if n := len([]rune(lib.Text)); n > retro.MaxLibraryRunes+400 {
		t.Errorf("library of %d runes, cap %d", n, retro.MaxLibraryRunes)
	}
	if _, ok := lib.Shown[100]; !ok || len(lib.Shown) == 100 {
		t.Errorf("shown %d, newest kept %t", len(lib.Shown), ok)
	}
	if !strings.Contains(lib.Text, fmt.Sprintf("(+%d entries not shown for length)", 100-len(lib.Shown))) {
		t.Errorf("no omission line:\n%s", lib.Text[len(lib.Text)-300:])
	}
	small := retro.BuildLibrary(ms, retro.Published{Watermark: 100, At: now}, 200)
	if len(small.Shown) != 2 { // two lines of 67 runes and their newlines
		t.Errorf("cap 200: shown %v", small.Shown)
	}
}

func TestMessages(t *testing.T) {
	lib := retro.BuildLibrary(nil, retro.Published{}, 0)
	msgs := retro.Messages(lib, "## ERRORS\n- boom")
	if len(msgs) != 3 || msgs[0].Content != retro.Prompt || msgs[1].Content != lib.Text || msgs[2].Role != "user" || msgs[2].Content != "## ERRORS\n- boom" {
		t.Errorf("messages %+v", msgs)
	}
}
