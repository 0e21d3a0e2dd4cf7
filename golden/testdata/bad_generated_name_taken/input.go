package bad

// Game is an aggregate; the package declares names noamgen would generate
// for it.
type Game struct {
	_     struct{} `noam:"aggregate"`
	ID    string   `noam:"id"`
	Title string
}

// gameKeys is free: generated unexported names start with an underscore.
func gameKeys() []string { return nil }

// _gameKeys is a hand-written function named like the generated key codec.
func _gameKeys() []string { return nil }

// GameRepository is a hand-written type named like the generated interface.
type GameRepository struct{}
