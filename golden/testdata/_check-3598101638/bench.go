// Package bench holds the aggregates of the NoAM paper's experiment
// (Bugiotti et al., section 8): games of a dozen rounds, about 8 KB each,
// stored either as one entry per game (EAO), as a root entry plus one
// entry per round (ROUNDS, Fig. 8), or with every round a block of its own
// (BLOCKS, the representation the paper argues against), and versioned
// aggregates for the concurrency test and the generated-vs-hand-written
// benchmarks. The benchmarks here compare EAO and ROUNDS on reading a game
// and adding a round to it; package fig12 (run by roundsbench) is the
// whole experiment, package cmpbench the comparison with hand-written code
// (see BENCHMARKS.md).
package bench

import (
	"fmt"
	"strings"
)

//go:generate go run github.com/noamgen/noamgen/cmd/noamgen

// RoundsGame is the ROUNDS layout (Fig. 8): the root entry holds the
// players, and each round is an entry of its own, so that adding a round
// writes that round only.
type RoundsGame struct {
	_            struct{} `noam:"aggregate,strategy=eao,partition=rounds"`
	ID           string   `noam:"id"`
	FirstPlayer  string
	SecondPlayer string
	Rounds       []Round
}

// EAOGame is the EAO layout (Fig. 6): the whole game is one entry, read in
// one piece and rewritten whole to add a round.
type EAOGame struct {
	_            struct{} `noam:"aggregate,strategy=eao"`
	ID           string   `noam:"id"`
	FirstPlayer  string
	SecondPlayer string
	Rounds       []Round
}

// BlocksGame and GameRound are the third layout of the experiment, which
// the paper measures against its guidelines: the rounds of a game are
// blocks of their own (independent key-value pairs, one collection) rather
// than entries of the game's block. BlocksGame is the game without its
// rounds.
type BlocksGame struct {
	_            struct{} `noam:"aggregate,strategy=eao"`
	ID           string   `noam:"id"`
	FirstPlayer  string
	SecondPlayer string
}

// GameRoundKey is the block key of a round stored as a block: its game and
// its number in the game (1, 2, ...), allocated per game from a counter.
type GameRoundKey struct {
	Game string `bson:"game"`
	Seq  int64  `bson:"seq"`
}

// GameRound is one round of a game as a block of its own; ListByGame reads
// a game's rounds by computed keys.
type GameRound struct {
	_     struct{}     `noam:"aggregate,strategy=eao"`
	Key   GameRoundKey `noam:"id,counter"`
	Round Round
}

// VersionedEAOGame is the EAO layout with a version entry, so that Put
// checks and bumps the version like the hand-written baseline of the
// generated-vs-hand-written benchmarks (package cmpbench).
type VersionedEAOGame struct {
	_            struct{} `noam:"aggregate,strategy=eao"`
	ID           string   `noam:"id"`
	FirstPlayer  string
	SecondPlayer string
	Rounds       []Round
	Version      int64 `noam:"version"`
}

// Round is one round of a game.
type Round struct {
	Moves    []string `bson:"moves"`
	Comments []string `bson:"comments,omitempty"`
	Actions  []string `bson:"actions,omitempty"`
	Spell    string   `bson:"spell,omitempty"`
}

// Counter is a counter with a version entry, for optimistic concurrency.
type Counter struct {
	_       struct{} `noam:"aggregate"`
	ID      string   `noam:"id"`
	N       int
	Version int64 `noam:"version"`
}

// NewRound makes round i of a game: about 700 bytes of BSON, so that a
// game of a dozen rounds is about 8 KB, as in the paper's experiment.
func NewRound(i int) Round {
	r := Round{Spell: fmt.Sprintf("spell-%d", i%7)}
	for m := range 8 {
		r.Moves = append(r.Moves, fmt.Sprintf("round %4d move %d: %s", i, m, strings.Repeat("x", 22)))
	}
	for c := range 2 {
		r.Comments = append(r.Comments, fmt.Sprintf("round %4d comment %d: %s", i, c, strings.Repeat("c", 60)))
	}
	r.Actions = []string{fmt.Sprintf("round %4d: cast", i), fmt.Sprintf("round %4d: heal", i)}
	return r
}

// NewRounds makes rounds 0 to n-1.
func NewRounds(n int) []Round {
	rounds := make([]Round, n)
	for i := range rounds {
		rounds[i] = NewRound(i)
	}
	return rounds
}

// NewRoundsGame makes game id with n rounds in the ROUNDS layout.
func NewRoundsGame(id string, n int) *RoundsGame {
	return &RoundsGame{ID: id, FirstPlayer: "mary", SecondPlayer: "rick", Rounds: NewRounds(n)}
}

// NewEAOGame makes game id with n rounds in the EAO layout.
func NewEAOGame(id string, n int) *EAOGame {
	return &EAOGame{ID: id, FirstPlayer: "mary", SecondPlayer: "rick", Rounds: NewRounds(n)}
}
