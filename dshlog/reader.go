package dshlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Pos is a place in a session log where reading can resume. The zero Pos
// is the start of the file.
//
// A plain log resumes at the byte offset of its next unread line. A zstd log
// is a run of independent frames, so it resumes at the file offset of the
// frame that holds the next unread line, skipping the bytes of that frame's
// decompressed data already read: nothing before that frame is decoded again.
type Pos struct {
	// Offset is a byte offset in the file: the next unread line (plain) or
	// the zstd frame holding it.
	Offset int64 `json:"offset"`
	// Skip is, for zstd, how many decompressed bytes of the frame at Offset
	// were read already. Always 0 for a plain log.
	Skip int64 `json:"skip"`
	// Line is how many complete lines were read before this position.
	Line int64 `json:"line"`
}

// CorruptError says where a session log stops making sense: a line that is
// not a valid row, or zstd data that does not decode.
type CorruptError struct {
	Path string
	// Line is the bad line's number (1-based), or 0 when a zstd frame is bad.
	// After a skipped frame, lines are counted without the ones it held.
	Line int64
	// Offset is the file offset of the bad line (plain), or of the zstd
	// frame holding the bad line or failing to decode.
	Offset int64
	// Zstd says the file is zstd-compressed.
	Zstd bool
	// ResumeAt is, for a bad zstd frame, the offset of the next frame that
	// decodes, where the Reader goes on: frames are independent, so only
	// the bad frame's lines are lost. 0 when no frame after it decodes, or
	// for a bad line: the Reader stops there.
	ResumeAt int64
	Err      error
}

func (e *CorruptError) Error() string {
	switch {
	case e.Line == 0 && e.ResumeAt > 0:
		return fmt.Sprintf("%s: zstd frame at byte %d: %v; its %d bytes are skipped, reading resumes at the frame at byte %d",
			e.Path, e.Offset, e.Err, e.ResumeAt-e.Offset, e.ResumeAt)
	case e.Line == 0:
		return fmt.Sprintf("%s: zstd frame at byte %d: %v; no frame after it decodes", e.Path, e.Offset, e.Err)
	case e.Zstd:
		return fmt.Sprintf("%s: line %d (in the zstd frame at byte %d): %v", e.Path, e.Line, e.Offset, e.Err)
	default:
		return fmt.Sprintf("%s: line %d (byte %d): %v", e.Path, e.Line, e.Offset, e.Err)
	}
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Reader reads the complete lines of one session log, plain or zstd. It
// stops, without an error, before a half-written last line or an incomplete
// last zstd frame (DSH may still be writing them, or crashed): Tail says
// which. A bad zstd frame is a *CorruptError, after which Next goes on at
// the next frame that decodes (CorruptError.ResumeAt).
type Reader struct {
	path       string
	f          *os.File
	br         *bufio.Reader
	compressed bool
	pos        Pos  // after the last line returned
	lineAt     Pos  // start of the last line returned
	done       bool // the end of the complete data was reached
	incomplete bool // data follows the end that is not a whole line or frame yet
	tail       string

	// zstd only
	dec     *zstd.Decoder
	raw     []byte // the current frame, compressed
	data    []byte // the current frame, decompressed
	used    int    // bytes of data consumed
	frameAt int64  // file offset of the current frame
	next    int64  // file offset of the frame after it
	skip    int64  // bytes to skip in the first frame read (resuming)
	carry   []byte // the start of a line continued in the next frame
	// resumed: reading resumed past a bad frame, so the first line may be
	// the end of one of its lines, and is dropped if it is not JSON.
	resumed bool
}

// IsZstd says whether a log file name is of DSH's compressed form.
func IsZstd(path string) bool {
	return strings.HasSuffix(path, ".zstd") || strings.HasSuffix(path, ".zst")
}

// Open opens a session log read-only at a position (the zero Pos for the
// start). A name ending in .zstd is read as concatenated zstd frames.
func Open(path string, at Pos) (*Reader, error) {
	compressed := IsZstd(path)
	if !compressed && at.Skip != 0 {
		return nil, fmt.Errorf("dshlog: %s: a plain log has no frame to skip into", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dshlog: %w", err)
	}
	if _, err := f.Seek(at.Offset, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("dshlog: %s: seek to %d: %w", path, at.Offset, err)
	}
	r := &Reader{path: path, f: f, br: bufio.NewReaderSize(f, 64<<10), compressed: compressed, pos: at, lineAt: at}
	if compressed {
		r.next, r.skip = at.Offset, at.Skip
		// One goroutine-free decoder; DSH frames are small write batches.
		if r.dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxFrameData)); err != nil {
			f.Close()
			return nil, fmt.Errorf("dshlog: %w", err)
		}
	}
	return r, nil
}

// Close releases the file.
func (r *Reader) Close() error {
	if r.dec != nil {
		r.dec.Close()
	}
	return r.f.Close()
}

// Pos is the position after the last line returned: where the next read
// resumes.
func (r *Reader) Pos() Pos { return r.pos }

// Incomplete reports, once Next has returned io.EOF, whether the file goes
// on past the complete data with a partial line or zstd frame.
func (r *Reader) Incomplete() bool { return r.incomplete }

// Tail says, once Next has returned io.EOF with Incomplete, what the data
// past the end is: a line without its newline, or a zstd frame the file
// ends inside, with their places. "" when the data ends cleanly.
func (r *Reader) Tail() string { return r.tail }

