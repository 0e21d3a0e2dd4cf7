package bench

import (
	"testing"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/integration/mongotest"
	"github.com/noamgen/noamgen/runtime/storetest"
	st "github.com/noamgen/noamgen/runtime/storetest/model"
)

// BenchmarkBatch compares CreateMany, PutMany and DeleteMany of 100 blocks
// with the same 100 single calls on MongoDB (the in-process FerretDB, or
// NOAM_MONGO_URI), as runtime/<store>store's BenchmarkBatch does on the
// other stores: Match has lookups (unique ones among them) and a version,
// Tournament neither.
func BenchmarkBatch(b *testing.B) {
	db := mongotest.Start(b)
	storetest.BenchBatchModels(b, st.NewMatchMongoRepository(db, mongotest.NativeOptions()...), game.NewTournamentMongoRepository(db, mongotest.NativeOptions()...))
}
