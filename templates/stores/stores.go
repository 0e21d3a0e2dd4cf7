// Package stores registers every store template with the generator: it is
// the one list of stores. Adding a store adds its folder under templates/
// and one import line here (TestEveryStoreRegistered fails otherwise).
package stores

import (
	_ "github.com/noamgen/noamgen/templates/bolt"   // bbolt, embedded
	_ "github.com/noamgen/noamgen/templates/dynamo" // Amazon DynamoDB
	_ "github.com/noamgen/noamgen/templates/mongo"  // MongoDB
	_ "github.com/noamgen/noamgen/templates/redis"  // Redis
)
