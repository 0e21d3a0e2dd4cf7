package game_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/example/game/gametest"
	"github.com/noamgen/noamgen/internal/dynalitetest"
	"github.com/noamgen/noamgen/runtime/dynamostore"
)

func dynamoStores(t *testing.T, srv *dynalitetest.Server, c *dynamodb.Client) gametest.Stores {
	o := dynamostore.Options{TablePrefix: srv.Prefix(t)}
	return gametest.Stores{
		Games:         game.NewGameDynamoRepository(c, o),
		Players:       game.NewPlayerDynamoRepository(c, o),
		Tournaments:   game.NewTournamentDynamoRepository(c, o),
		UnorderedScan: true,
	}
}

// TestDynamoSuite runs the game suite on DynamoDB (dynalite, or
// NOAM_DYNAMO_ENDPOINT): fresh tables, by table-name prefix, per test.
func TestDynamoSuite(t *testing.T) {
	srv := dynalitetest.Start(t)
	c := srv.Client()
	gametest.Run(t, func(t *testing.T) gametest.Stores { return dynamoStores(t, srv, c) })
}
