package storetest

// The suites' models, each made over a database of any store with its
// generated store-independent constructors: a new store needs no entry
// here.

import (
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eao"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eaopart"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/etf"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/lookups"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/lookupsunique"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/part"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/renamed"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/versioned"
	"github.com/noamgen/noamgen/runtime/storetest/expiring"
	"github.com/noamgen/noamgen/runtime/storetest/model"
	"github.com/noamgen/noamgen/runtime/storetest/stamped"
)

// repos makes the model's repositories.
var repos = Opener[Repos](func(h any, o ...runtime.Option) (Repos, error) {
	var err error
	r := Repos{Make(&err, model.NewMatchRepository, h, o), Make(&err, model.NewJournalRepository, h, o), Make(&err, model.NewCardRepository, h, o), Make(&err, model.NewReplyRepository, h, o)}
	return r, err
})

// expiringRepos are the repositories of the expiring model.
type expiringRepos struct {
	sessions expiring.SessionRepository
	leases   expiring.LeaseRepository
	tickets  expiring.TicketRepository
}

// expiryModel makes the repositories of the expiring model.
var expiryModel = Opener[expiringRepos](func(h any, o ...runtime.Option) (expiringRepos, error) {
	var err error
	r := expiringRepos{Make(&err, expiring.NewSessionRepository, h, o), Make(&err, expiring.NewLeaseRepository, h, o), Make(&err, expiring.NewTicketRepository, h, o)}
	return r, err
})

// stampedRepos are the repositories of the stamped model.
type stampedRepos struct {
	posts  stamped.PostRepository
	notes  stamped.NoteRepository
	events stamped.EventRepository
	tokens stamped.TokenRepository
}

// stampModel makes the repositories of the stamped model.
var stampModel = Opener[stampedRepos](func(h any, o ...runtime.Option) (stampedRepos, error) {
	var err error
	r := stampedRepos{Make(&err, stamped.NewPostRepository, h, o), Make(&err, stamped.NewNoteRepository, h, o),
		Make(&err, stamped.NewEventRepository, h, o), Make(&err, stamped.NewTokenRepository, h, o)}
	return r, err
})

// The repositories of each version of the evolution model.
var (
	etfPlayers       = Opener[etf.PlayerRepository](etf.NewPlayerRepository)
	eaoPlayers       = Opener[eao.PlayerRepository](eao.NewPlayerRepository)
	partPlayers      = Opener[part.PlayerRepository](part.NewPlayerRepository)
	eaopartPlayers   = Opener[eaopart.PlayerRepository](eaopart.NewPlayerRepository)
	lookupPlayers    = Opener[lookups.PlayerRepository](lookups.NewPlayerRepository)
	uniquePlayers    = Opener[lookupsunique.PlayerRepository](lookupsunique.NewPlayerRepository)
	versionedPlayers = Opener[versioned.PlayerRepository](versioned.NewPlayerRepository)
	renamedPlayers   = Opener[renamed.PlayerRepository](renamed.NewPlayerRepository)
)
