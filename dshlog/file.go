package dshlog

import (
	"errors"
	"io"

	"github.com/mullhq/mull/events"
)

// ReadFile maps a whole session log: the events of its complete lines and
// the position where the complete data ends. A half-written tail is not an
// error. A bad zstd frame is skipped, its *CorruptError joined to the
// error returned with every event around it; a corrupt line stops the
// reading with a *CorruptError, returned with the events before it.
func ReadFile(path string) ([]events.Event, Pos, error) {
	r, err := Open(path, Pos{})
	if err != nil {
		return nil, Pos{}, err
	}
	defer r.Close()
	m := NewMapper(State{})
	var out []events.Event
	var damage []error
	for {
		before := r.Pos()
		line, err := r.Next()
		var ce *CorruptError
		switch {
		case errors.Is(err, io.EOF):
			return out, r.Pos(), errors.Join(damage...)
		case errors.As(err, &ce) && ce.ResumeAt > 0:
			damage = append(damage, err)
			continue
		case err != nil:
			return out, before, errors.Join(append(damage, err)...)
		}
		evs, err := m.Map(line)
		if err != nil {
			return out, before, errors.Join(append(damage, r.Corrupt(err))...)
		}
		out = append(out, evs...)
	}
}
