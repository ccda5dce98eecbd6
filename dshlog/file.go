package dshlog

import (
	"errors"
	"io"

	"github.com/mullhq/mull/events"
)

// ReadFile maps a whole session log: the events of its complete lines and
// the position where the complete data ends. A half-written tail is not an
// error; a corrupt line or frame is a *CorruptError, returned with the
// events before it.
func ReadFile(path string) ([]events.Event, Pos, error) {
	r, err := Open(path, Pos{})
	if err != nil {
		return nil, Pos{}, err
	}
	defer r.Close()
	m := NewMapper(State{})
	var out []events.Event
	for {
		before := r.Pos()
		line, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, r.Pos(), nil
		}
		if err != nil {
			return out, before, err
		}
		evs, err := m.Map(line)
		if err != nil {
			return out, before, r.Corrupt(err)
		}
		out = append(out, evs...)
	}
}
