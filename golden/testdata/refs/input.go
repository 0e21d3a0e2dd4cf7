// Package refs has references between aggregates: top-level, slices of
// references, and references nested in plain structs.
package refs

// User is referenced by Team.
type User struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	Name string
}

// Team references users and other teams.
type Team struct {
	_       struct{} `noam:"aggregate"`
	ID      string   `noam:"id"`
	Captain string   `noam:"ref=User"`
	Coach   *string  `noam:"ref=User"`
	Members []string `noam:"ref=User"`
	Matches []Match
	Home    Venue `bson:"home"`
}

// Match is a plain struct holding references.
type Match struct {
	Opponent string `noam:"ref=Team"`
	Referee  string `bson:"ref" noam:"ref=User"`
	Score    int
}

// Venue nests one more level of references.
type Venue struct {
	Name     string
	Stewards []Steward `bson:"stewards"`
}

// Steward is a user working at a venue.
type Steward struct {
	User string `noam:"ref=User"`
}
