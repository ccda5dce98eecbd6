package dshlog

import (
	"bufio"
	"bytes"
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
	Line int64
	// Offset is the file offset of the bad line (plain), or of the zstd
	// frame holding the bad line or failing to decode.
	Offset int64
	// Zstd says the file is zstd-compressed.
	Zstd bool
	Err  error
}

func (e *CorruptError) Error() string {
	switch {
	case e.Line == 0:
		return fmt.Sprintf("%s: zstd frame at byte %d: %v", e.Path, e.Offset, e.Err)
	case e.Zstd:
		return fmt.Sprintf("%s: line %d (in the zstd frame at byte %d): %v", e.Path, e.Line, e.Offset, e.Err)
	default:
		return fmt.Sprintf("%s: line %d (byte %d): %v", e.Path, e.Line, e.Offset, e.Err)
	}
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Reader reads the complete lines of one session log, plain or zstd. It
// stops, without an error, before a half-written last line or an incomplete
// last zstd frame: DSH may still be writing them.
type Reader struct {
	path       string
	f          *os.File
	br         *bufio.Reader
	compressed bool
	pos        Pos  // after the last line returned
	lineAt     Pos  // start of the last line returned
	done       bool // the end of the complete data was reached
	incomplete bool // data follows the end that is not a whole line or frame yet

	// zstd only
	dec     *zstd.Decoder
	raw     []byte // the current frame, compressed
	data    []byte // the current frame, decompressed
	used    int    // bytes of data consumed
	frameAt int64  // file offset of the current frame
	next    int64  // file offset of the frame after it
	skip    int64  // bytes to skip in the first frame read (resuming)
	carry   []byte // the start of a line continued in the next frame
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

// Next returns the next complete line without its newline. The slice is
// valid until the next call. It returns io.EOF at the end of the complete
// data, and a *CorruptError where zstd data does not decode.
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
	if err != nil {
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
		r.incomplete = len(line) > 0
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
			r.pos.Line++
			if r.used == len(r.data) {
				r.pos.Offset, r.pos.Skip = r.next, 0
			} else {
				r.pos.Offset, r.pos.Skip = r.frameAt, int64(r.used)
			}
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
	switch {
	case err == io.EOF:
		r.incomplete = len(r.carry) > 0
		return io.EOF
	case errors.Is(err, errShortFrame):
		r.incomplete = true
		return io.EOF
	case err != nil:
		return r.frameErr(r.next, err)
	}
	r.raw = raw
	data, err := r.dec.DecodeAll(raw, r.data[:0])
	if err != nil {
		return r.frameErr(r.next, fmt.Errorf("does not decode: %w", err))
	}
	r.frameAt, r.next = r.next, r.next+int64(len(raw))
	r.data, r.used = data, 0
	if r.skip > 0 {
		if r.skip > int64(len(data)) {
			return r.frameErr(r.frameAt, fmt.Errorf("the frame holds %d bytes, fewer than the %d already read: the file was rewritten", len(data), r.skip))
		}
		r.used, r.skip = int(r.skip), 0
	}
	return nil
}

func (r *Reader) frameErr(at int64, err error) *CorruptError {
	return &CorruptError{Path: r.path, Offset: at, Zstd: true, Err: err}
}
