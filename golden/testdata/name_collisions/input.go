// Package name_collisions has aggregates whose parameter names (the
// lower-cased type name) collide with the packages and local variables that
// generated code uses.
package name_collisions

// Options collides with the mongo driver's options package (used by Put).
type Options struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	Name string
}

// Opts collides with the local variable opts in Put.
type Opts struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	Name string
}

// Runtime collides with noamgen's runtime package (runtime.Fail in Put).
type Runtime struct {
	_       struct{} `noam:"aggregate"`
	ID      string   `noam:"id"`
	Name    string
	Version int64 `noam:"version"`
}

// Mongo collides with the mongo driver package (mongo.IsDuplicateKeyError
// in Put).
type Mongo struct {
	_       struct{} `noam:"aggregate"`
	ID      string   `noam:"id"`
	Name    string
	Version int64 `noam:"version"`
}
