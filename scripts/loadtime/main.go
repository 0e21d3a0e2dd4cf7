// Command loadtime runs noamgen's package load (parser.Load) alone on the
// package in the current directory and prints how many aggregates it found;
// scripts/loadbench.sh times it.
package main

import (
	"fmt"
	"os"

	"github.com/noamgen/noamgen/parser"
)

func main() {
	s, err := parser.Load(parser.Config{Pattern: "."})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(len(s.Aggregates), "aggregates")
}
