package explain

// Sampling of a bbolt file (noamgen explain -sample N -bolt file).

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/boltstore"
)

func init() {
	samplers["bolt"] = boltSample
}

// boltSample reads at most n blocks of a's bucket from the bbolt file
// conn["bolt"], opened read-only.
func boltSample(ctx context.Context, a *model.Aggregate, conn map[string]string, n int) (*Sample, error) {
	path := conn["bolt"]
	if path == "" {
		return nil, nil
	}
	db, err := bbolt.Open(path, 0o400, &bbolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("opening %s read-only: %w", path, err)
	}
	defer db.Close()
	s := &Sample{Source: path, MaxValueBytes: bbolt.MaxValueSize, LimitOf: "value"}
	acc := NewSampleSizes(a)
	err = db.View(func(tx *bbolt.Tx) error {
		var raw []byte
		if b := tx.Bucket([]byte(SchemaBucket)); b != nil {
			raw = bytes.Clone(b.Get([]byte(a.Collection)))
		}
		rec, err := recordedOf(a, raw)
		if err != nil {
			return err
		}
		s.Recorded = rec
		b := tx.Bucket([]byte(a.Collection))
		if b == nil {
			return nil
		}
		var cur *boltBlockSize
		cr := b.Cursor()
		for k, v := cr.First(); k != nil; k, v = cr.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			major, minor, ok := boltSplitKey(k)
			if !ok {
				return fmt.Errorf("bucket %s: key %x is not a block entry", a.Collection, k)
			}
			if cur == nil || !bytes.Equal(cur.key, major) {
				if cur != nil {
					acc.Block(boltComponents(cur.key), cur.bytes, cur.partList())
				}
				if s.Blocks == n {
					cur = nil
					break
				}
				s.Blocks++
				cur = &boltBlockSize{key: bytes.Clone(major), parts: map[string]*PartitionSize{}}
			}
			entry, err := boltEntryClass(minor)
			if err != nil {
				return fmt.Errorf("bucket %s, block %s: %w", a.Collection, boltstore.FormatKey(major), err)
			}
			size := len(k) + len(v)
			cur.bytes += size
			acc.Entry(entry, size)
			if name, ok := strings.CutSuffix(entry, "[]"); ok {
				cur.part(name).Elements++
				cur.part(name).Bytes += size
			} else if acc.Partitioned(entry) {
				cur.part(entry).Bytes += size
			}
		}
		if cur != nil {
			acc.Block(boltComponents(cur.key), cur.bytes, cur.partList())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	acc.Fill(s)
	return s, nil
}

// boltReadableKey renders a key of a collection's bucket the way explain shows
// keys: "/Game/2345/-/rounds/3" (collection, block key parts, "-" for the
// separator, entry key steps).
func boltReadableKey(collection string, k []byte) string {
	major, minor, ok := boltSplitKey(k)
	if !ok {
		return fmt.Sprintf("/%s/%x", collection, k)
	}
	out := "/" + collection + "/" + boltComponents(major) + "/-"
	if len(minor) > 0 {
		out += "/" + boltComponents(minor)
	}
	return out
}

// boltComponents renders encoded key boltComponents separated by slashes.
func boltComponents(b []byte) string {
	var parts []string
	r := runtime.NewKeyReader(b)
	for !r.Done() {
		if s, err := r.String(); err == nil {
			parts = append(parts, s)
		} else if i, err := r.Int(); err == nil {
			parts = append(parts, fmt.Sprint(i))
		} else if u, err := r.Uint(); err == nil {
			parts = append(parts, fmt.Sprint(u))
		} else {
			parts = append(parts, fmt.Sprintf("%x", r.Rest()))
			break
		}
	}
	return strings.Join(parts, "/")
}

// boltSplitKey splits a bucket key into the encoded block key and the entry key.
func boltSplitKey(k []byte) (major, minor []byte, ok bool) {
	r := runtime.NewKeyReader(k)
	for !r.Done() {
		rest := r.Rest()
		if rest[0] == boltstore.Separator {
			n := len(k) - len(rest)
			return k[:n], rest[1:], n > 0
		}
		if _, err := r.String(); err == nil {
			continue
		}
		if _, err := r.Int(); err == nil {
			continue
		}
		if _, err := r.Uint(); err != nil {
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// boltEntryClass names the entry class of an entry key: "" (the marker or
// root), "f", or "f[]" for an element.
func boltEntryClass(minor []byte) (string, error) {
	if len(minor) == 0 {
		return "", nil
	}
	r := runtime.NewKeyReader(minor)
	name, err := r.String()
	if err != nil {
		return "", fmt.Errorf("entry key %x: %w", minor, err)
	}
	if r.Done() {
		return name, nil
	}
	if _, err := r.Int(); err != nil || !r.Done() {
		return "", fmt.Errorf("entry key %x: not a field or element key", minor)
	}
	return name + "[]", nil
}

type boltBlockSize struct {
	key   []byte
	bytes int
	parts map[string]*PartitionSize
}

func (b *boltBlockSize) partList() []PartitionSize {
	var out []PartitionSize
	for _, p := range b.parts {
		out = append(out, *p)
	}
	return out
}

func (b *boltBlockSize) part(name string) *PartitionSize {
	p := b.parts[name]
	if p == nil {
		p = &PartitionSize{Key: boltComponents(b.key), Field: name}
		b.parts[name] = p
	}
	return p
}
