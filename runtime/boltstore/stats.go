package boltstore

import "sync/atomic"

// WriteStats counts what the committed write transactions of generated
// repositories wrote, in this process.
type WriteStats struct {
	Keys    int64 // key-value pairs put
	Bytes   int64 // their keys' and values' bytes
	Deletes int64 // keys deleted
}

var written struct {
	keys, bytes, deletes atomic.Int64
}

// Written returns the write counts so far; subtract two of them to measure
// an operation (benchmarks report bytes written per operation this way).
func Written() WriteStats {
	return WriteStats{Keys: written.keys.Load(), Bytes: written.bytes.Load(), Deletes: written.deletes.Load()}
}

// Sub returns the counts written between o and s.
func (s WriteStats) Sub(o WriteStats) WriteStats {
	return WriteStats{Keys: s.Keys - o.Keys, Bytes: s.Bytes - o.Bytes, Deletes: s.Deletes - o.Deletes}
}
