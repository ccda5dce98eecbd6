package dshlog_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/mullhq/mull/dshlog"
)

// readLines reads a log from a position to the end of its complete data.
func readLines(t *testing.T, path string, at dshlog.Pos) (lines [][]byte, ends []dshlog.Pos, r *dshlog.Reader, err error) {
	t.Helper()
	r, err = dshlog.Open(path, at)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	for {
		l, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return lines, ends, r, err
		}
		lines = append(lines, bytes.Clone(l))
		ends = append(ends, r.Pos())
	}
}

func TestZstdFixturesDecodeEveryFrame(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			want := splitLines(f.plainBytes(t))
			got, _, r, err := readLines(t, f.path(t), dshlog.Pos{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != f.lines || !slices2Equal(got, want) || r.Incomplete() {
				t.Fatalf("read %d lines (incomplete %v), want the %d of the whole file", len(got), r.Incomplete(), f.lines)
			}
			size := fileSize(t, f.path(t))
			if r.Pos() != (dshlog.Pos{Offset: size, Line: int64(f.lines)}) {
				t.Errorf("end at %+v, want offset %d", r.Pos(), size)
			}
			if dshlog.IsZstd(f.path(t)) && len(dshlog.FrameEnds(t, f.path(t))) < 10 {
				t.Errorf("fixture has %d frames; DSH writes one per batch", len(dshlog.FrameEnds(t, f.path(t))))
			}
		})
	}
}

