package hotel_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
)

// TestMain stops the Redis servers the tests shared.
func TestMain(m *testing.M) {
	code := m.Run()
	redistest.Stop()
	os.Exit(code)
}

// redisModes runs fn on a single node and on the cluster.
func redisModes(t *testing.T, fn func(t *testing.T, c redis.UniversalClient)) {
	t.Run("single", func(t *testing.T) { fn(t, redistest.Server(t)) })
	t.Run("cluster", func(t *testing.T) { fn(t, redistest.Cluster(t)) })
}

// redisKeys lists every key (of every master of a cluster).
func redisKeys(t *testing.T, c redis.UniversalClient) []string {
	t.Helper()
	var mu sync.Mutex
	var out []string
	each := func(ctx context.Context, n *redis.Client) error {
		keys, err := n.Keys(ctx, "*").Result()
		mu.Lock()
		out = append(out, keys...)
		mu.Unlock()
		return err
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		must(t, cc.ForEachMaster(ctx, each))
	} else {
		must(t, each(ctx, c.(*redis.Client)))
	}
	return out
}

// redisDump returns every key with its value, hidden fields included.
func redisDump(t *testing.T, c redis.UniversalClient) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, k := range redisKeys(t, c) {
		m := map[string]string{}
		switch typ := c.Type(ctx, k).Val(); typ {
		case "hash":
			h, err := c.HGetAll(ctx, k).Result()
			must(t, err)
			m = h
		case "zset":
			zs, err := c.ZRangeWithScores(ctx, k, 0, -1).Result()
			must(t, err)
			for _, z := range zs {
				m[z.Member.(string)] = fmt.Sprint(z.Score)
			}
		case "string":
			m[""] = c.Get(ctx, k).Val()
		default:
			t.Fatalf("key %s of type %s", k, typ)
		}
		out[k] = m
	}
	return out
}

func seedRedis(t *testing.T, c redis.UniversalClient) *hotel.HotelRedisRepository {
	t.Helper()
	hotels := hotel.NewHotelRedisRepository(c)
	must(t, hotels.EnsureIndexes(ctx))
	for _, h := range []*hotel.Hotel{
		{ID: "h1", Name: "Wittekind", City: "Dortmund", Stars: 4, Tags: []string{"spa", "wifi"}, Address: hotel.Address{Zip: "44139"}},
		{ID: "h2", Name: "Ibis", City: "Dortmund", Stars: 2, Tags: []string{"wifi"}, Address: hotel.Address{Zip: "44137"}},
		{ID: "h3", Name: "Adlon", City: "Berlin", Stars: 5, Tags: []string{"spa"}, Address: hotel.Address{Zip: "10117"}},
		{ID: "h4", Name: "Mercure", City: "Dortmund", Stars: 4, Address: hotel.Address{Zip: "44139"}},
	} {
		must(t, hotels.Create(ctx, h))
	}
	return hotels
}

