// Package lookuptable has lookups that keep their index tables on every
// store (noam:"lookup,table"), next to lookups that MongoDB serves with
// native indexes: a globally unique email on a collection sharded by _id,
// a composite lookup marked on every part, and a slice lookup.
package lookuptable

// Account mixes both mappings.
type Account struct {
	_      struct{} `noam:"aggregate"`
	ID     string   `noam:"id"`
	Email  string   `noam:"lookup,unique,table"`     // index table Account__email
	Nick   string   `noam:"lookup,unique"`           // native unique index
	Region string   `noam:"lookup=regionTier,table"` // index table Account__regionTier:
	Tier   int      `noam:"lookup=regionTier,table"` // region, then tier
	Tags   []string `noam:"lookup"`                  // native multikey index
	Zone   string   `noam:"lookup=zone,table"`       // a named single-part table lookup
}
