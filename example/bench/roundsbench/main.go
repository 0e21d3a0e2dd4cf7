// Command roundsbench reproduces the experiment of the NoAM paper (Bugiotti
// et al., section 8, Figure 12) on noamgen's generated repositories: games
// of about a dozen rounds (about 8 KB) in three layouts, EAO, ROUNDS and
// rounds as separate blocks (BLOCKS), under (a) game retrievals, (b) round
// additions and (c) a 50/50 mix, for a sweep of database sizes, with the
// layouts interleaved and repeated (see package fig12). It prints a
// Markdown table (mean and p95 latency, ops/s per layout, workload and
// size) and writes it with a PNG plot shaped like Figure 12.
//
//	go run ./example/bench/roundsbench                       # bbolt, temp dir
//	go run ./example/bench/roundsbench -sizes 100,1000 -ops 500
//	go run ./example/bench/roundsbench -mongo URI            # MongoDB
//	go run ./example/bench/roundsbench -redis redis://127.0.0.1:6379/0
//	go run ./example/bench/roundsbench -redis-cluster 127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002
//	go run ./example/bench/roundsbench -dynamo http://127.0.0.1:4567   # dynalite or DynamoDB Local
//	go run ./example/bench/roundsbench -replot docs/bench/fig12-bolt.json -out docs/bench
//
// The in-process FerretDB runs it from the integration module:
// NOAM_FIG12=1 go test ./bench -run Figure12 (see integration/bench).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"
	"go.etcd.io/bbolt"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/example/bench"
	"github.com/noamgen/noamgen/example/bench/fig12"
)