// TestZstdEqualsPlain: the plain S4 log, compressed as DSH does (a frame for
// the header, then one per batch, some batches ending mid-line), reads as
// the same lines and maps to the same events as the plain file.
func TestZstdEqualsPlain(t *testing.T) {
	plain := fixtures[3].plainBytes(t)
	first := bytes.IndexByte(plain, '\n') + 1
	chunks := [][]byte{plain[:first]}
	for at := first; at < len(plain); at += 1777 { // batch edges fall anywhere, mid-line too
		chunks = append(chunks, plain[at:min(at+1777, len(plain))])
	}
	path := writeFile(t, "session.jsonl.zstd", encodeFrames(t, chunks...))
	got, _, _, err := readLines(t, path, dshlog.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices2Equal(got, splitLines(plain)) {
		t.Fatalf("%d lines differ from the plain file's %d", len(got), len(splitLines(plain)))
	}
	zevs, _, err := dshlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pevs, _, err := dshlog.ReadFile(fixtures[3].path(t))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(zevs) != fmt.Sprint(pevs) || len(pevs) != 23 { // 15 (6 assistant messages: every step reasoned), 6 usage and 2 session_title
		t.Fatalf("zstd gave %d events, plain %d, or they differ", len(zevs), len(pevs))
	}
}

// TestResumeAtEveryLine: reopening at the Pos after any line reads exactly
// the lines after it, for plain logs and for zstd logs (mid-frame too).
func TestResumeAtEveryLine(t *testing.T) {
	for _, f := range []fixture{fixtures[0], fixtures[3]} {
		t.Run(f.name, func(t *testing.T) {
			all, ends, _, err := readLines(t, f.path(t), dshlog.Pos{})
			if err != nil {
				t.Fatal(err)
			}
			midFrame := 0
			for i, at := range ends {
				if at.Skip > 0 {
					midFrame++
				}
				rest, _, _, err := readLines(t, f.path(t), at)
				if err != nil {
					t.Fatalf("resume after line %d at %+v: %v", i+1, at, err)
				}
				if !slices2Equal(rest, all[i+1:]) {
					t.Fatalf("resume after line %d at %+v: %d lines, want %d", i+1, at, len(rest), len(all)-i-1)
				}
			}
			if dshlog.IsZstd(f.path(t)) && midFrame == 0 {
				t.Error("no position fell inside a frame: the skip path went untested")
			}
		})
	}
}

func TestTruncatedPlainStopsBeforeTheHalfLine(t *testing.T) {
	plain := fixtures[3].plainBytes(t)
	lines := splitLines(plain)
	lineStart := len(bytes.Join(lines[:50], []byte("\n"))) + 1 // line 51
	path := writeFile(t, "session.jsonl", plain[:lineStart+40])
	got, _, r, err := readLines(t, path, dshlog.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 50 || !r.Incomplete() || r.Pos() != (dshlog.Pos{Offset: int64(lineStart), Line: 50}) {
		t.Fatalf("%d lines, incomplete %v, pos %+v; want 50 lines up to byte %d", len(got), r.Incomplete(), r.Pos(), lineStart)
	}
	if want := fmt.Sprintf("line 51 (byte %d) has no newline: the file ends at byte %d", lineStart, lineStart+40); r.Tail() != want {
		t.Errorf("tail %q, want %q", r.Tail(), want)
	}
	// Once DSH finishes the line, reading resumes there.
	if err := os.WriteFile(path, plain, 0o600); err != nil {
		t.Fatal(err)
	}
	rest, _, r, err := readLines(t, path, r.Pos())
	if err != nil || len(rest) != len(lines)-50 || r.Incomplete() {
		t.Fatalf("after completion: %d lines, %v", len(rest), err)
	}
}

func TestTruncatedZstdStopsBeforeTheHalfFrame(t *testing.T) {
	f := fixtures[0]
	full, err := os.ReadFile(f.path(t))
	if err != nil {
		t.Fatal(err)
	}
	ends := dshlog.FrameEnds(t, f.path(t))
	plain := f.plainBytes(t)
	for _, k := range []int{1, len(ends) / 2, len(ends) - 1} {
		cutAt := ends[k-1] + (ends[k]-ends[k-1])/2 // inside frame k+1
		t.Run(fmt.Sprintf("in frame %d", k+1), func(t *testing.T) {
			path := writeFile(t, "session.jsonl.zstd", full[:cutAt])
			got, _, r, err := readLines(t, path, dshlog.Pos{})
			if err != nil {
				t.Fatal(err)
			}
			// The complete frames hold whole lines: exactly those are read.
			whole := countLines(t, full[:ends[k-1]])
			if len(got) != whole || !slices2Equal(got, splitLines(plain)[:whole]) || !r.Incomplete() {
				t.Fatalf("%d lines (incomplete %v), want %d", len(got), r.Incomplete(), whole)
			}
			if r.Pos().Offset != ends[k-1] || r.Pos().Skip != 0 {
				t.Fatalf("stopped at %+v, want the start of frame %d at %d", r.Pos(), k+1, ends[k-1])
			}
			if err := os.WriteFile(path, full, 0o600); err != nil {
				t.Fatal(err)
			}
			rest, _, _, err := readLines(t, path, r.Pos())
			if err != nil || !slices2Equal(append(got, rest...), splitLines(plain)) {
				t.Fatalf("after completion: %d more lines, %v", len(rest), err)
			}
		})
	}

	t.Run("complete frames, last line without newline", func(t *testing.T) {
		plain := fixtures[3].plainBytes(t)
		path := writeFile(t, "session.jsonl.zstd", encodeFrames(t, plain[:1000], plain[1000:len(plain)-1]))
		got, _, r, err := readLines(t, path, dshlog.Pos{})
		if err != nil || len(got) != 99 || !r.Incomplete() {
			t.Fatalf("%d lines, incomplete %v, %v; want 99 and incomplete", len(got), r.Incomplete(), err)
		}
	})
}

func TestCorruptLogs(t *testing.T) {
	t.Run("bad JSON line", func(t *testing.T) {
		lines := splitLines(fixtures[3].plainBytes(t))
		lines[39] = []byte(`{"type":"tool/result","seq":`)
		path := writeFile(t, "session.jsonl", append(bytes.Join(lines, []byte("\n")), '\n'))
		evs, pos, err := dshlog.ReadFile(path)
		var ce *dshlog.CorruptError
		if !errors.As(err, &ce) || ce.Line != 40 || pos.Line != 39 {
			t.Fatalf("err %v, pos %+v; want a CorruptError at line 40", err, pos)
		}
		wantOffset := len(bytes.Join(lines[:39], []byte("\n"))) + 1
		msg := err.Error()
		if ce.Offset != int64(wantOffset) || pos.Offset != int64(wantOffset) || !strings.Contains(msg, path+": line 40 (byte ") || !strings.Contains(msg, "bad JSON") {
			t.Fatalf("error %q at %d, pos %+v; want line 40 at byte %d", msg, ce.Offset, pos, wantOffset)
		}
		if len(evs) != 8 { // session_start, 2 user messages, 2 titles, step 1's assistant message, usage and tool result
			t.Errorf("%d events before the bad line, want 8", len(evs))
		}
	})

	t.Run("bad zstd frame", func(t *testing.T) {
		f := fixtures[0]
		full, ends := readFrames(t, f)
		bad := bytes.Clone(full)
		bad[ends[10]-6] ^= 0xff // inside frame 11, which starts at ends[9]
		path := writeFile(t, "session.jsonl.zstd", bad)
		evs, pos, err := dshlog.ReadFile(path)
		var ce *dshlog.CorruptError
		if !errors.As(err, &ce) || ce.Line != 0 || ce.Offset != ends[9] || ce.ResumeAt != ends[10] {
			t.Fatalf("err %v; want a CorruptError for the frame at %d, resuming at %d", err, ends[9], ends[10])
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%s: zstd frame at byte %d: does not decode", path, ends[9])) ||
			!strings.Contains(err.Error(), fmt.Sprintf("reading resumes at the frame at byte %d", ends[10])) {
			t.Errorf("message %q", err)
		}
		// The frames after the bad one are read: the file is read to its end.
		if pos.Offset != int64(len(bad)) {
			t.Errorf("read to %+v, want the end at %d", pos, len(bad))
		}
		requireLinesWithout(t, path, full, ends, 10)
		whole, _, _ := dshlog.ReadFile(f.path(t))
		if len(evs) == 0 || len(evs) >= len(whole) || evs[len(evs)-1].ID != whole[len(whole)-1].ID {
			t.Errorf("%d events around the bad frame (of %d), the last %s", len(evs), len(whole), evs[len(evs)-1].ID)
		}
	})

	// The log: one block header that claims more bytes than the
	// frame has reads past the frames after it. That is corruption, not a
	// frame DSH is still writing: a frame that decodes follows.
	t.Run("corrupt block header", func(t *testing.T) {
		f := fixtures[0]
		full, ends := readFrames(t, f)
		bad := bytes.Clone(full)
		bh := blockHeaderAt(t, bad, ends[9])
		size := 100_000 // more than the rest of the file, within the format's 128 KiB
		bad[bh] = bad[bh]&7 | byte(size<<3)
		bad[bh+1], bad[bh+2] = byte(size>>5), byte(size>>13)
		path := writeFile(t, "session.jsonl.zstd", bad)
		_, _, r, err := readLines(t, path, dshlog.Pos{})
		var ce *dshlog.CorruptError
		if !errors.As(err, &ce) || ce.Offset != ends[9] || ce.ResumeAt != ends[10] || !strings.Contains(err.Error(), "a block header is wrong") {
			t.Fatalf("err %v; want the frame at %d named, resuming at %d", err, ends[9], ends[10])
		}
		if r.Incomplete() {
			t.Error("a corrupt frame with frames after it was taken for one DSH is still writing")
		}
		requireLinesWithout(t, path, full, ends, 10)
	})

	t.Run("bad last frame", func(t *testing.T) {
		f := fixtures[0]
		full, ends := readFrames(t, f)
		last := len(ends) - 1
		bad := bytes.Clone(full)
		bad[ends[last]-6] ^= 0xff
		path := writeFile(t, "session.jsonl.zstd", bad)
		_, pos, err := dshlog.ReadFile(path)
		var ce *dshlog.CorruptError
		if !errors.As(err, &ce) || ce.Offset != ends[last-1] || ce.ResumeAt != 0 || !strings.Contains(err.Error(), "no frame after it decodes") {
			t.Fatalf("err %v", err)
		}
		if pos.Offset != ends[last-1] {
			t.Errorf("stopped at %+v, want the bad frame at %d", pos, ends[last-1])
		}
	})

	t.Run("bad frame, good frame, cut frame", func(t *testing.T) {
		f := fixtures[0]
		full, ends := readFrames(t, f)
		bad := bytes.Clone(full[:ends[12]+(ends[13]-ends[12])/2]) // cut inside frame 14
		bad[ends[10]-6] ^= 0xff                                   // frame 11 is bad
		path := writeFile(t, "session.jsonl.zstd", bad)
		_, _, r, err := readLines(t, path, dshlog.Pos{})
		var ce *dshlog.CorruptError
		if !errors.As(err, &ce) || ce.Offset != ends[9] {
			t.Fatalf("err %v", err)
		}
		for {
			if _, err := r.Next(); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatal(err)
				}
				break
			}
		}
		want := fmt.Sprintf("the zstd frame at byte %d is cut short: the file ends at byte %d", ends[12], len(bad))
		if !r.Incomplete() || r.Tail() != want || r.Pos().Offset != ends[12] {
			t.Fatalf("incomplete %v, tail %q, pos %+v; want %q", r.Incomplete(), r.Tail(), r.Pos(), want)
		}
	})

	// Only a frame that decodes whole is a place to resume: a frame whose
	// blocks run past the end, followed by one the file ends inside, is the
	// tail, as DSH may be writing it. A frame that reads whole but does not
	// decode is corrupt wherever it is.
	t.Run("bad frame before a cut frame", func(t *testing.T) {
		f := fixtures[0]
		full, ends := readFrames(t, f)
		cut := bytes.Clone(full[:ends[10]+(ends[11]-ends[10])/2]) // inside frame 12
		bh := blockHeaderAt(t, cut, ends[9])
		short := bytes.Clone(cut)
		short[bh+1] |= 0xf0 // frame 11's first block claims more bytes than there are
		path := writeFile(t, "session.jsonl.zstd", short)
		_, _, r, err := readLines(t, path, dshlog.Pos{})
		if err != nil || !r.Incomplete() || !strings.Contains(r.Tail(), fmt.Sprintf("frame at byte %d is cut short", ends[9])) {
			t.Fatalf("err %v, incomplete %v, tail %q", err, r.Incomplete(), r.Tail())
		}

		cut[ends[10]-6] ^= 0xff // frame 11 does not decode
		path = writeFile(t, "session.jsonl.zstd", cut)
		_, _, r, err = readLines(t, path, dshlog.Pos{})
		var ce *dshlog.CorruptError
		if !errors.As(err, &ce) || ce.Offset != ends[9] || ce.ResumeAt != 0 || r.Incomplete() {
			t.Fatalf("err %v, incomplete %v", err, r.Incomplete())
		}
	})

	t.Run("garbage between frames", func(t *testing.T) {
		f := fixtures[0]
		full, ends := readFrames(t, f)
		skippable := []byte{0x5a, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 'a', 'b', 'c'}
		garbage := []byte("not zstd at all, a stray write")
		bad := slices.Concat(full[:ends[4]], garbage, skippable, full[ends[4]:])
		path := writeFile(t, "session.jsonl.zstd", bad)
		evs, pos, err := dshlog.ReadFile(path)
		var ce *dshlog.CorruptError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "not a zstd frame") || ce.Offset != ends[4] ||
			ce.ResumeAt != ends[4]+int64(len(garbage)) {
			t.Fatalf("err %v", err)
		}
		whole, _, _ := dshlog.ReadFile(f.path(t))
		if pos.Offset != int64(len(bad)) || fmt.Sprint(evs) != fmt.Sprint(whole) {
			t.Fatalf("pos %+v, %d events; want all %d, to the end", pos, len(evs), len(whole))
		}
	})

	t.Run("not a session log", func(t *testing.T) {
		path := writeFile(t, "session.jsonl", []byte(`{"hello":"world"}`+"\n"))
		_, _, err := dshlog.ReadFile(path)
		if err == nil || !strings.Contains(err.Error(), "line 1 (byte 0): not a DSH session log") {
			t.Fatalf("err %v", err)
		}
	})
}

