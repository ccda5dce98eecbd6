package dshlog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/klauspost/compress/zstd"
)

// DSH appends one zstd frame per write batch, so the frame, not the line, is
// the unit of complete data in a compressed log. The decoder's streaming
// reader hides frame boundaries, so frames are split here, from their
// headers, and each is decoded whole: a crash's incomplete last frame is
// then told apart from a bad one, and reading can resume at a frame.
//
// Frames are independent, so a bad frame loses only its own lines: reading
// resumes at the next offset where a frame magic (0xFD2FB528, or a
// skippable frame's 0x184D2A5?) starts a frame that decodes whole.

// errShortFrame: the file ends inside a frame (DSH may still be writing it).
var errShortFrame = errors.New("incomplete zstd frame")

const (
	maxBlock     = 128 << 10 // the zstd format's largest block
	maxSkippable = 16 << 20
	maxFrameData = 1 << 30 // refuse frames that claim to decompress to more
)

// readFrame reads one whole frame, compressed, appending it to buf. It
// returns io.EOF at a clean end of the file and errShortFrame when the file
// ends inside a frame.
func readFrame(br *bufio.Reader, buf []byte) ([]byte, error) {
	head, err := br.Peek(zstd.HeaderMaxSize)
	if len(head) == 0 {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, err
	}
	var h zstd.Header
	if err := h.Decode(head); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errShortFrame
		}
		return nil, fmt.Errorf("not a zstd frame: %w", err)
	}
	if buf, err = readN(br, buf, h.HeaderSize); err != nil {
		return nil, err
	}
	if h.Skippable {
		if h.SkippableSize > maxSkippable {
			return nil, fmt.Errorf("skippable frame of %d bytes", h.SkippableSize)
		}
		return readN(br, buf, int(h.SkippableSize))
	}
	for {
		at := len(buf)
		if buf, err = readN(br, buf, 3); err != nil {
			return nil, err
		}
		bh := uint32(buf[at]) | uint32(buf[at+1])<<8 | uint32(buf[at+2])<<16
		last, typ, size := bh&1 == 1, (bh>>1)&3, int(bh>>3)
		switch {
		case typ == 3:
			return nil, errors.New("reserved zstd block type")
		case typ == 1: // RLE: one byte repeated size times
			size = 1
		case size > maxBlock:
			return nil, fmt.Errorf("zstd block of %d bytes, more than the format's %d", size, maxBlock)
		}
		if buf, err = readN(br, buf, size); err != nil {
			return nil, err
		}
		if last {
			break
		}
	}
	if h.HasCheckSum {
		return readN(br, buf, 4)
	}
	return buf, nil
}

// readN appends exactly n bytes from br to buf.
func readN(br *bufio.Reader, buf []byte, n int) ([]byte, error) {
	at := len(buf)
	buf = slices.Grow(buf, n)[:at+n]
	if _, err := io.ReadFull(br, buf[at:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, errShortFrame
		}
		return nil, err
	}
	return buf, nil
}

// isMagic says whether 4 bytes, read little-endian, start a frame: a zstd
// frame or a skippable one.
func isMagic(v uint32) bool {
	return v == 0xFD2FB528 || v&0xFFFFFFF0 == 0x184D2A50
}

// nextFrame finds the first offset at or after from, before size, where a
// frame starts that reads and decodes whole: where reading resumes past a
// bad frame. A frame the file ends inside does not count: it could be a
// magic number inside the bad frame's data as well as a frame DSH is still
// writing. ok is false when no such frame follows.
func nextFrame(f io.ReaderAt, from, size int64, dec *zstd.Decoder) (at int64, ok bool, err error) {
	if from >= size {
		return 0, false, nil
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, from, size-from), 64<<10)
	var window uint32
	for at = from; ; at++ {
		b, err := br.ReadByte()
		if err == io.EOF {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		window = window>>8 | uint32(b)<<24
		start := at - 3
		if start < from || !isMagic(window) {
			continue
		}
		if frameDecodes(f, start, size, dec) {
			return start, true, nil
		}
	}
}

// frameDecodes says whether a whole frame that decodes starts at offset at.
func frameDecodes(f io.ReaderAt, at, size int64, dec *zstd.Decoder) bool {
	raw, err := readFrame(bufio.NewReader(io.NewSectionReader(f, at, size-at)), nil)
	if err != nil {
		return false
	}
	if binary.LittleEndian.Uint32(raw)&0xFFFFFFF0 == 0x184D2A50 {
		return true // skippable: nothing to decode
	}
	_, err = dec.DecodeAll(raw, nil)
	return err == nil
}