func main() {
	mongoURI := flag.String("mongo", "", "MongoDB URI (default: bbolt in a temporary directory)")
	redisURL := flag.String("redis", "", "Redis URL (redis://host:port/db) of a server the run may flush (default: bbolt)")
	redisCluster := flag.String("redis-cluster", "", "Redis Cluster nodes host:port,host:port,... the run may flush (default: bbolt)")
	dynamoEndpoint := flag.String("dynamo", "", "DynamoDB endpoint URL, e.g. dynalite's http://127.0.0.1:4567 (dummy credentials unless AWS_ACCESS_KEY_ID is set; default: bbolt)")
	sizeList := flag.String("sizes", "100,1000,10000,100000", "database sizes (numbers of games), comma-separated")
	maxSize := flag.Int("max", 0, "cap: leave out sizes above this (0: no cap)")
	ops := flag.Int("ops", 1000, "operations per layout, workload, size and repetition")
	repeats := flag.Int("repeats", 3, "repetitions")
	chunk := flag.Int("chunk", 50, "operations per layout in a row: layouts are interleaved chunk by chunk")
	noSync := flag.Bool("nosync", true, "bbolt: skip fsync on commit (measures the data layout, not the disk)")
	seed := flag.Uint64("seed", 1, "random seed")
	out := flag.String("out", ".", "directory for fig12-STORE.md and fig12-STORE.png")
	quiet := flag.Bool("q", false, "no progress bar")
	replot := flag.String("replot", "", "rewrite the report from this fig12-STORE.json (written by a run) instead of running")
	tmp := flag.String("dir", "", "bbolt: directory for the database files (default: the system's temporary directory; /dev/shm keeps disk writeback out of the timings)")
	flag.Parse()
	ctx := context.Background()

	if *replot != "" {
		cfg, results, err := fig12.LoadJSON(*replot)
		check(err)
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(*replot), "fig12-"), ".json")
		md, err := fig12.WriteReport(*out, name, cfg, results)
		check(err)
		os.Stdout.Write(md)
		return
	}
	sizes, err := parseSizes(*sizeList, *maxSize)
	check(err)
	cfg := fig12.Config{Sizes: sizes, Ops: *ops, Repeats: *repeats, Chunk: *chunk, Seed: *seed}
	if !*quiet {
		cfg.Progress = os.Stderr
	}

	var layouts []fig12.Layout
	var name string
	switch {
	case *redisURL != "" || *redisCluster != "":
		var rdb redis.UniversalClient
		if *redisCluster != "" {
			rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(*redisCluster, ","), ContextTimeoutEnabled: true})
			cfg.Store, name = "Redis Cluster "+*redisCluster, "redis-cluster"
		} else {
			opt, err := redis.ParseURL(*redisURL)
			check(err)
			opt.ContextTimeoutEnabled = true
			rdb = redis.NewClient(opt)
			cfg.Store, name = "Redis "+*redisURL, "redis"
		}
		defer rdb.Close()
		check(flush(ctx, rdb))
		defer flush(ctx, rdb)
		layouts = fig12.RedisLayouts(rdb)
	case *dynamoEndpoint != "":
		acfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(*dynamoEndpoint),
			Credentials: credentials.NewStaticCredentialsProvider("noam", "noam", "")}
		if id := os.Getenv("AWS_ACCESS_KEY_ID"); id != "" {
			acfg.Credentials = credentials.NewStaticCredentialsProvider(id, os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN"))
		}
		c := dynamodb.NewFromConfig(acfg)
		layouts, err = fig12.DynamoLayouts(ctx, c, fmt.Sprintf("roundsbench%d_", time.Now().UnixNano()))
		check(err)
		cfg.Store, name = "DynamoDB API at "+*dynamoEndpoint, "dynamo"
	case *mongoURI != "":
		client, err := mongo.Connect(options.Client().ApplyURI(*mongoURI))
		check(err)
		defer client.Disconnect(ctx)
		db := client.Database("noamgen_roundsbench")
		check(db.Drop(ctx))
		defer db.Drop(ctx)
		layouts = fig12.MongoLayouts(db)
		cfg.Store, name = "MongoDB "+*mongoURI, "mongo"
	default:
		dir, err := os.MkdirTemp(*tmp, "roundsbench-")
		check(err)
		defer os.RemoveAll(dir)
		// One file per layout, so that each layout's B+tree holds its games
		// only. The initial mmap size (address space, not memory) spares
		// the remaps that would stall writes as the files grow.
		var dbs [3]*bbolt.DB
		for i, l := range []string{"eao", "rounds", "blocks"} {
			dbs[i], err = bbolt.Open(filepath.Join(dir, l+".db"), 0o600, &bbolt.Options{NoSync: *noSync, InitialMmapSize: 8 << 30})
			check(err)
			defer dbs[i].Close()
		}
		layouts = fig12.Layouts(bench.NewEAOGameBoltRepository(dbs[0]), bench.NewRoundsGameBoltRepository(dbs[1]),
			bench.NewBlocksGameBoltRepository(dbs[2]), bench.NewGameRoundBoltRepository(dbs[2]))
		cfg.Store, name = fmt.Sprintf("bbolt (NoSync=%v)", *noSync), "bolt"
		if *tmp != "" {
			cfg.Store = fmt.Sprintf("bbolt (NoSync=%v, files in %s)", *noSync, *tmp)
		}
	}
	results, err := fig12.Run(ctx, cfg, layouts)
	check(err)
	md, err := fig12.WriteReport(*out, name, cfg, results)
	check(err)
	os.Stdout.Write(md)
}

// flush empties the Redis server or every master of the cluster.
func flush(ctx context.Context, rdb redis.UniversalClient) error {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.FlushDB(ctx).Err() })
	}
	return rdb.FlushDB(ctx).Err()
}

func parseSizes(list string, max int) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q", f)
		}
		if max == 0 || n <= max {
			sizes = append(sizes, n)
		}
	}
	if len(sizes) == 0 {
		return nil, fmt.Errorf("no size in %q at most %d", list, max)
	}
	return sizes, nil
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "roundsbench:", err)
		os.Exit(1)
	}
}
