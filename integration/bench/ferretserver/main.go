// Command ferretserver runs FerretDB v1.24.0 (SQLite backend, data in a
// temporary directory) in a process of its own and prints its MongoDB URI,
// so that benchmarks pointed at it with NOAM_MONGO_URI count only the
// client's allocations (in-process FerretDB adds the server's to B/op and
// allocs/op). It stops on SIGINT or SIGTERM and removes its data.
//
//	go run ./bench/ferretserver -addr 127.0.0.1:27018 &
//	NOAM_MONGO_URI=mongodb://127.0.0.1:27018/ go test ./bench -bench Cmp
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "TCP address to listen on")
	flag.Parse()
	dir, err := os.MkdirTemp("", "noam-ferretserver-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: *addr},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Handler:   "sqlite",
		SQLiteURL: "file:" + dir + "/",
	})
	if err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Println(f.MongoDBURI())
	if err := f.Run(ctx); err != nil && ctx.Err() == nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ferretserver:", err)
	os.Exit(1)
}
