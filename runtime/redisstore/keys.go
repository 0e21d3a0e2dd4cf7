package redisstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/noamgen/noamgen/runtime"
)

// Key names. A block is one hash named by the collection and the block key
// in a hash tag, "Game:{2345}", so that everything of a block is one key
// on one hash slot. The other keys of a collection:
//
//	Game:blocks            sorted set, the block listing: members are the
//	                       encoded block keys (score 0, ZRANGE BYLEX)
//	{Game.name}            sorted set, lookup "name": members are the
//	                       encoded value followed by the encoded block key
//	{Game.name}:meta       hash, member -> "incarnation sequence" of the
//	                       write that added it, followed on a cluster by
//	                       the attempt's mark and the block key (the
//	                       engine's protocol, primitives.go)
//	{Game.name}:claims     hash, unique lookups only: encoded value ->
//	                       encoded block key of its holder
//	Game:counter           string, the counter of enumerable keys (INCR);
//	Game:counter:{scope}   the counter of one scope of a composite key
//	noam:schema:{Game}     string, the collection's schema record: the
//	                       layout EnsureIndexes recorded (evolve.go)
//
// The three keys of a lookup share the hash tag {Game.name}, so that one
// script changes them together on a cluster too.

// naming names the block hashes of a collection: coll, and the component
// tags of its block keys.
type naming struct {
	coll  string
	parts []byte
}

// blockKey names the hash of the block whose encoded key is bk.
func (s naming) blockKey(bk []byte) string {
	return s.coll + ":{" + s.text(bk) + "}"
}

func (s *Store[T, K]) listKey() string { return s.coll + ":blocks" }

func (s *Store[T, K]) counterKey(scope []byte) string {
	if len(scope) == 0 {
		return s.coll + ":counter"
	}
	return s.coll + ":counter:{" + formatParts(scope) + "}"
}

// lookupKeys names the keys of lookup i: the index zset, its meta hash and,
// for a unique lookup, its claims hash ("0" when not unique, for irem).
type lookupKeys struct{ z, meta, claims string }

func (s *Store[T, K]) lookupKeys(i int) lookupKeys {
	tag := "{" + s.coll + "." + s.d.Lookups[i].Name + "}"
	lk := lookupKeys{z: tag, meta: tag + ":meta"}
	if s.d.Lookups[i].Unique {
		lk.claims = tag + ":claims"
	}
	return lk
}

// text renders an encoded block key inside a hash tag: a single string
// component as it is, a single integer in decimal (Game:{2345}), several
// components as quoted strings and decimals separated by commas
// (Reply:{"thread",3}). Within one collection every key has the same
// components, so the text names one block key only.
func (s naming) text(bk []byte) string {
	if len(s.parts) == 1 {
		r := runtime.NewKeyReader(bk)
		switch s.parts[0] {
		case tagString:
			if v, err := r.String(); err == nil && r.Done() {
				return v
			}
		case tagInt:
			if v, err := r.Int(); err == nil && r.Done() {
				return strconv.FormatInt(v, 10)
			}
		case tagUint:
			if v, err := r.Uint(); err == nil && r.Done() {
				return strconv.FormatUint(v, 10)
			}
		}
	}
	return formatParts(bk)
}

const (
	tagString = 0x02
	tagInt    = 0x03
	tagUint   = 0x04
)

// formatParts renders encoded components as quoted strings and decimals
// separated by commas (or as hex, for bytes the codec did not make).
func formatParts(b []byte) string {
	var out []string
	r := runtime.NewKeyReader(b)
	for !r.Done() {
		switch r.Rest()[0] {
		case tagString:
			v, err := r.String()
			if err != nil {
				return fmt.Sprintf("%x", b)
			}
			out = append(out, strconv.Quote(v))
		case tagInt:
			v, err := r.Int()
			if err != nil {
				return fmt.Sprintf("%x", b)
			}
			out = append(out, strconv.FormatInt(v, 10))
		case tagUint:
			v, err := r.Uint()
			if err != nil {
				return fmt.Sprintf("%x", b)
			}
			out = append(out, strconv.FormatUint(v, 10))
		default:
			return fmt.Sprintf("%x", b)
		}
	}
	return strings.Join(out, ",")
}

// parse is the inverse of text: it encodes the block key a hash name
// holds (Repair finds blocks by their names).
func (s naming) parse(name string) ([]byte, error) {
	prefix := s.coll + ":{"
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, "}") {
		return nil, errors.New("not a block of " + s.coll)
	}
	t := name[len(prefix) : len(name)-1]
	if len(s.parts) == 1 {
		switch s.parts[0] {
		case tagString:
			return runtime.AppendString(nil, t), nil
		case tagInt:
			v, err := strconv.ParseInt(t, 10, 64)
			return runtime.AppendInt(nil, v), err
		case tagUint:
			v, err := strconv.ParseUint(t, 10, 64)
			return runtime.AppendUint(nil, v), err
		}
	}
	var out []byte
	for i, tag := range s.parts {
		if i > 0 {
			if !strings.HasPrefix(t, ",") {
				return nil, errors.New("bad block key " + name)
			}
			t = t[1:]
		}
		switch tag {
		case tagString:
			q, err := strconv.QuotedPrefix(t)
			if err != nil {
				return nil, err
			}
			v, _ := strconv.Unquote(q)
			out = runtime.AppendString(out, v)
			t = t[len(q):]
		default:
			end := strings.IndexByte(t, ',')
			if end < 0 {
				end = len(t)
			}
			if tag == tagInt {
				v, err := strconv.ParseInt(t[:end], 10, 64)
				if err != nil {
					return nil, err
				}
				out = runtime.AppendInt(out, v)
			} else {
				v, err := strconv.ParseUint(t[:end], 10, 64)
				if err != nil {
					return nil, err
				}
				out = runtime.AppendUint(out, v)
			}
			t = t[end:]
		}
	}
	if t != "" {
		return nil, errors.New("bad block key " + name)
	}
	return out, nil
}

// componentTags lists the component tags of an encoded key.
func componentTags(b []byte) []byte {
	var out []byte
	r := runtime.NewKeyReader(b)
	for !r.Done() {
		tag := r.Rest()[0]
		var err error
		switch tag {
		case tagString:
			_, err = r.String()
		case tagInt:
			_, err = r.Int()
		case tagUint:
			_, err = r.Uint()
		default:
			return out
		}
		if err != nil {
			return out
		}
		out = append(out, tag)
	}
	return out
}
