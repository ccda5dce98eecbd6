package dshlog

import (
	"bufio"
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
