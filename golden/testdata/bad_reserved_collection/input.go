package bad

// noam_counters is MongoDB's counters collection; the lookup counters of
// collection noam would be bbolt's counters bucket noam.counters.
type Counter struct {
	_  struct{} `noam:"aggregate,collection=noam_counters"`
	ID string   `noam:"id"`
}

type Noam struct {
	_        struct{} `noam:"aggregate,collection=noam"`
	ID       string   `noam:"id"`
	Counters int      `noam:"lookup"`
}
