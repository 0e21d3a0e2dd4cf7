package redisstore

// SetMaxValueBytes lowers the value limit for a test and returns the
// function that restores it.
func SetMaxValueBytes(n int) func() {
	old := maxValue
	maxValue = n
	return func() { maxValue = old }
}
