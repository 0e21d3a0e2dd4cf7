package model

import (
	"slices"
	"testing"
)

// game is the paper's Game: an id, two fields, a partition, a version.
func game(s Strategy) *Aggregate {
	a := &Aggregate{Name: "Game", Strategy: s, Fields: []*Field{
		{GoName: "ID", Key: "_id", IsID: true},
		{GoName: "FirstPlayer", Key: "firstPlayer"},
		{GoName: "SecondPlayer", Key: "secondPlayer"},
		{GoName: "Rounds", Key: "rounds", Partition: true},
		{GoName: "Moves", Key: "moves", Partition: true},
		{GoName: "Version", Key: "version", IsVersion: true},
	}}
	a.ID, a.Version = a.Fields[0], a.Fields[5]
	return a
}

func TestWriteOut(t *testing.T) {
	for _, c := range []struct {
		s    Strategy
		n    int
		want []string
	}{
		{ETF, 2, []string{"firstPlayer", "secondPlayer", "rounds", "rounds[0]", "rounds[1]", "moves", "moves[0]", "moves[1]", "version"}},
		{ETF, 0, []string{"firstPlayer", "secondPlayer", "rounds", "moves", "version"}},
		{EAO, 1, []string{"", "rounds", "rounds[0]", "moves", "moves[0]", "version"}},
	} {
		if got := game(c.s).WriteOut(c.n); !slices.Equal(got, c.want) {
			t.Errorf("%s with %d elements: WriteOut = %q, want %q", c.s, c.n, got, c.want)
		}
	}
	eao := &Aggregate{Strategy: EAO, Fields: []*Field{{Key: "_id", IsID: true}, {Key: "name"}}}
	if got := eao.WriteOut(3); !slices.Equal(got, []string{""}) {
		t.Errorf("an EAO block without partitions: WriteOut = %q", got)
	}
}

func TestEntryNames(t *testing.T) {
	es := game(ETF).Entries()
	rounds := es[2]
	if !rounds.Partition || rounds.Key != "rounds[]" {
		t.Fatalf("entry 2 is %+v, want the class rounds[]", rounds)
	}
	if rounds.FieldKey() != "rounds" || rounds.ElemKey(3) != "rounds[3]" || rounds.ElemNotation() != "rounds[i]" {
		t.Errorf("rounds: FieldKey %q, ElemKey(3) %q, ElemNotation %q", rounds.FieldKey(), rounds.ElemKey(3), rounds.ElemNotation())
	}
	if first := es[0]; first.FieldKey() != "firstPlayer" || !slices.Equal(first.Keys(5), []string{"firstPlayer"}) {
		t.Errorf("firstPlayer: FieldKey %q, Keys %q", first.FieldKey(), first.Keys(5))
	}
	if ElemKey("a", 10) != "a[10]" {
		t.Errorf("ElemKey(a, 10) = %q", ElemKey("a", 10))
	}
}
