// Package limit lets a test lower a size limit a store adapter checks (a
// value of bbolt's 2 GiB or Redis's 512 MiB is too large to test), from
// outside the adapter's package: the adapters' suites run in packages of
// their own (runtime/<store>/suite), so that the generated models they
// drive are compiled once, not again for every adapter's test binary as
// they would be next to the adapter's internal tests.
package limit

import (
	"fmt"
	"sync"
)

var (
	mu     sync.Mutex
	limits = map[string]*int{}
)

// Register names a limit of an adapter: the variable it checks. Called
// from the adapter's init.
func Register(name string, v *int) {
	mu.Lock()
	defer mu.Unlock()
	limits[name] = v
}

// Set sets the limit name to n until the returned function restores it.
// It panics for a name no adapter registered (a test's mistake).
func Set(name string, n int) (restore func()) {
	mu.Lock()
	defer mu.Unlock()
	v, ok := limits[name]
	if !ok {
		panic(fmt.Sprintf("limit: no limit %q is registered", name))
	}
	old := *v
	*v = n
	return func() {
		mu.Lock()
		defer mu.Unlock()
		*v = old
	}
}
