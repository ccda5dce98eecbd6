package harness

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func user(s string) Turn      { return Turn{Type: "user_message", Text: s} }
func assistant(s string) Turn { return Turn{Type: "assistant_message", Text: s} }
func failed(s string) Turn    { return Turn{Type: "tool_result", Text: s, Failed: true} }

func TestTrajectoryRouteA(t *testing.T) {
	turns := []Turn{user("fix the build"), {Type: "tool_result", Text: "ok"}, assistant("done"), user("   "), {Type: "turn_end"}, assistant("token ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij")}
	text, route := Trajectory(TrajectoryInput{Turns: turns, MaxChars: 12000, SignalRatio: 0.5, CacheReads: 1})
	want := "[user_message] fix the build\n\n[assistant_message] done\n\n[assistant_message] token [redacted:ghp]"
	if route != RouteVerbatim || text != want {
		t.Fatalf("route %s, text:\n%s\nwant:\n%s", route, text, want)
	}
	t.Run("exactly MaxChars is not truncated", func(t *testing.T) {
		in := []Turn{user(strings.Repeat("x", 100-len("[user_message] ")))}
		if text, _ := Trajectory(TrajectoryInput{Turns: in, MaxChars: 100, CacheReads: 1}); text != "[user_message] "+strings.Repeat("x", 85) {
			t.Fatalf("text %q", text)
		}
	})
	t.Run("tail-biased with the seed's truncation header, within MaxChars", func(t *testing.T) {
		var in []Turn
		for i := range 100 {
			in = append(in, user(fmt.Sprintf("message %03d %s", i, strings.Repeat("é", 50))))
		}
		text, _ := Trajectory(TrajectoryInput{Turns: in, MaxChars: 1000, CacheReads: 5})
		total := 100*len([]rune("[user_message] message 000 "+strings.Repeat("é", 50))) + 99*2
		header := fmt.Sprintf("… (truncated, showing the last %d characters of %d)\n\n", 1000-utf8.RuneCountInString(fmt.Sprintf("… (truncated, showing the last %d characters of %d)\n\n", 1000, total)), total)
		if !strings.HasPrefix(text, header) || !strings.HasSuffix(text, "message 099 "+strings.Repeat("é", 50)) || utf8.RuneCountInString(text) > 1000 {
			t.Fatalf("%d runes, text:\n%s", utf8.RuneCountInString(text), text)
		}
		if n := utf8.RuneCountInString(text); n < 995 {
			t.Fatalf("%d runes, want about the whole budget", n)
		}
	})
}

func TestTrajectoryRouteB(t *testing.T) {
	turns := []Turn{
		user("please fix the flaky test"),
		failed("go test: FAIL TestX\nexpected 1, got 2"),
		{Type: "tool_result", Text: "ok"},
		{Type: "error", Text: "model timeout"},
		{Type: "compaction_end"},
		{Type: "feedback", Text: "thumbs down: wrong file"},
		assistant("I changed\nthe retry loop"),
	}
	text, route := Trajectory(TrajectoryInput{Turns: turns, MaxChars: 12000, SignalRatio: 0.5})
	want := signalTitle + "\n" +
		"[tool_result failed] go test: FAIL TestX\nexpected 1, got 2\n\n[error] model timeout\n\n[feedback] thumbs down: wrong file\n\n" +
		summaryTitle + "\n" +
		"- user asked: please fix the flaky test\n- (the context was compacted)\n- assistant: I changed the retry loop"
	if route != RouteSummary || text != want {
		t.Fatalf("route %s, text:\n%s\nwant:\n%s", route, text, want)
	}
	t.Run("a signal is cut at 600 characters, a summary line at 160", func(t *testing.T) {
		s600 := strings.Repeat("s", 600-len("[error] "))
		text, _ := Trajectory(TrajectoryInput{Turns: []Turn{{Type: "error", Text: s600}, {Type: "error", Text: s600 + "x"},
			user(strings.Repeat("u", 160-len("- user asked: "))), user(strings.Repeat("v", 161-len("- user asked: ")))}, MaxChars: 12000, SignalRatio: 0.5})
		for _, want := range []string{"[error] " + s600 + "\n", "[error] " + s600[:len(s600)-1] + "…\n", "- user asked: " + strings.Repeat("u", 146) + "\n",
			"- user asked: " + strings.Repeat("v", 145) + "…"} {
			if !strings.Contains(text, want) {
				t.Fatalf("missing %q in\n%s", want, text)
			}
		}
	})
	t.Run("over budget the newest signals are kept and the older counted", func(t *testing.T) {
		var in []Turn
		for i := range 10 {
			in = append(in, failed(fmt.Sprintf("failure %d %s", i, strings.Repeat("f", 80))))
		}
		text, _ := Trajectory(TrajectoryInput{Turns: in, MaxChars: 1000, SignalRatio: 0.5})
		if !strings.Contains(text, "… 7 earlier signals left out\n\n[tool_result failed] failure 7 ") || strings.Contains(text, "failure 6 ") ||
			!strings.HasSuffix(text, "failure 9 "+strings.Repeat("f", 80)) {
			t.Fatalf("text:\n%s", text)
		}
		if n := utf8.RuneCountInString(text); n > 500 {
			t.Fatalf("signals took %d of 500", n)
		}
	})
	t.Run("the summary takes what the signals leave", func(t *testing.T) {
		var in []Turn
		for i := range 100 {
			in = append(in, user(fmt.Sprintf("question %02d", i)))
		}
		in = append(in, failed("one failure"))
		text, _ := Trajectory(TrajectoryInput{Turns: in, MaxChars: 1000, SignalRatio: 0.5})
		if n := utf8.RuneCountInString(text); n < 950 || n > 1000 || !strings.Contains(text, "earlier lines left out") || !strings.HasSuffix(text, "question 99") {
			t.Fatalf("%d runes:\n%s", n, text)
		}
	})
}

// The budget holds for every route, budget and ratio.
func TestTrajectoryWithinMaxChars(t *testing.T) {
	var turns []Turn
	for i := range 60 {
		turns = append(turns, user(fmt.Sprintf("ask %d %s", i, strings.Repeat("q", i*7))), failed(strings.Repeat("e", i*13)),
			assistant(strings.Repeat("a", i*11)), Turn{Type: "feedback", Text: "meh"})
	}
	for _, cache := range []int64{0, 1} {
		for _, max := range []int{0, 1, 5, 40, 77, 100, 333, 1000, 4096, 12000} {
			for _, ratio := range []float64{-1, 0, 0.1, 0.5, 0.9, 1, 2} {
				in := TrajectoryInput{Turns: turns, MaxChars: max, SignalRatio: ratio, CacheReads: cache}
				text, _ := Trajectory(in)
				if n := utf8.RuneCountInString(text); n > max {
					t.Errorf("cache %d max %d ratio %v: %d runes", cache, max, ratio, n)
				}
				if again, _ := Trajectory(in); again != text {
					t.Errorf("cache %d max %d ratio %v: not deterministic", cache, max, ratio)
				}
			}
		}
	}
	if text, route := Trajectory(TrajectoryInput{MaxChars: 100}); text != "" || route != RouteSummary {
		t.Fatalf("empty session: %q %s", text, route)
	}
}
