// Package etf stores a Profile one entry per top-level field (the default
// strategy), with fields of many kinds.
package etf

import "time"

// Address is a plain struct nested in the aggregate.
type Address struct {
	Street string
	City   string
	Zip    string `bson:"zip,omitempty"`
}

// Profile uses the default strategy, etf.
type Profile struct {
	_        struct{} `noam:"aggregate"`
	ID       string   `noam:"id"`
	Name     string
	Age      int
	Ratio    float64
	Active   bool
	Home     Address
	Tags     []string
	Scores   map[string]int
	Joined   time.Time
	Nickname *string
	Avatar   []byte
	Past     []Address
	Extra    map[string]any
	Fixed    [3]int
}
