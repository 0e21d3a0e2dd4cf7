//go:build !noferret

// Command ferretdb serves FerretDB v1 (SQLite backend, data in a temporary
// directory) on 127.0.0.1 at a free port, as the tests start it
// in-process, and prints its URI as its first line of output. It stops on
// SIGINT or SIGTERM.
//
// scripts/test-all.sh runs it for the race tests of the integration
// module: they are built with -tags noferret and find it through
// NOAM_FERRETDB_URI, so that FerretDB is not built a second time with
// -race.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/noamgen/noamgen/integration/mongotest"
)

func main() {
	dir, err := os.MkdirTemp("", "noam-ferretdb-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	uri, stop, err := mongotest.StartFerretDB(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
	defer stop()
	fmt.Println(uri)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
}