// TestRedisIndexLayout checks the keys of the hotels: one hash per block,
// the listing, and per lookup a sorted set of (value, block key) members
// with its meta hash, plus the claims hash of a unique lookup; and the
// schema record EnsureIndexes keeps, with its layout fence.
func TestRedisIndexLayout(t *testing.T) {
	redisModes(t, func(t *testing.T, c redis.UniversalClient) {
		seedRedis(t, c)
		d := redisDump(t, c)
		eq(t, "keys", sortedKeys(map[string]string(func() map[string]string {
			m := map[string]string{}
			for k := range d {
				m[k] = ""
			}
			return m
		}())), "Hotel:blocks", "Hotel:{h1}", "Hotel:{h2}", "Hotel:{h3}", "Hotel:{h4}", "noam:fence:{Hotel}", "noam:schema:{Hotel}",
			"{Hotel.addressZip}", "{Hotel.addressZip}:meta",
			"{Hotel.cityStars}", "{Hotel.cityStars}:meta",
			"{Hotel.name}", "{Hotel.name}:claims", "{Hotel.name}:meta",
			"{Hotel.tags}", "{Hotel.tags}:meta")
		var got []string
		for _, m := range sortedKeys(d["{Hotel.cityStars}"]) {
			r := runtime.NewKeyReader([]byte(m))
			city, err1 := r.String()
			stars, err2 := r.Int()
			id, err3 := r.String()
			if err := errors.Join(err1, err2, err3); err != nil || !r.Done() {
				t.Fatalf("cityStars member %x: %v", m, err)
			}
			if d["{Hotel.cityStars}"][m] != "0" {
				t.Fatalf("score %s, want 0", d["{Hotel.cityStars}"][m])
			}
			got = append(got, fmt.Sprintf("%s/%d/%s", city, stars, id))
		}
		eq(t, "cityStars members in order", got, "Berlin/5/h3", "Dortmund/2/h2", "Dortmund/4/h1", "Dortmund/4/h4")
		got = nil
		for _, v := range sortedKeys(d["{Hotel.name}:claims"]) {
			name, _ := runtime.NewKeyReader([]byte(v)).String()
			id, _ := runtime.NewKeyReader([]byte(d["{Hotel.name}:claims"][v])).String()
			got = append(got, name+"="+id)
		}
		eq(t, "name claims", got, "Adlon=h3", "Ibis=h2", "Mercure=h4", "Wittekind=h1")
		h1 := d["Hotel:{h1}"]
		var name string
		must(t, bsonval.Decode([]byte(h1["name"]), &name))
		if name != "Wittekind" || h1["_inc"] == "" || h1["_seq"] == "" {
			t.Fatalf("Hotel:{h1} = %q", h1)
		}
	})
}

