package redisstore_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/runtime/access"
	"github.com/noamgen/noamgen/runtime/redisstore"
	"github.com/noamgen/noamgen/runtime/redisstore/layout"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// TestDeclaredNames checks the names the declaration shows against the
// adapter's.
func TestDeclaredNames(t *testing.T) {
	if layout.MaxValueBytes != redisstore.MaxValueBytes {
		t.Errorf("layout.MaxValueBytes %d, the adapter's %d", layout.MaxValueBytes, redisstore.MaxValueBytes)
	}
	for decl, name := range map[string]string{layout.Schema: redisstore.SchemaKey("c"), layout.Fence: redisstore.FenceKey("c")} {
		if got := strings.ReplaceAll(decl, "$coll", "c"); got != name {
			t.Errorf("the declaration names %s, the adapter %s", got, name)
		}
	}
}

// TestDeclaredKeys writes a Match and a Reply whose lookups all hold a
// value and checks that the Redis keys the store holds are exactly the
// ones the declaration's layout names (the first word of each
// container's example), and the hash fields of the block those of its
// example block.
func TestDeclaredKeys(t *testing.T) {
	c := redistest.Server(t)
	ctx := context.Background()
	m := &model.Match{ID: "2345", Code: "c", Region: "r", Tags: []string{"t"}, Venue: model.Venue{City: "x"}, Rounds: []model.Round{{Serial: "s"}, {Serial: "u"}}}
	if err := ensured(t, model.NewMatchRedisRepository(c)).Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	r := &model.Reply{Key: model.ReplyKey{Thread: "2345"}, Author: "a"}
	if err := ensured(t, model.NewReplyRedisRepository(c)).Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	lookup := func(name string, unique bool) access.Lookup {
		return access.Lookup{Name: name, Unique: unique, Paths: []string{name}}
	}
	match := &access.Shape{Collection: "matches", Key: []access.KeyValue{{Value: "2345"}},
		Fields: []access.Field{{Key: "code"}, {Key: "region"}, {Key: "level"}, {Key: "tags"}, {Key: "venue"}, {Key: "start"}, {Key: "meta"}, {Key: "tree"},
			{Key: "rounds", Partition: true}, {Key: "version", Version: true}},
		Lookups: []access.Lookup{lookup("code", true), lookup("regionLevel", false), lookup("tags", false), lookup("venueCity", false), lookup("roundsSerial", true)}}
	reply := &access.Shape{Collection: "Reply", Key: []access.KeyValue{{Key: "thread", Value: "2345"}, {Key: "seq", Value: int64(1)}},
		Fields: []access.Field{{Key: "author"}, {Key: "body"}, {Key: "posted"}, {Key: "edits", Partition: true}}, Lookups: []access.Lookup{lookup("author", false)},
		Counter: true, Scope: []string{"thread"}}
	var named []string
	for _, s := range []*access.Shape{match, reply} {
		for _, ct := range layout.Store.Layout(s).Containers {
			named = append(named, strings.Fields(ct.Example)[0])
		}
	}
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	slices.Sort(named)
	if !slices.Equal(keys, named) {
		t.Errorf("the declaration names the keys\n%s\nthe store holds\n%s", strings.Join(named, "\n"), strings.Join(keys, "\n"))
	}
	var want []string
	for _, row := range layout.Store.Layout(match).Example {
		want = append(want, row.Key)
	}
	fields, err := c.HKeys(ctx, "matches:{2345}").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	slices.Sort(fields)
	if !slices.Equal(fields, want) {
		t.Errorf("the declaration shows the fields %q of block matches:{2345}, the store holds %q", want, fields)
	}
}
