// Package cmpdynamo holds the DynamoDB side of the generated vs
// hand-written benchmarks (example/bench/cmpbench): the generated
// repositories against handwritten.GameDynamo, HotelDynamo and
// DynamoBlobs on dynalite, started by runtime/dynamostore/dynalitetest (or the
// endpoint at NOAM_DYNAMO_ENDPOINT). It has only tests and benchmarks.
package cmpdynamo
