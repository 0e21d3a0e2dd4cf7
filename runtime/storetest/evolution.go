package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"
	"go.etcd.io/bbolt"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/mongostore"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eao"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/eaopart"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/etf"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/lookups"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/part"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/versioned"
)

// Evolution is the schema and layout evolution suite (issue 23, README
// "Changing a model"): data written by one version of a model (the
// packages under runtime/storetest/evolve, each the aggregate Player of
// collection "players") is read and written by another version over the
// same database, as after a regenerate and a redeploy.
func Evolution(t *testing.T, h Harness) {
	runTests(t, h, evolutionTests)
}

var evolutionTests = []subtest{
	{name: "EAOReadsETF", fn: testEAOReadsETF},
}

// On returns the repositories the constructor of db's store makes over db.
func (c Constructors[S]) On(t *testing.T, db DB) S {
	switch {
	case db.Bolt != nil:
		return c.Bolt(db.Bolt)
	case db.Redis != nil:
		return c.Redis(db.Redis)
	case db.Dynamo != nil:
		return c.Dynamo(db.Dynamo, db.DynamoOptions)
	case db.Mongo != nil:
		return c.Mongo(db.Mongo, db.MongoOptions...)
	}
	t.Fatal("storetest: the database has no store handle")
	var none S
	return none
}

// The constructors of each version of the evolution model.
var (
	etfPlayers = Constructors[etf.PlayerRepository]{
		Bolt:  func(db *bbolt.DB) etf.PlayerRepository { return etf.NewPlayerBoltRepository(db) },
		Redis: func(c redis.UniversalClient) etf.PlayerRepository { return etf.NewPlayerRedisRepository(c) },
		Dynamo: func(c *dynamodb.Client, o dynamostore.Options) etf.PlayerRepository {
			return etf.NewPlayerDynamoRepository(c, o)
		},
		Mongo: func(db *mongo.Database, o ...mongostore.Option) etf.PlayerRepository {
			return etf.NewPlayerMongoRepository(db, o...)
		},
	}
	eaoPlayers = Constructors[eao.PlayerRepository]{
		Bolt:  func(db *bbolt.DB) eao.PlayerRepository { return eao.NewPlayerBoltRepository(db) },
		Redis: func(c redis.UniversalClient) eao.PlayerRepository { return eao.NewPlayerRedisRepository(c) },
		Dynamo: func(c *dynamodb.Client, o dynamostore.Options) eao.PlayerRepository {
			return eao.NewPlayerDynamoRepository(c, o)
		},
		Mongo: func(db *mongo.Database, o ...mongostore.Option) eao.PlayerRepository {
			return eao.NewPlayerMongoRepository(db, o...)
		},
	}
	partPlayers = Constructors[part.PlayerRepository]{
		Bolt:  func(db *bbolt.DB) part.PlayerRepository { return part.NewPlayerBoltRepository(db) },
		Redis: func(c redis.UniversalClient) part.PlayerRepository { return part.NewPlayerRedisRepository(c) },
		Dynamo: func(c *dynamodb.Client, o dynamostore.Options) part.PlayerRepository {
			return part.NewPlayerDynamoRepository(c, o)
		},
		Mongo: func(db *mongo.Database, o ...mongostore.Option) part.PlayerRepository {
			return part.NewPlayerMongoRepository(db, o...)
		},
	}
	eaopartPlayers = Constructors[eaopart.PlayerRepository]{
		Bolt:  func(db *bbolt.DB) eaopart.PlayerRepository { return eaopart.NewPlayerBoltRepository(db) },
		Redis: func(c redis.UniversalClient) eaopart.PlayerRepository { return eaopart.NewPlayerRedisRepository(c) },
		Dynamo: func(c *dynamodb.Client, o dynamostore.Options) eaopart.PlayerRepository {
			return eaopart.NewPlayerDynamoRepository(c, o)
		},
		Mongo: func(db *mongo.Database, o ...mongostore.Option) eaopart.PlayerRepository {
			return eaopart.NewPlayerMongoRepository(db, o...)
		},
	}
	lookupPlayers = Constructors[lookups.PlayerRepository]{
		Bolt:  func(db *bbolt.DB) lookups.PlayerRepository { return lookups.NewPlayerBoltRepository(db) },
		Redis: func(c redis.UniversalClient) lookups.PlayerRepository { return lookups.NewPlayerRedisRepository(c) },
		Dynamo: func(c *dynamodb.Client, o dynamostore.Options) lookups.PlayerRepository {
			return lookups.NewPlayerDynamoRepository(c, o)
		},
		Mongo: func(db *mongo.Database, o ...mongostore.Option) lookups.PlayerRepository {
			return lookups.NewPlayerMongoRepository(db, o...)
		},
	}
	versionedPlayers = Constructors[versioned.PlayerRepository]{
		Bolt:  func(db *bbolt.DB) versioned.PlayerRepository { return versioned.NewPlayerBoltRepository(db) },
		Redis: func(c redis.UniversalClient) versioned.PlayerRepository { return versioned.NewPlayerRedisRepository(c) },
		Dynamo: func(c *dynamodb.Client, o dynamostore.Options) versioned.PlayerRepository {
			return versioned.NewPlayerDynamoRepository(c, o)
		},
		Mongo: func(db *mongo.Database, o ...mongostore.Option) versioned.PlayerRepository {
			return versioned.NewPlayerMongoRepository(db, o...)
		},
	}
)

// testEAOReadsETF: a block written by the ETF version reads right with the
// EAO version, or fails with ErrLayout; never as zero values. A Get then
// Put through the EAO version keeps every value.
func testEAOReadsETF(t *testing.T, e *env) {
	ctx := context.Background()
	v1 := etfPlayers.On(t, e.db)
	if err := v1.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	want := etf.Player{ID: "p1", Name: "Mary", Email: "mary@example.com", City: "Rome", Scores: []etf.Score{{Game: "g1", Points: 3}}}
	if err := v1.Create(ctx, &want); err != nil {
		t.Fatal(err)
	}
	v2 := eaoPlayers.On(t, e.db)
	if err := v2.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := v2.Get(ctx, "p1")
	if errors.Is(err, runtime.ErrLayout) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != want.Name || got.Email != want.Email || got.City != want.City || len(got.Scores) != 1 || got.Scores[0].Points != 3 {
		t.Fatalf("the EAO version read the ETF block as %+v, want the values of %+v", got, want)
	}
}
