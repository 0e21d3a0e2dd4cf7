package redisstore

// SetMaxValueBytes lowers the limit of one argument (values, key names,
// index members: MaxValueBytes) for a test and returns the function that
// restores it.
func SetMaxValueBytes(n int) func() {
	old := maxBulk
	maxBulk = n
	return func() { maxBulk = old }
}
