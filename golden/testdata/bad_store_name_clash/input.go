package bad

// Match is an aggregate; its bbolt repository is MatchBoltRepository.
type Match struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	Code string
}

// MatchBolt is an aggregate too; its interface would be MatchBoltRepository
// and its store-independent constructor NewMatchBoltRepository, the names of
// Match's bbolt repository.
type MatchBolt struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	Note string
}

// NewNoteRepository is a hand-written constructor; Note's generated one
// would take its name.
func NewNoteRepository() {}

// Note is an aggregate.
type Note struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	Text string
}