// TestRedisRepair breaks the index tables behind the repository's back and
// checks that reads skip what is stale and that Repair fixes exactly that,
// on a single node and on the cluster.
func TestRedisRepair(t *testing.T) {
	redisModes(t, func(t *testing.T, c redis.UniversalClient) {
		hotels := seedRedis(t, c)
		all := runtime.PageRequest{}
		dortmund4 := hotel.HotelCityStarsQuery{City: runtime.Eq("Dortmund"), Stars: runtime.Eq(4)}
		missing := string(cat(str("Dortmund"), runtime.AppendInt(nil, 4), str("h1")))
		must(t, c.ZRem(ctx, "{Hotel.cityStars}", missing).Err())
		must(t, c.HDel(ctx, "{Hotel.cityStars}:meta", missing).Err())
		must(t, c.ZAdd(ctx, "{Hotel.tags}", redis.Z{Member: string(cat(str("pool"), str("h2")))}).Err())
		must(t, c.ZAdd(ctx, "{Hotel.addressZip}", redis.Z{Member: string(cat(str("99999"), str("ghost")))}).Err())
		must(t, c.HSet(ctx, "{Hotel.name}:claims", string(str("Adlon")), string(str("h1"))).Err())
		name, err := bsonval.Encode("Wittekind")
		must(t, err)
		must(t, c.HSet(ctx, "Hotel:{h2}", "name", string(name)).Err())

		eq(t, "Dortmund:4 with an entry missing", hotelIDs(hotels.ListByCityStars(ctx, dortmund4, all)), "h4")
		eq(t, "tag pool (stale)", hotelIDs(hotels.ListByTags(ctx, "pool", all)))
		eq(t, "zip 99999 (no block)", hotelIDs(hotels.ListByAddressZip(ctx, "99999", all)))
		_, err = hotels.GetByName(ctx, "Adlon")
		wantErr(t, err, runtime.ErrNotFound, "GetByName through a claim naming the wrong holder")
		eq(t, "name Ibis (stale)", hotelIDs(hotels.ListByName(ctx, "Ibis", all)))

		// On a cluster the reads dropped the stale entries without a
		// meta (the tag, the zip) and the claim naming the wrong holder:
		// their write sequence is 0, older than StaleAfter. A single
		// node's reads change nothing (its index writes are atomic with
		// the block's, so a stale entry is damage from outside, for
		// Repair); they only skipped them. Ibis's entry is recent:
		// Repair removes it.
		_, cluster := c.(*redis.ClusterClient)
		stale := func(err error) bool { return errors.Is(err, redis.Nil) != cluster }
		for _, k := range []struct{ key, member string }{
			{"{Hotel.tags}", string(cat(str("pool"), str("h2")))},
			{"{Hotel.addressZip}", string(cat(str("99999"), str("ghost")))},
		} {
			if err := c.ZScore(ctx, k.key, k.member).Err(); stale(err) {
				t.Fatalf("the stale member of %s after a read (cluster %v): %v", k.key, cluster, err)
			}
		}
		if err := c.HGet(ctx, "{Hotel.name}:claims", string(str("Adlon"))).Err(); stale(err) {
			t.Fatalf("the claim naming the wrong holder after a read (cluster %v): %v", cluster, err)
		}
		rep, err := hotels.Repair(ctx)
		must(t, err)
		removed := 1
		if !cluster {
			removed = 4 // and the stale tag, zip and Adlon claim
		}
		if rep.Aggregates != 4 || rep.Added != 2 || rep.Removed != removed || len(rep.Conflicts) != 1 {
			t.Fatalf("Repair: %v %q", rep, rep.Conflicts)
		}
		if c := rep.Conflicts[0]; !strings.Contains(c, `Hotel.name "Wittekind"`) || !strings.Contains(c, `kept for "h1"`) || !strings.Contains(c, `"h2"`) {
			t.Fatalf("conflict %q", c)
		}
		eq(t, "Dortmund:4 after Repair", hotelIDs(hotels.ListByCityStars(ctx, dortmund4, all)), "h1", "h4")
		eq(t, "tag pool after Repair", hotelIDs(hotels.ListByTags(ctx, "pool", all)))
		eq(t, "name Wittekind after Repair", hotelIDs(hotels.ListByName(ctx, "Wittekind", all)), "h1")
		for name, want := range map[string]string{"Adlon": "h3", "Wittekind": "h1", "Mercure": "h4"} {
			h, err := hotels.GetByName(ctx, name)
			must(t, err)
			if h.ID != want {
				t.Fatalf("GetByName(%s) after Repair: %s, want %s", name, h.ID, want)
			}
		}
		after := redisDump(t, c)
		rep, err = hotels.Repair(ctx)
		must(t, err)
		if rep.Aggregates != 4 || rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 1 {
			t.Fatalf("second Repair: %v", rep)
		}
		if !maps.EqualFunc(after, redisDump(t, c), maps.Equal) {
			t.Fatal("a Repair with nothing to fix changed the database")
		}
		must(t, hotels.SetName(ctx, "h2", "Ibis"))
		rep, err = hotels.Repair(ctx)
		must(t, err)
		if rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
			t.Fatalf("Repair after resolving the conflict: %v", rep)
		}

		// A block missing from the listing (a cluster write stopped
		// between the block and the listing) is listed again by Repair.
		must(t, c.ZRem(ctx, "Hotel:blocks", string(str("h3"))).Err())
		page, err := hotels.List(ctx, all)
		must(t, err)
		if len(page.Items) != 3 {
			t.Fatalf("List without h3's member: %d hotels", len(page.Items))
		}
		_, err = hotels.Repair(ctx)
		must(t, err)
		page, err = hotels.List(ctx, all)
		must(t, err)
		if len(page.Items) != 4 {
			t.Fatalf("List after Repair: %d hotels", len(page.Items))
		}
	})
}

