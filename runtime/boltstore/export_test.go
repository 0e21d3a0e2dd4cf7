package boltstore

// SetMaxValueBytes lowers the value limit the adapter checks (bbolt's
// MaxValueSize, 2 GiB) for a test, and returns the function that restores
// it.
func SetMaxValueBytes(n int) func() {
	old := maxValue
	maxValue = n
	return func() { maxValue = old }
}
