package storetest

// The generated constructors of the suites' models, by store: a store's
// entry in each table is all the suites need of it besides its harness.

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"
	"go.etcd.io/bbolt"
	"go.mongodb.org/mongo-driver/v2/mongo"

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

// repos are the constructors of the model's repositories.
var repos = Constructors[Repos]{
	"bolt": func(h any, o ...runtime.Option) Repos {
		db := h.(*bbolt.DB)
		return Repos{model.NewMatchBoltRepository(db, o...), model.NewJournalBoltRepository(db, o...), model.NewCardBoltRepository(db, o...), model.NewReplyBoltRepository(db, o...)}
	},
	"redis": func(h any, o ...runtime.Option) Repos {
		c := h.(redis.UniversalClient)
		return Repos{model.NewMatchRedisRepository(c, o...), model.NewJournalRedisRepository(c, o...), model.NewCardRedisRepository(c, o...), model.NewReplyRedisRepository(c, o...)}
	},
	"dynamo": func(h any, o ...runtime.Option) Repos {
		c := h.(*dynamodb.Client)
		return Repos{model.NewMatchDynamoRepository(c, o...), model.NewJournalDynamoRepository(c, o...), model.NewCardDynamoRepository(c, o...), model.NewReplyDynamoRepository(c, o...)}
	},
	"mongo": func(h any, o ...runtime.Option) Repos {
		db := h.(*mongo.Database)
		return Repos{model.NewMatchMongoRepository(db, o...), model.NewJournalMongoRepository(db, o...), model.NewCardMongoRepository(db, o...), model.NewReplyMongoRepository(db, o...)}
	},
}

// expiringRepos are the repositories of the expiring model.
type expiringRepos struct {
	sessions expiring.SessionRepository
	leases   expiring.LeaseRepository
	tickets  expiring.TicketRepository
}

// expiryModel are the constructors of the expiring model.
var expiryModel = Constructors[expiringRepos]{
	"bolt": func(h any, o ...runtime.Option) expiringRepos {
		db := h.(*bbolt.DB)
		return expiringRepos{expiring.NewSessionBoltRepository(db, o...), expiring.NewLeaseBoltRepository(db, o...), expiring.NewTicketBoltRepository(db, o...)}
	},
	"redis": func(h any, o ...runtime.Option) expiringRepos {
		c := h.(redis.UniversalClient)
		return expiringRepos{expiring.NewSessionRedisRepository(c, o...), expiring.NewLeaseRedisRepository(c, o...), expiring.NewTicketRedisRepository(c, o...)}
	},
	"dynamo": func(h any, o ...runtime.Option) expiringRepos {
		c := h.(*dynamodb.Client)
		return expiringRepos{expiring.NewSessionDynamoRepository(c, o...), expiring.NewLeaseDynamoRepository(c, o...), expiring.NewTicketDynamoRepository(c, o...)}
	},
	"mongo": func(h any, o ...runtime.Option) expiringRepos {
		db := h.(*mongo.Database)
		return expiringRepos{expiring.NewSessionMongoRepository(db, o...), expiring.NewLeaseMongoRepository(db, o...), expiring.NewTicketMongoRepository(db, o...)}
	},
}

// stampedRepos are the repositories of the stamped model.
type stampedRepos struct {
	posts stamped.PostRepository
	notes stamped.NoteRepository
}

// stampModel are the constructors of the stamped model.
var stampModel = Constructors[stampedRepos]{
	"bolt": func(h any, o ...runtime.Option) stampedRepos {
		db := h.(*bbolt.DB)
		return stampedRepos{stamped.NewPostBoltRepository(db, o...), stamped.NewNoteBoltRepository(db, o...)}
	},
	"redis": func(h any, o ...runtime.Option) stampedRepos {
		c := h.(redis.UniversalClient)
		return stampedRepos{stamped.NewPostRedisRepository(c, o...), stamped.NewNoteRedisRepository(c, o...)}
	},
	"dynamo": func(h any, o ...runtime.Option) stampedRepos {
		c := h.(*dynamodb.Client)
		return stampedRepos{stamped.NewPostDynamoRepository(c, o...), stamped.NewNoteDynamoRepository(c, o...)}
	},
	"mongo": func(h any, o ...runtime.Option) stampedRepos {
		db := h.(*mongo.Database)
		return stampedRepos{stamped.NewPostMongoRepository(db, o...), stamped.NewNoteMongoRepository(db, o...)}
	},
}

// The constructors of each version of the evolution model.
var (
	etfPlayers       = constructors[etf.PlayerRepository](etf.NewPlayerBoltRepository, etf.NewPlayerRedisRepository, etf.NewPlayerDynamoRepository, etf.NewPlayerMongoRepository)
	eaoPlayers       = constructors[eao.PlayerRepository](eao.NewPlayerBoltRepository, eao.NewPlayerRedisRepository, eao.NewPlayerDynamoRepository, eao.NewPlayerMongoRepository)
	partPlayers      = constructors[part.PlayerRepository](part.NewPlayerBoltRepository, part.NewPlayerRedisRepository, part.NewPlayerDynamoRepository, part.NewPlayerMongoRepository)
	eaopartPlayers   = constructors[eaopart.PlayerRepository](eaopart.NewPlayerBoltRepository, eaopart.NewPlayerRedisRepository, eaopart.NewPlayerDynamoRepository, eaopart.NewPlayerMongoRepository)
	lookupPlayers    = constructors[lookups.PlayerRepository](lookups.NewPlayerBoltRepository, lookups.NewPlayerRedisRepository, lookups.NewPlayerDynamoRepository, lookups.NewPlayerMongoRepository)
	uniquePlayers    = constructors[lookupsunique.PlayerRepository](lookupsunique.NewPlayerBoltRepository, lookupsunique.NewPlayerRedisRepository, lookupsunique.NewPlayerDynamoRepository, lookupsunique.NewPlayerMongoRepository)
	versionedPlayers = constructors[versioned.PlayerRepository](versioned.NewPlayerBoltRepository, versioned.NewPlayerRedisRepository, versioned.NewPlayerDynamoRepository, versioned.NewPlayerMongoRepository)
	renamedPlayers   = constructors[renamed.PlayerRepository](renamed.NewPlayerBoltRepository, renamed.NewPlayerRedisRepository, renamed.NewPlayerDynamoRepository, renamed.NewPlayerMongoRepository)
)

// constructors makes the Constructors of one model version from its
// generated constructors, whose repositories implement R.
func constructors[R, B, S, D, M any](bolt func(*bbolt.DB, ...runtime.Option) B, rds func(redis.UniversalClient, ...runtime.Option) S, dyn func(*dynamodb.Client, ...runtime.Option) D, mgo func(*mongo.Database, ...runtime.Option) M) Constructors[R] {
	return Constructors[R]{"bolt": Ctor[R](bolt), "redis": Ctor[R](rds), "dynamo": Ctor[R](dyn), "mongo": Ctor[R](mgo)}
}