// TestRedisFailedUniqueWritesChangeNothing checks that writes failing on a
// unique value leave every key byte for byte as it was, hidden fields
// included: on a single node the script checks before it writes; on a
// cluster the claim is the first step, and nothing follows a lost one.
func TestRedisFailedUniqueWritesChangeNothing(t *testing.T) {
	redisModes(t, func(t *testing.T, c redis.UniversalClient) {
		hotels := seedRedis(t, c)
		before := redisDump(t, c)
		h, err := hotels.Get(ctx, "h1")
		must(t, err)
		h.Name, h.City, h.Stars, h.Tags, h.Address.Zip = "Adlon", "Köln", 1, []string{"new"}, "50667"
		wantErr(t, hotels.Put(ctx, h), runtime.ErrDuplicate, "Put with a taken name")
		wantErr(t, hotels.Put(ctx, &hotel.Hotel{ID: "h9", Name: "Ibis", City: "Köln"}), runtime.ErrDuplicate, "Put of a new hotel with a taken name")
		wantErr(t, hotels.Create(ctx, &hotel.Hotel{ID: "h9", Name: "Ibis", City: "Köln"}), runtime.ErrDuplicate, "Create with a taken name")
		wantErr(t, hotels.SetName(ctx, "h1", "Mercure"), runtime.ErrDuplicate, "SetName to a taken name")
		wantErr(t, hotels.Update(ctx, "h1", hotel.HotelUpdate{City: runtime.Ptr("Köln"), Tags: &[]string{"x"}, Name: runtime.Ptr("Mercure")}), runtime.ErrDuplicate, "Update to a taken name")
		var re *runtime.Error
		err = hotels.SetName(ctx, "h1", "Mercure")
		if !errors.As(err, &re) || re.Op != "SetName" || re.ID != "h1" || re.Detail != `(lookup Hotel.name "Mercure" is taken)` {
			t.Fatalf("error of a taken name: %v", err)
		}
		if !maps.EqualFunc(before, redisDump(t, c), maps.Equal) {
			t.Fatal("failed writes changed the database")
		}
	})
}

// TestRedisUniqueRace: 16 goroutines race to take one unique name, half by
// SetName and half by Create. Exactly one wins, the others get
// runtime.ErrDuplicate, and the index tables are consistent afterwards.
func TestRedisUniqueRace(t *testing.T) {
	redisModes(t, func(t *testing.T, c redis.UniversalClient) {
		hotels := hotel.NewHotelRedisRepository(c)
		must(t, hotels.EnsureIndexes(ctx))
		const n = 16
		for i := range n / 2 {
			must(t, hotels.Create(ctx, &hotel.Hotel{ID: fmt.Sprint("old", i), Name: fmt.Sprint("name", i), City: "Hamm"}))
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if i%2 == 0 {
					errs[i] = hotels.SetName(ctx, fmt.Sprint("old", i/2), "Taken")
				} else {
					errs[i] = hotels.Create(ctx, &hotel.Hotel{ID: fmt.Sprint("new", i), Name: "Taken", City: "Hamm"})
				}
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("writers %d and %d both took the name", winner, i)
			case err == nil:
				winner = i
			default:
				wantErr(t, err, runtime.ErrDuplicate, fmt.Sprint("writer ", i))
			}
		}
		if winner < 0 {
			t.Fatal("no writer took the name")
		}
		h, err := hotels.GetByName(ctx, "Taken")
		must(t, err)
		want := fmt.Sprint("new", winner)
		if winner%2 == 0 {
			want = fmt.Sprint("old", winner/2)
		}
		if h.ID != want {
			t.Fatalf("GetByName: %s, want %s (writer %d)", h.ID, want, winner)
		}
		eq(t, "ListByName", hotelIDs(hotels.ListByName(ctx, "Taken", runtime.PageRequest{})), want)
		rep, err := hotels.Repair(ctx)
		must(t, err)
		if rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
			t.Fatalf("Repair after the race: %v", rep)
		}
	})
}
