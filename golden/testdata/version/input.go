// Package version has aggregates with a version entry for optimistic
// concurrency, in both strategies.
package version

// Account is stored one entry per field, with a version entry.
type Account struct {
	_       struct{} `noam:"aggregate"`
	ID      string   `noam:"id"`
	Owner   string
	Balance int64
	Version int64 `noam:"version"`
}

// Ledger is stored as one root entry (version included) plus one entry per
// line.
type Ledger struct {
	_     struct{} `noam:"aggregate,strategy=eao,partition=lines"`
	ID    string   `noam:"id"`
	Name  string
	Lines []Line
	Rev   int64 `bson:"rev" noam:"version"`
}

// Line is one ledger line.
type Line struct {
	Amount int64
	Memo   string
}
