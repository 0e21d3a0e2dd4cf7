package names

// Item has unique and scoped lookups whose parts are named like keywords,
// predeclared identifiers and names the generated bodies use.
type Item struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	Type string   `noam:"lookup=kind,unique"`
	R    int      `noam:"lookup=kind,unique"`
	Ctx  string   `noam:"lookup,unique"`
	Len  int64    `noam:"lookup,unique"`
}

// EntryKey is a composite key whose scope part is named like a keyword.
type EntryKey struct {
	Func int64
	N    int64
}

// Entry is numbered per Func.
type Entry struct {
	_   struct{} `noam:"aggregate"`
	Key EntryKey `noam:"id,counter"`
}
