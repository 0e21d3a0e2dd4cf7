package expires

import "time"

// Session is absent from every read from the moment ExpiresAt passes
// (the zero time: never), and is removed by the store's native expiry or
// by Sweep; SetExpiresAt of an expired session fails with ErrNotFound.
type Session struct {
	_         struct{} `noam:"aggregate,partition=events"`
	ID        string   `noam:"id"`
	Token     string   `noam:"lookup,unique"`
	User      string   `noam:"lookup"`
	Events    []string
	ExpiresAt time.Time `bson:"expiresAt" noam:"expires"`
	Version   int64     `noam:"version"`
}

// Lease is one document per block (EAO) that expires at Until.
type Lease struct {
	_      struct{}  `noam:"aggregate,strategy=eao"`
	ID     int64     `noam:"id"`
	Holder string    `noam:"lookup,unique"`
	Until  time.Time `noam:"expires"`
}
