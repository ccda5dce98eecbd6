package store

import "database/sql"

// SearchStatements are the statements MatchMemories runs for terms, for
// the tests that read their plans: the first step of the search by the
// full-text index, and the one by substring.
func (s *Store) SearchStatements(workspaces, terms []string, limit int) (indexed, substring string, indexedArgs, substringArgs []any) {
	indexed, indexedArgs = s.indexedSearch(workspaces, terms)
	substring, substringArgs = s.substringSearch(workspaces, terms, limit)
	return indexed, substring, indexedArgs, substringArgs
}

// ReadDB is the handle the store's read-only reports use (readDB).
func (s *Store) ReadDB() *sql.DB { return s.readDB() }

// ReadConns is how many connections SQLite's read pool opens at most.
const ReadConns = readConns