// Next returns the next complete line without its newline. The slice is
// valid until the next call. It returns io.EOF at the end of the complete
// data, and a *CorruptError where zstd data does not decode; when its
// ResumeAt is set, the next call goes on from there.
func (r *Reader) Next() ([]byte, error) {
	if r.done {
		return nil, io.EOF
	}
	var line []byte
	var err error
	if r.compressed {
		line, err = r.nextZstd()
	} else {
		line, err = r.nextPlain()
	}
	if ce := (*CorruptError)(nil); err != nil && !(errors.As(err, &ce) && ce.ResumeAt > 0) {
		r.done = true
	}
	return line, err
}

// Corrupt wraps a problem with the last line returned (bad JSON, a row
// that does not fit DSH's format) into a *CorruptError naming its place.
func (r *Reader) Corrupt(err error) *CorruptError {
	return &CorruptError{Path: r.path, Line: r.pos.Line, Offset: r.lineAt.Offset, Zstd: r.compressed, Err: err}
}

func (r *Reader) nextPlain() ([]byte, error) {
	line, err := r.br.ReadBytes('\n')
	if err == io.EOF {
		if r.incomplete = len(line) > 0; r.incomplete {
			r.tail = fmt.Sprintf("line %d (byte %d) has no newline: the file ends at byte %d",
				r.pos.Line+1, r.pos.Offset, r.pos.Offset+int64(len(line)))
		}
		return nil, io.EOF
	}
	if err != nil {
		return nil, fmt.Errorf("dshlog: %s: %w", r.path, err)
	}
	r.lineAt = r.pos
	r.pos.Offset += int64(len(line))
	r.pos.Line++
	return line[:len(line)-1], nil
}

func (r *Reader) nextZstd() ([]byte, error) {
	for {
		rest := r.data[r.used:]
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line := rest[:i]
			if len(r.carry) > 0 {
				line = append(r.carry, line...)
				r.carry = r.carry[:0]
			}
			r.used += i + 1
			r.lineAt = r.pos
			if r.used == len(r.data) {
				r.pos.Offset, r.pos.Skip = r.next, 0
			} else {
				r.pos.Offset, r.pos.Skip = r.frameAt, int64(r.used)
			}
			if r.resumed {
				r.resumed = false
				if !json.Valid(line) {
					continue // the rest of a line of the skipped frame
				}
			}
			r.pos.Line++
			return line, nil
		}
		r.carry = append(r.carry, rest...)
		r.used = len(r.data)
		if err := r.loadFrame(); err != nil {
			return nil, err
		}
	}
}

// loadFrame decodes the next whole frame into r.data.
func (r *Reader) loadFrame() error {
	raw, err := readFrame(r.br, r.raw[:0])
	if err == io.EOF {
		if r.incomplete = len(r.carry) > 0; r.incomplete {
			r.tail = fmt.Sprintf("line %d has no newline: the last zstd frame ends inside it, at byte %d", r.pos.Line+1, r.next)
		}
		return io.EOF
	}
	if err == nil {
		r.raw = raw
		var data []byte
		if data, err = r.dec.DecodeAll(raw, r.data[:0]); err == nil {
			return r.loaded(data)
		}
		err = fmt.Errorf("does not decode: %w", err)
	}
	return r.damaged(err)
}

// loaded makes a decoded frame the current one.
func (r *Reader) loaded(data []byte) error {
	r.frameAt, r.next = r.next, r.next+int64(len(r.raw))
	r.data, r.used = data, 0
	if r.skip > 0 {
		if r.skip > int64(len(data)) {
			return r.frameErr(r.frameAt, fmt.Errorf("the frame holds %d bytes, fewer than the %d already read: the file was rewritten", len(data), r.skip), 0)
		}
		r.used, r.skip = int(r.skip), 0
	}
	return nil
}

// damaged handles the frame at r.next that does not read or decode: it
// looks for the next frame that does and resumes there, returning a
// *CorruptError for the bad one. A frame the file ends inside, with no
// frame after it, is the tail (io.EOF, Incomplete): DSH may be writing it.
func (r *Reader) damaged(why error) error {
	bad := r.next
	info, err := r.f.Stat()
	if err != nil {
		return fmt.Errorf("dshlog: %w", err)
	}
	size := info.Size()
	at, ok, err := nextFrame(r.f, bad+1, size, r.dec)
	if err != nil {
		return fmt.Errorf("dshlog: %s: %w", r.path, err)
	}
	short := errors.Is(why, errShortFrame)
	switch {
	case !ok && short:
		r.incomplete = true
		r.tail = fmt.Sprintf("the zstd frame at byte %d is cut short: the file ends at byte %d", bad, size)
		return io.EOF
	case !ok:
		return r.frameErr(bad, why, 0)
	case short:
		why = fmt.Errorf("its blocks run past the frame at byte %d (a block header is wrong)", at)
	}
	if _, err := r.f.Seek(at, io.SeekStart); err != nil {
		return fmt.Errorf("dshlog: %s: seek to %d: %w", r.path, at, err)
	}
	r.br.Reset(r.f)
	r.next, r.skip, r.resumed = at, 0, true
	r.carry, r.data, r.used = r.carry[:0], r.data[:0], 0
	r.pos.Offset, r.pos.Skip = at, 0
	return r.frameErr(bad, why, at)
}

func (r *Reader) frameErr(at int64, err error, resume int64) *CorruptError {
	return &CorruptError{Path: r.path, Offset: at, Zstd: true, ResumeAt: resume, Err: err}
}