// readFrames is a fixture's bytes and its frames' end offsets.
func readFrames(t *testing.T, f fixture) ([]byte, []int64) {
	t.Helper()
	full, err := os.ReadFile(f.path(t))
	if err != nil {
		t.Fatal(err)
	}
	return full, dshlog.FrameEnds(t, f.path(t))
}

// blockHeaderAt is the offset of the first block header of the frame at.
func blockHeaderAt(t *testing.T, b []byte, at int64) int64 {
	t.Helper()
	var h zstd.Header
	if err := h.Decode(b[at:]); err != nil || h.Skippable {
		t.Fatalf("no frame at %d: %v", at, err)
	}
	return at + int64(h.HeaderSize)
}

// requireLinesWithout checks that path reads as the lines of full without
// those of frame bad (0-based): the line it begins in the frame before, and
// the line it leaves for the frame after, are lost with it.
func requireLinesWithout(t *testing.T, path string, full []byte, ends []int64, bad int) {
	t.Helper()
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	decode := func(b []byte) []byte {
		out, err := dec.DecodeAll(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := decode(full[:ends[bad-1]])
	before = before[:bytes.LastIndexByte(before, '\n')+1]
	after := decode(full[ends[bad]:])
	if through := decode(full[:ends[bad]]); through[len(through)-1] != '\n' {
		after = after[bytes.IndexByte(after, '\n')+1:]
	}
	want := append(splitLines(before), splitLines(after)...)
	r, err := dshlog.Open(path, dshlog.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got [][]byte
	for {
		l, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if ce := (*dshlog.CorruptError)(nil); errors.As(err, &ce) && ce.ResumeAt > 0 {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, bytes.Clone(l))
	}
	if !slices2Equal(got, want) {
		t.Fatalf("read %d lines, want the %d outside frame %d", len(got), len(want), bad+1)
	}
}

func slices2Equal(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func countLines(t *testing.T, zstdData []byte) int {
	t.Helper()
	path := writeFile(t, "part.jsonl.zstd", zstdData)
	lines, _, _, err := readLines(t, path, dshlog.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	return len(lines)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}
