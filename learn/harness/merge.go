package harness

// Merge is the view a session sees: local entries shadow global ones of
// the same kind and id; a shadowed global stays visible keyed
// LocalPrefix+id (the seed's mergeHarnessStates, prefix and all: the
// seed names the key after the shadowing local entry). The entries
// themselves keep their ids; only the map key of a shadowed global
// changes. Neither argument is modified.
func Merge(global, local State) State {
	out := make(State, len(Kinds))
	for k, entries := range global {
		m := out.kind(k)
		for id, e := range entries {
			if _, shadowed := local[k][id]; shadowed {
				m[LocalPrefix+id] = e
			} else {
				m[id] = e
			}
		}
	}
	for k, entries := range local {
		m := out.kind(k)
		for id, e := range entries {
			m[id] = e
		}
	}
	return out
}

// kind returns s's map of kind k, making it when missing.
func (s State) kind(k Kind) map[string]Entry {
	m, ok := s[k]
	if !ok {
		m = map[string]Entry{}
		s[k] = m
	}
	return m
}

// clone copies s deeply enough that writing an entry of the copy leaves s
// as it was (entries are values).
func (s State) clone() State {
	out := make(State, len(s))
	for k, entries := range s {
		m := make(map[string]Entry, len(entries))
		for id, e := range entries {
			m[id] = e
		}
		out[k] = m
	}
	return out
}
