// Package multi_partition has an aggregate with two partitioned fields.
package multi_partition

// Tournament has one entry per round and one per player.
type Tournament struct {
	_       struct{} `noam:"aggregate,partition=rounds,partition=players"`
	ID      string   `noam:"id"`
	Name    string
	Rounds  []Round
	Players []string
}

// Round is one round of a tournament.
type Round struct {
	Winner string
}
