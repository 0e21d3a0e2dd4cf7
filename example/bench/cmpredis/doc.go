// Package cmpredis holds the Redis side of the generated vs hand-written
// benchmarks (example/bench/cmpbench): the generated repositories against
// handwritten.GameRedis, HotelRedis and RedisBlobs on a single Redis node,
// started by runtime/redisstore/redistest (or the server at NOAM_REDIS_URL, which
// the benchmarks flush). It has only tests and benchmarks.
package cmpredis
